//! Integration tests: `--provisioned IOPS,BANDWIDTH`: a run on tmpfs shows each column's share
//! of the limit and keeps the limit in its record; a malformed limit is refused before anything
//! is measured.

use record::Record;

use crate::common;

#[test]
fn a_tmpfs_run_shows_the_shares_of_the_provisioned_limit() {
    let shm = tempfile::tempdir_in("/dev/shm").expect("tmpfs at /dev/shm");
    let out_dir = common::sandbox();
    let results = out_dir.path().join("results");
    let json = out_dir.path().join("record.json");
    let mut run = common::bin();
    run.args(common::args(
        "run --only seq-read,rand-read --runtime 0.3 --ramp 0 --size 16M --no-steps --no-site \
         --quiet --provisioned 3000,125M --dir",
    ))
    .arg(shm.path())
    .arg("--results")
    .arg(&results)
    .arg("--json")
    .arg(&json);
    let stdout = common::Ran::of(&mut run).ok().stdout;
    assert!(
        stdout.contains("provisioned limit: 3000 IOPS, 125.0 MiB/s (--provisioned)"),
        "{stdout}"
    );
    for (id, limit) in [("seq-read", "125.0 MiB/s"), ("rand-read", "3000 IOPS")] {
        let line = stdout
            .lines()
            .find(|l| l.trim_start().starts_with(id) && l.contains("of the provisioned"))
            .unwrap_or_else(|| panic!("no share for {id}:\n{stdout}"));
        assert!(
            line.contains(&format!("of the provisioned {limit}")),
            "{line}"
        );
    }
    let record: Record = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let p = record
        .settings
        .provisioned
        .expect("the limit in the record");
    assert_eq!((p.iops, p.bytes_s), (3000.0, 125.0 * 1_048_576.0));
}

#[test]
fn a_malformed_limit_is_refused_naming_the_option() {
    let dir = common::sandbox();
    for line in [
        "run --no-steps --provisioned 3000",
        "device /dev/null --provisioned fast,125M",
        "fio --name=a --size=1m --provisioned=3000,x",
    ] {
        let mut cmd = common::bin();
        cmd.current_dir(dir.path()).args(common::args(line));
        common::Ran::of(&mut cmd).code(2).says("--provisioned");
    }
    assert!(
        std::fs::read_dir(dir.path()).unwrap().next().is_none(),
        "nothing was created"
    );
}

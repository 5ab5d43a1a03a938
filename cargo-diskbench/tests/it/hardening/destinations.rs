//! Class 5: every destination is checked before the first test file, and a report that cannot
//! be written leaves no record.

use super::*;

/// `fio` whose report cannot be written after the job ran (`--output /dev/full` passes the
/// up-front check: it is not a regular file, but it is writable): the exit is non-zero and no
/// record is left, as for `run`.
#[test]
fn class5_fio_whose_report_fails_leaves_no_record() {
    let _disk = common::disk_load();
    let sb = sandbox();
    let res = sb.path().join("res");
    let results = format!("--results={}", res.display());
    let out = cmd_in(
        sb.path(),
        &[
            "fio",
            "--name=t",
            "--directory=.",
            "--rw=randread",
            "--bs=4k",
            "--size=4M",
            "--runtime=200ms",
            "--time_based",
            &results,
            "--output=/dev/full",
        ],
    )
    .output()
    .unwrap();
    assert_ne!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let left = count_entries(&res);
    assert_eq!(left, 0, "a record behind a failed exit");
}

#[test]
fn class5_every_destination_is_checked_before_the_first_test_file() {
    // Writes records with fsync: a disk-loading test (see common::disk_quiet).
    let _disk = common::disk_load();
    let sb = sandbox();
    let root = sb.path();
    std::fs::write(root.join("a-file"), "not a folder").unwrap();
    std::fs::create_dir(root.join("a-folder")).unwrap();
    std::fs::create_dir(root.join("res")).unwrap();
    let quick = [
        "run",
        "--dir",
        ".",
        "--size",
        "4M",
        "--runtime",
        "0.2",
        "--ramp",
        "0",
        "--only",
        "seq-read",
        "--no-steps",
        "--quiet",
    ];
    let cases: Vec<(Vec<&str>, Option<&str>, &str)> = vec![
        (vec!["--results", "a-file", "--no-site"], None, "--results"),
        (
            vec!["--results", "res", "--json", "a-folder", "--no-site"],
            None,
            "--json",
        ),
        (
            vec!["--results", "res", "--json", "missing/x.json", "--no-site"],
            None,
            "--json",
        ),
        (
            vec!["--results", "res", "--markdown", "a-folder", "--no-site"],
            None,
            "--markdown",
        ),
        (
            vec!["--results", "res", "--markdown", "a-file/x.md", "--no-site"],
            None,
            "--markdown",
        ),
        (
            vec!["--results", "res", "--no-site"],
            Some("a-folder"),
            "$GITHUB_STEP_SUMMARY",
        ),
        (
            vec!["--results", "res", "--site-out", "res/site"],
            None,
            "--site-out",
        ),
        (
            vec!["--results", "res", "--site-out", "."],
            None,
            "--site-out",
        ),
        (
            vec!["--results", "res", "--site-out", "a-file"],
            None,
            "--site-out",
        ),
    ];
    for (extra, summary, option) in cases {
        let before = tree(root, &[]);
        let mut cmd = cmd_in(root, &quick);
        cmd.args(&extra);
        if let Some(s) = summary {
            cmd.env("GITHUB_STEP_SUMMARY", s);
        }
        let ran = run_limited(cmd, LIMIT);
        assert_eq!(ran.code, Some(2), "{extra:?}: {}", ran.context());
        assert!(ran.stderr.contains(option), "{extra:?}: {}", ran.stderr);
        assert!(
            !ran.stderr.contains("seq-read"),
            "{extra:?} measured first: {}",
            ran.stderr
        );
        assert_eq!(before, tree(root, &[]), "{extra:?}: something was written");
    }
    let others: [(&[&str], &str); 5] = [
        (
            &common::args("fio --name=t --size=4M --runtime=1 --output=a-folder"),
            "--output",
        ),
        (
            &common::args("fio --name=t --size=4M --runtime=1 --results=a-file"),
            "--results",
        ),
        (&["merge", "--into", "a-file", "res"], "--into"),
        (&["import", "--results", "a-file", "x.csv"], "--results"),
        (&["site", "--results", "res", "--out", "a-file"], "--out"),
    ];
    std::fs::write(
        root.join("x.csv"),
        "date,label,seq-read_mib_s\n2026-10-01,a,1\n",
    )
    .unwrap();
    for (args, option) in others {
        let before = tree(root, &[]);
        let ran = run_in(root, args);
        assert_eq!(ran.code, Some(2), "{args:?}: {}", ran.context());
        assert!(ran.stderr.contains(option), "{args:?}: {}", ran.stderr);
        assert_eq!(before, tree(root, &[]), "{args:?}: something was written");
    }
}

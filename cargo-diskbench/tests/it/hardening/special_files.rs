//! Class 2: inputs are read only if they are regular files within the size limit, and test
//! files are never written through a symlink or into a special file.

use super::*;

#[test]
fn class2_inputs_are_read_only_if_regular_files_within_the_size_limit() {
    // Writes records with fsync: a disk-loading test (see common::disk_quiet).
    let _disk = common::disk_load();
    let sb = sandbox();
    let res = sb.path().join("res");
    write_records(&res, &some_records()[..3]);
    std::os::unix::fs::symlink("/dev/zero", res.join("zero.json")).unwrap();
    std::os::unix::fs::symlink("/dev/urandom", res.join("urandom.json")).unwrap();
    mkfifo(&res.join("fifo.json"));
    let big = res.join("big.json");
    std::fs::File::create(&big)
        .unwrap()
        .set_len(record::input::MAX_INPUT_BYTES + 1)
        .unwrap();

    // site: the three good records, each bad file left out with why.
    let out = sb.path().join("out");
    let ran = run_in(sb.path(), &["site", "--results", "res", "--out", "out"]);
    assert_eq!(ran.code, Some(0), "{}", ran.context());
    for why in ["a character device", "a FIFO", "over the"] {
        assert!(ran.stderr.contains(why), "{why}: {}", ran.stderr);
    }
    assert!(
        ran.stderr
            .contains(&format!("{}", record::input::MAX_INPUT_BYTES + 1))
    );
    assert!(out.join("index.html").is_file());

    // merge: the same files as sources are rejected, not read forever.
    let into = sb.path().join("into");
    let ran = run_in(sb.path(), &["merge", "--into", "into", "res"]);
    assert_eq!(ran.code, Some(0), "{}", ran.context());
    assert!(ran.stderr.contains("a FIFO") && ran.stderr.contains("a character device"));
    assert_eq!(std::fs::read_dir(&into).unwrap().count(), 3);

    // import: each refused with its reason, exit 2, nothing written.
    for bad in ["res/zero.json", "res/fifo.json", "res/big.json", "res"] {
        let before = tree(sb.path(), &[]);
        let ran = run_in(sb.path(), &["import", "--results", "imp", bad]);
        assert_eq!(ran.code, Some(2), "{bad}: {}", ran.context());
        assert!(ran.stderr.contains(bad), "{bad}: {}", ran.stderr);
        assert_eq!(
            before,
            tree(sb.path(), &[]),
            "{bad}: import wrote something"
        );
    }
}

#[test]
fn class2_test_files_are_never_written_through_a_symlink_or_into_a_special_file() {
    // Writes records with fsync: a disk-loading test (see common::disk_quiet).
    let _disk = common::disk_load();
    let sb = sandbox();
    let victim = sb.path().join("victim.bin");
    std::fs::write(&victim, b"precious data").unwrap();
    let d = sb.path().join("d");
    type Setup = fn(&Path, &Path);
    let setups: [(&str, Setup); 4] = [
        ("symlink to a file outside", |d, v| {
            std::os::unix::fs::symlink(v, d.join("t.0")).unwrap()
        }),
        ("symlink to /dev/null", |d, _| {
            std::os::unix::fs::symlink("/dev/null", d.join("t.0")).unwrap()
        }),
        ("dangling symlink", |d, v| {
            std::os::unix::fs::symlink(v.with_extension("new"), d.join("t.0")).unwrap()
        }),
        ("FIFO", |d, _| mkfifo(&d.join("t.0"))),
    ];
    for (what, setup) in setups {
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir(&d).unwrap();
        setup(&d, &victim);
        let before = tree(sb.path(), &[]);
        let ran = run_in(
            sb.path(),
            &common::args(
                "fio --directory=d --name=t --rw=write --bs=4k --size=4M \
                --runtime=1",
            ),
        );
        assert_eq!(ran.code, Some(2), "{what}: {}", ran.context());
        assert!(ran.stderr.contains("t.0"), "{what}: {}", ran.stderr);
        assert_eq!(before, tree(sb.path(), &[]), "{what}: something changed");
        assert_eq!(std::fs::read(&victim).unwrap(), b"precious data", "{what}");
    }
}

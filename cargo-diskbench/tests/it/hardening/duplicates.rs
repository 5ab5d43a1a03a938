//! Class 7: importing the same figures again adds nothing, whatever the path.

use super::*;

#[test]
fn class7_importing_the_same_figures_again_adds_nothing_whatever_the_path() {
    // Writes records with fsync: a disk-loading test (see common::disk_quiet).
    let _disk = common::disk_load();
    let sb = sandbox();
    let root = sb.path();
    std::fs::create_dir(root.join("sub")).unwrap();
    let csv = "date,label,seq-read_mib_s\n2026-10-01,a,100\n2026-10-01,b,200\n";
    std::fs::write(root.join("good.csv"), csv).unwrap();
    std::fs::write(root.join("sub/copy.csv"), csv).unwrap();
    let fio = common::fixture::read(common::fixture::FIO_SUITE);
    std::fs::write(root.join("run.json"), &fio).unwrap();
    std::fs::write(
        root.join("sub/run-copy.json"),
        format!("fio: a note first\n{fio}"),
    )
    .unwrap();
    let abs = root.join("good.csv");
    let count = || count_entries(&root.join("res"));
    // Each import in turn, and the records in the results folder after it: the CSV's two, then
    // the fio report's one, whatever path or copy they come from.
    let imports = [
        ("good.csv", 2),
        ("./good.csv", 2),
        (abs.to_str().unwrap(), 2),
        ("sub/../good.csv", 2),
        ("sub/copy.csv", 2),
        ("run.json", 3),
        ("./run.json", 3),
        ("sub/run-copy.json", 3),
    ];
    for (path, records) in imports {
        let ran = run_in(root, &["import", "--results", "res", path]);
        assert_eq!(ran.code, Some(0), "{path}: {}", ran.context());
        assert_eq!(count(), records, "after importing {path}");
    }
    // Importing again is never silent about what it skipped.
    let ran = run_in(root, &["import", "--results", "res", "sub/copy.csv"]);
    assert!(
        ran.stderr
            .contains("2 record(s) already in res with the same content"),
        "{}",
        ran.context()
    );
    // The same row under another header is other figures: not a duplicate.
    std::fs::write(
        root.join("other-column.csv"),
        "date,label,seq-write_mib_s\n2026-10-01,a,100\n",
    )
    .unwrap();
    let ran = run_in(root, &["import", "--results", "res", "other-column.csv"]);
    assert_eq!(ran.code, Some(0), "{}", ran.context());
    assert_eq!(
        count(),
        4,
        "the seq-write figure was dropped as a duplicate"
    );
    // The same figures written another way: columns in another order, `100.0` for `100`,
    // spaces, a number in exponent form. Each became a new record when the id came from the
    // row's text; the id now comes from the parsed figures.
    for (name, text) in [
        (
            "reordered.csv",
            "label,seq-read_mib_s,date
a,100,2026-10-01
b,200,2026-10-01
",
        ),
        (
            "decimals.csv",
            "date,label,seq-read_mib_s
2026-10-01,a,100.0
2026-10-01,b,200.00
",
        ),
        (
            "exponent.csv",
            "date,label,seq-read_mib_s
2026-10-01,a,1e2
2026-10-01,b,2.0e2
",
        ),
        (
            "rows-swapped.csv",
            "seq-read_mib_s,date,label
200,2026-10-01,b
100,2026-10-01,a
",
        ),
    ] {
        std::fs::write(root.join(name), text).unwrap();
        let ran = run_in(root, &["import", "--results", "res", name]);
        assert_eq!(ran.code, Some(0), "{name}: {}", ran.context());
        assert_eq!(count(), 4, "{name}: the same figures became a new record");
        assert!(
            ran.stderr.contains("2 record(s) already in res"),
            "{name}: {}",
            ran.context()
        );
    }
    // Other figures are still other records: a changed figure, and another date.
    for (name, text) in [
        (
            "changed.csv",
            "seq-read_mib_s,date,label
100.5,2026-10-01,a
",
        ),
        (
            "later.csv",
            "seq-read_mib_s,date,label
100,2026-10-02,a
",
        ),
    ] {
        std::fs::write(root.join(name), text).unwrap();
        let before = count();
        let ran = run_in(root, &["import", "--results", "res", name]);
        assert_eq!(ran.code, Some(0), "{name}: {}", ran.context());
        assert_eq!(
            count(),
            before + 1,
            "{name}: other figures taken for the same"
        );
    }
}

//! Class 1: a file name built from data (a date, label, id) is one safe name: `merge`,
//! `import` and `site` write only inside the folder their option names, whatever a record holds.

use record::Record;

use super::{assert_plain_records_only, run_writing_only_inside, some_records};
use crate::common::sandbox;

/// Sets one field of a record to a hostile value.
type Set = fn(&mut Record, &str);

fn started_at(r: &mut Record, v: &str) {
    r.started_at = v.into();
}
fn label(r: &mut Record, v: &str) {
    r.runner.label = v.into();
}
fn id(r: &mut Record, v: &str) {
    r.id = v.into();
}

/// Records given to `merge`: the field made hostile, its value, and whether the record is still
/// one `merge` adds (a label or id that is a path is written under a safe name; a date that is
/// a path is not a date, so the record is refused).
const HOSTILE: [(Set, &str, bool); 8] = [
    // Dates that are paths, absolute paths, a real prefix with a path after it.
    (started_at, "../../../x", false),
    (started_at, "/tmp/../escaped", false),
    (started_at, "2026-11-01/../../../../y", false),
    (started_at, "..", false),
    // Labels and ids that are paths.
    (label, "../../../../label-escape", true),
    (label, "/etc/cron.d/x", true),
    (id, "../../../../id-escape", true),
    (label, ".hidden/..", true),
];

#[test]
fn class1_paths_built_from_record_content_stay_inside_their_folder() {
    // Writes records with fsync: a disk-loading test (see common::disk_quiet).
    let _disk = crate::common::disk_load();
    let sb = sandbox();
    let root = sb.path().join("deep/er/still");
    let (src, into, res, out) = (
        root.join("src"),
        root.join("into"),
        root.join("res"),
        root.join("out"),
    );
    std::fs::create_dir_all(&src).unwrap();
    let base = some_records()[0].clone();
    for (n, (set, value, _)) in HOSTILE.iter().enumerate() {
        let mut r = base.clone();
        r.id = format!("{:08x}{:08x}", 0xbad0 + n, n);
        set(&mut r, value);
        let text = serde_json::to_string(&r).unwrap();
        std::fs::write(src.join(format!("r{n}.json")), text).unwrap();
    }
    let ran = run_writing_only_inside(
        sb.path(),
        &root,
        &[
            "merge",
            "--into",
            into.to_str().unwrap(),
            src.to_str().unwrap(),
        ],
        &into,
    );
    assert_plain_records_only(&into);
    let added = HOSTILE.iter().filter(|(_, _, added)| *added).count();
    assert_eq!(
        std::fs::read_dir(&into).unwrap().count(),
        added,
        "the records with valid dates are added: {}",
        ran.context()
    );
    // Each refused record is named with its field and the value it held; no added one is.
    for (n, (_, value, added)) in HOSTILE.iter().enumerate() {
        let file = format!("r{n}.json");
        let said = ran.stderr.lines().find(|l| l.contains(&file));
        if *added {
            assert_eq!(said, None, "{value:?} was added, not refused");
        } else {
            let said =
                said.unwrap_or_else(|| panic!("{file} ({value:?}) not named: {}", ran.stderr));
            assert!(
                said.contains("started_at") && said.contains(&format!("{value:?}")),
                "{value:?}: {said}"
            );
        }
    }

    // A CSV whose labels are paths.
    let csv = root.join("hostile.csv");
    std::fs::write(
        &csv,
        "date,label,seq-read_mib_s\n\
         2026-10-01,../../../../csv-escape,100\n\
         2026-10-01,/etc/passwd,100\n\
         2026-10-01,..,100\n",
    )
    .unwrap();
    run_writing_only_inside(
        sb.path(),
        &root,
        &[
            "import",
            "--results",
            res.to_str().unwrap(),
            csv.to_str().unwrap(),
        ],
        &res,
    );
    assert_plain_records_only(&res);
    assert_eq!(std::fs::read_dir(&res).unwrap().count(), 3);

    // The site from records whose labels are paths: pages only inside --out.
    for r in some_records() {
        record::results::write_record(&res, &r).unwrap();
    }
    run_writing_only_inside(
        sb.path(),
        &root,
        &[
            "site",
            "--results",
            res.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ],
        &out,
    );
    let runners: Vec<String> = std::fs::read_dir(out.join("runners"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        runners
            .iter()
            .all(|n| !n.starts_with('.') && n.ends_with(".html"))
    );
    assert!(
        runners.iter().any(|n| n.contains("csv-escape")),
        "{runners:?}"
    );
}

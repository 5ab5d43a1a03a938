//! Integration tests: `cargo diskbench fio FILE.fio`, the article's job files (scaled down)
//! and files with concurrent sections and stonewall groups, run through this tool and, where
//! fio is installed, through fio, compared on what fio reports: which job is in which group,
//! and which directions each group's status shows. Figures are printed, never asserted.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Output};

use record::Record;

use crate::common;

fn fio(dir: &Path, args: &[&str]) -> Option<Output> {
    let _load = common::disk_load();
    match Command::new("fio").current_dir(dir).args(args).output() {
        Ok(o) => Some(o),
        Err(_) => {
            eprintln!("fio is not installed: compared with nothing (apt-get install fio)");
            None
        }
    }
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// (job, groupid) per job, in report order.
type JobGroups = Vec<(String, u32)>;
/// (groupid, "READ" or "WRITE") per line of a group's status block.
type GroupStatus = BTreeSet<(u32, String)>;

/// What a fio-style report says about grouping: (job, groupid) per job, and per group the
/// directions of its status block.
fn grouping(report: &str) -> (JobGroups, GroupStatus) {
    let mut jobs = Vec::new();
    let mut status = BTreeSet::new();
    let mut group = None;
    for line in report.lines() {
        if let Some((name, rest)) = line.split_once(": (groupid=")
            && let Some(g) = rest.split(',').next().and_then(|g| g.parse().ok())
        {
            jobs.push((name.to_string(), g));
        }
        if let Some(rest) = line.strip_prefix("Run status group ") {
            group = rest.split(' ').next().and_then(|g| g.parse::<u32>().ok());
        }
        let t = line.trim_start();
        for dir in ["READ", "WRITE"] {
            if t.starts_with(&format!("{dir}: bw="))
                && let Some(g) = group
            {
                status.insert((g, dir.to_string()));
            }
        }
    }
    (jobs, status)
}

/// The read IOPS fio's report gives a job ("read: IOPS=5956,"), for the printed comparison.
fn iops(report: &str, direction: &str) -> Vec<String> {
    report
        .lines()
        .filter_map(|l| l.trim().strip_prefix(&format!("{direction}: IOPS=")))
        .map(|r| r.split(',').next().unwrap_or("").to_string())
        .collect()
}

/// Run `file` through both, and check they group the same way.
fn compare(dir: &Path, file: &str, want_jobs: &[(&str, u32)]) -> Record {
    let o = common::fio_cmd(dir, &[file]);
    let report = text(&o.stdout);
    assert!(o.status.success(), "{file}: {}\n{report}", text(&o.stderr));
    let (jobs, status) = grouping(&report);
    let want: Vec<(String, u32)> = want_jobs.iter().map(|(n, g)| (n.to_string(), *g)).collect();
    assert_eq!(jobs, want, "{file}: our groups\n{report}");
    if let Some(f) = fio(dir, &[file]) {
        let fio_report = text(&f.stdout);
        assert!(f.status.success(), "fio {file}: {}", text(&f.stderr));
        let (fio_jobs, fio_status) = grouping(&fio_report);
        assert_eq!(
            jobs, fio_jobs,
            "{file}: fio groups the jobs differently\n{fio_report}"
        );
        assert_eq!(
            status, fio_status,
            "{file}: the groups' status blocks differ\n{fio_report}"
        );
        for d in ["read", "write"] {
            eprintln!(
                "{file} {d} IOPS: ours {:?}, fio {:?}",
                iops(&report, d),
                iops(&fio_report, d)
            );
        }
    }
    let j = common::fio_cmd(dir, &[file, "--output-format=json"]);
    assert!(j.status.success(), "{}", text(&j.stderr));
    serde_json::from_slice(&j.stdout).expect("the record")
}

#[test]
fn the_articles_read_and_write_files_run_scaled_down() {
    let d = common::sandbox();
    let data = d.path().join("testfio");
    for (name, rw) in [("read", "randread"), ("write", "randwrite")] {
        let section = if name == "read" { "bgread" } else { "bgwrite" };
        std::fs::write(
            d.path().join(format!("{name}.fio")),
            format!(
                "[global]\nrw={rw}\nsize=8M\nruntime=2\nfilename={}\nioengine=libaio\n\
                 iodepth=4\ninvalidate=1\ndirect=1\n[{section}]\nrw={rw}\niodepth=64\n",
                data.display()
            ),
        )
        .unwrap();
        let record = compare(d.path(), &format!("{name}.fio"), &[(section, 0)]);
        assert_eq!(record.tests.len(), 1);
        let t = &record.tests[0];
        assert_eq!(t.id, section);
        assert_eq!(
            t.job.iodepth, 64,
            "the section's iodepth overrides [global]'s"
        );
        assert_eq!(t.job.rw, rw);
        assert!(t.job.direct);
    }
}

#[test]
fn concurrent_sections_and_stonewall_groups_report_as_fio_does() {
    let d = common::sandbox();
    let p = |n: &str| d.path().join(n).display().to_string();
    std::fs::write(
        d.path().join("concurrent.fio"),
        format!(
            "[global]\nsize=4M\nruntime=2\nioengine=libaio\ndirect=1\niodepth=4\n\
             ; both at once\n[reader]\nrw=randread\nfilename={}\n[writer]\nrw=randwrite\n\
             filename={}\n",
            p("a"),
            p("b")
        ),
    )
    .unwrap();
    let record = compare(d.path(), "concurrent.fio", &[("reader", 0), ("writer", 0)]);
    let ids: Vec<&str> = record.tests.iter().map(|t| t.id.as_str()).collect();
    assert_eq!(ids, ["reader", "writer"], "one test per job section");
    assert!(record.tests[0].read.is_some() && record.tests[1].write.is_some());

    std::fs::write(
        d.path().join("groups.fio"),
        format!(
            "[global]\nsize=4M\nruntime=2\nfilename={}\n# three groups\n[first]\nrw=read\n\
             [second]\nstonewall\nrw=write\n[third]\nnew_group\nrw=randread\n[fourth]\n\
             rw=randread\n",
            p("c")
        ),
    )
    .unwrap();
    compare(
        d.path(),
        "groups.fio",
        &[("first", 0), ("second", 1), ("third", 2), ("fourth", 2)],
    );
}

#[test]
fn an_unsupported_option_is_refused_with_its_section_and_line_and_nothing_runs() {
    let d = common::sandbox();
    std::fs::write(
        d.path().join("bad.fio"),
        "[global]\nsize=4M\nfilename=data\n[bgread]\nrw=randread\nverify=crc32c\n",
    )
    .unwrap();
    let o = common::fio_cmd(d.path(), &["bad.fio"]);
    assert_eq!(o.status.code(), Some(2));
    let e = text(&o.stderr);
    assert!(
        e.contains("bad.fio line 6, section [bgread]: fio option verify is not supported"),
        "{e}"
    );
    assert!(!d.path().join("data").exists(), "nothing is created");
}

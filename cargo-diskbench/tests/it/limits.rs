//! Limits and the arithmetic around them (issue 28, classes 6 and 7): a cap that the kernel
//! would read as "no limit" is refused by name before anything runs, and a process or thread
//! limit that stops the engine from starting its jobs is an error that cleans up, never a
//! panic or a hang.

use std::path::Path;

use crate::common::{self, sandbox, steps_cmd};

/// A results folder holding one imported record labelled `label` with these four figures
/// (seq-read and seq-write MiB/s, rand-read and rand-write IOPS).
fn results_with(label: &str, figures: [&str; 4]) -> tempfile::TempDir {
    let results = sandbox();
    let csv = results.path().join("figures.csv");
    std::fs::write(
        &csv,
        format!(
            "date,label,provider,arch,vcpus,ram_gib,seq-read_mib_s,seq-write_mib_s,\
             rand-read_iops,rand-write_iops\n2026-09-30,{label},Test,x64,2,8,{}\n",
            figures.join(",")
        ),
    )
    .unwrap();
    let out = common::bin()
        .arg("import")
        .arg(&csv)
        .arg("--results")
        .arg(results.path().join("r"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::remove_file(&csv).unwrap();
    results
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

fn assert_refused(out: &std::process::Output, names: &[&str], dir: &Path) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    for n in names {
        assert!(stderr.contains(n), "{n:?} not in: {stderr}");
    }
    assert!(
        !stderr.contains("panicked"),
        "a refusal must not be a panic: {stderr}"
    );
    assert_eq!(
        std::fs::read_dir(dir).unwrap().count(),
        0,
        "something was written under --dir"
    );
}

/// `--cap-mib-s` times 2^20 past u64 wrapped (2^44 MiB/s became 0 bytes/s, which removes a
/// v1 rule), an iops figure past 32 bits is cut by the kernel (2^32 becomes 0), and a `--like`
/// figure below 1 rounded to 0: each would make a run recorded as capped run uncapped.
#[test]
fn caps_that_would_become_no_limit_are_refused_naming_the_option() {
    let project = sandbox();
    let dir = sandbox();
    for (args, names) in [
        (
            &["--cap-mib-s", "17592186044416"][..],
            &["--cap-mib-s 17592186044416", "64 bits"][..],
        ),
        (
            &["--cap-mib-s", "18446744073709551615"][..],
            &["--cap-mib-s"][..],
        ),
        (&["--cap-mib-s", "0"][..], &["--cap-mib-s 0"][..]),
        (
            &["--cap-iops", "4294967296"][..],
            &["--cap-iops 4294967296", "4294967295"][..],
        ),
        (&["--cap-iops", "0"][..], &["--cap-iops 0"][..]),
    ] {
        // A step id no run has: were the caps let through, the run stops there (exit 2
        // naming --only) instead of building whatever project is around.
        let mut full = vec!["--what-if", "--only", "no-such-step"];
        full.extend_from_slice(args);
        let out = steps_cmd(project.path(), dir.path(), &full)
            .output()
            .unwrap();
        assert_refused(&out, names, dir.path());
    }

    // --like figures that would not survive as caps: one that rounds to 0, one beyond u64 as
    // bytes per second, one beyond the kernel's iops.
    for (figures, column) in [
        (["100", "100", "1000", "0.2"], "rand-write"),
        (["100", "1e300", "1000", "1000"], "seq-write"),
        (["100", "100", "0.4", "1000"], "rand-read"),
        (["100", "100", "1000", "5000000000"], "rand-write"),
    ] {
        let results = results_with("tiny-runner", figures);
        let r = results.path().join("r");
        let out = common::bin()
            .current_dir(project.path())
            .args([
                "steps",
                "--what-if",
                "--only",
                "no-such-step",
                "--like",
                "tiny-runner",
            ])
            .arg("--dir")
            .arg(dir.path())
            .arg("--results")
            .arg(&r)
            .output()
            .unwrap();
        assert_refused(&out, &["--like tiny-runner", column], dir.path());
        if is_root() {
            let out = common::bin()
                .args([
                    "run",
                    "--no-steps",
                    "--no-site",
                    "--like",
                    "tiny-runner",
                    "--dir",
                ])
                .arg(dir.path())
                .arg("--results")
                .arg(&r)
                .env_remove("GITHUB_STEP_SUMMARY")
                .output()
                .unwrap();
            assert_refused(&out, &["--like tiny-runner", column], dir.path());
        }
    }
}

//! The job summary the action writes (`site_gen::job_summary::markdown`), as insta snapshots in
//! `github/snapshots/`, plus what each must say whatever its wording.

use super::records::{fallback_record, normal_record};

/// The summary of `record`, compared with the snapshot `name`.
fn assert_summary(name: &str, record: &record::Record) -> String {
    let md = site_gen::job_summary::markdown(record);
    insta::with_settings!({ prepend_module_to_snapshot => false, omit_expression => true }, {
        insta::assert_snapshot!(name, md);
    });
    md
}

/// A GitHub-hosted run: machine, storage class, six columns, three steps.
#[test]
fn summary_of_a_normal_run() {
    let record = normal_record("ubuntu-24.04", "4f1c2d3e5a6b7c8d", "2026-11-30T10:00:00Z");
    let md = assert_summary("summary-normal", &record);
    for needle in [
        "Sequential read",
        "QD1 read",
        "cargo build (ripgrep)",
        "vm-disk",
    ] {
        assert!(md.contains(needle), "{needle}: {md}");
    }
}

/// Fallbacks, a skipped and a failed step, a column left out: each said, none hidden.
#[test]
fn summary_of_a_run_with_fallbacks_and_a_skipped_step() {
    let md = assert_summary("summary-fallback", &fallback_record());
    // What the snapshot must say, whatever its wording.
    for needle in ["psync", "EPERM", "docker not found on PATH", "nobarrier"] {
        assert!(md.contains(needle), "{needle}: {md}");
    }
    assert!(!md.contains("Random write"), "a column not run is omitted");
}

/// Strings from a record are data: no HTML, no link, no extra table cell gets through.
#[test]
fn summary_escapes_record_strings() {
    let mut record = normal_record(
        "evil|label <script>alert(1)</script>",
        "0123456789abcdef",
        "2026-11-30T10:00:00Z",
    );
    record.steps[0].why = "a | b\n| injected | row |".into();
    record.runner.cpu_model = "[click](javascript:alert(1)) <img src=x onerror=alert(1)>".into();
    let md = assert_summary("summary-escaped", &record);
    for (needle, present) in [
        ("<script", false),
        ("<img", false),
        // The link is literal text.
        ("\\[click\\](javascript", true),
    ] {
        assert_eq!(md.contains(needle), present, "{needle}: {md}");
    }
    // Every table row still has exactly its columns: no unescaped `|` was added.
    for line in md.lines().filter(|l| l.starts_with("| ")) {
        let cells = line.replace("\\|", "").matches('|').count();
        // Machine facts: 2 cells (3 bars); columns: 4 cells (5 bars); steps: 6 cells (7 bars).
        assert!(cells == 3 || cells == 5 || cells == 7, "broken row: {line}");
    }
}

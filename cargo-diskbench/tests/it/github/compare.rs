//! `cargo diskbench compare` and `run --baseline` on generated records: a runner's steady
//! history, then a sixth record at half, at 97 % or alone; bad input; the job summary.

use std::fs;
use std::path::Path;

use record::{ColumnId, Record};

use super::records::normal_record;
use super::write_json;
use crate::common;

/// Five steady seq-read figures: the largest run-to-run change among them is 4.4 %, so the
/// band is twice that, 8.7 %.
const STEADY_MIB_S: [f64; 5] = [1000.0, 1030.0, 985.0, 1010.0, 995.0];

fn record_at(label: &str, day: usize, seq_read_mib_s: f64) -> Record {
    let mut r = normal_record(
        label,
        &format!("{day:02}aa{day:02}bb{day:02}cc{day:02}dd"),
        &format!("2026-11-{day:02}T10:00:00Z"),
    );
    let t = r
        .tests
        .iter_mut()
        .find(|t| t.id == ColumnId::SeqRead.as_str())
        .expect("the record has seq-read");
    t.read.as_mut().expect("seq-read reads").mib_s = seq_read_mib_s;
    r
}

/// `dir/base/` with the steady history of `label`, and `dir/new.json` holding a sixth record.
fn history(dir: &Path, label: &str, steady: &[f64], sixth: f64) {
    for (i, v) in steady.iter().enumerate() {
        let r = record_at(label, i + 1, *v);
        write_json(
            &dir.join("base").join(record::results::file_name(&r)),
            &r,
            true,
        );
    }
    write_json(&dir.join("new.json"), &record_at(label, 20, sixth), true);
}

fn compare(dir: &Path, extra: &[&str]) -> (i32, serde_json::Value, String) {
    let base = dir.join("base");
    let new = dir.join("new.json");
    let mut args = vec![
        "compare",
        base.to_str().unwrap(),
        new.to_str().unwrap(),
        "--json",
    ];
    args.extend_from_slice(extra);
    let out = common::run(&args);
    let json = serde_json::from_slice(&out.stdout).unwrap_or(serde_json::Value::Null);
    (
        out.status.code().unwrap_or(-1),
        json,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn seq_read(json: &serde_json::Value) -> &serde_json::Value {
    json[0]["changes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == "seq-read" && c["kind"] == "column")
        .expect("seq-read is compared")
}

#[test]
fn half_the_seq_read_after_five_steady_runs_is_slower_and_fails() {
    let dir = common::sandbox();
    history(dir.path(), "runner-a", &STEADY_MIB_S, 995.0 / 2.0);
    let (code, json, err) = compare(dir.path(), &[]);
    assert_eq!(
        code, 0,
        "without --fail-on a slower figure is reported, not failed: {err}"
    );
    let c = seq_read(&json);
    assert_eq!(c["verdict"], "slower", "{c}");
    assert_eq!(c["base"], 995.0);
    assert!(
        (c["change_pct"].as_f64().unwrap() + 50.0).abs() < 1e-9,
        "{c}"
    );
    let band = &c["band"];
    assert_eq!(band["source"], "history");
    assert_eq!(band["history_records"], 5);
    // 1030 -> 985 is the largest move of the five; the band is twice it.
    let largest_pct = 45.0 / 1030.0 * 100.0;
    assert!(
        (band["history_pct"].as_f64().unwrap() - largest_pct).abs() < 1e-9,
        "{band}"
    );
    assert!(
        (band["pct"].as_f64().unwrap() - 2.0 * largest_pct).abs() < 1e-9,
        "{band}"
    );
    // Figures that did not move stay within noise.
    let others: Vec<&serde_json::Value> = json[0]["changes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["id"] != "seq-read")
        .collect();
    assert!(!others.is_empty());
    assert!(
        others.iter().all(|c| c["verdict"] == "within-noise"),
        "{others:?}"
    );
    let (code, _, err) = compare(dir.path(), &["--fail-on", "slower"]);
    assert_eq!(code, record::exit::FAILED, "{err}");
    assert!(err.contains("seq-read on runner-a"), "{err}");
}

#[test]
fn three_per_cent_lower_is_within_noise_and_passes() {
    let dir = common::sandbox();
    history(dir.path(), "runner-b", &STEADY_MIB_S, 995.0 * 0.97);
    let (code, json, err) = compare(dir.path(), &["--fail-on", "slower"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(seq_read(&json)["verdict"], "within-noise");
}

#[test]
fn a_runner_with_one_record_has_no_history() {
    let dir = common::sandbox();
    history(dir.path(), "runner-c", &[1000.0], 500.0);
    let (code, json, err) = compare(dir.path(), &["--fail-on", "slower"]);
    assert_eq!(
        code, 0,
        "no history is no verdict, so nothing to fail on: {err}"
    );
    let c = seq_read(&json);
    assert_eq!(c["verdict"], "too-little-history", "{c}");
    assert!(c["band"].is_null());
    // The table says so in words.
    let out = common::run(&[
        "compare",
        dir.path().join("base").to_str().unwrap(),
        dir.path().join("new.json").to_str().unwrap(),
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("too little history (1 earlier record"),
        "{text}"
    );
}

#[test]
fn repeat_spreads_make_a_band_without_history() {
    let dir = common::sandbox();
    history(dir.path(), "runner-d", &[1000.0], 960.0);
    // Both sides ran --repeat and their passes spread by 5 %: a 4 % drop is within noise.
    let mut new: Record =
        serde_json::from_slice(&fs::read(dir.path().join("new.json")).unwrap()).unwrap();
    let t = new.tests.iter_mut().find(|t| t.id == "seq-read").unwrap();
    t.repeats = Some(record::Repeats {
        runs: 3,
        headline: vec![950.0, 960.0, 998.0],
        spread_pct: 5.0,
        within_5pct: Some(true),
    });
    write_json(&dir.path().join("new.json"), &new, true);
    let (code, json, err) = compare(dir.path(), &[]);
    assert_eq!(code, 0, "{err}");
    let c = seq_read(&json);
    assert_eq!(c["verdict"], "within-noise", "{c}");
    assert_eq!(c["band"]["source"], "repeat");
}

#[test]
fn bad_input_exits_2_with_what_to_do() {
    let dir = common::sandbox();
    history(dir.path(), "runner-e", &STEADY_MIB_S, 900.0);
    let base = dir.path().join("base");
    let base = base.to_str().unwrap();
    // Not a record.
    let junk = dir.path().join("junk.json");
    fs::write(&junk, "{\"hello\": 1}").unwrap();
    let out = common::run(&["compare", base, junk.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(record::exit::USAGE), "{err}");
    assert!(
        err.contains("NEW") && err.contains("give a record file"),
        "{err}"
    );
    // No common label.
    let other = record_at("someone-else", 21, 1000.0);
    let other_path = dir.path().join("other.json");
    write_json(&other_path, &other, true);
    let out = common::run(&["compare", base, other_path.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(record::exit::USAGE), "{err}");
    assert!(
        err.contains("someone-else") && err.contains("--label"),
        "{err}"
    );
    // No column or step in common.
    let mut bare = record_at("runner-e", 22, 1000.0);
    bare.tests.clear();
    bare.steps.clear();
    let bare_path = dir.path().join("bare.json");
    write_json(&bare_path, &bare, true);
    let out = common::run(&["compare", base, bare_path.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(record::exit::USAGE), "{err}");
    assert!(err.contains("share no column or build step"), "{err}");
    // An unknown --fail-on.
    let new = dir.path().join("new.json");
    let out = common::run(&[
        "compare",
        base,
        new.to_str().unwrap(),
        "--fail-on",
        "faster",
    ]);
    assert_eq!(out.status.code(), Some(record::exit::USAGE));
}

#[test]
fn two_folders_compare_each_runner_both_have() {
    let dir = common::sandbox();
    history(dir.path(), "runner-f", &STEADY_MIB_S, 400.0);
    let newer = dir.path().join("newer");
    for (label, v) in [("runner-f", 400.0), ("only-in-new", 10.0)] {
        let r = record_at(label, 25, v);
        write_json(&newer.join(record::results::file_name(&r)), &r, true);
    }
    let out = common::run(&[
        "compare",
        dir.path().join("base").to_str().unwrap(),
        newer.to_str().unwrap(),
        "--markdown",
    ]);
    let md = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{md}");
    assert!(
        md.contains("**runner-f**") && !md.contains("only-in-new"),
        "{md}"
    );
    assert!(
        md.contains("| seq-read | 995 MiB/s | 400 MiB/s | -59.8% |"),
        "{md}"
    );
    assert!(
        md.contains("**slower**") && md.contains("Rerun once"),
        "{md}"
    );
}

/// A short `run` of the seq-read column in `dir`, its record kept in `dir/results`, no steps
/// and no site: append what the test varies.
fn seq_read_run(dir: &Path) -> std::process::Command {
    let mut cmd = common::bin();
    cmd.current_dir(dir).args([
        "run",
        "--only",
        "seq-read",
        "--runtime",
        "0.2",
        "--no-steps",
        "--no-site",
        "--results",
        "results",
    ]);
    cmd
}

/// `run --baseline`: the comparison is printed after the table and follows the run's own
/// summary in --markdown and in $GITHUB_STEP_SUMMARY.
#[test]
fn run_with_a_baseline_puts_the_comparison_in_the_job_summary() {
    let dir = common::sandbox();
    history(dir.path(), "baseline-runner", &STEADY_MIB_S, 1000.0);
    let summary = dir.path().join("step-summary.md");
    let md_file = dir.path().join("summary.md");
    let scratch = dir.path().join("scratch");
    fs::create_dir_all(&scratch).unwrap();
    let _load = common::disk_load();
    let out = seq_read_run(dir.path())
        .args(["--ramp", "0", "--size", "4M", "--label", "baseline-runner"])
        .arg("--dir")
        .arg(&scratch)
        .arg("--baseline")
        .arg(dir.path().join("base"))
        .arg("--markdown")
        .arg(&md_file)
        .env("GITHUB_STEP_SUMMARY", &summary)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("baseline-runner: 2026-11-05"), "{text}");
    let md = fs::read_to_string(&md_file).unwrap();
    assert_eq!(fs::read_to_string(&summary).unwrap(), md);
    let at = md
        .find("### Since the last run")
        .expect("the comparison is in the summary");
    assert!(
        md[..at].contains("## cargo-diskbench: baseline-runner"),
        "{md}"
    );
    let row = md[at..]
        .lines()
        .find(|l| l.starts_with("| seq-read |"))
        .unwrap_or_else(|| panic!("{md}"));
    assert!(
        row.contains("| 995 MiB/s |") && row.contains("history of 5 records"),
        "{row}"
    );
    assert!(
        ["faster", "**slower**", "within noise"]
            .iter()
            .any(|v| row.ends_with(&format!("| {v} |"))),
        "{row}"
    );
}

#[test]
fn run_with_a_missing_baseline_exits_2_before_measuring() {
    let dir = common::sandbox();
    let out = seq_read_run(dir.path())
        .args(["--baseline", "no-such-folder"])
        .env_remove("GITHUB_STEP_SUMMARY")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(record::exit::USAGE), "{err}");
    assert!(err.contains("--baseline"), "{err}");
    assert!(!dir.path().join("results").exists(), "nothing was written");
}

const ACTION: &str = "actions/diskbench/action.yml";

/// The action's `baseline` input: the run step passes it to `run --baseline`, so the job
/// summary holds the comparison after the run's own summary.
#[test]
fn the_action_baseline_input_puts_the_comparison_in_the_job_summary() {
    let _disk = common::disk_load();
    let tmp = tempfile::tempdir().unwrap();
    history(tmp.path(), "local-test", &STEADY_MIB_S, 1000.0);
    let workspace = tmp.path().join("workspace");
    fs::create_dir_all(&workspace).unwrap();
    fs::create_dir_all(tmp.path().join("runner-temp")).unwrap();
    let summary = tmp.path().join("step-summary.md");
    let baseline = tmp.path().join("base");
    let env: Vec<(&str, String)> = vec![
        ("BIN", env!("CARGO_BIN_EXE_cargo-diskbench").to_string()),
        ("INPUT_LABEL", "local-test".into()),
        ("INPUT_ONLY", "qd1-read".into()),
        ("INPUT_RUNTIME", "0.3".into()),
        ("INPUT_STEPS", "false".into()),
        ("INPUT_WHAT_IF", "false".into()),
        ("INPUT_ARGS", "--size 16M --ramp 0 --quiet".into()),
        ("RESULTS_NAME", "diskbench-record".into()),
        ("INPUT_SITE_OUT", String::new()),
        ("INPUT_BASELINE", baseline.display().to_string()),
        (
            "RUNNER_TEMP",
            tmp.path().join("runner-temp").display().to_string(),
        ),
        ("GITHUB_STEP_SUMMARY", summary.display().to_string()),
    ];
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let run = super::run_step(ACTION, "run", "bash", &workspace, &env);
    assert_eq!(run.code, 0, "{}", run.text);
    let md = fs::read_to_string(&summary).unwrap();
    let at = md
        .find("### Since the last run")
        .unwrap_or_else(|| panic!("{md}"));
    assert!(md[..at].contains("## cargo-diskbench: local-test"), "{md}");
    let rows: Vec<&str> = md[at..]
        .lines()
        .filter(|l| l.starts_with("| qd1-read"))
        .collect();
    assert_eq!(rows.len(), 2, "the headline and the p99: {md}");
    assert!(
        rows.iter().all(|r| r.contains("history of 5 records")),
        "{rows:?}"
    );
}

/// The action's compare step: `fail-on: slower` fails on a slower record and not on a steady
/// one; on a slower record it hands the Markdown comparison on (the `comparison` output, which
/// comment-on uploads for the comment action) and never calls `gh` itself; a baseline
/// without this runner (its first run) is not a failure.
#[test]
fn the_action_compare_step_fails_and_hands_the_comparison_on_only_when_slower() {
    let tmp = tempfile::tempdir().unwrap();
    let bin_dir = tmp.path().join("bin");
    let gh_log = tmp.path().join("gh.log");
    super::write_script(
        &bin_dir.join("gh"),
        &format!(
            "#!/bin/sh\nprintf '%s\\n' \"$@\" >> '{}'\nfor a in \"$@\"; do case \"$a\" in body=@*) cat \"${{a#body=@}}\" >> '{}';; esac; done\n",
            gh_log.display(),
            gh_log.display()
        ),
    );
    let path = super::path_with(&bin_dir);
    let step = |case: &str, sixth: f64, label: &str, fail_on: &str, comment_on: &str| {
        let dir = tmp.path().join(case);
        history(&dir, "runner-x", &STEADY_MIB_S, sixth);
        if label != "runner-x" {
            write_json(&dir.join("new.json"), &record_at(label, 20, sixth), true);
        }
        // comment-on only decides, in action.yml, whether the comparison is uploaded.
        let _ = comment_on;
        let env: Vec<(&str, String)> = vec![
            ("BIN", env!("CARGO_BIN_EXE_cargo-diskbench").to_string()),
            ("RECORD", dir.join("new.json").display().to_string()),
            ("INPUT_BASELINE", dir.join("base").display().to_string()),
            ("INPUT_FAIL_ON", fail_on.into()),
            ("GITHUB_REPOSITORY", "owner/repo".into()),
            ("GITHUB_SHA", "0123abcd".into()),
            ("RUNNER_TEMP", tmp.path().display().to_string()),
            ("PATH", path.clone()),
        ];
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
        super::run_step(ACTION, "compare", "bash", tmp.path(), &env)
    };
    let slower = step("slower", 400.0, "runner-x", "slower", "");
    assert_eq!(slower.code, 1, "{}", slower.text);
    assert!(slower.text.contains("fail-on: slower"), "{}", slower.text);
    assert!(!gh_log.exists(), "no comment unless comment-on asks");
    let steady = step("steady", 990.0, "runner-x", "slower", "slower");
    assert_eq!(steady.code, 0, "{}", steady.text);
    assert!(!gh_log.exists(), "nothing slower, no comment");
    let first = step("first", 400.0, "new-runner", "slower", "slower");
    assert_eq!(first.code, 0, "{}", first.text);
    assert!(
        first.text.contains("nothing to compare with yet"),
        "{}",
        first.text
    );
    let commented = step("commented", 400.0, "runner-x", "", "slower");
    assert_eq!(commented.code, 0, "{}", commented.text);
    assert!(!gh_log.exists(), "the measuring job posts nothing itself");
    let md = fs::read_to_string(&commented.outputs["comparison"]).unwrap();
    assert!(
        md.contains("### Since the last run") && md.contains("**slower**"),
        "{md}"
    );
    assert_eq!(
        commented.outputs.get("slower").map(String::as_str),
        Some("true")
    );
}

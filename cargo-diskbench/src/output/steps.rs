//! The build steps' table, the same in `run` and `steps`, with each step's what-if lines.

use record::units::{format_cores_busy, format_s};
use record::{StepResult, StepStatus};

use super::wrap;

/// The build steps, the same in `run` and `steps`: one row per step (id, verdict or status,
/// wall time, cores busy), then its verdict sentence (or why it failed or was skipped) wrapped
/// under the row, then a failed step's last lines of output. Empty when no step ran.
pub fn steps_table(steps: &[StepResult], vcpus: Option<u32>) -> String {
    if steps.is_empty() {
        return String::new();
    }
    let id_w = steps
        .iter()
        .map(|s| s.id.chars().count())
        .max()
        .unwrap_or(0)
        .max(4);
    let mut out = format!(
        "{:<id_w$}  {:<9}  {:>8}  {}\n",
        "step",
        "verdict",
        "wall",
        record::units::CORES_BUSY
    );
    let notes = record::what_if_notes::split(steps);
    for (s, own_notes) in steps.iter().zip(&notes.own) {
        // An experiment's verdict is the headline, on the time it stands on (its normal
        // runs' median); the inferred one is said under the row.
        let (verdict, wall_s, cpu_s) = match (&s.what_if, s.status) {
            (Some(w), StepStatus::Ok) => match &w.baseline {
                Some(b) => (w.bound.as_str(), b.wall_s, b.user_s + b.sys_s),
                None => (w.bound.as_str(), s.wall_s, s.user_s + s.sys_s),
            },
            _ => (s.verdict_word(), s.wall_s, s.user_s + s.sys_s),
        };
        let cores = if s.status == StepStatus::Ok {
            format_cores_busy(cpu_s, wall_s, vcpus)
        } else {
            "-".into()
        };
        out.push_str(&format!(
            "{:<id_w$}  {:<9}  {:>8}  {cores}\n",
            s.id,
            verdict,
            format_s(wall_s),
        ));
        let detail = match s.status {
            StepStatus::Ok => s.why.clone(),
            StepStatus::Failed | StepStatus::Skipped => {
                s.reason.clone().unwrap_or_else(|| s.why.clone())
            }
        };
        out.push_str(&wrap(&detail, "    ", "    "));
        out.push_str(&what_if_lines(s));
        for n in own_notes {
            out.push_str(&wrap(
                &format!("note: {n}"),
                "    what-if  ",
                "               ",
            ));
        }
        if let Some(tail) = s.output_tail.as_deref().filter(|t| !t.is_empty()) {
            for line in tail.lines() {
                out.push_str(&format!("    | {line}\n"));
            }
        }
    }
    // Said once for the run, not under every step.
    for n in &notes.shared {
        out.push_str(&wrap(&format!("what-if, every step: {n}"), "", "    "));
    }
    out.push_str(&format!(
        "{}: {} ({}).\n",
        record::units::CORES_BUSY,
        record::units::CORES_BUSY_MEANS,
        if vcpus.is_some_and(|v| v > 0) {
            "of the machine's vCPUs"
        } else {
            "vCPUs unknown"
        }
    ));
    out
}

/// A step's what-if experiment under its row: each condition's time against the normal run,
/// then the verdict by experiment (and the inferred one where they disagree). Empty without.
pub fn what_if_lines(s: &StepResult) -> String {
    let Some(w) = &s.what_if else {
        return String::new();
    };
    let mut out = String::new();
    if let Some(b) = &w.baseline {
        // One run has no spread: "1 run, no spread", never "spread 0%".
        let spread = match b.spread_pct {
            Some(p) if b.runs > 1 => format!("{} runs, spread {p:.0}%", b.runs),
            _ => "1 run, no spread".into(),
        };
        out.push_str(&format!(
            "    what-if  {:<22} {:>8.2} s  ({spread})\n",
            "normal", b.wall_s,
        ));
    }
    for c in &w.conditions {
        let vs = match (c.status, c.ratio) {
            // Slower than its caps can explain: the machine's time, not the caps'.
            (StepStatus::Ok, Some(r)) if c.disturbed && c.id.starts_with("like:") => {
                format!("{r:.2}x disturbed, no prediction")
            }
            (StepStatus::Ok, Some(r)) if c.disturbed => format!("{r:.2}x disturbed"),
            (StepStatus::Ok, Some(r)) => format!("{r:.2}x"),
            _ => "failed".into(),
        };
        out.push_str(&format!(
            "    what-if  {:<22} {:>8.2} s  {vs}\n",
            c.id, c.wall_s
        ));
    }
    // "cannot tell" where the spread swallowed the effect; the inferred verdict under it.
    let by = format!(
        "{} by experiment (inferred from waits: {})",
        w.verdict_word(),
        s.bound.as_str()
    );
    out.push_str(&wrap(
        &format!("what-if  => {by}: {}", w.why),
        "    ",
        "             ",
    ));
    // The notes follow in steps_table: those every experiment of the run carries once.
    out
}

#[cfg(test)]
mod steps_table_tests {
    use super::super::WIDTH;
    use super::super::table::headline;
    use super::*;
    use record::Bound;
    use record::TestResult;

    #[test]
    fn steps_show_their_verdict_or_why_they_did_not_run() {
        let ok = StepResult {
            id: "sqlite".into(),
            wall_s: 2.5,
            user_s: 0.5,
            sys_s: 0.4,
            bound: Bound::Latency,
            why: "2000 fdatasync calls".into(),
            ..Default::default()
        };
        let failed = StepResult {
            id: "cargo-build".into(),
            status: StepStatus::Failed,
            reason: Some("exited with code 101".into()),
            output_tail: Some("error[E0425]: x".into()),
            ..Default::default()
        };
        let text = steps_table(&[ok, failed], Some(2));
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 7, "{text}");
        assert!(lines[0].starts_with("step") && lines[0].ends_with("cores busy"));
        assert!(
            lines[1].starts_with("sqlite") && lines[1].contains("latency"),
            "{text}"
        );
        assert!(
            lines[1].contains("2.50 s") && lines[1].ends_with("0.36 of 2"),
            "{text}"
        );
        assert_eq!(lines[2], "    2000 fdatasync calls");
        assert!(
            lines[3].contains("failed") && lines[3].ends_with("-"),
            "{text}"
        );
        assert_eq!(lines[4], "    exited with code 101");
        assert_eq!(lines[5], "    | error[E0425]: x");
        assert_eq!(steps_table(&[], Some(2)), "");
    }

    #[test]
    fn wrap_breaks_at_spaces_keeps_long_words_and_indents() {
        let text = format!("{} {}  a-b\nc", "x".repeat(70), "y".repeat(90));
        assert_eq!(
            wrap(&text, "> ", "  "),
            format!("> {}\n  {}\n  a-b c\n", "x".repeat(70), "y".repeat(90))
        );
        let words = "word ".repeat(40);
        let wrapped = wrap(&words, "", "    ");
        assert!(wrapped.lines().all(|l| l.chars().count() <= WIDTH));
        assert_eq!(wrapped.split_whitespace().count(), 40);
        assert!(wrapped.lines().skip(1).all(|l| l.starts_with("    word")));
        assert_eq!(wrap(" \n ", "a", "b"), "");
    }

    #[test]
    fn a_long_verdict_wraps_under_its_row_within_80_columns() {
        let why = "The machine stalled on I/O (PSI) for 45% of the wall time; storage traffic \
                   120.3 MiB/s would take 60% of the time at this disk's sequential speed, \
                   512.0 KiB per read/write call, 0.45 of 2 cores busy over 19.4 s (CPU time \
                   / wall time): it waits on moving bytes.";
        let step = StepResult {
            id: "docker-build".into(),
            wall_s: 19.4,
            user_s: 5.0,
            sys_s: 3.73,
            bound: Bound::Bandwidth,
            why: why.into(),
            ..Default::default()
        };
        let text = steps_table(&[step], Some(2));
        for line in text.lines() {
            assert!(line.chars().count() <= WIDTH, "{line:?} in\n{text}");
        }
        let words: Vec<&str> = text
            .lines()
            .skip(2)
            .take_while(|l| l.starts_with("    "))
            .flat_map(|l| l.split_whitespace())
            .collect();
        assert_eq!(
            words.join(" "),
            why.split_whitespace().collect::<Vec<_>>().join(" ")
        );
        assert!(
            text.lines().nth(1).unwrap().ends_with("0.45 of 2"),
            "{text}"
        );
    }

    #[test]
    fn what_if_notes_are_said_once_per_run_wrapped_and_the_experiment_leads() {
        // The engine's real notes: 171 and 278 characters.
        let cache = "every run started with the step's own files (its work folder) synced and \
                     dropped from the page cache; the toolchain and the rest of the machine stay \
                     warm";
        let v1 = "cgroup v1: the caps reach reads, O_DIRECT writes and the write-back an fsync \
                  forces; write-back of buffered writes by the kernel's flusher is not \
                  attributed to the cgroup, so a step that writes much without syncing is \
                  slowed less here than on a disk that slow";
        let step = |id: &str, notes: &[&str]| StepResult {
            id: id.into(),
            wall_s: 0.49,
            bound: Bound::Mixed,
            why: "It waits on both.".into(),
            what_if: Some(record::WhatIf {
                baseline: Some(record::WhatIfCondition {
                    id: "baseline".into(),
                    wall_s: 0.46,
                    runs: 3,
                    ..Default::default()
                }),
                bound: Bound::Latency,
                why: "Only the IOPS cap slowed it.".into(),
                notes: notes.iter().map(|n| n.to_string()).collect(),
                ..Default::default()
            }),
            ..Default::default()
        };
        let steps = [
            step("sqlite", &[cache, v1, "sqlite's own note"]),
            step("npm-ci", &[cache, v1]),
            step("cargo-build", &[v1, cache]),
        ];
        let text = steps_table(&steps, Some(2));
        for line in text.lines() {
            assert!(line.chars().count() <= WIDTH, "{line:?} in\n{text}");
        }
        let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
        let flat_note = |n: &str| n.split_whitespace().collect::<Vec<_>>().join(" ");
        for n in [cache, v1] {
            assert_eq!(flat.matches(&flat_note(n)).count(), 1, "{text}");
        }
        assert_eq!(flat.matches("sqlite's own note").count(), 1, "{text}");
        // Each row: the experiment's verdict and its normal runs' median; the inferred
        // verdict under it.
        let row = text.lines().find(|l| l.starts_with("sqlite ")).unwrap();
        assert!(row.contains("latency") && row.contains("0.46 s"), "{row}");
        assert!(!row.contains("mixed") && !row.contains("0.49 s"), "{row}");
        assert!(
            flat.contains("latency by experiment (inferred from waits: mixed)"),
            "{text}"
        );
    }

    #[test]
    fn short_steps_keep_their_digits_and_figures_have_separators() {
        let step = StepResult {
            id: "tiny".into(),
            wall_s: 0.05,
            ..Default::default()
        };
        assert!(steps_table(&[step], None).contains("0.050 s"));
        // TestResult has no Default: built from JSON, as the integration tests do.
        let t: TestResult = serde_json::from_value(serde_json::json!({
            "id": "rand-read",
            "job": { "rw": "randread", "bs": 4096, "iodepth": 32, "numjobs": 4,
                     "size": 1u64 << 30, "direct": true, "sync": "none", "rwmixread": null },
            "engine": { "used": "io_uring", "fallback": null, "direct": true },
            "elapsed_s": 5.0,
            "read": { "ios": 111142, "bytes": 455237632u64, "iops": 22228.4, "mib_s": 86.8,
                      "lat_ns": null, "hist": null },
            "write": null,
            "cpu": { "user_s": 0.2, "sys_s": 1.1 },
        }))
        .expect("a valid test result");
        assert_eq!(headline(&t), "22,228 IOPS");
    }
}

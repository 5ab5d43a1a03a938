//! The runner page's build steps: one row per step of the newest run with steps. Where an
//! experiment ran, its verdict is the headline and the one inferred from the step's waits is
//! said under it; the row shows one time, the median the verdict used (the experiment's
//! normal runs when there was one), and the runs behind it only on demand. Notes every
//! experiment of the run carries are said once for the run ([`record::what_if_notes`]).

use record::{StepResult, StepStatus, what_if_notes};
use serde::Serialize;

use crate::analysis::stats::{fmt_s, fmt_times};
use crate::data::model::{Dataset, RunnerOverview};

/// The runner page's build steps.
#[derive(Serialize, Default)]
pub(crate) struct StepsView {
    /// One row per step of the newest run with steps.
    rows: Vec<StepRow>,
    /// That run's date, `YYYY-MM-DD` (empty: no run has steps).
    date: String,
    /// Notes every experiment of the run carries, said once, as sentences.
    notes: Vec<Vec<String>>,
}

/// One step of the run.
#[derive(Serialize)]
struct StepRow {
    /// The step's id.
    id: String,
    /// The step's name.
    name: String,
    /// `ok`, `failed` or `skipped`.
    status: &'static str,
    /// The time the verdict used, formatted (empty: the step did not finish).
    wall: String,
    /// The runs behind that time, shown on demand.
    runs: Vec<RunTime>,
    /// Whether the run is imported (published timings carry no CPU time).
    imported: bool,
    /// Cores busy over the same runs (empty: unknown).
    cpu: String,
    /// The headline verdict: the experiment's where there is one.
    bound: &'static str,
    /// The verdict inferred from the step's waits, when an experiment gave the headline.
    inferred: Option<&'static str>,
    /// Why the verdict, in words.
    why: String,
    /// Why the step failed or was skipped.
    reason: String,
    /// The end of the step's output (a failed step).
    tail: String,
    /// Time stalled on I/O, formatted (empty: not measured).
    stall: String,
    /// The what-if experiment, when one ran.
    what_if: Option<WhatIfView>,
}

/// One run behind a row's time.
#[derive(Serialize)]
struct RunTime {
    /// Its wall time, formatted.
    wall: String,
    /// Which run it was.
    condition: String,
}

pub(crate) fn steps_view(ds: &Dataset, r: &RunnerOverview) -> StepsView {
    let Some(rec) = r
        .runs
        .iter()
        .map(|&i| ds.record(i))
        .find(|rec| !rec.steps.is_empty())
    else {
        return StepsView::default();
    };
    let notes = what_if_notes::split(&rec.steps);
    let rows = rec
        .steps
        .iter()
        .zip(&notes.own)
        .map(|(s, own)| {
            let ok = s.status == StepStatus::Ok;
            let experiment = s.what_if.as_ref().filter(|_| ok);
            StepRow {
                id: s.id.clone(),
                name: s.name.clone(),
                status: match s.status {
                    StepStatus::Ok => "ok",
                    StepStatus::Failed => "failed",
                    StepStatus::Skipped => "skipped",
                },
                wall: if ok {
                    fmt_s(verdict_time_s(s))
                } else {
                    String::new()
                },
                runs: if ok {
                    runs_behind(ds, r, s)
                } else {
                    Vec::new()
                },
                imported: rec.is_imported(),
                cpu: if ok && !rec.is_imported() {
                    cores_busy(s, rec.runner.vcpus)
                } else {
                    String::new()
                },
                bound: experiment.map_or(s.bound, |w| w.bound).as_str(),
                inferred: experiment.map(|_| s.bound.as_str()),
                why: s.why.clone(),
                reason: s.reason.clone().unwrap_or_default(),
                tail: s.output_tail.clone().unwrap_or_default(),
                stall: s.io_pressure_s.map(fmt_s).unwrap_or_default(),
                what_if: what_if_view(s, own),
            }
        })
        .collect();
    StepsView {
        rows,
        date: rec.started_at.get(..10).unwrap_or("").to_string(),
        notes: notes
            .shared
            .iter()
            .map(|n| what_if_notes::sentences(n))
            .collect(),
    }
}

/// The time the step's verdict stands on: the median of the experiment's normal runs when an
/// experiment ran (its verdict outranks the inferred one), else the run's own time.
fn verdict_time_s(s: &StepResult) -> f64 {
    s.what_if
        .as_ref()
        .and_then(|w| w.baseline.as_ref())
        .map_or(s.wall_s, |b| b.wall_s)
}

/// Cores busy over the same runs as the row's time.
fn cores_busy(s: &StepResult, vcpus: u32) -> String {
    let (cpu_s, wall_s) = match s.what_if.as_ref().and_then(|w| w.baseline.as_ref()) {
        Some(b) => (b.user_s + b.sys_s, b.wall_s),
        None => (s.user_s + s.sys_s, s.wall_s),
    };
    if wall_s > 0.0 {
        record::units::format_cores_busy(cpu_s, wall_s, Some(vcpus))
    } else {
        String::new()
    }
}

/// Each run behind the row's time, with its condition: the experiment's normal runs (and the
/// run the step was timed in first), or, without an experiment, this step in each run of the
/// window, newest first.
fn runs_behind(ds: &Dataset, r: &RunnerOverview, s: &StepResult) -> Vec<RunTime> {
    let run = |wall_s: f64, condition: String| RunTime {
        wall: fmt_s(wall_s),
        condition,
    };
    if let Some(b) = s.what_if.as_ref().and_then(|w| w.baseline.as_ref()) {
        let mut out = vec![run(s.wall_s, "timed run (before the experiment)".into())];
        let n = b.wall_runs_s.len();
        out.extend(
            b.wall_runs_s
                .iter()
                .enumerate()
                .map(|(i, &w)| run(w, format!("experiment, normal run {} of {n}", i + 1))),
        );
        if n == 0 {
            out.push(run(
                b.wall_s,
                format!("experiment, median of {} normal runs", b.runs),
            ));
        }
        return out;
    }
    let window: Vec<RunTime> = r
        .runs
        .iter()
        .map(|&i| ds.record(i))
        .filter_map(|rec| {
            let t = rec
                .steps
                .iter()
                .find(|t| t.id == s.id && t.status == StepStatus::Ok)?;
            let date = rec.started_at.replace('T', " ");
            Some(run(
                t.wall_s,
                format!("normal run of {}", date.trim_end_matches('Z')),
            ))
        })
        .collect();
    // One run is the row's own time: nothing behind it to show.
    if window.len() > 1 { window } else { Vec::new() }
}

/// A step's what-if experiment for the pages: the verdict by experiment, the inferred one,
/// each condition's time against the normal median, and the step's own notes as sentences.
#[derive(Serialize)]
pub(crate) struct WhatIfView {
    /// The verdict by experiment.
    bound: &'static str,
    /// Why, in words.
    why: String,
    /// The verdict inferred from the step's waits.
    inferred: &'static str,
    /// Whether the two verdicts differ.
    disagrees: bool,
    /// Each condition against the normal median (the row's time).
    conditions: Vec<ConditionView>,
    /// The step's own notes, as sentences.
    notes: Vec<Vec<String>>,
    /// The runner it ran on (the steps page lists experiments across runners).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runner: Option<String>,
    /// That runner's page slug.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slug: Option<String>,
}

/// One what-if condition.
#[derive(Serialize)]
struct ConditionView {
    /// The condition's id.
    id: String,
    /// Its median time, formatted.
    wall: String,
    /// Its time over the normal median, or why there is none.
    ratio: String,
}

pub(crate) fn what_if_view(s: &StepResult, own_notes: &[String]) -> Option<WhatIfView> {
    let w = s.what_if.as_ref()?;
    // The normal median is the row's time: the table lists only the conditions set against it.
    let conditions = w
        .conditions
        .iter()
        .map(|c| ConditionView {
            id: c.id.clone(),
            wall: fmt_s(c.wall_s),
            ratio: match c.ratio {
                // Slower than its caps can explain: shown as such, never as a prediction.
                Some(r) if c.disturbed => format!("{} (disturbed: not the caps)", fmt_times(r)),
                Some(r) => fmt_times(r),
                None => "failed".into(),
            },
        })
        .collect();
    Some(WhatIfView {
        bound: w.bound.as_str(),
        why: w.why.clone(),
        inferred: s.bound.as_str(),
        disagrees: w.bound != s.bound,
        conditions,
        notes: own_notes
            .iter()
            .map(|n| what_if_notes::sentences(n))
            .collect(),
        runner: None,
        slug: None,
    })
}

#[cfg(test)]
mod tests {
    use record::{Bound, WhatIf, WhatIfCondition};

    const CACHE_NOTE: &str = "every run started with the step's own files synced and dropped \
        from the page cache; the toolchain and the rest of the machine stay warm";

    /// Times ("0.46 s", "1,234 s") in `text` with its tags removed.
    fn times_in(html: &str) -> usize {
        let mut text = String::new();
        let mut in_tag = false;
        for c in html.chars() {
            match c {
                '<' => {
                    in_tag = true;
                    text.push(' ');
                }
                '>' => in_tag = false,
                c if !in_tag => text.push(c),
                _ => {}
            }
        }
        let b = text.as_bytes();
        (1..b.len().saturating_sub(1))
            .filter(|&i| {
                b[i] == b' '
                    && b[i + 1] == b's'
                    && b[i - 1].is_ascii_digit()
                    && b.get(i + 2).is_none_or(|c| !c.is_ascii_alphanumeric())
            })
            .count()
    }

    fn without_details(html: &str) -> String {
        let mut out = String::new();
        let mut rest = html;
        while let Some(i) = rest.find("<details") {
            out.push_str(&rest[..i]);
            let end = rest[i..].find("</details>").expect("details closed") + i;
            rest = &rest[end + "</details>".len()..];
        }
        out.push_str(rest);
        out
    }

    /// The small fleet, with an experiment on two steps of every run of its first runner that
    /// disagrees with the inferred verdict; returns the first runner's page.
    fn runner_page_with_experiments() -> (String, String) {
        let fleet = crate::data::testdata::Fleet::small();
        let mut records = fleet.records();
        let label = records[0].runner.label.clone();
        for r in records.iter_mut().filter(|r| r.runner.label == label) {
            for (k, s) in r.steps.iter_mut().take(2).enumerate() {
                s.status = record::StepStatus::Ok;
                s.bound = Bound::Mixed;
                s.wall_s = 0.49;
                let runs = vec![0.46, 0.44, 0.51];
                s.what_if = Some(WhatIf {
                    baseline: Some(WhatIfCondition {
                        id: "baseline".into(),
                        wall_s: 0.46,
                        runs: 3,
                        wall_runs_s: runs,
                        ..Default::default()
                    }),
                    conditions: vec![WhatIfCondition {
                        id: "iops-capped".into(),
                        wall_s: 3.1,
                        runs: 3,
                        ratio: Some(6.74),
                        ..Default::default()
                    }],
                    bound: Bound::Latency,
                    why: "under an IOPS cap it took 6.74x the normal time".into(),
                    notes: if k == 0 {
                        vec![CACHE_NOTE.into(), "only this step's note".into()]
                    } else {
                        vec![CACHE_NOTE.into()]
                    },
                    ..Default::default()
                });
            }
        }
        let dir = tempfile::tempdir().unwrap();
        let results = dir.path().join("results");
        for r in &records {
            record::results::write_record(&results, r).unwrap();
        }
        let out = dir.path().join("site");
        crate::build_site(&crate::SiteOptions {
            results,
            out: out.clone(),
            ..Default::default()
        })
        .unwrap();
        let page = std::fs::read_dir(out.join("runners"))
            .unwrap()
            .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap())
            .find(|html| html.contains("inferred from waits"))
            .expect("a runner page with the experiments");
        let id = records[0].steps[0].id.clone();
        (page, id)
    }

    /// The rows of the steps table (not the sentence rows under them).
    fn step_rows(html: &str) -> Vec<&str> {
        let table = &html[html.find("<table class=\"steps\">").unwrap()..];
        let table = &table[..table.find("</table>\n</div>").unwrap()];
        table
            .split("<tr class=\"st-")
            .skip(1)
            .filter(|r| !r.starts_with("ok why") && !r.contains(" why\">"))
            .collect()
    }

    #[test]
    fn the_experiments_verdict_is_the_headline_and_a_row_shows_one_time() {
        let (html, id) = runner_page_with_experiments();
        let rows = step_rows(&html);
        assert!(rows.len() >= 2, "{html}");
        let row = rows
            .iter()
            .find(|r| r.contains(&format!("<code>{id}</code>")))
            .expect("the step's row");
        // The badge is the experiment's; the inferred verdict comes after it, as secondary.
        let badge = row
            .find("class=\"bound b-latency\"")
            .expect("latency badge");
        let inferred = row
            .find("inferred from waits: mixed")
            .expect("the inferred verdict");
        assert!(badge < inferred, "{row}");
        assert!(
            !row.contains("b-mixed"),
            "the inferred verdict is no badge: {row}"
        );
        // One time of the step outside <details>: the median of the experiment's normal runs
        // (the I/O stall is another figure, in its own labelled cell).
        let step_time = |r: &str| {
            let r = without_details(r);
            match r.find("data-label=\"I/O stall\"") {
                Some(i) => r[..i].to_string(),
                None => r,
            }
        };
        for r in &rows {
            assert!(times_in(&step_time(r)) <= 1, "{r}");
        }
        let outside = step_time(row);
        assert_eq!(times_in(&outside), 1, "{row}");
        assert!(
            outside.contains("0.46 s") && !outside.contains("0.49 s"),
            "{row}"
        );
        // The runs behind it, on demand: each with its time and condition.
        let details = &row[row.find("<details").unwrap()..];
        for (t, what) in [
            ("0.49 s", "timed run"),
            ("0.44 s", "normal run 2 of 3"),
            ("0.51 s", "normal run 3 of 3"),
        ] {
            assert!(
                details.contains(&format!("{t}: ")) && details.contains(what),
                "{details}"
            );
        }
    }

    #[test]
    fn a_note_every_experiment_carries_is_said_once_per_run() {
        let (html, _) = runner_page_with_experiments();
        let said = "Every run started with the step&#39;s own files synced and dropped from the \
                    page cache. The toolchain and the rest of the machine stay warm.";
        assert_eq!(html.matches(said).count(), 1, "{html}");
        assert_eq!(
            html.matches("Only this step&#39;s note.").count(),
            1,
            "{html}"
        );
        assert!(!html.contains("page cache; the toolchain"), "{html}");
    }

    #[test]
    fn the_time_counter_sees_times() {
        assert_eq!(times_in("<td>0.46 s<span>median 0.50 s</span></td>"), 2);
        assert_eq!(times_in("<td>1,234 s</td> 3 steps"), 1);
        assert_eq!(
            times_in(&super::tests::without_details(
                "a 1 s<details>2 s</details> b"
            )),
            1
        );
    }
}

//! Published build timings (`date,label,suite,step,wall_s,status`) become records: one record
//! per runner, date and suite (a run of that project's job), one step per row, no tests. The
//! runner's disk and CPU figures come from other records with the same label.
//!
//! A step's id is `<suite>/<step>` (both slugged): the `/` never occurs in this tool's own
//! step ids, so the suite can be read back from the id (see [`suite_of`]).

use std::collections::BTreeMap;

use record::*;

/// The columns a build-timings CSV must have.
pub(crate) const HEADER: [&str; 6] = ["date", "label", "suite", "step", "wall_s", "status"];

/// The suite of the tool's own steps (built-in and `diskbench.toml` ones).
pub(crate) const OWN_SUITE: &str = "cargo-diskbench";

/// Whether `text`'s first line is a build-timings header (and not published disk figures).
pub(crate) fn is_build_timings(text: &str) -> bool {
    // Only the first line decides (and a file that is not CSV is not build timings).
    let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    crate::data::csv_table::CsvTable::parse(first)
        .is_ok_and(|table| ["suite", "step", "wall_s"].iter().all(|k| table.has(k)))
}

/// The step id of a published step.
pub(crate) fn step_id(suite: &str, step: &str) -> String {
    use record::safe_name::{NameKind, name};
    format!(
        "{}/{}",
        name(suite, NameKind::Slug, "suite"),
        name(step, NameKind::Slug, "step")
    )
}

/// The suite a step id belongs to: the part before `/` for published steps, else this tool's.
pub(crate) fn suite_of(step_id: &str) -> &str {
    step_id.split_once('/').map(|(s, _)| s).unwrap_or(OWN_SUITE)
}

fn status(s: &str) -> Option<StepStatus> {
    Some(match s.trim().to_ascii_lowercase().as_str() {
        "success" | "ok" | "passed" => StepStatus::Ok,
        "failure" | "failed" | "error" | "timed_out" | "cancelled" => StepStatus::Failed,
        "skipped" => StepStatus::Skipped,
        _ => return None,
    })
}

/// Records from a build-timings CSV. Every row is checked before any record is made.
pub(crate) fn build_timing_records(
    text: &str,
    source_file: &str,
) -> std::result::Result<Vec<Record>, String> {
    let table = crate::data::csv_table::CsvTable::parse(text)?;
    for required in HEADER {
        if !table.has(required) {
            return Err(format!(
                "a build-timings CSV needs the columns {}; the header has no {required:?}",
                HEADER.join(",")
            ));
        }
    }
    // (date, label, suite) -> the runs of that job; the k-th row of the same step goes to run k.
    type Job = Vec<(Record, Vec<String>)>;
    let mut jobs: BTreeMap<(String, String, String), Job> = BTreeMap::new();
    for row in table.rows() {
        // "interrupted" here: the import turns it into exit 130.
        let (lineno, _, row) = row?;
        let get = |k: &str| {
            row.get(k)
                .map(|v| v.as_str())
                .filter(|v| !v.is_empty())
                .ok_or_else(|| format!("line {lineno}, column {k}: empty"))
        };
        let date = get("date")?;
        crate::data::csv_table::check_csv_date(lineno, date)?;
        let (label, suite, step) = (get("label")?, get("suite")?, get("step")?);
        let wall = get("wall_s")?;
        let wall_s = wall
            .parse::<f64>()
            .ok()
            .filter(|w| w.is_finite() && *w >= 0.0 && *w < 1e7)
            .ok_or_else(|| {
                format!("line {lineno}, column wall_s: {wall:?} is not a number of seconds")
            })?;
        let st = get("status")?;
        let status = status(st).ok_or_else(|| {
            format!("line {lineno}, column status: {st:?} is not success, failure or skipped")
        })?;
        let runs = jobs
            .entry((date.into(), label.into(), suite.into()))
            .or_default();
        let id = step_id(suite, step);
        let run = match runs.iter().position(|(_, ids)| !ids.contains(&id)) {
            Some(i) => i,
            None => {
                let started_at = if date.len() == 10 {
                    format!("{date}T00:00:00Z")
                } else {
                    date.to_string()
                };
                let runner = Runner {
                    label: label.into(),
                    arch: "unknown".into(),
                    evidence: vec![format!(
                        "published build timings, {source_file}: the file names the runner only"
                    )],
                    ..Runner::default()
                };
                // From the content only: the same rows imported from another path or a copy
                // are the same records.
                let rec_id = crate::data::csv_table::stable_id(&[
                    "build-timings",
                    date,
                    label,
                    suite,
                    &runs.len().to_string(),
                ]);
                let mut rec =
                    Record::imported("imported:csv", source_file, rec_id, started_at, runner);
                rec.storage.class_evidence =
                    vec!["build timings do not describe the storage".into()];
                rec.notes.push(format!(
                    "published build timings of the {suite:?} job, imported from {source_file}; not measured by cargo-diskbench"
                ));
                runs.push((rec, Vec::new()));
                runs.len() - 1
            }
        };
        let (rec, ids) = &mut runs[run];
        ids.push(id.clone());
        rec.steps.push(StepResult {
            id,
            name: step.into(),
            command: Vec::new(),
            status,
            reason: (status != StepStatus::Ok).then(|| format!("published status: {st}")),
            wall_s,
            bound: Bound::Unknown,
            why: format!("published timing ({source_file}, line {lineno}): no signals to judge"),
            notes: vec![format!(
                "published wall time, whole seconds as published ({source_file}, line {lineno})"
            )],
            ..StepResult::default()
        });
    }
    let mut records: Vec<Record> = jobs
        .into_values()
        .flat_map(|runs| runs.into_iter().map(|(r, _)| r))
        .collect();
    // A record's id covers all it holds (its first row's id plus every step's time and
    // status), so a corrected time is a new record and the same rows are the same record.
    for rec in &mut records {
        let mut parts = vec![rec.id.clone()];
        for st in &rec.steps {
            parts.push(format!("{}={}:{:?}", st.id, st.wall_s, st.status));
        }
        let parts: Vec<&str> = parts.iter().map(String::as_str).collect();
        rec.id = crate::data::csv_table::stable_id(&parts);
    }
    if records.is_empty() {
        return Err("no data rows after the header".into());
    }
    Ok(records)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(rel: &str) -> String {
        std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../fixtures")
                .join(rel),
        )
        .unwrap()
    }

    #[test]
    fn node_timings_become_one_record_per_runner_with_a_step_per_row() {
        let text = fixture("published/build-steps-node-2026-10-10.csv");
        assert!(is_build_timings(&text));
        assert!(!is_build_timings(&fixture(
            "published/ec2-storage-2026-09-30_10-01.csv"
        )));
        let recs = build_timing_records(&text, "node.csv").unwrap();
        assert_eq!(recs.len(), 8);
        let rows = text.lines().skip(1).filter(|l| !l.is_empty()).count();
        assert_eq!(recs.iter().map(|r| r.steps.len()).sum::<usize>(), rows);
        let r = recs
            .iter()
            .find(|r| r.runner.label == "github-x64-2x8")
            .unwrap();
        assert_eq!(r.source, "imported:csv");
        assert!(r.is_imported() && r.tests.is_empty());
        let bun = r.steps.iter().find(|s| s.name == "bun install").unwrap();
        assert_eq!((bun.id.as_str(), bun.wall_s), ("node/bun-install", 55.0));
        assert_eq!(suite_of(&bun.id), "node");
        assert_eq!(suite_of("sqlite"), OWN_SUITE);
        // Same file, same ids: importing twice finds the records already there.
        assert_eq!(
            build_timing_records(&text, "node.csv").unwrap()[0].id,
            recs[0].id
        );
    }

    #[test]
    fn a_second_row_of_the_same_step_is_a_second_run() {
        let csv = "date,label,suite,step,wall_s,status\n\
                   2026-10-10,a,node,test,10,success\n\
                   2026-10-10,a,node,test,12,failure\n";
        let recs = build_timing_records(csv, "x").unwrap();
        assert_eq!(recs.len(), 2);
        assert_eq!(recs[1].steps[0].status, StepStatus::Failed);
        assert_ne!(recs[0].id, recs[1].id);
    }

    #[test]
    fn bad_rows_name_the_line_and_column() {
        let head = "date,label,suite,step,wall_s,status\n";
        for (row, want) in [
            ("2026-10-10,a,node,t,fast,success", "line 2, column wall_s"),
            ("2026-10-10,a,node,t,-1,success", "line 2, column wall_s"),
            ("2026-10-10,a,node,t,3,maybe", "line 2, column status"),
            ("yesterday,a,node,t,3,success", "line 2, column date"),
            // The same date checks as the figures CSV: a real calendar date, not ahead.
            ("2026-02-31,a,node,t,3,success", "line 2, column date"),
            (
                "2026-01-01<script>,a,node,t,3,success",
                "line 2, column date",
            ),
            ("9999-12-31,a,node,t,3,success", "is in the future"),
            ("2026-10-10,,node,t,3,success", "line 2, column label"),
            ("2026-10-10,a,node,t,3", "line 2: 5 fields"),
        ] {
            let err = build_timing_records(&format!("{head}{row}\n"), "x").unwrap_err();
            assert!(err.contains(want), "{row}: {err}");
        }
        let err = build_timing_records("date,label,suite,step,wall_s\n", "x").unwrap_err();
        assert!(err.contains("\"status\""), "{err}");
    }

    /// The ids come from the rows, not from the file's name: the same timings imported from
    /// another path or a renamed copy are the same records (an import is idempotent).
    #[test]
    fn ids_come_from_the_content_not_the_file_name() {
        let csv = "date,label,suite,step,wall_s,status\n\
                   2026-10-10,a,node,test,10,success\n\
                   2026-10-10,b,node,test,12,success\n";
        let ids = |name: &str| -> Vec<String> {
            build_timing_records(csv, name)
                .unwrap()
                .into_iter()
                .map(|r| r.id)
                .collect()
        };
        assert_eq!(ids("timings.csv"), ids("copy-of-timings.csv"));
        let other = csv.replace(",12,", ",13,");
        let changed: Vec<String> = build_timing_records(&other, "timings.csv")
            .unwrap()
            .into_iter()
            .map(|r| r.id)
            .collect();
        assert_ne!(
            ids("timings.csv"),
            changed,
            "different rows, different records"
        );
    }
}

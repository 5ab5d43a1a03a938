//! `--like LABEL`: another runner's figures, from its newest record in the results folder, as
//! block-I/O caps on this disk; and, per column, the target's figure beside the one measured
//! under the caps, with whether a cap can reproduce it at all.

use std::path::Path;

use anyhow::Result;
use record::error::usage;
use record::{ColumnId, IoCaps, LikeColumn, LikeSettings, Record, TestResult};

use crate::steps::what_if::caps::CapTarget;

/// The newest record labelled `label` in `results` and the caps that make this disk look
/// like it. A usage error (exit 2) names the option when there is none.
pub fn newest_record(results: &Path, label: &str) -> Result<(Record, String, IoCaps)> {
    let loaded =
        record::load::load_dir(results).map_err(|e| usage(format!("--like {label}: {e:#}")))?;
    let mut labels: Vec<String> = Vec::new();
    let mut best: Option<(Record, String)> = None;
    for l in loaded.records {
        // A record of another `--like` run is no figure of its runner's own.
        if l.record.emulates().is_some() {
            continue;
        }
        if !labels.contains(&l.record.runner.label) {
            labels.push(l.record.runner.label.clone());
        }
        if l.record.runner.label != label
            || !crate::steps::what_if::options::has_like_figures(&l.record)
        {
            continue;
        }
        if best
            .as_ref()
            .is_none_or(|(b, _)| l.record.finished_at > b.finished_at)
        {
            let name = l
                .path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            best = Some((l.record, name));
        }
    }
    let Some((record, name)) = best else {
        labels.sort();
        return Err(usage(format!(
            "--like {label}: no record labelled \"{label}\" with sequential or random figures in \
             --results {} (labels there: {}); import published figures with `cargo diskbench \
             import FILE --results {}`",
            results.display(),
            if labels.is_empty() {
                "none".to_string()
            } else {
                labels.join(", ")
            },
            results.display()
        )));
    };
    let caps = crate::steps::what_if::options::caps_like(&record)
        .map_err(|why| usage(format!("--like {label}: {why} (the record {name})")))?;
    Ok((record, name, caps))
}

/// `--like LABEL` resolved: the runner's record, the caps and where they go.
pub struct LikeTarget {
    pub label: String,
    /// The record's file name and its source, e.g. `2026-10-01-x-0a1b.json (imported:csv)`.
    pub from: String,
    pub record: Record,
    pub caps: IoCaps,
    pub target: CapTarget,
}

/// Check `--like` before anything runs: root, a block-I/O hierarchy, a disk under `--dir`
/// that caps reach (tmpfs is refused by name), and a record labelled LABEL.
pub fn resolve(label: &str, dir: &Path, results: &Path) -> Result<LikeTarget> {
    let target =
        crate::steps::what_if::preflight::preflight(dir, Path::new(crate::cgroup::CGROUP_FS))?
            .map_err(|why| usage(format!("--like {label}: {why}")))?;
    let (record, from, caps) = newest_record(results, label)?;
    Ok(LikeTarget {
        label: label.to_string(),
        from: format!("{from} ({})", record.source),
        record,
        caps,
        target,
    })
}

/// How close (in %) a figure measured under `--like` caps must land on the target's to count
/// as reproduced.
const LIKE_TOLERANCE_PCT: f64 = 25.0;

/// The record's `settings.like`: per column, LABEL's figure beside the one measured under its
/// caps.
pub fn settings(l: LikeTarget, tests: &[TestResult]) -> LikeSettings {
    let columns = ColumnId::ALL
        .into_iter()
        .filter_map(|c| {
            let measured = tests.iter().find(|t| t.id == c.as_str())?.headline();
            let target = l.record.test(c).and_then(|t| t.headline());
            let off_pct = match (measured, target) {
                (Some(m), Some(t)) if t > 0.0 => Some((m / t - 1.0) * 100.0),
                _ => None,
            };
            // A rate cap reproduces a figure only when this disk can go at least that fast:
            // judged from what the capped run measured, within LIKE_TOLERANCE_PCT of the target.
            let landed = off_pct.is_some_and(|o| o.abs() <= LIKE_TOLERANCE_PCT);
            let missed = |how: &str| {
                format!(
                    "{how}, but the run measured {} the target: this disk (or this machine now) does not \
                     reach it, and a cap only slows a disk down",
                    off_pct.map_or("no figure against".to_string(), |o| format!("{o:+.0}% off"))
                )
            };
            let (reproducible, note) = match c {
                ColumnId::SeqRead | ColumnId::SeqWrite => {
                    let how = "capped in bytes per second at the target's MiB/s";
                    (landed, if landed { how.to_string() } else { missed(how) })
                }
                ColumnId::RandRead | ColumnId::RandWrite => {
                    let how = "capped in I/Os per second at the target's IOPS";
                    (landed, if landed { how.to_string() } else { missed(how) })
                }
                ColumnId::Qd1Read | ColumnId::SyncWrite => (
                    false,
                    "not reproducible by a cap: one I/O at a time is bounded by this disk's own \
                     latency; a cap only limits the rate, it adds no latency to a single I/O"
                        .to_string(),
                ),
            };
            Some(LikeColumn {
                id: c.as_str().into(),
                target,
                measured,
                off_pct,
                reproducible,
                note,
            })
        })
        .collect();
    LikeSettings {
        label: l.label,
        from: l.from,
        caps: l.caps,
        devices: l.target.devices.iter().map(|d| d.to_string()).collect(),
        columns,
    }
}

//! What an experiment runs: the options resolved before any step runs, the conditions in
//! order with their caps, and the caps that make this disk look like another runner's.

use record::{IoCaps, Record};

use super::caps::CapTarget;

/// Default cap of the `iops-capped` condition, I/Os per second per direction.
pub const DEFAULT_CAP_IOPS: u64 = 1000;
/// Default cap of the `bandwidth-capped` condition, MiB/s per direction.
pub const DEFAULT_CAP_MIB_S: u64 = 50;

/// Runs per what-if condition (and of the normal run) without `--what-if-repeat`: the
/// fewest whose median one run a busy machine starved cannot move.
pub const MIN_RUNS: u32 = 3;
/// The most runs of one condition: more are added past [`MIN_RUNS`] while the runs spread
/// wider than [`WIDE_SPREAD_PCT`], up to this many.
pub const MAX_RUNS: u32 = 7;
/// Runs whose middle spread is wider than this (percent) get another run.
pub const WIDE_SPREAD_PCT: f64 = 20.0;
/// Default `--what-if-budget-s`: seconds one step's what-if runs (its normal runs included)
/// may take before no run past the [`MIN_RUNS`] of each condition is added.
pub const DEFAULT_BUDGET_S: u64 = 600;

/// Bytes in a MiB, for caps given in MiB/s.
pub(crate) const MIB: u64 = 1024 * 1024;

pub use crate::experiments::cgroup::{MAX_CAP_IOPS, check_caps};

/// `--cap-iops` and `--cap-mib-s` as caps, or a usage message naming the option: both above
/// 0, the iops within what the kernel keeps, and MiB/s times 2^20 within u64.
pub fn checked_option_caps(cap_iops: u64, cap_mib_s: u64) -> Result<(IoCaps, IoCaps), String> {
    let iops = IoCaps {
        riops: Some(cap_iops),
        wiops: Some(cap_iops),
        ..Default::default()
    };
    check_caps(&iops)
        .map_err(|why| format!("--cap-iops {cap_iops}: {why}; use 1 to {MAX_CAP_IOPS}"))?;
    let bps = cap_mib_s.checked_mul(MIB).ok_or_else(|| {
        format!(
            "--cap-mib-s {cap_mib_s}: {cap_mib_s} MiB/s is more bytes per second than 64 bits \
             hold; use 1 to {}",
            u64::MAX / MIB
        )
    })?;
    let bandwidth = IoCaps {
        rbps: Some(bps),
        wbps: Some(bps),
        ..Default::default()
    };
    check_caps(&bandwidth).map_err(|why| {
        format!(
            "--cap-mib-s {cap_mib_s}: {why}; use 1 to {}",
            u64::MAX / MIB
        )
    })?;
    Ok((iops, bandwidth))
}

/// What the what-if runs need, resolved once before any step runs.
#[derive(Clone, Debug)]
pub struct WhatIfOptions {
    /// `--what-if-repeat N`: exactly N runs per condition (and of the normal run). None:
    /// [`MIN_RUNS`], more while the spread is wide (see [`RunPlan`]).
    pub repeat: Option<u32>,
    /// `--what-if-budget-s`: past this many seconds of a step's what-if runs no run beyond
    /// the [`MIN_RUNS`] is added.
    pub budget_s: u64,
    pub cap_iops: u64,
    pub cap_mib_s: u64,
    /// `--like LABEL`: the label and the caps from its figures.
    pub like: Option<(String, IoCaps)>,
    /// `--like LABEL`: its one-at-a-time latency, which the caps leave out (the prediction
    /// says so, with an estimate).
    pub like_latency: Option<super::like_latency::OneAtATime>,
    /// `--like LABEL`: the latency the `like:` condition adds to the step's folder on a FUSE
    /// passthrough ([`crate::experiments::like::emulated_delays`]); None without LABEL's one-at-a-time
    /// figures (or where /dev/fuse cannot be opened: checked when the condition runs).
    pub like_delays: Option<latency_fs::Delays>,
    /// The block-I/O hierarchy, or why the capped conditions cannot run (only memory runs).
    pub caps_target: Result<CapTarget, String>,
    /// Only these conditions (ids of [`CONDITION_IDS`]); None: all.
    pub only: Option<Vec<String>>,
}

/// How many runs a condition gets: a fixed count, or at least [`MIN_RUNS`] and more while
/// their spread is wide, up to [`MAX_RUNS`] and within a time budget.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct RunPlan {
    pub fixed: Option<u32>,
    pub budget_s: f64,
}

/// Whether a condition gets another run, and if not why.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum NextRun {
    Run,
    /// The count asked for, or the spread is narrow enough.
    Enough,
    /// [`MAX_RUNS`] ran and the spread is still wide.
    AtMost,
    /// Another run would take the step's what-if runs past the budget.
    Budget,
}

impl RunPlan {
    /// The runs the experiment plans at least, per condition.
    pub(crate) fn min_runs(&self) -> u32 {
        self.fixed.unwrap_or(MIN_RUNS).max(1)
    }

    /// Whether `walls` (this condition's runs so far, seconds) get another run, when the
    /// step's what-if runs have taken `spent_s`. Pure: the experiment's loop asks it.
    pub(crate) fn next(&self, walls: &[f64], spent_s: f64) -> NextRun {
        let n = walls.len() as u32;
        if let Some(fixed) = self.fixed {
            return if n < fixed.max(1) {
                NextRun::Run
            } else {
                NextRun::Enough
            };
        }
        if n < MIN_RUNS {
            return NextRun::Run;
        }
        let wide = super::spread::middle_spread_pct(walls).is_some_and(|s| s > WIDE_SPREAD_PCT);
        if !wide {
            return NextRun::Enough;
        }
        if n >= MAX_RUNS {
            return NextRun::AtMost;
        }
        // The next run is expected to take about the median of these.
        let next_s = super::spread::median(walls).unwrap_or(0.0);
        if spent_s + next_s > self.budget_s {
            return NextRun::Budget;
        }
        NextRun::Run
    }
}

/// `--what-if-repeat` and `--what-if-budget-s` checked, or a usage message naming the option.
pub fn check_runs(repeat: Option<u32>, budget_s: u64) -> Result<(), String> {
    if repeat == Some(0) {
        return Err("--what-if-repeat 0: use a number above 0".into());
    }
    if budget_s == 0 {
        return Err(format!(
            "--what-if-budget-s 0: use a number of seconds above 0 (default {DEFAULT_BUDGET_S}); \
             each condition still gets its {MIN_RUNS} runs"
        ));
    }
    Ok(())
}

/// The condition names `--what-if-only` takes (`like` is `like:<label>`).
pub const CONDITION_IDS: [&str; 4] = ["memory", "iops-capped", "bandwidth-capped", "like"];

/// One condition to run.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Condition {
    Normal,
    Memory,
    Capped { id: String, caps: IoCaps },
}

impl Condition {
    pub(crate) fn id(&self) -> &str {
        match self {
            Condition::Normal => "baseline",
            Condition::Memory => "memory",
            Condition::Capped { id, .. } => id,
        }
    }
}

impl WhatIfOptions {
    /// How many runs each condition gets.
    pub(crate) fn run_plan(&self) -> RunPlan {
        RunPlan {
            fixed: self.repeat,
            budget_s: self.budget_s as f64,
        }
    }

    /// The conditions after the normal run, in order.
    pub(crate) fn conditions(&self) -> Vec<Condition> {
        let mut c = vec![Condition::Memory];
        // The options were checked (checked_option_caps) before any step ran; caps that did
        // not pass are left out rather than written wrong.
        if self.caps_target.is_ok()
            && let Ok((iops, bandwidth)) = checked_option_caps(self.cap_iops, self.cap_mib_s)
        {
            c.push(Condition::Capped {
                id: "iops-capped".into(),
                caps: iops,
            });
            c.push(Condition::Capped {
                id: "bandwidth-capped".into(),
                caps: bandwidth,
            });
        }
        if self.caps_target.is_ok()
            && let Some((label, caps)) = &self.like
        {
            c.push(Condition::Capped {
                id: format!("like:{label}"),
                caps: *caps,
            });
        }
        if let Some(only) = &self.only {
            c.retain(|c| {
                let id = c.id().split(':').next().unwrap_or_default();
                only.iter().any(|o| o == id)
            });
        }
        c
    }
}

/// Whether `record` has any figure `--like` takes caps from (seq-read, seq-write, rand-read,
/// rand-write above 0).
pub(crate) fn has_like_figures(record: &Record) -> bool {
    use record::ColumnId;
    [
        ColumnId::RandRead,
        ColumnId::RandWrite,
        ColumnId::SeqRead,
        ColumnId::SeqWrite,
    ]
    .into_iter()
    .any(|c| {
        record
            .test(c)
            .and_then(|t| t.headline())
            .is_some_and(|v| v > 0.0)
    })
}

/// The caps that make this disk look like `record`'s: reads and writes per second from its
/// rand-read/rand-write IOPS, bytes per second from its seq-read/seq-write MiB/s. A figure
/// that would not survive as a cap (it rounds to 0, which removes a v1 rule, or it is beyond
/// what the kernel keeps) is an error naming the column, not a cap silently dropped.
pub(crate) fn caps_like(record: &Record) -> Result<IoCaps, String> {
    use record::ColumnId;
    let label = &record.runner.label;
    let fig = |c: ColumnId, scale: f64, max: u64| -> Result<Option<u64>, String> {
        let Some(v) = record
            .test(c)
            .and_then(|t| t.headline())
            .filter(|v| *v > 0.0)
        else {
            return Ok(None);
        };
        let scaled = (v * scale).round();
        if !scaled.is_finite() || scaled < 1.0 || scaled > max as f64 {
            let unit = if scale == 1.0 { "IOPS" } else { "MiB/s" };
            return Err(format!(
                "the {} figure of {label}, {v} {unit}, cannot be a cap: it must come to 1 to \
                 {max} {} once rounded",
                c.as_str(),
                if scale == 1.0 {
                    "I/Os per second"
                } else {
                    "bytes per second"
                }
            ));
        }
        Ok(Some(scaled as u64))
    };
    let caps = IoCaps {
        riops: fig(ColumnId::RandRead, 1.0, MAX_CAP_IOPS)?,
        wiops: fig(ColumnId::RandWrite, 1.0, MAX_CAP_IOPS)?,
        rbps: fig(ColumnId::SeqRead, MIB as f64, u64::MAX)?,
        wbps: fig(ColumnId::SeqWrite, MIB as f64, u64::MAX)?,
    };
    check_caps(&caps)?;
    if caps.is_empty() {
        return Err(format!(
            "the record of {} has none of seq-read, seq-write, rand-read, rand-write",
            record.runner.label
        ));
    }
    Ok(caps)
}

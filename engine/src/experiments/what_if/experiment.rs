//! One step's experiment, after its normal run: the normal run repeated, each condition run
//! as often as it takes to tell a slowdown from noise ([`super::options::RunPlan`]), each
//! summarised to its median run and judged ([`super::judgement`]), with notes that say what
//! the caps reach and where the runs stopped short.

use std::path::Path;
use std::time::Instant;

use anyhow::Result;
use record::error::interrupted;
use record::{StepStatus, WhatIf, WhatIfCondition};

use super::judgement::{self, Busy, Run};
use super::options::{Condition, MAX_RUNS, NextRun, RunPlan, WIDE_SPREAD_PCT, WhatIfOptions};
use crate::steps::step::Step;
use crate::steps::timed_run::{RunContext, run_in_work};

/// What a step's experiment reports.
#[derive(Debug)]
pub enum WhatIfEvent<'a> {
    /// Before the experiment's runs: its normal run's time, the runs per condition and what
    /// the rest (`runs` x (conditions + 1) - 1 runs at the normal run's time) comes to.
    Planned {
        id: &'a str,
        normal_s: f64,
        runs: u32,
        conditions: usize,
        estimate_s: f64,
    },
    /// A condition starts (`sqlite (memory)`).
    Started { label: &'a str },
    /// A condition's runs are done (`sqlite (normal)` too): each run's wall time.
    Done { label: &'a str, walls_s: &'a [f64] },
}

/// The what-if conditions of `step`, after its normal run (`first`). `progress` hears the
/// estimate, each condition as it starts (`sqlite (memory)`) and its runs when it ends.
pub(crate) fn run(
    ctx: &RunContext<'_>,
    w: &WhatIfOptions,
    step: &dyn Step,
    scratch: &Path,
    first: Run,
    progress: &mut dyn FnMut(WhatIfEvent<'_>),
) -> Result<WhatIf> {
    let plan = w.run_plan();
    let conditions_to_run = w.conditions();
    let mut runs_left = RunsLeft {
        plan,
        // The normal run already ran: it counts against the budget.
        spent_s: first.wall_s,
        started: Instant::now(),
        loads: Vec::new(),
        stopped: Vec::new(),
    };
    runs_left.sample_load();
    let runs = plan.min_runs();
    progress(WhatIfEvent::Planned {
        id: step.id(),
        normal_s: first.wall_s,
        runs,
        conditions: conditions_to_run.len(),
        estimate_s: first.wall_s * f64::from(runs * (conditions_to_run.len() as u32 + 1) - 1),
    });
    let baseline_label = format!("{} (normal)", step.id());
    if runs > 1 {
        progress(WhatIfEvent::Started {
            label: &baseline_label,
        });
    }
    let runs = runs_left.runs_of(ctx, step, scratch, &Condition::Normal, vec![first])?;
    progress(WhatIfEvent::Done {
        label: &baseline_label,
        walls_s: &walls(&runs),
    });
    let baseline = judgement::summarise("baseline", None, &runs);
    let mut conditions = Vec::new();
    for condition in conditions_to_run {
        let caps = match &condition {
            Condition::Capped { caps, .. } => Some(*caps),
            _ => None,
        };
        let label = format!("{} ({})", step.id(), condition.id());
        progress(WhatIfEvent::Started { label: &label });
        let runs = runs_left.runs_of(ctx, step, scratch, &condition, Vec::new())?;
        progress(WhatIfEvent::Done {
            label: &label,
            walls_s: &walls(&runs),
        });
        conditions.push(judgement::summarise(condition.id(), caps, &runs));
    }
    let busy = Busy {
        load_avg_1m: runs_left.load_avg_1m(),
        cpus: ctx.yardstick.vcpus,
    };
    let judged = judgement::judge(&baseline, &mut conditions, &busy);
    let (mut notes, devices) = notes(w, step, &baseline, &conditions);
    notes.extend(runs_left.stopped_note(plan));
    notes.extend(super::like_latency::step_prediction_note(
        w.like
            .as_ref()
            .map(|(l, _)| l.as_str())
            .zip(w.like_latency.as_ref()),
        &conditions,
        ctx.yardstick.columns,
    ));
    Ok(WhatIf {
        baseline: Some(baseline),
        conditions,
        devices,
        bound: judged.bound,
        why: judged.why,
        notes,
        cannot_tell: judged.cannot_tell,
        load_avg_1m: busy.load_avg_1m,
    })
}

fn walls(runs: &[Run]) -> Vec<f64> {
    runs.iter().map(|r| r.wall_s).collect()
}

/// The runs of one step's experiment: what they have taken against the budget, the load
/// after each, and the conditions whose runs stopped while still spread wide.
struct RunsLeft {
    plan: RunPlan,
    /// Seconds the step's what-if runs have taken (the normal run's included).
    spent_s: f64,
    started: Instant,
    loads: Vec<f64>,
    /// (condition, runs, middle spread %, stopped by the budget rather than [`MAX_RUNS`]).
    stopped: Vec<(String, usize, f64, bool)>,
}

impl RunsLeft {
    /// Runs of `step` under `condition`, after the ones it already has (`runs`), for as long
    /// as the plan asks; Ctrl-C is heard between them.
    fn runs_of(
        &mut self,
        ctx: &RunContext<'_>,
        step: &dyn Step,
        scratch: &Path,
        condition: &Condition,
        mut runs: Vec<Run>,
    ) -> Result<Vec<Run>> {
        loop {
            // The setup and clean-up of each run count too: the clock, not the sum of walls.
            let spent_s = self.spent_s + self.started.elapsed().as_secs_f64();
            let next = self.plan.next(&walls(&runs), spent_s);
            if next != NextRun::Run {
                if matches!(next, NextRun::AtMost | NextRun::Budget) {
                    let spread = super::spread::middle_spread_pct(&walls(&runs)).unwrap_or(0.0);
                    self.stopped.push((
                        condition.id().to_string(),
                        runs.len(),
                        spread,
                        next == NextRun::Budget,
                    ));
                }
                return Ok(runs);
            }
            if record::cancel::requested() {
                return Err(interrupted());
            }
            runs.push(run_in_work(ctx, step, scratch, condition)?.1);
            self.sample_load();
        }
    }

    fn sample_load(&mut self) {
        if let Some(load) = load_avg_1m() {
            self.loads.push(load);
        }
    }

    fn load_avg_1m(&self) -> Option<f64> {
        (!self.loads.is_empty()).then(|| self.loads.iter().sum::<f64>() / self.loads.len() as f64)
    }

    /// Which conditions' runs stopped still spread wide, and why: the budget or the maximum.
    fn stopped_note(&self, plan: RunPlan) -> Option<String> {
        if self.stopped.is_empty() {
            return None;
        }
        let each: Vec<String> = self
            .stopped
            .iter()
            .map(|(id, n, spread, budget)| {
                format!(
                    "{id} after {n} runs ({spread:.0}%, {})",
                    if *budget {
                        format!("--what-if-budget-s {:.0}", plan.budget_s)
                    } else {
                        format!("at most {MAX_RUNS}")
                    }
                )
            })
            .collect();
        Some(format!(
            "runs still spread wider than {WIDE_SPREAD_PCT:.0}% (their middle runs) stopped: {}",
            each.join(", ")
        ))
    }
}

/// The 1-minute load average from `/proc/loadavg`; None where it cannot be read.
fn load_avg_1m() -> Option<f64> {
    let text = std::fs::read_to_string("/proc/loadavg").ok()?;
    text.split_whitespace().next()?.parse().ok()
}

/// The experiment's notes, and the devices the caps went to.
fn notes(
    w: &WhatIfOptions,
    step: &dyn Step,
    baseline: &WhatIfCondition,
    conditions: &[WhatIfCondition],
) -> (Vec<String>, Vec<String>) {
    let mut notes = Vec::new();
    if let Some((label, _)) = &w.like
        && let Some(c) = conditions.iter().find(|c| c.id.starts_with("like:"))
        && c.status == StepStatus::Ok
    {
        if c.disturbed {
            // A time the caps cannot explain is the machine's, not a prediction of the disk.
            notes.push(format!(
                "no prediction for {label}'s disk: the run under its caps was disturbed ({:.2} s \
                 against {:.2} s here, but the I/O its caps let through (and any latency the \
                 emulation added) could cost at most {:.2} s); rerun on a quieter machine",
                c.wall_s,
                baseline.wall_s,
                judgement::cap_cost_s(c).unwrap_or(0.0)
            ));
        } else {
            let how = if c.latency_held_s.is_some() {
                "its sequential MiB/s and random IOPS as caps, its one-at-a-time latency on the \
                 step's folder"
            } else {
                "its sequential MiB/s and random IOPS as caps"
            };
            notes.push(format!(
                "on {label}'s disk ({how}): {:.2} s against {:.2} s here, CPU differences not \
                 included",
                c.wall_s, baseline.wall_s
            ));
        }
    }
    notes.extend(super::memory_files::residual_note(conditions));
    if let Some(missed) = judgement::caps_missed(baseline, conditions) {
        notes.push(missed.why);
    }
    notes.push(
        "every run started with the step's own files (its work folder) synced and dropped \
         from the page cache; the toolchain and the rest of the machine stay warm"
            .to_string(),
    );
    let devices = match &w.caps_target {
        Ok(t) => {
            if t.hierarchy.version == crate::experiments::cgroup::Version::V1 {
                notes.push(
                    "cgroup v1: the caps reach reads, O_DIRECT writes and the write-back an \
                     fsync forces; write-back of buffered writes by the kernel's flusher is not \
                     attributed to the cgroup, so a step that writes much without syncing is \
                     slowed less here than on a disk that slow"
                        .into(),
                );
            }
            t.devices.iter().map(|d| d.to_string()).collect()
        }
        Err(why) => {
            notes.push(format!("capped conditions not run: {why}"));
            Vec::new()
        }
    };
    notes.extend(step.what_if_note().map(String::from));
    (notes, devices)
}

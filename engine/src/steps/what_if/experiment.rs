//! One step's experiment, after its normal run: the normal run repeated, each condition run
//! as often, each summarised to its median run and judged ([`super::judgement`]), with notes
//! that say what the caps reach.

use std::path::Path;

use anyhow::Result;
use record::error::interrupted;
use record::{StepStatus, WhatIf, WhatIfCondition};

use super::judgement::{self, Run};
use super::options::{Condition, WhatIfOptions};
use crate::steps::step::Step;
use crate::steps::timed_run::{RunContext, run_in_work};

/// The what-if conditions of `step`, after its normal run (`first`). `progress` hears each
/// condition as it starts (`sqlite (memory)`).
pub(crate) fn run(
    ctx: &RunContext<'_>,
    w: &WhatIfOptions,
    step: &dyn Step,
    scratch: &Path,
    first: Run,
    progress: &mut dyn FnMut(&str),
) -> Result<WhatIf> {
    let repeat = w.repeat.max(1);
    let mut runs = vec![first];
    runs.extend(runs_of(ctx, step, scratch, &Condition::Normal, repeat - 1)?);
    let baseline = judgement::summarise("baseline", None, &runs);
    let mut conditions = Vec::new();
    for condition in w.conditions() {
        let caps = match &condition {
            Condition::Capped { caps, .. } => Some(*caps),
            _ => None,
        };
        progress(&format!("{} ({})", step.id(), condition.id()));
        let runs = runs_of(ctx, step, scratch, &condition, repeat)?;
        conditions.push(judgement::summarise(condition.id(), caps, &runs));
    }
    let (bound, why) = judgement::judge(&baseline, &mut conditions);
    let (mut notes, devices) = notes(w, step, &baseline, &conditions);
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
        bound,
        why,
        notes,
    })
}

/// `times` runs of `step` under `condition`; Ctrl-C is heard between them.
fn runs_of(
    ctx: &RunContext<'_>,
    step: &dyn Step,
    scratch: &Path,
    condition: &Condition,
    times: u32,
) -> Result<Vec<Run>> {
    let mut runs = Vec::new();
    for _ in 0..times {
        if record::cancel::requested() {
            return Err(interrupted());
        }
        runs.push(run_in_work(ctx, step, scratch, condition)?.1);
    }
    Ok(runs)
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
                 against {:.2} s here, but the I/O its caps let through could cost at most \
                 {:.2} s); rerun on a quieter machine",
                c.wall_s,
                baseline.wall_s,
                judgement::cap_cost_s(c).unwrap_or(0.0)
            ));
        } else {
            notes.push(format!(
                "on {label}'s disk (its sequential MiB/s and random IOPS as caps): {:.2} s \
                 against {:.2} s here, CPU differences not included",
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
            if t.hierarchy.version == crate::cgroup::Version::V1 {
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

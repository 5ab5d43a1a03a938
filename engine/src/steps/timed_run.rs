//! One timed run of a step: a fresh work folder under the scratch folder, the run's condition
//! put in place ([`crate::experiments::what_if::setup`]), the step prepared, its command timed as a child
//! ([`super::child`]) with a local daemon sampled around it, then everything undone and the
//! folder removed, whatever happened.

use std::fs;
use std::path::Path;
use std::process::Command;

use anyhow::{Context, Result};
use record::StepResult;

use super::child;
use super::daemon::{self, LocalDaemon};
use super::step::{Prepared, Ran, Step};
use super::step_result::Yardstick;
use crate::experiments::what_if::judgement::Run;
use crate::experiments::what_if::options::{Condition, WhatIfOptions};
use crate::experiments::what_if::setup::{Setup, Undone};
use crate::session::said::{Said, tell};

/// Lines of output kept for a failed step.
pub(crate) const OUTPUT_TAIL_LINES: usize = 20;

/// What every run of the steps shares.
pub(crate) struct RunContext<'a> {
    pub yardstick: Yardstick<'a>,
    pub what_if: Option<&'a WhatIfOptions>,
}

/// One run of `step` under `condition` in a fresh work folder under `scratch` (on a tmpfs for
/// the memory condition), which is removed afterwards whatever happened. Returns the step's
/// result and the run's figures for the experiments.
pub(crate) fn run_in_work(
    ctx: &RunContext<'_>,
    step: &dyn Step,
    scratch: &Path,
    condition: &Condition,
) -> Result<(StepResult, Run)> {
    let work = scratch.join(step.id());
    fs::create_dir(&work).with_context(|| format!("cannot create {}", work.display()))?;
    let (outcome, undone) = match Setup::apply(condition, &work, ctx.what_if) {
        Ok(mut setup) => {
            let outcome = run_once(ctx, step, &work, &mut setup);
            (outcome, setup.undo())
        }
        Err(e) => (Err(e), Undone::default()),
    };
    let cleaned = fs::remove_dir_all(&work);
    // If an undo failed the machine is not as it was (a daemon still capped, a tmpfs still
    // mounted): the run fails and says what is left, never exit 0.
    if !undone.left.is_empty() {
        anyhow::bail!(
            "the what-if run of {} could not undo its setup: {}; the next --what-if run removes \
             what it can, anything else needs undoing by hand as the message says",
            step.id(),
            undone.left.join("; ")
        );
    }
    let mut result = outcome?;
    if let Err(e) = cleaned {
        result
            .notes
            .push(format!("could not remove {}: {e}", work.display()));
    }
    let run = Run {
        wall_s: result.wall_s,
        user_s: result.user_s,
        sys_s: result.sys_s,
        cpu_wait_s: result.cpu_wait_s,
        ok: result.status == record::StepStatus::Ok,
        io: result.io.clone(),
        cgroup_io: undone.cgroup_io,
        latency_held_s: undone.latency_held_s,
        notes: undone
            .notes
            .into_iter()
            .chain(result.reason.clone().map(|r| format!("a run failed: {r}")))
            .collect(),
    };
    Ok((result, run))
}

/// Prepare the step in `work`, time its command under `setup`, clean up after it.
fn run_once(
    ctx: &RunContext<'_>,
    step: &dyn Step,
    work: &Path,
    setup: &mut Setup,
) -> Result<StepResult> {
    let Prepared {
        name,
        mut command,
        mut notes,
        daemon,
        cleanup,
        toolchain,
        cargo_target,
    } = step.prepare(work)?;
    let shown = display_command(&command);
    setup.enter(
        &mut command,
        work,
        daemon.as_ref().map(|d| d.commands),
        cargo_target.as_deref(),
    );
    let ran = launch(command, daemon.as_ref());
    let left = cleanup.and_then(|undo| undo());
    // Interrupted or failed: no result carries the cleanup's note, so it is said now.
    if ran.is_err()
        && let Some(left) = &left
    {
        tell(Said::Warning(left.clone()));
    }
    let ran = ran?;
    notes.extend(step.notes(&ran, ctx.yardstick.columns));
    notes.extend(left);
    let mut result = ctx.yardstick.result(step.id(), name, shown, ran, notes);
    result.toolchain = toolchain;
    Ok(result)
}

/// Time `cmd` as a child; a local daemon's processes are sampled before and after it.
fn launch(cmd: Command, daemon: Option<&LocalDaemon>) -> Result<Ran> {
    let before = daemon.and_then(LocalDaemon::snapshot);
    let measured = child::run_measured(cmd, OUTPUT_TAIL_LINES)?;
    let after = daemon.and_then(LocalDaemon::snapshot);
    let daemon = match (before, after) {
        (Some(b), Some(a)) => daemon::usage(&b, &a),
        _ => None,
    };
    Ok(Ran { measured, daemon })
}

/// The command as the record shows it: the program and its arguments.
fn display_command(cmd: &Command) -> Vec<String> {
    std::iter::once(cmd.get_program())
        .chain(cmd.get_args())
        .map(|a| a.to_string_lossy().into_owned())
        .collect()
}

//! `fio`'s work in a session: one job given in fio's syntax, or job files run wave by wave.

use std::path::{Path, PathBuf};

use anyhow::Result;
use record::{Record, TestResult};

use super::event::Event;
use super::measured::{Measured, MeasuredRun};
use super::said::Said;
use crate::job::run::Progress;
use crate::tools::fio::FioInvocation;
use crate::tools::fio_jobfile::{FioCommand, JobFileRun};

/// Run the command's job(s) and wrap what they measured into a record.
pub(crate) fn run(cmd: &FioCommand, on: &mut dyn FnMut(Event<'_>)) -> Result<Record> {
    match cmd {
        FioCommand::Options(inv) => run_one(inv, on),
        FioCommand::JobFiles(jf) => run_job_files(jf, on),
    }
}

fn run_one(inv: &FioInvocation, on: &mut dyn FnMut(Event<'_>)) -> Result<Record> {
    let measured_run = MeasuredRun::start(&job_dir(&inv.job), None);
    let test =
        crate::job::run::run_job_prepared(&inv.job, &inv.prep, &mut |p| on(Event::Suite(p)))?;
    measured_run.finish(Measured {
        settings: inv.settings(),
        tests: vec![test],
        notes: inv.notes.clone(),
        ..Default::default()
    })
}

/// Run the job files' jobs wave by wave: every job of a wave is prepared first (files laid
/// out, unmeasured), then all of them run at once, as fio starts a group's jobs together.
fn run_job_files(jf: &JobFileRun, on: &mut dyn FnMut(Event<'_>)) -> Result<Record> {
    let measured_run = MeasuredRun::start(&job_dir(&jf.jobs[0].inv.job), None);
    let mut tests: Vec<TestResult> = Vec::with_capacity(jf.jobs.len());
    for wave in jf.waves() {
        let mut prepared = Vec::with_capacity(wave.len());
        for &i in &wave {
            let inv = &jf.jobs[i].inv;
            let mut progress = |p: &Progress<'_>| on(Event::Suite(p));
            prepared.push(crate::job::run::prepare_job(
                &inv.job,
                &inv.prep,
                &mut progress,
            )?);
        }
        if wave.len() > 1 {
            let names: Vec<&str> = wave
                .iter()
                .map(|&i| jf.jobs[i].inv.job.name.as_str())
                .collect();
            on(Event::Said(Said::Status(format!(
                "running at once: {}",
                names.join(", ")
            ))));
        }
        let results: Vec<Result<TestResult>> = std::thread::scope(|scope| {
            let handles: Vec<_> = prepared
                .into_iter()
                .map(|p| scope.spawn(move || p.run(&mut |_| {})))
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join()
                        .unwrap_or_else(|_| Err(anyhow::anyhow!("a job's thread panicked")))
                })
                .collect()
        });
        for (&i, r) in wave.iter().zip(results) {
            let mut t = r?;
            let j = &jf.jobs[i];
            let with = if wave.len() > 1 {
                "; ran at the same time as the other jobs of its wave"
            } else {
                ""
            };
            t.notes.push(format!(
                "fio reporting group {}, wave {} ({}{with})",
                j.group, j.wave, j.origin
            ));
            tests.push(t);
        }
    }
    let notes = jf
        .jobs
        .iter()
        .flat_map(|j| {
            j.inv
                .notes
                .iter()
                .map(move |n| format!("[{}] {n}", j.inv.job.name))
        })
        .collect();
    measured_run.finish(Measured {
        settings: jf.settings(),
        tests,
        notes,
        ..Default::default()
    })
}

/// The folder the job's files live in, absolute where it can be resolved (the record's
/// `storage.path`); "." for a bare relative file name.
fn job_dir(job: &crate::job::JobSpec) -> PathBuf {
    let dir = job.dir();
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf())
}

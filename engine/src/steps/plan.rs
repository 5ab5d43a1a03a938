//! Which steps run, checked before anything is measured, and then running them in order.
//!
//! [`StepPlan::new`] reads the project and its config, applies `--only`, checks `--dir` and
//! asks every chosen step's [`Step::check`]: a bad config, an unknown id or a broken project
//! is a usage error (exit code 2) before a column or a step is measured, and a step that
//! cannot run here (no docker engine, no cargo) is known as skipped from the start.
//! [`StepPlan::run`] then runs each step once, and under each what-if condition.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use record::error::{interrupted, usage};
use record::{StepResult, StepStatus, TestResult};

use super::cargo_build::{self, CargoBuild};
use super::docker_build::{self, DockerBuild};
use super::options::StepsOptions;
use super::project::{Project, find_project};
use super::sqlite::{self, Sqlite};
use super::step::{Readiness, Step};
use super::step_result::{self, Yardstick};
use super::timed_run::{RunContext, run_in_work};
use super::user::{self, UserCommand};
use super::verdict::DiskFigures;
use crate::experiments::what_if::experiment;
pub use crate::experiments::what_if::experiment::WhatIfEvent;
use crate::experiments::what_if::options::{Condition, MAX_RUNS};

/// The built-in steps, in the order they run (user steps follow).
pub const BUILTIN_IDS: [&str; 3] = [cargo_build::ID, docker_build::ID, sqlite::ID];

/// Whether a step id is one of the built-in steps (a failed user step fails the run).
pub fn is_builtin(id: &str) -> bool {
    BUILTIN_IDS.contains(&id)
}

/// What [`StepPlan::run`] reports while it works: a step starts, a step ends; with
/// `--what-if`, its experiment's estimate and each condition's runs.
#[derive(Debug)]
pub enum StepEvent<'a> {
    /// The steps that will run, in order (known once the config is read), and with
    /// `--what-if` how many runs each condition gets.
    Planned {
        ids: &'a [String],
        what_if: Option<WhatIfPlan>,
    },
    /// A step's experiment, after its normal run.
    WhatIf {
        event: WhatIfEvent<'a>,
        index: usize,
        of: usize,
    },
    Started {
        id: &'a str,
        /// 1-based position and the number of steps.
        index: usize,
        of: usize,
    },
    Finished {
        result: &'a StepResult,
        index: usize,
        of: usize,
    },
}

/// The what-if runs planned for every step: `runs` per condition (and of the normal run)
/// over `conditions` conditions, more up to `max_runs` while spread wide within `budget_s`
/// seconds a step (`max_runs` equal to `runs`: a fixed `--what-if-repeat`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WhatIfPlan {
    pub runs: u32,
    pub max_runs: u32,
    pub conditions: usize,
    pub budget_s: u64,
}

/// The steps that will run, each checked.
pub struct StepPlan {
    opts: StepsOptions,
    /// `--dir`, absolute: steps run in the project folder, not here, so a relative `--dir`
    /// (the default ".") must not be resolved against their working directory.
    dir: PathBuf,
    steps: Vec<(Box<dyn Step>, Readiness)>,
}

impl StepPlan {
    /// Choose and check the steps. Run it before anything is measured: every problem it
    /// finds is found before the suite's minutes are spent.
    pub fn new(opts: &StepsOptions) -> Result<StepPlan> {
        let project = find_project(opts.manifest_path.as_deref())?;
        let steps = chosen(opts, &project)?;
        let dir = &opts.dir;
        crate::files::testfile::check_test_folder("--dir", dir)?;
        let dir = std::path::absolute(dir)
            .with_context(|| format!("--dir {}: cannot make it absolute", dir.display()))?;
        let mut checked = Vec::new();
        for step in steps {
            let readiness = step.check()?;
            checked.push((step, readiness));
        }
        Ok(StepPlan {
            opts: opts.clone(),
            dir,
            steps: checked,
        })
    }

    /// The ids of the steps, in the order they run.
    pub(crate) fn ids(&self) -> Vec<String> {
        self.steps.iter().map(|(s, _)| s.id().to_string()).collect()
    }

    /// Run the steps, in order. `columns` are this machine's six columns (from the same run
    /// or the newest record; may be empty), used for the verdicts.
    pub fn run(
        &self,
        columns: &[TestResult],
        progress: &mut dyn FnMut(StepEvent<'_>),
    ) -> Result<Vec<StepResult>> {
        let scratch = Scratch::create(&self.dir)?;
        let ctx = RunContext {
            yardstick: Yardstick {
                columns,
                disk: DiskFigures::from_columns(columns),
                vcpus: self
                    .opts
                    .vcpus
                    .unwrap_or_else(crate::job::cpu::available_cpus),
                columns_source: self.opts.columns_source.as_deref(),
            },
            what_if: self.opts.what_if.as_ref(),
        };
        let ids = self.ids();
        let what_if = self.opts.what_if.as_ref().map(|w| {
            let plan = w.run_plan();
            WhatIfPlan {
                runs: plan.min_runs(),
                max_runs: if plan.fixed.is_some() {
                    plan.min_runs()
                } else {
                    MAX_RUNS
                },
                conditions: w.conditions().len(),
                budget_s: w.budget_s,
            }
        });
        progress(StepEvent::Planned { ids: &ids, what_if });
        let of = self.steps.len();
        let mut results = Vec::new();
        for (i, (step, readiness)) in self.steps.iter().enumerate() {
            if record::cancel::requested() {
                return Err(interrupted());
            }
            let index = i + 1;
            progress(StepEvent::Started {
                id: step.id(),
                index,
                of,
            });
            let result = match readiness {
                Readiness::Skip(reason) => {
                    step_result::skipped(step.id(), step.name(), reason.clone())
                }
                Readiness::Ready => {
                    run_step(
                        &ctx,
                        step.as_ref(),
                        &scratch.path,
                        &mut |event| match event {
                            // Each condition shows as the step running again, named with it.
                            WhatIfEvent::Started { label } => progress(StepEvent::Started {
                                id: label,
                                index,
                                of,
                            }),
                            event => progress(StepEvent::WhatIf { event, index, of }),
                        },
                    )?
                }
            };
            let failed = result.status == StepStatus::Failed;
            progress(StepEvent::Finished {
                result: &result,
                index,
                of,
            });
            results.push(result);
            if failed && self.opts.fail_fast {
                break;
            }
        }
        scratch.remove()?;
        Ok(results)
    }
}

/// Plan the steps and run them: [`StepPlan::new`], then [`StepPlan::run`], with structured
/// progress for a display that shows elapsed time.
pub fn run_steps_with(
    opts: &StepsOptions,
    columns: &[TestResult],
    progress: &mut dyn FnMut(StepEvent<'_>),
) -> Result<Vec<StepResult>> {
    StepPlan::new(opts)?.run(columns, progress)
}

/// The steps `--only` chose, in order: the built-in ones, then the user's (a bad config or
/// an unknown id is a usage error).
fn chosen(opts: &StepsOptions, project: &Project) -> Result<Vec<Box<dyn Step>>> {
    let user_steps = user::load(project.manifest.as_deref(), &project.root, &BUILTIN_IDS)?;
    let mut all: Vec<Box<dyn Step>> = vec![
        Box::new(CargoBuild::new(project, opts.generated_modules)),
        Box::new(DockerBuild::new(project, opts.docker_context_mib)),
        Box::new(Sqlite::new(
            opts.sqlite_transactions,
            opts.worker_command.clone(),
        )),
    ];
    all.extend(user_steps.into_iter().map(|step| {
        Box::new(UserCommand {
            step,
            project_root: project.root.clone(),
        }) as Box<dyn Step>
    }));
    let Some(only) = &opts.only else {
        return Ok(all);
    };
    for id in only {
        if !all.iter().any(|s| s.id() == id) {
            let known: Vec<&str> = all.iter().map(|s| s.id()).collect();
            return Err(usage(format!(
                "--only: no step \"{id}\" (steps here: {})",
                known.join(", ")
            )));
        }
    }
    all.retain(|s| only.iter().any(|o| o == s.id()));
    Ok(all)
}

/// The normal run of `step` and, with `--what-if`, its experiment.
fn run_step(
    ctx: &RunContext<'_>,
    step: &dyn Step,
    scratch: &Path,
    condition_started: &mut dyn FnMut(WhatIfEvent<'_>),
) -> Result<StepResult> {
    let (mut result, first) = run_in_work(ctx, step, scratch, &Condition::Normal)?;
    if let Some(w) = ctx.what_if
        && result.status == StepStatus::Ok
    {
        result.what_if = Some(experiment::run(
            ctx,
            w,
            step,
            scratch,
            first,
            condition_started,
        )?);
    }
    Ok(result)
}

/// The scratch folder under `--dir`; removed when dropped, so an early return (an error,
/// Ctrl-C) leaves nothing behind.
struct Scratch {
    path: PathBuf,
}

impl Scratch {
    /// `dir` is absolute and was checked by [`StepPlan::new`].
    fn create(dir: &Path) -> Result<Scratch> {
        let path = dir.join(format!(".diskbench-steps-{}", record::random::new_id()));
        fs::create_dir(&path).with_context(|| format!("cannot create {}", path.display()))?;
        Ok(Scratch { path })
    }

    /// Remove it now, saying so when that did not work.
    fn remove(self) -> Result<()> {
        let path = self.path.clone();
        drop(self);
        if path.exists() {
            anyhow::bail!("could not remove the scratch folder {}", path.display());
        }
        Ok(())
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.path);
    }
}

//! One run, from options to record: the engine's front. [`Session::new`] checks the options
//! (usage errors name the option, before anything is touched); [`Session::run`] then does, in
//! order: the sweep of what killed runs left, `--like` and the what-if preflight (each
//! resolved once), the build steps chosen and checked, the suite's columns (under `--like`'s
//! caps), the steps, and the record. Progress and everything worth saying reach the caller
//! as [`Event`]s; nothing here prints. `run`, `steps` and `fio` all come through here.

mod columns;
pub(crate) mod event;
mod fio;
pub mod measured;
pub mod said;

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Result;
use record::error::usage;
use record::size::{SizeDialect, parse_size};
use record::{ColumnId, Provisioned, Record, StepStatus};

pub use event::Event;
pub use said::{Said, install_sink};
// What a caller needs to build the options and to follow what a session reports.
pub use crate::experiments::what_if::options::{
    DEFAULT_BUDGET_S, DEFAULT_CAP_IOPS, DEFAULT_CAP_MIB_S,
};
pub use crate::job::run::Progress;
pub use crate::steps::cargo_build::DEFAULT_MODULES;
pub use crate::steps::docker_build::DEFAULT_CONTEXT_MIB;
// The sqlite step's child: this program started again to run the workload in a process of
// its own (see `StepsOptions::worker_command`).
pub use crate::steps::sqlite::{DEFAULT_TRANSACTIONS, workload as sqlite_worker};
pub use crate::steps::{StepEvent, StepsOptions, WhatIfEvent, WhatIfPlan};
pub use crate::suite::{DEFAULT_REPEAT, DEFAULT_SIZE, MAX_REPEAT, REPEATABLE_SPREAD_PCT};
pub use crate::tools::fio_jobfile::FioCommand;

use crate::experiments::cgroup::CGROUP_FS;
use crate::experiments::like::{self, LikeTarget};
use crate::experiments::what_if::like_latency::OneAtATime;
use crate::experiments::what_if::options::{
    CONDITION_IDS, WhatIfOptions, check_runs, checked_option_caps,
};
use crate::experiments::what_if::preflight::{caps_target, preflight};
use crate::job::EngineChoice;
use crate::job::steady_window::SteadyRule;
use crate::suite::{DEFAULT_RAMP_S, DEFAULT_RUNTIME_S, Preset, SuiteOptions};
use measured::{Measured, MeasuredRun};

/// Everything a session needs, as the user gave it.
#[derive(Debug)]
pub struct SessionOptions {
    /// Where the test files and the steps' scratch folders go (`--dir`).
    pub dir: PathBuf,
    /// How this machine is named in the record (`--label`); None: as detected.
    pub label: Option<String>,
    /// The results folder (`--results`): `--like` and the steps' verdicts read records there.
    pub results: PathBuf,
    /// The what-if experiments and `--like`.
    pub what_if: WhatIfRequest,
    pub work: Work,
}

/// What a session measures.
#[derive(Debug)]
pub enum Work {
    /// `run`: the suite's columns, then the build steps unless `--no-steps`.
    Suite(SuiteRequest),
    /// `steps`: the build steps only, judged by this disk's newest recorded columns.
    Steps(Box<StepsOptions>),
    /// `fio`: one job in fio's syntax, or job files.
    Fio(FioCommand),
}

/// `run`'s options for the suite, as given on the command line.
#[derive(Clone, Debug, Default)]
pub struct SuiteRequest {
    /// `--only`: comma-separated column ids.
    pub only: Option<String>,
    /// `--runtime`: a fixed measured window, seconds (checked by the caller's parser).
    pub runtime_s: Option<f64>,
    /// `--ramp`: the warm-up, seconds (checked by the caller's parser).
    pub ramp_s: Option<f64>,
    /// `--size`: each job's test file, e.g. `512M`.
    pub size: String,
    /// `--preset`: named settings instead of the three above.
    pub preset: Option<String>,
    /// `--repeat`: passes over the suite.
    pub repeat: u32,
    /// `--engine`: auto, io_uring, libaio or psync.
    pub engine: Option<String>,
    /// `--seed`: fixed random offsets.
    pub seed: Option<u64>,
    /// The build steps follow the columns (not `--no-steps`).
    pub steps: bool,
    /// `--provisioned`: the volume's limit, for the figures' shares of it.
    pub provisioned: Option<Provisioned>,
}

/// The what-if options and `--like`, as given.
#[derive(Clone, Debug, Default)]
pub struct WhatIfRequest {
    /// `--what-if`: rerun each step on memory and with the disk capped.
    pub on: bool,
    pub cap_iops: u64,
    pub cap_mib_s: u64,
    /// `--like LABEL`: the columns (run) or a what-if condition (steps) under LABEL's caps.
    pub like: Option<String>,
    /// `--what-if-repeat`.
    pub repeat: Option<u32>,
    /// `--what-if-budget-s`.
    pub budget_s: u64,
    /// `--what-if-only`.
    pub only: Option<Vec<String>>,
}

/// What a session produced.
#[derive(Debug)]
pub struct Outcome {
    /// The record of the run (not yet written anywhere).
    pub record: Record,
    /// `steps` only: the steps whose failure fails the command (the user's own, or any with
    /// `--fail-fast`), as "id (why)".
    pub failed_steps: Vec<String>,
}

/// A run whose options were checked, ready to start.
#[derive(Debug)]
pub struct Session {
    opts: SessionOptions,
    suite: Option<SuiteOptions>,
}

impl Session {
    /// Check the options before anything is touched; every problem is a usage error (exit 2)
    /// that names the option.
    pub fn new(opts: SessionOptions) -> Result<Session> {
        let w = &opts.what_if;
        let suite = match &opts.work {
            Work::Fio(_) => return Ok(Session { opts, suite: None }),
            Work::Suite(r) => Some(suite_options(&opts.dir, r)?),
            Work::Steps(_) => {
                crate::files::testfile::check_test_folder("--dir", &opts.dir)?;
                if w.like.is_some() && !w.on {
                    return Err(usage(
                        "--like: with `steps` it is a what-if condition; add --what-if",
                    ));
                }
                None
            }
        };
        check_runs(w.repeat, w.budget_s).map_err(usage)?;
        if let Some(label) = &opts.label
            && label.trim().is_empty()
        {
            return Err(usage("--label: must not be empty"));
        }
        if let Work::Suite(r) = &opts.work
            && !r.steps
            && w.on
        {
            return Err(usage(
                "--what-if experiments on the build steps, which --no-steps skips; drop one of them",
            ));
        }
        if w.on {
            checked_option_caps(w.cap_iops, w.cap_mib_s).map_err(usage)?;
            for id in w.only.iter().flatten() {
                if !CONDITION_IDS.contains(&id.as_str()) {
                    return Err(usage(format!(
                        "--what-if-only: no condition \"{id}\" (conditions: {})",
                        CONDITION_IDS.join(", ")
                    )));
                }
            }
        }
        Ok(Session { opts, suite })
    }

    /// Run it: see the module documentation for the order. `on` hears every event.
    pub fn run(self, on: &mut dyn FnMut(Event<'_>)) -> Result<Outcome> {
        let Session { opts, suite } = self;
        let steps_request = match &opts.work {
            Work::Fio(cmd) => {
                return Ok(Outcome {
                    record: fio::run(cmd, on)?,
                    failed_steps: Vec::new(),
                });
            }
            Work::Suite(r) => r.steps.then(|| StepsOptions {
                dir: opts.dir.clone(),
                ..Default::default()
            }),
            Work::Steps(s) => Some(StepsOptions::clone(s)),
        };
        crate::leftovers::sweep(&opts.dir, &mut |s| on(Event::Said(s)));

        // The caps' target and LABEL's record, each found once for the columns and the steps.
        let w = &opts.what_if;
        let caps_target = if w.on || (suite.is_some() && w.like.is_some()) {
            let hierarchy = preflight(Path::new(CGROUP_FS), &mut |s| on(Event::Said(s)))?;
            Some(caps_target(hierarchy, &opts.dir))
        } else {
            None
        };
        let like_record = match &w.like {
            Some(label) => Some((label, like::newest_record(&opts.results, label)?)),
            None => None,
        };
        let what_if = match (&caps_target, w.on) {
            (Some(caps_target), true) => Some(WhatIfOptions {
                repeat: w.repeat,
                budget_s: w.budget_s,
                cap_iops: w.cap_iops,
                cap_mib_s: w.cap_mib_s,
                like: like_record
                    .as_ref()
                    .map(|(label, (_, _, caps))| (label.to_string(), *caps)),
                like_latency: like_record
                    .as_ref()
                    .map(|(_, (record, _, _))| OneAtATime::of(&record.tests)),
                like_delays: like_record
                    .as_ref()
                    .and_then(|(_, (record, _, _))| like::emulated_delays(record)),
                caps_target: caps_target.clone(),
                only: w.only.clone(),
            }),
            _ => None,
        };
        let like = match (suite.is_some(), like_record, caps_target) {
            (true, Some((label, (record, from, caps))), Some(target)) => Some(LikeTarget {
                label: label.to_string(),
                from: format!("{from} ({})", record.source),
                caps,
                target: target.map_err(|why| usage(format!("--like {label}: {why}")))?,
                record,
            }),
            _ => None,
        };

        let mut run = MeasuredRun::start(&opts.dir, opts.label.as_deref());
        let (steps_record, failed_steps) = match (suite, steps_request) {
            (Some(suite), steps) => {
                // The build steps are chosen and checked now, not after the columns: a bad
                // config is refused and a step that cannot run here (no cargo, no docker
                // engine) is known skipped before minutes of measuring.
                let plan = match steps {
                    Some(s) => Some(crate::steps::StepPlan::new(&StepsOptions { what_if, ..s })?),
                    None => None,
                };
                if let Some(l) = &like {
                    // The figures are this disk under caps, not this disk: kept apart on the site.
                    run.runner.variant = Some(format!("capped like {}", l.label));
                }
                on(Event::Detected {
                    runner: &run.runner,
                });
                let (tests, like_settings) = match like {
                    None => (
                        crate::suite::run_suite(&suite, &mut |p| on(Event::Suite(p)))?,
                        None,
                    ),
                    Some(l) => {
                        let (tests, emulation) = like::run_suite(&suite, &l, on)?;
                        let settings = like::settings(l, &tests, emulation);
                        (tests, Some(settings))
                    }
                };
                // Columns measured under --like caps are not this disk's: the inferred
                // verdicts then rest on each step's own signals.
                let columns = if like_settings.is_some() {
                    &[][..]
                } else {
                    &tests[..]
                };
                let steps = match &plan {
                    Some(plan) => plan.run(columns, &mut |e| on(Event::Step(e)))?,
                    None => Vec::new(),
                };
                if record::cancel::requested() {
                    return Err(record::error::interrupted());
                }
                let mut settings = suite.settings(like_settings);
                if let Work::Suite(r) = &opts.work {
                    settings.provisioned = r.provisioned.clone();
                }
                let measured = Measured {
                    settings,
                    tests,
                    steps,
                    cpu_reference: Some(crate::steps::cpu_reference()),
                    notes: Vec::new(),
                };
                (measured, Vec::new())
            }
            (None, steps) => {
                let steps = steps.unwrap_or_default();
                on(Event::Detected {
                    runner: &run.runner,
                });
                let columns =
                    columns::newest_columns(&opts.results, &run.runner, &run.storage, &opts.dir);
                let fail_fast = steps.fail_fast;
                let steps_opts = StepsOptions {
                    vcpus: Some(run.runner.vcpus).filter(|v| *v > 0),
                    columns_source: columns.as_ref().map(|(_, f)| format!("the record {f}")),
                    what_if,
                    ..steps
                };
                let tests = columns.as_ref().map(|(t, _)| t.as_slice()).unwrap_or(&[]);
                let results =
                    crate::steps::run_steps_with(&steps_opts, tests, &mut |e| on(Event::Step(e)))?;
                let failed = failed_steps(&results, fail_fast);
                let notes = match &columns {
                    Some((_, f)) => vec![format!("verdicts used this disk's figures from {f}")],
                    None => vec![
                        "no record of this disk's columns in the results folder: verdicts rest \
                         on each step's own signals"
                            .into(),
                    ],
                };
                let measured = Measured {
                    settings: record::Settings {
                        suite: "steps".into(),
                        engine: "none".into(),
                        repeat: 1,
                        ..Default::default()
                    },
                    steps: results,
                    cpu_reference: Some(crate::steps::cpu_reference()),
                    notes,
                    ..Default::default()
                };
                (measured, failed)
            }
        };
        Ok(Outcome {
            record: run.finish(steps_record)?,
            failed_steps,
        })
    }
}

/// The steps whose failure fails the command: the user's own, or any with --fail-fast.
fn failed_steps(results: &[record::StepResult], fail_fast: bool) -> Vec<String> {
    results
        .iter()
        .filter(|s| {
            s.status == StepStatus::Failed && (fail_fast || !crate::steps::is_builtin(&s.id))
        })
        .map(|s| format!("{} ({})", s.id, s.reason.as_deref().unwrap_or("failed")))
        .collect()
}

/// `run`'s options turned into the suite's; every problem is a usage error naming the option.
fn suite_options(dir: &Path, r: &SuiteRequest) -> Result<SuiteOptions> {
    let only = match &r.only {
        None => None,
        Some(list) => {
            let mut ids = Vec::new();
            for part in list.split(',').map(str::trim).filter(|p| !p.is_empty()) {
                let id = ColumnId::parse(part).ok_or_else(|| {
                    usage(format!(
                        "--only {list}: unknown column '{part}'; use one or more of {}",
                        ColumnId::ALL.map(|c| c.as_str()).join(",")
                    ))
                })?;
                if !ids.contains(&id) {
                    ids.push(id);
                }
            }
            Some(ids)
        }
    };
    let size = parse_size(&r.size, SizeDialect::Tool).ok_or_else(|| {
        usage(format!(
            "--size {}: not a size; use bytes or a number with K, M, G (e.g. 512M, 2G)",
            r.size
        ))
    })?;
    let engine = match &r.engine {
        None => EngineChoice::Auto,
        Some(e) => EngineChoice::parse(e).ok_or_else(|| {
            usage(format!(
                "--engine {e}: unknown engine; use auto, io_uring, libaio or psync"
            ))
        })?,
    };
    let preset = match &r.preset {
        None => None,
        Some(name) => Some(Preset::parse(name).ok_or_else(|| {
            usage(format!(
                "--preset {name}: unknown preset; use {}",
                Preset::NAMES.join(", ")
            ))
        })?),
    };
    let opts = SuiteOptions {
        dir: dir.to_path_buf(),
        only,
        runtime: Duration::from_secs_f64(r.runtime_s.unwrap_or(DEFAULT_RUNTIME_S as f64)),
        ramp: Duration::from_secs_f64(r.ramp_s.unwrap_or(DEFAULT_RAMP_S as f64)),
        size,
        engine,
        seed: r.seed,
        repeat: r.repeat,
        preset: None,
        // A window of its own asked for: fixed; otherwise the figure decides.
        steady: match (r.runtime_s, r.ramp_s) {
            (Some(_), _) => None,
            (None, None) => Some(SteadyRule::DEFAULT),
            // A ramp of the user's own: kept whole.
            (None, Some(ramp)) => Some(SteadyRule {
                min_ramp: Duration::from_secs_f64(ramp),
                ..SteadyRule::DEFAULT
            }),
        },
    };
    // The caller's parser refuses --preset beside --runtime, --ramp or --size.
    let opts = match preset {
        Some(p) => p.apply(opts),
        None => opts,
    };
    opts.validate()?;
    Ok(opts)
}

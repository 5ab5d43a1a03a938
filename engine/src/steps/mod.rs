//! Real build steps: timed, with what they waited on, and a verdict on what bound them.
//!
//! Each step runs from a clean start as a child in its own process group ([`child`]), in a
//! scratch folder under `--dir` that is removed after the step whatever happened. Its
//! signals ([`probe`]) and this disk's columns give the verdict ([`verdict`]).

pub mod cargo_build;
pub mod child;
pub mod cpu_probe;
pub mod docker_build;
pub mod probe;
pub mod sqlite;
pub mod user;
pub mod verdict;
pub mod what_if;

use std::cell::RefCell;
use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result};

use crate::cgroup::CapGroup;
use child::Measured;
use record::error::{interrupted, usage};
use record::{Bound, CpuReference, IoCaps, StepResult, StepStatus, TestResult, WhatIf};
use verdict::{DiskFigures, StepSignals};

pub const CARGO_BUILD: &str = "cargo-build";
pub const DOCKER_BUILD: &str = "docker-build";
pub const SQLITE: &str = "sqlite";
/// The built-in steps, in the order they run (user steps follow).
pub const BUILTIN_IDS: [&str; 3] = [CARGO_BUILD, DOCKER_BUILD, SQLITE];
/// The hidden option of `cargo diskbench steps` that runs the sqlite workload in a child:
/// `--internal-sqlite-worker DB --sqlite-transactions N`.
pub const SQLITE_WORKER_FLAG: &str = "--internal-sqlite-worker";
/// Transactions of the sqlite step by default (about 2-5 s on a cloud disk).
pub const DEFAULT_SQLITE_TRANSACTIONS: u32 = 2000;
/// Lines of output kept for a failed step.
pub const OUTPUT_TAIL_LINES: usize = 20;
/// The environment variable that gives user steps a scratch folder under `--dir`.
pub const SCRATCH_ENV: &str = "DISKBENCH_SCRATCH";

/// What to run and where. Construct with `..Default::default()` so fields can be added.
#[derive(Clone, Debug, Default)]
pub struct StepsOptions {
    /// The folder the steps work in (a scratch folder is made under it and removed).
    pub dir: PathBuf,
    /// The user's Cargo.toml; else found from the current directory.
    pub manifest_path: Option<PathBuf>,
    /// Only these step ids (None: all).
    pub only: Option<Vec<String>>,
    /// Stop at the first failed step.
    pub fail_fast: bool,
    /// Modules of the generated crate (None: [`cargo_build::DEFAULT_MODULES`]).
    pub generated_modules: Option<u32>,
    /// Size of the built-in docker context in MiB (None: [`docker_build::DEFAULT_CONTEXT_MIB`]).
    pub docker_context_mib: Option<u32>,
    /// Transactions of the sqlite step (None: [`DEFAULT_SQLITE_TRANSACTIONS`]).
    pub sqlite_transactions: Option<u32>,
    /// Program and leading arguments that reach this binary's `steps` command, to which
    /// [`SQLITE_WORKER_FLAG`] is appended (None: the current executable with
    /// `diskbench steps`).
    pub worker_command: Option<Vec<OsString>>,
    /// CPUs the verdicts compare with (None: what this process may use).
    pub vcpus: Option<u32>,
    /// Where `columns` come from when not from the same run, e.g. a record's file name;
    /// noted on each step.
    pub columns_source: Option<String>,
    /// `--what-if`: rerun each step on memory and with the disk capped (checked beforehand
    /// with [`what_if::preflight::preflight`]).
    pub what_if: Option<what_if::options::WhatIfOptions>,
}

/// The project the steps are about: the Cargo workspace, or the current directory.
#[derive(Clone, Debug)]
pub struct Project {
    pub root: PathBuf,
    /// The workspace root's Cargo.toml, when there is a Cargo project.
    pub manifest: Option<PathBuf>,
}

/// Find the Cargo workspace from `manifest_path` or the current directory.
pub fn find_project(manifest_path: Option<&Path>) -> Result<Project> {
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    let (start, label) = match manifest_path {
        Some(p) => {
            if !p.is_file() {
                return Err(usage(format!(
                    "--manifest-path {}: no such file; give the path of a Cargo.toml",
                    p.display()
                )));
            }
            (p.to_path_buf(), format!("--manifest-path {}", p.display()))
        }
        None => match cwd
            .ancestors()
            .map(|d| d.join("Cargo.toml"))
            .find(|p| p.is_file())
        {
            Some(p) => {
                let label = p.display().to_string();
                (p, label)
            }
            None => {
                return Ok(Project {
                    root: cwd,
                    manifest: None,
                });
            }
        },
    };
    let meta = cargo_metadata::MetadataCommand::new()
        .manifest_path(&start)
        .no_deps()
        .exec()
        .map_err(|e| {
            let text = e.to_string();
            let detail: Vec<&str> = text
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .collect();
            usage(format!(
                "{label}: `cargo metadata` refused the project: {}",
                detail.join(" ")
            ))
        })?;
    let root = meta.workspace_root.into_std_path_buf();
    Ok(Project {
        manifest: Some(root.join("Cargo.toml")),
        root,
    })
}

enum StepKind {
    CargoBuild,
    DockerBuild,
    Sqlite,
    User(user::UserStep),
}

impl StepKind {
    fn id(&self) -> &str {
        match self {
            StepKind::CargoBuild => CARGO_BUILD,
            StepKind::DockerBuild => DOCKER_BUILD,
            StepKind::Sqlite => SQLITE,
            StepKind::User(u) => &u.id,
        }
    }
}

/// The steps that will run, checked before anything runs (a bad config or `--only` id is a
/// usage error, exit code 2).
fn plan(opts: &StepsOptions, project: &Project) -> Result<Vec<StepKind>> {
    let user_steps = user::load(project.manifest.as_deref(), &project.root, &BUILTIN_IDS)?;
    let mut all = vec![
        StepKind::CargoBuild,
        StepKind::DockerBuild,
        StepKind::Sqlite,
    ];
    all.extend(user_steps.into_iter().map(StepKind::User));
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
    Ok(all
        .into_iter()
        .filter(|s| only.iter().any(|o| o == s.id()))
        .collect())
}

/// The scratch folder under `--dir`; removed when dropped, so an early return (an error,
/// Ctrl-C) leaves nothing behind.
struct Scratch {
    path: PathBuf,
}

impl Scratch {
    fn create(dir: &Path) -> Result<Scratch> {
        if !dir.is_dir() {
            return Err(usage(format!(
                "--dir {}: not an existing directory",
                dir.display()
            )));
        }
        // Steps run in the project folder, not here: a relative --dir (the default ".") must
        // not be resolved against their working directory.
        let dir = std::path::absolute(dir)
            .with_context(|| format!("--dir {}: cannot make it absolute", dir.display()))?;
        let path = dir.join(format!(".diskbench-steps-{}", record::random::new_id()));
        fs::create_dir(&path).with_context(|| format!("cannot create {}", path.display()))?;
        Ok(Scratch { path })
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.path);
    }
}

/// What [`run_steps_with`] reports while it works: a step starts, a step ends.
#[derive(Debug)]
pub enum StepEvent<'a> {
    /// The steps that will run, in order (known once the config is read).
    Planned { ids: &'a [String] },
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

/// Run the steps, in order. `columns` are this machine's six columns from the same run (may be
/// empty), used for the verdicts. `progress` receives one line per step as it starts and one
/// when it ends (its time and verdict).
pub fn run_steps(
    opts: &StepsOptions,
    columns: &[TestResult],
    progress: &mut dyn FnMut(&str),
) -> Result<Vec<StepResult>> {
    run_steps_with(opts, columns, &mut |event| match event {
        StepEvent::Planned { .. } => {}
        StepEvent::Started { id, .. } => progress(&format!("step {id}")),
        StepEvent::Finished { result, .. } => progress(&format!(
            "step {}: {}, {}",
            result.id,
            record::units::format_s(result.wall_s),
            result.verdict_word()
        )),
    })
}

/// [`run_steps`] with structured progress, for a display that shows elapsed time.
pub fn run_steps_with(
    opts: &StepsOptions,
    columns: &[TestResult],
    progress: &mut dyn FnMut(StepEvent<'_>),
) -> Result<Vec<StepResult>> {
    let project = find_project(opts.manifest_path.as_deref())?;
    let steps = plan(opts, &project)?;
    let scratch = Scratch::create(&opts.dir)?;
    let ctx = RunContext {
        opts,
        project: &project,
        disk: DiskFigures::from_columns(columns),
        columns,
        vcpus: opts.vcpus.unwrap_or_else(crate::cpu::available_cpus),
        env: RefCell::new(RunEnv::default()),
    };
    let mut results = Vec::new();
    let ids: Vec<String> = steps.iter().map(|s| s.id().to_string()).collect();
    progress(StepEvent::Planned { ids: &ids });
    let of = steps.len();
    for (i, step) in steps.iter().enumerate() {
        if record::cancel::requested() {
            return Err(interrupted());
        }
        progress(StepEvent::Started {
            id: step.id(),
            index: i + 1,
            of,
        });
        let normal = what_if::options::Condition::Normal;
        let (mut result, first) = run_in_work(&ctx, step, &scratch.path, &normal)?;
        if let Some(w) = &opts.what_if
            && result.status == StepStatus::Ok
        {
            // Each condition shows as the step running again, named with its condition.
            let mut condition_started = |label: &str| {
                progress(StepEvent::Started {
                    id: label,
                    index: i + 1,
                    of,
                })
            };
            result.what_if = Some(experiment(
                &ctx,
                w,
                step,
                &scratch.path,
                first,
                &mut condition_started,
            )?);
        }
        let failed = result.status == StepStatus::Failed;
        progress(StepEvent::Finished {
            result: &result,
            index: i + 1,
            of,
        });
        results.push(result);
        if failed && opts.fail_fast {
            break;
        }
    }
    let path = scratch.path.clone();
    drop(scratch);
    if path.exists() {
        anyhow::bail!("could not remove the scratch folder {}", path.display());
    }
    Ok(results)
}

/// Whether a step id is one of the built-in steps (a failed user step fails the run).
pub fn is_builtin(id: &str) -> bool {
    BUILTIN_IDS.contains(&id)
}

/// A short fixed compute probe.
pub fn cpu_reference() -> CpuReference {
    cpu_probe::measure(crate::cpu::available_cpus())
}

struct RunContext<'a> {
    opts: &'a StepsOptions,
    project: &'a Project,
    disk: DiskFigures,
    columns: &'a [TestResult],
    vcpus: u32,
    /// How the current run is started (what-if conditions).
    env: RefCell<RunEnv>,
}

/// The condition a run is under: its page cache state and its caps.
#[derive(Default)]
struct RunEnv {
    /// Drop the step's files from the page cache before it starts.
    cold: bool,
    group: Option<CapGroup>,
    target: Option<what_if::caps::CapTarget>,
    caps: IoCaps,
    /// What was done for this run (a daemon capped), for the condition's notes.
    notes: Vec<String>,
}

impl RunContext<'_> {
    /// Start `cmd` under the current condition and measure it. `daemon`: a docker build,
    /// whose daemon gets the same caps.
    fn launch(&self, mut cmd: Command, work: &Path, daemon: bool) -> Result<Measured> {
        {
            let mut env = self.env.borrow_mut();
            let RunEnv {
                cold,
                group,
                target,
                caps,
                notes,
            } = &mut *env;
            if *cold {
                what_if::page_cache::evict_from_cache(work);
            }
            if let (Some(g), Some(t)) = (group.as_mut(), target.as_ref()) {
                g.join_on_exec(&mut cmd);
                if daemon {
                    notes.extend(what_if::caps::cap_daemon(
                        g,
                        t,
                        caps,
                        &docker_build::DAEMON_COMMANDS,
                    ));
                }
            }
        }
        child::run_measured(cmd, OUTPUT_TAIL_LINES)
    }
}

/// One run of `step` under `condition` in a fresh work folder under `scratch` (on a tmpfs
/// for the memory condition), which is removed afterwards whatever happened. Returns the
/// step's result and the run's summary for the experiments.
fn run_in_work(
    ctx: &RunContext,
    step: &StepKind,
    scratch: &Path,
    condition: &what_if::options::Condition,
) -> Result<(StepResult, what_if::judgement::Run)> {
    let work = scratch.join(step.id());
    fs::create_dir(&work).with_context(|| format!("cannot create {}", work.display()))?;
    let mut mount = None;
    let mut setup = || -> Result<()> {
        let mut env = ctx.env.borrow_mut();
        *env = RunEnv {
            // On memory there is no disk to read from: nothing to drop (and tmpfs pages are
            // the files themselves).
            cold: ctx.opts.what_if.is_some() && *condition != what_if::options::Condition::Memory,
            ..Default::default()
        };
        match condition {
            what_if::options::Condition::Normal => {}
            what_if::options::Condition::Memory => {
                mount = Some(what_if::memory::MemoryMount::mount(&work)?)
            }
            what_if::options::Condition::Capped { caps, .. } => {
                let target = ctx
                    .opts
                    .what_if
                    .as_ref()
                    .and_then(|w| w.caps_target.as_ref().ok())
                    .context("a capped run without a cap target")?;
                env.group = Some(what_if::caps::capped_group(target, caps)?);
                env.target = Some(target.clone());
                env.caps = *caps;
            }
        }
        Ok(())
    };
    let outcome = setup().and_then(|_| run_one(ctx, step, &work));
    // Undo in reverse: caps (and a daemon's) first, then the mount, then the folder.
    let mut env = std::mem::take(&mut *ctx.env.borrow_mut());
    let targets = env
        .target
        .as_ref()
        .map(|t| t.devices.clone())
        .unwrap_or_default();
    let cgroup_io = env.group.as_ref().map(|g| g.usage(&targets));
    let notes = std::mem::take(&mut env.notes);
    // Both undos are tried; if either failed the machine is not as it was (a daemon still
    // capped, a tmpfs still mounted): the run fails and says what is left, never exit 0.
    let mut undo_failed = Vec::new();
    if let Some(g) = env.group.take()
        && let Err(e) = g.close()
    {
        undo_failed.push(e);
    }
    if let Some(m) = mount.take()
        && let Err(e) = m.unmount()
    {
        undo_failed.push(e);
    }
    let cleaned = fs::remove_dir_all(&work);
    if !undo_failed.is_empty() {
        anyhow::bail!(
            "the what-if run of {} could not undo its setup: {}; the next --what-if run removes \
             what it can, anything else needs undoing by hand as the message says",
            step.id(),
            undo_failed.join("; ")
        );
    }
    let mut result = outcome?;
    if let Err(e) = cleaned {
        result
            .notes
            .push(format!("could not remove {}: {e}", work.display()));
    }
    let run = what_if::judgement::Run {
        wall_s: result.wall_s,
        user_s: result.user_s,
        sys_s: result.sys_s,
        cpu_wait_s: result.cpu_wait_s,
        ok: result.status == StepStatus::Ok,
        io: result.io.clone(),
        cgroup_io,
        notes: notes
            .into_iter()
            .chain(result.reason.clone().map(|r| format!("a run failed: {r}")))
            .collect(),
    };
    Ok((result, run))
}

/// The what-if conditions of one step, after its normal run (`first`).
fn experiment(
    ctx: &RunContext,
    w: &what_if::options::WhatIfOptions,
    step: &StepKind,
    scratch: &Path,
    first: what_if::judgement::Run,
    progress: &mut dyn FnMut(&str),
) -> Result<WhatIf> {
    let repeat = w.repeat.max(1);
    let mut runs = vec![first];
    for _ in 1..repeat {
        if record::cancel::requested() {
            return Err(interrupted());
        }
        runs.push(run_in_work(ctx, step, scratch, &what_if::options::Condition::Normal)?.1);
    }
    let baseline = what_if::judgement::summarise("baseline", None, &runs);
    let mut conditions = Vec::new();
    for condition in w.conditions() {
        let caps = match &condition {
            what_if::options::Condition::Capped { caps, .. } => Some(*caps),
            _ => None,
        };
        progress(&format!("{} ({})", step.id(), condition.id()));
        let mut runs = Vec::new();
        for _ in 0..repeat {
            if record::cancel::requested() {
                return Err(interrupted());
            }
            runs.push(run_in_work(ctx, step, scratch, &condition)?.1);
        }
        conditions.push(what_if::judgement::summarise(condition.id(), caps, &runs));
    }
    let (bound, why) = what_if::judgement::judge(&baseline, &mut conditions);
    let mut notes = Vec::new();
    if let Some((label, _)) = &w.like
        && let Some(c) = conditions.iter().find(|c| c.id.starts_with("like:"))
        && c.status == StepStatus::Ok
    {
        notes.push(format!(
            "on {label}'s disk (its sequential MiB/s and random IOPS as caps): {:.2} s against \
             {:.2} s here, CPU differences not included",
            c.wall_s, baseline.wall_s
        ));
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
    if matches!(step, StepKind::DockerBuild) {
        notes.push(
            "on memory, the build context is on tmpfs; the docker daemon's own storage stays \
             where it is"
                .into(),
        );
    }
    Ok(WhatIf {
        baseline: Some(baseline),
        conditions,
        devices,
        bound,
        why,
        notes,
    })
}

fn display_command(cmd: &Command) -> Vec<String> {
    std::iter::once(cmd.get_program())
        .chain(cmd.get_args())
        .map(|a| a.to_string_lossy().into_owned())
        .collect()
}

fn run_one(ctx: &RunContext, step: &StepKind, work: &Path) -> Result<StepResult> {
    match step {
        StepKind::CargoBuild => {
            let target = work.join("target");
            let mut notes = Vec::new();
            // Removes a Cargo.lock the fetch and build wrote into a project without one.
            let _lockfile = ctx
                .project
                .manifest
                .as_deref()
                .map(cargo_build::LockfileGuard::new);
            let (cmd, name) = match &ctx.project.manifest {
                Some(manifest) => {
                    notes.extend(cargo_build::prefetch(manifest));
                    let name = format!(
                        "cold cargo build of {}",
                        ctx.project
                            .root
                            .file_name()
                            .map(|n| n.to_string_lossy().into_owned())
                            .unwrap_or_else(|| ctx.project.root.display().to_string())
                    );
                    (cargo_build::build_command(manifest, &target, false), name)
                }
                None => {
                    let modules = ctx
                        .opts
                        .generated_modules
                        .unwrap_or(cargo_build::DEFAULT_MODULES)
                        .max(1);
                    let manifest = cargo_build::generate_crate(&work.join("crate"), modules)?;
                    notes.push(format!(
                        "no Cargo project here: built a generated crate ({modules} modules, no \
                         dependencies), the same on every runner"
                    ));
                    let name = format!("cold cargo build of a generated crate ({modules} modules)");
                    (cargo_build::build_command(&manifest, &target, true), name)
                }
            };
            let command = display_command(&cmd);
            let m = ctx.launch(cmd, work, false)?;
            Ok(finish(ctx, CARGO_BUILD, name, command, m, None, notes))
        }
        StepKind::DockerBuild => {
            let name = "docker build --no-cache".to_string();
            if let Err(reason) = docker_build::engine_answers() {
                return Ok(skipped(DOCKER_BUILD, name, reason));
            }
            let mut notes = Vec::new();
            let user_dockerfile = ctx.project.root.join("Dockerfile");
            let (dockerfile, context, name) = if user_dockerfile.is_file() {
                (
                    user_dockerfile,
                    ctx.project.root.clone(),
                    "docker build --no-cache of the project's Dockerfile".to_string(),
                )
            } else {
                let mib = ctx
                    .opts
                    .docker_context_mib
                    .unwrap_or(docker_build::DEFAULT_CONTEXT_MIB)
                    .max(1);
                let context = work.join("context");
                let dockerfile = docker_build::generate_context(&context, mib)?;
                notes.push(format!(
                    "no Dockerfile in the project: built a FROM scratch context of {mib} MiB \
                     (many small files, three large incompressible ones, five COPY layers)"
                ));
                (
                    dockerfile,
                    context,
                    "docker build --no-cache of a built-in FROM scratch context".to_string(),
                )
            };
            let tag = format!("diskbench-step-{}", record::random::new_id());
            let cmd = docker_build::build_command(&dockerfile, &context, &tag);
            let command = display_command(&cmd);
            let before = docker_build::daemon_snapshot();
            let measured = ctx.launch(cmd, work, true);
            let after = docker_build::daemon_snapshot();
            let removal = docker_build::remove_image(&tag);
            let m = measured?;
            let daemon = match (before, after) {
                (Some(b), Some(a)) => {
                    let usage = docker_build::daemon_usage(&b, &a);
                    if usage.commands.is_empty() {
                        None
                    } else {
                        Some(usage)
                    }
                }
                _ => None,
            };
            match &daemon {
                Some(d) => notes.push(format!(
                    "CPU and I/O include the local docker daemon's processes ({}), which may \
                     also serve other clients meanwhile; their storage is not under --dir",
                    d.commands.join(", ")
                )),
                None => notes.push(
                    "the docker daemon's processes are not visible (remote DOCKER_HOST or \
                     another PID namespace): CPU and I/O are the client's only"
                        .into(),
                ),
            }
            notes.extend(removal);
            Ok(finish(ctx, DOCKER_BUILD, name, command, m, daemon, notes))
        }
        StepKind::Sqlite => {
            let transactions = ctx
                .opts
                .sqlite_transactions
                .unwrap_or(DEFAULT_SQLITE_TRANSACTIONS)
                .max(1);
            let mut prefix = match &ctx.opts.worker_command {
                Some(c) if !c.is_empty() => c.clone(),
                _ => vec![
                    std::env::current_exe()
                        .context("cannot find this program to run the sqlite worker")?
                        .into(),
                    "diskbench".into(),
                    "steps".into(),
                ],
            }
            .into_iter();
            let mut cmd = Command::new(prefix.next().unwrap_or_default());
            cmd.args(prefix)
                .arg(SQLITE_WORKER_FLAG)
                .arg(work.join("steps.db"))
                .arg("--sqlite-transactions")
                .arg(transactions.to_string())
                .current_dir(work);
            let command = display_command(&cmd);
            let m = ctx.launch(cmd, work, false)?;
            let mut notes = vec![format!(
                "{transactions} transactions (WAL, synchronous=FULL), then {} indexed reads",
                transactions * 20
            )];
            if m.succeeded() {
                let per_commit_ms = m.wall_s * 1e3 / transactions as f64;
                let sync_p50 = ctx
                    .columns
                    .iter()
                    .find(|t| t.id == "sync-write")
                    .and_then(|t| t.main_direction()?.lat_ns.as_ref()?.p50);
                notes.push(match sync_p50 {
                    Some(p50) => format!(
                        "{per_commit_ms:.2} ms of wall time per transaction; this disk's \
                         sync-write p50 is {:.2} ms",
                        p50 as f64 / 1e6
                    ),
                    None => format!("{per_commit_ms:.2} ms of wall time per transaction"),
                });
            }
            Ok(finish(
                ctx,
                SQLITE,
                "SQLite: small synced transactions, then indexed reads".into(),
                command,
                m,
                None,
                notes,
            ))
        }
        StepKind::User(u) => {
            let mut cmd = Command::new("sh");
            cmd.arg("-c")
                .arg(&u.run)
                .current_dir(&ctx.project.root)
                .env(SCRATCH_ENV, work);
            let m = ctx.launch(cmd, work, false)?;
            let name = u.name.clone().unwrap_or_else(|| u.run.clone());
            let command = vec!["sh".into(), "-c".into(), u.run.clone()];
            Ok(finish(ctx, &u.id, name, command, m, None, Vec::new()))
        }
    }
}

fn skipped(id: &str, name: String, reason: String) -> StepResult {
    StepResult {
        id: id.into(),
        name,
        status: StepStatus::Skipped,
        why: format!("Skipped: {reason}."),
        reason: Some(reason),
        bound: Bound::Unknown,
        ..Default::default()
    }
}

fn finish(
    ctx: &RunContext,
    id: &str,
    name: String,
    command: Vec<String>,
    m: Measured,
    daemon: Option<docker_build::DaemonUsage>,
    mut notes: Vec<String>,
) -> StepResult {
    let mut user_s = m.rusage.user_s;
    let mut sys_s = m.rusage.sys_s;
    let mut io = m.io.clone();
    if let Some(d) = &daemon {
        user_s += d.user_s;
        sys_s += d.sys_s;
        io = io.map(|i| probe::io_add(&i, &d.io));
    }
    let (status, reason) = match (m.exit_code, m.signal) {
        (Some(0), _) => (StepStatus::Ok, None),
        (Some(code), _) => (StepStatus::Failed, Some(format!("exited with code {code}"))),
        (None, Some(sig)) => (StepStatus::Failed, Some(format!("killed by signal {sig}"))),
        (None, None) => (StepStatus::Failed, Some("ended abnormally".to_string())),
    };
    let (bound, why) = if status == StepStatus::Ok {
        let v = verdict::judge(
            &StepSignals {
                wall_s: m.wall_s,
                cpu_s: user_s + sys_s,
                vcpus: ctx.vcpus,
                io: io.clone(),
                io_pressure_s: m.pressure_some_s,
                blkio_delay_s: m.blkio_delay_s,
                cpu_wait_s: m.cpu_wait_s,
                // With a daemon counted, the client's switches no longer describe the
                // step's work: leave them out of the verdict.
                switches: daemon
                    .is_none()
                    .then_some((m.rusage.voluntary_switches, m.rusage.involuntary_switches)),
            },
            &ctx.disk,
        );
        (v.bound, v.why)
    } else {
        (
            Bound::Unknown,
            format!(
                "The step failed ({}), so it gets no verdict.",
                reason.as_deref().unwrap_or("")
            ),
        )
    };
    if ctx.disk.is_empty() {
        notes.push(
            "no sequential figures for this disk: the verdict rests on the step's own signals"
                .into(),
        );
    } else if let Some(src) = &ctx.opts.columns_source {
        notes.push(format!("this disk's figures come from {src}"));
    }
    StepResult {
        id: id.into(),
        name,
        command,
        status,
        exit_code: m.exit_code,
        output_tail: (status == StepStatus::Failed).then(|| m.output_tail.clone()),
        reason,
        wall_s: m.wall_s,
        user_s,
        sys_s,
        max_rss_kib: Some(m.rusage.max_rss_kib),
        io,
        io_pressure_s: m.pressure_some_s,
        io_pressure_full_s: m.pressure_full_s,
        blkio_delay_s: m.blkio_delay_s,
        cpu_wait_s: m.cpu_wait_s,
        voluntary_switches: Some(m.rusage.voluntary_switches),
        involuntary_switches: Some(m.rusage.involuntary_switches),
        unavailable: m.unavailable,
        bound,
        why,
        notes,
        what_if: None,
    }
}

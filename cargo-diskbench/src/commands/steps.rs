//! `cargo diskbench steps`: time only the real build steps.
//!
//! Without `--save`, nothing is added to the results folder: a steps-only run is what one
//! repeats while looking at a build, and a record without the six columns cannot be set
//! beside other runners on the site. `--json FILE` writes the full record (valid, with
//! `tests: []`) anywhere; `--save` writes it into the results folder as well.
//!
//! The verdicts need this disk's sequential figures: the newest measured record for this
//! machine and this storage in the results folder gives them; without one, each step is
//! judged from its own signals and says so.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use engine::measured::{Measured, MeasuredRun};
use engine::steps::{self, StepsOptions};
use record::{Record, StepStatus, TestResult};

#[derive(clap::Args, Debug)]
pub struct StepsArgs {
    /// Where the steps work (without it, $GITHUB_WORKSPACE, else the current dir); a scratch
    /// folder is made there and removed after each step
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Comma-separated step ids: cargo-build, docker-build, sqlite or a user step's id
    #[arg(long, value_name = "IDS", value_delimiter = ',')]
    pub only: Option<Vec<String>>,
    /// The project's Cargo.toml; without it, found from the current directory
    #[arg(long, value_name = "PATH")]
    pub manifest_path: Option<PathBuf>,
    /// Stop at the first failed step
    #[arg(long)]
    pub fail_fast: bool,
    /// Also write the record here ('-' = stdout)
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// The results folder: its newest record for this machine and disk gives the verdicts
    /// their disk figures
    #[arg(long, value_name = "DIR", default_value = record::results::DEFAULT_RESULTS_DIR)]
    pub results: PathBuf,
    /// Write the record into the results folder too
    #[arg(long)]
    pub save: bool,
    /// How this machine is named in the record; without it, as detected
    #[arg(long, value_name = "TEXT")]
    pub label: Option<String>,
    /// Modules of the generated crate built when there is no Cargo project
    #[arg(long, value_name = "N", default_value_t = steps::cargo_build::DEFAULT_MODULES)]
    pub crate_modules: u32,
    /// Size of the built-in docker build context, MiB
    #[arg(long, value_name = "MIB", default_value_t = steps::docker_build::DEFAULT_CONTEXT_MIB)]
    pub docker_context_mib: u32,
    /// Transactions of the sqlite step
    #[arg(long, value_name = "N", default_value_t = steps::sqlite::DEFAULT_TRANSACTIONS)]
    pub sqlite_transactions: u32,
    /// Rerun each step on memory and with the disk under --dir capped (needs root)
    #[command(flatten)]
    pub what_if: WhatIfArgs,
    /// Run the sqlite workload on this database in this process (the step's child)
    #[arg(long, value_name = "DB", hide = true)]
    pub internal_sqlite_worker: Option<PathBuf>,
}

/// The what-if options, shared by `steps` and `run`.
#[derive(clap::Args, Debug, Default)]
pub struct WhatIfArgs {
    /// Rerun each step on memory (tmpfs), with the disk capped in I/Os per second, and in
    /// MiB/s; the verdict by experiment is recorded beside the inferred one (needs root)
    #[arg(long)]
    pub what_if: bool,
    /// I/Os per second of the iops-capped condition (reads and writes each)
    #[arg(long, value_name = "N", default_value_t = engine::experiments::what_if::options::DEFAULT_CAP_IOPS)]
    pub cap_iops: u64,
    /// MiB/s of the bandwidth-capped condition (reads and writes each)
    #[arg(long, value_name = "N", default_value_t = engine::experiments::what_if::options::DEFAULT_CAP_MIB_S)]
    pub cap_mib_s: u64,
    /// Also run each step (with --what-if) or the columns (run) under caps taken from this
    /// runner's figures in --results: its seq-read/seq-write MiB/s and rand-read/rand-write IOPS
    #[arg(long, value_name = "LABEL")]
    pub like: Option<String>,
    /// Exactly N runs per what-if condition (and of the normal run); without it, 3 each and
    /// more, up to 7, while their spread is wide; the verdict compares medians
    #[arg(long, value_name = "N")]
    pub what_if_repeat: Option<u32>,
    /// Seconds one step's what-if runs may take before no run past the 3 of each condition is
    /// added
    #[arg(long, value_name = "S", default_value_t = engine::experiments::what_if::options::DEFAULT_BUDGET_S)]
    pub what_if_budget_s: u64,
    /// Only these what-if conditions: memory, iops-capped, bandwidth-capped, like
    #[arg(long, value_name = "IDS", value_delimiter = ',')]
    pub what_if_only: Option<Vec<String>>,
}

/// Check the what-if options and the machine before any step runs (exit 2 when root or a
/// block-I/O hierarchy is missing, or --like names no runner).
pub fn what_if_options(
    w: &WhatIfArgs,
    dir: &Path,
    results: &Path,
) -> Result<Option<engine::experiments::what_if::options::WhatIfOptions>> {
    engine::experiments::what_if::options::check_runs(w.what_if_repeat, w.what_if_budget_s)
        .map_err(record::error::usage)?;
    if !w.what_if {
        return Ok(None);
    }
    engine::experiments::what_if::options::checked_option_caps(w.cap_iops, w.cap_mib_s)
        .map_err(record::error::usage)?;
    for id in w.what_if_only.iter().flatten() {
        if !engine::experiments::what_if::options::CONDITION_IDS.contains(&id.as_str()) {
            return Err(record::error::usage(format!(
                "--what-if-only: no condition \"{id}\" (conditions: {})",
                engine::experiments::what_if::options::CONDITION_IDS.join(", ")
            )));
        }
    }
    let like = match &w.like {
        Some(label) => {
            let (record, _, caps) = engine::experiments::like::newest_record(results, label)?;
            Some((
                label.clone(),
                caps,
                engine::experiments::what_if::like_latency::OneAtATime::of(&record.tests),
                engine::experiments::like::emulated_delays(&record),
            ))
        }
        None => None,
    };
    let (like, like_latency, like_delays) = match like {
        Some((label, caps, latency, delays)) => (Some((label, caps)), Some(latency), delays),
        None => (None, None, None),
    };
    let caps_target = engine::experiments::what_if::preflight::preflight(
        dir,
        Path::new(engine::experiments::cgroup::CGROUP_FS),
    )?;
    Ok(Some(engine::experiments::what_if::options::WhatIfOptions {
        repeat: w.what_if_repeat,
        budget_s: w.what_if_budget_s,
        cap_iops: w.cap_iops,
        cap_mib_s: w.cap_mib_s,
        like,
        like_latency,
        like_delays,
        caps_target,
        only: w.what_if_only.clone(),
    }))
}

pub fn exec(args: StepsArgs) -> Result<()> {
    if let Some(db) = &args.internal_sqlite_worker {
        return steps::sqlite::workload(db, args.sqlite_transactions.max(1));
    }
    let dir = match &args.dir {
        Some(d) => d.clone(),
        None => match std::env::var_os("GITHUB_WORKSPACE") {
            Some(w) if !w.is_empty() => PathBuf::from(w),
            _ => std::env::current_dir().context("cannot read the current directory")?,
        },
    };
    engine::files::testfile::check_test_folder("--dir", &dir)?;
    let results_dir = args.results.clone();
    // Every destination before the first step runs.
    match args.json.as_deref() {
        Some(json) if json == Path::new("-") => super::destination::stdout("--json")?,
        Some(json) => super::destination::file("--json", json)?,
        None => {}
    }
    if args.save {
        super::destination::folder("--results", &results_dir)?;
    }
    if args.what_if.like.is_some() && !args.what_if.what_if {
        return Err(record::error::usage(
            "--like: with `steps` it is a what-if condition; add --what-if",
        ));
    }
    let what_if = what_if_options(&args.what_if, &dir, &results_dir)?;
    // A what-if run killed with SIGKILL may have left the docker daemon capped: released
    // before anything is timed, what-if or not.
    engine::experiments::what_if::preflight::sweep_killed_runs(Path::new(
        engine::experiments::cgroup::CGROUP_FS,
    ));
    super::unmount_killed_emulations();
    let run = MeasuredRun::start(&dir, args.label.as_deref());
    let columns = newest_columns(&results_dir, &run.runner, &run.storage, &dir);
    let opts = StepsOptions {
        dir: dir.clone(),
        manifest_path: args.manifest_path.clone(),
        only: args.only.clone(),
        fail_fast: args.fail_fast,
        generated_modules: Some(args.crate_modules),
        docker_context_mib: Some(args.docker_context_mib),
        sqlite_transactions: Some(args.sqlite_transactions),
        vcpus: Some(run.runner.vcpus).filter(|v| *v > 0),
        columns_source: columns.as_ref().map(|(_, f)| format!("the record {f}")),
        what_if,
        ..Default::default()
    };
    let tests: &[TestResult] = columns.as_ref().map(|(t, _)| t.as_slice()).unwrap_or(&[]);
    let mut progress = crate::output::SuiteProgress::new(false)
        .with_steps(crate::output::StepEstimates::from_results(
            &results_dir,
            &run.runner.label,
        ))
        .steps_only();
    let results = steps::run_steps_with(&opts, tests, &mut |e| progress.step(&e))?;
    progress.finish();

    let to_stdout = args.json.as_deref() == Some(Path::new("-"));
    crate::output::print(
        &crate::output::steps_table(&results, Some(run.runner.vcpus)),
        to_stdout,
    );

    if args.json.is_some() || args.save {
        let record = run.finish(Measured {
            settings: record::Settings {
                suite: "steps".into(),
                engine: "none".into(),
                repeat: 1,
                ..Default::default()
            },
            steps: results.clone(),
            cpu_reference: Some(steps::cpu_reference()),
            notes: columns
                .as_ref()
                .map(|(_, f)| vec![format!("verdicts used this disk's figures from {f}")])
                .unwrap_or_else(|| {
                    vec![
                        "no record of this disk's columns in the results folder: verdicts \
                          rest on each step's own signals"
                            .into(),
                    ]
                }),
            ..Default::default()
        })?;
        if let Some(path) = &args.json {
            let json = serde_json::to_string_pretty(&record)?;
            if to_stdout {
                use std::io::Write as _;
                let mut out = std::io::stdout().lock();
                writeln!(out, "{json}")
                    .and_then(|()| out.flush())
                    .context("--json -: cannot write the record to stdout")?;
            } else {
                write_json(path, &json)?;
            }
        }
        // A run that exits non-zero leaves no record in the results folder.
        if args.save && failed_steps(&results, args.fail_fast).is_empty() {
            let path = record::results::write_record(&results_dir, &record)?;
            eprintln!("record written to {}", path.display());
        }
    }

    let failed = failed_steps(&results, args.fail_fast);
    if !failed.is_empty() {
        anyhow::bail!("step failed: {}", failed.join(", "));
    }
    Ok(())
}

/// The steps whose failure fails the command: the user's own, or any with --fail-fast.
fn failed_steps(results: &[record::StepResult], fail_fast: bool) -> Vec<String> {
    results
        .iter()
        .filter(|s| s.status == StepStatus::Failed && (fail_fast || !steps::is_builtin(&s.id)))
        .map(|s| format!("{} ({})", s.id, s.reason.as_deref().unwrap_or("failed")))
        .collect()
}

/// Write `json` to `path` through a temporary file and a rename, so a reader never sees half.
fn write_json(path: &Path, json: &str) -> Result<()> {
    // A temporary name nobody can have planted (a random part) created with create_new, so
    // this never writes through a symlink someone else made.
    let tmp = path.with_file_name(format!(
        ".{}.{}.tmp",
        path.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "record.json".into()),
        record::random::new_id()
    ));
    let result = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&tmp)
        .and_then(|mut f| std::io::Write::write_all(&mut f, format!("{json}\n").as_bytes()))
        .and_then(|_| std::fs::rename(&tmp, path))
        .with_context(|| format!("--json {}: cannot write", path.display()));
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// The six columns of the newest measured record for this machine and this storage.
fn newest_columns(
    results_dir: &Path,
    runner: &record::Runner,
    storage: &record::Storage,
    dir: &Path,
) -> Option<(Vec<TestResult>, String)> {
    let here = std::fs::canonicalize(dir).ok();
    let mut best: Option<(String, Vec<TestResult>, String)> = None;
    for entry in std::fs::read_dir(results_dir).ok()?.flatten() {
        let path = entry.path();
        if path.extension().and_then(|e| e.to_str()) != Some("json") {
            continue;
        }
        let Ok(text) = record::input::read_text(&path) else {
            continue;
        };
        // Records of another schema are for other readers: not an error here.
        let Ok(rec) = serde_json::from_str::<Record>(&text) else {
            continue;
        };
        // A run under --like caps measured another disk's figures, not this one's.
        if rec.schema != record::SCHEMA
            || rec.is_imported()
            || rec.settings.like.is_some()
            || rec.runner.label != runner.label
            || (rec.runner.hostname.is_some() && rec.runner.hostname != runner.hostname)
        {
            continue;
        }
        let same_storage = if !storage.mount_source.is_empty()
            && !rec.storage.mount_source.is_empty()
        {
            rec.storage.mount_source == storage.mount_source && rec.storage.fstype == storage.fstype
        } else {
            here.is_some() && std::fs::canonicalize(&rec.storage.path).ok() == here
        };
        let has_seq = rec
            .tests
            .iter()
            .any(|t| t.id == "seq-read" || t.id == "seq-write");
        if !same_storage || !has_seq {
            continue;
        }
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if best.as_ref().is_none_or(|(at, _, _)| rec.finished_at > *at) {
            best = Some((rec.finished_at.clone(), rec.tests, name));
        }
    }
    best.map(|(_, tests, name)| (tests, name))
}

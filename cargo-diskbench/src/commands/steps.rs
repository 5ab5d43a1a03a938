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

use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use engine::record::{self, Record, StepStatus, TestResult};
use engine::steps::{self, StepsOptions};

#[derive(clap::Args, Debug)]
pub struct StepsArgs {
    /// Where the steps work (default: $GITHUB_WORKSPACE, else the current dir); a scratch
    /// folder is made there and removed after each step
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Comma-separated step ids: cargo-build, docker-build, sqlite or a user step's id
    #[arg(long, value_name = "IDS", value_delimiter = ',')]
    pub only: Option<Vec<String>>,
    /// The project's Cargo.toml (default: found from the current directory)
    #[arg(long, value_name = "PATH")]
    pub manifest_path: Option<PathBuf>,
    /// Stop at the first failed step
    #[arg(long)]
    pub fail_fast: bool,
    /// Also write the record here ('-' = stdout)
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// The results folder: its newest record for this machine and disk gives the verdicts
    /// their disk figures (default: diskbench-results)
    #[arg(long, value_name = "DIR")]
    pub results: Option<PathBuf>,
    /// Write the record into the results folder too
    #[arg(long)]
    pub save: bool,
    /// How this machine is named in the record (default: detected)
    #[arg(long, value_name = "TEXT")]
    pub label: Option<String>,
    /// Modules of the generated crate built when there is no Cargo project
    #[arg(long, value_name = "N", default_value_t = steps::cargo_build::DEFAULT_MODULES)]
    pub crate_modules: u32,
    /// Size of the built-in docker build context, MiB
    #[arg(long, value_name = "MIB", default_value_t = steps::docker_build::DEFAULT_CONTEXT_MIB)]
    pub docker_context_mib: u32,
    /// Transactions of the sqlite step
    #[arg(long, value_name = "N", default_value_t = steps::DEFAULT_SQLITE_TRANSACTIONS)]
    pub sqlite_transactions: u32,
    /// Run the sqlite workload on this database in this process (the step's child)
    #[arg(long, value_name = "DB", hide = true)]
    pub internal_sqlite_worker: Option<PathBuf>,
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
    if !dir.is_dir() {
        return Err(engine::error::usage(format!(
            "--dir {}: not an existing directory",
            dir.display()
        )));
    }
    let results_dir = args
        .results
        .clone()
        .unwrap_or_else(|| engine::results::DEFAULT_RESULTS_DIR.into());
    // Every destination before the first step runs.
    if let Some(json) = args.json.as_deref().filter(|j| *j != Path::new("-")) {
        super::destination::file("--json", json)?;
    }
    if args.save {
        super::destination::folder("--results", &results_dir)?;
    }
    let started_at = engine::time::now_rfc3339();
    let (runner, storage) = engine::machine::detect(&dir, args.label.as_deref());
    let columns = newest_columns(&results_dir, &runner, &storage, &dir);
    let opts = StepsOptions {
        dir: dir.clone(),
        manifest_path: args.manifest_path.clone(),
        only: args.only.clone(),
        fail_fast: args.fail_fast,
        generated_modules: Some(args.crate_modules),
        docker_context_mib: Some(args.docker_context_mib),
        sqlite_transactions: Some(args.sqlite_transactions),
        vcpus: Some(runner.vcpus).filter(|v| *v > 0),
        columns_source: columns.as_ref().map(|(_, f)| format!("the record {f}")),
        ..Default::default()
    };
    let tests: &[TestResult] = columns.as_ref().map(|(t, _)| t.as_slice()).unwrap_or(&[]);
    let results = steps::run_steps(&opts, tests, &mut |line| eprintln!("{line} ..."))?;

    let to_stdout = args.json.as_deref() == Some(Path::new("-"));
    print_summary(&results, to_stdout)?;

    if args.json.is_some() || args.save {
        let cpu_reference = steps::cpu_reference();
        let record = Record {
            schema: record::SCHEMA.into(),
            id: engine::results::new_id(),
            source: "measured".into(),
            source_file: None,
            started_at,
            finished_at: engine::time::now_rfc3339(),
            tool: Default::default(),
            runner,
            storage,
            settings: record::Settings {
                suite: "steps".into(),
                engine: "none".into(),
                repeat: 1,
                ..Default::default()
            },
            tests: Vec::new(),
            steps: results.clone(),
            cpu_reference: Some(cpu_reference),
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
        };
        if let Some(path) = &args.json {
            let json = serde_json::to_string_pretty(&record)?;
            if to_stdout {
                println!("{json}");
            } else {
                write_json(path, &json)?;
            }
        }
        // A run that exits non-zero leaves no record in the results folder.
        if args.save && failed_steps(&results, args.fail_fast).is_empty() {
            let path = engine::results::write_record(&results_dir, &record)?;
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
    let tmp = path.with_file_name(format!(
        ".{}.tmp",
        path.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "record.json".into())
    ));
    let result = std::fs::write(&tmp, format!("{json}\n"))
        .and_then(|_| std::fs::rename(&tmp, path))
        .with_context(|| format!("--json {}: cannot write", path.display()));
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

fn print_summary(results: &[record::StepResult], to_stderr: bool) -> Result<()> {
    let mut text = String::new();
    for s in results {
        let status = match s.status {
            StepStatus::Ok => "ok",
            StepStatus::Failed => "FAILED",
            StepStatus::Skipped => "skipped",
        };
        text.push_str(&format!(
            "{:<14} {:<8} {:>8.2} s  {:<9} {}\n",
            s.id,
            status,
            s.wall_s,
            s.bound.as_str(),
            s.why
        ));
        if let Some(tail) = s.output_tail.as_deref().filter(|t| !t.is_empty()) {
            for line in tail.lines() {
                text.push_str(&format!("    | {line}\n"));
            }
        }
    }
    if to_stderr {
        eprint!("{text}");
    } else {
        std::io::stdout().write_all(text.as_bytes())?;
    }
    Ok(())
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
        let Ok(text) = engine::input::read_text(&path) else {
            continue;
        };
        // Records of another schema are for other readers: not an error here.
        let Ok(rec) = serde_json::from_str::<Record>(&text) else {
            continue;
        };
        if rec.schema != record::SCHEMA
            || rec.is_imported()
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

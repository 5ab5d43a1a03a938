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
use engine::session::{Session, SessionOptions, StepsOptions, Work};

use super::args::WhatIfArgs;
use super::outputs;

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
    #[arg(long, value_name = "N", default_value_t = engine::session::DEFAULT_MODULES)]
    pub crate_modules: u32,
    /// Size of the built-in docker build context, MiB
    #[arg(long, value_name = "MIB", default_value_t = engine::session::DEFAULT_CONTEXT_MIB)]
    pub docker_context_mib: u32,
    /// Transactions of the sqlite step
    #[arg(long, value_name = "N", default_value_t = engine::session::DEFAULT_TRANSACTIONS)]
    pub sqlite_transactions: u32,
    /// Rerun each step on memory and with the disk under --dir capped (needs root)
    #[command(flatten)]
    pub what_if: WhatIfArgs,
    /// Run the sqlite workload on this database in this process (the step's child)
    #[arg(long, value_name = "DB", hide = true)]
    pub internal_sqlite_worker: Option<PathBuf>,
}

pub fn exec(args: StepsArgs) -> Result<()> {
    if let Some(db) = &args.internal_sqlite_worker {
        return engine::session::sqlite_worker(db, args.sqlite_transactions.max(1));
    }
    let dir = match super::args::dir_or_workspace(args.dir.as_deref()) {
        Some(dir) => dir,
        None => std::env::current_dir().context("cannot read the current directory")?,
    };
    let session = Session::new(SessionOptions {
        dir: dir.clone(),
        label: args.label.clone(),
        results: args.results.clone(),
        what_if: args.what_if.request(),
        work: Work::Steps(Box::new(StepsOptions {
            dir,
            manifest_path: args.manifest_path.clone(),
            only: args.only.clone(),
            fail_fast: args.fail_fast,
            generated_modules: Some(args.crate_modules),
            docker_context_mib: Some(args.docker_context_mib),
            sqlite_transactions: Some(args.sqlite_transactions),
            ..Default::default()
        })),
    })?;
    // Every destination before the first step runs.
    let to_stdout = args.json.as_deref() == Some(Path::new("-"));
    match args.json.as_deref() {
        Some(_) if to_stdout => super::destination::stdout("--json")?,
        Some(json) => super::destination::file("--json", json)?,
        None => {}
    }
    if args.save {
        super::destination::folder("--results", &args.results)?;
    }
    let mut view = crate::output::RunView::new(false, Some(&args.results), true);
    let outcome = session.run(&mut |e| view.on(e));
    view.finish();
    let outcome = outcome?;
    let record = &outcome.record;
    crate::output::print(
        &crate::output::steps_table(&record.steps, Some(record.runner.vcpus)),
        to_stdout,
    );
    match args.json.as_deref() {
        Some(_) if to_stdout => outputs::record_to_stdout(record)?,
        Some(path) => outputs::write_json(path, &serde_json::to_string_pretty(record)?)?,
        None => {}
    }
    // A run that exits non-zero leaves no record in the results folder.
    if args.save && outcome.failed_steps.is_empty() {
        let path = record::results::write_record(&args.results, record)?;
        eprintln!("record written to {}", path.display());
    }
    if !outcome.failed_steps.is_empty() {
        anyhow::bail!("step failed: {}", outcome.failed_steps.join(", "));
    }
    Ok(())
}

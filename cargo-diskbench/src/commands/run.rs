//! `cargo diskbench run`: the standard suite, the build steps, the record, the site.

use std::path::{Path, PathBuf};

use anyhow::Result;
use engine::session::{DEFAULT_REPEAT, DEFAULT_SIZE, Session, SessionOptions, SuiteRequest, Work};
use record::size::tool_size_text;

use super::args::{WhatIfArgs, provisioned, ramp_secs, repeat_passes, runtime_secs};
use super::outputs::{self, RecordArgs};
use crate::output;

#[derive(clap::Args, Debug)]
pub struct RunArgs {
    /// Where the test files go (a private folder is made under it and removed); without it,
    /// $GITHUB_WORKSPACE, else the current folder
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Comma-separated column ids: seq-read, seq-write, rand-read, rand-write, qd1-read,
    /// sync-write
    #[arg(long, value_name = "IDS")]
    pub only: Option<String>,
    /// Measured seconds per column, 0.1 to 3600: a fixed window. Without it each column
    /// measures until its figure is steady by the stated rule, at most 20 s
    #[arg(long, value_name = "SECS", allow_negative_numbers = true, value_parser = runtime_secs)]
    pub runtime: Option<f64>,
    /// Unmeasured warm-up seconds before each column, 0 to 3600. Without it 2 s, which the
    /// steady window ends from 1 s on once the rate settles (a write column's new file
    /// permitting)
    #[arg(long, value_name = "SECS", allow_negative_numbers = true, value_parser = ramp_secs)]
    pub ramp: Option<f64>,
    /// Each job's test file, e.g. 512M, 2G; the four-job columns use four such files
    #[arg(long, value_name = "BYTES", default_value_t = tool_size_text(DEFAULT_SIZE))]
    pub size: String,
    /// Named settings instead of --runtime, --ramp and --size: `published` runs the published
    /// figures' harness exactly (20 s after a 2 s ramp, 2 GiB files, 1 GiB per job for the
    /// four-job columns; about three times the default's time)
    #[arg(long, value_name = "published", conflicts_with_all = ["runtime", "ramp", "size"])]
    pub preset: Option<String>,
    /// Run the suite N times; each column reports its median run and the spread
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = repeat_passes,
          default_value_t = DEFAULT_REPEAT)]
    pub repeat: u32,
    /// I/O backend: auto (on a disk psync at depth 1, libaio for synced writes, io_uring
    /// deeper; on tmpfs libaio),
    /// io_uring, libaio or psync
    #[arg(long, value_name = "auto|io_uring|libaio|psync")]
    pub engine: Option<String>,
    /// Fixed random offsets (the same every run); without it, different every run
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// Skip the real build steps
    #[arg(long)]
    pub no_steps: bool,
    /// Where the record and the report go
    #[command(flatten)]
    pub record: Box<RecordArgs>,
    /// What-if experiments on the steps, and --like for the columns
    #[command(flatten)]
    pub what_if: WhatIfArgs,
    /// No progress output (the table and errors are still printed)
    #[arg(long, short)]
    pub quiet: bool,
    /// The volume's provisioned limit, IOPS,BANDWIDTH (e.g. 3000,125M): figures as a share of it
    #[arg(long, value_name = "IOPS,BANDWIDTH", value_parser = provisioned)]
    pub provisioned: Option<record::Provisioned>,
}

pub fn exec(args: RunArgs) -> Result<()> {
    let session = Session::new(SessionOptions {
        dir: super::args::dir_or_workspace(args.dir.as_deref()).unwrap_or_else(|| ".".into()),
        label: args.record.label.clone(),
        results: args.record.results.clone(),
        what_if: args.what_if.request(),
        work: Work::Suite(SuiteRequest {
            only: args.only.clone(),
            runtime_s: args.runtime,
            ramp_s: args.ramp,
            size: args.size.clone(),
            preset: args.preset.clone(),
            repeat: args.repeat,
            engine: args.engine.clone(),
            seed: args.seed,
            steps: !args.no_steps,
            provisioned: args.provisioned.clone(),
        }),
    })?;
    let json_to_stdout = args.record.json_to_stdout();
    outputs::check_destinations(&args.record)?;
    // Read before anything is measured: a baseline that is not there is a usage error now,
    // not after minutes of measuring.
    let baseline = match &args.record.baseline {
        Some(dir) => {
            let (side, skipped) = site_gen::history::Side::load("--baseline", dir)?;
            for (path, why) in skipped {
                eprintln!("warning: --baseline: {} left out: {why}", path.display());
            }
            Some(side)
        }
        None => None,
    };
    let steps_results = (!args.no_steps).then_some(args.record.results.as_path());
    let mut view = output::RunView::new(args.quiet, steps_results, false);
    let outcome = session.run(&mut |e| view.on(e));
    view.finish();
    let record = outcome?.record;

    output::print(&output::table(&record.tests), json_to_stdout);
    output::print(&output::provisioned_shares(&record), json_to_stdout);
    if let Some(like) = &record.settings.like {
        output::print(&output::like_table(like), json_to_stdout);
    }
    output::print(
        &output::steps_table(&record.steps, Some(record.runner.vcpus)),
        json_to_stdout,
    );
    let comparison = baseline.as_ref().map(|b| {
        let c = site_gen::history::against_baseline(b, &record);
        let text = match &c {
            Some(c) => site_gen::compare_report::text(std::slice::from_ref(c)),
            None => format!(
                "\nbaseline: no earlier record of {} in {}; nothing to compare with yet\n",
                record.runner.label,
                args.record
                    .baseline
                    .as_deref()
                    .unwrap_or(Path::new(""))
                    .display()
            ),
        };
        output::print(&text, json_to_stdout);
        c
    });
    outputs::keep(&args.record, &record, comparison.as_ref(), args.quiet)
}

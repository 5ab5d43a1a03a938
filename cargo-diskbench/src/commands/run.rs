//! `cargo diskbench run`: the standard suite, the build steps, the record, the site.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result};
use engine::job::EngineChoice;
use engine::measured::{Measured, MeasuredRun};
use engine::steady_window::SteadyRule;
use engine::suite::{
    DEFAULT_RAMP_S, DEFAULT_REPEAT, DEFAULT_RUNTIME_S, DEFAULT_SIZE, MAX_REPEAT, Preset,
    SuiteOptions,
};
use record::error::usage;
use record::results::{DEFAULT_RESULTS_DIR, DEFAULT_SITE_DIR};
use record::size::{SizeDialect, parse_size, tool_size_text};
use record::{ColumnId, Record};

use crate::output::{self, SuiteProgress};

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
    pub what_if: crate::commands::steps::WhatIfArgs,
    /// No progress output (the table and errors are still printed)
    #[arg(long, short)]
    pub quiet: bool,
    /// The volume's provisioned limit, IOPS,BANDWIDTH (e.g. 3000,125M): figures as a share of it
    #[arg(long, value_name = "IOPS,BANDWIDTH", value_parser = provisioned)]
    pub provisioned: Option<record::Provisioned>,
}

/// Where the record and report go (boxed: keeps the command enum small).
#[derive(clap::Args, Debug)]
pub struct RecordArgs {
    /// How this machine is named in the report; without it, as detected
    #[arg(long, value_name = "TEXT")]
    pub label: Option<String>,
    /// The folder of accumulated records
    #[arg(long, value_name = "DIR", default_value = DEFAULT_RESULTS_DIR)]
    pub results: PathBuf,
    /// Also write this run's record here ('-' = stdout)
    #[arg(long, value_name = "FILE")]
    pub json: Option<String>,
    /// Also write the Markdown summary here (it is appended to $GITHUB_STEP_SUMMARY when set)
    #[arg(long, value_name = "FILE")]
    pub markdown: Option<PathBuf>,
    /// Do not render the report site after the run
    #[arg(long)]
    pub no_site: bool,
    /// Compare this run with this runner's earlier records in DIR (a results folder, or one
    /// record file): printed after the table and added to the Markdown summary
    #[arg(long, value_name = "DIR")]
    pub baseline: Option<PathBuf>,
    /// Where the site is rendered
    #[arg(long, value_name = "DIR", default_value = DEFAULT_SITE_DIR)]
    pub site_out: PathBuf,
}

/// The shortest measured time per column: below it a column may complete no I/O at all.
pub const MIN_RUNTIME_S: f64 = 0.1;
pub const MAX_SECS: f64 = 3600.0;

/// `--provisioned IOPS,BANDWIDTH` (run and device), for clap.
pub fn provisioned(text: &str) -> std::result::Result<record::Provisioned, String> {
    record::Provisioned::parse("--provisioned", text)
}

/// `--runtime`: a number of seconds in MIN_RUNTIME_S..=MAX_SECS, named in the error.
pub fn runtime_secs(text: &str) -> std::result::Result<f64, String> {
    seconds_in("--runtime", text, MIN_RUNTIME_S)
}

/// `--repeat`: a number of passes in 1..=MAX_REPEAT. clap's own u32 parser answered a figure
/// beyond u32 with "not in 0..=4294967295", a range that suggests 0 and 4 billion are fine.
pub fn repeat_passes(text: &str) -> std::result::Result<u32, String> {
    text.trim()
        .parse::<u32>()
        .ok()
        .filter(|n| (1..=MAX_REPEAT).contains(n))
        .ok_or_else(|| format!("--repeat {text}: use 1 to {MAX_REPEAT} passes"))
}

/// `--ramp`: a number of seconds in 0..=MAX_SECS.
pub fn ramp_secs(text: &str) -> std::result::Result<f64, String> {
    seconds_in("--ramp", text, 0.0)
}

fn seconds_in(option: &str, text: &str, min: f64) -> std::result::Result<f64, String> {
    text.trim()
        .parse::<f64>()
        .ok()
        .filter(|s| s.is_finite() && (min..=MAX_SECS).contains(s))
        .ok_or_else(|| format!("{option} {text}: use a number of seconds from {min} to {MAX_SECS}"))
}

/// Turn the options into the suite's options; every problem is a usage error naming the option.
pub fn suite_options(args: &RunArgs) -> Result<SuiteOptions> {
    let dir = match &args.dir {
        Some(d) => d.clone(),
        None => std::env::var_os("GITHUB_WORKSPACE")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(".")),
    };
    let only = match &args.only {
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
    let size = parse_size(&args.size, SizeDialect::Tool).ok_or_else(|| {
        usage(format!(
            "--size {}: not a size; use bytes or a number with K, M, G (e.g. 512M, 2G)",
            args.size
        ))
    })?;
    let engine = match &args.engine {
        None => EngineChoice::Auto,
        Some(e) => EngineChoice::parse(e).ok_or_else(|| {
            usage(format!(
                "--engine {e}: unknown engine; use auto, io_uring, libaio or psync"
            ))
        })?,
    };
    let preset = match &args.preset {
        None => None,
        Some(name) => Some(Preset::parse(name).ok_or_else(|| {
            usage(format!(
                "--preset {name}: unknown preset; use {}",
                Preset::NAMES.join(", ")
            ))
        })?),
    };
    let opts = SuiteOptions {
        dir,
        only,
        // Both checked by their parsers (runtime_secs, ramp_secs).
        runtime: Duration::from_secs_f64(args.runtime.unwrap_or(DEFAULT_RUNTIME_S as f64)),
        ramp: Duration::from_secs_f64(args.ramp.unwrap_or(DEFAULT_RAMP_S as f64)),
        size,
        engine,
        seed: args.seed,
        repeat: args.repeat,
        preset: None,
        // A window of its own asked for: fixed; otherwise the figure decides.
        steady: match (args.runtime, args.ramp) {
            (Some(_), _) => None,
            (None, None) => Some(SteadyRule::DEFAULT),
            // A ramp of the user's own: kept whole.
            (None, Some(ramp)) => Some(SteadyRule {
                min_ramp: Duration::from_secs_f64(ramp),
                ..SteadyRule::DEFAULT
            }),
        },
    };
    // clap refuses --preset beside --runtime, --ramp or --size.
    let opts = match preset {
        Some(p) => p.apply(opts),
        None => opts,
    };
    opts.validate()?;
    Ok(opts)
}

pub fn exec(args: RunArgs) -> Result<()> {
    let opts = suite_options(&args)?;
    // Before anything is touched (the sweep of killed runs below included).
    engine::steps::what_if::options::check_runs(
        args.what_if.what_if_repeat,
        args.what_if.what_if_budget_s,
    )
    .map_err(usage)?;
    if let Some(label) = &args.record.label
        && label.trim().is_empty()
    {
        return Err(usage("--label: must not be empty"));
    }
    let results_dir = args.record.results.clone();
    let json_to_stdout = args.record.json.as_deref() == Some("-");
    check_destinations(&args.record, &results_dir)?;
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
    super::unmount_killed_emulations();
    for stale in engine::testfile::stale_scratch_dirs(&opts.dir) {
        eprintln!(
            "warning: {} ({}) was left by a run that was killed ({}); no process owns it, \
             remove it with: rm -r '{}'",
            stale.path.display(),
            record::size::format_bytes(stale.bytes),
            stale.why,
            stale.path.display()
        );
    }

    engine::steps::what_if::preflight::sweep_killed_runs(Path::new(engine::cgroup::CGROUP_FS));
    if args.no_steps && args.what_if.what_if {
        return Err(usage(
            "--what-if experiments on the build steps, which --no-steps skips; drop one of them",
        ));
    }
    let what_if = if args.no_steps {
        None
    } else {
        crate::commands::steps::what_if_options(&args.what_if, &opts.dir, &results_dir)?
    };
    let like = match &args.what_if.like {
        Some(label) => Some(engine::like::resolve(label, &opts.dir, &results_dir)?),
        None => None,
    };
    // The build steps are chosen and checked now, not after the columns: a bad config is
    // refused and a step that cannot run here (no cargo, no docker engine) is known skipped
    // before minutes of measuring.
    let step_plan = if args.no_steps {
        None
    } else {
        Some(engine::steps::StepPlan::new(
            &engine::steps::StepsOptions {
                dir: opts.dir.clone(),
                what_if,
                ..Default::default()
            },
        )?)
    };

    let mut run = MeasuredRun::start(&opts.dir, args.record.label.as_deref());
    if let Some(l) = &like {
        // The figures are this disk under caps, not this disk: keep them apart on the site.
        run.runner.variant = Some(format!("capped like {}", l.label));
    }
    let mut progress = SuiteProgress::new(args.quiet);
    if !args.no_steps {
        progress = progress.with_steps(output::StepEstimates::from_results(
            &results_dir,
            &run.runner.label,
        ));
    }
    let (tests, emulation) = match &like {
        None => (
            engine::suite::run_suite(&opts, &mut |p| progress.event(p))?,
            None,
        ),
        Some(l) => {
            // This process (all its threads: the I/O is submitted from them, and the latency
            // emulation's server does its I/O from them) runs the columns inside the capped
            // cgroup, and goes back when the group closes, also on error.
            let mut group = engine::steps::what_if::caps::capped_group(&l.target, &l.caps)?;
            group.adopt(std::process::id())?;
            let tests = engine::like::run_suite(&opts, l, &mut |p| progress.event(p));
            group.close().map_err(anyhow::Error::msg)?;
            tests?
        }
    };
    let like_settings = like.map(|l| engine::like::settings(l, &tests, emulation));

    let steps = match &step_plan {
        None => Vec::new(),
        Some(plan) => {
            // Columns measured under --like caps are not this disk's: the inferred verdicts
            // then rest on each step's own signals.
            let columns = if like_settings.is_some() {
                &[][..]
            } else {
                &tests[..]
            };
            plan.run(columns, &mut |e| progress.step(&e))?
        }
    };
    progress.finish();
    if record::cancel::requested() {
        return Err(record::error::interrupted());
    }
    let mut settings = opts.settings(like_settings);
    settings.provisioned = args.provisioned.clone();
    let record = run.finish(Measured {
        settings,
        tests,
        steps,
        cpu_reference: Some(engine::steps::cpu_reference()),
        notes: Vec::new(),
    })?;

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
        match &c {
            Some(c) => output::print(
                &site_gen::compare_report::text(std::slice::from_ref(c)),
                json_to_stdout,
            ),
            None => output::print(
                &format!(
                    "\nbaseline: no earlier record of {} in {}; nothing to compare with yet\n",
                    record.runner.label,
                    args.record
                        .baseline
                        .as_deref()
                        .unwrap_or(Path::new(""))
                        .display()
                ),
                json_to_stdout,
            ),
        }
        c
    });
    let path = record::results::write_record(&results_dir, &record)?;
    // A run that exits non-zero leaves no record: if anything after this fails (or Ctrl-C
    // arrives), the record just written is removed again.
    let mut json_written = false;
    let rest = write_outputs(
        &args,
        &record,
        comparison.as_ref(),
        &path,
        &results_dir,
        json_to_stdout,
        &mut json_written,
    )
    .and_then(|()| record::cancel::check());
    if let Err(err) = rest {
        let _ = std::fs::remove_file(&path);
        // The --json copy of a record that is no longer kept goes too (only if this run wrote
        // it: a file there from before a failed site render is the user's).
        if let Some(copy) = args
            .record
            .json
            .as_deref()
            .filter(|j| *j != "-" && json_written)
        {
            let _ = std::fs::remove_file(copy);
        }
        return Err(err.context(format!("no record kept ({} removed)", path.display())));
    }
    Ok(())
}

/// Every destination, checked before the first test file is made.
fn check_destinations(record: &RecordArgs, results_dir: &Path) -> Result<()> {
    use super::destination;
    destination::folder("--results", results_dir)?;
    match record.json.as_deref() {
        Some("-") => destination::stdout("--json")?,
        Some(json) => destination::file("--json", Path::new(json))?,
        None => {}
    }
    if let Some(md) = &record.markdown {
        destination::file("--markdown", md)?;
    }
    destination::step_summary()?;
    if !record.no_site {
        destination::site_out("--site-out", results_dir, &record.site_out)?;
    }
    Ok(())
}

/// What follows the record: the site, the --json copy, the Markdown summary. Sets
/// `json_written` once the --json file holds this record (so a later failure removes it).
fn write_outputs(
    args: &RunArgs,
    record: &Record,
    comparison: Option<&Option<site_gen::history::Comparison>>,
    path: &Path,
    results_dir: &Path,
    json_to_stdout: bool,
    json_written: &mut bool,
) -> Result<()> {
    output::print(&format!("record: {}\n", path.display()), json_to_stdout);
    // The site first (the output most likely to fail), then the copies: a failure leaves as
    // little as possible behind, and $GITHUB_STEP_SUMMARY, which cannot be taken back, last.
    if !args.record.no_site {
        let out = args.record.site_out.clone();
        site_gen::build_site(&site_gen::SiteOptions {
            results: results_dir.to_path_buf(),
            out: out.clone(),
            commands: super::site::command_docs(),
            ..Default::default()
        })
        .with_context(|| format!("the site could not be rendered into {}", out.display()))?;
        output::print(&format!("site: {}\n", out.display()), json_to_stdout);
    }
    if let Some(target) = &args.record.json {
        let json = serde_json::to_string_pretty(record).context("cannot serialise the record")?;
        if target == "-" {
            let mut out = std::io::stdout().lock();
            writeln!(out, "{json}")
                .and_then(|()| out.flush())
                .context("--json -: cannot write the record to stdout")?;
        } else {
            *json_written = true;
            std::fs::write(target, format!("{json}\n"))
                .with_context(|| format!("--json {target}: cannot write the record"))?;
        }
    }
    let mut text = site_gen::job_summary::markdown(record);
    // With --baseline, how the runner moved since its last run follows the run's own summary.
    match comparison {
        Some(Some(c)) => text.push_str(&site_gen::compare_report::markdown(
            std::slice::from_ref(c),
            &[],
        )),
        Some(None) => text.push_str(&site_gen::compare_report::markdown(
            &[],
            std::slice::from_ref(&record.runner.label),
        )),
        None => {}
    }
    write_markdown(&text, args.record.markdown.as_deref())?;
    let site_out = (!args.record.no_site).then(|| args.record.site_out.clone());
    if !args.quiet {
        eprint!(
            "{}",
            output::left_in_project(
                results_dir,
                site_out.as_deref(),
                &std::env::current_dir().unwrap_or_default()
            )
        );
    }
    Ok(())
}

/// The Markdown summary into `--markdown FILE` and appended to $GITHUB_STEP_SUMMARY.
fn write_markdown(text: &str, file: Option<&Path>) -> Result<()> {
    if let Some(path) = file {
        std::fs::write(path, text)
            .with_context(|| format!("--markdown {}: cannot write", path.display()))?;
    }
    if let Some(summary) = std::env::var_os("GITHUB_STEP_SUMMARY").filter(|v| !v.is_empty()) {
        let mut f =
            super::destination::open_step_summary(Path::new(&summary)).with_context(|| {
                format!(
                    "cannot open $GITHUB_STEP_SUMMARY ({})",
                    Path::new(&summary).display()
                )
            })?;
        f.write_all(text.as_bytes())
            .context("cannot append to $GITHUB_STEP_SUMMARY")?;
    }
    Ok(())
}

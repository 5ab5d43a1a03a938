//! `cargo diskbench run`: the standard suite, the build steps, the record, the site.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result};
use engine::error::usage;
use engine::job::{EngineChoice, parse_size};
use engine::record::{ColumnId, Record, SCHEMA, Settings, Tool};
use engine::results::{DEFAULT_RESULTS_DIR, DEFAULT_SITE_DIR};
use engine::suite::{DEFAULT_RAMP_S, DEFAULT_RUNTIME_S, SuiteOptions};

use crate::output::{self, SuiteProgress};

#[derive(clap::Args, Debug, Default)]
pub struct RunArgs {
    /// Where the test files go (a private folder is made under it and removed) [default:
    /// $GITHUB_WORKSPACE, else the current folder]
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Comma-separated column ids: seq-read, seq-write, rand-read, rand-write, qd1-read,
    /// sync-write
    #[arg(long, value_name = "IDS")]
    pub only: Option<String>,
    /// Measured seconds per column [default: 5]
    #[arg(long, value_name = "SECS")]
    pub runtime: Option<f64>,
    /// Unmeasured warm-up seconds before each column [default: 1]
    #[arg(long, value_name = "SECS")]
    pub ramp: Option<f64>,
    /// Test file size, e.g. 512M, 2G [default: 1G]
    #[arg(long, value_name = "BYTES")]
    pub size: Option<String>,
    /// Run the suite N times; each column reports its median run and the spread
    #[arg(long, value_name = "N")]
    pub repeat: Option<u32>,
    /// I/O backend: auto (psync at depth 1, io_uring deeper), io_uring or psync
    #[arg(long, value_name = "auto|io_uring|psync")]
    pub engine: Option<String>,
    /// Fixed random offsets (the same every run); default: different every run
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// Skip the real build steps
    #[arg(long)]
    pub no_steps: bool,
    /// Where the record and the report go
    #[command(flatten)]
    pub record: Box<RecordArgs>,
    /// No progress output (the table and errors are still printed)
    #[arg(long, short)]
    pub quiet: bool,
}

/// Where the record and report go (boxed: keeps the command enum small).
#[derive(clap::Args, Debug, Default)]
pub struct RecordArgs {
    /// How this machine is named in the report [default: detected]
    #[arg(long, value_name = "TEXT")]
    pub label: Option<String>,
    /// The folder of accumulated records [default: diskbench-results]
    #[arg(long, value_name = "DIR")]
    pub results: Option<PathBuf>,
    /// Also write this run's record here ('-' = stdout)
    #[arg(long, value_name = "FILE")]
    pub json: Option<String>,
    /// Also write the Markdown summary here (it is appended to $GITHUB_STEP_SUMMARY when set)
    #[arg(long, value_name = "FILE")]
    pub markdown: Option<PathBuf>,
    /// Do not render the report site after the run
    #[arg(long)]
    pub no_site: bool,
    /// Where the site is rendered [default: diskbench-site]
    #[arg(long, value_name = "DIR")]
    pub site_out: Option<PathBuf>,
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
    let secs = |name: &str, v: Option<f64>, default: u64| -> Result<Duration> {
        match v {
            None => Ok(Duration::from_secs(default)),
            Some(s) if s.is_finite() && (0.0..=3600.0).contains(&s) => {
                Ok(Duration::from_secs_f64(s))
            }
            Some(s) => Err(usage(format!(
                "--{name} {s}: use a number of seconds from 0 to 3600"
            ))),
        }
    };
    let size = match &args.size {
        None => engine::suite::DEFAULT_SIZE,
        Some(text) => parse_size(text).ok_or_else(|| {
            usage(format!(
                "--size {text}: not a size; use bytes or a number with K, M, G (e.g. 512M, 2G)"
            ))
        })?,
    };
    let engine = match &args.engine {
        None => EngineChoice::Auto,
        Some(e) => EngineChoice::parse(e).ok_or_else(|| {
            usage(format!(
                "--engine {e}: unknown engine; use auto, io_uring or psync"
            ))
        })?,
    };
    let opts = SuiteOptions {
        dir,
        only,
        runtime: secs("runtime", args.runtime, DEFAULT_RUNTIME_S)?,
        ramp: secs("ramp", args.ramp, DEFAULT_RAMP_S)?,
        size,
        engine,
        seed: args.seed,
        repeat: args.repeat.unwrap_or(1),
    };
    opts.validate()?;
    Ok(opts)
}

pub fn exec(args: RunArgs) -> Result<()> {
    let opts = suite_options(&args)?;
    if let Some(label) = &args.record.label
        && label.trim().is_empty()
    {
        return Err(usage("--label: must not be empty"));
    }
    let results_dir = args
        .record
        .results
        .clone()
        .unwrap_or_else(|| PathBuf::from(DEFAULT_RESULTS_DIR));
    let json_to_stdout = args.record.json.as_deref() == Some("-");

    let started_at = engine::time::now_rfc3339();
    let (runner, storage) = engine::machine::detect(&opts.dir, args.record.label.as_deref());
    let mut progress = SuiteProgress::new(args.quiet);
    let tests = engine::suite::run_suite(&opts, &mut |p| progress.event(p))?;

    let steps = if args.no_steps {
        Vec::new()
    } else {
        let steps_opts = engine::steps::StepsOptions {
            dir: opts.dir.clone(),
            ..Default::default()
        };
        engine::steps::run_steps(&steps_opts, &tests, &mut |line| progress.line(line))?
    };
    progress.finish();
    if engine::cancel::requested() {
        return Err(engine::error::interrupted());
    }

    let mut notes = Vec::new();
    for t in &tests {
        if let Some(f) = &t.engine.fallback
            && !notes.contains(f)
        {
            notes.push(f.clone());
        }
    }
    let mut record = Record {
        schema: SCHEMA.into(),
        id: engine::results::new_id(),
        source: "measured".into(),
        source_file: None,
        started_at,
        finished_at: engine::time::now_rfc3339(),
        tool: Tool::default(),
        runner,
        storage,
        settings: Settings {
            suite: "standard".into(),
            runtime_s: opts.runtime.as_secs_f64(),
            ramp_s: opts.ramp.as_secs_f64(),
            size: opts.size,
            engine: opts.engine.as_str().into(),
            seed: opts.seed,
            repeat: opts.repeat,
            command_line: None,
        },
        tests,
        steps,
        cpu_reference: Some(engine::steps::cpu_reference()),
        notes,
    };
    // Figures the storage cannot deliver are marked as cache-served (engine::ceiling).
    engine::ceiling::mark_record(&mut record);

    output::print(&output::table(&record.tests), json_to_stdout);
    output::print(&output::steps_table(&record.steps), json_to_stdout);
    let path = engine::results::write_record(&results_dir, &record)?;
    output::print(&format!("record: {}\n", path.display()), json_to_stdout);
    if let Some(target) = &args.record.json {
        let json = serde_json::to_string_pretty(&record).context("cannot serialise the record")?;
        if target == "-" {
            let mut out = std::io::stdout().lock();
            writeln!(out, "{json}").context("cannot write the record to stdout")?;
        } else {
            std::fs::write(target, format!("{json}\n"))
                .with_context(|| format!("--json {target}: cannot write the record"))?;
        }
    }
    write_markdown(&record, args.record.markdown.as_deref())?;
    if !args.record.no_site {
        let out = args
            .record
            .site_out
            .clone()
            .unwrap_or_else(|| PathBuf::from(DEFAULT_SITE_DIR));
        site_gen::build_site(&site_gen::SiteOptions {
            results: results_dir.clone(),
            out: out.clone(),
            ..Default::default()
        })
        .with_context(|| {
            format!(
                "the record is saved in {}, but the site could not be rendered into {}",
                path.display(),
                out.display()
            )
        })?;
        output::print(&format!("site: {}\n", out.display()), json_to_stdout);
    }
    Ok(())
}

/// The Markdown summary into `--markdown FILE` and appended to $GITHUB_STEP_SUMMARY.
fn write_markdown(record: &Record, file: Option<&Path>) -> Result<()> {
    let text = site_gen::summary::markdown(record);
    if let Some(path) = file {
        std::fs::write(path, &text)
            .with_context(|| format!("--markdown {}: cannot write", path.display()))?;
    }
    if let Some(summary) = std::env::var_os("GITHUB_STEP_SUMMARY").filter(|v| !v.is_empty()) {
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&summary)
            .with_context(|| {
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

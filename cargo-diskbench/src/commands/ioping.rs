//! `cargo diskbench ioping DIR|FILE`: ioping's latency probe with ioping's options, defaults,
//! request lines and summary (see `engine::tools::ioping`), and a record with `--results DIR`.

use std::io::Write as _;
use std::path::PathBuf;

use anyhow::Result;
use engine::session::measured::{Measured, MeasuredRun};
use engine::tools::ioping::{IopingOptions, Probe, parse_count, parse_size, parse_time};

#[derive(clap::Args, Debug)]
pub struct IopingArgs {
    /// A folder (a temporary file is made in it) or a file (only read)
    #[arg(value_name = "DIR|FILE")]
    pub target: PathBuf,
    /// Stop after COUNT requests (not given: never, as in ioping)
    #[arg(short = 'c', long = "count", value_name = "COUNT")]
    pub count: Option<String>,
    /// Time between requests (not given: 1 s, as in ioping)
    #[arg(short = 'i', long = "interval", value_name = "TIME")]
    pub interval: Option<String>,
    /// Request size (not given: 4k, as in ioping)
    #[arg(short = 's', long = "size", value_name = "SIZE")]
    pub size: Option<String>,
    /// Working set (not given: 1m in a folder, the whole file, as in ioping)
    #[arg(short = 'S', long = "work-size", value_name = "SIZE")]
    pub work_size: Option<String>,
    /// Stop after TIME (not given: never, as in ioping)
    #[arg(short = 'w', long = "deadline", value_name = "TIME")]
    pub deadline: Option<String>,
    /// Direct I/O, O_DIRECT (not given: off, buffered with the cache dropped, as in ioping)
    #[arg(short = 'D', long = "direct")]
    pub direct: bool,
    /// Cached I/O: keep the page cache, no fsync after writes (off unless given)
    #[arg(short = 'C', long = "cached")]
    pub cached: bool,
    /// Write requests (a folder only; reads unless given)
    #[arg(short = 'W', long = "write")]
    pub write: bool,
    /// Rate test: no pause, 3 s, a 64m working set, quiet (unless -i, -w, -S say otherwise)
    #[arg(short = 'R', long = "rate")]
    pub rate: bool,
    /// No per-request lines, only the summary
    #[arg(short = 'q', long = "quiet")]
    pub quiet: bool,
    /// Not ioping's: also write the record into this results folder
    #[arg(long, value_name = "DIR")]
    pub results: Option<PathBuf>,
}

pub fn options(a: &IopingArgs) -> Result<IopingOptions> {
    let interval_ns = match &a.interval {
        Some(t) => parse_time("-i", t)?,
        None if a.rate => 0,
        None => 1_000_000_000,
    };
    let deadline_ns = match &a.deadline {
        Some(t) => Some(parse_time("-w", t)?),
        None if a.rate => Some(3_000_000_000),
        None => None,
    };
    let work_size = match &a.work_size {
        Some(s) => Some(parse_size("-S", s)?),
        None if a.rate && a.target.is_dir() => Some(64 << 20),
        None => None,
    };
    Ok(IopingOptions {
        target: a.target.clone(),
        count: match &a.count {
            Some(c) => parse_count("-c", c)?,
            None => 0,
        },
        interval_ns,
        size: match &a.size {
            Some(s) => parse_size("-s", s)?,
            None => 4096,
        },
        work_size,
        deadline_ns,
        direct: a.direct,
        cached: a.cached,
        write: a.write,
        quiet: a.quiet || a.rate,
    })
}

pub fn exec(args: IopingArgs) -> Result<()> {
    let opts = options(&args)?;
    if let Some(dir) = &args.results {
        super::destination::folder("--results", dir)?;
    }
    let dir = if opts.target.is_dir() {
        opts.target.clone()
    } else {
        opts.target
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("."))
    };
    let measured_run = MeasuredRun::start(&std::fs::canonicalize(&dir).unwrap_or(dir), None);
    let probe = Probe::open(opts)?;
    let quiet = probe.options().quiet;
    let (totals, hist, cpu) = probe.run(&mut |r| {
        if !quiet {
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "{}", probe.line(r));
            let _ = out.flush();
        }
    })?;
    print!("{}", probe.summary(&totals));
    record::cancel::check()?;
    if let Some(dir) = &args.results {
        let test = probe.test_result(&totals, &hist, cpu);
        let command_line: Vec<String> = std::env::args()
            .skip_while(|a| a != "ioping")
            .skip(1)
            .collect();
        let record = measured_run.finish(Measured {
            settings: record::Settings {
                suite: "ioping".into(),
                runtime_s: test.elapsed_s,
                size: test.job.size,
                engine: "psync".into(),
                repeat: 1,
                command_line: Some(command_line),
                ..Default::default()
            },
            tests: vec![test],
            ..Default::default()
        })?;
        let path = record::results::write_record(dir, &record)?;
        eprintln!("record written to {}", path.display());
    }
    Ok(())
}

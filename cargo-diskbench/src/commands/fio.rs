//! `cargo diskbench fio`: one job given in fio's own option syntax, reported the way fio
//! reports it (or as the diskbench record with `--output-format=json`).

use std::ffi::OsString;
use std::fmt::Write as _;
use std::io::Write as _;

use anyhow::{Context, Result};
use engine::session::{Event, Progress, Session, SessionOptions, Work};
use engine::tools::fio::{FioInvocation, OutputFormat};
use engine::tools::fio_jobfile::{FileJob, FioCommand, JobFileRun};
use record::{DirectionStats, Record, TestResult};

#[derive(clap::Args, Debug)]
#[command(disable_help_flag = true)]
pub struct FioArgs {
    /// fio options, e.g. --name=test --rw=randread --bs=4k --size=1G (--help lists them)
    #[arg(
        trailing_var_arg = true,
        allow_hyphen_values = true,
        num_args = 0..,
        value_name = "FIO OPTIONS"
    )]
    pub args: Vec<OsString>,
}

const USAGE: &str = "usage: cargo diskbench fio --name=NAME --size=SIZE [fio options]\n\
       cargo diskbench fio FILE.fio [FILE...] [fio options]\n\
Runs one job given in fio's option syntax, or fio job files ([global], one section per job,\n\
stonewall/new_group, include; options beside a file are defaults the file overrides),\n\
on cargo-diskbench's own engine.\n\
Report: fio-style text, or the diskbench record with --output-format=json.\n\
The record is written to a results folder only with --results DIR.\n\
Supported options (anything else is refused by name):\n";

pub fn exec(args: FioArgs) -> Result<()> {
    let args: Vec<String> = args
        .args
        .into_iter()
        .map(|a| {
            a.into_string().map_err(|a| {
                record::error::usage(format!("{a:?}: fio options must be valid UTF-8"))
            })
        })
        .collect::<Result<_>>()?;
    if args.is_empty() || args.iter().any(|a| a == "--help" || a == "-h") {
        print!("{USAGE}{}", engine::tools::fio::supported_options_help());
        return Ok(());
    }
    let cmd = engine::tools::fio_jobfile::parse_command(&args)?;
    let (output, results_dir) = match &cmd {
        FioCommand::Options(inv) => (&inv.output, &inv.results_dir),
        FioCommand::JobFiles(jf) => (&jf.output, &jf.results_dir),
    };
    check_destinations(output.as_deref(), results_dir.as_deref())?;
    match &cmd {
        FioCommand::Options(inv) => inv.notes.iter().for_each(|n| eprintln!("note: {n}")),
        FioCommand::JobFiles(jf) => {
            for j in &jf.jobs {
                for note in &j.inv.notes {
                    eprintln!("note: [{}] {note}", j.inv.job.name);
                }
            }
        }
    }
    let record = run(&cmd)?;
    let report = match &cmd {
        FioCommand::Options(inv) if inv.output_format == OutputFormat::Json => json(&record)?,
        FioCommand::JobFiles(jf) if jf.output_format == OutputFormat::Json => json(&record)?,
        FioCommand::Options(inv) => render_normal(inv, &record),
        FioCommand::JobFiles(jf) => render_job_files(jf, &record),
    };
    match output {
        Some(path) => std::fs::write(path, report)
            .with_context(|| format!("--output {}: cannot write the report", path.display()))?,
        None => {
            let mut out = std::io::stdout().lock();
            out.write_all(report.as_bytes())
                .and_then(|_| out.flush())
                .context("cannot write the report to stdout")?;
        }
    }
    // The record comes last: a run that exits non-zero (the report could not be written,
    // Ctrl-C) leaves none.
    record::cancel::check()?;
    if let Some(dir) = &results_dir {
        let path = record::results::write_record(dir, &record)?;
        eprintln!("record written to {}", path.display());
    }
    Ok(())
}

fn json(record: &Record) -> Result<String> {
    let mut s = serde_json::to_string_pretty(record).context("cannot serialise the record")?;
    s.push('\n');
    Ok(s)
}

/// Check the places the report and record go before anything runs.
fn check_destinations(
    output: Option<&std::path::Path>,
    results: Option<&std::path::Path>,
) -> Result<()> {
    if let Some(path) = output {
        check_output_path(path)?;
        super::destination::file("--output", path)?;
    }
    if let Some(dir) = results {
        super::destination::folder("--results", dir)?;
    }
    Ok(())
}

/// Run the command's job(s) in a session, saying once per job that its file is laid out (the
/// line fio users expect).
fn run(cmd: &FioCommand) -> Result<Record> {
    let mut said_layout: Vec<String> = Vec::new();
    let session = Session::new(SessionOptions {
        dir: ".".into(),
        label: None,
        results: ".".into(),
        what_if: Default::default(),
        work: Work::Fio(cmd.clone()),
    })?;
    let outcome = session.run(&mut |e| match e {
        Event::Suite(Progress::Layout {
            name, total_bytes, ..
        }) if !said_layout.iter().any(|n| n == name) => {
            said_layout.push(name.to_string());
            eprintln!(
                "{name}: laying out {} of test data (unmeasured)...",
                size_iec(*total_bytes as f64)
            );
        }
        Event::Said(said) => crate::output::say(&said),
        _ => {}
    })?;
    Ok(outcome.record)
}

/// The report fio prints for job files: each job of a group, then the group's status.
pub fn render_job_files(jf: &JobFileRun, record: &Record) -> String {
    let mut out = String::new();
    let mut groups: Vec<u32> = jf.jobs.iter().map(|j| j.group).collect();
    groups.dedup();
    for g in groups {
        let members: Vec<(&FileJob, &TestResult)> = jf
            .jobs
            .iter()
            .filter(|j| j.group == g)
            .filter_map(|j| {
                record
                    .tests
                    .iter()
                    .find(|t| t.id == j.inv.job.name)
                    .map(|t| (j, t))
            })
            .collect();
        for (j, t) in &members {
            render_job(&mut out, &j.inv.ioengine, t, g, record);
        }
        let tests: Vec<&TestResult> = members.iter().map(|(_, t)| *t).collect();
        render_group_status(&mut out, g, &tests);
        out.push('\n');
    }
    out
}

/// Refuse an `--output` that cannot be written before the job runs, not after.
fn check_output_path(path: &std::path::Path) -> Result<()> {
    if path.is_dir() {
        return Err(record::error::usage(format!(
            "--output {}: is a folder; give a file name",
            path.display()
        )));
    }
    let parent = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(std::path::Path::new("."));
    if !parent.is_dir() {
        return Err(record::error::usage(format!(
            "--output {}: the folder {} does not exist; create it or choose another file",
            path.display(),
            parent.display()
        )));
    }
    Ok(())
}

/// fio's default percentile list.
const PERCENTILES: [f64; 17] = [
    1.0, 5.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 95.0, 99.0, 99.5, 99.9, 99.95,
    99.99,
];

/// The report fio would print for one group-reported job, from the record.
pub fn render_normal(inv: &FioInvocation, record: &Record) -> String {
    let mut out = String::new();
    for t in &record.tests {
        render_job(&mut out, &inv.ioengine, t, 0, record);
    }
    let tests: Vec<&TestResult> = record.tests.iter().collect();
    render_group_status(&mut out, 0, &tests);
    out
}

fn render_job(out: &mut String, ioengine: &str, t: &TestResult, group: u32, record: &Record) {
    let j = &t.job;
    let _ = writeln!(
        out,
        "{}: (groupid={group}, jobs={}): err= 0: rw={}{}, bs={}, ioengine={} (ran: {}), iodepth={}, \
         direct={}, sync={}",
        t.id,
        j.numjobs,
        j.rw,
        j.rwmixread
            .map(|r| format!(" (rwmixread={r})"))
            .unwrap_or_default(),
        size_iec(j.bs as f64),
        ioengine,
        t.engine.used,
        j.iodepth,
        u8::from(t.engine.direct),
        j.sync,
    );
    if let Some(fb) = &t.engine.fallback {
        let _ = writeln!(out, "  fallback: {fb}");
    }
    if j.direct && !t.engine.direct {
        let _ = writeln!(
            out,
            "  note: O_DIRECT was refused here; the I/O was buffered"
        );
    }
    let run_ms = t.elapsed_s * 1000.0;
    for (label, d) in [("read", &t.read), ("write", &t.write)] {
        if let Some(d) = d {
            render_direction(out, label, d, run_ms);
        }
    }
    render_sync(out, t);
    let total_cpu_pct = |s: f64| {
        if t.elapsed_s > 0.0 {
            s / t.elapsed_s * 100.0
        } else {
            0.0
        }
    };
    let ios: u64 = [&t.read, &t.write]
        .iter()
        .filter_map(|d| d.as_ref().map(|d| d.ios))
        .sum();
    let cpu_us_per_io = if ios > 0 {
        (t.cpu.user_s + t.cpu.sys_s) * 1e6 / ios as f64
    } else {
        0.0
    };
    let _ = writeln!(
        out,
        "  cpu          : usr={:.2}%, sys={:.2}% ({:.3} s + {:.3} s, {:.2} us CPU per I/O)",
        total_cpu_pct(t.cpu.user_s),
        total_cpu_pct(t.cpu.sys_s),
        t.cpu.user_s,
        t.cpu.sys_s,
        cpu_us_per_io
    );
    if let Some(limit) = &record.settings.provisioned
        && let Some(share) = record::provisioned::share(limit, t)
    {
        let _ = writeln!(out, "  provisioned  : {}", share.describe());
    }
    for note in &t.notes {
        let _ = writeln!(out, "  note: {note}");
    }
}

/// fio's "Run status group N (all jobs):" block: per direction, the group's bytes over its
/// longest job's time (fio's aggregate bandwidth), its bytes, and its jobs' shortest and
/// longest run.
fn render_group_status(out: &mut String, group: u32, tests: &[&TestResult]) {
    let _ = writeln!(out, "\nRun status group {group} (all jobs):");
    for (label, pick) in [
        (
            "READ",
            (|t: &TestResult| t.read.clone()) as fn(&TestResult) -> Option<DirectionStats>,
        ),
        ("WRITE", |t: &TestResult| t.write.clone()),
    ] {
        let with: Vec<(f64, DirectionStats)> = tests
            .iter()
            .filter_map(|t| pick(t).map(|d| (t.elapsed_s * 1000.0, d)))
            .collect();
        if with.is_empty() {
            continue;
        }
        let bytes: u64 = with.iter().map(|(_, d)| d.bytes).sum();
        let min_ms = with.iter().map(|(ms, _)| *ms).fold(f64::INFINITY, f64::min);
        let max_ms = with.iter().map(|(ms, _)| *ms).fold(0.0, f64::max);
        let bytes_s = if with.len() == 1 {
            with[0].1.mib_s * 1_048_576.0
        } else if max_ms > 0.0 {
            bytes as f64 / (max_ms / 1000.0)
        } else {
            0.0
        };
        let _ = writeln!(
            out,
            "{label:>7}: bw={} ({}), io={} ({}), run={:.0}-{:.0}msec",
            rate_iec(bytes_s),
            rate_si(bytes_s),
            size_iec(bytes as f64),
            size_si(bytes as f64),
            min_ms,
            max_ms
        );
    }
}

fn render_direction(out: &mut String, label: &str, d: &DirectionStats, run_ms: f64) {
    let bytes_s = d.mib_s * 1_048_576.0;
    let _ = writeln!(
        out,
        "  {label}: IOPS={}, BW={} ({})({}/{:.0}msec)",
        count_si(d.iops),
        rate_iec(bytes_s),
        rate_si(bytes_s),
        size_iec(d.bytes as f64),
        run_ms
    );
    // Ours is issue to completion, fio's `lat` (not `clat`, which leaves out submission).
    if let Some(l) = &d.lat_ns {
        latency_line(out, "lat", l);
    }
    let values = d
        .hist
        .as_deref()
        .and_then(|h| engine::tools::fio::percentiles_from_hist(h, &PERCENTILES).ok());
    match values {
        Some(values) => percentile_block(out, "lat", &values),
        None => {
            if let Some(l) = &d.lat_ns {
                let unit = LatUnit::for_ns(l.p50.unwrap_or(0));
                let _ = writeln!(
                    out,
                    "    lat percentiles ({}): 50.00th=[{}], 90.00th=[{}], 99.00th=[{}], 99.90th=[{}]",
                    unit.name(),
                    opt_lat(l.p50, unit),
                    opt_lat(l.p90, unit),
                    opt_lat(l.p99, unit),
                    opt_lat(l.p99_9, unit)
                );
            }
        }
    }
}

/// fio's percentile block: "    NAME percentiles (usec):" and rows of four.
fn percentile_block(out: &mut String, name: &str, values: &[u64]) {
    let unit = LatUnit::for_ns(values[6]);
    let _ = writeln!(out, "    {name} percentiles ({}):", unit.name());
    let width = values
        .iter()
        .map(|v| format!("{:.0}", unit.scale(*v)).len())
        .max()
        .unwrap_or(1)
        .max(5);
    for (row, chunk) in PERCENTILES
        .iter()
        .zip(values)
        .collect::<Vec<_>>()
        .chunks(4)
        .enumerate()
    {
        let cells: Vec<String> = chunk
            .iter()
            .map(|(q, v)| format!("{q:>5.2}th=[{:>width$.0}]", unit.scale(**v)))
            .collect();
        let last = (row + 1) * 4 >= PERCENTILES.len();
        let _ = writeln!(
            out,
            "     | {}{}",
            cells.join(", "),
            if last { "" } else { "," }
        );
    }
}

/// fio's block for the syncs of a `--fdatasync`/`--fsync` job: the sync call alone, which
/// guides for etcd and databases tell readers to check, besides the write + sync latency
/// above. Only where the backend timed the sync alone (psync, libaio); else a note says why not.
fn render_sync(out: &mut String, t: &TestResult) {
    if t.job.sync.starts_with("fdatasync") || t.job.sync.starts_with("fsync") {
        let Some(w) = &t.write else { return };
        let Some(l) = &w.sync_lat_ns else {
            let _ = writeln!(
                out,
                "  note: the {} is linked to its write on io_uring and not timed alone; \
                 --ioengine=sync (psync) or libaio times it separately",
                t.job.sync.split(':').next().unwrap_or("sync")
            );
            return;
        };
        let _ = writeln!(out, "  fsync/fdatasync/sync_file_range:");
        latency_line(out, "sync", l);
        if let Some(values) = w
            .sync_hist
            .as_deref()
            .and_then(|h| engine::tools::fio::percentiles_from_hist(h, &PERCENTILES).ok())
        {
            percentile_block(out, "sync", &values);
        }
    }
}

#[derive(Clone, Copy)]
enum LatUnit {
    Nsec,
    Usec,
    Msec,
}

impl LatUnit {
    /// fio's choice: the unit that keeps the typical value readable.
    fn for_ns(typical_ns: u64) -> LatUnit {
        if typical_ns < 10_000 {
            LatUnit::Nsec
        } else if typical_ns < 10_000_000 {
            LatUnit::Usec
        } else {
            LatUnit::Msec
        }
    }
    fn name(self) -> &'static str {
        match self {
            LatUnit::Nsec => "nsec",
            LatUnit::Usec => "usec",
            LatUnit::Msec => "msec",
        }
    }
    fn scale(self, ns: u64) -> f64 {
        match self {
            LatUnit::Nsec => ns as f64,
            LatUnit::Usec => ns as f64 / 1e3,
            LatUnit::Msec => ns as f64 / 1e6,
        }
    }
}

/// fio's one-line latency summary, `    lat (usec): min=.., max=.., avg=..` (or `sync`), in the
/// unit fio would pick for this latency.
fn latency_line(out: &mut String, what: &str, l: &record::Latency) {
    let unit = LatUnit::for_ns(l.p50.or(l.mean).unwrap_or(0));
    let _ = writeln!(
        out,
        "    {what} ({}): min={}, max={}, avg={}",
        unit.name(),
        opt_lat(l.min, unit),
        opt_lat(l.max, unit),
        l.mean
            .map(|m| format!("{:.2}", unit.scale(m)))
            .unwrap_or_else(|| "-".into())
    );
}

fn opt_lat(v: Option<u64>, unit: LatUnit) -> String {
    v.map(|v| format!("{:.0}", unit.scale(v)))
        .unwrap_or_else(|| "-".into())
}

/// `2345`, `23.4k`, `234k`, `1.23M`: fio's IOPS style.
fn count_si(n: f64) -> String {
    if n < 10_000.0 {
        format!("{n:.0}")
    } else if n < 100_000.0 {
        format!("{:.1}k", n / 1e3)
    } else if n < 10_000_000.0 {
        format!("{:.0}k", n / 1e3)
    } else {
        format!("{:.2}M", n / 1e6)
    }
}

fn scaled(v: f64, base: f64, units: &[&str]) -> String {
    let mut v = v;
    let mut i = 0;
    while v >= base * 10.0 && i + 1 < units.len() {
        v /= base;
        i += 1;
    }
    if v >= 100.0 || v.fract() == 0.0 {
        format!("{v:.0}{}", units[i])
    } else {
        format!("{v:.1}{}", units[i])
    }
}

fn size_iec(bytes: f64) -> String {
    scaled(bytes, 1024.0, &["B", "KiB", "MiB", "GiB", "TiB"])
}

fn size_si(bytes: f64) -> String {
    scaled(bytes, 1000.0, &["B", "kB", "MB", "GB", "TB"])
}

fn rate_iec(bytes_s: f64) -> String {
    format!("{}/s", size_iec(bytes_s))
}

fn rate_si(bytes_s: f64) -> String {
    format!("{}/s", size_si(bytes_s))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_are_scaled_like_fio() {
        assert_eq!(count_si(2345.4), "2345");
        assert_eq!(count_si(23_456.0), "23.5k");
        assert_eq!(count_si(234_567.0), "235k");
        assert_eq!(size_iec(4096.0), "4096B");
        assert_eq!(size_iec(16384.0), "16KiB");
        assert_eq!(size_iec(1_073_741_824.0), "1024MiB");
        assert_eq!(rate_iec(19.3 * 1_048_576.0), "19.3MiB/s");
        assert_eq!(size_si(1_073_741_824.0), "1074MB");
    }
}

//! fio's command-line syntax, read into a [`JobSpec`].
//!
//! `cargo diskbench fio` exists so the fio lines people paste from blog posts run unchanged.
//! That only helps if an option we accept means what it means to fio, so every option is
//! declared once in [`OPTIONS`] with what we do with it; anything else is refused by name
//! (never silently ignored), and a value fio would read differently from what the user
//! probably meant (fio's default `kb_base=1024` reads `4KiB` as 4000 bytes) is refused too.
//!
//! fio semantics kept here: `size` is per job; with `--filename` every job works over the
//! whole shared file; with `--directory` (or neither) each job gets its own file; without
//! `--time_based` each job moves `size` bytes once, capped by `--runtime`; `randrepeat`
//! defaults to on, so offsets repeat across runs unless `--randrepeat=0`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Result;

use crate::files::prep::{Fallocate, PrepOptions};
use crate::job::{EngineChoice, JobSpec, Layout, Pattern, SyncMode, Termination};
use record::error::usage;

/// fio's seed when `randrepeat` is on and no `randseed` is given (`FIO_RANDSEED`, 0x89).
pub const FIO_DEFAULT_RANDSEED: u64 = 0x89;

/// How an option takes its value, as fio's getopt table declares it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Takes {
    /// `--opt=value` or `--opt value`.
    Value,
    /// A boolean or set-only option: `--opt` alone means 1; a value only with `=`.
    Flag,
}

/// One supported option: its fio name, other names fio accepts, and what we do with it.
pub(crate) struct OptionDef {
    pub(crate) name: &'static str,
    aliases: &'static [&'static str],
    pub(crate) takes: Takes,
    help: &'static str,
}

const fn opt(name: &'static str, takes: Takes, help: &'static str) -> OptionDef {
    OptionDef {
        name,
        aliases: &[],
        takes,
        help,
    }
}

/// Every option `cargo diskbench fio` accepts. Everything else is refused by name.
const OPTIONS: &[OptionDef] = &[
    opt("name", Takes::Value, "job name (required, one job per run)"),
    OptionDef {
        name: "rw",
        aliases: &["readwrite"],
        takes: Takes::Value,
        help: "read, write, randread, randwrite, randrw, rw/readwrite",
    },
    opt("bs", Takes::Value, "block size, e.g. 4k, 1m (k = 1024)"),
    opt("size", Takes::Value, "bytes each job works over, e.g. 1G"),
    opt(
        "numjobs",
        Takes::Value,
        "number of jobs (processes; threads with --thread)",
    ),
    opt(
        "iodepth",
        Takes::Value,
        "I/Os in flight per job (async engines)",
    ),
    opt(
        "ioengine",
        Takes::Value,
        "psync, sync, pvsync, pvsync2 (our psync); libaio (our libaio); posixaio, io_uring (our io_uring)",
    ),
    opt("direct", Takes::Flag, "O_DIRECT (0/1)"),
    opt(
        "sync",
        Takes::Value,
        "none/0, sync/1 (O_SYNC), dsync (O_DSYNC)",
    ),
    opt("fsync", Takes::Value, "fsync after every N writes"),
    opt("fdatasync", Takes::Value, "fdatasync after every N writes"),
    opt("rwmixread", Takes::Value, "percent reads in rw/randrw"),
    opt("rwmixwrite", Takes::Value, "percent writes in rw/randrw"),
    opt("runtime", Takes::Value, "seconds (or 500ms, 2m, ...)"),
    opt(
        "time_based",
        Takes::Flag,
        "run for --runtime, wrapping the file",
    ),
    opt(
        "ramp_time",
        Takes::Value,
        "unmeasured warm-up (with --time_based)",
    ),
    opt("filename", Takes::Value, "one file shared by all jobs"),
    opt(
        "directory",
        Takes::Value,
        "folder for per-job files <name>.<job>",
    ),
    opt(
        "randrepeat",
        Takes::Flag,
        "same offsets every run (fio's default: 1)",
    ),
    opt("randseed", Takes::Value, "seed for random offsets"),
    opt(
        "fallocate",
        Takes::Value,
        "how a new file is allocated: native (default), posix, keep, truncate, none",
    ),
    opt(
        "overwrite",
        Takes::Flag,
        "write jobs: lay the file out with data first (default 0: a new allocated file)",
    ),
    opt(
        "create_on_open",
        Takes::Flag,
        "create the file when the job opens it; nothing laid out or allocated",
    ),
    opt(
        "pre_read",
        Takes::Flag,
        "read the files once before the job (fills the page cache when buffered)",
    ),
    opt(
        "gtod_reduce",
        Takes::Flag,
        "accepted, no effect: every I/O is always timed",
    ),
    opt(
        "group_reporting",
        Takes::Flag,
        "accepted, no effect: jobs are always reported as one group",
    ),
    opt(
        "thread",
        Takes::Flag,
        "run the jobs as threads of one process (default: a process per job, as fio)",
    ),
    opt("output-format", Takes::Value, "normal or json (the record)"),
    opt(
        "output",
        Takes::Value,
        "write the report to FILE instead of stdout",
    ),
    opt(
        "results",
        Takes::Value,
        "not fio: also write the record into this results folder",
    ),
    opt(
        "provisioned",
        Takes::Value,
        "not fio: the volume's limit IOPS,BANDWIDTH (e.g. 3000,125M); figures shown as a share of it",
    ),
    opt(
        "invalidate",
        Takes::Flag,
        "drop the files' cached pages before the job (fio's default: 1)",
    ),
];

pub(crate) fn find_option(name: &str) -> Option<&'static OptionDef> {
    OPTIONS
        .iter()
        .find(|o| o.name == name || o.aliases.contains(&name))
}

/// The supported options, one per line with their help, for `--help` and error messages.
pub fn supported_options_help() -> String {
    let mut out = String::new();
    for o in OPTIONS {
        let mut names = format!("--{}", o.name);
        for a in o.aliases {
            names.push_str(&format!(", --{a}"));
        }
        out.push_str(&format!("  {names:<22} {}\n", o.help));
    }
    out
}

/// The canonical names of the supported options.
pub(crate) fn option_names() -> Vec<&'static str> {
    OPTIONS.iter().map(|o| o.name).collect()
}

fn supported_names() -> String {
    OPTIONS
        .iter()
        .map(|o| format!("--{}", o.name))
        .collect::<Vec<_>>()
        .join(" ")
}

/// `--output-format`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutputFormat {
    /// fio's human-readable report.
    Normal,
    /// The diskbench record as JSON.
    Json,
}

/// A parsed `cargo diskbench fio` command line.
#[derive(Clone, Debug, PartialEq)]
pub struct FioInvocation {
    pub job: JobSpec,
    pub output_format: OutputFormat,
    /// `--output FILE`: the report goes there instead of stdout.
    pub output: Option<PathBuf>,
    /// `--results DIR` (ours): the record is also written there. No record file otherwise:
    /// fio users do not expect files to appear in their current directory.
    pub results_dir: Option<PathBuf>,
    /// Options accepted with no or reduced effect, said out loud (printed and recorded).
    pub notes: Vec<String>,
    /// The arguments as given, for the record's `settings.command_line`.
    pub command_line: Vec<String>,
    /// The `--ioengine` asked for (fio's name), for the report.
    pub ioengine: String,
    /// The file(s) existed before the run (with `--filename`); fio leaves its files in place.
    pub filename_given: bool,
    /// How the files are prepared: `--fallocate`, `--overwrite`, `--create_on_open`,
    /// `--pre_read` (fio's defaults when not given).
    pub prep: PrepOptions,
    /// `--provisioned IOPS,BANDWIDTH` (ours): the volume's limit, for the shares.
    pub provisioned: Option<record::Provisioned>,
}

impl FioInvocation {
    /// The record's `settings` of this invocation.
    pub fn settings(&self) -> record::Settings {
        let (runtime_s, ramp_s) = match self.job.termination {
            Termination::Time { runtime, ramp } => (runtime.as_secs_f64(), ramp.as_secs_f64()),
            Termination::Steady { rule, ramp, .. } => {
                (rule.max_window.as_secs_f64(), ramp.as_secs_f64())
            }
            Termination::Size { runtime_cap } => {
                (runtime_cap.map(|r| r.as_secs_f64()).unwrap_or(0.0), 0.0)
            }
        };
        record::Settings {
            suite: "fio".into(),
            runtime_s,
            ramp_s,
            size: self.job.size_per_job,
            engine: self.job.engine.as_str().into(),
            seed: self.job.seed,
            repeat: 1,
            command_line: Some(self.command_line.clone()),
            like: None,
            preset: None,
            window: None,
            provisioned: self.provisioned.clone(),
        }
    }
}

/// One `--opt[=value]` as given.
#[derive(Clone, Debug)]
pub(crate) struct Given {
    /// How the user spelled it (alias included), for messages.
    pub(crate) spelled: String,
    pub(crate) value: Option<String>,
}

/// Split the raw arguments into options by their canonical name and positional arguments
/// (job files, in order). Refuses unknown options, repeated options and a missing value.
pub(crate) fn split_args(args: &[String]) -> Result<(BTreeMap<&'static str, Given>, Vec<String>)> {
    let mut given: BTreeMap<&'static str, Given> = BTreeMap::new();
    let mut files = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let arg = &args[i];
        i += 1;
        // fio uses getopt_long_only: `-name=x` works as well as `--name=x`; getopt permutes,
        // so job files may come before, between or after the options.
        let body = match arg.strip_prefix("--").or_else(|| arg.strip_prefix('-')) {
            Some(b) if !b.is_empty() => b,
            _ => {
                files.push(arg.clone());
                continue;
            }
        };
        let (name, inline_value) = match body.split_once('=') {
            Some((n, v)) => (n, Some(v.to_string())),
            None => (body, None),
        };
        let Some(def) = find_option(name) else {
            return Err(usage(format!(
                "fio option --{name} is not supported by cargo diskbench fio; supported: {}",
                supported_names()
            )));
        };
        let value = match (def.takes, inline_value) {
            (_, Some(v)) => Some(v),
            (Takes::Flag, None) => None,
            (Takes::Value, None) => match args.get(i) {
                Some(v) => {
                    i += 1;
                    Some(v.clone())
                }
                None => return Err(usage(format!("--{name} needs a value, e.g. --{name}=..."))),
            },
        };
        if let Some(prev) = given.get(def.name) {
            return Err(usage(format!(
                "--{name} given more than once (also as --{}); give each option once",
                prev.spelled
            )));
        }
        given.insert(
            def.name,
            Given {
                spelled: name.to_string(),
                value,
            },
        );
    }
    Ok((given, files))
}

/// The value of a `Takes::Value` option (split_args guarantees it is there).
fn value<'a>(given: &'a BTreeMap<&'static str, Given>, name: &str) -> Option<(&'a str, &'a str)> {
    given
        .get(name)
        .map(|g| (g.spelled.as_str(), g.value.as_deref().unwrap_or("")))
}

/// A fio bool: `--opt` alone is 1; `--opt=0|1`.
fn flag(given: &BTreeMap<&'static str, Given>, name: &str) -> Result<Option<bool>> {
    let Some(g) = given.get(name) else {
        return Ok(None);
    };
    match g.value.as_deref() {
        None | Some("1") => Ok(Some(true)),
        Some("0") => Ok(Some(false)),
        Some(v) => Err(usage(format!(
            "--{}={v}: not a boolean; use --{} or --{}=0|1",
            g.spelled, g.spelled, g.spelled
        ))),
    }
}

/// A size in fio's default `kb_base=1024` syntax (`record::size`, fio's dialect): `4096`, `4k`,
/// `4kb`, `1m`, `2G`, `1t`. IEC spellings (`4KiB`) are refused: fio reads them as powers of
/// ten in that mode, which is rarely what is meant.
pub(crate) fn parse_size(option: &str, text: &str) -> Result<u64> {
    if record::size::is_iec(text) {
        return Err(usage(format!(
            "--{option}={text}: fio's default kb_base=1024 reads IEC prefixes as powers of \
             ten (4KiB = 4000 bytes), which is rarely what is meant; write 4k for 4096"
        )));
    }
    record::size::parse_size(text, record::size::SizeDialect::Fio).ok_or_else(|| {
        usage(format!(
            "--{option}={text}: not a size; use bytes or a k/m/g/t suffix (4k = 4096, 1m, 2g)"
        ))
    })
}

/// A time in fio's syntax: seconds by default; `us`/`usec`, `ms`/`msec`, `s`/`sec`,
/// `m`/`min`, `h`, `d` (case-insensitive).
pub(crate) fn parse_time(option: &str, text: &str) -> Result<Duration> {
    let bad = || {
        usage(format!(
            "--{option}={text}: not a time; use seconds or a unit (500ms, 30s, 2m, 1h)"
        ))
    };
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    if num.is_empty() {
        return Err(bad());
    }
    let n: f64 = num.parse().map_err(|_| bad())?;
    let unit_s = match unit.to_ascii_lowercase().as_str() {
        "us" | "usec" => 1e-6,
        "ms" | "msec" => 1e-3,
        "" | "s" | "sec" => 1.0,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        "d" => 86_400.0,
        _ => return Err(bad()),
    };
    Duration::try_from_secs_f64(n * unit_s).map_err(|_| bad())
}

fn parse_u32(option: &str, text: &str, what: &str) -> Result<u32> {
    text.trim()
        .parse::<u32>()
        .map_err(|_| usage(format!("--{option}={text}: not a whole number; {what}")))
}

/// Parse `args` (everything after `fio`) as one job given by options. Relative paths are kept
/// relative: they resolve against the current directory, as fio's do.
pub fn parse(args: &[String]) -> Result<FioInvocation> {
    let (given, files) = split_args(args)?;
    if let Some(f) = files.first() {
        return Err(usage(format!(
            "{f:?}: a job file; give it alone with its options (cargo diskbench fio FILE.fio)"
        )));
    }
    from_given(&given, args.to_vec())
}

/// The job that options given by canonical name describe. `command_line` goes to the record.
pub(crate) fn from_given(
    given: &BTreeMap<&'static str, Given>,
    command_line: Vec<String>,
) -> Result<FioInvocation> {
    let given = given.clone();
    let mut notes = Vec::new();

    let name = match value(&given, "name") {
        Some((_, n)) if !n.is_empty() => n.to_string(),
        Some(_) => return Err(usage("--name is empty; give the job a name")),
        None => {
            return Err(usage(
                "--name is required (fio needs it too: it starts the job); e.g. --name=test",
            ));
        }
    };
    if name.contains('/') {
        return Err(usage(format!(
            "--name={name}: a job name is used in file names and may not contain '/'"
        )));
    }

    // Read share first: the pattern needs it.
    let rwmixread = match value(&given, "rwmixread") {
        Some((o, v)) => Some(parse_pct(o, v)?),
        None => None,
    };
    let rwmixwrite = match value(&given, "rwmixwrite") {
        Some((o, v)) => Some(parse_pct(o, v)?),
        None => None,
    };
    let read_pct = match (rwmixread, rwmixwrite) {
        (Some(r), Some(w)) if r + w != 100 => {
            return Err(usage(format!(
                "--rwmixread={r} and --rwmixwrite={w} do not add up to 100; give one of them \
                 (fio would silently let the later one win)"
            )));
        }
        (Some(r), _) => r,
        (None, Some(w)) => 100 - w,
        (None, None) => 50,
    };

    let pattern = match value(&given, "rw") {
        None => Pattern::Read, // fio's default
        Some((o, v)) => match v {
            "read" => Pattern::Read,
            "write" => Pattern::Write,
            "randread" => Pattern::RandRead,
            "randwrite" => Pattern::RandWrite,
            "randrw" => Pattern::RandRw { read_pct },
            "rw" | "readwrite" => Pattern::SeqRw { read_pct },
            _ => {
                return Err(usage(format!(
                    "--{o}={v}: not supported; use read, write, randread, randwrite, randrw, \
                     rw or readwrite (no trim, no :N offset modifiers)"
                )));
            }
        },
    };
    let mixed = matches!(pattern, Pattern::RandRw { .. } | Pattern::SeqRw { .. });
    if !mixed && (rwmixread.is_some() || rwmixwrite.is_some()) {
        notes.push(format!(
            "--rwmixread/--rwmixwrite have no effect with --rw={} (as in fio)",
            pattern.fio_name()
        ));
    }

    let block_size = match value(&given, "bs") {
        Some((o, v)) => {
            if v.contains([',', '-', ':', '/']) {
                return Err(usage(format!(
                    "--{o}={v}: block size ranges and separate read/write sizes are not \
                     supported; give one size, e.g. --bs=4k"
                )));
            }
            parse_size(o, v)?
        }
        None => 4096, // fio's default
    };
    if block_size == 0 {
        return Err(usage("--bs=0: the block size must be at least 512 bytes"));
    }

    let numjobs = match value(&given, "numjobs") {
        Some((o, v)) => parse_u32(o, v, "give the number of jobs, at least 1")?,
        None => 1,
    };
    if numjobs == 0 {
        return Err(usage("--numjobs=0: at least one job is needed"));
    }
    let iodepth_asked = match value(&given, "iodepth") {
        Some((o, v)) => parse_u32(o, v, "give the I/Os in flight per job, at least 1")?,
        None => 1,
    };
    if iodepth_asked == 0 {
        return Err(usage(
            "--iodepth=0: at least one I/O must be in flight; use --iodepth=1",
        ));
    }

    let ioengine = value(&given, "ioengine")
        .map(|(_, v)| v.to_string())
        .unwrap_or_else(|| "psync".into()); // fio's default on Linux
    let (engine, sync_engine) = match ioengine.as_str() {
        "psync" | "sync" | "pvsync" | "pvsync2" => (EngineChoice::Psync, true),
        // libaio is run as itself: io_submit/io_getevents, the path fio takes (on tmpfs the
        // path is the figure). posixaio (glibc threads) runs as auto: io_uring at depth,
        // psync at depth 1, psync with a recorded reason where io_uring is refused.
        "libaio" => (EngineChoice::Libaio, false),
        "posixaio" => (EngineChoice::Auto, false),
        "io_uring" => (EngineChoice::IoUring, false),
        other => {
            return Err(usage(format!(
                "--ioengine={other}: not supported; use psync/sync/pvsync/pvsync2 (run as \
                 psync), libaio, io_uring, or posixaio (run as --engine auto)"
            )));
        }
    };
    if !matches!(ioengine.as_str(), "psync" | "io_uring" | "libaio") {
        // Say which backend this job really runs on, not the rule for every depth.
        let backend = if sync_engine {
            "psync backend (pread/pwrite)"
        } else {
            "backend --engine auto picks: psync at --iodepth=1 and io_uring deeper on a disk, \
             libaio on tmpfs (the record's engine.used says which)"
        };
        notes.push(format!(
            "--ioengine={ioengine} is not itself used: this job runs on our {backend}"
        ));
    }
    // A synchronous engine has one I/O in flight whatever iodepth says (fio ignores it too).
    let iodepth = if sync_engine { 1 } else { iodepth_asked };
    if sync_engine && iodepth_asked > 1 {
        notes.push(format!(
            "--iodepth={iodepth_asked} has no effect with --ioengine={ioengine}: a synchronous \
             engine has one I/O in flight per job (as in fio)"
        ));
    }

    let direct = flag(&given, "direct")?.unwrap_or(false);

    let o_sync = match value(&given, "sync") {
        None => None,
        Some((o, v)) => match v {
            "0" | "none" => None,
            "1" | "sync" => Some(SyncMode::OSync),
            "dsync" => Some(SyncMode::ODsync),
            _ => {
                return Err(usage(format!(
                    "--{o}={v}: use none/0, sync/1 (O_SYNC) or dsync (O_DSYNC)"
                )));
            }
        },
    };
    let every = |name: &str| -> Result<Option<u32>> {
        match value(&given, name) {
            None => Ok(None),
            Some((o, v)) => {
                let n = parse_u32(o, v, "give N to sync after every N writes, 0 for never")?;
                Ok((n > 0).then_some(n))
            }
        }
    };
    let fsync = every("fsync")?;
    let fdatasync = every("fdatasync")?;
    let sync = match (o_sync, fsync, fdatasync) {
        (None, None, None) => SyncMode::None,
        (Some(m), None, None) => m,
        (None, Some(n), None) => SyncMode::Fsync(n),
        (None, None, Some(n)) => SyncMode::Fdatasync(n),
        _ => {
            return Err(usage(
                "--sync, --fsync and --fdatasync: give only one of them (cargo diskbench fio \
                 measures one kind of durable write per job)",
            ));
        }
    };
    if sync != SyncMode::None && matches!(pattern, Pattern::Read | Pattern::RandRead) {
        notes.push(format!(
            "sync options have no effect with --rw={} (no writes)",
            pattern.fio_name()
        ));
    }

    let runtime = match value(&given, "runtime") {
        Some((o, v)) => Some(parse_time(o, v)?),
        None => None,
    };
    let ramp = match value(&given, "ramp_time") {
        Some((o, v)) => Some(parse_time(o, v)?),
        None => None,
    };
    let time_based = flag(&given, "time_based")?.unwrap_or(false);
    let termination = if time_based {
        let runtime = match runtime {
            Some(r) if !r.is_zero() => r,
            _ => {
                return Err(usage(
                    "--time_based needs --runtime greater than 0 (e.g. --runtime=30)",
                ));
            }
        };
        Termination::Time {
            runtime,
            ramp: ramp.unwrap_or_default(),
        }
    } else {
        if ramp.is_some_and(|r| !r.is_zero()) {
            return Err(usage(
                "--ramp_time is supported only with --time_based (a size-based job has no \
                 unmeasured warm-up here); add --time_based --runtime=N or drop --ramp_time",
            ));
        }
        // fio: runtime=0 means no cap.
        Termination::Size {
            runtime_cap: runtime.filter(|r| !r.is_zero()),
        }
    };

    let directory = value(&given, "directory").map(|(o, v)| (o.to_string(), PathBuf::from(v)));
    if let Some((o, d)) = &directory {
        if d.as_os_str().is_empty() {
            return Err(usage(format!("--{o} is empty; give a folder")));
        }
        if d.to_string_lossy().contains(':') {
            return Err(usage(format!(
                "--{o}={}: several folders (':') are not supported; give one",
                d.display()
            )));
        }
    }
    let filename = value(&given, "filename").map(|(o, v)| (o.to_string(), v.to_string()));
    let layout = match &filename {
        Some((o, f)) => {
            if f.is_empty() {
                return Err(usage(format!("--{o} is empty; give a file")));
            }
            if f.contains(':') {
                return Err(usage(format!(
                    "--{o}={f}: several files (':') are not supported; give one file"
                )));
            }
            let path = match &directory {
                Some((_, d)) => d.join(f),
                None => PathBuf::from(f),
            };
            refuse_non_regular(o, &path)?;
            // fio: every job of a --filename job covers the whole shared file.
            Layout::SharedFile {
                path,
                region_per_job: false,
            }
        }
        None => Layout::FilePerJob {
            dir: directory
                .as_ref()
                .map(|(_, d)| d.clone())
                .unwrap_or_else(|| PathBuf::from(".")),
            prefix: name.clone(),
        },
    };

    let size_per_job = match value(&given, "size") {
        Some((o, v)) => {
            if v.ends_with('%') {
                return Err(usage(format!(
                    "--{o}={v}: sizes in percent are not supported; give bytes, e.g. --size=1G"
                )));
            }
            parse_size(o, v)?
        }
        None => match &layout {
            // fio uses an existing file's size when none is given.
            Layout::SharedFile { path, .. } => match std::fs::metadata(path) {
                Ok(m) if m.is_file() && m.len() > 0 => m.len(),
                _ => {
                    return Err(usage(format!(
                        "--size is required when {} does not exist yet (fio needs it too)",
                        path.display()
                    )));
                }
            },
            Layout::FilePerJob { .. } => {
                return Err(usage(
                    "--size is required (fio needs it too when the files do not exist)",
                ));
            }
        },
    };
    if size_per_job < block_size {
        return Err(usage(format!(
            "--size={size_per_job} is smaller than --bs={block_size}; each job needs at least \
             one block"
        )));
    }

    let randseed = match value(&given, "randseed") {
        Some((o, v)) => Some(v.trim().parse::<u64>().map_err(|_| {
            usage(format!(
                "--{o}={v}: not a whole number; give a seed like 42"
            ))
        })?),
        None => None,
    };
    let randrepeat = flag(&given, "randrepeat")?.unwrap_or(true);
    let seed = match (randseed, randrepeat) {
        (Some(s), _) => Some(s),
        (None, true) => Some(FIO_DEFAULT_RANDSEED),
        (None, false) => None,
    };

    if flag(&given, "gtod_reduce")? == Some(true) {
        notes.push(
            "--gtod_reduce: accepted, no effect: every I/O is timed anyway and the timing \
             cost is part of what is measured"
                .into(),
        );
    }
    flag(&given, "group_reporting")?; // always one group; validate the value only
    let thread = flag(&given, "thread")?.unwrap_or(false);

    let output_format = match value(&given, "output-format") {
        None => OutputFormat::Normal,
        Some((_, "normal")) => OutputFormat::Normal,
        Some((_, "json")) => OutputFormat::Json,
        Some((o, v)) => {
            return Err(usage(format!(
                "--{o}={v}: not supported; use normal or json (json prints the diskbench \
                 record, not fio's JSON)"
            )));
        }
    };
    let provisioned = match value(&given, "provisioned") {
        None => None,
        Some((o, v)) => Some(record::Provisioned::parse(&format!("--{o}"), v).map_err(usage)?),
    };
    let output = path_value(&given, "output")?;
    let results_dir = path_value(&given, "results")?;

    let fallocate = match value(&given, "fallocate") {
        None => Fallocate::default(),
        Some((o, v)) => Fallocate::parse(v).ok_or_else(|| {
            usage(format!(
                "--{o}={v}: use native (fio's default), posix, keep, truncate or none (0/1 as in fio)"
            ))
        })?,
    };
    let prep = PrepOptions {
        fallocate,
        overwrite: flag(&given, "overwrite")?.unwrap_or(false),
        create_on_open: flag(&given, "create_on_open")?.unwrap_or(false),
        pre_read: flag(&given, "pre_read")?.unwrap_or(false),
        invalidate: flag(&given, "invalidate")?.unwrap_or(true),
    };
    if prep.pre_read && direct {
        notes.push(
            "--pre_read with --direct=1: the pre-read fills the page cache, which O_DIRECT \
             reads bypass (as in fio)"
                .into(),
        );
    }

    let job = JobSpec {
        name,
        pattern,
        block_size,
        iodepth,
        numjobs,
        size_per_job,
        layout,
        termination,
        direct,
        sync,
        engine,
        seed,
        thread,
    };
    Ok(FioInvocation {
        job,
        output_format,
        output,
        results_dir,
        notes,
        command_line,
        ioengine,
        filename_given: filename.is_some(),
        prep,
        provisioned,
    })
}

fn parse_pct(option: &str, text: &str) -> Result<u32> {
    let n = parse_u32(option, text, "give a percentage from 0 to 100")?;
    if n > 100 {
        return Err(usage(format!(
            "--{option}={n}: a percentage is at most 100"
        )));
    }
    Ok(n)
}

fn path_value(given: &BTreeMap<&'static str, Given>, name: &str) -> Result<Option<PathBuf>> {
    match value(given, name) {
        None => Ok(None),
        Some((o, "")) => Err(usage(format!("--{o} is empty; give a path"))),
        Some((_, v)) => Ok(Some(PathBuf::from(v))),
    }
}

/// fio happily runs on block devices; a benchmark that lays out test data must not.
fn refuse_non_regular(option: &str, path: &Path) -> Result<()> {
    match std::fs::metadata(path) {
        Ok(m) if !m.is_file() => Err(usage(format!(
            "--{option}={}: not a regular file (devices and folders are not supported; \
             give a file name, or a folder with --directory)",
            path.display()
        ))),
        _ => Ok(()),
    }
}

/// Latency percentiles (in ns) at `quantiles` (0..=100) from a record's base64 HDR histogram.
pub fn percentiles_from_hist(hist_b64: &str, quantiles: &[f64]) -> Result<Vec<u64>> {
    let hist = crate::job::hist::LatencyHist::decode(hist_b64)?;
    Ok(quantiles
        .iter()
        .map(|q| hist.histogram().value_at_quantile(q / 100.0))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(line: &str) -> Vec<String> {
        line.split_whitespace().map(String::from).collect()
    }

    fn parse_line(line: &str) -> Result<FioInvocation> {
        parse(&args(line))
    }

    fn err(line: &str) -> String {
        let e = parse_line(line).expect_err(line);
        assert_eq!(record::error::exit_code(&e), 2, "{line}: {e:#}");
        format!("{e:#}")
    }

    #[test]
    fn issue_line_1_random_rw_psync_osync() {
        let inv = parse_line(
            "--name=random-rw --direct=1 --sync=1 --bs=16k --size=2G --numjobs=2 --rw=randrw \
             --rwmixread=50 --rwmixwrite=50 --group_reporting --filename=/tmp/test_random \
             --ioengine=psync --iodepth=1",
        )
        .unwrap();
        let j = &inv.job;
        assert_eq!(j.name, "random-rw");
        assert_eq!(j.pattern, Pattern::RandRw { read_pct: 50 });
        assert_eq!(j.block_size, 16 * 1024);
        assert_eq!(j.size_per_job, 2 << 30);
        assert_eq!(j.numjobs, 2);
        assert_eq!(j.iodepth, 1);
        assert_eq!(j.engine, EngineChoice::Psync);
        assert!(j.direct);
        assert_eq!(j.sync, SyncMode::OSync);
        assert_eq!(
            j.layout,
            Layout::SharedFile {
                path: "/tmp/test_random".into(),
                region_per_job: false
            }
        );
        assert_eq!(j.termination, Termination::Size { runtime_cap: None });
        assert_eq!(j.seed, Some(FIO_DEFAULT_RANDSEED));
        assert_eq!(inv.output_format, OutputFormat::Normal);
        assert!(inv.notes.is_empty(), "{:?}", inv.notes);
    }

    #[test]
    fn issue_line_2_sequential_rw_libaio() {
        let inv = parse_line(
            "--name=sequential-rw --direct=1 --sync=1 --bs=1m --size=2G --numjobs=2 --rw=rw \
             --rwmixread=50 --group_reporting --filename=/tmp/test_sequential \
             --ioengine=libaio --iodepth=8",
        )
        .unwrap();
        let j = &inv.job;
        assert_eq!(j.pattern, Pattern::SeqRw { read_pct: 50 });
        assert_eq!(j.block_size, 1 << 20);
        assert_eq!(j.iodepth, 8);
        // libaio is run as itself, so nothing needs saying about the engine.
        assert_eq!(j.engine, EngineChoice::Libaio);
        assert_eq!(j.sync, SyncMode::OSync);
        assert_eq!(j.numjobs, 2);
        assert!(
            !inv.notes.iter().any(|n| n.contains("ioengine")),
            "{:?}",
            inv.notes
        );
    }

    #[test]
    fn issue_line_3_fiotest_readwrite_alias_and_gtod_reduce() {
        let inv = parse_line(
            "--randrepeat=1 --ioengine=libaio --direct=1 --gtod_reduce=1 --name=fiotest \
             --filename=testfio --bs=4k --iodepth=64 --size=8G --readwrite=randrw \
             --rwmixread=75",
        )
        .unwrap();
        let j = &inv.job;
        assert_eq!(j.name, "fiotest");
        assert_eq!(j.pattern, Pattern::RandRw { read_pct: 75 });
        assert_eq!(j.block_size, 4096);
        assert_eq!(j.iodepth, 64);
        assert_eq!(j.numjobs, 1);
        assert_eq!(j.size_per_job, 8 << 30);
        assert_eq!(j.seed, Some(FIO_DEFAULT_RANDSEED));
        assert_eq!(
            j.layout,
            Layout::SharedFile {
                path: "testfio".into(),
                region_per_job: false
            }
        );
        assert!(inv.notes.iter().any(|n| n.contains("gtod_reduce")));
    }

    #[test]
    fn issue_line_4_time_based_directory() {
        let inv = parse_line(
            "--name=rand_rw --directory=/tmp/x --rw=randrw --bs=4k --size=1G --numjobs=4 \
             --time_based --runtime=30 --iodepth=32 --ioengine=libaio --direct=1 \
             --group_reporting",
        )
        .unwrap();
        let j = &inv.job;
        assert_eq!(j.pattern, Pattern::RandRw { read_pct: 50 });
        assert_eq!(j.numjobs, 4);
        assert_eq!(j.iodepth, 32);
        assert_eq!(j.size_per_job, 1 << 30);
        assert_eq!(
            j.layout,
            Layout::FilePerJob {
                dir: "/tmp/x".into(),
                prefix: "rand_rw".into()
            }
        );
        assert_eq!(
            j.termination,
            Termination::Time {
                runtime: Duration::from_secs(30),
                ramp: Duration::ZERO
            }
        );
        assert!(!inv.filename_given);
        assert!(!j.thread, "a process per job, fio's default");
        let with_thread = parse_line("--name=t --size=1m --numjobs=4 --thread").unwrap();
        assert!(with_thread.job.thread, "--thread: the jobs as threads");
        assert!(parse_line("--name=t --size=1m --thread=0").is_ok_and(|i| !i.job.thread));
    }

    #[test]
    fn space_separated_values_single_dash_and_defaults() {
        let inv =
            parse_line("-name t --size 1m --bs 8k --output-format json --runtime 2m").unwrap();
        assert_eq!(inv.job.block_size, 8192);
        assert_eq!(inv.job.pattern, Pattern::Read);
        assert_eq!(inv.job.engine, EngineChoice::Psync);
        assert!(!inv.job.direct);
        assert_eq!(inv.output_format, OutputFormat::Json);
        assert_eq!(
            inv.job.termination,
            Termination::Size {
                runtime_cap: Some(Duration::from_secs(120))
            }
        );
        assert_eq!(
            inv.job.layout,
            Layout::FilePerJob {
                dir: ".".into(),
                prefix: "t".into()
            }
        );
    }

    #[test]
    fn sizes_follow_fio_kb_base_1024() {
        assert_eq!(parse_size("bs", "4096").unwrap(), 4096);
        assert_eq!(parse_size("bs", "4k").unwrap(), 4096);
        assert_eq!(parse_size("bs", "4K").unwrap(), 4096);
        assert_eq!(parse_size("bs", "4kb").unwrap(), 4096);
        assert_eq!(parse_size("bs", "4KB").unwrap(), 4096);
        assert_eq!(parse_size("size", "1m").unwrap(), 1 << 20);
        assert_eq!(parse_size("size", "2G").unwrap(), 2 << 30);
        assert_eq!(parse_size("size", "1t").unwrap(), 1 << 40);
        assert_eq!(parse_size("size", "1.5g").unwrap(), 3 << 29);
        assert_eq!(parse_size("size", "512b").unwrap(), 512);
        assert!(format!("{:#}", parse_size("bs", "4KiB").unwrap_err()).contains("4000"));
        for bad in ["abc", "", "k", "4x", "1.3", "99999999999999999999"] {
            let e = parse_size("bs", bad).unwrap_err();
            assert!(format!("{e:#}").contains("--bs"), "{bad}");
        }
    }

    #[test]
    fn times_follow_fio_units() {
        assert_eq!(
            parse_time("runtime", "30").unwrap(),
            Duration::from_secs(30)
        );
        assert_eq!(
            parse_time("runtime", "30s").unwrap(),
            Duration::from_secs(30)
        );
        assert_eq!(
            parse_time("runtime", "500ms").unwrap(),
            Duration::from_millis(500)
        );
        assert_eq!(
            parse_time("runtime", "250usec").unwrap(),
            Duration::from_micros(250)
        );
        assert_eq!(
            parse_time("runtime", "2m").unwrap(),
            Duration::from_secs(120)
        );
        assert_eq!(
            parse_time("runtime", "1h").unwrap(),
            Duration::from_secs(3600)
        );
        assert!(parse_time("runtime", "soon").is_err());
        assert!(parse_time("runtime", "5y").is_err());
    }

    #[test]
    fn sync_variants() {
        let s = |extra: &str| {
            parse_line(&format!("--name=a --size=1m --rw=write {extra}"))
                .unwrap()
                .job
                .sync
        };
        assert_eq!(s(""), SyncMode::None);
        assert_eq!(s("--sync=0"), SyncMode::None);
        assert_eq!(s("--sync=none"), SyncMode::None);
        assert_eq!(s("--sync=sync"), SyncMode::OSync);
        assert_eq!(s("--sync=dsync"), SyncMode::ODsync);
        assert_eq!(s("--fdatasync=1"), SyncMode::Fdatasync(1));
        assert_eq!(s("--fsync=32"), SyncMode::Fsync(32));
        assert_eq!(s("--fsync=0"), SyncMode::None);
        assert!(err("--name=a --size=1m --sync=1 --fdatasync=1").contains("only one"));
        assert!(err("--name=a --size=1m --sync=maybe").contains("--sync=maybe"));
    }

    #[test]
    fn rwmix_consistency_and_seed() {
        let j = parse_line("--name=a --size=1m --rw=randrw --rwmixwrite=30")
            .unwrap()
            .job;
        assert_eq!(j.pattern, Pattern::RandRw { read_pct: 70 });
        assert!(
            err("--name=a --size=1m --rw=randrw --rwmixread=60 --rwmixwrite=60").contains("100")
        );
        assert!(err("--name=a --size=1m --rw=randrw --rwmixread=150").contains("--rwmixread=150"));
        let j = parse_line("--name=a --size=1m --randrepeat=0").unwrap().job;
        assert_eq!(j.seed, None);
        let j = parse_line("--name=a --size=1m --randrepeat=0 --randseed=7")
            .unwrap()
            .job;
        assert_eq!(j.seed, Some(7));
    }

    #[test]
    fn psync_ignores_iodepth_like_fio_and_says_so() {
        let inv = parse_line("--name=a --size=1m --iodepth=16").unwrap();
        assert_eq!(inv.job.iodepth, 1);
        assert!(inv.notes.iter().any(|n| n.contains("--iodepth=16")));
    }

    #[test]
    fn refusals_name_the_option() {
        let unknown = err("--name=a --size=1m --foo=3");
        assert!(unknown.contains("fio option --foo is not supported by cargo diskbench fio"));
        assert!(unknown.contains("supported: --name"));
        assert!(err("--name=a --size=1m --bs=abc").contains("--bs=abc"));
        assert!(err("--name=a --size=1m --iodepth=0").contains("--iodepth=0"));
        assert!(err("--name=a --size=1m --numjobs=0").contains("--numjobs=0"));
        assert!(err("--name=a --size=1m --rw=trim").contains("--rw=trim"));
        assert!(err("--name=a --size=1m --ioengine=mmap").contains("--ioengine=mmap"));
        assert!(err("--name=a --size=1m --bs=4k-16k").contains("--bs=4k-16k"));
        assert!(err("--name=a --size=50%").contains("--size=50%"));
        assert!(err("--name=a --size=1m --time_based").contains("--time_based"));
        assert!(err("--name=a --size=1m --ramp_time=2").contains("--ramp_time"));
        assert!(err("--name=a --size=1m --direct=2").contains("--direct=2"));
        assert!(err("--name=a --size=1m --output-format=terse").contains("--output-format"));
        assert!(err("--name=a --size=1m --bs=2m").contains("--size"));
        assert!(err("--size=1m").contains("--name"));
        assert!(err("--name=a").contains("--size"));
        assert!(err("--name=a --size=1m --name=b").contains("--name"));
        assert!(err("--name=a --size=1m job.fio").contains("a job file"));
        assert!(err("--name=a --size").contains("--size needs a value"));
        assert!(err("--name=a --size=1m --filename=/dev/null").contains("not a regular file"));
        assert!(err("--name=a --size=1m --filename=a:b").contains("--filename=a:b"));
    }

    #[test]
    fn filename_inside_directory_and_existing_file_size() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f");
        std::fs::write(&file, vec![0u8; 8192]).unwrap();
        let line = format!("--name=a --directory={} --filename=f", dir.path().display());
        let inv = parse_line(&line).unwrap();
        assert_eq!(inv.job.size_per_job, 8192);
        assert_eq!(
            inv.job.layout,
            Layout::SharedFile {
                path: file,
                region_per_job: false
            }
        );
    }

    #[test]
    fn file_preparation_options_follow_fio() {
        let p = parse_line("--name=a --size=1m --rw=write").unwrap().prep;
        assert_eq!(p, PrepOptions::default());
        assert_eq!(p.fallocate, Fallocate::Native);
        let p = parse_line(
            "--name=a --size=1m --rw=write --fallocate=none --overwrite=1 --create_on_open \
             --pre_read=1",
        )
        .unwrap()
        .prep;
        assert_eq!(
            p,
            PrepOptions {
                fallocate: Fallocate::None,
                overwrite: true,
                create_on_open: true,
                pre_read: true,
                invalidate: true
            }
        );
        assert_eq!(
            parse_line("--name=a --size=1m --fallocate=1")
                .unwrap()
                .prep
                .fallocate,
            Fallocate::Posix
        );
        assert!(err("--name=a --size=1m --fallocate=maybe").contains("--fallocate=maybe"));
        assert!(err("--name=a --size=1m --overwrite=2").contains("--overwrite=2"));
        assert!(err("--name=a --size=1m --file_append=1").contains("--file_append"));
    }

    #[test]
    fn help_lists_every_option() {
        let h = supported_options_help();
        for o in OPTIONS {
            assert!(h.contains(&format!("--{}", o.name)));
        }
        assert!(h.contains("--readwrite"));
    }
}

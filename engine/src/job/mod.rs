//! A job: what to do to which file(s), for how long. Built from options (the suite's columns
//! or fio syntax), validated before any file is touched, then handed to a backend.

pub(crate) mod cpu;
pub mod hist;
mod io_loop;
pub(crate) mod prng;
mod process;
// Running one job: validate, prepare its files, run it on the I/O loop, merge its figures.
pub mod run;
pub(crate) mod shared_page;
pub mod steady_window;

use std::path::PathBuf;

use crate::files::direct_io::DirectIoAlignment;
use std::time::Duration;

/// The access pattern, with fio's names in the comments.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pattern {
    /// `read`: sequential reads.
    Read,
    /// `write`: sequential writes.
    Write,
    /// `randread`
    RandRead,
    /// `randwrite`
    RandWrite,
    /// `randrw` with the share of reads in percent (`rwmixread`).
    RandRw { read_pct: u32 },
    /// `rw` / `readwrite`: sequential mixed, with the share of reads in percent.
    SeqRw { read_pct: u32 },
}

/// How writes are made durable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SyncMode {
    None,
    /// fdatasync after every N writes (fio `--fdatasync=N`). For N = 1 the measured operation
    /// is write + fdatasync.
    Fdatasync(u32),
    /// fsync after every N writes (fio `--fsync=N`).
    Fsync(u32),
    /// The file is opened O_SYNC (fio `--sync=1` / `--sync=sync`).
    OSync,
    /// The file is opened O_DSYNC (fio `--sync=dsync`).
    ODsync,
}

/// When a job stops.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Termination {
    /// Run for `runtime` after an unmeasured `ramp`, wrapping around the file as needed.
    Time { runtime: Duration, ramp: Duration },
    /// After an unmeasured `ramp`, measure until the figure is steady by `rule`, at most its
    /// longest window (the standard suite's default: [`crate::job::steady_window`]).
    Steady {
        rule: crate::job::steady_window::SteadyRule,
        ramp: Duration,
        /// How the figure can drift underneath (new files being written).
        drift: crate::job::steady_window::Drift,
    },
    /// Each job moves its region's bytes once (fio's default without `time_based`);
    /// `runtime`, when set, caps it.
    Size { runtime_cap: Option<Duration> },
}

/// Which I/O backend to use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum EngineChoice {
    /// The backend per job that `BackendKind::auto` picks; psync where it is refused.
    #[default]
    Auto,
    IoUring,
    Psync,
    /// Linux native AIO, the path fio's `libaio` engine takes.
    Libaio,
}

/// Where a job's bytes live.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Layout {
    /// One file shared by all jobs. With `region_per_job`, job i works only in the i-th
    /// `size_per_job` bytes; otherwise every job covers the whole file (fio with one
    /// `--filename` and `--numjobs` > 1).
    SharedFile { path: PathBuf, region_per_job: bool },
    /// One file per job: `dir/<prefix>.<job index>` (fio with `--directory`).
    FilePerJob { dir: PathBuf, prefix: String },
}

/// One job, fully specified.
#[derive(Clone, Debug, PartialEq)]
pub struct JobSpec {
    /// A column id for the suite, fio's `--name` otherwise.
    pub name: String,
    pub pattern: Pattern,
    pub block_size: u64,
    pub iodepth: u32,
    pub numjobs: u32,
    /// Bytes each job works over (fio's `size` semantics).
    pub size_per_job: u64,
    pub layout: Layout,
    pub termination: Termination,
    pub direct: bool,
    pub sync: SyncMode,
    pub engine: EngineChoice,
    /// Fixed random offsets; None: different offsets every run.
    pub seed: Option<u64>,
    /// Run the jobs as threads of this process (fio's `--thread`); false: each job in a
    /// process of its own, as fio and the published harness run them.
    pub thread: bool,
}

// ---------------------------------------------------------------------------------------------
// Validation and the record's view of a job. Everything below is additive: the types above are
// what the suite and the fio-syntax parser build.

use std::path::Path;

use record::JobSettings;
use record::error;

impl Pattern {
    /// fio's name of the pattern.
    pub(crate) fn fio_name(self) -> &'static str {
        match self {
            Pattern::Read => "read",
            Pattern::Write => "write",
            Pattern::RandRead => "randread",
            Pattern::RandWrite => "randwrite",
            Pattern::RandRw { .. } => "randrw",
            Pattern::SeqRw { .. } => "rw",
        }
    }

    /// Share of reads in percent: 100 for pure reads, 0 for pure writes.
    pub(crate) fn read_pct(self) -> u32 {
        match self {
            Pattern::Read | Pattern::RandRead => 100,
            Pattern::Write | Pattern::RandWrite => 0,
            Pattern::RandRw { read_pct } | Pattern::SeqRw { read_pct } => read_pct,
        }
    }

    pub(crate) fn is_random(self) -> bool {
        matches!(
            self,
            Pattern::RandRead | Pattern::RandWrite | Pattern::RandRw { .. }
        )
    }

    pub(crate) fn reads(self) -> bool {
        self.read_pct() > 0
    }

    pub(crate) fn writes(self) -> bool {
        self.read_pct() < 100
    }
}

impl SyncMode {
    /// The record's spelling: "none", "fdatasync:N", "fsync:N", "o_sync", "o_dsync".
    pub(crate) fn record_name(self) -> String {
        match self {
            SyncMode::None => "none".into(),
            SyncMode::Fdatasync(n) => format!("fdatasync:{n}"),
            SyncMode::Fsync(n) => format!("fsync:{n}"),
            SyncMode::OSync => "o_sync".into(),
            SyncMode::ODsync => "o_dsync".into(),
        }
    }
}

impl EngineChoice {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            EngineChoice::Auto => "auto",
            EngineChoice::IoUring => "io_uring",
            EngineChoice::Psync => "psync",
            EngineChoice::Libaio => "libaio",
        }
    }

    pub fn parse(s: &str) -> Option<EngineChoice> {
        match s {
            "auto" => Some(EngineChoice::Auto),
            "io_uring" | "io-uring" | "iouring" => Some(EngineChoice::IoUring),
            "psync" => Some(EngineChoice::Psync),
            "libaio" => Some(EngineChoice::Libaio),
            _ => None,
        }
    }
}

impl JobSpec {
    /// The folder the job's files live in.
    pub fn dir(&self) -> &Path {
        match &self.layout {
            Layout::SharedFile { path, .. } => path.parent().unwrap_or(Path::new(".")),
            Layout::FilePerJob { dir, .. } => dir,
        }
    }

    /// The files the job touches with the size each must have.
    pub fn files(&self) -> Vec<(PathBuf, u64)> {
        match &self.layout {
            Layout::SharedFile {
                path,
                region_per_job,
            } => {
                let size = if *region_per_job {
                    self.size_per_job * self.numjobs as u64
                } else {
                    self.size_per_job
                };
                vec![(path.clone(), size)]
            }
            Layout::FilePerJob { dir, prefix } => (0..self.numjobs)
                .map(|i| (dir.join(format!("{prefix}.{i}")), self.size_per_job))
                .collect(),
        }
    }

    /// The job's settings as the record holds them.
    pub(crate) fn settings(&self) -> JobSettings {
        JobSettings {
            rw: self.pattern.fio_name().into(),
            bs: self.block_size,
            iodepth: self.iodepth,
            numjobs: self.numjobs,
            size: self.size_per_job,
            direct: self.direct,
            sync: self.sync.record_name(),
            rwmixread: match self.pattern {
                Pattern::RandRw { read_pct } | Pattern::SeqRw { read_pct } => Some(read_pct),
                _ => None,
            },
        }
    }

    /// Check the job before any file is touched. Each failure is a one-line usage error
    /// (exit 2) naming the fio option. Returns the direct-I/O alignment of the job's folder.
    pub fn validate(&self) -> anyhow::Result<DirectIoAlignment> {
        let bs = self.block_size;
        if self.name.is_empty() {
            return Err(error::usage("--name: must not be empty"));
        }
        if bs == 0 {
            return Err(error::usage(
                "--bs 0: the block size must be at least 512 bytes",
            ));
        }
        if bs > u32::MAX as u64 / 2 {
            return Err(error::usage(format!(
                "--bs {bs}: larger than the 2 GiB a single I/O can move; use e.g. --bs 1m"
            )));
        }
        if self.iodepth == 0 {
            return Err(error::usage(
                "--iodepth 0: at least one I/O must be in flight; use --iodepth 1 or more",
            ));
        }
        if self.iodepth > 4096 {
            return Err(error::usage(format!(
                "--iodepth {}: more than 4096 I/Os in flight per job is not supported; use --iodepth 4096 or less",
                self.iodepth
            )));
        }
        if self.numjobs == 0 {
            return Err(error::usage(
                "--numjobs 0: at least one job is needed; use --numjobs 1 or more",
            ));
        }
        if self.numjobs > 1024 {
            return Err(error::usage(format!(
                "--numjobs {}: more than 1024 jobs is not supported",
                self.numjobs
            )));
        }
        if let Pattern::RandRw { read_pct } | Pattern::SeqRw { read_pct } = self.pattern
            && read_pct > 100
        {
            return Err(error::usage(format!(
                "--rwmixread {read_pct}: the share of reads is a percentage; use 0 to 100"
            )));
        }
        match self.sync {
            SyncMode::Fdatasync(0) => {
                return Err(error::usage(
                    "--fdatasync 0: sync every N writes needs N >= 1",
                ));
            }
            SyncMode::Fsync(0) => {
                return Err(error::usage("--fsync 0: sync every N writes needs N >= 1"));
            }
            _ => {}
        }
        match self.termination {
            Termination::Time { runtime, ramp } => {
                if runtime.is_zero() {
                    return Err(error::usage(
                        "--runtime 0: a time-based job needs a runtime above 0 seconds",
                    ));
                }
                if runtime > Duration::from_secs(24 * 3600) || ramp > Duration::from_secs(24 * 3600)
                {
                    return Err(error::usage(
                        "--runtime/--ramp_time: more than 24 hours is not supported",
                    ));
                }
            }
            Termination::Steady { rule, ramp, .. } => {
                if rule.min_window.is_zero()
                    || rule.max_window < rule.min_window
                    || ramp > Duration::from_secs(24 * 3600)
                {
                    return Err(error::usage(
                        "the steady window needs 0 < shortest <= longest window, and a ramp \
                         of at most 24 hours",
                    ));
                }
            }
            Termination::Size { runtime_cap } => {
                if runtime_cap.is_some_and(|r| r.is_zero()) {
                    return Err(error::usage(
                        "--runtime 0: the runtime cap must be above 0 seconds",
                    ));
                }
            }
        }
        if self.size_per_job < bs {
            return Err(error::usage(format!(
                "--size {}: smaller than one block (--bs {bs}); each job needs at least one block",
                self.size_per_job
            )));
        }
        if let Layout::SharedFile {
            region_per_job: false,
            ..
        } = self.layout
        {
            // Every job covers the whole file: nothing more to check.
        } else if self.size_per_job.checked_mul(self.numjobs as u64).is_none() {
            return Err(error::usage(format!(
                "--size {} x --numjobs {}: too large",
                self.size_per_job, self.numjobs
            )));
        }
        let dir = self.dir();
        if !dir.as_os_str().is_empty() && !dir.is_dir() {
            return Err(error::usage(match &self.layout {
                Layout::SharedFile { path, .. } => format!(
                    "--filename {}: the folder {} does not exist; create it or use another path",
                    path.display(),
                    dir.display()
                ),
                Layout::FilePerJob { .. } => format!(
                    "--directory {}: not an existing folder; create it or point to another one",
                    dir.display()
                ),
            }));
        }
        let align = crate::files::direct_io::direct_io_alignment(dir, &self.files());
        if self.direct && !bs.is_multiple_of(align.offset) {
            return Err(error::usage(format!(
                "--bs {bs}: not a multiple of the {}-byte direct-I/O alignment of {}; use a multiple of {}",
                align.offset,
                dir.display(),
                align.offset
            )));
        }
        Ok(align)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(dir: &Path) -> JobSpec {
        JobSpec {
            name: "t".into(),
            pattern: Pattern::RandRead,
            block_size: 4096,
            iodepth: 1,
            numjobs: 1,
            size_per_job: 1 << 20,
            layout: Layout::SharedFile {
                path: dir.join("f"),
                region_per_job: true,
            },
            termination: Termination::Time {
                runtime: Duration::from_secs(1),
                ramp: Duration::ZERO,
            },
            direct: true,
            sync: SyncMode::None,
            engine: EngineChoice::Auto,
            seed: None,
            thread: false,
        }
    }

    #[test]
    fn every_bad_job_is_a_usage_error_naming_the_option() {
        let dir = tempfile::tempdir().unwrap();
        let good = job(dir.path());
        let align = good.validate().unwrap();
        assert!(align.offset >= 512 && align.offset.is_power_of_two());
        let secs = Duration::from_secs;
        type Change = Box<dyn Fn(&mut JobSpec)>;
        let cases: Vec<(Change, &str)> = vec![
            (
                Box::new(|j| j.block_size = 1000),
                "--bs 1000: not a multiple of the",
            ),
            (Box::new(|j| j.block_size = 0), "--bs 0"),
            (Box::new(|j| j.block_size = 1 << 40), "--bs"),
            (Box::new(|j| j.iodepth = 0), "--iodepth 0"),
            (Box::new(|j| j.iodepth = 5000), "--iodepth 5000"),
            (Box::new(|j| j.numjobs = 0), "--numjobs 0"),
            (Box::new(|j| j.size_per_job = 100), "--size 100"),
            (Box::new(|j| j.name.clear()), "--name"),
            (
                Box::new(|j| j.pattern = Pattern::RandRw { read_pct: 101 }),
                "--rwmixread 101",
            ),
            (
                Box::new(|j| j.sync = SyncMode::Fdatasync(0)),
                "--fdatasync 0",
            ),
            (Box::new(|j| j.sync = SyncMode::Fsync(0)), "--fsync 0"),
            (
                Box::new(move |j| {
                    j.termination = Termination::Time {
                        runtime: secs(0),
                        ramp: secs(1),
                    }
                }),
                "--runtime 0",
            ),
            (
                Box::new(|j| {
                    j.termination = Termination::Size {
                        runtime_cap: Some(Duration::ZERO),
                    }
                }),
                "--runtime 0",
            ),
            (
                Box::new(|j| {
                    j.layout = Layout::FilePerJob {
                        dir: "/does/not/exist".into(),
                        prefix: "x".into(),
                    }
                }),
                "--directory /does/not/exist",
            ),
        ];
        for (change, needle) in cases {
            let mut j = good.clone();
            change(&mut j);
            let err = j.validate().unwrap_err();
            assert_eq!(record::error::exit_code(&err), record::exit::USAGE);
            let msg = err.to_string();
            assert!(
                msg.starts_with(needle),
                "{msg:?} should start with {needle:?}"
            );
            assert!(!msg.contains('\n'), "one line: {msg}");
        }
        // Nothing was created by validating.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        // Buffered I/O has no alignment rule.
        let mut buffered = good.clone();
        buffered.direct = false;
        buffered.block_size = 1000;
        buffered.size_per_job = 10_000;
        assert!(buffered.validate().is_ok());
    }

    #[test]
    fn files_follow_the_layout() {
        let mut j = job(Path::new("/d"));
        j.numjobs = 4;
        assert_eq!(j.files(), vec![(PathBuf::from("/d/f"), 4 << 20)]);
        j.layout = Layout::FilePerJob {
            dir: "/d".into(),
            prefix: "p".into(),
        };
        assert_eq!(j.files().len(), 4);
        assert_eq!(j.files()[3], (PathBuf::from("/d/p.3"), 1 << 20));
        assert_eq!(j.settings().rw, "randread");
    }
}

//! A job: what to do to which file(s), for how long. Built from options (the suite's columns
//! or fio syntax), validated before any file is touched, then handed to a backend.

use std::path::PathBuf;
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
    /// Each job moves its region's bytes once (fio's default without `time_based`);
    /// `runtime`, when set, caps it.
    Size { runtime_cap: Option<Duration> },
}

/// Which I/O backend to use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum EngineChoice {
    /// The cheaper backend per job; psync when io_uring is refused.
    #[default]
    Auto,
    IoUring,
    Psync,
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
}

//! The standard suite: six columns, each on a file prepared the way the published figures'
//! harness (fio) prepares it, so the two can be set side by side.
//!
//! - The read columns (seq-read, rand-read, qd1-read) read one file laid down with real,
//!   incompressible data before the first of them (unmeasured), as fio lays out a file for a
//!   read job. It is written once and shared by every read column and pass.
//! - Each write column (seq-write, rand-write, sync-write) gets a new file of its own, allocated
//!   as fio allocates it by default (`fallocate` mode 0: unwritten extents on ext4 and xfs), and
//!   writes into it; the file is removed after the column. Writing into blocks written before
//!   is cheaper (no extent conversion to commit with each fdatasync) and is not what published
//!   figures measure. See `fileprep` and the methodology page.
//!
//! Order: the columns' own order (seq-read, seq-write, rand-read, rand-write, qd1-read,
//! sync-write), the order the published harness runs them in. The record says per column how
//! its file was prepared (`file_preparation`).

use std::path::{Path, PathBuf};
use std::time::Duration;

#[cfg(feature = "measure")]
use anyhow::Result;

#[cfg(feature = "measure")]
use crate::error;
#[cfg(feature = "measure")]
use crate::fileprep::{self, Fallocate};
#[cfg(feature = "measure")]
use crate::job::{DirectIoAlignment, format_size};
use crate::job::{EngineChoice, JobSpec, Layout, Pattern, SyncMode, Termination};
#[cfg(feature = "measure")]
use crate::record::FilePreparation;
use crate::record::{ColumnId, Repeats, TestResult};
#[cfg(feature = "measure")]
use crate::runner::{self, Progress, ProgressFn};
#[cfg(feature = "measure")]
use crate::testfile::{self, OpenedFile, ScratchDir};

/// The order the columns run in (see the module docs for why).
pub const RUN_ORDER: [ColumnId; 6] = [
    ColumnId::SeqRead,
    ColumnId::SeqWrite,
    ColumnId::RandRead,
    ColumnId::RandWrite,
    ColumnId::Qd1Read,
    ColumnId::SyncWrite,
];

/// Default measured seconds per column.
pub const DEFAULT_RUNTIME_S: u64 = 5;
/// Default unmeasured warm-up per column: the published harness's 2 s. On a write column it
/// also decides how much of the new file is already converted when measuring starts, so a
/// shorter ramp than theirs would read slower than their figures on the same disk.
pub const DEFAULT_RAMP_S: u64 = 2;
/// Default test file size.
pub const DEFAULT_SIZE: u64 = 1 << 30;

/// What `cargo diskbench run` asked the suite to do. Build with `..Default::default()`.
#[derive(Clone, Debug)]
pub struct SuiteOptions {
    /// The test files go into a private folder under this one.
    pub dir: PathBuf,
    /// Only these columns (None: all six).
    pub only: Option<Vec<ColumnId>>,
    pub runtime: Duration,
    pub ramp: Duration,
    /// The test file's size in bytes.
    pub size: u64,
    pub engine: EngineChoice,
    pub seed: Option<u64>,
    /// Passes over the suite; each column reports its median pass and the spread.
    pub repeat: u32,
}

impl Default for SuiteOptions {
    fn default() -> Self {
        SuiteOptions {
            dir: PathBuf::from("."),
            only: None,
            runtime: Duration::from_secs(DEFAULT_RUNTIME_S),
            ramp: Duration::from_secs(DEFAULT_RAMP_S),
            size: DEFAULT_SIZE,
            engine: EngineChoice::Auto,
            seed: None,
            repeat: 1,
        }
    }
}

impl SuiteOptions {
    /// The selected columns in run order.
    pub fn columns(&self) -> Vec<ColumnId> {
        RUN_ORDER
            .into_iter()
            .filter(|c| self.only.as_ref().is_none_or(|o| o.contains(c)))
            .collect()
    }

    #[cfg(feature = "measure")]
    /// Check the options (usage errors name the option), before any file is touched.
    pub fn validate(&self) -> Result<()> {
        if !self.dir.is_dir() {
            return Err(error::usage(format!(
                "--dir {}: not an existing folder; create it or point --dir elsewhere",
                self.dir.display()
            )));
        }
        if self.runtime.is_zero() {
            return Err(error::usage(
                "--runtime 0: each column needs a measured time above 0 seconds",
            ));
        }
        if self.runtime > Duration::from_secs(3600) || self.ramp > Duration::from_secs(3600) {
            return Err(error::usage("--runtime/--ramp: at most 3600 seconds"));
        }
        if self.repeat == 0 || self.repeat > 100 {
            return Err(error::usage(format!(
                "--repeat {}: use 1 to 100 passes",
                self.repeat
            )));
        }
        if let Some(only) = &self.only
            && only.is_empty()
        {
            return Err(error::usage("--only: name at least one column"));
        }
        const MIB: u64 = 1 << 20;
        if self.size < 4 * MIB {
            return Err(error::usage(format!(
                "--size {}: the suite needs at least 4 MiB (four random-I/O jobs, 1 MiB sequential blocks); use e.g. --size 64M",
                self.size
            )));
        }
        if !self.size.is_multiple_of(MIB) {
            return Err(error::usage(format!(
                "--size {}: not a multiple of 1 MiB (the sequential columns' block size); use e.g. --size {}M",
                self.size,
                self.size / MIB
            )));
        }
        let align = testfile::direct_io_alignment(&self.dir, &[]);
        if !4096u64.is_multiple_of(align.offset) {
            return Err(error::usage(format!(
                "--dir {}: its filesystem needs {}-byte aligned direct I/O, more than the suite's 4 KiB blocks; use another --dir",
                self.dir.display(),
                align.offset
            )));
        }
        Ok(())
    }

    /// Roughly how long the suite takes (for the ETA).
    pub fn expected_s(&self) -> f64 {
        (self.runtime + self.ramp).as_secs_f64() * self.columns().len() as f64 * self.repeat as f64
    }
}

/// The job of one column over `path`.
pub fn column_job(column: ColumnId, opts: &SuiteOptions, path: PathBuf) -> JobSpec {
    const KIB4: u64 = 4096;
    const MIB: u64 = 1 << 20;
    let (pattern, block_size, iodepth, numjobs, sync) = match column {
        ColumnId::SeqRead => (Pattern::Read, MIB, 32, 1, SyncMode::None),
        ColumnId::SeqWrite => (Pattern::Write, MIB, 32, 1, SyncMode::None),
        ColumnId::RandRead => (Pattern::RandRead, KIB4, 32, 4, SyncMode::None),
        ColumnId::RandWrite => (Pattern::RandWrite, KIB4, 32, 4, SyncMode::None),
        ColumnId::Qd1Read => (Pattern::RandRead, KIB4, 1, 1, SyncMode::None),
        ColumnId::SyncWrite => (Pattern::Write, KIB4, 1, 1, SyncMode::Fdatasync(1)),
    };
    JobSpec {
        name: column.as_str().into(),
        pattern,
        block_size,
        iodepth,
        numjobs,
        // Every job covers the whole file with its own random order, as fio's jobs do with one
        // --filename and --numjobs 4: on a new file their writes overlap, so blocks are
        // converted from unwritten gradually, as in the published runs. Split into four
        // regions, each job would finish converting its quarter early and then only overwrite.
        size_per_job: opts.size,
        layout: Layout::SharedFile {
            path,
            region_per_job: false,
        },
        termination: Termination::Time {
            runtime: opts.runtime,
            ramp: opts.ramp,
        },
        direct: true,
        sync,
        engine: opts.engine,
        seed: opts.seed,
    }
}

#[cfg(feature = "measure")]
/// Run the suite: every selected column, `repeat` times. Test files live in a private folder
/// under `opts.dir`, removed when this returns (success, error, Ctrl-C). Results come in
/// `ColumnId::ALL` order; with repeats, each is the median pass with the spread.
pub fn run_suite(opts: &SuiteOptions, progress: &mut ProgressFn<'_>) -> Result<Vec<TestResult>> {
    opts.validate()?;
    testfile::ignore_sigxfsz();
    let columns = opts.columns();
    let mut scratch = ScratchDir::create(&opts.dir)?;
    let read_path = scratch.path().join("read.data");
    // Room for the shared read file and one write column's file at a time.
    let mut needed = Vec::new();
    if columns.iter().any(|c| c.is_read()) {
        needed.push((read_path.clone(), opts.size));
    }
    if let Some(w) = columns.iter().find(|c| !c.is_read()) {
        needed.push((write_path(scratch.path(), *w), opts.size));
    }
    testfile::check_free_space(&needed, "--size")?;
    progress(&Progress::SuiteStart {
        columns: columns.len(),
        repeats: opts.repeat,
        expected_s: opts.expected_s(),
    });
    let mut passes: Vec<Vec<TestResult>> = vec![Vec::new(); ColumnId::ALL.len()];
    let mut read_file: Option<(OpenedFile, FilePreparation)> = None;
    for pass in 1..=opts.repeat {
        if opts.repeat > 1 {
            progress(&Progress::Pass {
                index: pass,
                of: opts.repeat,
            });
        }
        for &column in &columns {
            let path = if column.is_read() {
                read_path.clone()
            } else {
                write_path(scratch.path(), column)
            };
            let spec = column_job(column, opts, path.clone());
            let align = spec.validate()?;
            let result = if column.is_read() {
                if read_file.is_none() {
                    read_file = Some(prepare_read_file(&spec, opts, &align, progress)?);
                }
                let (file, prep) = read_file.as_ref().expect("prepared above");
                let mut r = runner::execute(&spec, &align, std::slice::from_ref(file), progress)?;
                r.file_preparation = Some(prep.clone());
                r
            } else {
                let (file, prep) = prepare_write_file(&spec, opts)?;
                let mut r = runner::execute(&spec, &align, std::slice::from_ref(&file), progress)?;
                r.file_preparation = Some(prep);
                drop(file);
                // Every write column and pass starts from a new file; free the room now.
                std::fs::remove_file(&path)
                    .map_err(|e| anyhow::anyhow!("cannot remove {}: {e}", path.display()))?;
                r
            };
            progress(&Progress::JobDone {
                name: &spec.name,
                result: &result,
            });
            let slot = ColumnId::ALL.iter().position(|c| *c == column).unwrap_or(0);
            passes[slot].push(result);
        }
    }
    drop(read_file);
    scratch.remove().map_err(|e| {
        anyhow::anyhow!(
            "cannot remove the test folder {}: {e}",
            scratch.path().display()
        )
    })?;
    Ok(passes
        .into_iter()
        .filter(|p| !p.is_empty())
        .map(median_pass)
        .collect())
}

/// A write column's file in the scratch folder, e.g. `sync-write.data`.
pub fn write_path(scratch: &Path, column: ColumnId) -> PathBuf {
    scratch.join(format!("{}.data", column.as_str()))
}

#[cfg(feature = "measure")]
/// The read columns' file: real data from start to end (unmeasured), as fio lays out a file
/// for a read job.
pub fn prepare_read_file(
    spec: &JobSpec,
    opts: &SuiteOptions,
    align: &DirectIoAlignment,
    progress: &mut ProgressFn<'_>,
) -> Result<(OpenedFile, FilePreparation)> {
    let path = runner::first_file(spec);
    let file = testfile::open_test_file(&path, spec.direct, spec.sync)?;
    // Allocated first, as fio's extend_file does: the blocks are reserved in as few extents as
    // the filesystem can give, instead of growing write by write between other writers' blocks.
    fileprep::fresh_allocated(&file, opts.size, Fallocate::Native)?;
    runner::lay_out_range(spec, &file, 0, opts.size, align, "--size", progress)?;
    let prep = FilePreparation {
        method: "written".into(),
        fresh: true,
        detail: format!(
            "{} of real, incompressible data written before the first read column (unmeasured), \
             so reads never meet unallocated or unwritten blocks",
            format_size(opts.size)
        ),
    };
    Ok((file, prep))
}

#[cfg(feature = "measure")]
/// A write column's file: new, allocated as fio allocates it by default (`fallocate=native`).
pub fn prepare_write_file(
    spec: &JobSpec,
    opts: &SuiteOptions,
) -> Result<(OpenedFile, FilePreparation)> {
    let path = runner::first_file(spec);
    let file = testfile::open_test_file(&path, spec.direct, spec.sync)?;
    let prep = fileprep::fresh_allocated(&file, opts.size, Fallocate::Native)?;
    Ok((file, prep))
}

/// The spread (max - min over the median) under which a column's passes count as agreeing.
pub const REPEATABLE_SPREAD_PCT: f64 = 5.0;

/// The median pass of a column (by its headline figure), with every pass's figure and the
/// spread. A single pass is returned as it is.
pub fn median_pass(mut runs: Vec<TestResult>) -> TestResult {
    if runs.len() == 1 {
        return runs.pop().expect("one run");
    }
    let headline: Vec<f64> = runs.iter().map(|r| r.headline().unwrap_or(0.0)).collect();
    let mut order: Vec<usize> = (0..runs.len()).collect();
    order.sort_by(|&a, &b| headline[a].total_cmp(&headline[b]));
    let median_idx = order[(order.len() - 1) / 2];
    let median = headline[median_idx];
    let min = headline[order[0]];
    let max = headline[order[order.len() - 1]];
    let spread_pct = if median > 0.0 {
        (max - min) / median * 100.0
    } else {
        0.0
    };
    let mut chosen = runs.swap_remove(median_idx);
    chosen.repeats = Some(Repeats {
        runs: headline.len() as u32,
        headline,
        spread_pct,
        within_5pct: Some(spread_pct <= REPEATABLE_SPREAD_PCT),
    });
    chosen
}

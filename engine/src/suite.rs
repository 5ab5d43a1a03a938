//! The standard suite: six columns, each on files prepared the way the published figures'
//! harness prepares them (a fio job per column, files named `{name}.$jobnum`), so the two can
//! be set side by side.
//!
//! - Every column gets files of its own, one per job (`rand-read` and `rand-write`: four files
//!   of `--size` each; the others one), in the order the harness makes them, removed after the
//!   column. Nothing carries from one column to the next.
//! - A read column's files are written with real, incompressible data just before it
//!   (unmeasured, synced at the end), as the harness's prep job writes them (`--fallocate=none
//!   --refill_buffers=1 --end_fsync=1`): reads never meet unallocated or unwritten blocks.
//! - A write column's files are new, allocated as fio allocates them by default (`fallocate`
//!   mode 0: unwritten extents on ext4 and xfs), and written into. Writing into blocks written
//!   before is cheaper (no extent conversion to commit with each fdatasync) and is not what
//!   published figures measure. See `files::prep` and the methodology page.
//!
//! Order: the columns' own order (seq-read, seq-write, rand-read, rand-write, qd1-read,
//! sync-write), the order the published harness runs them in. The record says per column how
//! its files were prepared (`file_preparation`).

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Result;

use crate::files::direct_io::{self, DirectIoAlignment};
use crate::files::prep::{self, Fallocate};
use crate::files::testfile::{self, OpenedFile, ScratchDir};
use crate::job::run::{self, Progress, ProgressFn};
use crate::job::steady_window::{Drift, SteadyRule};
use crate::job::{EngineChoice, JobSpec, Layout, Pattern, SyncMode, Termination};
use record::FilePreparation;
use record::error;
use record::size::format_bytes as format_size;
use record::{ColumnId, Repeats, TestResult};

/// The order the columns run in: their own order, the published harness's (module docs).
pub(crate) const RUN_ORDER: [ColumnId; 6] = ColumnId::ALL;

/// Measured seconds per column with `--runtime` left out but a fixed window asked for (the
/// default window is steady: [`crate::job::steady_window`]).
pub const DEFAULT_RUNTIME_S: u64 = 5;
/// Default unmeasured warm-up per column: the published harness's 2 s. On a write column it
/// also decides how much of the new file is already converted when measuring starts, so a
/// shorter ramp than theirs would read slower than their figures on the same disk.
pub const DEFAULT_RAMP_S: u64 = 2;
/// Default test file size.
pub const DEFAULT_SIZE: u64 = 1 << 30;
/// Default passes over the suite.
pub const DEFAULT_REPEAT: u32 = 1;
/// The most passes `--repeat` takes.
pub const MAX_REPEAT: u32 = 100;

/// A named set of the suite's settings, recorded by name (`settings.preset`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Preset {
    /// The published figures' harness exactly: 20 s measured after a 2 s ramp, a 2 GiB file
    /// for each one-job column and 1 GiB per job for the four-job ones, so a figure reads
    /// what a published row read (the same share of first writes on a new file).
    Published,
}

/// `--preset published`: measured seconds per column.
pub const PUBLISHED_RUNTIME_S: u64 = 20;
/// `--preset published`: the ramp.
pub const PUBLISHED_RAMP_S: u64 = 2;
/// `--preset published`: the file of a one-job column.
pub const PUBLISHED_SIZE_ONE_JOB: u64 = 2 << 30;
/// `--preset published`: each job's file in a four-job column.
pub const PUBLISHED_SIZE_PER_JOB_OF_MANY: u64 = 1 << 30;

impl Preset {
    pub const NAMES: [&'static str; 1] = ["published"];

    pub fn parse(name: &str) -> Option<Preset> {
        match name {
            "published" => Some(Preset::Published),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Preset::Published => "published",
        }
    }

    /// The suite's options under this preset, in `dir`; the rest as `base` has them.
    pub fn apply(self, base: SuiteOptions) -> SuiteOptions {
        match self {
            Preset::Published => SuiteOptions {
                runtime: Duration::from_secs(PUBLISHED_RUNTIME_S),
                ramp: Duration::from_secs(PUBLISHED_RAMP_S),
                size: PUBLISHED_SIZE_ONE_JOB,
                preset: Some(self),
                steady: None,
                ..base
            },
        }
    }
}

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
    /// The preset that set `runtime`, `ramp` and the sizes ([`Preset::apply`]).
    pub preset: Option<Preset>,
    /// Measure each column until steady by this rule (after `ramp`) instead of for
    /// `runtime`: what `run` does without `--runtime`; None for a fixed window (`--runtime`,
    /// a preset).
    pub steady: Option<SteadyRule>,
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
            repeat: DEFAULT_REPEAT,
            preset: None,
            // Fixed here, as `runtime` says; `run` without --runtime asks for steady.
            steady: None,
        }
    }
}

impl SuiteOptions {
    /// The selected columns in run order.
    pub(crate) fn columns(&self) -> Vec<ColumnId> {
        RUN_ORDER
            .into_iter()
            .filter(|c| self.only.as_ref().is_none_or(|o| o.contains(c)))
            .collect()
    }

    /// Each job's file size in `column`: `size`, except under `--preset published`, whose
    /// harness gives four-job columns 1 GiB per job.
    pub fn size_per_job(&self, column: ColumnId) -> u64 {
        match self.preset {
            Some(Preset::Published) if column.settings().numjobs > 1 => {
                PUBLISHED_SIZE_PER_JOB_OF_MANY
            }
            _ => self.size,
        }
    }

    /// Check the options (usage errors name the option), before any file is touched.
    pub fn validate(&self) -> Result<()> {
        crate::files::testfile::check_test_folder("--dir", &self.dir)?;
        crate::job::run::check_engine_before_layout(self.engine)?;
        if self.runtime.is_zero() {
            return Err(error::usage(
                "--runtime 0: each column needs a measured time above 0 seconds",
            ));
        }
        if self.runtime > Duration::from_secs(3600) || self.ramp > Duration::from_secs(3600) {
            return Err(error::usage("--runtime/--ramp: at most 3600 seconds"));
        }
        if self.repeat == 0 || self.repeat > MAX_REPEAT {
            return Err(error::usage(format!(
                "--repeat {}: use 1 to {MAX_REPEAT} passes",
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
        let align = direct_io::direct_io_alignment(&self.dir, &[]);
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
    /// The record's `settings` of a run of the suite with these options (and the `--like`
    /// caps it ran under).
    pub fn settings(&self, like: Option<record::LikeSettings>) -> record::Settings {
        record::Settings {
            suite: "standard".into(),
            // A steady window's longest.
            runtime_s: match self.steady {
                Some(rule) => rule.max_window.as_secs_f64(),
                None => self.runtime.as_secs_f64(),
            },
            ramp_s: self.ramp.as_secs_f64(),
            size: self.size,
            engine: self.engine.as_str().into(),
            seed: self.seed,
            repeat: self.repeat,
            command_line: None,
            like,
            provisioned: None,
            preset: self.preset.map(|p| p.as_str().to_string()),
            window: self.steady.map(|_| "steady".to_string()),
        }
    }

    pub(crate) fn expected_s(&self) -> f64 {
        // A steady column mostly ends soon after its shortest window; the ETA corrects it.
        let measured = match self.steady {
            Some(rule) => rule.min_window * 2,
            None => self.runtime,
        };
        (measured + self.ramp).as_secs_f64() * self.columns().len() as f64 * self.repeat as f64
    }
}

/// The job of one column, its files in `dir`: one per job, `<column>.<job index>`, each
/// [`SuiteOptions::size_per_job`] bytes (fio's `--size` is per job; the harness names them
/// `{name}.$jobnum`).
pub fn column_job(column: ColumnId, opts: &SuiteOptions, dir: &Path) -> JobSpec {
    let settings = column.settings();
    let pattern = match settings.rw {
        "read" => Pattern::Read,
        "write" => Pattern::Write,
        "randread" => Pattern::RandRead,
        _ => Pattern::RandWrite,
    };
    let sync = settings
        .fdatasync_every
        .map_or(SyncMode::None, SyncMode::Fdatasync);
    JobSpec {
        name: column.as_str().into(),
        pattern,
        block_size: settings.block_bytes,
        iodepth: settings.iodepth,
        numjobs: settings.numjobs,
        // A file per job, each job over the whole of its own file in its own random order, as
        // the harness's `--numjobs 4 --filename_format={name}.$jobnum`: four jobs convert
        // four new files' blocks from unwritten, and read four files' worth of data.
        size_per_job: opts.size_per_job(column),
        layout: Layout::FilePerJob {
            dir: dir.to_path_buf(),
            prefix: column.as_str().into(),
        },
        termination: match opts.steady {
            Some(rule) => Termination::Steady {
                rule,
                ramp: opts.ramp,
                drift: drift_of(column, opts.size_per_job(column)),
            },
            None => Termination::Time {
                runtime: opts.runtime,
                ramp: opts.ramp,
            },
        },
        direct: true,
        sync,
        engine: opts.engine,
        seed: opts.seed,
        // As the published harness runs fio: each job a process.
        thread: false,
    }
}

/// How `column`'s figure can drift underneath on the files the suite gives it (module docs):
/// the write columns write into new, fallocated files.
fn drift_of(column: ColumnId, file_bytes: u64) -> Drift {
    match column {
        ColumnId::SeqWrite | ColumnId::SyncWrite | ColumnId::RandWrite => {
            Drift::NewFile { file_bytes }
        }
        ColumnId::SeqRead | ColumnId::RandRead | ColumnId::Qd1Read => Drift::None,
    }
}

/// Run the suite: every selected column, `repeat` times. Test files live in a private folder
/// under `opts.dir`, removed when this returns (success, error, Ctrl-C). Results come in
/// `ColumnId::ALL` order; with repeats, each is the median pass with the spread.
pub fn run_suite(opts: &SuiteOptions, progress: &mut ProgressFn<'_>) -> Result<Vec<TestResult>> {
    opts.validate()?;
    testfile::ignore_sigxfsz();
    let columns = opts.columns();
    let mut scratch = ScratchDir::create(&opts.dir)?;
    // Room for the largest column's files: only one column's files exist at a time.
    let needed = columns
        .iter()
        .map(|&c| column_job(c, opts, scratch.path()).files())
        .max_by_key(|files| files.iter().map(|(_, s)| s).sum::<u64>())
        .unwrap_or_default();
    testfile::check_free_space(&needed, "--size")?;
    progress(&Progress::SuiteStart {
        columns: columns.len(),
        repeats: opts.repeat,
        expected_s: opts.expected_s(),
    });
    let mut passes: Vec<Vec<TestResult>> = vec![Vec::new(); ColumnId::ALL.len()];
    for pass in 1..=opts.repeat {
        if opts.repeat > 1 {
            progress(&Progress::Pass {
                index: pass,
                of: opts.repeat,
            });
        }
        for &column in &columns {
            let spec = column_job(column, opts, scratch.path());
            let align = spec.validate()?;
            let (files, prep) = prepare_column_files(&spec, &align, progress)?;
            let mut result = run::execute(&spec, &align, &files, progress)?;
            result.file_preparation = Some(prep);
            // Every column and pass starts from new files; free the room now.
            remove_column_files(&spec, files, progress)?;
            progress(&Progress::JobDone {
                name: &spec.name,
                result: &result,
            });
            let slot = ColumnId::ALL.iter().position(|c| *c == column).unwrap_or(0);
            passes[slot].push(result);
        }
    }
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

/// Close and remove a column's files, one at a time, each step told to `progress` as the
/// [`Progress::Remove`] phase.
fn remove_column_files(
    spec: &JobSpec,
    files: Vec<OpenedFile>,
    progress: &mut ProgressFn<'_>,
) -> Result<()> {
    let paths = spec.files();
    let total_files = paths.len();
    progress(&Progress::Remove {
        name: &spec.name,
        done_files: 0,
        total_files,
    });
    // Closed first: an unlinked file that is still open keeps its blocks until the close.
    drop(files);
    for (done, (path, _)) in paths.iter().enumerate() {
        std::fs::remove_file(path)
            .map_err(|e| anyhow::anyhow!("cannot remove {}: {e}", path.display()))?;
        progress(&Progress::Remove {
            name: &spec.name,
            done_files: done + 1,
            total_files,
        });
    }
    Ok(())
}

/// Create and prepare a column's files (one per job, none there before) as the published
/// harness does: a read column's are written with real, incompressible data from start to end
/// and synced (unmeasured), a write column's are new and allocated as fio allocates them by
/// default (`fallocate=native`). Returns the opened files, in job order, and how they were
/// made.
pub fn prepare_column_files(
    spec: &JobSpec,
    align: &DirectIoAlignment,
    progress: &mut ProgressFn<'_>,
) -> Result<(Vec<OpenedFile>, FilePreparation)> {
    let files = spec.files();
    let unit = align.offset.max(1);
    let whole = |size: u64| size - size % unit;
    let total: u64 = files.iter().map(|(_, s)| whole(*s)).sum();
    let mut opened = Vec::with_capacity(files.len());
    let mut allocated = None;
    let mut done_before = 0;
    for (path, size) in &files {
        let file = testfile::open_test_file(path, spec.direct, spec.sync)?;
        if spec.pattern.reads() {
            // No allocation first: the harness's prep job runs with --fallocate=none, so the
            // writes allocate the blocks as they extend the file.
            testfile::lay_out(&file, whole(*size), align, "--size", &mut |done| {
                progress(&Progress::Layout {
                    name: &spec.name,
                    done_bytes: done_before + done,
                    total_bytes: total,
                })
            })?;
            done_before += whole(*size);
        } else {
            allocated = Some(prep::fresh_allocated(&file, *size, Fallocate::Native)?);
        }
        opened.push(file);
    }
    let count = match files.len() {
        1 => "a new file".to_string(),
        n => format!("{n} new files, one per job,"),
    };
    let prep = match allocated {
        Some(mut p) => {
            if files.len() > 1 {
                p.detail = format!("{} files, one per job: {}", files.len(), p.detail);
            }
            p
        }
        None => FilePreparation {
            method: "written".into(),
            fresh: true,
            detail: format!(
                "{count} each written with {} of real, incompressible data and synced just \
                 before the column (unmeasured), as the published harness writes a read test's \
                 files, so reads never meet unallocated or unwritten blocks",
                format_size(files.first().map(|(_, s)| *s).unwrap_or(0))
            ),
        },
    };
    Ok((opened, prep))
}

/// The spread (max - min over the median) under which a column's passes count as agreeing.
pub const REPEATABLE_SPREAD_PCT: f64 = 5.0;

/// The median pass of a column (by its headline figure), with every pass's figure and the
/// spread. A single pass is returned as it is.
pub(crate) fn median_pass(mut runs: Vec<TestResult>) -> TestResult {
    if runs.len() == 1
        && let Some(only) = runs.pop()
    {
        return only;
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

#[cfg(test)]
mod tests {
    use super::*;

    /// `--preset published` is the harness's settings: 20 s after a 2 s ramp, 2 GiB for a
    /// one-job column's file, 1 GiB for each of a four-job column's, and the record names it.
    #[test]
    fn the_published_preset_is_the_harness_settings_and_is_recorded() {
        let base = SuiteOptions {
            size: 64 << 20,
            runtime: Duration::from_secs(1),
            ramp: Duration::ZERO,
            repeat: 3,
            ..Default::default()
        };
        let p = Preset::Published.apply(base.clone());
        assert_eq!(
            (p.runtime, p.ramp, p.repeat),
            (Duration::from_secs(20), Duration::from_secs(2), 3)
        );
        let dir = Path::new("/nowhere");
        for column in ColumnId::ALL {
            let job = column_job(column, &p, dir);
            let want: u64 = if column.settings().numjobs == 4 {
                1 << 30
            } else {
                2 << 30
            };
            assert_eq!(job.size_per_job, want, "{column}");
            assert_eq!(
                job.termination,
                Termination::Time {
                    runtime: Duration::from_secs(20),
                    ramp: Duration::from_secs(2)
                }
            );
            // Without the preset every job's file is --size.
            assert_eq!(column_job(column, &base, dir).size_per_job, 64 << 20);
        }
        let s = p.settings(None);
        assert_eq!(s.preset.as_deref(), Some("published"));
        assert_eq!((s.runtime_s, s.ramp_s, s.size), (20.0, 2.0, 2 << 30));
        assert!(
            s.method()
                .unwrap()
                .starts_with("published preset: 20 s after a 2 s ramp")
        );
        assert_eq!(base.settings(None).preset, None);
        assert_eq!(Preset::parse("published"), Some(Preset::Published));
        assert_eq!(Preset::parse("Published"), None);
    }

    /// A steady column, for real (job processes, a real backend): the parent ends the
    /// window between the shortest and the longest, the jobs count into the shared page, and
    /// the record says how it ended, the rule and the intervals it judged.
    #[test]
    fn a_steady_window_ends_between_its_bounds_and_is_recorded() {
        let dir = tempfile::tempdir().unwrap();
        let rule = SteadyRule {
            min_window: Duration::from_millis(1000),
            max_window: Duration::from_millis(2500),
            ..SteadyRule::DEFAULT
        };
        for column in [ColumnId::RandRead, ColumnId::SyncWrite] {
            let opts = SuiteOptions {
                dir: dir.path().to_path_buf(),
                only: Some(vec![column]),
                size: 4 << 20,
                ramp: Duration::from_millis(200),
                engine: EngineChoice::Psync,
                steady: Some(rule),
                ..Default::default()
            };
            let results = run_suite(&opts, &mut |_| {}).unwrap();
            let t = &results[0];
            let w = t
                .window
                .as_ref()
                .expect("a steady column records its window");
            assert!(w.ended == "steady" || w.ended == "max-time", "{w:?}");
            assert_eq!(w.rule, rule.describe(opts.ramp));
            // The parent decides on a 50 ms tick; the jobs stop by themselves 5 s past the
            // longest window at the latest.
            assert!(
                (1.0..2.5 + 5.0).contains(&t.elapsed_s),
                "{column}: {} s",
                t.elapsed_s
            );
            assert!(w.interval_iops.len() >= 2, "{column}: {w:?}");
            // The rule's shortest ramp is above this 200 ms one: kept whole.
            // (The parent looks on 50 ms ticks, later on a busy machine.)
            let ramp_s = w.ramp_s.expect("a steady column records its ramp");
            assert!((0.2..1.2).contains(&ramp_s), "{column}: {w:?}");
            let ios = t.main_direction().unwrap().ios;
            assert!(ios > 0, "{column}");
            if w.ended == "max-time" {
                assert!(
                    t.notes.iter().any(|n| n.starts_with("measured the whole")),
                    "{column}: a window that ran to its longest says why: {:?}",
                    t.notes
                );
            }
        }
        // A fixed window records none.
        let opts = SuiteOptions {
            dir: dir.path().to_path_buf(),
            only: Some(vec![ColumnId::Qd1Read]),
            size: 4 << 20,
            runtime: Duration::from_millis(300),
            ramp: Duration::ZERO,
            engine: EngineChoice::Psync,
            steady: None,
            ..Default::default()
        };
        assert_eq!(run_suite(&opts, &mut |_| {}).unwrap()[0].window, None);
    }

    /// Removing the test files is a phase of its own, after the measuring and before the
    /// column's result: announced before the first file, counted file by file, and the files
    /// are gone when it ends.
    #[test]
    fn removing_the_test_files_is_a_phase_after_the_measuring() {
        let dir = tempfile::tempdir().unwrap();
        let opts = SuiteOptions {
            dir: dir.path().to_path_buf(),
            only: Some(vec![ColumnId::RandWrite]),
            size: 4 << 20,
            runtime: Duration::from_millis(100),
            ramp: Duration::ZERO,
            engine: EngineChoice::Psync,
            ..Default::default()
        };
        // (phase, done, total) in the order heard; a tick is "measure".
        let mut heard: Vec<(&str, usize, usize)> = Vec::new();
        let mut files_left_at_done = None;
        let scratch_parent = dir.path().to_path_buf();
        run_suite(&opts, &mut |p| match p {
            Progress::Tick { .. } if heard.last().map(|h| h.0) != Some("measure") => {
                heard.push(("measure", 0, 0))
            }
            Progress::Remove {
                done_files,
                total_files,
                ..
            } => heard.push(("remove", *done_files, *total_files)),
            Progress::JobDone { .. } => {
                heard.push(("done", 0, 0));
                files_left_at_done = Some(count_files(&scratch_parent, "rand-write."));
            }
            _ => {}
        })
        .unwrap();
        let numjobs = ColumnId::RandWrite.settings().numjobs as usize;
        let mut want = vec![("measure", 0, 0)];
        want.extend((0..=numjobs).map(|d| ("remove", d, numjobs)));
        want.push(("done", 0, 0));
        assert_eq!(heard, want);
        assert_eq!(
            files_left_at_done,
            Some(0),
            "files remain when the column is done"
        );
    }

    /// Regular files named `prefix...` anywhere under `dir` (the scratch folder also holds
    /// its owner file).
    fn count_files(dir: &Path, prefix: &str) -> usize {
        std::fs::read_dir(dir)
            .unwrap()
            .flatten()
            .map(|e| {
                let t = e.file_type().unwrap();
                if t.is_dir() {
                    count_files(&e.path(), prefix)
                } else {
                    usize::from(t.is_file() && e.file_name().to_string_lossy().starts_with(prefix))
                }
            })
            .sum()
    }

    /// The job the suite runs is the one a record names for the column (the record crate's
    /// table), field for field: an import or the methodology page cannot disagree with it.
    #[test]
    fn each_column_runs_the_settings_its_table_names() {
        let opts = SuiteOptions::default();
        for c in ColumnId::ALL {
            let job = column_job(c, &opts, Path::new("."));
            assert_eq!(
                job.settings(),
                record::JobSettings::of_column(c, opts.size),
                "{c}"
            );
            assert_eq!(job.pattern.fio_name(), c.settings().rw, "{c}");
        }
    }
}

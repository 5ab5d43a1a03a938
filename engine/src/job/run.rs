//! Running one job: [`run_job`] validates it, prepares its files, picks the backend, starts
//! its jobs (as processes, or threads with fio's `--thread`) on the job loop
//! (`crate::job::io_loop`), and merges what they measured into a [`TestResult`].

use std::path::PathBuf;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::{Context, Result};

use crate::backend::io_uring as uring;
use crate::errno::is_refusal;
use crate::files::direct_io::DirectIoAlignment;
use crate::files::prep::PrepOptions;
use crate::files::testfile::{self, CreatedFiles, OpenedFile};
use crate::job::cpu::{CpuTime, mono_ns};
use crate::job::hist::LatencyHist;
use crate::job::io_loop::{Gate, Plan, READ, WRITE, WorkerError, WorkerStats, run_worker};
use crate::job::steady_window::Decision;
use crate::job::{EngineChoice, JobSpec, Layout, SyncMode, Termination};
use record::size::format_bytes as format_size;
use record::{BackendKind, Cpu, DirectionStats, EngineUsed, FilePreparation, Medium, TestResult};

/// What a running job tells the caller (the progress bar or the CI log lines).
#[derive(Debug)]
#[non_exhaustive]
pub enum Progress<'a> {
    /// The suite starts: how many columns per pass, how many passes, the expected seconds.
    SuiteStart {
        columns: usize,
        repeats: u32,
        expected_s: f64,
    },
    /// A pass of the suite starts (1-based), with `--repeat`.
    Pass { index: u32, of: u32 },
    /// A job starts; `expected_s` is ramp + runtime for time-based jobs.
    JobStart {
        name: &'a str,
        expected_s: Option<f64>,
    },
    /// Laying out a test file before the job (unmeasured).
    Layout {
        name: &'a str,
        done_bytes: u64,
        total_bytes: u64,
    },
    /// About ten times a second while the job runs.
    Tick {
        name: &'a str,
        elapsed_s: f64,
        measuring: bool,
    },
    /// Removing a column's test files after it was measured (unmeasured): `done_files` of
    /// `total_files` are gone. Sent once before the first file and after each. Freeing the
    /// blocks of a large file can take minutes (ext4 with `discard` on a busy disk), so it is
    /// a phase of its own, not silence after the measuring.
    Remove {
        name: &'a str,
        done_files: usize,
        total_files: usize,
    },
    /// The job finished.
    JobDone {
        name: &'a str,
        result: &'a TestResult,
    },
}

/// The progress callback type.
pub(crate) type ProgressFn<'a> = dyn FnMut(&Progress<'_>) + 'a;

/// Run one job: validate it (usage errors, exit 2), create and prepare its files as fio does
/// by default, run it, and return its figures. Files this call created are removed if the job
/// fails or is interrupted and left in place when it succeeds (as fio does); files that existed
/// are kept.
#[cfg(test)]
pub(crate) fn run_job(spec: &JobSpec, progress: &mut ProgressFn<'_>) -> Result<TestResult> {
    run_job_prepared(spec, &PrepOptions::default(), progress)
}

/// [`run_job`] with fio's file-preparation options (`fallocate`, `overwrite`,
/// `create_on_open`, `pre_read`, `invalidate`); see `crate::files::prep` for what each does.
pub fn run_job_prepared(
    spec: &JobSpec,
    prep: &PrepOptions,
    progress: &mut ProgressFn<'_>,
) -> Result<TestResult> {
    prepare_job(spec, prep, progress)?.run(progress)
}

/// A job whose files are open and prepared, not yet run: fio prepares every job of a group
/// before it starts any, so jobs that run at once (a job file's concurrent sections) are all
/// measured together, none while another lays out its file.
pub struct PreparedJob {
    spec: JobSpec,
    align: DirectIoAlignment,
    opened: Vec<OpenedFile>,
    preps: Vec<FilePreparation>,
    created: CreatedFiles,
}

/// Validate the job, create and prepare its files (see [`run_job_prepared`]).
pub fn prepare_job(
    spec: &JobSpec,
    prep: &PrepOptions,
    progress: &mut ProgressFn<'_>,
) -> Result<PreparedJob> {
    testfile::ignore_sigxfsz();
    let align = spec.validate()?;
    let files = spec.files();
    if !prep.create_on_open {
        testfile::check_free_space(&files, "--size")?;
    }
    let mut created = CreatedFiles::default();
    let lengths: Vec<Option<u64>> = files
        .iter()
        .map(|(p, _)| std::fs::metadata(p).ok().map(|m| m.len()))
        .collect();
    for (path, _) in &files {
        // symlink_metadata: a dangling symlink exists too, and is not ours to remove.
        if std::fs::symlink_metadata(path).is_err() {
            created.push(path.clone());
        }
    }
    let opened = open_files(spec, &files)?;
    let mut preps = Vec::with_capacity(files.len());
    for ((file, (_, size)), len) in opened.iter().zip(&files).zip(&lengths) {
        preps.push(prepare_file(
            spec, prep, file, *size, *len, &align, progress,
        )?);
    }
    if prep.pre_read {
        for file in &opened {
            pre_read(file)?;
        }
    } else if prep.invalidate {
        for file in opened.iter().filter(|f| !f.direct) {
            use std::os::fd::AsRawFd;
            // SAFETY: a descriptor we hold open; fadvise only drops clean cached pages.
            unsafe { libc::posix_fadvise(file.file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
        }
    }
    Ok(PreparedJob {
        spec: spec.clone(),
        align,
        opened,
        preps,
        created,
    })
}

impl PreparedJob {
    /// Run the prepared job. Files the preparation created are removed if it fails.
    pub fn run(self, progress: &mut ProgressFn<'_>) -> Result<TestResult> {
        let PreparedJob {
            spec,
            align,
            opened,
            preps,
            created,
        } = self;
        let mut result = execute(&spec, &align, &opened, progress)?;
        // One job, one description: the first file's (every file of a job is prepared alike).
        result.file_preparation = preps.into_iter().next();
        created.keep();
        Ok(result)
    }
}

/// Make one file of a job ready the way fio's `setup_files`/`extend_file` would: a file at
/// full size is used as it is; a missing or shorter one is emptied and allocated (`fallocate`
/// mode) and, for a job that reads or with `overwrite`, written front to back.
fn prepare_file(
    spec: &JobSpec,
    prep: &PrepOptions,
    file: &OpenedFile,
    size: u64,
    len_before: Option<u64>,
    align: &DirectIoAlignment,
    progress: &mut ProgressFn<'_>,
) -> Result<FilePreparation> {
    if prep.create_on_open {
        return Ok(FilePreparation {
            method: "create-on-open".into(),
            fresh: len_before.is_none(),
            detail: "nothing prepared: the job created or opened the file as it started \
                     (fio --create_on_open=1)"
                .into(),
        });
    }
    // Whole blocks only: the job never touches a tail shorter than one O_DIRECT unit.
    let unit = align.offset.max(1);
    let whole = size - size % unit;
    if let Some(len) = len_before
        && len >= whole
    {
        return Ok(FilePreparation {
            method: "existing".into(),
            fresh: false,
            detail: format!(
                "the file was already there ({}) and was used as it was, as fio does",
                format_size(len)
            ),
        });
    }
    let lays_out = spec.pattern.reads() || prep.overwrite;
    let mut p = crate::files::prep::fresh_allocated(file, size, prep.fallocate)?;
    if lays_out {
        // From 0: the allocation above already gave the file its full length.
        let chunk = testfile::lay_out_buffered(
            file,
            whole,
            spec.block_size,
            align,
            "--size",
            &mut |done| {
                progress(&Progress::Layout {
                    name: &spec.name,
                    done_bytes: done,
                    total_bytes: whole,
                })
            },
        )?;
        let how = match chunk {
            Some(chunk) => format!(
                "buffered writes of {}, synced, then dropped from the page cache",
                format_size(chunk)
            ),
            None => "writes of 1 MiB through the job's own descriptor, synced: /proc/self/fd was \
                     not there to reopen the file buffered, as fio writes it"
                .to_string(),
        };
        p.method = "written".into();
        p.detail = format!(
            "{} of real, incompressible data written before the job (unmeasured, {how}){}",
            format_size(whole),
            if spec.pattern.reads() {
                ", as fio lays out a file for a job that reads"
            } else {
                ", as fio does with --overwrite=1"
            }
        );
    }
    Ok(p)
}

/// fio's `pre_read`: read the whole file once before the job, through the page cache.
fn pre_read(file: &OpenedFile) -> Result<()> {
    use std::io::Read;
    let mut f = std::fs::File::open(&file.path)
        .with_context(|| format!("--pre_read: cannot open {}", file.path.display()))?;
    let mut buf = vec![0u8; 1 << 20];
    loop {
        if record::cancel::requested() {
            return Err(record::error::interrupted());
        }
        match f.read(&mut buf) {
            Ok(0) => return Ok(()),
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => {
                return Err(e)
                    .with_context(|| format!("--pre_read: cannot read {}", file.path.display()));
            }
        }
    }
}

/// Open every file of the job (O_DIRECT where asked and accepted).
pub(crate) fn open_files(spec: &JobSpec, files: &[(PathBuf, u64)]) -> Result<Vec<OpenedFile>> {
    files
        .iter()
        .map(|(p, _)| testfile::open_test_file(p, spec.direct, spec.sync))
        .collect()
}

/// Decide the backend (`BackendKind::auto` for `auto`), and psync with the reason
/// where the chosen one is refused; an explicit `--engine io_uring|libaio` that is refused is
/// a usage error instead. Returns (backend, fallback reason, note).
fn choose_engine(
    spec: &JobSpec,
    files: &[OpenedFile],
) -> Result<(BackendKind, Option<String>, Option<String>)> {
    let medium = match files.first() {
        Some(f) if is_memory_backed(&f.file) => {
            if files.iter().all(|f| f.direct) {
                Medium::MemoryDirect
            } else {
                Medium::MemoryBuffered
            }
        }
        _ => Medium::Disk,
    };
    let (wanted, note) = match spec.engine {
        EngineChoice::Psync => (BackendKind::Psync, None),
        EngineChoice::IoUring => (BackendKind::IoUring, None),
        EngineChoice::Libaio => (BackendKind::Libaio, None),
        EngineChoice::Auto => {
            // A write followed by its own sync call: libaio's path is the cheaper one there.
            let synced = matches!(spec.sync, SyncMode::Fdatasync(_) | SyncMode::Fsync(_));
            let kind = BackendKind::auto(spec.iodepth, medium, synced);
            // On memory the backend is the figure: psync would read well above a published
            // tmpfs row made on the same memory (docs/design/memory-backed-filesystems.md).
            let note = match medium {
                Medium::MemoryDirect => Some(
                    "memory-backed filesystem: every I/O completes inside the system call, so \
                     the figure is the cost of the I/O path; auto took libaio's path, the \
                     published harness's (fio --ioengine=libaio), so it compares with \
                     published tmpfs rows (--engine psync gives the cheapest path)",
                ),
                Medium::MemoryBuffered => Some(
                    "memory-backed filesystem without O_DIRECT: every I/O completes inside the \
                     system call and the published harness (always O_DIRECT) made no row here, \
                     so auto took psync, which times each I/O on its own (libaio would copy a \
                     whole queue of I/Os before reaping the first)",
                ),
                Medium::Disk => None,
            };
            (kind, note.map(String::from))
        }
    };
    let probe = match wanted {
        BackendKind::Psync => return Ok((BackendKind::Psync, None, note)),
        BackendKind::IoUring => uring::probe(),
        // Room for every job's depth at once: fs.aio-max-nr limits the sum.
        BackendKind::Libaio => {
            crate::backend::libaio::probe(spec.iodepth.saturating_mul(spec.numjobs))
        }
    };
    let Err(e) = probe else {
        return Ok((wanted, None, note));
    };
    let errno = e.raw_os_error().unwrap_or(0);
    let setup = match wanted {
        BackendKind::IoUring => "io_uring_setup",
        _ => "io_setup",
    };
    if spec.engine != EngineChoice::Auto {
        return Err(engine_refused(wanted, &e));
    }
    let reason = format!("{setup}: {} ({e}); used psync", crate::errno::name(errno));
    // The note told why auto wanted the refused backend; the fallback reason replaces it.
    Ok((BackendKind::Psync, Some(reason), None))
}

/// The usage error for an `--engine` asked for by name that this machine refuses.
fn engine_refused(wanted: BackendKind, e: &std::io::Error) -> anyhow::Error {
    let errno = e.raw_os_error().unwrap_or(0);
    let setup = match wanted {
        BackendKind::IoUring => "io_uring_setup",
        _ => "io_setup",
    };
    let hint = match (wanted, is_refusal(e)) {
        (BackendKind::IoUring, true) => {
            "io_uring is refused here (kernel.io_uring_disabled, seccomp)"
        }
        (BackendKind::IoUring, false) => "io_uring cannot be set up",
        (_, true) => "native AIO is refused here (seccomp, a kernel without CONFIG_AIO)",
        (_, false) => "native AIO cannot be set up (fs.aio-max-nr reached?)",
    };
    record::error::usage(format!(
        "--engine {}: {hint}: {setup}: {} ({e}); use --engine auto or psync",
        wanted.as_str(),
        crate::errno::name(errno)
    ))
}

/// `--engine io_uring` asked for by name: whether this machine sets up a ring, checked before
/// any test file is laid out (the refusal used to come after the layout of the first column's
/// files, for nothing). The same probe runs again per column.
pub(crate) fn check_engine_before_layout(choice: EngineChoice) -> Result<()> {
    if choice == EngineChoice::IoUring
        && let Err(e) = uring::probe()
    {
        return Err(engine_refused(BackendKind::IoUring, &e));
    }
    Ok(())
}

/// Whether the file lives on tmpfs or ramfs (statfs magic numbers from linux/magic.h).
fn is_memory_backed(file: &std::fs::File) -> bool {
    use std::os::fd::AsRawFd;
    const TMPFS_MAGIC: i64 = 0x0102_1994;
    const RAMFS_MAGIC: i64 = 0x8584_58f6;
    // SAFETY: fstatfs writes only into `buf`, which we own; the descriptor is open.
    let mut buf: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    if unsafe { libc::fstatfs(file.as_raw_fd(), &mut buf) } != 0 {
        return false;
    }
    #[allow(clippy::unnecessary_cast)] // f_type's type differs between targets
    let magic = buf.f_type as i64;
    magic == TMPFS_MAGIC || magic == RAMFS_MAGIC
}

/// Run a validated job on already opened (and, for reads, laid-out) files.
pub(crate) fn execute(
    spec: &JobSpec,
    align: &DirectIoAlignment,
    files: &[OpenedFile],
    progress: &mut ProgressFn<'_>,
) -> Result<TestResult> {
    testfile::ignore_sigxfsz();
    let (backend, fallback, engine_note) = choose_engine(spec, files)?;
    let depth = if backend == BackendKind::Psync {
        1
    } else {
        spec.iodepth
    };
    let mut notes: Vec<String> = files.iter().filter_map(|f| f.note.clone()).collect();
    notes.extend(engine_note);
    if backend == BackendKind::Psync && spec.iodepth > 1 {
        notes.push(format!(
            "psync keeps one I/O in flight per job: --iodepth {} ran as 1",
            spec.iodepth
        ));
    }
    let (ramp, runtime) = match spec.termination {
        Termination::Time { runtime, ramp } => (ramp, Some(runtime)),
        // The parent ends a steady window; the jobs stop by themselves only well past its
        // longest (should the parent stall).
        Termination::Steady { ramp, rule, .. } => {
            (ramp, Some(rule.max_window + Duration::from_secs(5)))
        }
        Termination::Size { runtime_cap } => (Duration::ZERO, runtime_cap),
    };
    let expected_s = match spec.termination {
        Termination::Time { runtime, ramp } => Some((runtime + ramp).as_secs_f64()),
        // A guess the progress bar corrects: most columns end soon after the shortest window.
        Termination::Steady { rule, ramp, .. } => Some((ramp + rule.min_window * 2).as_secs_f64()),
        Termination::Size { .. } => None,
    };
    // A steady window: the page the jobs count into and read their end from, and the rule
    // that watches it from the ticks below.
    let (window, mut watch) = match spec.termination {
        Termination::Steady { rule, ramp, drift } => (
            Some(
                crate::job::steady_window::WindowShared::new()
                    .context("cannot map the steady window's shared page (mmap)")?,
            ),
            Some(crate::job::steady_window::SteadyWatch::new(
                rule,
                drift,
                ramp,
                spec.block_size,
                spec.numjobs,
            )),
        ),
        _ => (None, None),
    };
    let mut ended = None;
    progress(&Progress::JobStart {
        name: &spec.name,
        expected_s,
    });

    let abort = AtomicBool::new(false);
    let barrier = crate::job::io_loop::StartGate::new(spec.numjobs as usize);
    let start = OnceLock::new();
    let plan = Plan {
        spec,
        depth,
        backend,
        ramp,
        runtime,
        steady: window.as_ref(),
        size_based: matches!(spec.termination, Termination::Size { .. }),
        mem_align: align.memory.max(4096) as usize,
        abort: &abort,
        gate: Gate::Barrier(&barrier),
        start: &start,
    };
    let job_files: Vec<&OpenedFile> = (0..spec.numjobs as usize)
        .map(|i| match spec.layout {
            Layout::FilePerJob { .. } => &files[i],
            Layout::SharedFile { .. } => &files[0],
        })
        .collect();
    let mut tick = |started: Option<u64>| {
        if let (Some(s), Some(w), Some(watch)) = (started, window.as_ref(), watch.as_mut())
            && ended.is_none()
        {
            let now = mono_ns();
            match watch.observe(now.saturating_sub(s), w.done_total()) {
                Some(Decision::MeasureFrom) => {
                    w.start_at(s + watch.measure_from_ns().unwrap_or(now.saturating_sub(s)))
                }
                Some(Decision::End(how)) => {
                    w.end_at(now);
                    ended = Some(how);
                }
                None => {}
            }
        }
        let elapsed = started
            .map(|s| Duration::from_nanos(mono_ns().saturating_sub(s)))
            .unwrap_or_default();
        let measuring = match watch.as_ref() {
            Some(watch) => watch.measure_from_ns().is_some(),
            None => elapsed >= ramp,
        };
        progress(&Progress::Tick {
            name: &spec.name,
            elapsed_s: elapsed.as_secs_f64(),
            measuring,
        });
    };
    let cpu_before = CpuTime::process();
    let children_before = CpuTime::children();
    let from_processes = if spec.thread {
        None
    } else {
        crate::job::process::run_jobs(&plan, &job_files, &mut tick)
            .map_err(|(call, e)| {
                notes.push(format!(
                    "jobs could not run as processes ({call}: {} ({e})); they ran as threads, \
                     as fio runs them with --thread",
                    crate::errno::name(e.raw_os_error().unwrap_or(0))
                ))
            })
            .ok()
    };
    let as_processes = from_processes.is_some();
    let outcomes = from_processes.unwrap_or_else(|| run_threads(&plan, &job_files, &mut tick));
    let mut whole_run_cpu = CpuTime::process().since(cpu_before);
    if as_processes {
        whole_run_cpu = whole_run_cpu.plus(CpuTime::children().since(children_before));
    }
    if record::cancel::requested() {
        return Err(record::error::interrupted());
    }
    let mut stats = Vec::with_capacity(outcomes.len());
    let mut first_error = None;
    for o in outcomes {
        match o {
            Ok(s) => stats.push(s),
            Err(WorkerError::Aborted) => {}
            Err(e) if first_error.is_none() => first_error = Some(e),
            Err(_) => {}
        }
    }
    if let Some(e) = first_error {
        return Err(e.into_error(spec));
    }
    if stats.len() < spec.numjobs as usize {
        // Every failure above is named; a job that stopped without one must not pass for a
        // figure.
        return Err(anyhow::anyhow!(
            "{}: {} of {} jobs stopped early without an error; no figure was kept",
            spec.name,
            spec.numjobs as usize - stats.len(),
            spec.numjobs
        ));
    }
    for s in &stats {
        if let Some(n) = &s.note
            && !notes.contains(n)
        {
            notes.push(n.clone());
        }
    }
    let engine = EngineUsed {
        used: backend.as_str().into(),
        fallback,
        direct: files.iter().all(|f| f.direct),
        jobs_as: Some(if as_processes { "processes" } else { "threads" }.into()),
    };
    let how_ended = ended.unwrap_or(crate::job::steady_window::Ended::MaxTime);
    let mut intervals = Vec::new();
    let mut ramp_s = None;
    if let Some(w) = watch.as_mut() {
        if how_ended == crate::job::steady_window::Ended::MaxTime {
            notes.push(w.max_time_note());
        }
        intervals = w.interval_rates().iter().map(|r| r.round()).collect();
        // To the millisecond: the parent decides on 50 ms ticks.
        ramp_s = w
            .measure_from_ns()
            .map(|ns| (ns as f64 / 1e6).round() / 1000.0);
    }
    let mut result = summarise(spec, plan.size_based, whole_run_cpu, engine, notes, &stats);
    if let Termination::Steady { rule, ramp, .. } = spec.termination {
        result.window = Some(record::MeasuredWindow {
            // Jobs that stopped by themselves passed the longest window.
            ended: how_ended.as_str().into(),
            rule: rule.describe(ramp),
            interval_iops: intervals,
            ramp_s,
        });
    }
    Ok(result)
}

/// Run each job on a thread of this process (fio's `--thread`).
fn run_threads(
    plan: &Plan<'_>,
    job_files: &[&OpenedFile],
    tick: &mut dyn FnMut(Option<u64>),
) -> Vec<Result<WorkerStats, WorkerError>> {
    std::thread::scope(|scope| {
        let mut handles = Vec::with_capacity(job_files.len());
        let mut not_started = None;
        for (i, &file) in job_files.iter().enumerate() {
            let spawned = std::thread::Builder::new()
                .name(format!("{}-{i}", plan.spec.name))
                .spawn_scoped(scope, move || {
                    let r = run_worker(plan, i as u32, file);
                    if r.is_err() {
                        plan.abort.store(true, Ordering::Relaxed);
                    }
                    r
                });
            match spawned {
                Ok(h) => handles.push(h),
                Err(e) => {
                    // The jobs already started wait at the gate for this one: call the start
                    // off so they return, and say why no figure comes.
                    plan.abort.store(true, Ordering::Relaxed);
                    if let Gate::Barrier(gate) = plan.gate {
                        gate.call_off();
                    }
                    not_started = Some((i, e));
                    break;
                }
            }
        }
        while !handles.iter().all(|h| h.is_finished()) {
            std::thread::sleep(Duration::from_millis(50));
            tick(plan.start.get().copied());
        }
        let mut outcomes: Vec<_> = handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| {
                    Err(WorkerError::Setup(anyhow::anyhow!(
                        "{}: a job thread panicked",
                        plan.spec.name
                    )))
                })
            })
            .collect();
        if let Some((i, e)) = not_started {
            outcomes.insert(
                0,
                Err(WorkerError::Setup(anyhow::anyhow!(
                    "{}: cannot start job {} of {} as a thread ({e}): a limit on processes \
                     or threads (the cgroup's pids.max, ulimit -u) was reached; raise it or \
                     use fewer jobs",
                    plan.spec.name,
                    i + 1,
                    job_files.len()
                ))),
            );
        }
        outcomes
    })
}

fn summarise(
    spec: &JobSpec,
    size_based: bool,
    whole_run_cpu: CpuTime,
    engine: EngineUsed,
    notes: Vec<String>,
    stats: &[WorkerStats],
) -> TestResult {
    let elapsed = stats
        .iter()
        .map(|s| s.window)
        .max()
        .unwrap_or_default()
        .as_secs_f64()
        .max(1e-9);
    // Time-based jobs share one window: as threads, the first worker's process-wide reading
    // covers all; as processes, each reading is its own process's and they add up.
    // Size-based jobs end at different times: the whole run's reading is the honest one.
    let cpu = if size_based {
        whole_run_cpu
    } else if engine.jobs_as.as_deref() == Some("processes") {
        stats
            .iter()
            .fold(CpuTime::default(), |sum, s| sum.plus(s.cpu))
    } else {
        stats.first().map(|s| s.cpu).unwrap_or_default()
    };
    let direction = |d: usize| -> DirectionStats {
        let mut hist = LatencyHist::new();
        let (mut ios, mut bytes) = (0, 0);
        for s in stats {
            hist.merge(&s.hist[d]);
            ios += s.ios[d];
            bytes += s.bytes[d];
        }
        let mut sync = LatencyHist::new();
        if d == WRITE {
            for s in stats {
                sync.merge(&s.sync_hist);
            }
        }
        let synced = sync.count() > 0;
        DirectionStats {
            ios,
            bytes,
            iops: ios as f64 / elapsed,
            mib_s: bytes as f64 / elapsed / (1024.0 * 1024.0),
            lat_ns: Some(hist.latency()),
            hist: Some(hist.encode()),
            sync_lat_ns: synced.then(|| sync.latency()),
            sync_hist: synced.then(|| sync.encode()),
        }
    };
    TestResult {
        id: spec.name.clone(),
        job: spec.settings(),
        engine,
        elapsed_s: elapsed,
        read: spec.pattern.reads().then(|| direction(READ)),
        write: spec.pattern.writes().then(|| direction(WRITE)),
        cpu: Cpu {
            user_s: cpu.user.as_secs_f64(),
            sys_s: cpu.sys.as_secs_f64(),
        },
        notes,
        repeats: None,
        file_preparation: None,
        cache_suspect: None,
        window: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::{EngineChoice, Pattern, SyncMode};
    use std::path::Path;

    fn spec(dir: &Path) -> JobSpec {
        JobSpec {
            name: "t".into(),
            pattern: Pattern::RandRw { read_pct: 70 },
            block_size: 4096,
            iodepth: 1,
            numjobs: 2,
            size_per_job: 1 << 20,
            layout: Layout::FilePerJob {
                dir: dir.to_path_buf(),
                prefix: "job".into(),
            },
            termination: Termination::Size { runtime_cap: None },
            direct: true,
            sync: SyncMode::None,
            engine: EngineChoice::Psync,
            seed: Some(1),
            thread: false,
        }
    }

    /// Name the calling thread (what a process it forks inherits as its name) and return a
    /// function that lists this process's children of that name: the job processes it forked.
    fn name_thread_and_find_job_processes(name: &str) -> impl Fn() -> Vec<i32> {
        let c = std::ffi::CString::new(name).unwrap();
        // SAFETY: PR_SET_NAME reads a NUL-terminated string of at most 16 bytes.
        unsafe { libc::prctl(libc::PR_SET_NAME, c.as_ptr()) };
        let name = name.to_string();
        move || {
            let me = std::process::id() as i32;
            std::fs::read_dir("/proc")
                .unwrap()
                .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
                .filter(|pid| {
                    let stat =
                        std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
                    // pid (comm) state ppid ...: fields after the last ')'.
                    let after = stat.rsplit_once(')').map(|(_, a)| a).unwrap_or("");
                    let mut f = after.split_whitespace();
                    let (state, ppid) = (f.next(), f.next().and_then(|p| p.parse::<i32>().ok()));
                    ppid == Some(me)
                        && state != Some("Z")
                        && std::fs::read_to_string(format!("/proc/{pid}/comm"))
                            .is_ok_and(|c| c.trim_end() == name)
                })
                .collect()
        }
    }

    #[test]
    fn jobs_run_as_processes_as_fio_does_and_as_threads_with_thread() {
        let dir = tempfile::tempdir().unwrap();
        let job_processes = name_thread_and_find_job_processes("dbench-procs");
        let mut s = spec(dir.path());
        s.pattern = Pattern::RandRead;
        s.termination = Termination::Time {
            runtime: Duration::from_millis(600),
            ramp: Duration::ZERO,
        };
        for thread in [false, true] {
            s.thread = thread;
            let mut seen = 0;
            let r = run_job(&s, &mut |p| {
                if let Progress::Tick {
                    measuring: true, ..
                } = p
                {
                    seen = seen.max(job_processes().len());
                }
            })
            .unwrap();
            let rd = r.read.as_ref().unwrap();
            assert!(rd.ios > 0 && rd.lat_ns.as_ref().unwrap().p99.unwrap() > 0);
            if thread {
                assert_eq!(seen, 0, "--thread: no job process");
                assert_eq!(r.engine.jobs_as.as_deref(), Some("threads"));
            } else {
                assert_eq!(seen, 2, "one process per job, while they measure");
                assert_eq!(r.engine.jobs_as.as_deref(), Some("processes"));
            }
            assert!(job_processes().is_empty(), "every job process waited for");
        }
    }

    /// Run a 2-job job of `pattern` far longer than the test, named `thread_name` (its job
    /// processes' name), and at the first measuring tick where `act` returns Some (it gets the
    /// job processes seen), stop. Returns the job's error, what `act` returned and how long
    /// the job took; checks that no job process and no file of the job is left.
    fn fail_while_measuring<T>(
        thread_name: &str,
        pattern: Pattern,
        mut act: impl FnMut(&[i32]) -> Option<T>,
    ) -> (String, T, Duration) {
        let dir = tempfile::tempdir().unwrap();
        let job_processes = name_thread_and_find_job_processes(thread_name);
        let mut s = spec(dir.path());
        s.pattern = pattern;
        s.termination = Termination::Time {
            runtime: Duration::from_secs(120),
            ramp: Duration::ZERO,
        };
        let started = std::time::Instant::now();
        let mut acted = None;
        let err = run_job(&s, &mut |p| {
            if let Progress::Tick {
                measuring: true, ..
            } = p
                && acted.is_none()
            {
                acted = act(&job_processes());
            }
        })
        .unwrap_err();
        let took = started.elapsed();
        let acted = acted.expect("the job processes were seen while measuring");
        assert!(job_processes().is_empty(), "every job process reaped");
        // The files this job created went with it.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        (format!("{err:#}"), acted, took)
    }

    #[test]
    fn a_job_process_that_dies_fails_the_job_by_name_and_stops_the_others() {
        let (text, pid, took) = fail_while_measuring("dbench-kill", Pattern::RandWrite, |pids| {
            let &pid = pids.first()?;
            // SAFETY: kill(2) on a job process this test's job forked.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            Some(pid)
        });
        assert!(
            text.contains(&format!("(pid {pid}) was killed by signal 9")),
            "{text}"
        );
        assert!(took < Duration::from_secs(30), "the other job stopped too");
    }

    #[test]
    fn a_job_process_that_stops_answering_is_killed_and_the_one_that_died_is_named() {
        let (text, dead, took) = fail_while_measuring("dbench-stop", Pattern::RandRead, |pids| {
            let &[stuck, dead] = pids else { return None };
            // SAFETY: signals to the two job processes this test's job forked: one stops (it
            // can no longer see the stop flag), the other dies.
            unsafe {
                libc::kill(stuck, libc::SIGSTOP);
                libc::kill(dead, libc::SIGKILL);
            }
            Some(dead)
        });
        // The job that died is the one named, not the one the parent had to kill.
        assert!(
            text.contains(&format!("(pid {dead}) was killed by signal 9")),
            "{text}"
        );
        // STOP_GRACE (5 s) and no more than the machine's slack: not the 120 s runtime.
        assert!(took < Duration::from_secs(60));
    }

    #[test]
    fn size_based_mixed_job_moves_each_region_once_and_keeps_its_files() {
        let dir = tempfile::tempdir().unwrap();
        let s = spec(dir.path());
        let mut events = 0;
        let r = run_job(&s, &mut |_| events += 1).unwrap();
        let (rd, wr) = (r.read.as_ref().unwrap(), r.write.as_ref().unwrap());
        // 2 jobs x 1 MiB / 4 KiB = 512 I/Os, split by the 70 % read share.
        assert_eq!(rd.ios + wr.ios, 512);
        assert!(
            rd.ios > wr.ios && wr.ios > 0,
            "{} reads, {} writes",
            rd.ios,
            wr.ios
        );
        assert_eq!(r.engine.used, "psync");
        assert_eq!(r.job.rw, "randrw");
        assert_eq!(r.job.rwmixread, Some(70));
        assert!(events > 0);
        // fio's habit: the files stay, laid out to their full size.
        for i in 0..2 {
            let len = std::fs::metadata(dir.path().join(format!("job.{i}")))
                .unwrap()
                .len();
            assert_eq!(len, 1 << 20);
        }
    }

    #[test]
    fn sizes_that_are_not_whole_blocks_still_lay_out_with_o_direct() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = spec(dir.path());
        s.pattern = Pattern::RandRead;
        s.numjobs = 1;
        s.size_per_job = 1_000_000;
        let r = run_job(&s, &mut |_| {}).unwrap();
        // 1_000_000 bytes hold 244 whole 4 KiB blocks; size-based reads move that many.
        assert_eq!(r.read.as_ref().unwrap().ios, 244);
        assert_eq!(r.notes, Vec::<String>::new());
    }

    #[test]
    fn io_uring_runs_linked_write_and_sync_pairs() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = spec(dir.path());
        s.pattern = Pattern::SeqRw { read_pct: 50 };
        s.engine = EngineChoice::IoUring;
        s.iodepth = 8;
        s.numjobs = 1;
        s.sync = SyncMode::Fdatasync(4);
        s.termination = Termination::Time {
            runtime: Duration::from_millis(300),
            ramp: Duration::from_millis(50),
        };
        let r = run_job(&s, &mut |_| {}).unwrap();
        assert_eq!(r.engine.used, "io_uring");
        assert!(r.write.as_ref().unwrap().ios > 0 && r.read.as_ref().unwrap().ios > 0);
        assert!((r.elapsed_s - 0.3).abs() < 1e-6);
        assert_eq!(r.job.sync, "fdatasync:4");
    }

    #[test]
    fn libaio_runs_reads_and_writes_at_depth_and_times_each_sync_alone() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = spec(dir.path());
        s.engine = EngineChoice::Libaio;
        s.iodepth = 8;
        let r = run_job(&s, &mut |_| {}).unwrap();
        assert_eq!(r.engine.used, "libaio");
        let (rd, wr) = (r.read.as_ref().unwrap(), r.write.as_ref().unwrap());
        // Size-based: 2 jobs x 1 MiB in 4 KiB I/Os, every one completed once.
        assert_eq!(rd.ios + wr.ios, 512);
        assert!(wr.sync_lat_ns.is_none(), "no sync asked for");

        // write + fdatasync: one I/O each, the sync timed on its own, as fio's libaio does.
        let dir = tempfile::tempdir().unwrap();
        let mut s = spec(dir.path());
        s.engine = EngineChoice::Libaio;
        s.pattern = Pattern::RandWrite;
        s.numjobs = 1;
        s.iodepth = 4;
        s.size_per_job = 256 << 10;
        s.sync = SyncMode::Fdatasync(1);
        let r = run_job(&s, &mut |_| {}).unwrap();
        let w = r.write.as_ref().unwrap();
        assert_eq!(w.ios, 64);
        let total = w.lat_ns.as_ref().unwrap().mean.unwrap();
        let sync = w
            .sync_lat_ns
            .as_ref()
            .expect("sync timed alone")
            .mean
            .unwrap();
        assert!(sync > 0 && sync <= total, "sync {sync} ns of {total} ns");
    }

    #[test]
    fn a_failed_validation_creates_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = spec(dir.path());
        s.numjobs = 0;
        assert!(run_job(&s, &mut |_| {}).is_err());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);

        // A file in a folder that does not exist: refused by name, nothing created.
        let mut s = spec(dir.path());
        s.layout = Layout::SharedFile {
            path: dir.path().join("missing-dir").join("f"),
            region_per_job: true,
        };
        let err = run_job(&s, &mut |_| {}).unwrap_err();
        assert_eq!(record::error::exit_code(&err), record::exit::USAGE);
        assert!(err.to_string().starts_with("--filename "), "{err:#}");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}

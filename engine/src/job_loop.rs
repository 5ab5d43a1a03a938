//! The job loop shared by every backend: one worker (a job's thread or process) keeps its
//! depth of I/Os in flight on its file until the job's time or bytes are done, and measures
//! each one.
//!
//! The hot path does per I/O: one PRNG step, one clock read at issue and one at completion
//! (per reap batch), one histogram increment. No allocation, no lock, no syscall besides the
//! I/O itself. Each I/O is submitted as soon as it is prepared, as fio does by default
//! (`iodepth_batch_submit=1`): submitting a batch at once let far fewer random writes into a
//! new file through on ext4 than fio did (docs/design/fio-parity.md).

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex, OnceLock};
use std::time::Duration;

use crate::backend::io_uring::Uring;
use crate::backend::libaio::Libaio;
use crate::backend::psync::Psync;
use crate::backend::{Backend, Completion, Io, IoKind, errno_name};
use crate::cpu::{CpuTime, mono_ns};
use crate::hist::LatencyHist;
use crate::job::{JobSpec, Layout, SyncMode};
use crate::prng::OffsetGen;
use crate::testfile::{self, AlignedBuf, OpenedFile};
use record::BackendKind;
use record::random::FastRng;

pub(crate) const READ: usize = 0;
pub(crate) const WRITE: usize = 1;

/// The jobs of a job, as threads, start together here: like `std::sync::Barrier`, but it can
/// be called off. A job thread that could not be started (a process or thread limit:
/// `pids.max`, `ulimit -u`) never arrives, and Ctrl-C must get through while the others wait:
/// either calls the start off and every waiting job returns at once.
pub(crate) struct StartGate {
    jobs: usize,
    /// (jobs arrived, called off)
    state: Mutex<(usize, bool)>,
    changed: Condvar,
}

impl StartGate {
    pub(crate) fn new(jobs: usize) -> StartGate {
        StartGate {
            jobs,
            state: Mutex::new((0, false)),
            changed: Condvar::new(),
        }
    }

    /// Wait until every job has arrived (true), or the start is called off or Ctrl-C comes
    /// (false).
    pub(crate) fn wait(&self) -> bool {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        st.0 += 1;
        if st.0 >= self.jobs {
            self.changed.notify_all();
        }
        loop {
            if st.1 {
                return false;
            }
            if st.0 >= self.jobs {
                return true;
            }
            if record::cancel::requested() {
                st.1 = true;
                self.changed.notify_all();
                return false;
            }
            st = self
                .changed
                .wait_timeout(st, Duration::from_millis(50))
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    /// Call the start off: every job waiting, and any that arrives later, returns false.
    pub(crate) fn call_off(&self) {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        st.1 = true;
        self.changed.notify_all();
    }
}

/// How the jobs of a job start together.
#[derive(Clone, Copy)]
pub(crate) enum Gate<'a> {
    /// Jobs as threads of this process.
    Barrier(&'a StartGate),
    /// Jobs as processes: the job process's own wait for the start time (CLOCK_MONOTONIC
    /// ns; None when told to stop).
    Wait(&'a (dyn Fn() -> Option<u64> + Sync)),
}

/// What every worker of a job shares.
#[derive(Clone, Copy)]
pub(crate) struct Plan<'a> {
    pub(crate) spec: &'a JobSpec,
    pub(crate) depth: u32,
    pub(crate) backend: BackendKind,
    pub(crate) ramp: Duration,
    /// Measured time (time-based) or the cap (size-based).
    pub(crate) runtime: Option<Duration>,
    pub(crate) size_based: bool,
    pub(crate) mem_align: usize,
    pub(crate) abort: &'a AtomicBool,
    pub(crate) gate: Gate<'a>,
    /// CLOCK_MONOTONIC nanoseconds when the first job started.
    pub(crate) start: &'a OnceLock<u64>,
}

impl<'a> Plan<'a> {
    /// The same plan, started and stopped another way (a job process's copy).
    pub(crate) fn with_gate(self, gate: Gate<'a>, abort: &'a AtomicBool) -> Plan<'a> {
        Plan {
            gate,
            abort,
            ..self
        }
    }
}

/// What one worker measured.
pub(crate) struct WorkerStats {
    pub(crate) hist: [LatencyHist; 2],
    /// The syncs alone, where the backend times them (psync).
    pub(crate) sync_hist: LatencyHist,
    pub(crate) ios: [u64; 2],
    pub(crate) bytes: [u64; 2],
    /// CPU time of the whole process (every job thread and io_uring's worker threads) over
    /// this worker's measured window. Threads share the window, so any one worker's view will
    /// do; a job process's view is its own.
    pub(crate) cpu: CpuTime,
    /// The measured window.
    pub(crate) window: Duration,
    /// Something the record should say about this worker's backend.
    pub(crate) note: Option<String>,
}

pub(crate) enum WorkerError {
    /// An I/O failed: errno, what, where.
    Io {
        errno: i32,
        kind: IoKind,
        offset: u64,
        file: PathBuf,
    },
    /// An I/O moved fewer bytes than asked.
    Short {
        kind: IoKind,
        offset: u64,
        moved: i32,
        asked: u32,
        file: PathBuf,
    },
    /// The backend could not be set up or failed outside an I/O.
    Setup(anyhow::Error),
    /// Another worker failed or Ctrl-C: this one stopped early.
    Aborted,
}

impl WorkerError {
    pub(crate) fn into_error(self, spec: &JobSpec) -> anyhow::Error {
        let needed: u64 = spec.files().iter().map(|(_, s)| s).sum();
        match self {
            WorkerError::Io {
                errno,
                kind,
                offset,
                file,
            } => {
                if testfile::is_no_space(errno) {
                    return testfile::no_space_error(&file, errno, needed, "--size");
                }
                let what = if kind.is_read() { "read" } else { "write" };
                anyhow::anyhow!(
                    "{}: {what} of {} bytes at offset {offset} in {} failed: {} ({})",
                    spec.name,
                    spec.block_size,
                    file.display(),
                    std::io::Error::from_raw_os_error(errno),
                    errno_name(errno)
                )
            }
            WorkerError::Short {
                kind,
                offset,
                moved,
                asked,
                file,
            } => {
                if !kind.is_read() {
                    // A short write is how a filling disk first shows.
                    return testfile::no_space_error(&file, libc::ENOSPC, needed, "--size");
                }
                anyhow::anyhow!(
                    "{}: read at offset {offset} in {} returned {moved} of {asked} bytes (the file is shorter than the job expects)",
                    spec.name,
                    file.display()
                )
            }
            WorkerError::Setup(e) => e,
            WorkerError::Aborted => record::error::interrupted(),
        }
    }
}

pub(crate) fn run_worker(
    plan: &Plan<'_>,
    index: u32,
    file: &OpenedFile,
) -> Result<WorkerStats, WorkerError> {
    // A private copy of the descriptor table, as fio's job processes have: with a table
    // shared by several threads, every pread/pwrite pays an atomic reference count on the
    // file (the kernel's fdget fast path needs an unshared table). The copy holds the same
    // open files and is released when the thread ends. Failure only costs that speed.
    // SAFETY: unshare(CLONE_FILES) affects only the calling thread's descriptor table.
    unsafe { libc::unshare(libc::CLONE_FILES) };
    let spec = plan.spec;
    let bs = spec.block_size as usize;
    let mut rng = FastRng::for_stream(spec.seed, index as u64);
    let bufs: Vec<AlignedBuf> = (0..plan.depth)
        .map(|_| AlignedBuf::new(bs, plan.mem_align, &mut rng))
        .collect();
    let ptrs: Vec<*mut u8> = bufs.iter().map(|b| b.as_ptr()).collect();
    let (region_start, region_len) = match spec.layout {
        Layout::SharedFile {
            region_per_job: true,
            ..
        } => (index as u64 * spec.size_per_job, spec.size_per_job),
        _ => (0, spec.size_per_job),
    };
    let region_len = region_len - region_len % spec.block_size;
    let offsets = OffsetGen::new(rng, region_start, region_len, spec.block_size);
    let mut state = WorkerState {
        bufs,
        offsets,
        region_start,
        region_end: region_start + region_len,
        next_seq: region_start,
        writes_since_sync: 0,
        file: file.path.clone(),
    };
    match plan.backend {
        BackendKind::IoUring => run_on(
            plan,
            &mut state,
            Uring::new(&file.file, ptrs, bs, plan.depth),
            |e| format!("cannot set up io_uring for {}: {e}", file.path.display()),
        ),
        BackendKind::Libaio => run_on(
            plan,
            &mut state,
            Libaio::new(&file.file, ptrs, plan.depth).map(|b| (b, None)),
            |e| {
                format!(
                    "cannot set up native AIO (io_setup) for {}: {e}; fs.aio-max-nr may be \
                     too low for this many jobs x --iodepth",
                    file.path.display()
                )
            },
        ),
        BackendKind::Psync => run_on(
            plan,
            &mut state,
            Ok((Psync::new(&file.file, ptrs), None)),
            |e| e.to_string(),
        ),
    }
}

/// Run the job loop on a backend that was just set up (with the note its setup left). Set
/// up before the barrier, so every job starts measuring together; a failed setup still
/// reaches the barrier so the others do not wait forever. `failed` words a setup error.
fn run_on<B: Backend>(
    plan: &Plan<'_>,
    state: &mut WorkerState,
    setup: std::io::Result<(B, Option<String>)>,
    failed: impl FnOnce(&std::io::Error) -> String,
) -> Result<WorkerStats, WorkerError> {
    match plan.gate {
        Gate::Barrier(gate) => {
            if !gate.wait() {
                return Err(WorkerError::Aborted);
            }
        }
        Gate::Wait(wait) => match wait() {
            // This process's copy of the plan: the start time came from the parent.
            Some(start) => {
                let _ = plan.start.set(start);
            }
            None => return Err(WorkerError::Aborted),
        },
    }
    let (mut backend, note) = setup
        .map_err(|e| WorkerError::Setup(anyhow::anyhow!("{}: {}", plan.spec.name, failed(&e))))?;
    let mut stats = job_loop(plan, &mut backend, state)?;
    stats.note = note;
    Ok(stats)
}

struct WorkerState {
    bufs: Vec<AlignedBuf>,
    offsets: OffsetGen,
    region_start: u64,
    region_end: u64,
    next_seq: u64,
    writes_since_sync: u32,
    file: PathBuf,
}

impl WorkerState {
    /// The next I/O for `slot`: direction by the read share, offset by the pattern.
    #[inline]
    fn next_io(&mut self, spec: &JobSpec, slot: u16) -> Io {
        let read_pct = spec.pattern.read_pct();
        let is_read = match read_pct {
            100 => true,
            0 => false,
            p => (self.offsets.rng().below(100) as u32) < p,
        };
        let offset = if spec.pattern.is_random() {
            self.offsets.next_offset()
        } else {
            let o = self.next_seq;
            self.next_seq += spec.block_size;
            if self.next_seq >= self.region_end {
                self.next_seq = self.region_start;
            }
            o
        };
        let kind = if is_read {
            IoKind::Read
        } else {
            // New contents for every write: a dedup or compression layer cannot flatter it.
            let buf = &mut self.bufs[slot as usize];
            buf.refresh(self.offsets.rng());
            match spec.sync {
                SyncMode::Fdatasync(n) | SyncMode::Fsync(n) => {
                    self.writes_since_sync += 1;
                    if self.writes_since_sync >= n {
                        self.writes_since_sync = 0;
                        if matches!(spec.sync, SyncMode::Fdatasync(_)) {
                            IoKind::WriteDatasync
                        } else {
                            IoKind::WriteFsync
                        }
                    } else {
                        IoKind::Write
                    }
                }
                _ => IoKind::Write,
            }
        };
        Io {
            slot,
            kind,
            offset,
            len: spec.block_size as u32,
        }
    }
}

/// The loop every backend shares: fill free slots, submit and reap, time each I/O.
fn job_loop<B: Backend>(
    plan: &Plan<'_>,
    backend: &mut B,
    state: &mut WorkerState,
) -> Result<WorkerStats, WorkerError> {
    let spec = plan.spec;
    let depth = backend.depth() as usize;
    let mut free: Vec<u16> = (0..depth as u16).rev().collect();
    let mut done: Vec<Completion> = Vec::with_capacity(depth * 2);
    let start = *plan.start.get_or_init(mono_ns);
    let mut issue_at: Vec<u64> = vec![start; depth];
    let mut slot_io: Vec<Io> = vec![
        Io {
            slot: 0,
            kind: IoKind::Read,
            offset: 0,
            len: 0
        };
        depth
    ];
    let measure_from = start + plan.ramp.as_nanos() as u64;
    let window_end = plan.runtime.map(|r| measure_from + r.as_nanos() as u64);
    let size_target = state.region_end - state.region_start;
    let mut issued_bytes = 0u64;

    let mut stats = WorkerStats {
        hist: [LatencyHist::new(), LatencyHist::new()],
        sync_hist: LatencyHist::new(),
        ios: [0; 2],
        bytes: [0; 2],
        cpu: CpuTime::default(),
        window: Duration::ZERO,
        note: None,
    };
    let mut measuring = plan.ramp.is_zero();
    let mut cpu_at_start = CpuTime::process();
    let mut cpu_at_end = None;
    let mut issuing = true;
    let mut inflight = 0usize;
    let mut last_done = start;
    let mut failure: Option<WorkerError> = None;

    loop {
        if issuing {
            while let Some(slot) = free.pop() {
                let io = state.next_io(spec, slot);
                backend.prepare(io);
                slot_io[slot as usize] = io;
                issue_at[slot as usize] = mono_ns();
                backend.submit(&mut done);
                inflight += 1;
                if plan.size_based {
                    issued_bytes += io.len as u64;
                    if issued_bytes >= size_target {
                        issuing = false;
                        break;
                    }
                }
            }
        }
        if inflight == 0 {
            break;
        }
        while let Err(e) = backend.submit_and_reap(&mut done) {
            if e.kind() != std::io::ErrorKind::Interrupted {
                // Nothing more can be reaped safely from a broken backend.
                return Err(WorkerError::Setup(anyhow::anyhow!(
                    "{}: the {} backend failed: {e}",
                    spec.name,
                    backend.name()
                )));
            }
            if record::cancel::requested() {
                issuing = false;
            }
        }
        let t_done = mono_ns();
        if !measuring && t_done >= measure_from {
            measuring = true;
            cpu_at_start = CpuTime::process();
        }
        let counting = measuring && window_end.is_none_or(|end| t_done <= end);
        for c in done.drain(..) {
            let slot = c.slot as usize;
            inflight -= 1;
            free.push(c.slot);
            let io = slot_io[slot];
            if c.result < 0 || (c.result as u32) < io.len {
                if failure.is_none() {
                    failure = Some(if c.result < 0 {
                        WorkerError::Io {
                            errno: -c.result,
                            kind: io.kind,
                            offset: io.offset,
                            file: state.file.clone(),
                        }
                    } else {
                        WorkerError::Short {
                            kind: io.kind,
                            offset: io.offset,
                            moved: c.result,
                            asked: io.len,
                            file: state.file.clone(),
                        }
                    });
                }
                issuing = false;
                continue;
            }
            if counting {
                let d = if io.kind.is_read() { READ } else { WRITE };
                let lat_ns = c.done_ns.unwrap_or(t_done).saturating_sub(issue_at[slot]);
                stats.hist[d].record(lat_ns);
                if let Some(sync_ns) = c.sync_ns {
                    stats.sync_hist.record(sync_ns);
                }
                stats.ios[d] += 1;
                stats.bytes[d] += io.len as u64;
            }
        }
        if counting {
            last_done = t_done;
        }
        if issuing {
            if let Some(end) = window_end
                && t_done >= end
            {
                issuing = false;
                cpu_at_end = Some(CpuTime::process());
            }
            if record::cancel::requested() || plan.abort.load(Ordering::Relaxed) {
                issuing = false;
                if failure.is_none() {
                    failure = Some(WorkerError::Aborted);
                }
            }
        }
    }
    // Every I/O has completed here (the loop drains before leaving), so no buffer is still
    // in the kernel's hands when the buffers are freed.
    if let Some(f) = failure {
        return Err(f);
    }
    stats.cpu = cpu_at_end
        .unwrap_or_else(CpuTime::process)
        .since(cpu_at_start);
    stats.window = match (plan.size_based, window_end) {
        (false, Some(end)) => Duration::from_nanos(end - measure_from),
        _ => Duration::from_nanos(last_done.saturating_sub(measure_from)),
    };
    Ok(stats)
}

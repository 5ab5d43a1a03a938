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
use crate::backend::{Backend, Completion, Io, IoKind};
use crate::files::testfile::{self, AlignedBuf, OpenedFile};
use crate::job::cpu::CpuTime;
use crate::job::hist::LatencyHist;
use crate::job::prng::OffsetGen;
use crate::job::{JobSpec, Layout, SyncMode};
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
    /// Measured time (time-based) or the cap (size-based; with `steady`, a bound in case
    /// the end is never decided).
    pub(crate) runtime: Option<Duration>,
    /// A steady window: its end decided while the job runs, instead of `runtime`.
    pub(crate) steady: Option<&'a crate::job::steady_window::WindowShared>,
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
        /// The write went through; its fdatasync/fsync failed.
        in_sync: bool,
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
                in_sync,
            } => {
                if crate::errno::is_no_space(errno) {
                    return testfile::no_space_error(&file, errno, needed, "--size");
                }
                if in_sync {
                    let sync = if kind == IoKind::WriteFsync {
                        "fsync"
                    } else {
                        "fdatasync"
                    };
                    return anyhow::anyhow!(
                        "{}: {sync} failed after the write of {} bytes at offset {offset} in {}: {} ({}); the write itself went through, but its data may not be on the disk",
                        spec.name,
                        spec.block_size,
                        file.display(),
                        std::io::Error::from_raw_os_error(errno),
                        crate::errno::name(errno)
                    );
                }
                let what = if kind.is_read() { "read" } else { "write" };
                anyhow::anyhow!(
                    "{}: {what} of {} bytes at offset {offset} in {} failed: {} ({})",
                    spec.name,
                    spec.block_size,
                    file.display(),
                    std::io::Error::from_raw_os_error(errno),
                    crate::errno::name(errno)
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
                    "{}: short read at offset {offset} in {}: {moved} of {asked} bytes (a file shorter than the job expects, or a filesystem that returned less)",
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
    let mut state = WorkerState::new(spec, index, plan.depth, plan.mem_align, file.path.clone());
    // The buffers stay where they are while the backend uses them: they live in `state`.
    let ptrs: Vec<*mut u8> = state.bufs.iter().map(|b| b.as_ptr()).collect();
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
    /// This worker's job index.
    index: u32,
}

impl WorkerState {
    /// Worker `index`'s buffers (one per slot, `depth` of them) and offsets in its region.
    fn new(spec: &JobSpec, index: u32, depth: u32, mem_align: usize, file: PathBuf) -> WorkerState {
        let bs = spec.block_size as usize;
        let mut rng = FastRng::for_stream(spec.seed, index as u64);
        let bufs: Vec<AlignedBuf> = (0..depth)
            .map(|_| AlignedBuf::new(bs, mem_align, &mut rng))
            .collect();
        let (region_start, region_len) = match spec.layout {
            Layout::SharedFile {
                region_per_job: true,
                ..
            } => (index as u64 * spec.size_per_job, spec.size_per_job),
            _ => (0, spec.size_per_job),
        };
        let region_len = region_len - region_len % spec.block_size;
        let offsets = OffsetGen::new(rng, region_start, region_len, spec.block_size);
        WorkerState {
            bufs,
            offsets,
            region_start,
            region_end: region_start + region_len,
            next_seq: region_start,
            writes_since_sync: 0,
            file,
            index,
        }
    }

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
    let start = *plan.start.get_or_init(|| backend.now_ns());
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
    // The longest ramp; a steady window's parent may start measuring sooner, once the rate
    // has settled (steady_window.rs).
    let ramp_end = start + plan.ramp.as_nanos() as u64;
    let measure_from_now = || match plan.steady.map(|w| w.start_ns()) {
        Some(at) if at != u64::MAX => at,
        _ => ramp_end,
    };
    let mut measure_from = ramp_end;
    let fixed_end = plan.runtime.map(|r| ramp_end + r.as_nanos() as u64);
    // A steady window's end is set by the parent once the rule is met (u64::MAX until then).
    // `runtime` then bounds it, should the parent never decide.
    let window_end = || match plan.steady {
        Some(w) => Some(w.end_ns().min(fixed_end.unwrap_or(u64::MAX))),
        None => fixed_end,
    };
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
                issue_at[slot as usize] = backend.now_ns();
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
        let t_done = backend.now_ns();
        let from = measure_from_now();
        if !measuring && t_done >= from {
            measuring = true;
            measure_from = from;
            cpu_at_start = CpuTime::process();
        } else if measuring && from > measure_from {
            // The parent restarted the window (the rate moved right after the ramp): what
            // was counted so far was ramp after all.
            measure_from = from;
            stats.hist = [LatencyHist::new(), LatencyHist::new()];
            stats.sync_hist = LatencyHist::new();
            stats.ios = [0; 2];
            stats.bytes = [0; 2];
            cpu_at_start = CpuTime::process();
            measuring = t_done >= measure_from;
        }
        let window_end = window_end();
        let counting = measuring && window_end.is_none_or(|end| t_done <= end);
        if let Some(w) = plan.steady {
            w.add_done(state.index, done.len() as u64);
        }
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
                            in_sync: c.sync_failed,
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
    stats.window = match (plan.size_based, window_end()) {
        (false, Some(end)) => Duration::from_nanos(end.saturating_sub(measure_from)),
        _ => Duration::from_nanos(last_done.saturating_sub(measure_from)),
    };
    Ok(stats)
}

#[cfg(test)]
mod tests {
    //! The job loop driven by the scripted backend (`backend::fake`): its clock is the fake's,
    //! so counts, latencies and the window are exact, and faults happen at the I/O chosen.

    use std::sync::Arc;
    use std::sync::atomic::AtomicBool;

    use super::*;
    use crate::backend::fake::{Fake, Outcome, Reap, Script, Step};
    use crate::job::{EngineChoice, Pattern, Termination};

    const BS: u64 = 4096;
    const START_NS: u64 = 1_000_000_000;
    const US: u64 = 1_000;
    const MS: u64 = 1_000_000;

    fn spec(pattern: Pattern, blocks: u64, sync: SyncMode) -> JobSpec {
        JobSpec {
            name: "fake-job".into(),
            pattern,
            block_size: BS,
            iodepth: 1,
            numjobs: 1,
            size_per_job: blocks * BS,
            layout: Layout::SharedFile {
                path: "/nowhere/fake".into(),
                region_per_job: true,
            },
            termination: Termination::Size { runtime_cap: None },
            direct: true,
            sync,
            engine: EngineChoice::Psync,
            seed: Some(7),
            thread: true,
        }
    }

    /// How a test runs the loop: by size (each block once) or for a time after a ramp.
    #[derive(Clone, Copy)]
    enum Until {
        Size,
        Time {
            runtime_ns: u64,
            ramp_ns: u64,
        },
        /// A steady window whose end the "parent" set at `end_ns` (absolute, the fake's clock),
        /// and, when Some, its start at `start_ns` (a ramp that settled before `ramp_ns`).
        Steady {
            ramp_ns: u64,
            start_ns: Option<u64>,
            end_ns: u64,
        },
    }

    /// Run the loop on `fake` for `spec`, as worker 0 of one.
    fn run(
        spec: &JobSpec,
        fake: &mut Fake,
        until: Until,
        abort: &AtomicBool,
    ) -> Result<WorkerStats, WorkerError> {
        let window = crate::job::steady_window::WindowShared::new().unwrap();
        run_with(spec, fake, until, abort, &window)
    }

    /// [`run`] with a steady window the test holds (a script can move its start).
    fn run_with(
        spec: &JobSpec,
        fake: &mut Fake,
        until: Until,
        abort: &AtomicBool,
        window: &crate::job::steady_window::WindowShared,
    ) -> Result<WorkerStats, WorkerError> {
        let barrier = StartGate::new(1);
        let start = OnceLock::new();
        let mut steady = None;
        let (runtime, ramp, size_based) = match until {
            Until::Size => (None, Duration::ZERO, true),
            Until::Steady {
                ramp_ns,
                start_ns,
                end_ns,
            } => {
                if let Some(at) = start_ns {
                    window.start_at(at);
                }
                window.end_at(end_ns);
                steady = Some(window);
                (None, Duration::from_nanos(ramp_ns), false)
            }
            Until::Time {
                runtime_ns,
                ramp_ns,
            } => (
                Some(Duration::from_nanos(runtime_ns)),
                Duration::from_nanos(ramp_ns),
                false,
            ),
        };
        let plan = Plan {
            spec,
            depth: fake.depth(),
            backend: BackendKind::Psync,
            ramp,
            runtime,
            steady,
            size_based,
            mem_align: 4096,
            abort,
            gate: Gate::Barrier(&barrier),
            start: &start,
        };
        let mut state = WorkerState::new(spec, 0, fake.depth(), 4096, "/nowhere/fake".into());
        let result = job_loop(&plan, fake, &mut state);
        assert_eq!(fake.in_flight(), 0, "the loop left I/Os in flight");
        assert_eq!(
            fake.completed.len(),
            fake.prepared.len(),
            "every I/O prepared was reaped"
        );
        result
    }

    fn constant(latency_ns: u64) -> Script {
        Box::new(move |_, _| Step::full(latency_ns))
    }

    /// `outcome` for I/O number `at`, every byte for the others.
    fn fault_at(at: u64, outcome: Outcome) -> Script {
        Box::new(move |n, _| Step {
            outcome: if n == at { outcome } else { Outcome::Full },
            ..Step::full(10 * US)
        })
    }

    fn no_abort() -> AtomicBool {
        AtomicBool::new(false)
    }

    #[test]
    fn a_size_based_job_moves_every_block_once_and_counts_every_io() {
        for (pattern, depth) in [
            (Pattern::RandRead, 1),
            (Pattern::RandRead, 4),
            (Pattern::Read, 8),
            (Pattern::RandWrite, 3),
        ] {
            let spec = spec(pattern, 64, SyncMode::None);
            let mut fake = Fake::new(depth, START_NS, constant(50 * US));
            let stats = run(&spec, &mut fake, Until::Size, &no_abort())
                .unwrap_or_else(|_| panic!("{pattern:?} at depth {depth} failed"));
            let d = if pattern.read_pct() == 100 {
                READ
            } else {
                WRITE
            };
            assert_eq!(stats.ios[d], 64, "{pattern:?} x{depth}");
            assert_eq!(stats.ios[1 - d], 0, "{pattern:?} x{depth}");
            assert_eq!(stats.bytes[d], 64 * BS, "{pattern:?} x{depth}");
            assert_eq!(stats.hist[d].count(), 64, "{pattern:?} x{depth}");
            assert_eq!(fake.prepared.len(), 64, "no I/O beyond the size");
            let mut offsets: Vec<u64> = fake.prepared.iter().map(|io| io.offset).collect();
            offsets.sort_unstable();
            let every_block: Vec<u64> = (0..64).map(|b| b * BS).collect();
            assert_eq!(
                offsets, every_block,
                "{pattern:?} x{depth}: each block once"
            );
            assert!(fake.prepared.iter().all(|io| io.len == BS as u32));
            // The window runs to the last completion: 64 I/Os of 50 us, `depth` at a time.
            let batches = 64u64.div_ceil(depth as u64);
            assert_eq!(
                stats.window,
                Duration::from_nanos(batches * 50 * US),
                "{pattern:?} x{depth}"
            );
        }
    }

    #[test]
    fn completions_in_scripted_order_give_each_io_its_own_latency() {
        // Four slots; the I/Os finish in the order 1, 3, 2, 0 of their issue.
        let latencies_us = [400u64, 100, 300, 200];
        let spec = spec(Pattern::RandRead, 4, SyncMode::None);
        let mut fake = Fake::new(
            4,
            START_NS,
            Box::new(move |n, _| Step::full(latencies_us[n as usize] * US)),
        );
        let stats = run(&spec, &mut fake, Until::Size, &no_abort())
            .ok()
            .unwrap();
        assert_eq!(fake.completed, [1, 3, 2, 0]);
        let h = stats.hist[READ].histogram();
        assert_eq!(h.len(), 4);
        for lat in latencies_us {
            assert_eq!(h.count_at(lat * US), 1, "one I/O of {lat} us");
        }
        assert!(h.equivalent(h.min(), 100 * US) && h.equivalent(h.max(), 400 * US));
        assert!(h.equivalent(h.value_at_quantile(0.5), 200 * US));
        assert_eq!(stats.window, Duration::from_nanos(400 * US));
    }

    #[test]
    fn the_depth_is_kept_full_until_the_last_ios() {
        for depth in [1u32, 2, 7, 32] {
            // Latencies that differ from one I/O to the next, so completions come one by one
            // and out of order.
            let spec = spec(Pattern::RandRead, 256, SyncMode::None);
            let mut fake = Fake::new(
                depth,
                START_NS,
                Box::new(|n, _| Step::full((10 + (n * 7919) % 97) * US)),
            );
            let stats = run(&spec, &mut fake, Until::Size, &no_abort())
                .ok()
                .unwrap();
            assert_eq!(stats.ios[READ], 256);
            let full = fake
                .in_flight_at_reap
                .iter()
                .take_while(|&&n| n == depth as usize)
                .count();
            assert!(
                fake.in_flight_at_reap.iter().all(|&n| n <= depth as usize),
                "depth {depth}: more in flight than the depth"
            );
            // Every wait but those for the last I/Os (no more to issue) has the depth in flight.
            let waits = fake.in_flight_at_reap.len();
            assert!(
                full >= waits - depth as usize,
                "depth {depth}: only {full} of {waits} waits had {depth} in flight: {:?}",
                fake.in_flight_at_reap
            );
        }
    }

    #[test]
    fn reads_and_writes_are_counted_apart_in_a_mixed_job() {
        let spec = spec(Pattern::RandRw { read_pct: 70 }, 500, SyncMode::None);
        let mut fake = Fake::new(
            4,
            START_NS,
            Box::new(|_, io| Step::full(if io.kind.is_read() { 100 * US } else { 30 * US })),
        );
        let stats = run(&spec, &mut fake, Until::Size, &no_abort())
            .ok()
            .unwrap();
        let reads = fake.prepared.iter().filter(|io| io.kind.is_read()).count() as u64;
        assert_eq!(stats.ios, [reads, 500 - reads]);
        assert_eq!(stats.bytes, [reads * BS, (500 - reads) * BS]);
        assert!((300..400).contains(&reads), "about 70 % reads: {reads}");
        // Each direction's histogram holds only its own latency.
        let (r, w) = (stats.hist[READ].histogram(), stats.hist[WRITE].histogram());
        assert_eq!(r.count_at(100 * US), reads);
        assert_eq!(w.count_at(30 * US), 500 - reads);
    }

    #[test]
    fn a_write_with_a_sync_records_the_sync_alone_every_nth_write() {
        for (sync, every) in [
            (SyncMode::Fdatasync(1), 1usize),
            (SyncMode::Fdatasync(4), 4),
            (SyncMode::Fsync(3), 3),
            (SyncMode::None, 0),
        ] {
            let spec = spec(Pattern::RandWrite, 48, sync);
            let mut fake = Fake::new(
                2,
                START_NS,
                Box::new(|_, _| Step {
                    sync_ns: 7 * US,
                    ..Step::full(20 * US)
                }),
            );
            let stats = run(&spec, &mut fake, Until::Size, &no_abort())
                .ok()
                .unwrap();
            let kinds: Vec<IoKind> = fake.prepared.iter().map(|io| io.kind).collect();
            let synced = kinds.iter().filter(|k| **k != IoKind::Write).count();
            assert_eq!(stats.ios[WRITE], 48, "{sync:?}");
            assert_eq!(synced, 48usize.checked_div(every).unwrap_or(0), "{sync:?}");
            if every > 0 {
                let want = if matches!(sync, SyncMode::Fsync(_)) {
                    IoKind::WriteFsync
                } else {
                    IoKind::WriteDatasync
                };
                for (i, k) in kinds.iter().enumerate() {
                    let expected = if (i + 1) % every == 0 {
                        want
                    } else {
                        IoKind::Write
                    };
                    assert_eq!(*k, expected, "{sync:?}: write {i}");
                }
            }
            assert_eq!(stats.sync_hist.count(), synced as u64, "{sync:?}");
            if synced > 0 {
                assert_eq!(stats.sync_hist.histogram().count_at(7 * US), synced as u64);
            }
        }
    }

    #[test]
    fn a_failed_io_stops_the_job_drains_the_rest_and_names_what_failed() {
        let cases: [(Pattern, Outcome, &str); 6] = [
            (Pattern::RandRead, Outcome::Errno(libc::EIO), "EIO"),
            (
                Pattern::RandRead,
                Outcome::Short(100),
                "short read at offset",
            ),
            // A sync's EIO was reported as a failed write.
            (
                Pattern::RandWrite,
                Outcome::SyncErrno(libc::EIO),
                "fdatasync failed after the write of 4096 bytes",
            ),
            (
                Pattern::RandWrite,
                Outcome::Errno(libc::EIO),
                "write of 4096 bytes",
            ),
            (
                Pattern::RandWrite,
                Outcome::Errno(libc::ENOSPC),
                "use a smaller --size",
            ),
            (
                Pattern::RandWrite,
                Outcome::Short(512),
                "use a smaller --size",
            ),
        ];
        for (pattern, outcome, says) in cases {
            for at in [0u64, 5, 37] {
                let spec = spec(pattern, 64, SyncMode::None);
                let mut fake = Fake::new(4, START_NS, fault_at(at, outcome));
                let err = match run(&spec, &mut fake, Until::Size, &no_abort()) {
                    Ok(_) => panic!("{outcome:?} at I/O {at}: the job succeeded"),
                    Err(e) => e,
                };
                let failed = fake.prepared[at as usize];
                match (&err, outcome) {
                    (
                        WorkerError::Io {
                            errno,
                            offset,
                            kind,
                            ..
                        },
                        Outcome::Errno(want) | Outcome::SyncErrno(want),
                    ) => {
                        assert_eq!(*errno, want);
                        assert_eq!((*offset, *kind), (failed.offset, failed.kind));
                    }
                    (
                        WorkerError::Short {
                            moved,
                            asked,
                            offset,
                            ..
                        },
                        Outcome::Short(want),
                    ) => {
                        assert_eq!((*moved, *asked), (want as i32, BS as u32));
                        assert_eq!(*offset, failed.offset);
                    }
                    _ => panic!("{outcome:?} at I/O {at}: another error"),
                }
                // Nothing is issued once the failure is seen: at most the slots then in flight.
                assert!(
                    fake.prepared.len() as u64 <= at + 4,
                    "{outcome:?} at {at}: {} I/Os issued",
                    fake.prepared.len()
                );
                let text = err.into_error(&spec).to_string();
                assert!(text.contains(says), "{outcome:?} at {at}: {text}");
                if let (Outcome::Short(moved), Pattern::RandRead) = (outcome, pattern) {
                    assert!(
                        text.contains(&format!("offset {}", failed.offset))
                            && text.contains(&format!("{moved} of 4096 bytes")),
                        "{text}"
                    );
                }
                if matches!(outcome, Outcome::Errno(libc::EIO)) && pattern == Pattern::RandWrite {
                    assert!(!text.contains("fdatasync"), "{text}");
                }
                if let Outcome::Errno(libc::EIO) = outcome {
                    assert!(
                        text.contains(&format!("offset {}", failed.offset)),
                        "{text}"
                    );
                }
            }
        }
    }

    #[test]
    fn a_time_based_job_counts_only_the_window_after_the_ramp() {
        // One I/O per millisecond per slot; ramp 2.5 ms, then 10 ms measured: the I/Os that
        // complete at 3, 4, ..., 12 ms are counted, the one issued at 12 ms is drained.
        for depth in [1u32, 3] {
            let spec = spec(Pattern::RandRead, 1024, SyncMode::None);
            let mut fake = Fake::new(depth, START_NS, constant(MS));
            let until = Until::Time {
                runtime_ns: 10 * MS,
                ramp_ns: 2 * MS + MS / 2,
            };
            let stats = run(&spec, &mut fake, until, &no_abort()).ok().unwrap();
            assert_eq!(stats.ios[READ], 10 * depth as u64, "depth {depth}");
            assert_eq!(stats.hist[READ].count(), 10 * depth as u64);
            assert_eq!(stats.window, Duration::from_millis(10));
            assert_eq!(fake.prepared.len() as u32, 13 * depth, "depth {depth}");
        }
    }

    /// A steady window ended by the parent at a time counts exactly what a fixed window
    /// ending then counts, and the job stops there.
    #[test]
    fn a_steady_window_counts_up_to_the_end_the_parent_set() {
        for depth in [1u32, 3] {
            let spec = spec(Pattern::RandRead, 1024, SyncMode::None);
            let ramp_ns = 2 * MS + MS / 2;
            let mut fake = Fake::new(depth, START_NS, constant(MS));
            let until = Until::Steady {
                ramp_ns,
                start_ns: None,
                end_ns: START_NS + ramp_ns + 10 * MS,
            };
            let stats = run(&spec, &mut fake, until, &no_abort()).ok().unwrap();
            assert_eq!(stats.ios[READ], 10 * depth as u64, "depth {depth}");
            assert_eq!(stats.window, Duration::from_millis(10));
            assert_eq!(fake.prepared.len() as u32, 13 * depth, "depth {depth}");
        }
    }

    /// A ramp the parent ended early (its rate settled) starts the count there, not at the
    /// longest ramp.
    #[test]
    fn a_steady_window_counts_from_the_start_the_parent_set() {
        for depth in [1u32, 3] {
            let spec = spec(Pattern::RandRead, 1024, SyncMode::None);
            let mut fake = Fake::new(depth, START_NS, constant(MS));
            let until = Until::Steady {
                ramp_ns: 5 * MS + MS / 2,
                start_ns: Some(START_NS + 2 * MS + MS / 2),
                end_ns: START_NS + 12 * MS + MS / 2,
            };
            let stats = run(&spec, &mut fake, until, &no_abort()).ok().unwrap();
            assert_eq!(stats.ios[READ], 10 * depth as u64, "depth {depth}");
            assert_eq!(stats.window, Duration::from_millis(10));
        }
    }

    /// A window the parent starts again while the job measures drops what was counted
    /// before (latencies too) and counts from the new start only.
    #[test]
    fn a_window_started_again_counts_from_the_new_start_only() {
        for depth in [1u32, 3] {
            let window = Arc::new(crate::job::steady_window::WindowShared::new().unwrap());
            let parent = window.clone();
            // Measuring from 2.5 ms; while preparing I/O number 4 * depth (at 4 ms) the
            // parent moves the start to 8.5 ms: without the drop, 16 reads per slot count.
            let script: Script = Box::new(move |n, _| {
                if n == 4 * depth as u64 {
                    parent.start_at(START_NS + 8 * MS + MS / 2);
                }
                Step::full(MS)
            });
            let mut fake = Fake::new(depth, START_NS, script);
            let spec = spec(Pattern::RandRead, 1024, SyncMode::None);
            let until = Until::Steady {
                ramp_ns: 2 * MS + MS / 2,
                start_ns: None,
                end_ns: START_NS + 18 * MS + MS / 2,
            };
            let stats = run_with(&spec, &mut fake, until, &no_abort(), &window)
                .ok()
                .unwrap();
            assert_eq!(stats.window, Duration::from_millis(10), "depth {depth}");
            assert_eq!(stats.ios[READ], 10 * depth as u64, "depth {depth}");
            assert_eq!(stats.hist[READ].count(), 10 * depth as u64, "depth {depth}");
        }
    }

    #[test]
    fn a_time_based_job_wraps_around_its_region() {
        // 8 blocks, 40 sequential reads: the offsets go round the region five times.
        let spec = spec(Pattern::Read, 8, SyncMode::None);
        let mut fake = Fake::new(1, START_NS, constant(MS));
        let until = Until::Time {
            runtime_ns: 40 * MS,
            ramp_ns: 0,
        };
        let stats = run(&spec, &mut fake, until, &no_abort()).ok().unwrap();
        assert_eq!(stats.ios[READ], 40);
        for (i, io) in fake.prepared.iter().enumerate() {
            assert_eq!(io.offset, (i as u64 % 8) * BS, "read {i}");
        }
    }

    #[test]
    fn an_abort_stops_the_job_at_the_next_completion() {
        let abort = Arc::new(AtomicBool::new(false));
        let flag = abort.clone();
        let spec = spec(Pattern::RandRead, 1024, SyncMode::None);
        let mut fake = Fake::new(
            2,
            START_NS,
            Box::new(move |n, _| {
                // Another worker fails while this one prepares its 20th I/O.
                if n == 20 {
                    flag.store(true, Ordering::Relaxed);
                }
                Step::full(US)
            }),
        );
        let result = run(&spec, &mut fake, Until::Size, &abort);
        assert!(matches!(result, Err(WorkerError::Aborted)));
        assert!(fake.prepared.len() <= 22, "{} issued", fake.prepared.len());
    }

    #[test]
    fn an_interrupted_wait_is_retried_and_a_broken_backend_is_an_error() {
        let spec = spec(Pattern::RandRead, 32, SyncMode::None);
        let mut fake = Fake::new(2, START_NS, constant(US)).with_reaps(|call| {
            if call % 3 == 1 {
                Reap::Interrupted
            } else {
                Reap::Wait
            }
        });
        let stats = run(&spec, &mut fake, Until::Size, &no_abort())
            .ok()
            .unwrap();
        assert_eq!(stats.ios[READ], 32, "EINTR is retried, nothing lost");

        let mut fake = Fake::new(2, START_NS, constant(US)).with_reaps(|call| {
            if call == 4 {
                Reap::Broken(libc::EBADF)
            } else {
                Reap::Wait
            }
        });
        let spec_ref = &spec;
        let barrier = StartGate::new(1);
        let start = OnceLock::new();
        let abort = no_abort();
        let plan = Plan {
            spec: spec_ref,
            depth: 2,
            backend: BackendKind::Psync,
            ramp: Duration::ZERO,
            runtime: None,
            steady: None,
            size_based: true,
            mem_align: 4096,
            abort: &abort,
            gate: Gate::Barrier(&barrier),
            start: &start,
        };
        let mut state = WorkerState::new(spec_ref, 0, 2, 4096, "/nowhere/fake".into());
        match job_loop(&plan, &mut fake, &mut state) {
            Err(WorkerError::Setup(e)) => {
                let text = e.to_string();
                assert!(text.contains("the fake backend failed"), "{text}");
            }
            _ => panic!("a broken backend is not an error"),
        }
    }
}

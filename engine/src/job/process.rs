//! Jobs as processes, as fio runs them unless told `--thread`: each job of a job runs in a
//! process of its own, forked from this one.
//!
//! Why: fio runs each job as a process unless told `--thread`, and the published harness runs
//! it that way, so the suite does too: each job has its own address space, descriptor table
//! and CPU accounting on both sides, and a job that crashes takes only itself down. It did not
//! move the engine's own figures; fio is the one slower as processes than as threads
//! (docs/design/jobs-as-processes.md). `cargo diskbench fio --thread` runs the jobs as
//! threads, as fio would.
//!
//! How: the parent prepares everything (files opened, plan made), then forks one child per
//! job. A child sets its backend up, says "ready" on a shared pipe and waits for "go", which
//! carries the start time (zero: stop). It runs the same job loop as a thread would, writes
//! what it measured to its own pipe (JSON, histograms encoded) and leaves with `_exit`, so
//! nothing of the parent (buffers, files, temp folders) is flushed or removed twice. A flag in
//! a shared anonymous page stops every job when one fails or the parent is told to stop; one
//! that has not stopped 5 s later is killed, and on any way out of the parent (an error, a
//! panic) every job process is killed and waited for. A child dies with its parent
//! (`PR_SET_PDEATHSIG`) and keeps no descriptor but its file and its three pipe ends.

use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use serde::{Deserialize, Serialize};

use crate::backend::IoKind;
use crate::files::testfile::OpenedFile;
use crate::job::cpu::{CpuTime, mono_ns};
use crate::job::hist::LatencyHist;
use crate::job::io_loop::{Gate, Plan, WorkerError, WorkerStats, run_worker};
use crate::job::shared_page::SharedPage;

/// A flag every job process sees: one page of anonymous shared memory.
pub(crate) struct SharedFlag {
    page: SharedPage,
}

impl SharedFlag {
    pub(crate) fn new() -> io::Result<SharedFlag> {
        Ok(SharedFlag {
            page: SharedPage::new()?,
        })
    }

    pub(crate) fn get(&self) -> &AtomicBool {
        // SAFETY: the page is mapped, writable, zero-filled (false), page-aligned and lives as
        // long as `self`; AtomicBool has the size and alignment of a u8.
        unsafe { &*(self.page.as_ptr() as *const AtomicBool) }
    }
}

/// A pipe's two ends, closed on exec (a command another thread starts must not hold them).
struct Pipe {
    read: RawFd,
    write: RawFd,
}

impl Pipe {
    fn new() -> io::Result<Pipe> {
        let mut fds = [0 as RawFd; 2];
        // SAFETY: pipe2 writes two descriptors into the array we own.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Pipe {
            read: fds[0],
            write: fds[1],
        })
    }
}

impl Drop for Pipe {
    fn drop(&mut self) {
        close(&mut self.read);
        close(&mut self.write);
    }
}

fn close(fd: &mut RawFd) {
    if *fd >= 0 {
        // SAFETY: the descriptor is one of ours and is closed once (set to -1 after).
        unsafe { libc::close(*fd) };
        *fd = -1;
    }
}

/// The parent reads its pipes without waiting: a blocking read would stall the loop that
/// watches every job.
fn set_nonblocking(fd: RawFd) -> io::Result<()> {
    // SAFETY: fcntl on a descriptor we own.
    let ok = unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        flags >= 0 && libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) == 0
    };
    if ok {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Write all of `bytes`, through EINTR.
fn write_all(fd: RawFd, mut bytes: &[u8]) -> io::Result<()> {
    while !bytes.is_empty() {
        // SAFETY: writes from a slice we own into a descriptor we own.
        let n = unsafe { libc::write(fd, bytes.as_ptr().cast(), bytes.len()) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        bytes = &bytes[n as usize..];
    }
    Ok(())
}

/// Read what is there now (the descriptor is non-blocking). Returns whether the writer is gone.
fn drain(fd: RawFd, into: &mut Vec<u8>) -> bool {
    let mut buf = [0u8; 8192];
    loop {
        // SAFETY: reads into a buffer we own from a descriptor we own.
        let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
        match n {
            0 => return true,
            n if n > 0 => into.extend_from_slice(&buf[..n as usize]),
            _ => {
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                // EAGAIN: nothing more for now. Any other error: nothing more ever.
                return e.kind() != io::ErrorKind::WouldBlock;
            }
        }
    }
}

/// In a job process: say "ready" and wait for "go". Returns the start time (CLOCK_MONOTONIC
/// ns), or None when the parent says stop or is gone.
fn wait_for_go(ready: RawFd, go: RawFd) -> Option<u64> {
    write_all(ready, &[1]).ok()?;
    let mut buf = [0u8; 8];
    let mut got = 0;
    while got < buf.len() {
        // SAFETY: reads into the part of `buf` not filled yet.
        let n = unsafe { libc::read(go, buf[got..].as_mut_ptr().cast(), buf.len() - got) };
        match n {
            0 => return None,
            n if n > 0 => got += n as usize,
            _ if io::Error::last_os_error().kind() == io::ErrorKind::Interrupted => {}
            _ => return None,
        }
    }
    let start = u64::from_ne_bytes(buf);
    (start != 0).then_some(start)
}

/// What a job process hands back: [`WorkerStats`] or [`WorkerError`], on the wire.
#[derive(Serialize, Deserialize)]
enum Wire {
    Stats {
        /// Reads, writes: encoded histograms.
        hist: [String; 2],
        sync_hist: String,
        ios: [u64; 2],
        bytes: [u64; 2],
        cpu_user_ns: u64,
        cpu_sys_ns: u64,
        window_ns: u64,
        note: Option<String>,
    },
    Io {
        errno: i32,
        kind: u8,
        offset: u64,
        in_sync: bool,
    },
    Short {
        kind: u8,
        offset: u64,
        moved: i32,
        asked: u32,
    },
    Setup(String),
    Aborted,
}

fn kind_code(kind: IoKind) -> u8 {
    match kind {
        IoKind::Read => 0,
        IoKind::Write => 1,
        IoKind::WriteDatasync => 2,
        IoKind::WriteFsync => 3,
    }
}

fn kind_from(code: u8) -> IoKind {
    match code {
        0 => IoKind::Read,
        2 => IoKind::WriteDatasync,
        3 => IoKind::WriteFsync,
        _ => IoKind::Write,
    }
}

impl Wire {
    fn from_outcome(outcome: Result<WorkerStats, WorkerError>) -> Wire {
        match outcome {
            Ok(s) => Wire::Stats {
                hist: [s.hist[0].encode(), s.hist[1].encode()],
                sync_hist: s.sync_hist.encode(),
                ios: s.ios,
                bytes: s.bytes,
                cpu_user_ns: s.cpu.user.as_nanos() as u64,
                cpu_sys_ns: s.cpu.sys.as_nanos() as u64,
                window_ns: s.window.as_nanos() as u64,
                note: s.note,
            },
            Err(WorkerError::Io {
                errno,
                kind,
                offset,
                in_sync,
                ..
            }) => Wire::Io {
                errno,
                kind: kind_code(kind),
                offset,
                in_sync,
            },
            Err(WorkerError::Short {
                kind,
                offset,
                moved,
                asked,
                ..
            }) => Wire::Short {
                kind: kind_code(kind),
                offset,
                moved,
                asked,
            },
            Err(WorkerError::Setup(e)) => Wire::Setup(format!("{e:#}")),
            Err(WorkerError::Aborted) => Wire::Aborted,
        }
    }

    fn into_outcome(self, file: &Path) -> anyhow::Result<Result<WorkerStats, WorkerError>> {
        use std::time::Duration;
        Ok(match self {
            Wire::Stats {
                hist,
                sync_hist,
                ios,
                bytes,
                cpu_user_ns,
                cpu_sys_ns,
                window_ns,
                note,
            } => Ok(WorkerStats {
                hist: [
                    LatencyHist::decode(&hist[0])?,
                    LatencyHist::decode(&hist[1])?,
                ],
                sync_hist: LatencyHist::decode(&sync_hist)?,
                ios,
                bytes,
                cpu: CpuTime {
                    user: Duration::from_nanos(cpu_user_ns),
                    sys: Duration::from_nanos(cpu_sys_ns),
                },
                window: Duration::from_nanos(window_ns),
                note,
            }),
            Wire::Io {
                errno,
                kind,
                offset,
                in_sync,
            } => Err(WorkerError::Io {
                errno,
                kind: kind_from(kind),
                offset,
                file: file.to_path_buf(),
                in_sync,
            }),
            Wire::Short {
                kind,
                offset,
                moved,
                asked,
            } => Err(WorkerError::Short {
                kind: kind_from(kind),
                offset,
                moved,
                asked,
                file: file.to_path_buf(),
            }),
            Wire::Setup(message) => Err(WorkerError::Setup(anyhow::anyhow!(message))),
            Wire::Aborted => Err(WorkerError::Aborted),
        })
    }
}

/// One forked job process, as the parent sees it.
struct Child {
    pid: libc::pid_t,
    /// The read end of its result pipe (-1 once it said all).
    result: RawFd,
    received: Vec<u8>,
    /// What `received` says, read once the child has ended.
    said: Result<Wire, String>,
    /// Set once it has ended and was waited for: its waitpid status, None if unknown (ECHILD:
    /// something else reaped it, e.g. SIGCHLD ignored).
    ended: Option<Option<libc::c_int>>,
    /// Killed by the parent after STOP_GRACE: told to stop, it did not.
    killed: bool,
}

/// How long job processes get to stop by themselves once told to, before they are killed.
const STOP_GRACE: std::time::Duration = std::time::Duration::from_secs(5);

/// Every job process of one job and the pipes to them. Dropped on any path out of
/// [`run_jobs`], an unwinding one included: then nobody is left running or unreaped.
struct Jobs<'a> {
    children: Vec<Child>,
    ready: Pipe,
    go: Pipe,
    abort: &'a AtomicBool,
    released: bool,
}

impl Jobs<'_> {
    fn wait_nohang(&mut self) {
        for c in self.children.iter_mut().filter(|c| c.ended.is_none()) {
            if c.result >= 0 && drain(c.result, &mut c.received) {
                close(&mut c.result);
            }
            let mut status = 0;
            // SAFETY: waits, without blocking, for our own child.
            let r = unsafe { libc::waitpid(c.pid, &mut status, libc::WNOHANG) };
            let gone = r == c.pid
                || (r < 0 && io::Error::last_os_error().raw_os_error() == Some(libc::ECHILD));
            if gone {
                c.ended = Some((r == c.pid).then_some(status));
                if c.result >= 0 {
                    drain(c.result, &mut c.received);
                    close(&mut c.result);
                }
                c.said = serde_json::from_slice(&std::mem::take(&mut c.received))
                    .map_err(|e| e.to_string());
                // A job that ended without its figures (killed, failed) stops the others,
                // as a failed thread does.
                if !matches!(c.said, Ok(Wire::Stats { .. })) {
                    self.abort.store(true, Ordering::Relaxed);
                }
            }
        }
    }

    /// Tell every job to stop: the flag for those running, "stop" for those at the gate.
    fn stop(&mut self) {
        self.abort.store(true, Ordering::Relaxed);
        if !self.released {
            self.released = true;
            let _ = write_all(
                self.go.write,
                &0u64.to_ne_bytes().repeat(self.children.len()),
            );
        }
    }

    fn kill_remaining(&mut self) {
        for c in self.children.iter_mut().filter(|c| c.ended.is_none()) {
            // SAFETY: kill(2) on our own child, not yet waited for (its pid is not reused).
            unsafe { libc::kill(c.pid, libc::SIGKILL) };
            c.killed = true;
        }
    }
}

impl Drop for Jobs<'_> {
    fn drop(&mut self) {
        if self.children.iter().any(|c| c.ended.is_none()) {
            // Only on a path that did not wait for them (an error or a panic in the parent):
            // they must not go on writing into files the caller is about to remove.
            self.stop();
            self.kill_remaining();
            for c in self.children.iter_mut().filter(|c| c.ended.is_none()) {
                let mut status = 0;
                // SAFETY: waits for our own child, just sent SIGKILL; EINTR is retried.
                while unsafe { libc::waitpid(c.pid, &mut status, 0) } < 0
                    && io::Error::last_os_error().kind() == io::ErrorKind::Interrupted
                {
                }
                c.ended = Some(Some(status));
            }
        }
        for c in &mut self.children {
            close(&mut c.result);
        }
    }
}

/// Run each job in a process of its own (`files[i]` is job i's file) and collect what each
/// measured, in job order. `tick` is called every 50 ms or so with the start time once the
/// jobs have started. Err: the call that failed and why; no job ran, and the caller may run
/// the jobs as threads instead.
pub(crate) fn run_jobs(
    plan: &Plan<'_>,
    files: &[&OpenedFile],
    tick: &mut dyn FnMut(Option<u64>),
) -> Result<Vec<Result<WorkerStats, WorkerError>>, (&'static str, io::Error)> {
    let flag = SharedFlag::new().map_err(|e| ("mmap", e))?;
    let abort = flag.get();
    let mut jobs = Jobs {
        children: Vec::with_capacity(files.len()),
        ready: Pipe::new().map_err(|e| ("pipe2", e))?,
        go: Pipe::new().map_err(|e| ("pipe2", e))?,
        abort,
        released: false,
    };
    let parent = std::process::id() as libc::pid_t;
    for (index, file) in files.iter().enumerate() {
        let mut result = Pipe::new().map_err(|e| ("pipe2", e))?;
        // SAFETY: fork. The child sets up its backend, runs the job loop and reports over a
        // pipe (allocating: glibc makes malloc usable in the child of a threaded process);
        // it takes no lock another thread of this process may hold, except on a panic, whose
        // hook may (then only this job hangs, and the parent kills it after STOP_GRACE). It
        // never returns into this code: every way out of `run_child` ends in _exit.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            let keep = [
                jobs.ready.write,
                jobs.go.read,
                result.write,
                file.file.as_raw_fd(),
            ];
            let (ready, go) = (jobs.ready.write, jobs.go.read);
            let wait = move || wait_for_go(ready, go);
            let child_plan = plan.with_gate(Gate::Wait(&wait), abort);
            let outcome = catch_unwind(AssertUnwindSafe(|| {
                run_child(&child_plan, index as u32, file, parent, &keep, result.write)
            }));
            // Only a panic outside the job itself gets here; its payload is not dropped (a
            // destructor could panic again).
            std::mem::forget(outcome);
            // SAFETY: ends the child without running the parent's destructors.
            unsafe { libc::_exit(101) }
        }
        if pid < 0 {
            return Err(("fork", io::Error::last_os_error()));
        }
        close(&mut result.write);
        let read_end = std::mem::replace(&mut result.read, -1);
        jobs.children.push(Child {
            pid,
            result: read_end,
            received: Vec::new(),
            said: Err("nothing received".into()),
            ended: None,
            killed: false,
        });
        set_nonblocking(read_end).map_err(|e| ("fcntl", e))?;
    }
    // Only the children write "ready" and read "go" now: their ends close with them.
    close(&mut jobs.ready.write);
    close(&mut jobs.go.read);
    set_nonblocking(jobs.ready.read).map_err(|e| ("fcntl", e))?;

    let n = jobs.children.len();
    let mut said_ready = 0usize;
    let mut started: Option<u64> = None;
    let mut stopping_since: Option<std::time::Instant> = None;
    let mut ready_bytes = Vec::new();
    while jobs.children.iter().any(|c| c.ended.is_none()) {
        let mut fds: Vec<libc::pollfd> = jobs
            .children
            .iter()
            .filter(|c| c.result >= 0)
            .map(|c| libc::pollfd {
                fd: c.result,
                events: libc::POLLIN,
                revents: 0,
            })
            .collect();
        if !jobs.released && jobs.ready.read >= 0 {
            fds.push(libc::pollfd {
                fd: jobs.ready.read,
                events: libc::POLLIN,
                revents: 0,
            });
        }
        // SAFETY: polls descriptors we own, through a slice we own; a timeout bounds it.
        unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, 50) };
        if !jobs.released && jobs.ready.read >= 0 {
            ready_bytes.clear();
            if drain(jobs.ready.read, &mut ready_bytes) {
                close(&mut jobs.ready.read);
            }
            said_ready += ready_bytes.len();
        }
        jobs.wait_nohang();
        let stop = record::cancel::requested() || abort.load(Ordering::Relaxed);
        let one_ended = jobs.children.iter().any(|c| c.ended.is_some());
        if !jobs.released && said_ready >= n && !stop && !one_ended {
            let start = mono_ns().max(1);
            if write_all(jobs.go.write, &start.to_ne_bytes().repeat(n)).is_ok() {
                jobs.released = true;
                started = Some(start);
            }
        }
        if stop || (!jobs.released && one_ended) {
            jobs.stop();
            let since = *stopping_since.get_or_insert_with(std::time::Instant::now);
            if since.elapsed() > STOP_GRACE {
                jobs.kill_remaining();
            }
        }
        tick(started);
    }
    let children = std::mem::take(&mut jobs.children);
    drop(jobs);
    Ok(children
        .into_iter()
        .zip(files)
        .enumerate()
        .map(|(i, (c, file))| outcome(plan, i, c, &file.path))
        .collect())
}

/// What one ended child's bytes and status say.
fn outcome(
    plan: &Plan<'_>,
    index: usize,
    child: Child,
    file: &Path,
) -> Result<WorkerStats, WorkerError> {
    let decoded = child
        .said
        .map_err(anyhow::Error::msg)
        .and_then(|w| w.into_outcome(file));
    match decoded {
        Ok(o) => o,
        // A job stopped by the flag still says so; one without a word was ended from outside:
        // Ctrl-C or SIGTERM sent to the whole group, or this parent after STOP_GRACE (the
        // job that failed first is named by its own outcome).
        Err(_) if record::cancel::requested() || child.killed => Err(WorkerError::Aborted),
        Err(e) => {
            let how = match child.ended.flatten() {
                Some(status) if libc::WIFSIGNALED(status) => {
                    format!("was killed by signal {}", libc::WTERMSIG(status))
                }
                Some(status) => format!("exited with status {}", libc::WEXITSTATUS(status)),
                None => "ended".to_string(),
            };
            Err(WorkerError::Setup(anyhow::anyhow!(
                "{}: job process {index} (pid {}) {how} without its figures ({e:#})",
                plan.spec.name,
                child.pid
            )))
        }
    }
}

/// Close every descriptor of this (child) process but stdio and `keep`: under a parent with
/// many threads (a test harness) it holds copies of everything, other jobs' pipes included.
fn close_all_but(keep: &[RawFd]) {
    let mut keep: Vec<u32> = keep
        .iter()
        .filter(|&&fd| fd > 2)
        .map(|&fd| fd as u32)
        .collect();
    keep.sort_unstable();
    let mut from = 3u32;
    for fd in keep {
        if fd > from {
            // SAFETY: closes descriptors of this process that nothing in it uses any more.
            unsafe { libc::syscall(libc::SYS_close_range, from, fd - 1, 0) };
        }
        from = from.max(fd + 1);
    }
    // SAFETY: as above; ENOSYS on kernels before 5.9 leaves them open, which only wastes them.
    unsafe { libc::syscall(libc::SYS_close_range, from, u32::MAX, 0) };
}

/// The child's whole life: never returns.
fn run_child(
    plan: &Plan<'_>,
    index: u32,
    file: &OpenedFile,
    parent: libc::pid_t,
    keep: &[RawFd],
    result: RawFd,
) -> ! {
    // SAFETY: prctl and getppid affect only this process.
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong);
        if libc::getppid() != parent {
            libc::_exit(1);
        }
    }
    // The parent's ends above all: held here, "go" would never read end-of-file when the
    // parent goes.
    close_all_but(keep);
    let wire = match catch_unwind(AssertUnwindSafe(|| run_worker(plan, index, file))) {
        Ok(outcome) => {
            if outcome.is_err() {
                plan.abort.store(true, Ordering::Relaxed);
            }
            Wire::from_outcome(outcome)
        }
        Err(payload) => {
            std::mem::forget(payload);
            plan.abort.store(true, Ordering::Relaxed);
            Wire::Setup(format!("{}: job process {index} panicked", plan.spec.name))
        }
    };
    let code = match serde_json::to_vec(&wire) {
        Ok(bytes) if write_all(result, &bytes).is_ok() => 0,
        _ => 1,
    };
    // SAFETY: _exit ends this process without running the parent's destructors or atexit
    // handlers (which would flush its buffers and remove its files a second time).
    unsafe { libc::_exit(code) }
}

//! Jobs as processes, as fio runs them unless told `--thread`: each job of a job runs in a
//! process of its own, forked from this one.
//!
//! Why: fio runs each job as a process unless told `--thread`, and the published harness runs
//! it that way, so the suite does too: each job has its own address space, descriptor table
//! and CPU accounting on both sides, and a job that crashes takes only itself down. On this
//! project's 2-vCPU VM it did not move the engine's own figure (4 x 32 random writes into new
//! files, processes / threads, median 1.03 over 6 alternating pairs, 0.75-1.16), while fio's
//! processes read 0.80x its threads there: fio's job processes switched twice as often as
//! its threads (68-98k against 33-38k context switches in a 7 s run; the engine's 41k and
//! 37k), which is fio's own (not the scheduler's autogroups: the same with them off).
//! `cargo diskbench fio --thread` runs the jobs as threads, as fio would.
//!
//! How: the parent prepares everything (files opened, plan made), then forks one child per
//! job. A child sets its backend up, says "ready" on a shared pipe and waits for "go", which
//! carries the start time (zero: stop). It runs the same job loop as a thread would, writes
//! what it measured to its own pipe (JSON, histograms encoded) and leaves with `_exit`, so
//! nothing of the parent (buffers, files, temp folders) is flushed or removed twice. A flag in
//! a shared anonymous page stops every job when one fails or the parent is told to stop; a
//! child dies with its parent (`PR_SET_PDEATHSIG`).

use std::io;
use std::os::fd::RawFd;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use serde::{Deserialize, Serialize};

use crate::backend::IoKind;
use crate::cpu::{CpuTime, mono_ns};
use crate::hist::LatencyHist;
use crate::runner::{Gate, Plan, WorkerError, WorkerStats, run_worker};
use crate::testfile::OpenedFile;

/// A flag every job process sees: one page of anonymous shared memory.
pub(crate) struct SharedFlag {
    page: *mut libc::c_void,
}

const PAGE: usize = 4096;

impl SharedFlag {
    pub(crate) fn new() -> io::Result<SharedFlag> {
        // SAFETY: an anonymous mapping touches no file; the result is checked for MAP_FAILED.
        let page = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                PAGE,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if page == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(SharedFlag { page })
    }

    pub(crate) fn get(&self) -> &AtomicBool {
        // SAFETY: the page is mapped, writable, zero-filled (false), page-aligned and lives as
        // long as `self`; AtomicBool has the size and alignment of a u8.
        unsafe { &*(self.page as *const AtomicBool) }
    }
}

impl Drop for SharedFlag {
    fn drop(&mut self) {
        // SAFETY: the page was mapped by `new` with this length and is unmapped once.
        unsafe { libc::munmap(self.page, PAGE) };
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

fn close(fd: &mut RawFd) {
    if *fd >= 0 {
        // SAFETY: the descriptor is one of ours and is closed once (set to -1 after).
        unsafe { libc::close(*fd) };
        *fd = -1;
    }
}

fn set_nonblocking(fd: RawFd) {
    // SAFETY: fcntl on a descriptor we own; failure leaves it blocking, which the poll loop
    // tolerates only for the pipes it reads after poll said they are readable.
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK);
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
pub(crate) fn wait_for_go(ready: RawFd, go: RawFd) -> Option<u64> {
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
                ..
            }) => Wire::Io {
                errno,
                kind: kind_code(kind),
                offset,
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
            } => Err(WorkerError::Io {
                errno,
                kind: kind_from(kind),
                offset,
                file: file.to_path_buf(),
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
    /// waitpid status once it has ended.
    status: Option<libc::c_int>,
}

/// Run each job in a process of its own (`files[i]` is job i's file) and collect what each
/// measured, in job order. `tick` is called about ten times a second with the start time once
/// the jobs have started. Err: no job process could be started (fork refused); nothing ran,
/// and the caller may run the jobs as threads instead.
pub(crate) fn run_jobs(
    plan: &Plan<'_>,
    files: &[&OpenedFile],
    tick: &mut dyn FnMut(Option<u64>),
) -> io::Result<Vec<Result<WorkerStats, WorkerError>>> {
    let flag = SharedFlag::new()?;
    let abort = flag.get();
    let mut ready = Pipe::new()?;
    let mut go = Pipe::new()?;
    let parent = std::process::id() as libc::pid_t;
    let mut children: Vec<Child> = Vec::with_capacity(files.len());
    for (index, file) in files.iter().enumerate() {
        let mut result = match Pipe::new() {
            Ok(p) => p,
            Err(e) => {
                stop_before_start(&mut children, abort, &mut ready, &mut go);
                return Err(e);
            }
        };
        // SAFETY: fork; the child below runs only the job loop (no lock another thread of
        // this process may hold: glibc's malloc is reset for the child) and leaves by _exit.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            let child_plan = plan.with_gate(
                Gate::Pipes {
                    ready: ready.write,
                    go: go.read,
                },
                abort,
            );
            run_child(
                &child_plan,
                index as u32,
                file,
                parent,
                &mut ready.read,
                &mut go.write,
                &mut result,
            );
        }
        close(&mut result.write);
        if pid < 0 {
            let e = io::Error::last_os_error();
            close(&mut result.read);
            stop_before_start(&mut children, abort, &mut ready, &mut go);
            return Err(e);
        }
        set_nonblocking(result.read);
        children.push(Child {
            pid,
            result: result.read,
            received: Vec::new(),
            status: None,
        });
    }
    // Only the children write "ready" and read "go" now: their ends close with them.
    close(&mut ready.write);
    close(&mut go.read);
    set_nonblocking(ready.read);

    let n = children.len();
    let mut said_ready = 0usize;
    let mut started: Option<u64> = None;
    let mut released = false;
    let mut ready_bytes = Vec::new();
    while children.iter().any(|c| c.status.is_none()) {
        let mut fds: Vec<libc::pollfd> = children
            .iter()
            .filter(|c| c.result >= 0)
            .map(|c| libc::pollfd {
                fd: c.result,
                events: libc::POLLIN,
                revents: 0,
            })
            .collect();
        if !released && ready.read >= 0 {
            fds.push(libc::pollfd {
                fd: ready.read,
                events: libc::POLLIN,
                revents: 0,
            });
        }
        // SAFETY: polls descriptors we own, through a slice we own; a timeout bounds it.
        unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, 50) };
        if !released && ready.read >= 0 {
            ready_bytes.clear();
            if drain(ready.read, &mut ready_bytes) {
                close(&mut ready.read);
            }
            said_ready += ready_bytes.len();
        }
        for c in children.iter_mut().filter(|c| c.status.is_none()) {
            if c.result >= 0 && drain(c.result, &mut c.received) {
                close(&mut c.result);
            }
            let mut status = 0;
            // SAFETY: waits, without blocking, for our own child.
            if unsafe { libc::waitpid(c.pid, &mut status, libc::WNOHANG) } == c.pid {
                c.status = Some(status);
                if c.result >= 0 {
                    drain(c.result, &mut c.received);
                    close(&mut c.result);
                }
                // A job that ended without its figures (killed, failed) stops the others,
                // as a failed thread does.
                if !matches!(serde_json::from_slice(&c.received), Ok(Wire::Stats { .. })) {
                    abort.store(true, Ordering::Relaxed);
                }
            }
        }
        let stop = crate::cancel::requested() || abort.load(Ordering::Relaxed);
        if !released {
            let one_ended = children.iter().any(|c| c.status.is_some());
            if said_ready >= n && !stop {
                let start = mono_ns().max(1);
                released = write_all(go.write, &start.to_ne_bytes().repeat(n)).is_ok();
                started = released.then_some(start);
            }
            if !released && (stop || one_ended) {
                abort.store(true, Ordering::Relaxed);
                let _ = write_all(go.write, &0u64.to_ne_bytes().repeat(n));
                released = true;
            }
        } else if crate::cancel::requested() {
            abort.store(true, Ordering::Relaxed);
        }
        tick(started);
    }
    close(&mut ready.read);
    close(&mut go.write);
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
    let decoded = serde_json::from_slice::<Wire>(&child.received)
        .map_err(anyhow::Error::from)
        .and_then(|w| w.into_outcome(file));
    match decoded {
        Ok(o) => o,
        // A job stopped by the flag still says so; one without a word was ended from outside,
        // which only Ctrl-C or SIGTERM (sent to the whole group) explains.
        Err(_) if crate::cancel::requested() => Err(WorkerError::Aborted),
        Err(e) => {
            let status = child.status.unwrap_or(0);
            let how = if libc::WIFSIGNALED(status) {
                format!("was killed by signal {}", libc::WTERMSIG(status))
            } else {
                format!("exited with status {}", libc::WEXITSTATUS(status))
            };
            Err(WorkerError::Setup(anyhow::anyhow!(
                "{}: job process {index} (pid {}) {how} without its figures ({e:#})",
                plan.spec.name,
                child.pid
            )))
        }
    }
}

/// A fork failed after some children started: tell them to stop and wait for them.
fn stop_before_start(children: &mut [Child], abort: &AtomicBool, ready: &mut Pipe, go: &mut Pipe) {
    abort.store(true, Ordering::Relaxed);
    close(&mut go.read);
    let _ = write_all(go.write, &0u64.to_ne_bytes().repeat(children.len()));
    close(&mut go.write);
    close(&mut ready.read);
    close(&mut ready.write);
    for c in children.iter_mut() {
        let mut status = 0;
        // SAFETY: waits for our own child, which stops at its gate.
        unsafe { libc::waitpid(c.pid, &mut status, 0) };
        close(&mut c.result);
    }
}

/// The child's whole life: never returns.
fn run_child(
    plan: &Plan<'_>,
    index: u32,
    file: &OpenedFile,
    parent: libc::pid_t,
    ready_read: &mut RawFd,
    go_write: &mut RawFd,
    result: &mut Pipe,
) -> ! {
    // SAFETY: prctl and getppid affect only this process.
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong);
        if libc::getppid() != parent {
            libc::_exit(1);
        }
    }
    // The parent's ends: held here, "go" would never read end-of-file when the parent goes.
    close(ready_read);
    close(go_write);
    close(&mut result.read);
    let wire = match catch_unwind(AssertUnwindSafe(|| run_worker(plan, index, file))) {
        Ok(outcome) => {
            if outcome.is_err() {
                plan.abort.store(true, Ordering::Relaxed);
            }
            Wire::from_outcome(outcome)
        }
        Err(_) => {
            plan.abort.store(true, Ordering::Relaxed);
            Wire::Setup(format!("{}: job process {index} panicked", plan.spec.name))
        }
    };
    let code = match serde_json::to_vec(&wire) {
        Ok(bytes) if write_all(result.write, &bytes).is_ok() => 0,
        _ => 1,
    };
    // SAFETY: _exit ends this process without running the parent's destructors or atexit
    // handlers (which would flush its buffers and remove its files a second time).
    unsafe { libc::_exit(code) }
}

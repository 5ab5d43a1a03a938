//! I/O backends behind one small interface, fio-style: the job loop prepares I/Os into free
//! slots, then submits them and reaps completions in one call. psync runs the prepared I/O
//! with pread/pwrite at once; io_uring queues SQEs and submits and waits in one syscall;
//! libaio submits iocbs with io_submit and reaps them with io_getevents, as fio's libaio does.

#[cfg(test)]
pub(crate) mod fake;
pub mod io_uring;
pub mod libaio;
pub(crate) mod psync;

use std::io;
use std::os::fd::RawFd;

/// What one I/O does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum IoKind {
    Read,
    Write,
    /// A write followed by fdatasync; the I/O completes when the sync returns.
    WriteDatasync,
    /// A write followed by fsync.
    WriteFsync,
}

impl IoKind {
    pub(crate) fn is_read(self) -> bool {
        self == IoKind::Read
    }
}

/// One I/O of `len` bytes at `offset`, using slot `slot`'s buffer.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Io {
    pub slot: u16,
    pub kind: IoKind,
    pub offset: u64,
    pub len: u32,
}

/// A finished I/O: bytes moved, or a negative errno.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Completion {
    pub slot: u16,
    pub result: i32,
    /// For a write + sync: how long the sync alone took (fio's `sync` latency), where the
    /// backend can time it apart from the write (psync, libaio). io_uring links the two and
    /// leaves this `None`.
    pub sync_ns: Option<u64>,
    /// When the I/O finished (CLOCK_MONOTONIC ns), where the backend knows it better than the
    /// moment its reap returned: libaio runs a write's sync after reaping it, so the other
    /// I/Os reaped with it must not wait for that sync in their latency.
    pub done_ns: Option<u64>,
    /// The write went through and its sync (fdatasync/fsync) failed: `result` is the sync's
    /// errno, so the error names the sync, not the write.
    pub sync_failed: bool,
}

/// One backend instance serves one job (one thread) with its own file descriptor and buffers.
pub(crate) trait Backend {
    /// The name the record shows ("psync", "io_uring", "libaio").
    fn name(&self) -> &'static str;
    /// I/Os this backend keeps in flight at most.
    fn depth(&self) -> u32;
    /// Queue an I/O. Cheap: no syscall.
    fn prepare(&mut self, io: Io);
    /// Start what is prepared without waiting, as fio does by default after every I/O it
    /// queues (`iodepth_batch_submit=1`). A refused I/O may complete into `done` at once;
    /// anything that could not be started yet is started by the next `submit_and_reap`.
    /// psync starts nothing here: its I/O runs in `submit_and_reap`.
    fn submit(&mut self, _done: &mut Vec<Completion>) {}
    /// Start everything prepared, then wait for at least one completion and append every
    /// completion that is ready to `done`. EINTR comes back as `ErrorKind::Interrupted`; the
    /// caller checks for Ctrl-C and calls again.
    fn submit_and_reap(&mut self, done: &mut Vec<Completion>) -> io::Result<()>;
    /// The clock the job loop times this backend's I/Os by: CLOCK_MONOTONIC nanoseconds. A
    /// scripted backend (the job loop's tests) keeps a clock of its own, so its figures are
    /// exact.
    #[inline]
    fn now_ns(&self) -> u64 {
        crate::job::cpu::mono_ns()
    }
}

/// Run the sync a write asked for (`WriteDatasync`, `WriteFsync`) as a plain system call,
/// timed on its own (fio's `sync` latency): the errno (0 when it succeeded) and how long it
/// took. An I/O that asked for no sync gives (0, None). psync and libaio both sync this way.
pub(crate) fn sync_after_write(fd: RawFd, kind: IoKind) -> (i32, Option<u64>) {
    let start = std::time::Instant::now();
    let rc = match kind {
        // SAFETY: plain syscalls on a descriptor the backend holds open.
        IoKind::WriteDatasync => unsafe { libc::fdatasync(fd) },
        // SAFETY: as above.
        IoKind::WriteFsync => unsafe { libc::fsync(fd) },
        _ => return (0, None),
    };
    let ns = start.elapsed().as_nanos() as u64;
    let errno = if rc != 0 {
        io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EIO)
    } else {
        0
    };
    (errno, Some(ns))
}

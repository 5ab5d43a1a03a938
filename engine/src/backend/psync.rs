//! psync: pread/pwrite (+ fdatasync/fsync), one I/O at a time per job. The cheapest choice at
//! queue depth 1 (one syscall per I/O) and the fallback where io_uring is refused.

use std::io;
use std::os::fd::{AsRawFd, RawFd};

use super::{Backend, Completion, Io};

pub(crate) struct Psync {
    fd: RawFd,
    bufs: Vec<*mut u8>,
    pending: Option<Io>,
    /// How long the last I/O's sync took, when it had one.
    last_sync_ns: Option<u64>,
    /// Whether the last I/O's write went through and its sync failed.
    last_sync_failed: bool,
}

impl Psync {
    /// `bufs[slot]` is the buffer of each slot; they must outlive this backend and be large
    /// enough for every I/O prepared on them.
    pub(crate) fn new(file: &impl AsRawFd, bufs: Vec<*mut u8>) -> Psync {
        Psync {
            fd: file.as_raw_fd(),
            bufs,
            pending: None,
            last_sync_ns: None,
            last_sync_failed: false,
        }
    }

    fn run(&mut self, io: Io) -> i32 {
        self.last_sync_ns = None;
        self.last_sync_failed = false;
        let buf = self.bufs[io.slot as usize];
        let mut done = 0usize;
        let len = io.len as usize;
        // Loop on short transfers: a short write at the end of the disk is followed by the
        // real error (ENOSPC), which is what the user needs to see.
        while done < len {
            // SAFETY: `buf` points to a live buffer of at least `len` bytes owned by the job
            // (see `new`); the fd is open for the backend's lifetime.
            let n = unsafe {
                let p = buf.add(done);
                let off = (io.offset + done as u64) as libc::off_t;
                // The raw syscalls: glibc's pread/pwrite wrappers add a cancellation-point
                // dance (two extra calls per I/O) that this engine never needs.
                let nr = if io.kind.is_read() {
                    libc::SYS_pread64
                } else {
                    libc::SYS_pwrite64
                };
                libc::syscall(nr, self.fd, p, len - done, off) as isize
            };
            if n < 0 {
                return -io::Error::last_os_error()
                    .raw_os_error()
                    .unwrap_or(libc::EIO);
            }
            if n == 0 {
                break; // end of file on a read
            }
            done += n as usize;
            // A short read is the answer (the file ends there): reading on from an unaligned
            // offset with O_DIRECT would turn it into EINVAL, hiding what happened.
            if io.kind.is_read() {
                break;
            }
        }
        // The sync is timed on its own as well (fio's `sync` latency block).
        let (errno, sync_ns) = super::sync_after_write(self.fd, io.kind);
        self.last_sync_ns = sync_ns;
        self.last_sync_failed = errno != 0;
        if errno != 0 {
            return -errno;
        }
        done as i32
    }
}

impl Backend for Psync {
    fn name(&self) -> &'static str {
        "psync"
    }

    fn depth(&self) -> u32 {
        1
    }

    #[inline]
    fn prepare(&mut self, io: Io) {
        debug_assert!(self.pending.is_none(), "psync runs one I/O at a time");
        self.pending = Some(io);
    }

    #[inline]
    fn submit_and_reap(&mut self, done: &mut Vec<Completion>) -> io::Result<()> {
        if let Some(io) = self.pending.take() {
            let result = self.run(io);
            if result == -libc::EINTR {
                // Not started or interrupted before any byte moved: run it again next call.
                self.pending = Some(io);
                return Err(io::Error::from_raw_os_error(libc::EINTR));
            }
            done.push(Completion {
                slot: io.slot,
                result,
                sync_ns: self.last_sync_ns,
                done_ns: None,
                sync_failed: self.last_sync_failed,
            });
        }
        Ok(())
    }
}

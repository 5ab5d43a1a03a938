//! io_uring: registered buffers and a registered file, `depth` I/Os in flight, submit and
//! wait in one syscall, every ready completion reaped per call. write + fdatasync is a linked
//! pair (IO_LINK), so the sync starts only after its write and the pair counts as one I/O.

use std::io;
use std::os::fd::{AsRawFd, RawFd};

use io_uring::{IoUring, opcode, squeue, types};

use super::{Backend, Completion, Io, IoKind};

/// Test-only switch (`crate::faults`): pretend io_uring_setup failed with this errno ("EPERM", "ENOSYS", ...).
/// Goes through the same code path as a real refusal.
pub const FAKE_ERRNO_ENV: &str = "DISKBENCH_FAKE_IO_URING_ERRNO";

/// user_data bit marking the write half of a linked write + sync pair.
const WRITE_HALF: u64 = 1 << 32;

/// Set up a ring (the one place io_uring_setup is called).
pub(crate) fn new_ring(entries: u32) -> io::Result<IoUring> {
    if let Some(fake) = crate::faults::asked(FAKE_ERRNO_ENV)
        && let Some(errno) = crate::errno::parse(&fake.to_string_lossy())
    {
        return Err(io::Error::from_raw_os_error(errno));
    }
    // One thread submits and reaps each ring: let the kernel run completion work only when we
    // ask for completions (fewer interruptions). Older kernels refuse these flags (EINVAL).
    match IoUring::builder()
        .setup_single_issuer()
        .setup_defer_taskrun()
        .build(entries)
    {
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => IoUring::new(entries),
        other => other,
    }
}

/// Whether io_uring can be set up here; the error says why not.
pub fn probe() -> io::Result<()> {
    new_ring(2).map(drop)
}

/// A file as io_uring opcodes take it: `types::Fixed` or `types::Fd`.
pub(crate) trait FileRef: Copy {
    fn read_fixed(self, buf: *mut u8, len: u32, index: u16) -> opcode::ReadFixed;
    fn read(self, buf: *mut u8, len: u32) -> opcode::Read;
    fn write_fixed(self, buf: *const u8, len: u32, index: u16) -> opcode::WriteFixed;
    fn write(self, buf: *const u8, len: u32) -> opcode::Write;
    fn fsync(self) -> opcode::Fsync;
}

macro_rules! file_ref {
    ($t:ty) => {
        impl FileRef for $t {
            fn read_fixed(self, buf: *mut u8, len: u32, index: u16) -> opcode::ReadFixed {
                opcode::ReadFixed::new(self, buf, len, index)
            }
            fn read(self, buf: *mut u8, len: u32) -> opcode::Read {
                opcode::Read::new(self, buf, len)
            }
            fn write_fixed(self, buf: *const u8, len: u32, index: u16) -> opcode::WriteFixed {
                opcode::WriteFixed::new(self, buf, len, index)
            }
            fn write(self, buf: *const u8, len: u32) -> opcode::Write {
                opcode::Write::new(self, buf, len)
            }
            fn fsync(self) -> opcode::Fsync {
                opcode::Fsync::new(self)
            }
        }
    };
}
file_ref!(types::Fixed);
file_ref!(types::Fd);

pub(crate) struct Uring {
    ring: IoUring,
    bufs: Vec<*mut u8>,
    depth: u32,
    fixed_bufs: bool,
    /// The file descriptor, used when the file could not be registered.
    fd: RawFd,
    fixed_file: bool,
    /// Per slot: the write half's result of a write + sync pair.
    write_result: Vec<i32>,
    /// Per slot: the result of the single I/O, or of the sync half of a pair.
    last_result: Vec<i32>,
    /// Per slot: whether the I/O is a write + sync pair.
    paired: Vec<bool>,
    /// Per slot: CQEs still expected (2 for a linked pair).
    outstanding: Vec<u8>,
    queued: u32,
}

impl Uring {
    /// A ring for one job: `bufs[slot]` (each `buf_len` bytes) are registered when the kernel
    /// allows it; they and `file` must outlive the backend. Returns the backend and a note
    /// when buffers could not be registered.
    pub(crate) fn new(
        file: &impl AsRawFd,
        bufs: Vec<*mut u8>,
        buf_len: usize,
        depth: u32,
    ) -> io::Result<(Uring, Option<String>)> {
        // Room for a write + sync pair per slot.
        let entries = (depth * 2).next_power_of_two().max(2);
        let ring = new_ring(entries)?;
        let fd = file.as_raw_fd();
        // A registered file saves a lookup per I/O; without it (a low RLIMIT_NOFILE, old
        // kernels) the plain descriptor works too.
        let fixed_file = ring.submitter().register_files(&[fd]).is_ok();
        let iovecs: Vec<libc::iovec> = bufs
            .iter()
            .map(|&p| libc::iovec {
                iov_base: p.cast(),
                iov_len: buf_len,
            })
            .collect();
        // SAFETY: the buffers stay allocated and unmoved for the backend's lifetime (the
        // caller keeps them alive longer), and the ring unregisters them when dropped.
        let registered = unsafe { ring.submitter().register_buffers(&iovecs) };
        let mut note = registered.as_ref().err().map(|e| {
            format!("io_uring could not register buffers ({e}); used unregistered buffers")
        });
        if !fixed_file {
            let text = "io_uring could not register the file; used its plain descriptor";
            note = Some(match note {
                Some(n) => format!("{n}; {text}"),
                None => text.to_string(),
            });
        }
        let slots = bufs.len();
        Ok((
            Uring {
                ring,
                bufs,
                depth,
                fixed_bufs: registered.is_ok(),
                fd,
                fixed_file,
                write_result: vec![0; slots],
                last_result: vec![0; slots],
                paired: vec![false; slots],
                outstanding: vec![0; slots],
                queued: 0,
            },
            note,
        ))
    }

    /// Queue `io` on `fd` (registered or plain; the opcodes accept either).
    #[inline]
    fn prepare_on(&mut self, fd: impl FileRef, io: Io) {
        let buf = self.bufs[io.slot as usize];
        let slot = io.slot as u64;
        let rw = match (io.kind.is_read(), self.fixed_bufs) {
            (true, true) => fd
                .read_fixed(buf, io.len, io.slot)
                .offset(io.offset)
                .build(),
            (true, false) => fd.read(buf, io.len).offset(io.offset).build(),
            (false, true) => fd
                .write_fixed(buf, io.len, io.slot)
                .offset(io.offset)
                .build(),
            (false, false) => fd.write(buf, io.len).offset(io.offset).build(),
        };
        let sync_flags = match io.kind {
            IoKind::WriteDatasync => Some(types::FsyncFlags::DATASYNC),
            IoKind::WriteFsync => Some(types::FsyncFlags::empty()),
            _ => None,
        };
        match sync_flags {
            None => {
                self.outstanding[io.slot as usize] = 1;
                self.paired[io.slot as usize] = false;
                self.push(&rw.user_data(slot));
            }
            Some(flags) => {
                self.outstanding[io.slot as usize] = 2;
                self.paired[io.slot as usize] = true;
                self.push(
                    &rw.user_data(slot | WRITE_HALF)
                        .flags(squeue::Flags::IO_LINK),
                );
                let sync = fd.fsync().flags(flags).build().user_data(slot);
                self.push(&sync);
            }
        }
    }

    fn push(&mut self, entry: &squeue::Entry) {
        // SAFETY: the entry points at a registered file and a buffer that stays valid until
        // its completion is reaped (the job loop never reuses a slot before that).
        let pushed = unsafe { self.ring.submission().push(entry) };
        if pushed.is_err() {
            // The ring has room for two entries per slot, so this cannot happen; submit to make
            // room rather than lose an I/O.
            let _ = self.ring.submit();
            #[expect(
                clippy::expect_used,
                reason = "the submit just emptied the queue into the kernel"
            )]
            // SAFETY: as above.
            unsafe { self.ring.submission().push(entry) }.expect("submission queue has room");
        }
        self.queued += 1;
    }
}

impl Backend for Uring {
    fn name(&self) -> &'static str {
        "io_uring"
    }

    fn depth(&self) -> u32 {
        self.depth
    }

    #[inline]
    fn prepare(&mut self, io: Io) {
        if self.fixed_file {
            self.prepare_on(types::Fixed(0), io);
        } else {
            self.prepare_on(types::Fd(self.fd), io);
        }
    }

    #[inline]
    fn submit(&mut self, _done: &mut Vec<Completion>) {
        // On an error (EINTR, EAGAIN, EBUSY) the entries stay in the submission queue and go
        // with the next submit_and_wait.
        if self.ring.submit().is_ok() {
            self.queued = 0;
        }
    }

    #[inline]
    fn submit_and_reap(&mut self, done: &mut Vec<Completion>) -> io::Result<()> {
        // Only wait when nothing is ready yet: completions may already sit in the queue.
        let want = if self.ring.completion().is_empty() {
            1
        } else {
            0
        };
        match self.ring.submit_and_wait(want) {
            Ok(_) => self.queued = 0,
            Err(e) if e.raw_os_error() == Some(libc::EINTR) => {
                return Err(io::Error::from_raw_os_error(libc::EINTR));
            }
            // EBUSY/EAGAIN: the completion queue is full; reap below and submit next time.
            Err(e) if matches!(e.raw_os_error(), Some(libc::EBUSY) | Some(libc::EAGAIN)) => {}
            Err(e) => return Err(e),
        }
        for cqe in self.ring.completion() {
            let data = cqe.user_data();
            let slot = (data & 0xffff) as usize;
            if data & WRITE_HALF != 0 {
                self.write_result[slot] = cqe.result();
            } else {
                self.last_result[slot] = cqe.result();
            }
            self.outstanding[slot] -= 1;
            if self.outstanding[slot] == 0 {
                let last = self.last_result[slot];
                let (result, sync_failed) = if !self.paired[slot] {
                    (last, false)
                } else {
                    // A failed write cancels its sync (ECANCELED): report the write's error.
                    let w = self.write_result[slot];
                    if w < 0 || last >= 0 {
                        (w, false)
                    } else {
                        (last, true)
                    }
                };
                done.push(Completion {
                    slot: slot as u16,
                    result,
                    // The pair is linked in the kernel: the sync is not timed on its own.
                    sync_ns: None,
                    done_ns: None,
                    sync_failed,
                });
            }
        }
        Ok(())
    }
}

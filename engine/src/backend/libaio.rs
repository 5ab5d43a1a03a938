//! libaio: Linux native AIO (`io_submit`, `io_getevents`), the path fio's `libaio` engine and
//! the published harness take. On a disk it behaves like io_uring at the same depth; on tmpfs
//! every I/O completes inside `io_submit`, and what a figure measures there is the cost of the
//! I/O path itself, so a figure comparable with published tmpfs rows has to take their path.
//!
//! Completions are reaped one per `io_getevents` call, as fio does with its defaults
//! (`iodepth_batch_complete_min` = `iodepth_batch_complete_max` = 1): with one `io_submit` per
//! I/O, that is two system calls per I/O, which on tmpfs is most of what the figure measures:
//! reaping in batches there reads about a fifth higher, for fio too, and would no longer
//! compare with published tmpfs rows (docs/design/fio-parity.md). The suite takes libaio only
//! on memory (on a disk, io_uring or psync, which batch freely), so the cheaper reaping is kept
//! where a device decides the figure.
//!
//! As in fio's libaio engine (`engines/libaio.c`), a sync is not queued but runs as a plain
//! fdatasync/fsync system call, timed on its own (fio's `sync` latency block). Unlike fio,
//! which calls it right after submitting the write, it runs once the write has completed, so
//! the pair counts as one I/O whose latency is write + sync, as on every other backend.
//!
//! The kernel ABI is used directly (no libaio.so): `struct iocb` and `struct io_event` from
//! `linux/aio_abi.h`.

use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::ptr;

use super::{Backend, Completion, Io, IoKind};

/// Completions taken per `io_getevents` call: fio's default `iodepth_batch_complete_max` (see
/// the module's note).
const REAP_MAX: libc::c_long = 1;

const IOCB_CMD_PREAD: u16 = 0;
const IOCB_CMD_PWRITE: u16 = 1;

/// `struct iocb` (linux/aio_abi.h), 64 bytes.
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct Iocb {
    aio_data: u64,
    #[cfg(target_endian = "little")]
    aio_key: u32,
    #[cfg(target_endian = "little")]
    aio_rw_flags: i32,
    #[cfg(target_endian = "big")]
    aio_rw_flags: i32,
    #[cfg(target_endian = "big")]
    aio_key: u32,
    aio_lio_opcode: u16,
    aio_reqprio: i16,
    aio_fildes: u32,
    aio_buf: u64,
    aio_nbytes: u64,
    aio_offset: i64,
    aio_reserved2: u64,
    aio_flags: u32,
    aio_resfd: u32,
}

/// `struct io_event` (linux/aio_abi.h), 32 bytes.
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct IoEvent {
    data: u64,
    obj: u64,
    res: i64,
    res2: i64,
}

const _: () = assert!(std::mem::size_of::<Iocb>() == 64);
const _: () = assert!(std::mem::size_of::<IoEvent>() == 32);

/// Test-only switch (`crate::faults`): pretend io_setup failed with this errno, through the same code path as a
/// real refusal (fs.aio-max-nr reached, a seccomp filter).
pub const FAKE_ERRNO_ENV: &str = "DISKBENCH_FAKE_LIBAIO_ERRNO";

/// The result of a raw system call: its value, or the errno.
fn check(rc: libc::c_long) -> io::Result<libc::c_long> {
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(rc)
    }
}

/// An AIO context with room for `depth` I/Os in flight.
fn setup(depth: u32) -> io::Result<libc::c_ulong> {
    if let Some(fake) = crate::faults::asked(FAKE_ERRNO_ENV)
        && let Some(errno) = crate::errno::parse(&fake.to_string_lossy())
    {
        return Err(io::Error::from_raw_os_error(errno));
    }
    let mut ctx: libc::c_ulong = 0;
    // SAFETY: io_setup writes the new context id into `ctx`, which we own.
    check(unsafe { libc::syscall(libc::SYS_io_setup, depth as libc::c_long, &mut ctx) })?;
    Ok(ctx)
}

/// Whether native AIO can be set up here for `events` I/Os in flight in all (every job's
/// depth: `fs.aio-max-nr` limits the sum); the error says why not.
pub(crate) fn probe(events: u32) -> io::Result<()> {
    let ctx = setup(events.max(1))?;
    // SAFETY: a context we created and that has nothing in flight.
    unsafe { libc::syscall(libc::SYS_io_destroy, ctx) };
    Ok(())
}

pub(crate) struct Libaio {
    ctx: libc::c_ulong,
    fd: RawFd,
    bufs: Vec<*mut u8>,
    depth: u32,
    /// One control block per slot; the kernel reads it during io_submit only, but it stays
    /// put (a boxed slice never moves) for the I/O's lifetime anyway.
    iocbs: Box<[Iocb]>,
    /// Per slot: the kind of the I/O in it (a write may want its sync on completion).
    kinds: Vec<IoKind>,
    /// Slots prepared and not yet submitted, in order.
    pending: Vec<u16>,
    /// io_submit's argument, rebuilt from `pending` for each call (pointers are made only
    /// there, from one pointer to the whole slice, so no later borrow invalidates them).
    ptrs: Vec<*mut Iocb>,
    events: Vec<IoEvent>,
    inflight: u32,
}

impl Libaio {
    /// A context for one job: `bufs[slot]` must outlive the backend, as must `file`.
    pub(crate) fn new(file: &impl AsRawFd, bufs: Vec<*mut u8>, depth: u32) -> io::Result<Libaio> {
        let ctx = setup(depth)?;
        let slots = bufs.len();
        Ok(Libaio {
            ctx,
            fd: file.as_raw_fd(),
            bufs,
            depth,
            iocbs: vec![Iocb::default(); slots].into_boxed_slice(),
            kinds: vec![IoKind::Read; slots],
            pending: Vec::with_capacity(slots),
            ptrs: Vec::with_capacity(slots),
            events: vec![IoEvent::default(); depth as usize],
            inflight: 0,
        })
    }

    /// Submit what is pending. An iocb the kernel refuses outright (io_submit fails on the
    /// first of a batch) completes at once with that error, so the job loop sees it.
    fn submit_pending(&mut self, done: &mut Vec<Completion>) -> io::Result<()> {
        let mut from = 0;
        while from < self.pending.len() {
            let base = self.iocbs.as_mut_ptr();
            self.ptrs.clear();
            // SAFETY: every pending slot indexes `iocbs` (slots are below its length).
            self.ptrs.extend(
                self.pending[from..]
                    .iter()
                    .map(|&s| unsafe { base.add(s as usize) }),
            );
            // SAFETY: the pointers point into `self.iocbs` (alive and unmoved for the
            // backend's lifetime), and each iocb names a live buffer of at least `aio_nbytes`
            // bytes and our open fd.
            let rc = unsafe {
                libc::syscall(
                    libc::SYS_io_submit,
                    self.ctx,
                    self.ptrs.len() as libc::c_long,
                    self.ptrs.as_mut_ptr(),
                )
            };
            // io_submit may take none of them without an error: as "no room now".
            let outcome = match check(rc) {
                Ok(0) => Err(io::Error::from_raw_os_error(libc::EAGAIN)),
                other => other,
            };
            match outcome {
                Ok(n) => {
                    self.inflight += n as u32;
                    from += n as usize;
                }
                Err(e) => match e.raw_os_error() {
                    // No room in the kernel right now, or a signal: keep the rest for the
                    // next call, after reaping.
                    Some(libc::EAGAIN) | Some(libc::EINTR) if self.inflight > 0 => break,
                    Some(libc::EINTR) => {
                        self.pending.drain(..from);
                        return Err(e);
                    }
                    errno => {
                        // Nothing in flight and the kernel refuses this one: it fails, with
                        // the reason, rather than waiting for room that will not come.
                        done.push(Completion {
                            slot: self.pending[from],
                            result: -errno.unwrap_or(libc::EIO),
                            sync_ns: None,
                            done_ns: None,
                            sync_failed: false,
                        });
                        from += 1;
                    }
                },
            }
        }
        self.pending.drain(..from);
        Ok(())
    }
}

impl Drop for Libaio {
    fn drop(&mut self) {
        // SAFETY: our context; io_destroy waits for anything still in flight, so no buffer is
        // written after it returns.
        unsafe { libc::syscall(libc::SYS_io_destroy, self.ctx) };
    }
}

impl Backend for Libaio {
    fn name(&self) -> &'static str {
        "libaio"
    }

    fn depth(&self) -> u32 {
        self.depth
    }

    #[inline]
    fn prepare(&mut self, io: Io) {
        let slot = io.slot as usize;
        self.kinds[slot] = io.kind;
        self.iocbs[slot] = Iocb {
            aio_data: io.slot as u64,
            aio_lio_opcode: if io.kind.is_read() {
                IOCB_CMD_PREAD
            } else {
                IOCB_CMD_PWRITE
            },
            aio_fildes: self.fd as u32,
            aio_buf: self.bufs[slot] as u64,
            aio_nbytes: io.len as u64,
            aio_offset: io.offset as i64,
            ..Iocb::default()
        };
        self.pending.push(io.slot);
    }

    #[inline]
    fn submit(&mut self, done: &mut Vec<Completion>) {
        // A signal or a full kernel queue leaves the iocb pending: submit_and_reap retries it.
        let _ = self.submit_pending(done);
    }

    #[inline]
    fn submit_and_reap(&mut self, done: &mut Vec<Completion>) -> io::Result<()> {
        let before = done.len();
        self.submit_pending(done)?;
        if self.inflight == 0 {
            return Ok(());
        }
        // Wait for one only when nothing failed at submission (that is a completion too).
        let min = if done.len() > before { 0 } else { 1 };
        // SAFETY: `events` has room for `depth` >= REAP_MAX events; no timeout pointer (wait
        // as needed).
        let rc = unsafe {
            libc::syscall(
                libc::SYS_io_getevents,
                self.ctx,
                min as libc::c_long,
                REAP_MAX,
                self.events.as_mut_ptr(),
                ptr::null_mut::<libc::timespec>(),
            )
        };
        let n = match check(rc) {
            Ok(n) => n as usize,
            Err(e) if e.raw_os_error() == Some(libc::EINTR) => return Err(e),
            Err(e) => return Err(e),
        };
        self.inflight -= n as u32;
        let reaped_ns = crate::job::cpu::mono_ns();
        for i in 0..n {
            let ev = self.events[i];
            let slot = ev.data as u16;
            let mut result = ev.res.clamp(i32::MIN as i64, i32::MAX as i64) as i32;
            let mut sync_ns = None;
            let mut done_ns = reaped_ns;
            let mut sync_failed = false;
            if result >= 0 {
                // fio's libaio runs the sync as a plain call too.
                let (errno, ns) = super::sync_after_write(self.fd, self.kinds[slot as usize]);
                if ns.is_some() {
                    sync_ns = ns;
                    done_ns = crate::job::cpu::mono_ns();
                }
                if errno != 0 {
                    result = -errno;
                    sync_failed = true;
                }
            }
            done.push(Completion {
                slot,
                result,
                sync_ns,
                done_ns: Some(done_ns),
                sync_failed,
            });
        }
        Ok(())
    }
}

//! A FUSE passthrough over a folder that holds each read reaching storage, each direct
//! write and each flush (fsync, fdatasync) for a latency drawn from another disk's figures:
//! the round trip a block-I/O rate cap cannot add. Buffered writes land in the
//! page cache as on any disk; their data pays at the next flush.
//!
//! Spoken directly over /dev/fuse and mounted with mount(2), so the caller must be root.
//! The server runs on threads of the caller's process, so block-I/O caps set on that
//! process's cgroup apply to the backing disk's I/O too.

mod fs;
mod latency;
mod mount_table;
mod protocol;
pub mod volume;

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

pub use fs::HeldStats;
pub use latency::{Delays, Latency};
pub use mount_table::{FS_TYPE, sweep_stale};

use fs::{Body, Fs, Lateness, Scratch};
use protocol::{Request, out_header};

/// Threads reading requests: a held reply keeps its thread, so this many I/Os can be in
/// flight on the mount at once (the one-at-a-time columns need one).
const SERVER_THREADS: usize = 4;

/// A mounted passthrough. Dropping it unmounts (lazily when files are still open) and
/// stops the server.
pub struct Mount {
    mountpoint: PathBuf,
    fs: Arc<Fs>,
    threads: Vec<JoinHandle<()>>,
    /// The connection's number under /sys/fs/fuse/connections, to abort a stuck one.
    connection: Option<u32>,
    mounted: bool,
}

/// Whether this machine can mount the passthrough: /dev/fuse opens (the module is loaded and
/// the caller may use it). Err says why not.
pub fn available() -> Result<(), String> {
    open_device().map(drop).map_err(|e| {
        format!("/dev/fuse cannot be opened ({e}): FUSE is missing here or not allowed")
    })
}

fn open_device() -> io::Result<OwnedFd> {
    // SAFETY: a constant NUL-terminated path; the result is checked.
    let fd = unsafe { libc::open(c"/dev/fuse".as_ptr(), libc::O_RDWR | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: just opened, owned by nothing else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_MONOTONIC always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

fn sleep_until_ns(deadline: u64) {
    let ts = libc::timespec {
        tv_sec: (deadline / 1_000_000_000) as libc::time_t,
        tv_nsec: (deadline % 1_000_000_000) as libc::c_long,
    };
    // SAFETY: `ts` is valid; an absolute sleep on CLOCK_MONOTONIC, restarted after a signal.
    while unsafe {
        libc::clock_nanosleep(
            libc::CLOCK_MONOTONIC,
            libc::TIMER_ABSTIME,
            &ts,
            std::ptr::null_mut(),
        )
    } == libc::EINTR
    {}
}

impl Mount {
    /// Mount the passthrough of `backing` on `mountpoint` (an empty folder), holding I/O for
    /// `delays`; `seed` makes the latency draws repeatable.
    pub fn new(backing: &Path, mountpoint: &Path, delays: Delays, seed: u64) -> io::Result<Mount> {
        // Test-only switch (the guarantees page lists them): the mount refused, as in a
        // container that may open /dev/fuse but not mount.
        // Read only with the `fault-injection` feature: a release binary has no such switch.
        #[cfg(feature = "fault-injection")]
        if std::env::var_os("DISKBENCH_FAKE_FUSE_MOUNT_EPERM").is_some() {
            return Err(io::Error::from_raw_os_error(libc::EPERM));
        }
        let fs = Arc::new(Fs::new(backing, delays)?);
        let dev = Arc::new(open_device()?);
        let target = CString::new(mountpoint.as_os_str().as_bytes())?;
        let source = CString::new(mount_table::source_for(std::process::id()))?;
        let fstype = CString::new(FS_TYPE)?;
        // SAFETY: getuid/getgid cannot fail.
        let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
        let data = CString::new(format!(
            "fd={},rootmode=40000,user_id={uid},group_id={gid},default_permissions,allow_other",
            dev.as_raw_fd()
        ))?;
        // SAFETY: all strings are NUL-terminated and live across the call.
        let rc = unsafe {
            libc::mount(
                source.as_ptr(),
                target.as_ptr(),
                fstype.as_ptr(),
                libc::MS_NOSUID | libc::MS_NODEV,
                data.as_ptr().cast(),
            )
        };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        let mut m = Mount {
            mountpoint: mountpoint.to_path_buf(),
            fs,
            threads: Vec::new(),
            connection: None,
            mounted: true,
        };
        for i in 0..SERVER_THREADS {
            let (server, dev) = (m.fs.clone(), dev.clone());
            let spawned = std::thread::Builder::new()
                .name(format!("latency-fs-{i}"))
                .spawn(move || serve(&server, dev.as_raw_fd(), seed.wrapping_add(i as u64)));
            match spawned {
                Ok(t) => m.threads.push(t),
                Err(e) => {
                    let _ = m.stop();
                    return Err(e);
                }
            }
        }
        // The first stat waits for INIT's reply: after it the mount serves. Then one file
        // made and closed, so the kernel learns there is no FLUSH (fs.rs says why).
        let probe = mountpoint.join(".latency-fs-probe");
        let ready = std::fs::symlink_metadata(mountpoint).and_then(|md| {
            use std::os::unix::fs::MetadataExt;
            m.connection = Some(libc::minor(md.dev()));
            std::fs::File::create(&probe)?;
            std::fs::remove_file(&probe)
        });
        if let Err(e) = ready {
            let _ = m.stop();
            return Err(e);
        }
        Ok(m)
    }

    pub fn path(&self) -> &Path {
        &self.mountpoint
    }

    /// Hold replies (the default) or pass everything through at this disk's speed, e.g.
    /// while files are prepared that are not timed.
    pub fn set_holding(&self, on: bool) {
        self.fs
            .holding
            .store(on, std::sync::atomic::Ordering::Relaxed);
    }

    /// What was held so far.
    pub fn held(&self) -> HeldStats {
        self.fs.counters.snapshot()
    }

    /// Unmount and stop the server; what was held in all.
    pub fn unmount(mut self) -> io::Result<HeldStats> {
        let r = self.stop();
        r.map(|()| self.held())
    }

    fn stop(&mut self) -> io::Result<()> {
        let mut result = Ok(());
        if self.mounted {
            self.mounted = false;
            let c = CString::new(self.mountpoint.as_os_str().as_bytes())?;
            // SAFETY: `c` is NUL-terminated. A busy mount (a file still open) is detached.
            if unsafe { libc::umount2(c.as_ptr(), 0) } != 0 {
                let busy = io::Error::last_os_error();
                // SAFETY: as above.
                if unsafe { libc::umount2(c.as_ptr(), libc::MNT_DETACH) } != 0 {
                    result = Err(busy);
                }
            }
        }
        // Readers get ENODEV once the connection ends; abort it if a detached mount keeps it.
        let deadline = Instant::now() + Duration::from_secs(2);
        while self.threads.iter().any(|t| !t.is_finished()) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        if self.threads.iter().any(|t| !t.is_finished())
            && let Some(n) = self.connection
        {
            mount_table::abort_connection(n);
        }
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
        result
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = self.stop();
    }
}

/// One server thread: read a request, answer it on the backing folder, hold the reply for
/// its latency, send it; until the mount goes away.
fn serve(fs: &Fs, dev: RawFd, seed: u64) {
    // Wake-ups within a microsecond of the reply's time, not the default 50 us slack.
    // SAFETY: prctl with an integer argument; failure leaves the default slack.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0) };
    let mut buf = vec![0u8; fs::MAX_WRITE + 64 * 1024];
    let mut scratch = Scratch::new(seed);
    // How late this thread's timer has been waking, ns (a moving average): each sleep ends
    // that much early, so replies leave at their time rather than 20-30 us after it (what
    // the wake-up took on a 2-vCPU VM, docs/benchmarks/2026-12-04-dev-vm/like-latency.md).
    let mut wake_ns: u64 = 0;
    loop {
        // SAFETY: `buf` is writable for its length; `dev` stays open while the Mount lives.
        let n = unsafe { libc::read(dev, buf.as_mut_ptr().cast(), buf.len()) };
        if n < 0 {
            match io::Error::last_os_error().raw_os_error() {
                // A request interrupted before it was read; a signal.
                Some(libc::ENOENT | libc::EINTR | libc::EAGAIN) => continue,
                // ENODEV: unmounted. Anything else: the connection is unusable.
                _ => return,
            }
        }
        let arrival = monotonic_ns();
        let Some(req) = Request::parse(&buf[..n as usize]) else {
            continue;
        };
        let (opcode, unique) = (req.opcode, req.unique);
        let answer = fs.answer(&req, arrival, &mut scratch);
        if let Some((until, kind)) = answer.hold {
            let ready = monotonic_ns();
            let late = if ready < until {
                let wake_at = until.saturating_sub(wake_ns).max(ready);
                sleep_until_ns(wake_at);
                let woke = monotonic_ns();
                // Capped so one long stall (a busy CPU) cannot make the next replies early.
                let this = woke.saturating_sub(wake_at).min(200_000);
                wake_ns = (wake_ns * 7 + this) / 8;
                Lateness::Timer(woke.saturating_sub(until))
            } else {
                // The backing disk took longer than the latency drawn: nothing to hold.
                Lateness::Disk(ready - until)
            };
            fs.counters.count(kind, until.saturating_sub(arrival), late);
        }
        let sent = match answer.result {
            Ok(Body::None) => 0,
            Ok(Body::Bytes(b)) => reply(dev, unique, 0, &b),
            Ok(Body::Scratch(len)) => {
                let data = &scratch.aligned(len)[..len];
                reply(dev, unique, 0, data)
            }
            Err(e) => reply(dev, unique, -e, &[]),
        };
        if opcode == protocol::DESTROY || sent < 0 && errno_is(libc::ENODEV) {
            return;
        }
    }
}

fn errno_is(e: i32) -> bool {
    io::Error::last_os_error().raw_os_error() == Some(e)
}

fn reply(dev: RawFd, unique: u64, error: i32, data: &[u8]) -> isize {
    let len = 16 + if error == 0 { data.len() } else { 0 };
    let header = out_header(len, error, unique);
    let iov = [
        libc::iovec {
            iov_base: header.as_ptr() as *mut libc::c_void,
            iov_len: header.len(),
        },
        libc::iovec {
            iov_base: data.as_ptr() as *mut libc::c_void,
            iov_len: if error == 0 { data.len() } else { 0 },
        },
    ];
    // SAFETY: both iovecs point at live buffers of their lengths; the kernel only reads them.
    unsafe { libc::writev(dev, iov.as_ptr(), 2) }
}

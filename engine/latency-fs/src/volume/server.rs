//! The volume's server, in a process of its own: one file, `disk`, on a FUSE mount, backed by
//! a sparse file on the local disk; every read, write and flush the loop device sends it is
//! served at once from the backing file and its reply held until the model's latency and
//! limits allow. The kernel's own filesystem sits on the loop device above, so nothing of
//! rename, links, mmap or xattrs is re-implemented here.
//!
//! Talks to the run that started it over stdin (a model line, `stats`, or end of input to
//! stop) and stdout (`ready`, a stats line).

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::ffi::OsStr;
use std::fs::File;
use std::io::{BufRead, Write};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::{Duration, UNIX_EPOCH};

use fuser::{
    Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags, Generation, INodeNo, InitFlags,
    KernelConfig, LockOwner, OpenFlags, ReplyAttr, ReplyData, ReplyDirectory, ReplyEmpty,
    ReplyEntry, ReplyOpen, ReplyWrite, Request, WriteFlags,
};

use super::model::{Gate, IO_UNIT_BYTES, VolumeModel};
use crate::latency::Draws;
use crate::{monotonic_ns, sleep_until_ns};

/// The file the loop device opens, under the FUSE mount.
pub(crate) const DISK_NAME: &str = "disk";
/// Threads reading requests from the kernel. Replies are held on the timer thread, not on
/// these, so any number of requests can be in flight.
const READER_THREADS: usize = 4;
const ROOT: u64 = 1;
const DISK: u64 = 2;
const TTL: Duration = Duration::from_secs(3600);

/// What the server counted, for the record and the tests.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct VolumeStats {
    pub reads: u64,
    pub writes: u64,
    pub flushes: u64,
    pub read_bytes: u64,
    pub write_bytes: u64,
    /// Time replies were held past the request's arrival, summed, ns.
    pub held_ns: u64,
    /// Time the timer woke after a reply's due time, summed, ns: what the emulation could
    /// not hold exactly (a busy machine).
    pub late_ns: u64,
}

impl VolumeStats {
    pub(crate) fn to_line(self) -> String {
        format!(
            "stats {} {} {} {} {} {} {}",
            self.reads,
            self.writes,
            self.flushes,
            self.read_bytes,
            self.write_bytes,
            self.held_ns,
            self.late_ns
        )
    }

    pub(crate) fn from_line(line: &str) -> Option<VolumeStats> {
        let v: Vec<u64> = line
            .strip_prefix("stats ")?
            .split(' ')
            .map(str::parse)
            .collect::<Result<_, _>>()
            .ok()?;
        let [
            reads,
            writes,
            flushes,
            read_bytes,
            write_bytes,
            held_ns,
            late_ns,
        ] = v[..]
        else {
            return None;
        };
        Some(VolumeStats {
            reads,
            writes,
            flushes,
            read_bytes,
            write_bytes,
            held_ns,
            late_ns,
        })
    }
}

#[derive(Default)]
struct Counters {
    reads: AtomicU64,
    writes: AtomicU64,
    flushes: AtomicU64,
    read_bytes: AtomicU64,
    write_bytes: AtomicU64,
    held_ns: AtomicU64,
    late_ns: AtomicU64,
}

enum Reply {
    Data(ReplyData, Vec<u8>),
    Written(ReplyWrite, u32),
    Flushed(ReplyEmpty),
}

struct Held {
    due_ns: u64,
    seq: u64,
    reply: Reply,
}

impl PartialEq for Held {
    fn eq(&self, o: &Self) -> bool {
        (self.due_ns, self.seq) == (o.due_ns, o.seq)
    }
}
impl Eq for Held {}
impl PartialOrd for Held {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Held {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        (self.due_ns, self.seq).cmp(&(o.due_ns, o.seq))
    }
}

/// Replies waiting for their due time, earliest first.
#[derive(Default)]
struct Timer {
    queue: Mutex<(BinaryHeap<Reverse<Held>>, u64)>,
    wake: Condvar,
}

impl Timer {
    fn hold(&self, due_ns: u64, reply: Reply) {
        let mut q = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
        q.1 += 1;
        let seq = q.1;
        q.0.push(Reverse(Held { due_ns, seq, reply }));
        self.wake.notify_one();
    }

    /// Sends each reply at its due time, for ever.
    fn run(&self, counters: &Counters) {
        loop {
            let mut q = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
            let due_ns = loop {
                match q.0.peek() {
                    None => q = self.wake.wait(q).unwrap_or_else(PoisonError::into_inner),
                    Some(Reverse(h)) => break h.due_ns,
                }
            };
            let now = monotonic_ns();
            if due_ns > now {
                // A request arriving meanwhile may be due sooner: sleep at most 200 us at a
                // time without the lock, then look again.
                drop(q);
                sleep_until_ns(due_ns.min(now + 200_000));
                continue;
            }
            let Some(Reverse(h)) = q.0.pop() else {
                continue;
            };
            drop(q);
            counters
                .late_ns
                .fetch_add(monotonic_ns().saturating_sub(h.due_ns), Ordering::Relaxed);
            match h.reply {
                Reply::Data(r, d) => r.data(&d),
                Reply::Written(r, n) => r.written(n),
                Reply::Flushed(r) => r.ok(),
            }
        }
    }
}

/// The model in force and the limits' clocks, changed together.
struct Shaping {
    model: VolumeModel,
    iops: Gate,
    bandwidth: Gate,
    draws: Draws,
}

struct Disk {
    backing: File,
    size_bytes: u64,
    shaping: Arc<Mutex<Shaping>>,
    timer: Arc<Timer>,
    counters: Arc<Counters>,
}

#[derive(Clone, Copy)]
enum Kind {
    Read,
    Write,
    Flush,
}

impl Disk {
    /// When a request that arrived at `arrived_ns` may be answered.
    fn due_ns(&self, arrived_ns: u64, kind: Kind, bytes: u64) -> u64 {
        let mut s = self.shaping.lock().unwrap_or_else(PoisonError::into_inner);
        let mut start = arrived_ns;
        if !matches!(kind, Kind::Flush) {
            if let Some(iops) = s.model.iops_limit {
                // A request larger than the unit counts as several operations.
                let ops = bytes.div_ceil(u64::from(IO_UNIT_BYTES)).max(1);
                start = start.max(s.iops.admit(arrived_ns, (ops as f64 * 1e9 / iops) as u64));
            }
            if let Some(bw) = s.model.bytes_per_s_limit {
                start = start.max(
                    s.bandwidth
                        .admit(arrived_ns, (bytes as f64 * 1e9 / bw) as u64),
                );
            }
        }
        let latency = match kind {
            Kind::Read => s.model.read,
            Kind::Write => s.model.write,
            Kind::Flush => s.model.flush,
        };
        let Shaping { draws, .. } = &mut *s;
        let due = start + draws.sample_ns(&latency);
        self.counters
            .held_ns
            .fetch_add(due.saturating_sub(arrived_ns), Ordering::Relaxed);
        due
    }
}

fn attr(ino: u64, size_bytes: u64) -> FileAttr {
    let dir = ino == ROOT;
    FileAttr {
        ino: INodeNo(ino),
        size: if dir { 0 } else { size_bytes },
        blocks: if dir { 0 } else { size_bytes / 512 },
        atime: UNIX_EPOCH,
        mtime: UNIX_EPOCH,
        ctime: UNIX_EPOCH,
        crtime: UNIX_EPOCH,
        kind: if dir {
            FileType::Directory
        } else {
            FileType::RegularFile
        },
        perm: if dir { 0o700 } else { 0o600 },
        nlink: if dir { 2 } else { 1 },
        uid: 0,
        gid: 0,
        rdev: 0,
        flags: 0,
        blksize: 4096,
    }
}

impl Filesystem for Disk {
    fn init(&mut self, _req: &Request, config: &mut KernelConfig) -> std::io::Result<()> {
        // Requests of up to one unit each, sent concurrently (async direct I/O), as the
        // loop device's queue has them.
        let _ = config.set_max_write(IO_UNIT_BYTES);
        let _ = config.add_capabilities(InitFlags::FUSE_ASYNC_DIO);
        let _ = config.set_max_background(256);
        let _ = config.set_congestion_threshold(192);
        Ok(())
    }

    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        if u64::from(parent) == ROOT && name == DISK_NAME {
            reply.entry(&TTL, &attr(DISK, self.size_bytes), Generation(0));
        } else {
            reply.error(Errno::ENOENT);
        }
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        match u64::from(ino) {
            ROOT | DISK => reply.attr(&TTL, &attr(ino.into(), self.size_bytes)),
            _ => reply.error(Errno::ENOENT),
        }
    }

    fn open(&self, _req: &Request, ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        if u64::from(ino) == DISK {
            reply.opened(FileHandle(0), FopenFlags::FOPEN_DIRECT_IO);
        } else {
            reply.error(Errno::EISDIR);
        }
    }

    fn read(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock: Option<LockOwner>,
        reply: ReplyData,
    ) {
        let arrived = monotonic_ns();
        let mut buf = vec![0u8; size as usize];
        match self.backing.read_at(&mut buf, offset) {
            Ok(n) => {
                buf.truncate(n);
                self.counters.reads.fetch_add(1, Ordering::Relaxed);
                self.counters
                    .read_bytes
                    .fetch_add(n as u64, Ordering::Relaxed);
                let due = self.due_ns(arrived, Kind::Read, n as u64);
                self.timer.hold(due, Reply::Data(reply, buf));
            }
            Err(e) => reply.error(Errno::from_i32(e.raw_os_error().unwrap_or(libc::EIO))),
        }
    }

    fn write(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        data: &[u8],
        _write_flags: WriteFlags,
        _flags: OpenFlags,
        _lock: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        let arrived = monotonic_ns();
        match self.backing.write_at(data, offset) {
            Ok(n) => {
                self.counters.writes.fetch_add(1, Ordering::Relaxed);
                self.counters
                    .write_bytes
                    .fetch_add(n as u64, Ordering::Relaxed);
                let due = self.due_ns(arrived, Kind::Write, n as u64);
                self.timer.hold(due, Reply::Written(reply, n as u32));
            }
            Err(e) => reply.error(Errno::from_i32(e.raw_os_error().unwrap_or(libc::EIO))),
        }
    }

    fn fsync(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _data: bool,
        reply: ReplyEmpty,
    ) {
        // The backing file is not synced: what is emulated is the target's flush, and the
        // volume is thrown away after the run.
        let arrived = monotonic_ns();
        self.counters.flushes.fetch_add(1, Ordering::Relaxed);
        let due = self.due_ns(arrived, Kind::Flush, 0);
        self.timer.hold(due, Reply::Flushed(reply));
    }

    fn flush(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _lock: LockOwner,
        reply: ReplyEmpty,
    ) {
        // close(2), not a cache flush.
        reply.ok();
    }

    fn readdir(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectory,
    ) {
        if u64::from(ino) != ROOT {
            reply.error(Errno::ENOTDIR);
            return;
        }
        let entries = [
            (ROOT, FileType::Directory, "."),
            (ROOT, FileType::Directory, ".."),
            (DISK, FileType::RegularFile, DISK_NAME),
        ];
        for (i, (ino, kind, name)) in entries.into_iter().enumerate().skip(offset as usize) {
            if reply.add(INodeNo(ino), (i + 1) as u64, kind, name) {
                break;
            }
        }
        reply.ok();
    }
}

/// Ask for real-time scheduling so that held replies go out on time on a busy machine; the
/// kernel's real-time throttling keeps a runaway thread from taking the machine. False
/// where it is refused (the emulation then counts its lateness).
fn ask_for_realtime() -> bool {
    let param = libc::sched_param { sched_priority: 10 };
    // SAFETY: pid 0 is this process; `param` is a valid sched_param.
    unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) == 0 }
}

/// Serve the volume until stdin closes. `mountpoint` is an empty folder; `backing` the sparse
/// file that holds the volume's data; the first stdin line is the model.
pub(crate) fn serve(
    mountpoint: &Path,
    backing: &Path,
    size_bytes: u64,
    run_pid: u32,
) -> std::io::Result<()> {
    use std::io::Error;
    let stdin = std::io::stdin();
    let mut lines = stdin.lock().lines();
    let first = lines
        .next()
        .ok_or_else(|| Error::other("no model on stdin"))??;
    let model = VolumeModel::from_line(&first).map_err(Error::other)?;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(backing)
        .map_err(|e| Error::new(e.kind(), format!("{}: {e}", backing.display())))?;
    let realtime = ask_for_realtime();
    let counters = Arc::new(Counters::default());
    let timer = Arc::new(Timer::default());
    let shaping = Arc::new(Mutex::new(Shaping {
        model,
        iops: Gate::default(),
        bandwidth: Gate::default(),
        draws: Draws::new(u64::from(std::process::id())),
    }));
    {
        let (timer, counters) = (timer.clone(), counters.clone());
        std::thread::Builder::new()
            .name("volume-timer".into())
            .spawn(move || timer.run(&counters))?;
    }
    let disk = Disk {
        backing: file,
        size_bytes,
        shaping: shaping.clone(),
        timer,
        counters: counters.clone(),
    };
    let mut config = fuser::Config::default();
    config.mount_options = vec![
        fuser::MountOption::FSName(super::source_for(std::process::id(), run_pid)),
        fuser::MountOption::Subtype(super::SUBTYPE.into()),
    ];
    config.acl = fuser::SessionACL::All;
    config.n_threads = Some(READER_THREADS);
    config.clone_fd = true;
    let session = fuser::Session::new(disk, mountpoint, &config)
        .map_err(|e| Error::new(e.kind(), format!("mounting {}: {e}", mountpoint.display())))?;
    let background = session.spawn()?;
    let mut out = std::io::stdout().lock();
    writeln!(out, "ready {}", u8::from(realtime))?;
    out.flush()?;
    for line in lines {
        let Ok(line) = line else { break };
        if line == "stats" {
            let c = &counters;
            let stats = VolumeStats {
                reads: c.reads.load(Ordering::Relaxed),
                writes: c.writes.load(Ordering::Relaxed),
                flushes: c.flushes.load(Ordering::Relaxed),
                read_bytes: c.read_bytes.load(Ordering::Relaxed),
                write_bytes: c.write_bytes.load(Ordering::Relaxed),
                held_ns: c.held_ns.load(Ordering::Relaxed),
                late_ns: c.late_ns.load(Ordering::Relaxed),
            };
            writeln!(out, "{}", stats.to_line())?;
        } else {
            match VolumeModel::from_line(&line) {
                Ok(model) => {
                    let mut s = shaping.lock().unwrap_or_else(PoisonError::into_inner);
                    s.model = model;
                    s.iops = Gate::default();
                    s.bandwidth = Gate::default();
                    writeln!(out, "ok")?;
                }
                Err(e) => writeln!(out, "error {e}")?,
            }
        }
        out.flush()?;
    }
    // The run closed its end: it has unmounted the filesystem above and detached the loop
    // device (or died, and the next run sweeps what is left). Unmount and go.
    drop(background);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats_round_trip_through_their_line() {
        let s = VolumeStats {
            reads: 1,
            writes: 2,
            flushes: 3,
            read_bytes: 4,
            write_bytes: 5,
            held_ns: 6,
            late_ns: 7,
        };
        assert_eq!(VolumeStats::from_line(&s.to_line()), Some(s));
        assert_eq!(VolumeStats::from_line("stats 1 2"), None);
    }
}

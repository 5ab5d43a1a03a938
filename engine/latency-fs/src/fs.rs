//! The passthrough: every request on the mount done on the same path under the backing
//! folder, and the time each delayed kind of I/O is to be held for.

use std::collections::HashMap;
use std::ffi::{CString, OsStr};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::latency::{Delays, Draws, Latency};
use crate::protocol::{self as p, Out, Request};

/// The root's node id, fixed by the protocol.
const ROOT: u64 = 1;

/// The largest write the kernel is told to send (max_pages 256): a 1 MiB column block in one.
pub(crate) const MAX_WRITE: usize = 1 << 20;

/// What the emulation held, for the caller to report.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct HeldStats {
    pub reads: u64,
    pub direct_writes: u64,
    pub syncs: u64,
    /// Time the replies were held for in all, ns (what the emulated disk added).
    pub held_ns: u64,
    /// How late the held replies left after their time, in all, ns (timer wake-up).
    pub late_ns: u64,
    /// Replies the backing disk itself made later than their latency (nothing to hold), and
    /// by how much in all, ns: the emulated disk cannot be faster than this one.
    pub slower_here: u64,
    pub slower_here_ns: u64,
}

/// Why a held reply left after its time.
pub(crate) enum Lateness {
    /// Held, and the timer woke this late.
    Timer(u64),
    /// Not held: the backing disk's own time was already longer by this much.
    Disk(u64),
}

#[derive(Default)]
pub(crate) struct Counters {
    reads: AtomicU64,
    direct_writes: AtomicU64,
    syncs: AtomicU64,
    held_ns: AtomicU64,
    late_ns: AtomicU64,
    slower_here: AtomicU64,
    slower_here_ns: AtomicU64,
}

impl Counters {
    pub(crate) fn snapshot(&self) -> HeldStats {
        let g = |a: &AtomicU64| a.load(Ordering::Relaxed);
        HeldStats {
            reads: g(&self.reads),
            direct_writes: g(&self.direct_writes),
            syncs: g(&self.syncs),
            held_ns: g(&self.held_ns),
            late_ns: g(&self.late_ns),
            slower_here: g(&self.slower_here),
            slower_here_ns: g(&self.slower_here_ns),
        }
    }

    pub(crate) fn count(&self, kind: Held, held_ns: u64, late: Lateness) {
        let c = match kind {
            Held::Read => &self.reads,
            Held::DirectWrite => &self.direct_writes,
            Held::Sync => &self.syncs,
        };
        c.fetch_add(1, Ordering::Relaxed);
        self.held_ns.fetch_add(held_ns, Ordering::Relaxed);
        match late {
            Lateness::Timer(ns) => {
                self.late_ns.fetch_add(ns, Ordering::Relaxed);
            }
            Lateness::Disk(ns) => {
                self.slower_here.fetch_add(1, Ordering::Relaxed);
                self.slower_here_ns.fetch_add(ns, Ordering::Relaxed);
            }
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Held {
    Read,
    DirectWrite,
    Sync,
}

struct Node {
    /// Relative to the backing folder; empty for the root.
    path: PathBuf,
    lookups: u64,
    /// Buffered writes since the last flush: the next fsync sends their data first.
    dirty: bool,
}

struct Nodes {
    by_id: HashMap<u64, Node>,
    by_path: HashMap<PathBuf, u64>,
    next: u64,
}

enum Handle {
    File {
        fd: OwnedFd,
        direct: bool,
        node: u64,
    },
    Dir {
        fd: OwnedFd,
        entries: Vec<(Vec<u8>, u64, u32)>,
    },
}

/// What a request gets back.
pub(crate) enum Body {
    /// No reply at all (FORGET, INTERRUPT).
    None,
    Bytes(Vec<u8>),
    /// The first n bytes of the thread's aligned buffer (a read's data).
    Scratch(usize),
}

pub(crate) struct Answer {
    pub result: Result<Body, i32>,
    /// Hold the reply until this CLOCK_MONOTONIC time, for this kind of I/O.
    pub hold: Option<(u64, Held)>,
}

impl Answer {
    fn now(result: Result<Body, i32>) -> Answer {
        Answer { result, hold: None }
    }
}

/// Per thread: a buffer aligned for O_DIRECT, and the latency draws.
pub(crate) struct Scratch {
    buf: Vec<u8>,
    pub(crate) draws: Draws,
}

impl Scratch {
    pub(crate) fn new(seed: u64) -> Scratch {
        Scratch {
            buf: vec![0u8; MAX_WRITE + 4096],
            draws: Draws::new(seed),
        }
    }

    /// `len` bytes starting 4 KiB-aligned (direct I/O on the backing file needs it).
    pub(crate) fn aligned(&mut self, len: usize) -> &mut [u8] {
        let off = self.buf.as_ptr().align_offset(4096);
        &mut self.buf[off..off + len.min(MAX_WRITE)]
    }
}

pub(crate) struct Fs {
    backing: OwnedFd,
    nodes: Mutex<Nodes>,
    handles: Mutex<(u64, HashMap<u64, Arc<Handle>>)>,
    delays: Delays,
    /// Whether replies are held at all: off while a caller prepares files it does not time.
    pub(crate) holding: std::sync::atomic::AtomicBool,
    pub(crate) counters: Counters,
}

fn errno() -> i32 {
    io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EIO)
}

/// -1 from a system call as the errno, anything else as the value.
fn check(ret: libc::c_long) -> Result<libc::c_long, i32> {
    if ret < 0 { Err(errno()) } else { Ok(ret) }
}

fn c_path(rel: &Path) -> Result<CString, i32> {
    let bytes = if rel.as_os_str().is_empty() {
        b".".as_slice()
    } else {
        rel.as_os_str().as_bytes()
    };
    CString::new(bytes).map_err(|_| libc::EINVAL)
}

/// One name inside a folder: no separators, not `.` or `..` (the kernel resolves those).
fn child(parent: &Path, name: &OsStr) -> Result<PathBuf, i32> {
    let b = name.as_bytes();
    if b.is_empty() || b.contains(&b'/') || b == b"." || b == b".." {
        return Err(libc::EINVAL);
    }
    Ok(parent.join(name))
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn dirent_type(t: std::fs::FileType) -> u32 {
    use std::os::unix::fs::FileTypeExt;
    if t.is_dir() {
        4
    } else if t.is_file() {
        8
    } else if t.is_symlink() {
        10
    } else if t.is_fifo() {
        1
    } else if t.is_char_device() {
        2
    } else if t.is_block_device() {
        6
    } else if t.is_socket() {
        12
    } else {
        0
    }
}

impl Fs {
    pub(crate) fn new(backing: &Path, delays: Delays) -> io::Result<Fs> {
        let c = CString::new(backing.as_os_str().as_bytes())?;
        // SAFETY: `c` is a valid NUL-terminated path; the result is checked.
        let fd = unsafe {
            libc::open(
                c.as_ptr(),
                libc::O_PATH | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        let mut by_id = HashMap::new();
        by_id.insert(
            ROOT,
            Node {
                path: PathBuf::new(),
                lookups: 1,
                dirty: false,
            },
        );
        Ok(Fs {
            // SAFETY: `fd` was just opened and is owned by nothing else.
            backing: unsafe { OwnedFd::from_raw_fd(fd) },
            nodes: Mutex::new(Nodes {
                by_id,
                by_path: HashMap::from([(PathBuf::new(), ROOT)]),
                next: ROOT + 1,
            }),
            handles: Mutex::new((1, HashMap::new())),
            delays,
            holding: std::sync::atomic::AtomicBool::new(true),
            counters: Counters::default(),
        })
    }

    fn path_of(&self, node: u64) -> Result<PathBuf, i32> {
        lock(&self.nodes)
            .by_id
            .get(&node)
            .map(|n| n.path.clone())
            .ok_or(libc::ESTALE)
    }

    fn stat_path(&self, rel: &Path) -> Result<libc::stat, i32> {
        let c = c_path(rel)?;
        // SAFETY: stat is plain old data; all zeroes is a valid value to overwrite.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: the dirfd is ours, `c` is NUL-terminated, `st` is writable.
        check(unsafe {
            libc::fstatat(
                self.backing.as_raw_fd(),
                c.as_ptr(),
                &mut st,
                libc::AT_SYMLINK_NOFOLLOW | libc::AT_EMPTY_PATH,
            )
        } as libc::c_long)?;
        Ok(st)
    }

    fn stat_fd(fd: RawFd) -> Result<libc::stat, i32> {
        // SAFETY: as in stat_path.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: `fd` is an open descriptor of ours; `st` is writable.
        check(unsafe { libc::fstat(fd, &mut st) } as libc::c_long)?;
        Ok(st)
    }

    /// The node of `path` (a new one, or the one the kernel already has), looked up once more.
    fn remember(&self, path: PathBuf) -> u64 {
        let mut n = lock(&self.nodes);
        if let Some(&id) = n.by_path.get(&path)
            && let Some(node) = n.by_id.get_mut(&id)
        {
            node.lookups += 1;
            return id;
        }
        let id = n.next;
        n.next += 1;
        n.by_path.insert(path.clone(), id);
        n.by_id.insert(
            id,
            Node {
                path,
                lookups: 1,
                dirty: false,
            },
        );
        id
    }

    fn forget(&self, id: u64, count: u64) {
        if id == ROOT {
            return;
        }
        let mut n = lock(&self.nodes);
        let gone = match n.by_id.get_mut(&id) {
            Some(node) => {
                node.lookups = node.lookups.saturating_sub(count);
                node.lookups == 0
            }
            None => false,
        };
        if gone
            && let Some(node) = n.by_id.remove(&id)
            && n.by_path.get(&node.path) == Some(&id)
        {
            n.by_path.remove(&node.path);
        }
    }

    /// `path` is gone from the backing folder: later lookups make a new node.
    fn unlinked(&self, path: &Path) {
        lock(&self.nodes).by_path.remove(path);
    }

    /// `from` (and everything under it) is now `to`.
    fn renamed(&self, from: &Path, to: &Path) {
        let mut n = lock(&self.nodes);
        n.by_path.remove(to);
        let moved: Vec<(PathBuf, u64)> = n
            .by_path
            .iter()
            .filter(|(p, _)| p.starts_with(from))
            .map(|(p, id)| (p.clone(), *id))
            .collect();
        for (old, id) in moved {
            // join("") would add a trailing slash: "dir/name/" is ENOTDIR for a file.
            let new = match old.strip_prefix(from) {
                Ok(rest) if !rest.as_os_str().is_empty() => to.join(rest),
                _ => to.to_path_buf(),
            };
            n.by_path.remove(&old);
            n.by_path.insert(new.clone(), id);
            if let Some(node) = n.by_id.get_mut(&id) {
                node.path = new;
            }
        }
    }

    fn entry(&self, path: PathBuf) -> Result<Body, i32> {
        let st = self.stat_path(&path)?;
        let id = self.remember(path);
        Ok(Body::Bytes(Out::default().entry(id, &st).0.clone()))
    }

    fn add_handle(&self, h: Handle) -> u64 {
        let mut hs = lock(&self.handles);
        let fh = hs.0;
        hs.0 += 1;
        hs.1.insert(fh, Arc::new(h));
        fh
    }

    fn handle(&self, fh: u64) -> Result<Arc<Handle>, i32> {
        lock(&self.handles).1.get(&fh).cloned().ok_or(libc::EBADF)
    }

    fn file(&self, fh: u64) -> Result<(Arc<Handle>, RawFd, bool, u64), i32> {
        let h = self.handle(fh)?;
        match &*h {
            Handle::File { fd, direct, node } => {
                let (fd, direct, node) = (fd.as_raw_fd(), *direct, *node);
                Ok((h, fd, direct, node))
            }
            Handle::Dir { .. } => Err(libc::EISDIR),
        }
    }

    fn open_at(&self, rel: &Path, flags: i32, mode: u32) -> Result<OwnedFd, i32> {
        let c = c_path(rel)?;
        // SAFETY: the dirfd is ours and `c` NUL-terminated; the result is checked.
        let fd = check(unsafe {
            libc::openat(
                self.backing.as_raw_fd(),
                c.as_ptr(),
                flags | libc::O_NOFOLLOW | libc::O_CLOEXEC,
                mode as libc::c_uint,
            )
        } as libc::c_long)?;
        // SAFETY: just opened, owned by nothing else.
        Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
    }

    fn hold(
        &self,
        arrival_ns: u64,
        kind: Held,
        l: Option<Latency>,
        s: &mut Scratch,
    ) -> Option<(u64, Held)> {
        if !self.holding.load(Ordering::Relaxed) {
            return None;
        }
        l.map(|l| (arrival_ns + s.draws.sample_ns(&l), kind))
    }

    /// One request, done on the backing folder. `arrival_ns` is when it was read from the
    /// device: a delayed reply is held until that plus its latency, so the time the
    /// backing disk itself took counts towards it.
    pub(crate) fn answer(&self, r: &Request<'_>, arrival_ns: u64, s: &mut Scratch) -> Answer {
        match r.opcode {
            p::READ => return self.read(r, arrival_ns, s),
            p::WRITE => return self.write(r, arrival_ns, s),
            p::FSYNC | p::FSYNCDIR => return self.fsync(r, arrival_ns, s),
            _ => {}
        }
        Answer::now(self.metadata(r))
    }

    fn read(&self, r: &Request<'_>, arrival_ns: u64, s: &mut Scratch) -> Answer {
        let mut go = || -> Result<usize, i32> {
            let (fh, off, size) = (
                r.u64(0).ok_or(libc::EINVAL)?,
                r.u64(8).ok_or(libc::EINVAL)?,
                r.u32(16).ok_or(libc::EINVAL)? as usize,
            );
            let (_h, fd, _, _) = self.file(fh)?;
            let buf = s.aligned(size);
            // SAFETY: `buf` is writable for its length; `fd` stays open while `_h` is held.
            let n = check(unsafe {
                libc::pread(fd, buf.as_mut_ptr().cast(), buf.len(), off as libc::off_t)
            } as libc::c_long)?;
            Ok(n as usize)
        };
        match go() {
            Ok(n) => Answer {
                result: Ok(Body::Scratch(n)),
                hold: self.hold(arrival_ns, Held::Read, self.delays.read, s),
            },
            Err(e) => Answer::now(Err(e)),
        }
    }

    fn write(&self, r: &Request<'_>, arrival_ns: u64, s: &mut Scratch) -> Answer {
        let mut go = || -> Result<(usize, bool, u64), i32> {
            let (fh, off, size) = (
                r.u64(0).ok_or(libc::EINVAL)?,
                r.u64(8).ok_or(libc::EINVAL)?,
                r.u32(16).ok_or(libc::EINVAL)? as usize,
            );
            // No more than the kernel was told it may send (INIT's max_write).
            if size > MAX_WRITE {
                return Err(libc::EINVAL);
            }
            let data = r.body.get(40..40 + size).ok_or(libc::EINVAL)?;
            let (_h, fd, direct, node) = self.file(fh)?;
            let src: &[u8] = if direct {
                let a = s.aligned(size);
                a.copy_from_slice(data);
                a
            } else {
                data
            };
            // SAFETY: `src` is readable for its length; `fd` stays open while `_h` is held.
            let n = check(unsafe {
                libc::pwrite(fd, src.as_ptr().cast(), src.len(), off as libc::off_t)
            } as libc::c_long)?;
            Ok((n as usize, direct, node))
        };
        match go() {
            Ok((n, direct, node)) => {
                let hold = if direct {
                    self.hold(arrival_ns, Held::DirectWrite, self.delays.direct_write, s)
                } else {
                    if let Some(n) = lock(&self.nodes).by_id.get_mut(&node) {
                        n.dirty = true;
                    }
                    None
                };
                let mut out = Out::default();
                out.u32(n as u32).u32(0);
                Answer {
                    result: Ok(Body::Bytes(out.0)),
                    hold,
                }
            }
            Err(e) => Answer::now(Err(e)),
        }
    }

    fn fsync(&self, r: &Request<'_>, arrival_ns: u64, s: &mut Scratch) -> Answer {
        let go = || -> Result<bool, i32> {
            let fh = r.u64(0).ok_or(libc::EINVAL)?;
            let datasync = r.u32(8).unwrap_or(0) & p::FSYNC_FDATASYNC != 0;
            let h = self.handle(fh)?;
            let (fd, node) = match &*h {
                Handle::File { fd, node, .. } => (fd.as_raw_fd(), Some(*node)),
                Handle::Dir { fd, .. } => (fd.as_raw_fd(), None),
            };
            // SAFETY: `fd` stays open while `h` is held.
            check(unsafe {
                if datasync {
                    libc::fdatasync(fd)
                } else {
                    libc::fsync(fd)
                }
            } as libc::c_long)?;
            let mut nodes = lock(&self.nodes);
            let dirty = node
                .and_then(|n| nodes.by_id.get_mut(&n))
                .map(|n| std::mem::replace(&mut n.dirty, false))
                .unwrap_or(false);
            Ok(dirty)
        };
        match go() {
            Ok(dirty) => {
                let mut hold = self.hold(arrival_ns, Held::Sync, self.delays.sync, s);
                if dirty
                    && hold.is_some()
                    && let Some(w) = self.delays.direct_write
                {
                    let extra = s.draws.sample_ns(&w);
                    hold = Some((hold.map_or(arrival_ns, |h| h.0) + extra, Held::Sync));
                }
                Answer {
                    result: Ok(Body::Bytes(Vec::new())),
                    hold,
                }
            }
            Err(e) => Answer::now(Err(e)),
        }
    }

    /// Everything that is not data: names, attributes, handles. Never held.
    fn metadata(&self, r: &Request<'_>) -> Result<Body, i32> {
        let inval = libc::EINVAL;
        let dirfd = self.backing.as_raw_fd();
        let empty = || Ok(Body::Bytes(Vec::new()));
        match r.opcode {
            p::INIT => {
                let major = r.u32(0).ok_or(inval)?;
                if major < p::MAJOR {
                    return Err(libc::EPROTO);
                }
                let kernel_minor = if major > p::MAJOR {
                    p::MINOR
                } else {
                    r.u32(4).ok_or(inval)?
                };
                let wanted = p::FUSE_ASYNC_READ
                    | p::FUSE_ATOMIC_O_TRUNC
                    | p::FUSE_BIG_WRITES
                    | p::FUSE_PARALLEL_DIROPS
                    | p::FUSE_MAX_PAGES;
                let mut out = Out::default();
                out.u32(p::MAJOR)
                    .u32(kernel_minor.min(p::MINOR))
                    .u32(r.u32(8).unwrap_or(0))
                    .u32(r.u32(12).unwrap_or(0) & wanted)
                    .u16(16)
                    .u16(12)
                    .u32(MAX_WRITE as u32)
                    .u32(1)
                    .u16((MAX_WRITE / 4096) as u16)
                    .u16(0)
                    .u32(0);
                out.0.resize(64, 0);
                Ok(Body::Bytes(out.0))
            }
            p::DESTROY => empty(),
            p::FORGET => {
                self.forget(r.nodeid, r.u64(0).unwrap_or(0));
                Ok(Body::None)
            }
            p::BATCH_FORGET => {
                let count = r.u32(0).unwrap_or(0) as usize;
                for i in 0..count {
                    if let (Some(id), Some(n)) = (r.u64(8 + 16 * i), r.u64(16 + 16 * i)) {
                        self.forget(id, n);
                    }
                }
                Ok(Body::None)
            }
            p::INTERRUPT => Ok(Body::None),
            p::LOOKUP => {
                let parent = self.path_of(r.nodeid)?;
                let name = *r.names(0).first().ok_or(inval)?;
                self.entry(child(&parent, name)?)
            }
            p::GETATTR => {
                let st = if r.u32(0).unwrap_or(0) & p::GETATTR_FH != 0 {
                    match &*self.handle(r.u64(8).ok_or(inval)?)? {
                        Handle::File { fd, .. } | Handle::Dir { fd, .. } => {
                            Fs::stat_fd(fd.as_raw_fd())?
                        }
                    }
                } else {
                    self.stat_path(&self.path_of(r.nodeid)?)?
                };
                Ok(Body::Bytes(Out::default().attr_out(&st).0.clone()))
            }
            p::SETATTR => self.setattr(r),
            p::READLINK => {
                let c = c_path(&self.path_of(r.nodeid)?)?;
                let mut buf = vec![0u8; libc::PATH_MAX as usize];
                // SAFETY: `buf` is writable for its length; the dirfd is ours.
                let n = check(unsafe {
                    libc::readlinkat(dirfd, c.as_ptr(), buf.as_mut_ptr().cast(), buf.len())
                } as libc::c_long)?;
                buf.truncate(n as usize);
                Ok(Body::Bytes(buf))
            }
            p::SYMLINK => {
                let names = r.names(0);
                let (name, target) = (names.first().ok_or(inval)?, names.get(1).ok_or(inval)?);
                let path = child(&self.path_of(r.nodeid)?, name)?;
                let (c, t) = (
                    c_path(&path)?,
                    CString::new(target.as_bytes()).map_err(|_| inval)?,
                );
                // SAFETY: both strings NUL-terminated; the dirfd is ours.
                check(unsafe { libc::symlinkat(t.as_ptr(), dirfd, c.as_ptr()) } as libc::c_long)?;
                self.entry(path)
            }
            p::MKNOD => {
                let (mode, rdev) = (r.u32(0).ok_or(inval)?, r.u32(4).ok_or(inval)?);
                let name = *r.names(16).first().ok_or(inval)?;
                let path = child(&self.path_of(r.nodeid)?, name)?;
                let c = c_path(&path)?;
                // SAFETY: `c` NUL-terminated; the dirfd is ours.
                let rc = unsafe { libc::mknodat(dirfd, c.as_ptr(), mode, rdev as libc::dev_t) };
                check(rc as libc::c_long)?;
                self.entry(path)
            }
            p::MKDIR => {
                let mode = r.u32(0).ok_or(inval)?;
                let name = *r.names(8).first().ok_or(inval)?;
                let path = child(&self.path_of(r.nodeid)?, name)?;
                let c = c_path(&path)?;
                // SAFETY: `c` NUL-terminated; the dirfd is ours.
                check(unsafe { libc::mkdirat(dirfd, c.as_ptr(), mode) } as libc::c_long)?;
                self.entry(path)
            }
            p::UNLINK | p::RMDIR => {
                let name = *r.names(0).first().ok_or(inval)?;
                let path = child(&self.path_of(r.nodeid)?, name)?;
                let c = c_path(&path)?;
                let flag = if r.opcode == p::RMDIR {
                    libc::AT_REMOVEDIR
                } else {
                    0
                };
                // SAFETY: `c` NUL-terminated; the dirfd is ours.
                check(unsafe { libc::unlinkat(dirfd, c.as_ptr(), flag) } as libc::c_long)?;
                self.unlinked(&path);
                empty()
            }
            p::RENAME | p::RENAME2 => {
                let newdir = r.u64(0).ok_or(inval)?;
                let (flags, at) = if r.opcode == p::RENAME2 {
                    (r.u32(8).ok_or(inval)?, 16)
                } else {
                    (0, 8)
                };
                let names = r.names(at);
                let (old, new) = (names.first().ok_or(inval)?, names.get(1).ok_or(inval)?);
                let from = child(&self.path_of(r.nodeid)?, old)?;
                let to = child(&self.path_of(newdir)?, new)?;
                let (cf, ct) = (c_path(&from)?, c_path(&to)?);
                // SAFETY: both NUL-terminated; the dirfds are ours.
                check(unsafe {
                    libc::syscall(
                        libc::SYS_renameat2,
                        dirfd,
                        cf.as_ptr(),
                        dirfd,
                        ct.as_ptr(),
                        flags,
                    )
                })?;
                self.renamed(&from, &to);
                empty()
            }
            p::LINK => {
                let old = self.path_of(r.u64(0).ok_or(inval)?)?;
                let name = *r.names(8).first().ok_or(inval)?;
                let path = child(&self.path_of(r.nodeid)?, name)?;
                let (co, cn) = (c_path(&old)?, c_path(&path)?);
                // SAFETY: both NUL-terminated; the dirfds are ours.
                let rc = unsafe { libc::linkat(dirfd, co.as_ptr(), dirfd, cn.as_ptr(), 0) };
                check(rc as libc::c_long)?;
                self.entry(path)
            }
            p::OPEN => {
                let flags = r.u32(0).ok_or(inval)? as i32;
                let fd = self.open_at(
                    &self.path_of(r.nodeid)?,
                    flags & !(libc::O_CREAT | libc::O_EXCL | libc::O_NOCTTY),
                    0,
                )?;
                let direct = flags & libc::O_DIRECT != 0;
                let fh = self.add_handle(Handle::File {
                    fd,
                    direct,
                    node: r.nodeid,
                });
                Ok(Body::Bytes(Out::default().open(fh).0.clone()))
            }
            p::CREATE => {
                let (flags, mode) = (r.u32(0).ok_or(inval)? as i32, r.u32(4).ok_or(inval)?);
                let name = *r.names(16).first().ok_or(inval)?;
                let path = child(&self.path_of(r.nodeid)?, name)?;
                let fd = self.open_at(&path, flags | libc::O_CREAT, mode)?;
                let st = Fs::stat_fd(fd.as_raw_fd())?;
                let node = self.remember(path);
                let fh = self.add_handle(Handle::File {
                    fd,
                    direct: flags & libc::O_DIRECT != 0,
                    node,
                });
                let mut out = Out::default();
                out.entry(node, &st).open(fh);
                Ok(Body::Bytes(out.0))
            }
            p::RELEASE | p::RELEASEDIR => {
                lock(&self.handles).1.remove(&r.u64(0).ok_or(inval)?);
                empty()
            }
            // ENOSYS once, and the kernel never sends FLUSH again (Mount::new provokes it):
            // a process that serves this mount and has files open on it would otherwise wait
            // forever on its own FLUSH when it is killed (its server threads are gone first).
            p::FLUSH => Err(libc::ENOSYS),
            p::OPENDIR => {
                let fd = self.open_at(
                    &self.path_of(r.nodeid)?,
                    libc::O_RDONLY | libc::O_DIRECTORY,
                    0,
                )?;
                let listed = std::fs::read_dir(format!("/proc/self/fd/{}", fd.as_raw_fd()))
                    .map_err(|e| e.raw_os_error().unwrap_or(libc::EIO))?;
                let mut entries = vec![(b".".to_vec(), 1, 4), (b"..".to_vec(), 1, 4)];
                for e in listed.flatten() {
                    use std::os::unix::fs::DirEntryExt;
                    let kind = e.file_type().map(dirent_type).unwrap_or(0);
                    entries.push((e.file_name().as_bytes().to_vec(), e.ino(), kind));
                }
                let fh = self.add_handle(Handle::Dir { fd, entries });
                Ok(Body::Bytes(Out::default().open(fh).0.clone()))
            }
            p::READDIR => {
                let (fh, off, size) = (
                    r.u64(0).ok_or(inval)?,
                    r.u64(8).ok_or(inval)? as usize,
                    r.u32(16).ok_or(inval)? as usize,
                );
                let h = self.handle(fh)?;
                let Handle::Dir { entries, .. } = &*h else {
                    return Err(libc::ENOTDIR);
                };
                let mut out = Out::default();
                for (i, (name, ino, kind)) in entries.iter().enumerate().skip(off) {
                    if !out.dirent(*ino, i as u64 + 1, *kind, name, size) {
                        break;
                    }
                }
                Ok(Body::Bytes(out.0))
            }
            p::STATFS => {
                // SAFETY: statvfs is plain old data; all zeroes is a valid value.
                let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
                // SAFETY: the descriptor is ours; `st` is writable.
                check(unsafe { libc::fstatvfs(dirfd, &mut st) } as libc::c_long)?;
                let mut out = Out::default();
                out.u64(st.f_blocks)
                    .u64(st.f_bfree)
                    .u64(st.f_bavail)
                    .u64(st.f_files)
                    .u64(st.f_ffree)
                    .u32(st.f_bsize as u32)
                    .u32(st.f_namemax as u32)
                    .u32(st.f_frsize as u32)
                    .u32(0);
                out.0.resize(80, 0);
                Ok(Body::Bytes(out.0))
            }
            p::ACCESS => {
                let c = c_path(&self.path_of(r.nodeid)?)?;
                let mask = r.u32(0).ok_or(inval)? as i32;
                // SAFETY: `c` NUL-terminated; the dirfd is ours.
                check(unsafe { libc::faccessat(dirfd, c.as_ptr(), mask, 0) } as libc::c_long)?;
                empty()
            }
            p::FALLOCATE => {
                let (fh, off, len, mode) = (
                    r.u64(0).ok_or(inval)?,
                    r.u64(8).ok_or(inval)?,
                    r.u64(16).ok_or(inval)?,
                    r.u32(24).ok_or(inval)?,
                );
                let (_h, fd, _, _) = self.file(fh)?;
                // SAFETY: `fd` stays open while `_h` is held.
                check(unsafe {
                    libc::fallocate(fd, mode as i32, off as libc::off_t, len as libc::off_t)
                } as libc::c_long)?;
                empty()
            }
            p::LSEEK => {
                let (fh, off, whence) = (
                    r.u64(0).ok_or(inval)?,
                    r.u64(8).ok_or(inval)?,
                    r.u32(16).ok_or(inval)?,
                );
                let (_h, fd, _, _) = self.file(fh)?;
                // SAFETY: `fd` stays open while `_h` is held.
                let at = check(
                    unsafe { libc::lseek(fd, off as libc::off_t, whence as i32) } as libc::c_long,
                )?;
                let mut out = Out::default();
                out.u64(at as u64);
                Ok(Body::Bytes(out.0))
            }
            _ => Err(libc::ENOSYS),
        }
    }

    fn setattr(&self, r: &Request<'_>) -> Result<Body, i32> {
        let inval = libc::EINVAL;
        let valid = r.u32(0).ok_or(inval)?;
        let path = self.path_of(r.nodeid)?;
        let c = c_path(&path)?;
        let dirfd = self.backing.as_raw_fd();
        let fh_file = if valid & p::FATTR_FH != 0 {
            self.file(r.u64(8).ok_or(inval)?).ok()
        } else {
            None
        };
        if valid & p::FATTR_SIZE != 0 {
            let size = r.u64(16).ok_or(inval)? as libc::off_t;
            let truncated;
            let fd = match &fh_file {
                Some((_h, fd, _, _)) => *fd,
                None => {
                    truncated = self.open_at(&path, libc::O_WRONLY, 0)?;
                    truncated.as_raw_fd()
                }
            };
            // SAFETY: `fd` stays open for the call (its handle or `truncated` holds it).
            let rc = unsafe { libc::ftruncate(fd, size) };
            check(rc as libc::c_long)?;
        }
        if valid & p::FATTR_MODE != 0 {
            let mode = r.u32(68).ok_or(inval)? & 0o7777;
            // SAFETY: `c` NUL-terminated; the dirfd is ours.
            check(unsafe { libc::fchmodat(dirfd, c.as_ptr(), mode, 0) } as libc::c_long)?;
        }
        if valid & (p::FATTR_UID | p::FATTR_GID) != 0 {
            let uid = if valid & p::FATTR_UID != 0 {
                r.u32(76).ok_or(inval)?
            } else {
                u32::MAX
            };
            let gid = if valid & p::FATTR_GID != 0 {
                r.u32(80).ok_or(inval)?
            } else {
                u32::MAX
            };
            // SAFETY: as above; u32::MAX (-1) leaves an id unchanged.
            let rc =
                unsafe { libc::fchownat(dirfd, c.as_ptr(), uid, gid, libc::AT_SYMLINK_NOFOLLOW) };
            check(rc as libc::c_long)?;
        }
        if valid & (p::FATTR_ATIME | p::FATTR_MTIME | p::FATTR_ATIME_NOW | p::FATTR_MTIME_NOW) != 0
        {
            let time = |set: u32, now: u32, s_at: usize, ns_at: usize| -> libc::timespec {
                if valid & now != 0 {
                    libc::timespec {
                        tv_sec: 0,
                        tv_nsec: libc::UTIME_NOW,
                    }
                } else if valid & set != 0 {
                    libc::timespec {
                        tv_sec: r.u64(s_at).unwrap_or(0) as libc::time_t,
                        tv_nsec: r.u32(ns_at).unwrap_or(0) as libc::c_long,
                    }
                } else {
                    libc::timespec {
                        tv_sec: 0,
                        tv_nsec: libc::UTIME_OMIT,
                    }
                }
            };
            let ts = [
                time(p::FATTR_ATIME, p::FATTR_ATIME_NOW, 32, 56),
                time(p::FATTR_MTIME, p::FATTR_MTIME_NOW, 40, 60),
            ];
            // SAFETY: `ts` holds two timespecs; `c` NUL-terminated; the dirfd is ours.
            check(unsafe {
                libc::utimensat(dirfd, c.as_ptr(), ts.as_ptr(), libc::AT_SYMLINK_NOFOLLOW)
            } as libc::c_long)?;
        }
        let st = match &fh_file {
            Some((_h, fd, _, _)) => Fs::stat_fd(*fd)?,
            None => self.stat_path(&path)?,
        };
        Ok(Body::Bytes(Out::default().attr_out(&st).0.clone()))
    }
}

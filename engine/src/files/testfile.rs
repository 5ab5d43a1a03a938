//! Test files: the private scratch folder, opening with O_DIRECT (and the buffered fallback),
//! aligned buffers, laying files out with incompressible data, and the disk-full error.

use std::ffi::CString;
use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::files::direct_io::DirectIoAlignment;
use crate::job::SyncMode;
use record::random::FastRng;
use record::size::format_bytes as format_size;

/// Test-only switch: pretend the filesystem refused O_DIRECT (EINVAL at open). Goes through the
/// same code path as a real refusal.
pub const FAKE_ODIRECT_EINVAL_ENV: &str = "DISKBENCH_FAKE_ODIRECT_EINVAL";

/// Test-only switch: skip the free-space check before a run, so a disk that fills up is met
/// mid-run (the kernel's ENOSPC) rather than refused up front.
pub const SKIP_SPACE_CHECK_ENV: &str = "DISKBENCH_SKIP_SPACE_CHECK";

/// A private folder for one run's test files, removed when dropped (success, error, Ctrl-C).
#[derive(Debug)]
pub(crate) struct ScratchDir {
    path: PathBuf,
    removed: bool,
}

impl ScratchDir {
    /// Create `<parent>/.diskbench-<id>/`.
    pub(crate) fn create(parent: &Path) -> Result<ScratchDir> {
        let path = parent.join(format!(".diskbench-{}", record::random::new_id()));
        fs::create_dir(&path)
            .with_context(|| format!("cannot create the test folder {}", path.display()))?;
        let dir = ScratchDir {
            path,
            removed: false,
        };
        // Who owns the folder, so a later run can tell a folder left by a killed run from one
        // in use by a run going on now.
        fs::write(
            dir.path.join(OWNER_FILE),
            format!("{}\n", std::process::id()),
        )
        .with_context(|| format!("cannot write in the test folder {}", dir.path.display()))?;
        Ok(dir)
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Remove the folder and everything in it now (also done on drop).
    pub(crate) fn remove(&mut self) -> io::Result<()> {
        if self.removed {
            return Ok(());
        }
        self.removed = true;
        match fs::remove_dir_all(&self.path) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            other => other,
        }
    }
}

/// The file in a scratch folder naming the process that made it.
pub(crate) const OWNER_FILE: &str = "owner.pid";

/// A `.diskbench-<id>/` folder left behind by a run that was killed (SIGKILL, power loss).
#[derive(Debug, Clone, PartialEq)]
pub struct StaleScratch {
    pub path: PathBuf,
    /// Bytes its files take on disk.
    pub bytes: u64,
    /// Why it is taken as stale: "pid 123 no longer runs" or "no owner recorded".
    pub why: String,
}

/// Scratch folders in `parent` that no running process owns. Read only: removing them is the
/// user's call (the warning says how), since a folder with no owner file may be from an older
/// version still running.
pub fn stale_scratch_dirs(parent: &Path) -> Vec<StaleScratch> {
    let Ok(entries) = fs::read_dir(parent) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for e in entries.flatten() {
        let name = e.file_name();
        let name = name.to_string_lossy();
        let Some(id) = name.strip_prefix(".diskbench-") else {
            continue;
        };
        if !id.chars().all(|c| c.is_ascii_hexdigit()) || !e.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        let path = e.path();
        let owner = record::input::read_limited(&path.join(OWNER_FILE), 64)
            .ok()
            .and_then(|b| String::from_utf8(b).ok())
            .and_then(|t| t.trim().parse::<i32>().ok())
            .filter(|pid| *pid > 0);
        let why = match owner {
            Some(pid) => {
                // SAFETY: kill with signal 0 only checks whether the process exists (EPERM:
                // it does, under another user).
                let alive = unsafe { libc::kill(pid, 0) } == 0
                    || io::Error::last_os_error().raw_os_error() == Some(libc::EPERM);
                if alive {
                    continue;
                }
                format!("pid {pid} no longer runs")
            }
            None => "no owner recorded".to_string(),
        };
        let bytes = fs::read_dir(&path)
            .map(|files| {
                files
                    .flatten()
                    .filter_map(|f| f.metadata().ok())
                    .map(|m| m.blocks() * 512)
                    .sum()
            })
            .unwrap_or(0);
        out.push(StaleScratch { path, bytes, why });
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    out
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = self.remove();
    }
}

/// Files created by a job outside a scratch folder, removed on drop unless kept.
#[derive(Debug, Default)]
pub(crate) struct CreatedFiles {
    paths: Vec<PathBuf>,
    keep: bool,
}

impl CreatedFiles {
    pub(crate) fn push(&mut self, path: PathBuf) {
        self.paths.push(path);
    }

    /// The job succeeded: leave the files where they are.
    pub(crate) fn keep(mut self) {
        self.keep = true;
    }
}

impl Drop for CreatedFiles {
    fn drop(&mut self) {
        if !self.keep {
            for p in &self.paths {
                let _ = fs::remove_file(p);
            }
        }
    }
}

/// An open test file and how it was opened.
#[derive(Debug)]
pub struct OpenedFile {
    pub file: File,
    pub path: PathBuf,
    /// Whether O_DIRECT is in effect.
    pub direct: bool,
    /// Set when O_DIRECT was asked for and refused.
    pub note: Option<String>,
}

/// Open (creating if needed) a test file for reading and writing, with O_DIRECT when asked
/// for; where the filesystem refuses O_DIRECT (EINVAL), buffered I/O with a note.
pub(crate) fn open_test_file(path: &Path, direct: bool, sync: SyncMode) -> Result<OpenedFile> {
    let opened = open_test_file_unchecked(path, direct, sync)?;
    require_regular(&opened.file, path)?;
    Ok(opened)
}

/// Every test file is opened with O_NOFOLLOW and its descriptor checked: whatever a name in
/// the test folder points at (a symlink to a device or to someone's file, a device node, a
/// FIFO), the tool writes test data only into a regular file, and never through a symlink it
/// did not create. The check is on the opened descriptor, so a swap between a check of the
/// name and the open cannot get past it.
fn require_regular(file: &fs::File, path: &Path) -> Result<()> {
    let ft = file
        .metadata()
        .with_context(|| format!("cannot stat the test file {}", path.display()))?
        .file_type();
    if !ft.is_file() {
        return Err(record::error::usage(format!(
            "{}: not a regular file; test data is only written into regular files (remove it or \
             choose another name or folder)",
            path.display()
        )));
    }
    Ok(())
}

fn open_test_file_unchecked(path: &Path, direct: bool, sync: SyncMode) -> Result<OpenedFile> {
    // O_NOFOLLOW: a symlink in the test folder is refused (ELOOP), not written through.
    // No O_NONBLOCK: io_uring would then return EAGAIN instead of waiting; opening a FIFO
    // read-write does not block on Linux, and the descriptor check refuses it.
    let mut flags = libc::O_NOFOLLOW;
    match sync {
        SyncMode::OSync => flags |= libc::O_SYNC,
        SyncMode::ODsync => flags |= libc::O_DSYNC,
        _ => {}
    }
    let open = |extra: i32| {
        OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o644)
            .custom_flags(flags | extra)
            .open(path)
    };
    if direct {
        let attempt = if crate::faults::asked(FAKE_ODIRECT_EINVAL_ENV).is_some() {
            Err(io::Error::from_raw_os_error(libc::EINVAL))
        } else {
            open(libc::O_DIRECT)
        };
        match attempt {
            Ok(file) => {
                return Ok(OpenedFile {
                    file,
                    path: path.to_path_buf(),
                    direct: true,
                    note: None,
                });
            }
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
                let file = open(0).map_err(|e| symlink_refused(path, e))?;
                return Ok(OpenedFile {
                    file,
                    path: path.to_path_buf(),
                    direct: false,
                    note: Some(format!(
                        "O_DIRECT refused by the filesystem of {} (EINVAL): buffered I/O, so \
                         reads may come from the page cache",
                        path.parent().unwrap_or(path).display()
                    )),
                });
            }
            Err(e) => return Err(symlink_refused(path, e)),
        }
    }
    let file = open(0).map_err(|e| symlink_refused(path, e))?;
    Ok(OpenedFile {
        file,
        path: path.to_path_buf(),
        direct: false,
        note: None,
    })
}

/// The open error, with ELOOP (O_NOFOLLOW met a symlink) said plainly and as a usage error.
fn symlink_refused(path: &Path, e: io::Error) -> anyhow::Error {
    if e.raw_os_error() == Some(libc::ELOOP) {
        record::error::usage(format!(
            "{}: a symlink; test data is never written through a symlink (remove it or give \
             the real file)",
            path.display()
        ))
    } else {
        anyhow::Error::new(e).context(format!("cannot open the test file {}", path.display()))
    }
}

/// A heap buffer aligned for O_DIRECT, filled with incompressible bytes.
pub(crate) struct AlignedBuf {
    ptr: *mut u8,
    len: usize,
    layout: std::alloc::Layout,
}

impl AlignedBuf {
    /// `len` bytes at an address that is a multiple of `align` (a power of two), filled from
    /// `rng`.
    pub(crate) fn new(len: usize, align: usize, rng: &mut FastRng) -> AlignedBuf {
        let align = align.max(8).next_power_of_two();
        #[expect(
            clippy::expect_used,
            reason = "the alignment is a power of two (made so above), and `len` is one block \
                      or chunk, bounded far below isize::MAX by the option checks"
        )]
        let layout = std::alloc::Layout::from_size_align(len.max(1), align)
            .expect("alignment is a power of two and the size fits");
        // SAFETY: the layout has a non-zero size.
        let ptr = unsafe { std::alloc::alloc(layout) };
        if ptr.is_null() {
            std::alloc::handle_alloc_error(layout);
        }
        let mut buf = AlignedBuf { ptr, len, layout };
        rng.fill(buf.as_mut_slice());
        buf
    }

    pub(crate) fn as_ptr(&self) -> *mut u8 {
        self.ptr
    }

    pub(crate) fn as_slice(&self) -> &[u8] {
        // SAFETY: `ptr` points to `len` initialised bytes we own.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }

    pub(crate) fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: `ptr` points to `len` bytes we own exclusively (&mut self).
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }

    /// Make the contents new: a fresh random word at the start of every 512-byte sector, so
    /// no block written twice is the same (dedup) while the rest stays random (compression).
    #[inline]
    pub(crate) fn refresh(&mut self, rng: &mut FastRng) {
        let words = self.len / 512;
        for i in 0..words {
            let v = rng.next_u64();
            // SAFETY: i * 512 + 8 <= len; unaligned write of a u64 inside our buffer.
            unsafe { self.ptr.add(i * 512).cast::<u64>().write_unaligned(v) };
        }
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with exactly this layout.
        unsafe { std::alloc::dealloc(self.ptr, self.layout) };
    }
}

/// `dir` (named by `option`, e.g. `--dir`) must be a folder the run can write its test files
/// in: an existing folder, on a filesystem mounted read-write, writable by this user. Checked
/// before anything is touched, so a read-only mount is a usage error naming the option (exit
/// 2), not an EROFS from creating the scratch folder half-way into the run.
pub fn check_test_folder(option: &str, dir: &Path) -> Result<()> {
    let usage = |why: String| {
        Err(record::error::usage(format!(
            "{option} {}: {why}",
            dir.display()
        )))
    };
    if !dir.is_dir() {
        return usage(format!(
            "not an existing folder; create it or point {option} elsewhere"
        ));
    }
    let Ok(c) = CString::new(dir.as_os_str().as_bytes()) else {
        return usage("a path with a NUL byte".into());
    };
    // SAFETY: a zeroed statvfs is valid for the kernel to fill.
    let mut s: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: `c` is NUL-terminated, `s` is writable and ours.
    let read_only =
        unsafe { libc::statvfs(c.as_ptr(), &mut s) } == 0 && s.f_flag & libc::ST_RDONLY != 0;
    if read_only {
        return usage(format!(
            "on a read-only filesystem; the test files need a writable folder: point {option} at one"
        ));
    }
    // SAFETY: access reads a NUL-terminated path and has no other effect.
    if unsafe { libc::access(c.as_ptr(), libc::W_OK | libc::X_OK) } != 0 {
        let e = io::Error::last_os_error();
        let why = if e.raw_os_error() == Some(libc::EROFS) {
            "on a read-only filesystem".to_string()
        } else {
            format!("not writable by this user ({e})")
        };
        return usage(format!(
            "{why}; point {option} at a folder the run can write in"
        ));
    }
    Ok(())
}

/// Free bytes for an unprivileged writer in the filesystem holding `path`.
pub fn free_bytes(path: &Path) -> Option<u64> {
    let c = CString::new(path.as_os_str().as_bytes()).ok()?;
    // SAFETY: a zeroed statvfs is valid for the kernel to fill.
    let mut s: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: `c` is NUL-terminated, `s` is writable and ours.
    if unsafe { libc::statvfs(c.as_ptr(), &mut s) } != 0 {
        return None;
    }
    // ramfs reports no blocks at all (total 0, free 0): it has no size, so free space is
    // unknown there, not zero.
    if s.f_blocks == 0 {
        return None;
    }
    Some(s.f_bavail as u64 * s.f_frsize as u64)
}

/// Bytes the file already has on disk (0 when it does not exist).
pub(crate) fn allocated_bytes(path: &Path) -> u64 {
    fs::metadata(path).map(|m| m.blocks() * 512).unwrap_or(0)
}

/// The clear error for a disk that is full (or a file-size limit) while writing `path`.
/// `size_option` is how the user sets the size ("--size").
pub(crate) fn no_space_error(
    path: &Path,
    errno: i32,
    needed: u64,
    size_option: &str,
) -> anyhow::Error {
    let what = crate::errno::text(errno);
    let free = path.parent().and_then(free_bytes);
    let free_text = free
        .map(|f| format!("{} free", format_size(f)))
        .unwrap_or_else(|| "free space unknown".into());
    let limit = if errno == libc::EFBIG {
        file_size_limit()
            .map(|l| format!(", file-size limit (ulimit -f) {}", format_size(l)))
            .unwrap_or_default()
    } else {
        String::new()
    };
    anyhow::anyhow!(
        "cannot write {}: {what} (needs {}, {free_text}{limit}); use a smaller {size_option}",
        path.display(),
        format_size(needed),
    )
}

/// RLIMIT_FSIZE in bytes, when limited.
pub(crate) fn file_size_limit() -> Option<u64> {
    // SAFETY: a zeroed rlimit is valid; getrlimit fills it.
    let mut rl: libc::rlimit = unsafe { std::mem::zeroed() };
    // SAFETY: `rl` is writable and ours.
    if unsafe { libc::getrlimit(libc::RLIMIT_FSIZE, &mut rl) } != 0 {
        return None;
    }
    (rl.rlim_cur != libc::RLIM_INFINITY).then_some(rl.rlim_cur as u64)
}

/// Exceeding the file-size limit sends SIGXFSZ, which kills by default; ignoring it makes the
/// write fail with EFBIG instead, which the engine reports clearly.
pub(crate) fn ignore_sigxfsz() {
    // SAFETY: setting a signal's disposition to SIG_IGN has no memory-safety requirements.
    unsafe { libc::signal(libc::SIGXFSZ, libc::SIG_IGN) };
}

/// Check there is room for `files` (their missing bytes) before writing anything.
pub(crate) fn check_free_space(files: &[(PathBuf, u64)], size_option: &str) -> Result<()> {
    let Some((first, _)) = files.first() else {
        return Ok(());
    };
    if crate::faults::asked(SKIP_SPACE_CHECK_ENV).is_some() {
        return Ok(());
    }
    let needed: u64 = files
        .iter()
        .map(|(p, size)| size.saturating_sub(allocated_bytes(p)))
        .sum();
    let dir = first.parent().unwrap_or(Path::new("."));
    if let Some(free) = free_bytes(dir)
        && free < needed
    {
        anyhow::bail!(
            "cannot lay out {}: not enough free space (needs {}, {} free); use a smaller {size_option}",
            first.display(),
            format_size(needed),
            format_size(free)
        );
    }
    Ok(())
}

/// Write incompressible data into `file` from its start to `to` with O_DIRECT-sized writes
/// (unmeasured), so reads never hit sparse or unwritten blocks. `progress` gets the bytes
/// written so far. Stops on Ctrl-C.
pub(crate) fn lay_out(
    opened: &OpenedFile,
    to: u64,
    align: &DirectIoAlignment,
    size_option: &str,
    progress: &mut dyn FnMut(u64),
) -> Result<()> {
    let buf_align = align.memory.max(4096) as usize;
    // 1 MiB at a time, a multiple of any O_DIRECT alignment; the last write may be shorter.
    write_data(
        &opened.file,
        &opened.path,
        to,
        1 << 20,
        buf_align,
        size_option,
        progress,
    )?;
    opened
        .file
        .sync_data()
        .with_context(|| format!("cannot sync the test file {}", opened.path.display()))?;
    Ok(())
}

/// Write fresh incompressible data through `file` from its start to `to`, `chunk` bytes per
/// write from a buffer aligned to `buf_align`, stopping on Ctrl-C; `progress` gets the bytes
/// written so far, about once a MiB and at the end. Errors name `path`, the file's name.
fn write_data(
    file: &File,
    path: &Path,
    to: u64,
    chunk: u64,
    buf_align: usize,
    size_option: &str,
    progress: &mut dyn FnMut(u64),
) -> Result<()> {
    let mut rng = FastRng::for_stream(None, 0x1a70);
    let mut buf = AlignedBuf::new(chunk as usize, buf_align, &mut rng);
    let mut off = 0;
    let mut reported = 0;
    while off < to {
        if record::cancel::requested() {
            return Err(record::error::interrupted());
        }
        let len = (to - off).min(chunk) as usize;
        buf.refresh(&mut rng);
        if let Err(e) = file.write_all_at(&buf.as_slice()[..len], off) {
            let errno = e.raw_os_error().unwrap_or(0);
            if crate::errno::is_no_space(errno) {
                return Err(no_space_error(path, errno, to, size_option));
            }
            if e.kind() == io::ErrorKind::Interrupted && record::cancel::requested() {
                return Err(record::error::interrupted());
            }
            return Err(e)
                .with_context(|| format!("cannot lay out the test file {}", path.display()));
        }
        off += len as u64;
        // About once a MiB: a call per 4 KiB write would cost more than the write.
        if off - reported >= 1 << 20 || off == to {
            reported = off;
            progress(off);
        }
    }
    Ok(())
}

/// Lay `opened` out from 0 to `to` the way fio's `extend_file` does for a job that reads (or
/// with `--overwrite=1`): buffered `write`s of the job's block size, front to back, one
/// `fsync` (fio's `create_fsync=1`), then the file's pages dropped from the page cache (fio's
/// `invalidate=1` when the job opens it).
///
/// Why not the O_DIRECT 1 MiB writes of [`lay_out`]: the way a file was written moves what a
/// virtual disk does with it afterwards, for fio and for us alike, so a file fio's way is what
/// makes the figures comparable (docs/design/file-preparation.md). The pages written are
/// dropped once synced, so the job's O_DIRECT reads start cold, as fio's do.
///
/// The writes go through a second descriptor on the same inode, opened through
/// `/proc/self/fd` (never the name, which could have been swapped) and checked to be the same
/// file. Without `/proc` this falls back to [`lay_out`]. Returns the size of each buffered
/// write, or `None` where it fell back.
pub(crate) fn lay_out_buffered(
    opened: &OpenedFile,
    to: u64,
    block_size: u64,
    align: &DirectIoAlignment,
    size_option: &str,
    progress: &mut dyn FnMut(u64),
) -> Result<Option<u64>> {
    use std::os::fd::AsRawFd;
    let fd = opened.file.as_raw_fd();
    let buffered = OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_CLOEXEC)
        .open(format!("/proc/self/fd/{fd}"));
    let same_inode = |f: &File| match (f.metadata(), opened.file.metadata()) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    };
    let file = match buffered {
        Ok(f) if same_inode(&f) => f,
        _ => return lay_out(opened, to, align, size_option, progress).map(|()| None),
    };
    // fio writes `max_bs[DDIR_WRITE]` at a time; at least 4 KiB, at most 1 MiB here (the size
    // of a write to the page cache changes nothing the disk sees).
    let chunk = block_size.clamp(4096, 1 << 20);
    write_data(&file, &opened.path, to, chunk, 4096, size_option, progress)?;
    file.sync_all()
        .with_context(|| format!("cannot sync the test file {}", opened.path.display()))?;
    // SAFETY: plain advice on our open descriptor; no memory is passed.
    unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    Ok(Some(chunk))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scratch_dir_is_removed_on_drop() {
        let parent = tempfile::tempdir().unwrap();
        let path;
        {
            let s = ScratchDir::create(parent.path()).unwrap();
            path = s.path().to_path_buf();
            fs::write(path.join("data"), b"x").unwrap();
            assert!(path.is_dir());
        }
        assert!(!path.exists());
    }

    #[test]
    fn aligned_buffers_are_aligned_and_refresh_changes_them() {
        let mut rng = FastRng::new(3);
        let mut b = AlignedBuf::new(8192, 4096, &mut rng);
        assert_eq!(b.as_ptr() as usize % 4096, 0);
        let before = b.as_slice().to_vec();
        b.refresh(&mut rng);
        assert_ne!(before, b.as_slice());
        // Only the stamped words changed.
        assert_eq!(before[8..512], b.as_slice()[8..512]);
    }
}

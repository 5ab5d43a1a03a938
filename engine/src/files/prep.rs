//! How a test file is made ready before it is measured, the way fio makes it (fio's
//! `filesetup.c`, `extend_file` and `fallocate_file`):
//!
//! - A job that reads (read, randread, rw, randrw) needs real data: a file that is missing or
//!   too short is emptied, allocated, and written front to back before the job starts.
//! - A job that only writes gets a *new* file allocated with fio's `fallocate` mode and no data
//!   (unless `overwrite=1`, which lays the data down first as for reads). fio's default mode on
//!   Linux is `native`: `fallocate(fd, 0, 0, size)`, which on ext4 and xfs reserves the blocks
//!   as *unwritten* extents. Every first write into such a block also converts its extent, and
//!   an `fdatasync` after it must commit that metadata change: on ext4 that is about half the
//!   synced writes per second of writing into blocks written before. Published figures are made
//!   this way, so ours are too.
//! - A file already there at full size is used as it is (fio neither truncates nor rewrites it).
//! - `create_on_open=1`: nothing is prepared; the job creates the file when it opens it.
//!
//! Also here: what the filesystem says about a file's blocks (FIEMAP), so tests and the record
//! can show a write test's file starts unwritten and a read test's is fully written.

use std::os::fd::AsRawFd;
use std::path::Path;

use anyhow::Result;

use crate::files::testfile::{self, OpenedFile};
use record::FilePreparation;

/// fio's `fallocate=` modes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Fallocate {
    /// `fallocate(fd, 0, 0, size)`; refused quietly where the filesystem cannot (fio's default).
    #[default]
    Native,
    /// `posix_fallocate`: glibc writes zeros where the filesystem cannot allocate.
    Posix,
    /// `fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, size)`: blocks reserved, length unchanged.
    Keep,
    /// `ftruncate(fd, size)`: a sparse file of the full length.
    Truncate,
    /// Nothing: the writes extend the file.
    None,
}

impl Fallocate {
    /// fio's spelling, including its old boolean aliases (`0` = none, `1` = posix).
    pub(crate) fn parse(text: &str) -> Option<Fallocate> {
        Some(match text {
            "native" => Fallocate::Native,
            "posix" | "1" => Fallocate::Posix,
            "keep" => Fallocate::Keep,
            "truncate" => Fallocate::Truncate,
            "none" | "0" => Fallocate::None,
            _ => return None,
        })
    }

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Fallocate::Native => "native",
            Fallocate::Posix => "posix",
            Fallocate::Keep => "keep",
            Fallocate::Truncate => "truncate",
            Fallocate::None => "none",
        }
    }

    /// The record's `file_preparation.method` for a new file allocated this way.
    pub(crate) fn method(self) -> &'static str {
        match self {
            Fallocate::Native => "fallocate",
            Fallocate::Posix => "posix-fallocate",
            Fallocate::Keep => "fallocate-keep-size",
            Fallocate::Truncate => "truncate",
            Fallocate::None => "none",
        }
    }
}

/// fio's file-preparation options for one job (all at fio's defaults by `Default`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PrepOptions {
    pub fallocate: Fallocate,
    /// `overwrite=1`: a write job's new file gets data laid down first, as for reads.
    pub overwrite: bool,
    /// `create_on_open=1`: no preparation; the file is created when the job opens it.
    pub create_on_open: bool,
    /// `pre_read=1`: read the file once before the job (fills the page cache when buffered).
    pub pre_read: bool,
    /// `invalidate=1` (fio's default): drop the file's cached pages before the job, so a
    /// buffered job starts from the disk, not from what an earlier job left in memory.
    pub invalidate: bool,
}

impl Default for PrepOptions {
    fn default() -> PrepOptions {
        PrepOptions {
            fallocate: Fallocate::default(),
            overwrite: false,
            create_on_open: false,
            pre_read: false,
            invalidate: true,
        }
    }
}

/// Allocate `size` bytes of `file` (which is empty) the way `mode` says. Returns a note when
/// the filesystem refused a `native` allocation (fio carries on without; so do we). Running out
/// of room is the clear no-space error.
pub(crate) fn allocate(file: &OpenedFile, size: u64, mode: Fallocate) -> Result<Option<String>> {
    let fd = file.file.as_raw_fd();
    let len = size as libc::off_t;
    let errno = match mode {
        Fallocate::None => return Ok(None),
        // SAFETY: fallocate/ftruncate on a descriptor we own; no memory is passed.
        Fallocate::Native => errno_of(unsafe { libc::fallocate(fd, 0, 0, len) }),
        Fallocate::Keep => {
            // SAFETY: as above.
            errno_of(unsafe { libc::fallocate(fd, libc::FALLOC_FL_KEEP_SIZE, 0, len) })
        }
        // SAFETY: as above; posix_fallocate returns the error instead of setting errno.
        Fallocate::Posix => match unsafe { libc::posix_fallocate(fd, 0, len) } {
            0 => None,
            e => Some(e),
        },
        // SAFETY: as above.
        Fallocate::Truncate => errno_of(unsafe { libc::ftruncate(fd, len) }),
    };
    let Some(errno) = errno else {
        return Ok(None);
    };
    if crate::errno::is_no_space(errno) {
        return Err(testfile::no_space_error(&file.path, errno, size, "--size"));
    }
    if matches!(mode, Fallocate::Native | Fallocate::Posix) {
        // fio ignores a failed native or posix allocation (filesetup.c logs it and goes on:
        // tmpfs before 2.6.x, some FUSE and network filesystems): the writes then allocate as
        // they go.
        return Ok(Some(format!(
            "fallocate refused by the filesystem of {} ({}): the writes allocate as they go",
            file.path.parent().unwrap_or(&file.path).display(),
            crate::errno::text(errno)
        )));
    }
    Err(anyhow::anyhow!(
        "--fallocate={}: cannot allocate {}: {}; use --fallocate=none or native",
        mode.as_str(),
        file.path.display(),
        crate::errno::text(errno)
    ))
}

fn errno_of(rc: libc::c_int) -> Option<i32> {
    (rc != 0).then(|| {
        std::io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EIO)
    })
}

/// Empty `file` and allocate it with `mode`: a new file for a write test, as fio makes it.
pub(crate) fn fresh_allocated(
    file: &OpenedFile,
    size: u64,
    mode: Fallocate,
) -> Result<FilePreparation> {
    file.file
        .set_len(0)
        .map_err(|e| anyhow::anyhow!("cannot empty the test file {}: {e}", file.path.display()))?;
    let refused = allocate(file, size, mode)?;
    let what = match mode {
        Fallocate::Native => format!(
            "a new file allocated with fallocate(2) ({}), its blocks reserved but unwritten, as \
             fio's default fallocate=native makes it",
            record::size::format_bytes(size)
        ),
        Fallocate::Posix => {
            "a new file allocated with posix_fallocate (fio --fallocate=posix)".into()
        }
        Fallocate::Keep => {
            "a new empty file with blocks reserved by fallocate KEEP_SIZE (fio --fallocate=keep)"
                .into()
        }
        Fallocate::Truncate => {
            "a new sparse file of full length (ftruncate; fio --fallocate=truncate)".into()
        }
        Fallocate::None => "a new empty file that the writes extend (fio --fallocate=none)".into(),
    };
    let detail = match refused {
        Some(note) => format!("{what}; {note}"),
        None => what,
    };
    Ok(FilePreparation {
        method: mode.method().into(),
        fresh: true,
        detail,
    })
}

/// What FIEMAP says about a file's blocks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ExtentMap {
    /// Bytes in extents holding written data.
    pub written: u64,
    /// Bytes in extents allocated but never written (they read as zeros).
    pub unwritten: u64,
}

const FIEMAP_EXTENT_LAST: u32 = 0x1;
const FIEMAP_EXTENT_UNWRITTEN: u32 = 0x800;
const FIEMAP_FLAG_SYNC: u32 = 0x1;
/// `_IOWR('f', 11, struct fiemap)`.
const FS_IOC_FIEMAP: libc::c_ulong = 0xC020_660B;
const EXTENTS_PER_CALL: usize = 64;

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct FiemapExtent {
    fe_logical: u64,
    fe_physical: u64,
    fe_length: u64,
    fe_reserved64: [u64; 2],
    fe_flags: u32,
    fe_reserved: [u32; 3],
}

#[repr(C)]
struct Fiemap {
    fm_start: u64,
    fm_length: u64,
    fm_flags: u32,
    fm_mapped_extents: u32,
    fm_extent_count: u32,
    fm_reserved: u32,
    fm_extents: [FiemapExtent; EXTENTS_PER_CALL],
}

/// The file's extents by state, or None where the filesystem has no FIEMAP (tmpfs, some
/// network filesystems): then `st_blocks` is all there is.
pub fn extent_map(path: &Path) -> Option<ExtentMap> {
    let file = std::fs::File::open(path).ok()?;
    let mut map = ExtentMap::default();
    let mut start = 0u64;
    loop {
        let mut fm = Fiemap {
            fm_start: start,
            fm_length: u64::MAX - start,
            fm_flags: FIEMAP_FLAG_SYNC,
            fm_mapped_extents: 0,
            fm_extent_count: EXTENTS_PER_CALL as u32,
            fm_reserved: 0,
            fm_extents: [FiemapExtent::default(); EXTENTS_PER_CALL],
        };
        // SAFETY: FS_IOC_FIEMAP reads and writes a struct fiemap followed by fm_extent_count
        // extents, which is exactly `fm`'s layout; the descriptor is open.
        let rc = unsafe { libc::ioctl(file.as_raw_fd(), FS_IOC_FIEMAP as _, &mut fm) };
        if rc != 0 {
            return None;
        }
        let n = (fm.fm_mapped_extents as usize).min(EXTENTS_PER_CALL);
        if n == 0 {
            return Some(map);
        }
        for e in &fm.fm_extents[..n] {
            if e.fe_flags & FIEMAP_EXTENT_UNWRITTEN != 0 {
                map.unwritten += e.fe_length;
            } else {
                map.written += e.fe_length;
            }
        }
        let last = fm.fm_extents[n - 1];
        if last.fe_flags & FIEMAP_EXTENT_LAST != 0 {
            return Some(map);
        }
        start = last.fe_logical + last.fe_length;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fio_spellings_parse() {
        for m in [
            Fallocate::Native,
            Fallocate::Posix,
            Fallocate::Keep,
            Fallocate::Truncate,
            Fallocate::None,
        ] {
            assert_eq!(Fallocate::parse(m.as_str()), Some(m));
        }
        assert_eq!(Fallocate::parse("0"), Some(Fallocate::None));
        assert_eq!(Fallocate::parse("1"), Some(Fallocate::Posix));
        assert_eq!(Fallocate::parse("yes"), None);
        assert_eq!(PrepOptions::default().fallocate, Fallocate::Native);
    }
}

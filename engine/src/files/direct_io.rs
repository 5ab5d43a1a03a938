//! Direct I/O's alignment rules for a folder: what offsets, lengths and buffers must be
//! multiples of, from statx (`STATX_DIOALIGN`), else the block device's logical block size.

use std::ffi::CString;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// What validation found out about the place the job runs, needed again when running it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DirectIoAlignment {
    /// Offsets and lengths must be multiples of this (bytes).
    pub offset: u64,
    /// Buffers must start at a multiple of this (bytes).
    pub memory: u64,
    /// Where the figures came from: "statx" or "logical block size" or "default".
    pub source: &'static str,
}

/// The direct-I/O alignment that applies in `dir`: statx STATX_DIOALIGN on an existing job
/// file or the folder, else the block device's logical block size, else 512.
pub(crate) fn direct_io_alignment(dir: &Path, files: &[(PathBuf, u64)]) -> DirectIoAlignment {
    let candidates = files
        .iter()
        .map(|(p, _)| p.as_path())
        .filter(|p| p.is_file())
        .chain(std::iter::once(dir));
    for p in candidates {
        if let Some((mem, off)) = statx_dioalign(p)
            && off > 0
        {
            return DirectIoAlignment {
                offset: off as u64,
                memory: (mem as u64).max(1),
                source: "statx",
            };
        }
    }
    if let Some(lbs) = logical_block_size(dir) {
        return DirectIoAlignment {
            offset: lbs,
            memory: lbs,
            source: "logical block size",
        };
    }
    DirectIoAlignment {
        offset: 512,
        memory: 512,
        source: "default",
    }
}

/// (memory, offset) alignment from statx, when the filesystem reports it for this path.
pub(crate) fn statx_dioalign(path: &Path) -> Option<(u32, u32)> {
    let c = CString::new(path.as_os_str().as_bytes()).ok()?;
    // SAFETY: a zeroed statx is a valid value for the kernel to fill.
    let mut stx: libc::statx = unsafe { std::mem::zeroed() };
    // SAFETY: `c` is a NUL-terminated path and `stx` a writable statx we own.
    let rc = unsafe {
        libc::statx(
            libc::AT_FDCWD,
            c.as_ptr(),
            0,
            libc::STATX_DIOALIGN,
            &mut stx,
        )
    };
    if rc != 0 || stx.stx_mask & libc::STATX_DIOALIGN == 0 {
        return None;
    }
    Some((stx.stx_dio_mem_align, stx.stx_dio_offset_align))
}

/// The logical block size of the device under `dir`, from sysfs.
fn logical_block_size(dir: &Path) -> Option<u64> {
    let dev = fs::metadata(dir).ok()?.dev();
    // SAFETY: major/minor are pure arithmetic on the device number.
    let (major, minor) = (libc::major(dev), libc::minor(dev));
    if major == 0 {
        return None; // no block device (tmpfs, overlay, network filesystems)
    }
    let base = PathBuf::from(format!("/sys/dev/block/{major}:{minor}"));
    let read = |p: PathBuf| -> Option<u64> { fs::read_to_string(p).ok()?.trim().parse().ok() };
    read(base.join("queue/logical_block_size"))
        .or_else(|| read(base.join("../queue/logical_block_size")))
        .filter(|&v| v >= 512 && v.is_power_of_two())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alignment_is_a_power_of_two() {
        let a = direct_io_alignment(Path::new("."), &[]);
        assert!(a.offset.is_power_of_two() && a.offset >= 512, "{a:?}");
    }
}

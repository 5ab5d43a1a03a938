//! Each run starts with the step's own files out of the page cache.

use std::fs;
use std::path::Path;

/// Sync every regular file under `dir` and drop its pages from the page cache, so the run
/// reads them from the disk (under the caps). Best effort: a file that cannot be opened is
/// left as it is.
pub(crate) fn evict_from_cache(dir: &Path) {
    let files = walkdir::WalkDir::new(dir).follow_links(false).into_iter();
    for e in files.flatten().filter(|e| e.file_type().is_file()) {
        if let Ok(f) = fs::File::open(e.path()) {
            use std::os::fd::AsRawFd as _;
            let _ = f.sync_data();
            // SAFETY: a valid fd we own; fadvise only changes the page cache.
            unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
        }
    }
}

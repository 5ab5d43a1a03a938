//! One page of anonymous shared memory: what the parent shares with the job processes it
//! forks after mapping it (the stop flag, a steady window's start, end and counters).

use std::io;

/// The page's length.
pub(crate) const PAGE: usize = 4096;

/// One page mapped `MAP_SHARED | MAP_ANONYMOUS`: zero-filled, page-aligned, writable, and
/// unmapped when dropped. What lives in it is the owner's to say (only atomics, here).
pub(crate) struct SharedPage {
    ptr: *mut libc::c_void,
}

impl SharedPage {
    pub(crate) fn new() -> io::Result<SharedPage> {
        // SAFETY: an anonymous mapping touches no file; the result is checked for MAP_FAILED.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                PAGE,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(SharedPage { ptr })
    }

    /// The page's first byte, valid for `PAGE` bytes as long as `self` lives.
    pub(crate) fn as_ptr(&self) -> *mut libc::c_void {
        self.ptr
    }
}

impl Drop for SharedPage {
    fn drop(&mut self) {
        // SAFETY: the page was mapped by `new` with this length and is unmapped once.
        unsafe { libc::munmap(self.ptr, PAGE) };
    }
}

//! The kernel's FUSE wire format (include/uapi/linux/fuse.h), the part this passthrough
//! speaks: requests read as bytes at fixed offsets, replies built the same way.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;

pub(crate) const LOOKUP: u32 = 1;
pub(crate) const FORGET: u32 = 2;
pub(crate) const GETATTR: u32 = 3;
pub(crate) const SETATTR: u32 = 4;
pub(crate) const READLINK: u32 = 5;
pub(crate) const SYMLINK: u32 = 6;
pub(crate) const MKNOD: u32 = 8;
pub(crate) const MKDIR: u32 = 9;
pub(crate) const UNLINK: u32 = 10;
pub(crate) const RMDIR: u32 = 11;
pub(crate) const RENAME: u32 = 12;
pub(crate) const LINK: u32 = 13;
pub(crate) const OPEN: u32 = 14;
pub(crate) const READ: u32 = 15;
pub(crate) const WRITE: u32 = 16;
pub(crate) const STATFS: u32 = 17;
pub(crate) const RELEASE: u32 = 18;
pub(crate) const FSYNC: u32 = 20;
pub(crate) const FLUSH: u32 = 25;
pub(crate) const INIT: u32 = 26;
pub(crate) const OPENDIR: u32 = 27;
pub(crate) const READDIR: u32 = 28;
pub(crate) const RELEASEDIR: u32 = 29;
pub(crate) const FSYNCDIR: u32 = 30;
pub(crate) const ACCESS: u32 = 34;
pub(crate) const CREATE: u32 = 35;
pub(crate) const INTERRUPT: u32 = 36;
pub(crate) const DESTROY: u32 = 38;
pub(crate) const BATCH_FORGET: u32 = 42;
pub(crate) const FALLOCATE: u32 = 43;
pub(crate) const RENAME2: u32 = 45;
pub(crate) const LSEEK: u32 = 46;

/// The protocol version this side speaks: 7.31 has everything used here (max_pages among
/// it); a newer kernel talks 7.31 to it.
pub(crate) const MAJOR: u32 = 7;
pub(crate) const MINOR: u32 = 31;

pub(crate) const FUSE_ASYNC_READ: u32 = 1 << 0;
pub(crate) const FUSE_ATOMIC_O_TRUNC: u32 = 1 << 3;
pub(crate) const FUSE_BIG_WRITES: u32 = 1 << 5;
pub(crate) const FUSE_PARALLEL_DIROPS: u32 = 1 << 18;
pub(crate) const FUSE_MAX_PAGES: u32 = 1 << 22;

pub(crate) const FATTR_MODE: u32 = 1 << 0;
pub(crate) const FATTR_UID: u32 = 1 << 1;
pub(crate) const FATTR_GID: u32 = 1 << 2;
pub(crate) const FATTR_SIZE: u32 = 1 << 3;
pub(crate) const FATTR_ATIME: u32 = 1 << 4;
pub(crate) const FATTR_MTIME: u32 = 1 << 5;
pub(crate) const FATTR_FH: u32 = 1 << 6;
pub(crate) const FATTR_ATIME_NOW: u32 = 1 << 7;
pub(crate) const FATTR_MTIME_NOW: u32 = 1 << 8;

pub(crate) const GETATTR_FH: u32 = 1 << 0;
pub(crate) const FSYNC_FDATASYNC: u32 = 1 << 0;

/// The request header's size: len, opcode, unique, nodeid, uid, gid, pid, padding.
pub(crate) const IN_HEADER: usize = 40;

/// One request: its header's fields and the bytes after the header.
pub(crate) struct Request<'a> {
    pub opcode: u32,
    pub unique: u64,
    pub nodeid: u64,
    pub body: &'a [u8],
}

impl<'a> Request<'a> {
    /// The request at the start of `buf` (what one read of /dev/fuse returned), or None when
    /// it is shorter than its header says.
    pub(crate) fn parse(buf: &'a [u8]) -> Option<Request<'a>> {
        let len = u32_at(buf, 0)? as usize;
        if len < IN_HEADER || len > buf.len() {
            return None;
        }
        Some(Request {
            opcode: u32_at(buf, 4)?,
            unique: u64_at(buf, 8)?,
            nodeid: u64_at(buf, 16)?,
            body: &buf[IN_HEADER..len],
        })
    }

    pub(crate) fn u32(&self, at: usize) -> Option<u32> {
        u32_at(self.body, at)
    }

    pub(crate) fn u64(&self, at: usize) -> Option<u64> {
        u64_at(self.body, at)
    }

    /// The NUL-terminated names from `at` on (one or two, as the opcode has).
    pub(crate) fn names(&self, at: usize) -> Vec<&'a OsStr> {
        self.body
            .get(at..)
            .unwrap_or_default()
            .split(|b| *b == 0)
            .filter(|n| !n.is_empty())
            .map(OsStr::from_bytes)
            .collect()
    }
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_ne_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_ne_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

/// A reply's body, built field by field in the kernel's layout.
#[derive(Default)]
pub(crate) struct Out(pub Vec<u8>);

impl Out {
    pub(crate) fn u16(&mut self, v: u16) -> &mut Out {
        self.0.extend_from_slice(&v.to_ne_bytes());
        self
    }
    pub(crate) fn u32(&mut self, v: u32) -> &mut Out {
        self.0.extend_from_slice(&v.to_ne_bytes());
        self
    }
    pub(crate) fn u64(&mut self, v: u64) -> &mut Out {
        self.0.extend_from_slice(&v.to_ne_bytes());
        self
    }

    /// struct fuse_attr (88 bytes) from a stat of the backing file.
    pub(crate) fn attr(&mut self, st: &libc::stat) -> &mut Out {
        self.u64(st.st_ino)
            .u64(st.st_size as u64)
            .u64(st.st_blocks as u64)
            .u64(st.st_atime as u64)
            .u64(st.st_mtime as u64)
            .u64(st.st_ctime as u64)
            .u32(st.st_atime_nsec as u32)
            .u32(st.st_mtime_nsec as u32)
            .u32(st.st_ctime_nsec as u32)
            .u32(st.st_mode)
            .u32(st.st_nlink as u32)
            .u32(st.st_uid)
            .u32(st.st_gid)
            .u32(st.st_rdev as u32)
            .u32(st.st_blksize as u32)
            .u32(0)
    }

    /// struct fuse_entry_out: the node, its generation, 1 s of name and attribute caching.
    pub(crate) fn entry(&mut self, nodeid: u64, st: &libc::stat) -> &mut Out {
        self.u64(nodeid).u64(0).u64(1).u64(1).u32(0).u32(0).attr(st)
    }

    /// struct fuse_attr_out with 1 s of caching.
    pub(crate) fn attr_out(&mut self, st: &libc::stat) -> &mut Out {
        self.u64(1).u32(0).u32(0).attr(st)
    }

    /// struct fuse_open_out.
    pub(crate) fn open(&mut self, fh: u64) -> &mut Out {
        self.u64(fh).u32(0).u32(0)
    }

    /// One struct fuse_dirent, padded to 8 bytes; false (and nothing added) when it does not
    /// fit in `max` bytes.
    pub(crate) fn dirent(
        &mut self,
        ino: u64,
        off: u64,
        kind: u32,
        name: &[u8],
        max: usize,
    ) -> bool {
        let size = (24 + name.len()).div_ceil(8) * 8;
        if self.0.len() + size > max {
            return false;
        }
        let start = self.0.len();
        self.u64(ino).u64(off).u32(name.len() as u32).u32(kind);
        self.0.extend_from_slice(name);
        self.0.resize(start + size, 0);
        true
    }
}

/// The reply header: len, error (0 or -errno), unique.
pub(crate) fn out_header(len: usize, error: i32, unique: u64) -> [u8; 16] {
    let mut h = [0u8; 16];
    h[0..4].copy_from_slice(&(len as u32).to_ne_bytes());
    h[4..8].copy_from_slice(&error.to_ne_bytes());
    h[8..16].copy_from_slice(&unique.to_ne_bytes());
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_shorter_than_their_header_are_refused() {
        let mut b = vec![0u8; 48];
        b[0..4].copy_from_slice(&48u32.to_ne_bytes());
        b[4..8].copy_from_slice(&LOOKUP.to_ne_bytes());
        b[40..43].copy_from_slice(b"ab\0");
        let r = Request::parse(&b).unwrap();
        assert_eq!((r.opcode, r.names(0)), (LOOKUP, vec![OsStr::new("ab")]));
        b[0..4].copy_from_slice(&64u32.to_ne_bytes());
        assert!(Request::parse(&b).is_none());
        assert!(Request::parse(&b[..10]).is_none());
    }

    #[test]
    fn replies_have_the_kernels_sizes() {
        // SAFETY: stat is plain old data; all zeroes is a valid value.
        let st: libc::stat = unsafe { std::mem::zeroed() };
        assert_eq!(Out::default().attr(&st).0.len(), 88);
        assert_eq!(Out::default().entry(2, &st).0.len(), 128);
        assert_eq!(Out::default().attr_out(&st).0.len(), 104);
        let mut d = Out::default();
        assert!(d.dirent(1, 1, 4, b"abc", 4096));
        assert_eq!(d.0.len(), 32);
        assert!(!d.dirent(1, 2, 4, b"abc", 40));
    }
}

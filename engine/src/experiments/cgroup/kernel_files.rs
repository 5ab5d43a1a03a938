//! The kernel's side of the cgroup files, shared by the cgroups the tool makes ([`super`]) and
//! the limits it keeps on disk ([`super::saved_limits`]): device numbers, the two versions,
//! the v1 throttle files, and the one way a line is written to them.

use std::ffi::CString;
use std::fs;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use record::IoCaps;

/// A block device number.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct DevNum {
    pub major: u32,
    pub minor: u32,
}

impl std::fmt::Display for DevNum {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.major, self.minor)
    }
}

impl DevNum {
    pub(crate) fn parse(s: &str) -> Option<DevNum> {
        let (a, b) = s.trim().split_once(':')?;
        Some(DevNum {
            major: a.parse().ok()?,
            minor: b.parse().ok()?,
        })
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Version {
    /// The `blkio` controller's own hierarchy.
    V1,
    /// The unified hierarchy with the `io` controller.
    V2,
}

/// Picks one cap out of an [`IoCaps`].
pub(crate) type CapField = fn(&IoCaps) -> Option<u64>;

pub(crate) const V1_FILES: [(&str, CapField); 4] = [
    ("blkio.throttle.read_iops_device", |c| c.riops),
    ("blkio.throttle.write_iops_device", |c| c.wiops),
    ("blkio.throttle.read_bps_device", |c| c.rbps),
    ("blkio.throttle.write_bps_device", |c| c.wbps),
];

/// One write, as the cgroup files want it: one line per write(2), no create (on a recorded
/// tree the file is created, as the kernel would have made it).
pub(crate) fn write_line(path: &Path, line: &str) -> io::Result<()> {
    use std::io::Write as _;
    let recorded = !on_cgroupfs(path.parent().unwrap_or(path));
    use std::os::unix::fs::OpenOptionsExt as _;
    let mut f = fs::OpenOptions::new()
        .write(true)
        .create(recorded)
        .truncate(recorded)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
        .map_err(|e| annotate(e, "open", path))?;
    f.write_all(line.as_bytes())
        .map_err(|e| annotate(e, &format!("write \"{line}\" to"), path))
}

pub(crate) fn annotate(e: io::Error, what: &str, path: &Path) -> io::Error {
    io::Error::new(e.kind(), format!("cannot {what} {}: {e}", path.display()))
}

const CGROUP_SUPER_MAGIC: i64 = 0x27e0eb;
const CGROUP2_SUPER_MAGIC: i64 = 0x6367_7270;

pub(crate) fn on_cgroupfs(path: &Path) -> bool {
    let Ok(c) = CString::new(path.as_os_str().as_bytes()) else {
        return false;
    };
    let mut st = std::mem::MaybeUninit::<libc::statfs>::uninit();
    // SAFETY: c is NUL-terminated and st is writable memory of the right size; it is read
    // only when statfs succeeded and so filled it.
    let rc = unsafe { libc::statfs(c.as_ptr(), st.as_mut_ptr()) };
    if rc != 0 {
        return false;
    }
    // SAFETY: rc == 0.
    // The field's type differs between targets.
    #[allow(clippy::unnecessary_cast)]
    let t = unsafe { st.assume_init() }.f_type as i64;
    t == CGROUP_SUPER_MAGIC || t == CGROUP2_SUPER_MAGIC
}

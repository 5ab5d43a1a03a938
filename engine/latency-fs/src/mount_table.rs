//! Mounts of this passthrough left by a run that was killed: the server died with its
//! process, so every access to the mount fails (ENOTCONN) until it is unmounted.

use std::path::PathBuf;

/// The filesystem type in /proc/self/mountinfo.
pub const FS_TYPE: &str = "fuse.diskbench-latency";

/// The mount's source names the process whose threads serve it.
pub(crate) fn source_for(pid: u32) -> String {
    format!("diskbench-latency:{pid}")
}

/// End a FUSE connection by its number (the mount's device minor): every request waiting
/// on it fails, so no process stays blocked on a server that is gone. Needs the fusectl
/// filesystem (mounted here if it is not).
pub(crate) fn abort_connection(n: u32) {
    let dir = std::path::Path::new("/sys/fs/fuse/connections");
    if !dir.join(n.to_string()).exists() {
        // SAFETY: constant NUL-terminated strings; a failure leaves nothing to undo.
        unsafe {
            libc::mount(
                c"fusectl".as_ptr(),
                c"/sys/fs/fuse/connections".as_ptr(),
                c"fusectl".as_ptr(),
                0,
                std::ptr::null(),
            )
        };
    }
    let _ = std::fs::write(dir.join(format!("{n}/abort")), "1");
}

/// Mount points of this passthrough in `mountinfo` whose serving process is not alive
/// (`alive(pid)` false), with their connection numbers.
pub(crate) fn stale_mounts(mountinfo: &str, alive: &dyn Fn(u32) -> bool) -> Vec<(PathBuf, u32)> {
    mountinfo
        .lines()
        .filter_map(|line| {
            let (left, right) = line.split_once(" - ")?;
            let mut r = right.split(' ');
            let (fstype, source) = (r.next()?, r.next()?);
            if fstype != FS_TYPE {
                return None;
            }
            let pid: u32 = source.strip_prefix("diskbench-latency:")?.parse().ok()?;
            if alive(pid) {
                return None;
            }
            let fields: Vec<&str> = left.split(' ').collect();
            let minor = fields.get(2)?.split_once(':')?.1.parse().ok()?;
            Some((PathBuf::from(unescape(fields.get(4)?)), minor))
        })
        .collect()
}

/// mountinfo escapes space, tab, newline and backslash as \ooo.
pub(crate) fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\'
            && i + 3 < b.len()
            && let Ok(v) = u8::from_str_radix(&s[i + 1..i + 4], 8)
        {
            out.push(v);
            i += 4;
            continue;
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Unmount (lazily) every mount of this passthrough whose process is gone; the mount points
/// it released.
pub fn sweep_stale() -> Vec<PathBuf> {
    let Ok(info) = std::fs::read_to_string("/proc/self/mountinfo") else {
        return Vec::new();
    };
    let alive = |pid: u32| std::path::Path::new(&format!("/proc/{pid}")).exists();
    let mut released = Vec::new();
    for (m, connection) in stale_mounts(&info, &alive) {
        // A process still blocked on the dead server (a child that kept the device open)
        // is let go first.
        abort_connection(connection);
        use std::os::unix::ffi::OsStrExt;
        let Ok(c) = std::ffi::CString::new(m.as_os_str().as_bytes()) else {
            continue;
        };
        // SAFETY: `c` is NUL-terminated.
        if unsafe { libc::umount2(c.as_ptr(), libc::MNT_DETACH) } == 0 {
            released.push(m);
        }
    }
    released
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_this_passthroughs_mounts_of_dead_processes_are_stale() {
        let info = "\
36 25 0:32 / /work/a\\040b/mnt rw,nosuid,nodev - fuse.diskbench-latency diskbench-latency:111 rw,user_id=0
37 25 0:33 / /work/live rw - fuse.diskbench-latency diskbench-latency:222 rw
38 25 0:34 / /work/other rw - fuse.sshfs host:/x rw
39 25 254:0 / / rw - ext4 /dev/vda rw
";
        let stale = stale_mounts(info, &|pid| pid == 222);
        assert_eq!(stale, vec![(PathBuf::from("/work/a b/mnt"), 32)]);
    }
}

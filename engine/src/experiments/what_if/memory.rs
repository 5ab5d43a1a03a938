//! The memory condition: a private tmpfs over a step's work folder, and the sweep of what a
//! killed run's mount left.

use std::ffi::CString;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use crate::session::said::{Said, tell};

/// The source name of the memory condition's tmpfs mounts (the pid follows).
pub(crate) const MEMORY_MOUNT_SOURCE: &str = "diskbench-memory-";

/// A private tmpfs mounted over a step's work folder; unmounted when dropped (an error,
/// Ctrl-C, a panic). A run killed with SIGKILL leaves it: [`sweep_stale_mounts`] removes it
/// on the next `--what-if` run (its source names the dead pid).
#[derive(Debug)]
pub(crate) struct MemoryMount {
    path: PathBuf,
    mounted: bool,
}

impl MemoryMount {
    pub(crate) fn mount(path: &Path) -> anyhow::Result<MemoryMount> {
        let source = CString::new(format!("{MEMORY_MOUNT_SOURCE}{}", std::process::id()))?;
        let target = CString::new(path.as_os_str().as_bytes())?;
        let fstype = CString::new("tmpfs")?;
        let data = CString::new("mode=0700")?;
        // SAFETY: NUL-terminated strings we own; mount has no memory effects on us.
        let rc = unsafe {
            libc::mount(
                source.as_ptr(),
                target.as_ptr(),
                fstype.as_ptr(),
                libc::MS_NOSUID | libc::MS_NODEV,
                data.as_ptr().cast(),
            )
        };
        if rc != 0 {
            anyhow::bail!(
                "cannot mount a tmpfs on {}: {}",
                path.display(),
                std::io::Error::last_os_error()
            );
        }
        let guard = MemoryMount {
            path: path.to_path_buf(),
            mounted: true,
        };
        // Private: the mount and its unmount do not propagate to other mount namespaces.
        // SAFETY: as above; only the propagation flag changes.
        unsafe {
            libc::mount(
                std::ptr::null(),
                target.as_ptr(),
                std::ptr::null(),
                libc::MS_PRIVATE,
                std::ptr::null(),
            )
        };
        Ok(guard)
    }

    /// Unmount now, reporting a failure.
    pub(crate) fn unmount(mut self) -> Result<(), String> {
        self.unmount_inner()
    }

    fn unmount_inner(&mut self) -> Result<(), String> {
        if !self.mounted {
            return Ok(());
        }
        self.mounted = false;
        unmount(&self.path)
    }
}

impl Drop for MemoryMount {
    fn drop(&mut self) {
        if let Err(e) = self.unmount_inner() {
            tell(Said::Warning(e));
        }
    }
}

fn unmount(path: &Path) -> Result<(), String> {
    let target = CString::new(path.as_os_str().as_bytes()).map_err(|e| e.to_string())?;
    // SAFETY: a NUL-terminated path; umount2 has no memory effects on us.
    if unsafe { libc::umount2(target.as_ptr(), 0) } == 0 {
        return Ok(());
    }
    // Busy (a straggler holds a file): detach, the memory goes when the last user does.
    // SAFETY: as above.
    if unsafe { libc::umount2(target.as_ptr(), libc::MNT_DETACH) } == 0 {
        return Ok(());
    }
    Err(format!(
        "could not unmount the tmpfs on {}: {}",
        path.display(),
        std::io::Error::last_os_error()
    ))
}

/// The memory condition's tmpfs mounts in this mount namespace: (mount point, owner pid).
pub(crate) fn memory_mounts() -> Vec<(String, u32)> {
    let text = fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    let (mounts, _) = crate::machine::mountinfo::parse(&text);
    mounts
        .into_iter()
        .filter(|m| m.fstype == "tmpfs")
        .filter_map(|m| {
            let pid = m.source.strip_prefix(MEMORY_MOUNT_SOURCE)?.parse().ok()?;
            Some((m.mount_point, pid))
        })
        .collect()
}

/// Unmount what a killed run's memory condition left (its pid no longer runs).
pub(crate) fn sweep_stale_mounts(say: &mut dyn FnMut(Said)) {
    for (point, pid) in memory_mounts() {
        if !Path::new(&format!("/proc/{pid}")).exists() && unmount(Path::new(&point)).is_ok() {
            say(Said::Status(format!(
                "unmounted the tmpfs {point} a killed run left behind"
            )));
            let _ = fs::remove_dir(&point);
        }
    }
}

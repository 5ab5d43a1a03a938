//! One what-if or `--like` run at a time on a host.

use std::fs;
use std::path::Path;

use crate::cgroup::Hierarchy;

/// Only one what-if or `--like` run at a time on a host: two would cap each other's work
/// (a daemon moved into one run's cgroup looks to the other like the daemon's own cgroup), and
/// each run's "nothing of ours is left" check would see the other's groups.
///
/// What the runs contend for is the block-I/O cgroup hierarchy, so the lock is on it: an
/// `flock` on the hierarchy's root directory. Every mount of one cgroup hierarchy, in every
/// mount namespace, is the same kernfs directory, so two containers with their own `/run`
/// (two self-hosted runners on one host) that both reach the host's cgroups take the same
/// lock; a file under `/run` was a different lock in each. A run that cannot reach the host's
/// hierarchy cannot cap the host's daemon either. The lock is held until this process exits
/// (the kernel drops it then, also after SIGKILL); it is not inherited by the steps' commands
/// (O_CLOEXEC).
pub(crate) fn one_run_at_a_time(hierarchy: &Hierarchy) -> anyhow::Result<()> {
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::OpenOptionsExt;
    static HELD: std::sync::OnceLock<fs::File> = std::sync::OnceLock::new();
    if HELD.get().is_some() {
        return Ok(());
    }
    let path: &Path = &hierarchy.root;
    let dir = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY | libc::O_CLOEXEC)
        .open(path)
        .map_err(|e| {
            anyhow::anyhow!(
                "--what-if/--like: cannot open {} to take the one-run-at-a-time lock: {e}",
                path.display()
            )
        })?;
    // SAFETY: flock on a descriptor we own; no memory is involved.
    let try_lock = |op| unsafe { libc::flock(dir.as_raw_fd(), op) };
    if try_lock(libc::LOCK_EX | libc::LOCK_NB) != 0 {
        eprintln!(
            "waiting for another cargo-diskbench --what-if/--like run on this host to finish \
             (it holds a lock on {})",
            path.display()
        );
        loop {
            if try_lock(libc::LOCK_EX | libc::LOCK_NB) == 0 {
                break;
            }
            record::cancel::check()?;
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
    }
    let _ = HELD.set(dir);
    Ok(())
}

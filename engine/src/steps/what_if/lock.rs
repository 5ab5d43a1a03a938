//! One what-if or `--like` run at a time on a machine.

use std::fs;
use std::path::Path;

/// Where the machine-wide what-if lock lives (root only, like the experiments).
const LOCK_PATH: &str = "/run/cargo-diskbench-what-if.lock";

/// Only one what-if or `--like` run at a time on a machine: two would cap each other's work
/// (a daemon moved into one run's cgroup looks to the other like the daemon's own cgroup), and
/// each run's "nothing of ours is left" check would see the other's groups. The lock is taken
/// here, waited for when another run holds it, and held until this process exits (the kernel
/// drops it then, also after SIGKILL).
pub(crate) fn one_run_at_a_time() -> anyhow::Result<()> {
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::OpenOptionsExt;
    static HELD: std::sync::OnceLock<fs::File> = std::sync::OnceLock::new();
    if HELD.get().is_some() {
        return Ok(());
    }
    let dir = Path::new(LOCK_PATH).parent().unwrap_or(Path::new("/"));
    let path = if dir.is_dir() {
        Path::new(LOCK_PATH).to_path_buf()
    } else {
        std::env::temp_dir().join("cargo-diskbench-what-if.lock")
    };
    let file = fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(&path)
        .map_err(|e| {
            anyhow::anyhow!(
                "--what-if/--like: cannot open the lock {}: {e}",
                path.display()
            )
        })?;
    // SAFETY: flock on a descriptor we own; no memory is involved.
    let try_lock = |op| unsafe { libc::flock(file.as_raw_fd(), op) };
    if try_lock(libc::LOCK_EX | libc::LOCK_NB) != 0 {
        eprintln!(
            "waiting for another cargo-diskbench --what-if/--like run on this machine to finish \
             (lock {})",
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
    let _ = HELD.set(file);
    Ok(())
}

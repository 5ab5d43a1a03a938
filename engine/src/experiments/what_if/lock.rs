//! One what-if or `--like` run at a time on a host.

use std::fs;
use std::path::Path;

use crate::experiments::cgroup::Hierarchy;
use crate::session::said::Said;

/// The lock, once this process holds it (until it exits).
static HELD: std::sync::OnceLock<fs::File> = std::sync::OnceLock::new();

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
pub(crate) fn one_run_at_a_time(
    hierarchy: &Hierarchy,
    say: &mut dyn FnMut(Said),
) -> anyhow::Result<()> {
    use std::os::fd::AsRawFd;
    if HELD.get().is_some() {
        return Ok(());
    }
    let path: &Path = &hierarchy.root;
    let dir = open_dir(path).map_err(|e| {
        anyhow::anyhow!(
            "--what-if/--like: cannot open {} to take the one-run-at-a-time lock: {e}",
            path.display()
        )
    })?;
    // SAFETY: flock on a descriptor we own; no memory is involved.
    let try_lock = |op| unsafe { libc::flock(dir.as_raw_fd(), op) };
    if try_lock(libc::LOCK_EX | libc::LOCK_NB) != 0 {
        let proc_root = Path::new("/proc");
        let who = holder_pid(&dir, proc_root);
        say(Said::Status(format!(
            "waiting for another cargo-diskbench --what-if/--like run on this host to finish: {} \
             holds the lock on {}",
            describe(who, proc_root),
            path.display()
        )));
        let started = std::time::Instant::now();
        let mut told = started;
        loop {
            if try_lock(libc::LOCK_EX | libc::LOCK_NB) == 0 {
                break;
            }
            record::cancel::check()?;
            if told.elapsed() >= WAIT_REPORT_EVERY {
                told = std::time::Instant::now();
                say(Said::Status(format!(
                    "still waiting for {}: {:.0} s so far",
                    describe(holder_pid(&dir, proc_root), proc_root),
                    started.elapsed().as_secs_f64()
                )));
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        say(Said::Status(format!(
            "waited {:.1} s for the other run; starting",
            started.elapsed().as_secs_f64()
        )));
    }
    let _ = HELD.set(dir);
    Ok(())
}

/// How often a run waiting for the lock says it still waits.
const WAIT_REPORT_EVERY: std::time::Duration = std::time::Duration::from_secs(5);

/// The most of a holder's command line a waiting run prints.
const COMMAND_LINE_CHARS: usize = 160;

/// The pid holding the `flock` on `dir` (0: not visible from this pid namespace), from
/// `/proc/locks`; None when no line names it (it just ended).
fn holder_pid(dir: &fs::File, proc_root: &Path) -> Option<u32> {
    use std::os::unix::fs::MetadataExt;
    let meta = dir.metadata().ok()?;
    let dev = meta.dev();
    let locks = fs::read_to_string(proc_root.join("locks")).ok()?;
    flock_holder(&locks, (libc::major(dev), libc::minor(dev)), meta.ino())
}

/// The holder as a waiting run names it: `pid 1234 (cargo-diskbench steps --what-if ...)`.
fn describe(pid: Option<u32>, proc_root: &Path) -> String {
    match pid {
        None => "a run that is ending".into(),
        Some(0) => "a run in another pid namespace (its pid is not visible here)".into(),
        Some(pid) => match command_line(proc_root, pid) {
            Some(cmd) => format!("pid {pid} ({cmd})"),
            None => format!("pid {pid}"),
        },
    }
}

/// `/proc/PID/cmdline` made safe to print: arguments joined by spaces, control bytes (a
/// terminal escape in an argument) dropped, cut at [`COMMAND_LINE_CHARS`] with an ellipsis.
/// None when unreadable or empty (a zombie, a kernel thread).
pub(crate) fn command_line(proc_root: &Path, pid: u32) -> Option<String> {
    let raw = fs::read(proc_root.join(pid.to_string()).join("cmdline")).ok()?;
    let text = String::from_utf8_lossy(&raw);
    let joined: String = text
        .split('\0')
        .filter(|a| !a.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
        .chars()
        .filter(|c| !c.is_control())
        .collect();
    if joined.is_empty() {
        return None;
    }
    if joined.chars().count() > COMMAND_LINE_CHARS {
        let cut: String = joined.chars().take(COMMAND_LINE_CHARS).collect();
        return Some(format!("{cut}..."));
    }
    Some(joined)
}

/// Who holds the one-run-at-a-time lock, as a sweep of what killed runs left needs to know:
/// only the holder can have cgroups in use, so every other cgroup of this tool is a leftover.
/// The cgroup's name carries the pid its run had, which alone cannot tell (a pid is reused,
/// and a run in another pid namespace named its cgroup for a pid that means nothing here);
/// the lock is held exactly as long as its run lives, also across namespaces.
#[derive(Debug)]
pub(crate) enum Holder {
    /// No run holds it: this process took it for the sweep (released when this is dropped),
    /// or this process is the what-if run that holds it (no file).
    Nobody { _lock: Option<fs::File> },
    /// A live run, as `/proc/locks` names it: its pid here and its pids in the pid
    /// namespaces it is in (`NSpid`); a cgroup named for one of them is its own.
    Live { pid: u32, ns_pids: Vec<u32> },
    /// A live run whose pid is not visible from this pid namespace: which cgroups are its
    /// cannot be told, so none is touched.
    Unseen,
}

/// Who holds the lock on `hierarchy` now (see [`Holder`]); `proc_root` is normally `/proc`.
pub(crate) fn holder(hierarchy: &Hierarchy, proc_root: &Path) -> Holder {
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::MetadataExt;
    if HELD.get().is_some() {
        return Holder::Nobody { _lock: None };
    }
    let Ok(dir) = open_dir(&hierarchy.root) else {
        return Holder::Unseen;
    };
    let Ok(meta) = dir.metadata() else {
        return Holder::Unseen;
    };
    // Twice: a holder that ends between the failed try and the read of /proc/locks leaves
    // no line, and the second try then succeeds.
    for _ in 0..2 {
        // SAFETY: flock on a descriptor we own; no memory is involved.
        if unsafe { libc::flock(dir.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
            return Holder::Nobody { _lock: Some(dir) };
        }
        let dev = meta.dev();
        let locks = fs::read_to_string(proc_root.join("locks")).unwrap_or_default();
        match flock_holder(&locks, (libc::major(dev), libc::minor(dev)), meta.ino()) {
            Some(0) => return Holder::Unseen,
            Some(pid) => {
                let status = fs::read_to_string(proc_root.join(pid.to_string()).join("status"))
                    .unwrap_or_default();
                let mut ns_pids = ns_pids(&status);
                if !ns_pids.contains(&pid) {
                    ns_pids.push(pid);
                }
                return Holder::Live { pid, ns_pids };
            }
            None => {}
        }
    }
    Holder::Unseen
}

/// The pid holding an `flock` on the file `dev`:`ino` in a `/proc/locks` text (0: a holder
/// in a pid namespace this one cannot see); waiters (`->` lines) are not holders.
pub(crate) fn flock_holder(locks: &str, dev: (u32, u32), ino: u64) -> Option<u32> {
    locks.lines().find_map(|line| {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.get(1) != Some(&"FLOCK") {
            return None;
        }
        let pid: u32 = f.get(4)?.parse().ok()?;
        let mut id = f.get(5)?.split(':');
        let major = u32::from_str_radix(id.next()?, 16).ok()?;
        let minor = u32::from_str_radix(id.next()?, 16).ok()?;
        let inode: u64 = id.next()?.parse().ok()?;
        ((major, minor) == dev && inode == ino).then_some(pid)
    })
}

/// The `NSpid:` line of a `/proc/<pid>/status` text: the process's pid in each pid
/// namespace it is in, outermost first (empty on kernels without the line).
pub(crate) fn ns_pids(status: &str) -> Vec<u32> {
    status
        .lines()
        .find_map(|l| l.strip_prefix("NSpid:"))
        .map(|rest| {
            rest.split_whitespace()
                .filter_map(|p| p.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

fn open_dir(path: &Path) -> std::io::Result<fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY | libc::O_CLOEXEC)
        .open(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lock_holder_is_read_from_proc_locks() {
        let locks = "1: FLOCK  ADVISORY  WRITE 9099 fe:00:5310453 0 EOF\n\
                     2: -> FLOCK  ADVISORY  WRITE 77 00:23:1 0 EOF\n\
                     3: POSIX  ADVISORY  WRITE 55 00:23:1 0 EOF\n\
                     4: FLOCK  ADVISORY  WRITE 4321 00:23:1 0 EOF\n\
                     5: FLOCK  ADVISORY  WRITE 0 00:24:1 0 EOF\n";
        assert_eq!(flock_holder(locks, (0, 0x23), 1), Some(4321));
        assert_eq!(flock_holder(locks, (0xfe, 0), 5310453), Some(9099));
        assert_eq!(flock_holder(locks, (0, 0x24), 1), Some(0));
        assert_eq!(flock_holder(locks, (0, 0x23), 2), None);
        assert_eq!(flock_holder("", (0, 0x23), 1), None);
    }

    #[test]
    fn a_holders_command_line_is_printable_and_cut() {
        let proc_root = tempfile::tempdir().unwrap();
        let write = |pid: u32, bytes: &[u8]| {
            let d = proc_root.path().join(pid.to_string());
            fs::create_dir_all(&d).unwrap();
            fs::write(d.join("cmdline"), bytes).unwrap();
        };
        write(
            7,
            b"cargo-diskbench\0steps\0--what-if\0\x1b]0;evil\x07title\0",
        );
        assert_eq!(
            command_line(proc_root.path(), 7).as_deref(),
            Some("cargo-diskbench steps --what-if ]0;eviltitle")
        );
        write(8, &[b'a'; 500]);
        let long = command_line(proc_root.path(), 8).unwrap();
        assert_eq!(long.len(), COMMAND_LINE_CHARS + 3);
        assert!(long.ends_with("..."));
        write(9, b"");
        assert_eq!(command_line(proc_root.path(), 9), None);
        assert_eq!(describe(Some(9), proc_root.path()), "pid 9");
        assert_eq!(command_line(proc_root.path(), 10), None);
        assert!(describe(Some(0), proc_root.path()).contains("another pid namespace"));
    }

    #[test]
    fn ns_pids_lists_every_namespace() {
        assert_eq!(ns_pids("Name:\tx\nNSpid:\t5000\t12\n"), vec![5000, 12]);
        assert_eq!(ns_pids("Name:\tx\nPid:\t5\n"), Vec::<u32>::new());
    }
}

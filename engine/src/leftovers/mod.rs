//! What runs that were killed left behind, found before a new run starts: their capped
//! cgroups (and what they had moved in), the limits of a daemon's cgroup capped in place,
//! their tmpfs mounts and latency emulations, and their test files. What can be proven
//! abandoned is tidied away and said; what might still be in use is named with the command
//! that removes it.

use std::path::Path;

use crate::experiments::cgroup::{self, CGROUP_FS, Hierarchy};
use crate::experiments::what_if::{lock, memory};
use crate::session::said::Said;

/// Every leftover of a killed run that concerns a run in `dir`, in the order a run meets
/// them: latency emulations without a server (every access to them fails), test files under
/// `dir`, the block-I/O hierarchy, the memory condition's tmpfs mounts.
pub(crate) fn sweep(dir: &Path, say: &mut dyn FnMut(Said)) {
    for m in latency_fs::sweep_stale() {
        say(Said::Note(format!(
            "unmounted {}: the latency emulation of a `--like` run that was killed",
            m.display()
        )));
    }
    for stale in crate::files::testfile::stale_scratch_dirs(dir) {
        say(Said::Warning(format!(
            "{} ({}) was left by a run that was killed ({}); no process owns it, remove it \
             with: rm -r '{}'",
            stale.path.display(),
            record::size::format_bytes(stale.bytes),
            stale.why,
            stale.path.display()
        )));
    }
    killed_runs_cgroups(Path::new(CGROUP_FS), say);
    memory::sweep_stale_mounts(say);
}

/// What a run killed with SIGKILL left in the block-I/O hierarchy: its capped cgroups, and in
/// them whatever it had moved in (a docker daemon, throttled for every later build on the
/// host until someone notices). Every `steps` and `run` sweeps at its start, what-if or not,
/// and says what it released. A cgroup is a leftover unless it belongs to the run holding the
/// one-run-at-a-time lock (see [`lock::Holder`]): a live what-if run's cgroups are left
/// alone, and so is everything when the holder cannot be seen from here. Likewise the limits
/// of a daemon's own cgroup that a killed run had capped in place are written back from the
/// state file it kept (see [`cgroup::saved_limits`]), and said so. Needs root; without
/// it (or without a hierarchy) nothing is touched. Done once per process.
pub(crate) fn killed_runs_cgroups(cgroup_fs: &Path, say: &mut dyn FnMut(Said)) {
    static DONE: std::sync::OnceLock<()> = std::sync::OnceLock::new();
    if DONE.set(()).is_err() {
        return;
    }
    // SAFETY: geteuid has no preconditions and no side effects.
    if unsafe { libc::geteuid() } != 0 {
        return;
    }
    let Ok(hierarchy) = Hierarchy::detect(cgroup_fs) else {
        return;
    };
    let proc_root = Path::new("/proc");
    // Held (if this process took it) until the sweep is done: no what-if run starts meanwhile.
    let holder = lock::holder(&hierarchy, proc_root);
    let run_dir = cgroup::saved_limits::run_dir();
    let (saved, sweep) = match &holder {
        lock::Holder::Nobody { .. } => (
            cgroup::saved_limits::sweep(&hierarchy.as_root(), &run_dir, |_| false),
            cgroup::sweep_stale(&hierarchy, proc_root, |_| false),
        ),
        lock::Holder::Live { ns_pids, .. } => (
            cgroup::saved_limits::sweep(&hierarchy.as_root(), &run_dir, |pid| {
                ns_pids.contains(&pid)
            }),
            cgroup::sweep_stale(&hierarchy, proc_root, |pid| ns_pids.contains(&pid)),
        ),
        lock::Holder::Unseen => {
            // Which cgroups the holder's are cannot be told: only list them.
            let kept = cgroup::sweep_stale(&hierarchy, proc_root, |_| true).kept;
            if !kept.is_empty() {
                say(Said::Note(format!(
                    "left the cgroup(s) {} alone: a cargo-diskbench what-if run in another \
                     pid namespace holds the lock on {} and may be using them",
                    kept.join(", "),
                    hierarchy.root.display()
                )));
            }
            return;
        }
    };
    // The limits first: a daemon's cgroup capped in place is the host's engine throttled.
    for said in saved.restored {
        say(Said::Status(said));
    }
    for said in saved.refused {
        say(Said::Warning(said));
    }
    for swept in sweep.removed {
        if swept.released.is_empty() {
            say(Said::Status(format!(
                "removed the cgroup {} a killed run left behind",
                swept.name
            )));
        } else {
            say(Said::Status(format!(
                "removed the capped cgroup {} a killed run left behind, and released {} from \
                 its caps (back to {})",
                swept.name,
                swept.released.join(", "),
                hierarchy.root.display()
            )));
        }
    }
    if let lock::Holder::Live { pid, .. } = holder
        && !sweep.kept.is_empty()
    {
        say(Said::Note(format!(
            "left the cgroup(s) {} alone: they belong to the cargo-diskbench what-if run \
             still running as pid {pid} (it holds the lock on {})",
            sweep.kept.join(", "),
            hierarchy.root.display()
        )));
    }
}

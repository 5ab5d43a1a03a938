//! Before any step runs: what the experiments need of the machine, checked once.

use std::path::Path;

use crate::experiments::cgroup::{self, Hierarchy};
use record::error::usage;

use super::caps::{self, CapTarget};
use super::{lock, memory};

/// Check, before any step runs, that the experiments can run: root (for the tmpfs mount and
/// the cgroups) and a block-I/O hierarchy this process may write. A usage error (exit 2)
/// names what is needed. The devices under `dir` are resolved here too; a filesystem caps
/// cannot reach is not an error (the memory condition still runs) and is returned as the
/// reason in `caps_target`.
pub fn preflight(dir: &Path, cgroup_fs: &Path) -> anyhow::Result<Result<CapTarget, String>> {
    // sudo-rs (Ubuntu 26.04's sudo) ignores -E: pass the two variables rustup's cargo needs.
    const NEEDS: &str = "run it as root, with your PATH and rustup's toolchains (`sudo env \
                         \"PATH=$PATH\" \"RUSTUP_HOME=${RUSTUP_HOME:-$HOME/.rustup}\" cargo \
                         diskbench steps --what-if`), or set the GitHub action's `what-if` input";
    // SAFETY: geteuid has no preconditions and no side effects.
    if unsafe { libc::geteuid() } != 0 {
        return Err(usage(format!(
            "--what-if/--like need root: they create cgroups to cap the disk and mount a \
             private tmpfs; {NEEDS}"
        )));
    }
    let hierarchy = Hierarchy::detect(cgroup_fs).map_err(|why| {
        usage(format!(
            "--what-if/--like: {why}; {NEEDS} on a kernel with it"
        ))
    })?;
    hierarchy
        .check_writable()
        .map_err(|why| usage(format!("--what-if/--like: {why}; {NEEDS}")))?;
    lock::one_run_at_a_time(&hierarchy)?;
    sweep_killed_runs(cgroup_fs);
    memory::sweep_stale_mounts();
    Ok(caps::devices_under(dir).map(|devices| CapTarget { hierarchy, devices }))
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
pub fn sweep_killed_runs(cgroup_fs: &Path) {
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
                eprintln!(
                    "note: left the cgroup(s) {} alone: a cargo-diskbench what-if run in \
                     another pid namespace holds the lock on {} and may be using them",
                    kept.join(", "),
                    hierarchy.root.display()
                );
            }
            return;
        }
    };
    // The limits first: a daemon's cgroup capped in place is the host's engine throttled.
    for said in saved.restored {
        eprintln!("{said}");
    }
    for said in saved.refused {
        eprintln!("warning: {said}");
    }
    for swept in sweep.removed {
        if swept.released.is_empty() {
            eprintln!("removed the cgroup {} a killed run left behind", swept.name);
        } else {
            eprintln!(
                "removed the capped cgroup {} a killed run left behind, and released {} from \
                 its caps (back to {})",
                swept.name,
                swept.released.join(", "),
                hierarchy.root.display()
            );
        }
    }
    if let lock::Holder::Live { pid, .. } = holder
        && !sweep.kept.is_empty()
    {
        eprintln!(
            "note: left the cgroup(s) {} alone: they belong to the cargo-diskbench what-if \
             run still running as pid {pid} (it holds the lock on {})",
            sweep.kept.join(", "),
            hierarchy.root.display()
        );
    }
}

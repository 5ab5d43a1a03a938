//! Before any step runs: what the experiments need of the machine, checked once.

use std::path::Path;

use crate::experiments::cgroup::Hierarchy;
use crate::session::said::Said;
use record::error::usage;

use super::caps::{self, CapTarget};
use super::lock;

/// Check, before any step runs, that the experiments can run: root (for the tmpfs mount and
/// the cgroups) and a block-I/O hierarchy this process may write, then take the
/// one-run-at-a-time lock. A usage error (exit 2) names what is needed. Which devices under
/// `--dir` the caps reach is asked separately ([`caps_target`]): a filesystem they cannot
/// reach is no error for the memory condition.
pub(crate) fn preflight(cgroup_fs: &Path, say: &mut dyn FnMut(Said)) -> anyhow::Result<Hierarchy> {
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
    lock::one_run_at_a_time(&hierarchy, say)?;
    Ok(hierarchy)
}

/// Where the caps go for a run in `dir`: the devices under it in `hierarchy`, or why a cap
/// cannot reach them (tmpfs, a network filesystem), said by name.
pub(crate) fn caps_target(hierarchy: Hierarchy, dir: &Path) -> Result<CapTarget, String> {
    caps::devices_under(dir).map(|devices| CapTarget { hierarchy, devices })
}

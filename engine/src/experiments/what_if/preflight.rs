//! Before any step runs: what the experiments need of the machine, checked once.

use std::path::Path;

use crate::experiments::cgroup::Hierarchy;
use crate::session::said::Said;
use record::error::usage;

use super::caps::{self, CapTarget};
use super::lock;

/// Check, before any step runs, that the experiments can run: root (for the tmpfs mount and
/// the cgroups) and a block-I/O hierarchy this process may write. A usage error (exit 2)
/// names what is needed. The devices under `dir` are resolved here too; a filesystem caps
/// cannot reach is not an error (the memory condition still runs) and is returned as the
/// reason in `caps_target`.
pub(crate) fn preflight(
    dir: &Path,
    cgroup_fs: &Path,
    say: &mut dyn FnMut(Said),
) -> anyhow::Result<Result<CapTarget, String>> {
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
    Ok(caps::devices_under(dir).map(|devices| CapTarget { hierarchy, devices }))
}

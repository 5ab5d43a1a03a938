//! Where the caps go and putting a run under them: the block devices under `--dir`, one
//! capped cgroup per run (the cgroups themselves are [`crate::experiments::cgroup`]), and a local docker
//! daemon's processes under the same caps.

use std::path::Path;

use crate::experiments::cgroup::{self, CapGroup, DevNum, Hierarchy};
use record::IoCaps;

/// Where caps go.
#[derive(Clone, Debug)]
pub struct CapTarget {
    pub hierarchy: Hierarchy,
    pub devices: Vec<DevNum>,
}

/// The disks under `dir` (through partitions, device-mapper, md and loop), or why caps
/// cannot reach it (tmpfs, a network filesystem, ...).
pub(crate) fn devices_under(dir: &Path) -> Result<Vec<DevNum>, String> {
    let (_, storage) = crate::machine::detect(dir, None);
    let fs = storage
        .overlay_upper
        .as_ref()
        .map(|u| (u.fstype.clone(), u.mount_source.clone()))
        .unwrap_or_else(|| (storage.fstype.clone(), storage.mount_source.clone()));
    if storage.class == record::StorageClass::Tmpfs || ["tmpfs", "ramfs"].contains(&fs.0.as_str()) {
        return Err(format!(
            "{} is on {} ({}), in memory: block-I/O caps cannot reach it, so only the memory \
             condition runs",
            storage.path, fs.0, fs.1
        ));
    }
    let view = crate::machine::SysView::live();
    let mut devices = Vec::new();
    for d in &storage.devices {
        let stacked = matches!(
            d.transport.as_deref(),
            Some("partition" | "dm" | "md" | "loop")
        );
        if stacked || !d.members.is_empty() {
            continue;
        }
        if let Some((major, minor)) = crate::machine::blockdev::dev_of_name(&view, &d.name) {
            let dev = DevNum { major, minor };
            if !devices.contains(&dev) {
                devices.push(dev);
            }
        }
    }
    if devices.is_empty() {
        return Err(format!(
            "{} is on {} ({}) with no block device found below it: block-I/O caps cannot \
             reach it, so only the memory condition runs",
            storage.path, fs.0, fs.1
        ));
    }
    Ok(devices)
}

/// A cgroup with `caps` on the target's devices, for one run.
pub fn capped_group(target: &CapTarget, caps: &IoCaps) -> anyhow::Result<CapGroup> {
    let group = CapGroup::create(
        &target.hierarchy,
        &cgroup::group_name(&record::random::new_id()),
    )?;
    group.set_caps(&target.devices, caps)?;
    Ok(group)
}

/// Put a local docker daemon's processes under the same caps for the run: a daemon in the
/// hierarchy's root is moved into `group` (capping the root would cap the whole machine);
/// one in a cgroup of its own gets the caps there, its previous limits kept to write back.
/// Both are undone when `group` closes. Returns what was done, for the step's notes.
pub(crate) fn cap_daemon(
    group: &mut CapGroup,
    target: &CapTarget,
    caps: &IoCaps,
    commands: &[&str],
) -> Vec<String> {
    let Ok(procs) = crate::steps::daemon::processes_named(commands) else {
        return vec!["cannot list /proc: the docker daemon was not capped".into()];
    };
    let mut done = DaemonCapped::default();
    for (pid, comm) in procs {
        let Some(cg) = target.hierarchy.cgroup_of(Path::new("/proc"), pid) else {
            continue;
        };
        let name = format!("{comm} ({pid})");
        let result = if cg == "/" {
            group.adopt(pid).map(|_| done.moved.push(name.clone()))
        } else if done.in_place.contains(&cg) {
            Ok(())
        } else {
            match group.cap_in_place(&cg, &target.devices, caps) {
                Ok(()) => {
                    done.in_place.push(cg);
                    Ok(())
                }
                // No io controller in that cgroup (v2 without it delegated there): move the
                // process in instead, as for a daemon in the root.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    group.adopt(pid).map(|_| done.moved.push(name.clone()))
                }
                Err(e) => Err(e),
            }
        };
        if let Err(e) = result {
            done.failed.push(format!("{name}: {e}"));
        }
    }
    done.notes()
}

/// What [`cap_daemon`] did.
#[derive(Default)]
struct DaemonCapped {
    /// Processes moved from the hierarchy's root into the run's group.
    moved: Vec<String>,
    /// The daemon's own cgroups, capped where they are.
    in_place: Vec<String>,
    /// Processes that could not be capped, with the error.
    failed: Vec<String>,
}

impl DaemonCapped {
    fn notes(self) -> Vec<String> {
        let mut notes = Vec::new();
        if !self.moved.is_empty() {
            notes.push(format!(
                "the docker daemon's processes {} were moved into the capped cgroup for the \
                 run and back afterwards",
                self.moved.join(", ")
            ));
        }
        if !self.in_place.is_empty() {
            notes.push(format!(
                "the docker daemon's cgroup(s) {} got the same caps for the run; their own \
                 limits were written back afterwards",
                self.in_place.join(", ")
            ));
        }
        if self.moved.is_empty() && self.in_place.is_empty() {
            notes.push("no local docker daemon process found: only the client was capped".into());
        }
        notes.extend(
            self.failed
                .into_iter()
                .map(|f| format!("could not cap {f}")),
        );
        notes
    }
}

//! One run put under its condition and taken off it again: the small interface the steps
//! call. It puts the work folder on memory or the run in a capped cgroup (with a local daemon
//! under the same caps), starts the run with the step's files out of the page cache, and
//! undoes all of it in reverse; it knows nothing of verdicts.

use std::path::Path;
use std::process::Command;

use anyhow::{Context, Result};
use record::{CgroupIo, IoCaps};

use super::caps::{self, CapTarget};
use super::memory::MemoryMount;
use super::memory_files;
use super::options::{Condition, WhatIfOptions};
use super::page_cache;
use crate::experiments::cgroup::CapGroup;

/// What a `like:` run on the latency emulation says (the same words every run, so the
/// condition carries it once).
const LATENCY_NOTE: &str = "the step's folder ($DISKBENCH_SCRATCH, with $TMPDIR \
     inside it) ran on a FUSE passthrough adding the runner's latency to each read reaching \
     storage, each direct write and each flush; the step's I/O elsewhere (target/, the project, \
     a daemon's storage) ran at this disk's latency";

/// The latency emulation over `work` (empty), its files in a folder beside it.
fn latency_mount(
    work: &Path,
    delays: latency_fs::Delays,
) -> Result<(latency_fs::Mount, std::path::PathBuf)> {
    let mut name = work.file_name().unwrap_or_default().to_os_string();
    name.push(".latency-backing");
    let backing = work.with_file_name(name);
    std::fs::create_dir(&backing)
        .with_context(|| format!("cannot create {}", backing.display()))?;
    match latency_fs::Mount::new(&backing, work, delays, record::random::random_seed()) {
        Ok(m) => {
            // The step's preparation and the page-cache drop are not timed: held only from
            // `enter` on.
            m.set_holding(false);
            Ok((m, backing))
        }
        Err(e) => {
            let _ = std::fs::remove_dir_all(&backing);
            Err(anyhow::anyhow!(
                "cannot mount the latency emulation on {}: {e}",
                work.display()
            ))
        }
    }
}

/// A run's condition, in place until [`Setup::undo`].
#[derive(Default)]
pub(crate) struct Setup {
    /// Drop the step's files from the page cache before it starts.
    cold: bool,
    /// The capped cgroup, its target and its caps.
    capped: Option<(CapGroup, CapTarget, IoCaps)>,
    mount: Option<MemoryMount>,
    /// A `like:` run's latency emulation over the work folder, and the folder behind it.
    latency: Option<(latency_fs::Mount, std::path::PathBuf)>,
    /// The memory condition's uncapped cgroup: what disk I/O the run still did.
    measured: Option<CapGroup>,
    /// What was done for this run (a daemon capped), for the condition's notes.
    notes: Vec<String>,
}

/// What undoing a run's condition left to report.
#[derive(Debug, Default)]
pub(crate) struct Undone {
    /// What the capped cgroup saw pass to the devices.
    pub cgroup_io: Option<CgroupIo>,
    /// What was done for the run (a daemon capped and let go).
    pub notes: Vec<String>,
    /// What could not be undone (a daemon still capped, a tmpfs still mounted).
    pub left: Vec<String>,
    /// What the latency emulation held the run's I/O for in all, s.
    pub latency_held_s: Option<f64>,
}

impl Setup {
    /// Put `work` (an empty folder) under `condition`. With `what_if` every run starts with
    /// the step's files out of the page cache; without, only the normal condition runs.
    pub(crate) fn apply(
        condition: &Condition,
        work: &Path,
        what_if: Option<&WhatIfOptions>,
    ) -> Result<Setup> {
        let mut setup = Setup {
            // On memory there is no disk to read from: nothing to drop (and tmpfs pages are
            // the files themselves).
            cold: what_if.is_some() && *condition != Condition::Memory,
            ..Default::default()
        };
        match condition {
            Condition::Normal => {}
            Condition::Memory => {
                setup.mount = Some(MemoryMount::mount(work)?);
                // The group only counts. Without a block-I/O hierarchy (--dir on tmpfs) the
                // run is not measured.
                if let Some(target) = what_if.and_then(|w| w.caps_target.as_ref().ok()) {
                    let group = CapGroup::create(
                        &target.hierarchy,
                        &crate::experiments::cgroup::group_name(&record::random::new_id()),
                    )?;
                    // cgroup v1 counts a device's I/O only while some throttle rule is set on
                    // it: a cap no step reaches (the kernel's largest I/O rate) switches the
                    // counting on for the disks under --dir. v2's io.stat always counts.
                    if target.hierarchy.version == crate::experiments::cgroup::Version::V1 {
                        let never = IoCaps {
                            riops: Some(crate::experiments::cgroup::MAX_CAP_IOPS),
                            wiops: Some(crate::experiments::cgroup::MAX_CAP_IOPS),
                            ..IoCaps::default()
                        };
                        group.set_caps(&target.devices, &never)?;
                    }
                    setup.measured = Some(group);
                }
            }
            Condition::Capped { id, caps } => {
                let target = what_if
                    .and_then(|w| w.caps_target.as_ref().ok())
                    .context("a capped run without a cap target")?;
                let mut group = caps::capped_group(target, caps)?;
                let delays = what_if.and_then(|w| w.like_delays);
                if let Some(delays) = delays.filter(|_| id.starts_with("like:"))
                    && latency_fs::available().is_ok()
                {
                    // The passthrough's server does the step's folder I/O from this process's
                    // threads: this process goes into the capped group too (and back when it
                    // closes), so the caps reach that I/O.
                    group.adopt(std::process::id())?;
                    setup.capped = Some((group, target.clone(), *caps));
                    match latency_mount(work, delays) {
                        Ok(m) => setup.latency = Some(m),
                        // Refused (a container may open /dev/fuse without being allowed to
                        // mount): the run goes on under the caps alone, and says why.
                        Err(e) => setup.notes.push(format!(
                            "{e:#}: this run is under the caps alone, latency left out"
                        )),
                    }
                } else {
                    setup.capped = Some((group, target.clone(), *caps));
                }
            }
        }
        Ok(setup)
    }

    /// Just before `cmd` starts: the step's files in `work` out of the page cache, `cmd` into
    /// the capped cgroup, and the processes of a local daemon (`daemon`: their command names)
    /// under the same caps. On memory, the step's temporary files and a cargo step's target
    /// folder (`cargo_target`) go to the tmpfs too, and `cmd` into the counting cgroup.
    pub(crate) fn enter(
        &mut self,
        cmd: &mut Command,
        work: &Path,
        daemon: Option<&[&str]>,
        cargo_target: Option<&Path>,
    ) {
        if self.cold {
            page_cache::evict_from_cache(work);
        }
        if let Some((m, _)) = &self.latency {
            m.set_holding(true);
        }
        if self.mount.is_some() {
            self.notes
                .extend(memory_files::redirect(cmd, work, cargo_target));
        }
        if self.latency.is_some() {
            // The step's temporary files get the runner's latency too; a cargo target folder
            // does not (thousands of metadata calls would time the passthrough, not a disk).
            self.notes.extend(memory_files::redirect(cmd, work, None));
        }
        if let Some(group) = &self.measured {
            group.join_on_exec(cmd);
        }
        if let Some((group, target, caps)) = self.capped.as_mut() {
            group.join_on_exec(cmd);
            if let Some(commands) = daemon {
                self.notes
                    .extend(caps::cap_daemon(group, target, caps, commands));
            }
        }
    }

    /// Undo in reverse: the latency emulation, the caps (and a daemon's), then the mount.
    /// Each is tried whatever the others did.
    pub(crate) fn undo(mut self) -> Undone {
        let mut undone = Undone {
            notes: std::mem::take(&mut self.notes),
            ..Default::default()
        };
        if let Some((mount, backing)) = self.latency.take() {
            match mount.unmount() {
                Ok(held) => {
                    undone.latency_held_s = Some(held.held_ns as f64 / 1e9);
                    undone.notes.push(LATENCY_NOTE.to_string());
                }
                Err(e) => undone
                    .left
                    .push(format!("could not unmount the latency emulation: {e}")),
            }
            if let Err(e) = std::fs::remove_dir_all(&backing) {
                undone
                    .left
                    .push(format!("could not remove {}: {e}", backing.display()));
            }
        }
        if let Some((group, target, _)) = self.capped.take() {
            undone.cgroup_io = Some(group.usage(&target.devices));
            if let Err(e) = group.close() {
                undone.left.push(e);
            }
        }
        if let Some(group) = self.measured.take() {
            undone.cgroup_io = Some(group.usage_all_devices());
            if let Err(e) = group.close() {
                undone.left.push(e);
            }
        }
        if let Some(m) = self.mount.take()
            && let Err(e) = m.unmount()
        {
            undone.left.push(e);
        }
        undone
    }
}

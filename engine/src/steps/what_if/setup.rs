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
use super::options::{Condition, WhatIfOptions};
use super::page_cache;
use crate::cgroup::CapGroup;

/// A run's condition, in place until [`Setup::undo`].
#[derive(Default)]
pub(crate) struct Setup {
    /// Drop the step's files from the page cache before it starts.
    cold: bool,
    /// The capped cgroup, its target and its caps.
    capped: Option<(CapGroup, CapTarget, IoCaps)>,
    mount: Option<MemoryMount>,
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
            Condition::Memory => setup.mount = Some(MemoryMount::mount(work)?),
            Condition::Capped { caps, .. } => {
                let target = what_if
                    .and_then(|w| w.caps_target.as_ref().ok())
                    .context("a capped run without a cap target")?;
                let group = caps::capped_group(target, caps)?;
                setup.capped = Some((group, target.clone(), *caps));
            }
        }
        Ok(setup)
    }

    /// Just before `cmd` starts: the step's files in `work` out of the page cache, `cmd` into
    /// the capped cgroup, and the processes of a local daemon (`daemon`: their command names)
    /// under the same caps.
    pub(crate) fn enter(&mut self, cmd: &mut Command, work: &Path, daemon: Option<&[&str]>) {
        if self.cold {
            page_cache::evict_from_cache(work);
        }
        if let Some((group, target, caps)) = self.capped.as_mut() {
            group.join_on_exec(cmd);
            if let Some(commands) = daemon {
                self.notes
                    .extend(caps::cap_daemon(group, target, caps, commands));
            }
        }
    }

    /// Undo in reverse: the caps (and a daemon's) first, then the mount. Both are tried
    /// whatever the other did.
    pub(crate) fn undo(mut self) -> Undone {
        let mut undone = Undone {
            notes: std::mem::take(&mut self.notes),
            ..Default::default()
        };
        if let Some((group, target, _)) = self.capped.take() {
            undone.cgroup_io = Some(group.usage(&target.devices));
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

//! Block-I/O caps through a cgroup the tool creates: create it, cap devices, move processes
//! in, read back what it moved, restore, and always remove it.
//!
//! Two kernels' interfaces, one room:
//! - cgroup v1 `blkio`: `blkio.throttle.{read,write}_{iops,bps}_device`, one `MAJ:MIN VALUE`
//!   line per write (`VALUE` 0 removes the rule); usage in `blkio.throttle.io_service_bytes`
//!   and `io_serviced` (`MAJ:MIN Read N`).
//! - cgroup v2: `io.max`, `MAJ:MIN riops=N wiops=N rbps=N wbps=N` (`max` removes a limit);
//!   usage in `io.stat` (`MAJ:MIN rbytes=N wbytes=N rios=N wios=N ...`).
//!
//! What a cap reaches is the kernel's business, and it differs: v1 throttles only I/O
//! submitted by the cgroup's tasks (reads, O_DIRECT writes and the write-back an fsync forces
//! from the caller); write-back of buffered writes by the kernel's flusher is not attributed
//! to any cgroup in v1. v2 attributes write-back too (with the memory controller on).
//!
//! Every path is under a root given by the caller, so the code runs on `/sys/fs/cgroup` and
//! on a recorded tree in a temporary folder (the unit tests). Nothing here knows what a step
//! or a verdict is.

use std::ffi::CString;
use std::fs;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use record::{CgroupIo, IoCaps};

use crate::session::said::{Said, tell};

mod kernel_files;
pub mod saved_limits;
pub use kernel_files::{DevNum, Version};
use kernel_files::{V1_FILES, annotate, on_cgroupfs, write_line};
use saved_limits::SavedLimits;

/// Where the kernel mounts the cgroup filesystems.
pub const CGROUP_FS: &str = "/sys/fs/cgroup";
/// Every cgroup this tool makes is named `cargo-diskbench-<pid>-<id>`: the pid lets a later
/// run remove what a killed run left (see [`sweep_stale`]).
pub(crate) const NAME_PREFIX: &str = "cargo-diskbench-";

/// The hierarchy that throttles block I/O on this machine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hierarchy {
    pub version: Version,
    /// The hierarchy's mount point, e.g. `/sys/fs/cgroup/blkio` or `/sys/fs/cgroup`.
    pub root: PathBuf,
}

impl Hierarchy {
    /// Find the hierarchy under `fs_root` (normally [`CGROUP_FS`]): v1 `blkio` with throttle
    /// files, else v2 with `io` among the root's controllers (at the root or at `unified/`).
    pub(crate) fn detect(fs_root: &Path) -> Result<Hierarchy, String> {
        let v1 = fs_root.join("blkio");
        if v1.join("blkio.throttle.read_iops_device").exists() {
            return Ok(Hierarchy {
                version: Version::V1,
                root: v1,
            });
        }
        for root in [fs_root.to_path_buf(), fs_root.join("unified")] {
            if let Ok(c) = fs::read_to_string(root.join("cgroup.controllers"))
                && c.split_whitespace().any(|w| w == "io")
            {
                return Ok(Hierarchy {
                    version: Version::V2,
                    root,
                });
            }
        }
        Err(format!(
            "no block-I/O throttling under {}: neither cgroup v1 blkio (blkio/blkio.throttle.*) \
             nor cgroup v2 with the io controller (cgroup.controllers)",
            fs_root.display()
        ))
    }

    /// Whether this process may create cgroups here (root, or a delegated hierarchy).
    pub(crate) fn check_writable(&self) -> Result<(), String> {
        let c = CString::new(self.root.as_os_str().as_bytes()).map_err(|e| e.to_string())?;
        // SAFETY: access reads a NUL-terminated path and has no other effect.
        if unsafe { libc::access(c.as_ptr(), libc::W_OK) } == 0 {
            Ok(())
        } else {
            Err(format!(
                "cannot create cgroups in {} ({}): the what-if experiments need root or a \
                 delegated cgroup",
                self.root.display(),
                io::Error::last_os_error()
            ))
        }
    }

    /// The cgroup of `pid` in this hierarchy, as the path under the root ("/" for the root),
    /// read from `<proc_root>/<pid>/cgroup`.
    pub(crate) fn cgroup_of(&self, proc_root: &Path, pid: u32) -> Option<String> {
        let text = fs::read_to_string(proc_root.join(pid.to_string()).join("cgroup")).ok()?;
        parse_proc_cgroup(&text, self.version)
    }

    /// The hierarchy as a sweep of saved limits needs it.
    pub(crate) fn as_root(&self) -> saved_limits::HierarchyRoot<'_> {
        saved_limits::HierarchyRoot {
            root: &self.root,
            version: self.version,
        }
    }

    fn dir_of(&self, cgroup: &str) -> PathBuf {
        self.root.join(cgroup.trim_start_matches('/'))
    }
}

/// The line of a `/proc/<pid>/cgroup` file for the block-I/O hierarchy.
pub(crate) fn parse_proc_cgroup(text: &str, version: Version) -> Option<String> {
    text.lines().find_map(|line| {
        let mut parts = line.splitn(3, ':');
        let (id, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        let hit = match version {
            Version::V1 => controllers.split(',').any(|c| c == "blkio"),
            Version::V2 => id == "0" && controllers.is_empty(),
        };
        hit.then(|| path.to_string())
    })
}

/// A process moved in from elsewhere, and where it came from.
#[derive(Debug)]
struct Moved {
    pid: u32,
    from: PathBuf,
}

/// A cgroup this tool made. Removed on [`CapGroup::close`] or, at the latest, when dropped
/// (an error, Ctrl-C, a panic): processes moved in go back where they were, daemons' limits
/// changed in place are written back, and the directory goes.
#[derive(Debug)]
pub struct CapGroup {
    hierarchy: Hierarchy,
    dir: PathBuf,
    proc_root: PathBuf,
    moved: Vec<Moved>,
    saved: Vec<SavedLimits>,
    /// Where the limits of cgroups capped in place are kept until they are back.
    run_dir: PathBuf,
    closed: bool,
}

impl CapGroup {
    /// Make `root/<name>` (name from [`group_name`]). For v2, turns `io` on for the root's
    /// children if it is not (it stays on: other cgroups may use it from then on).
    pub(crate) fn create(hierarchy: &Hierarchy, name: &str) -> io::Result<CapGroup> {
        if hierarchy.version == Version::V2 {
            let ctl = hierarchy.root.join("cgroup.subtree_control");
            let on = fs::read_to_string(&ctl).unwrap_or_default();
            if !on.split_whitespace().any(|w| w == "io") {
                write_line(&ctl, "+io")?;
            }
        }
        let dir = hierarchy.root.join(name);
        fs::create_dir(&dir).map_err(|e| annotate(e, "create", &dir))?;
        Ok(CapGroup {
            hierarchy: hierarchy.clone(),
            dir,
            proc_root: PathBuf::from("/proc"),
            moved: Vec::new(),
            saved: Vec::new(),
            run_dir: saved_limits::run_dir(),
            closed: false,
        })
    }

    /// Read processes' cgroups from another `/proc` (tests).
    #[cfg(test)]
    pub(crate) fn with_proc_root(mut self, proc_root: &Path) -> CapGroup {
        self.proc_root = proc_root.to_path_buf();
        self
    }

    /// Keep the limits of cgroups capped in place in another run folder (tests).
    #[cfg(test)]
    pub(crate) fn with_run_dir(mut self, run_dir: &Path) -> CapGroup {
        self.run_dir = run_dir.to_path_buf();
        self
    }

    #[cfg(test)]
    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    /// Cap `devices` at `caps` (a `None` field: no cap of that kind).
    pub(crate) fn set_caps(&self, devices: &[DevNum], caps: &IoCaps) -> io::Result<()> {
        write_caps(&self.hierarchy, &self.dir, devices, caps)
    }

    /// Make `cmd`'s process join this cgroup before it runs anything, so everything it
    /// starts is inside from the first instruction.
    pub(crate) fn join_on_exec(&self, cmd: &mut Command) {
        #[expect(
            clippy::expect_used,
            reason = "the path is the hierarchy root found under /sys/fs/cgroup joined with a \
                      name of our own (a prefix, a pid, an id), none of which holds a NUL"
        )]
        let procs = CString::new(self.dir.join("cgroup.procs").as_os_str().as_bytes())
            .expect("cgroup paths hold no NUL");
        // SAFETY: the closure runs in the forked child before exec and only makes raw
        // open/write/close syscalls (async-signal-safe, no allocation).
        unsafe {
            cmd.pre_exec(move || {
                let fd = libc::open(procs.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
                if fd < 0 {
                    return Err(io::Error::last_os_error());
                }
                // "0" is the writing process itself.
                let rc = libc::write(fd, b"0".as_ptr().cast(), 1);
                let err = io::Error::last_os_error();
                libc::close(fd);
                if rc == 1 { Ok(()) } else { Err(err) }
            });
        }
    }

    /// Move a running process (and, on v1 `cgroup.procs`, all its threads) in; it goes back
    /// where it was on close.
    pub fn adopt(&mut self, pid: u32) -> io::Result<()> {
        let from = self
            .hierarchy
            .cgroup_of(&self.proc_root, pid)
            .ok_or_else(|| io::Error::other(format!("cannot read the cgroup of process {pid}")))?;
        let from = self.hierarchy.dir_of(&from);
        write_line(&self.dir.join("cgroup.procs"), &pid.to_string())?;
        self.moved.push(Moved { pid, from });
        Ok(())
    }

    /// Cap the cgroup `cgroup` (a path under the root, e.g. a daemon's) in place, keeping its
    /// previous limits for these devices to write back on close. They are kept on disk first
    /// (see [`saved_limits`]): if that fails, nothing is capped; after a SIGKILL, the next
    /// run's sweep writes them back.
    pub(crate) fn cap_in_place(
        &mut self,
        cgroup: &str,
        devices: &[DevNum],
        caps: &IoCaps,
    ) -> io::Result<()> {
        let dir = self.hierarchy.dir_of(cgroup);
        let mut saved = SavedLimits::new(cgroup, dir.clone());
        match self.hierarchy.version {
            Version::V1 => {
                for (file, _) in V1_FILES {
                    let path = dir.join(file);
                    let before =
                        fs::read_to_string(&path).map_err(|e| annotate(e, "read", &path))?;
                    for d in devices {
                        let old = find_device_line(&before, *d)
                            .and_then(|l| l.split_whitespace().nth(1).map(str::to_string))
                            .unwrap_or_else(|| "0".into());
                        saved.lines.push((path.clone(), format!("{d} {old}")));
                    }
                }
            }
            Version::V2 => {
                let path = dir.join("io.max");
                let before = fs::read_to_string(&path).map_err(|e| annotate(e, "read", &path))?;
                for d in devices {
                    let line = find_device_line(&before, *d)
                        .map(str::to_string)
                        .unwrap_or_else(|| format!("{d} rbps=max wbps=max riops=max wiops=max"));
                    saved.lines.push((path.clone(), line));
                }
            }
        }
        saved.record(&self.run_dir, self.hierarchy.version)?;
        saved_limits::test_stop_point("limits-recorded");
        // Saved first: if the write fails half-way, close still restores what was there.
        self.saved.push(saved);
        write_caps(&self.hierarchy, &dir, devices, caps)?;
        saved_limits::test_stop_point("limits-capped");
        Ok(())
    }

    /// What the cgroup moved on `devices` so far.
    pub(crate) fn usage(&self, devices: &[DevNum]) -> CgroupIo {
        read_usage(&self.hierarchy, &self.dir, devices)
    }

    /// What the cgroup moved on every block device its counters name (the memory condition:
    /// any disk I/O at all, wherever the step's files were).
    pub(crate) fn usage_all_devices(&self) -> CgroupIo {
        let file = match self.hierarchy.version {
            Version::V1 => "blkio.throttle.io_serviced",
            Version::V2 => "io.stat",
        };
        let text = fs::read_to_string(self.dir.join(file)).unwrap_or_default();
        let mut devices: Vec<DevNum> = Vec::new();
        for d in text
            .lines()
            .filter_map(|l| DevNum::parse(l.split_whitespace().next()?))
        {
            if !devices.contains(&d) {
                devices.push(d);
            }
        }
        read_usage(&self.hierarchy, &self.dir, &devices)
    }

    /// Undo everything and remove the cgroup. Errors are collected, not stopped at: each
    /// restore is tried.
    pub fn close(mut self) -> Result<(), String> {
        self.close_inner()
    }

    fn close_inner(&mut self) -> Result<(), String> {
        if self.closed {
            return Ok(());
        }
        self.closed = true;
        let mut errors = Vec::new();
        for mut saved in self.saved.drain(..).rev() {
            let mut restored = true;
            for (file, line) in &saved.lines {
                match write_line(file, line) {
                    Ok(()) => {}
                    // The cgroup is gone (its service stopped): nothing left to restore.
                    Err(_) if !saved.dir.exists() => {}
                    Err(e) => {
                        restored = false;
                        errors.push(format!(
                            "could not restore {} in {}: {e}",
                            line,
                            saved.dir.display()
                        ));
                    }
                }
            }
            // Not restored: the state file stays for the next run's sweep to try again.
            if restored && let Err(e) = saved.forget() {
                errors.push(e);
            }
        }
        // Processes moved in go back; anything else still inside (a daemon's child born
        // meanwhile, a straggler of the step) goes where the first moved process came from,
        // else to the parent.
        let fallback = self
            .moved
            .first()
            .map(|m| m.from.clone())
            .or_else(|| self.dir.parent().map(Path::to_path_buf))
            .unwrap_or_else(|| self.hierarchy.root.clone());
        for m in self.moved.drain(..) {
            if !self.proc_root.join(m.pid.to_string()).exists() {
                continue;
            }
            if let Err(e) = write_line(&m.from.join("cgroup.procs"), &m.pid.to_string()) {
                errors.push(format!(
                    "could not move process {} back to {}: {e}",
                    m.pid,
                    m.from.display()
                ));
            }
        }
        if let Err(e) = evacuate_and_remove(&self.dir, &fallback) {
            errors.push(e);
        }
        if errors.is_empty() {
            Ok(())
        } else {
            Err(errors.join("; "))
        }
    }
}

impl Drop for CapGroup {
    fn drop(&mut self) {
        if let Err(e) = self.close_inner() {
            tell(Said::Warning(e));
        }
    }
}

/// `cargo-diskbench-<pid>-<id>`.
pub(crate) fn group_name(id: &str) -> String {
    format!("{NAME_PREFIX}{}-{id}", std::process::id())
}

/// A cgroup a killed run left, as [`sweep_stale`] removed it.
#[derive(Debug)]
pub struct Swept {
    pub name: String,
    /// The processes that were still in it (a docker daemon a killed what-if run had moved
    /// in), as `command (pid)`: moved back to the root, out of its caps.
    pub released: Vec<String>,
}

/// What [`sweep_stale`] found.
#[derive(Debug, Default)]
pub struct Sweep {
    /// The cgroups of killed runs, removed.
    pub removed: Vec<Swept>,
    /// The cgroups of the live run, left alone.
    pub kept: Vec<String>,
}

/// The pid a cgroup of this tool is named for (`cargo-diskbench-<pid>-<id>`); None for any
/// other name.
pub(crate) fn pid_of_group(name: &str) -> Option<u32> {
    name.strip_prefix(NAME_PREFIX)?
        .split('-')
        .next()?
        .parse()
        .ok()
}

/// Remove the cgroups a killed run of this tool left behind: every one of ours not named for
/// a pid for which `is_live` holds (the caller knows which run is alive: the one holding the
/// one-run-at-a-time lock, if any). Their processes go to the root, the directories go.
pub(crate) fn sweep_stale(
    hierarchy: &Hierarchy,
    proc_root: &Path,
    is_live: impl Fn(u32) -> bool,
) -> Sweep {
    let mut sweep = Sweep::default();
    let Ok(entries) = fs::read_dir(&hierarchy.root) else {
        return sweep;
    };
    let mut entries: Vec<_> = entries.flatten().collect();
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(pid) = pid_of_group(&name) else {
            continue;
        };
        if is_live(pid) {
            sweep.kept.push(name);
            continue;
        }
        let released: Vec<String> = fs::read_to_string(e.path().join("cgroup.procs"))
            .unwrap_or_default()
            .split_whitespace()
            .map(|p| {
                let comm = fs::read_to_string(proc_root.join(p).join("comm")).unwrap_or_default();
                format!("{} ({p})", comm.trim())
            })
            .collect();
        if evacuate_and_remove(&e.path(), &hierarchy.root).is_ok() {
            sweep.removed.push(Swept { name, released });
        }
    }
    sweep
}

/// The cgroups of this tool under the hierarchy's root (tests check none is left).
#[cfg(test)]
pub(crate) fn ours(hierarchy: &Hierarchy) -> Vec<String> {
    fs::read_dir(&hierarchy.root)
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with(NAME_PREFIX))
                .collect()
        })
        .unwrap_or_default()
}

/// The largest I/Os-per-second cap the kernel keeps as given: cgroup v1 stores iops limits in
/// an `unsigned int`, so a bigger figure would be cut to its low 32 bits (2^32 becomes 0,
/// which removes the rule).
pub const MAX_CAP_IOPS: u64 = u32::MAX as u64;

/// A cap the kernel would not keep as given: 0 (v1 reads it as "no rule", so a run recorded as
/// capped would not be), or an iops figure the kernel cuts (see [`MAX_CAP_IOPS`]). The caps
/// written to a cgroup always pass this; Err says which cap and why.
pub fn check_caps(caps: &IoCaps) -> Result<(), String> {
    for (what, v, max) in [
        ("reads per second", caps.riops, MAX_CAP_IOPS),
        ("writes per second", caps.wiops, MAX_CAP_IOPS),
        ("read bytes per second", caps.rbps, u64::MAX),
        ("write bytes per second", caps.wbps, u64::MAX),
    ] {
        match v {
            Some(0) => {
                return Err(format!(
                    "a cap of 0 {what} would remove the limit instead of setting it"
                ));
            }
            Some(n) if n > max => {
                return Err(format!(
                    "a cap of {n} {what} is above the kernel's largest ({max})"
                ));
            }
            _ => {}
        }
    }
    Ok(())
}

/// The `io.max` line for one device (v2).
pub(crate) fn io_max_line(dev: DevNum, caps: &IoCaps) -> String {
    let v = |x: Option<u64>| x.map_or("max".to_string(), |n| n.to_string());
    format!(
        "{dev} riops={} wiops={} rbps={} wbps={}",
        v(caps.riops),
        v(caps.wiops),
        v(caps.rbps),
        v(caps.wbps)
    )
}

fn write_caps(h: &Hierarchy, dir: &Path, devices: &[DevNum], caps: &IoCaps) -> io::Result<()> {
    // The last line of defence: a cap the kernel would read as "no limit" is never written.
    check_caps(caps).map_err(io::Error::other)?;
    for d in devices {
        match h.version {
            Version::V1 => {
                for (file, pick) in V1_FILES {
                    // 0 removes a v1 rule: a field without a cap clears any earlier one.
                    write_line(&dir.join(file), &format!("{d} {}", pick(caps).unwrap_or(0)))?;
                }
            }
            Version::V2 => write_line(&dir.join("io.max"), &io_max_line(*d, caps))?,
        }
    }
    Ok(())
}

fn find_device_line(text: &str, dev: DevNum) -> Option<&str> {
    let key = dev.to_string();
    text.lines()
        .find(|l| l.split_whitespace().next() == Some(key.as_str()))
}

/// Parse v1 `blkio.throttle.io_service_bytes` / `io_serviced` for `devices`: (read, write).
pub(crate) fn parse_v1_service(text: &str, devices: &[DevNum]) -> (u64, u64) {
    let (mut r, mut w) = (0, 0);
    for line in text.lines() {
        let mut f = line.split_whitespace();
        let (Some(dev), Some(op), Some(n)) = (f.next(), f.next(), f.next()) else {
            continue;
        };
        if !DevNum::parse(dev).is_some_and(|d| devices.contains(&d)) {
            continue;
        }
        let n: u64 = n.parse().unwrap_or(0);
        match op {
            "Read" => r += n,
            "Write" => w += n,
            _ => {}
        }
    }
    (r, w)
}

/// Parse v2 `io.stat` for `devices`.
pub(crate) fn parse_io_stat(text: &str, devices: &[DevNum]) -> CgroupIo {
    let mut io = CgroupIo::default();
    for line in text.lines() {
        let mut f = line.split_whitespace();
        if !f
            .next()
            .and_then(DevNum::parse)
            .is_some_and(|d| devices.contains(&d))
        {
            continue;
        }
        for kv in f {
            let Some((k, v)) = kv.split_once('=') else {
                continue;
            };
            let v: u64 = v.parse().unwrap_or(0);
            match k {
                "rbytes" => io.read_bytes += v,
                "wbytes" => io.write_bytes += v,
                "rios" => io.read_ios += v,
                "wios" => io.write_ios += v,
                _ => {}
            }
        }
    }
    io
}

fn read_usage(h: &Hierarchy, dir: &Path, devices: &[DevNum]) -> CgroupIo {
    let read = |f: &str| fs::read_to_string(dir.join(f)).unwrap_or_default();
    match h.version {
        Version::V1 => {
            let (read_bytes, write_bytes) =
                parse_v1_service(&read("blkio.throttle.io_service_bytes"), devices);
            let (read_ios, write_ios) =
                parse_v1_service(&read("blkio.throttle.io_serviced"), devices);
            CgroupIo {
                read_bytes,
                write_bytes,
                read_ios,
                write_ios,
            }
        }
        Version::V2 => parse_io_stat(&read("io.stat"), devices),
    }
}

/// Move whatever is still in `dir` to `to`, then remove `dir`. A process that just exited
/// may take a moment to leave the cgroup: retried for up to two seconds.
fn evacuate_and_remove(dir: &Path, to: &Path) -> Result<(), String> {
    if !dir.exists() {
        return Ok(());
    }
    let deadline = Instant::now() + Duration::from_secs(2);
    loop {
        if on_cgroupfs(dir) {
            let procs = fs::read_to_string(dir.join("cgroup.procs")).unwrap_or_default();
            for pid in procs.split_whitespace() {
                let _ = write_line(&to.join("cgroup.procs"), pid);
            }
        }
        let result = match fs::remove_dir(dir) {
            // A recorded tree (tests): the files the kernel drops with the directory are
            // regular files here.
            Err(e) if e.raw_os_error() == Some(libc::ENOTEMPTY) && !on_cgroupfs(dir) => {
                fs::remove_dir_all(dir)
            }
            r => r,
        };
        match result {
            Ok(()) => return Ok(()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(e) if Instant::now() >= deadline => {
                return Err(format!(
                    "could not remove the cgroup {}: {e}",
                    dir.display()
                ));
            }
            Err(_) => std::thread::sleep(Duration::from_millis(20)),
        }
    }
}

#[cfg(test)]
mod tests;

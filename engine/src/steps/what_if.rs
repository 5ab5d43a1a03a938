//! What-if experiments: rerun a step with the disk capped and on memory, and judge what it
//! waits on by what changed its time.
//!
//! The conditions (besides the normal run, which is the reference):
//! - `memory`: the step's work folder (scratch, target, generated inputs) on a private tmpfs;
//! - `iops-capped`: the device(s) under `--dir` capped in I/Os per second, bandwidth free;
//! - `bandwidth-capped`: the same device(s) capped in bytes per second, I/Os free;
//! - `like:<label>`: both caps taken from another runner's figures (a prediction).
//!
//! The caps come from [`crate::cgroup`], one cgroup per run, removed after it; this module
//! decides what to cap and judges the outcome. Every run (the normal one included) starts
//! with the step's own files out of the page cache (synced, then `POSIX_FADV_DONTNEED`):
//! the toolchain and the rest of the machine stay warm, as on a runner mid-job, so a cap
//! measures the step's I/O and not the cold start of `rustc`.

use std::ffi::CString;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use crate::cgroup::{self, CapGroup, DevNum, Hierarchy};
use record::error::usage;
use record::{Bound, IoCaps, Record, StepStatus, WhatIfCondition};

/// Default cap of the `iops-capped` condition, I/Os per second per direction.
pub const DEFAULT_CAP_IOPS: u64 = 1000;
/// Default cap of the `bandwidth-capped` condition, MiB/s per direction.
pub const DEFAULT_CAP_MIB_S: u64 = 50;
/// A cap has slowed a step when its time grew by more than this share or the normal runs'
/// own spread, whichever is larger: a shared machine's noise is not an effect.
pub const NOISE_FLOOR: f64 = 0.25;
/// ...and by at least this many seconds (a 10 ms step doubling is start-up noise).
pub const MIN_EFFECT_S: f64 = 0.05;
/// When both caps slowed a step, one explains it alone when its extra time is this many
/// times the other's.
pub const DOMINANCE: f64 = 3.0;
/// A capped run's extra time counts as the cap's only when the I/O the cap saw could have
/// cost at least this share of it (see [`cap_cost_s`]); the rest is a shared machine's noise.
pub const MIN_CAP_COST_SHARE: f64 = 0.25;
/// With neither cap mattering, a step busy on a CPU for this share of its time is cpu-bound.
pub const CPU_SHARE: f64 = 0.5;
/// The source name of the memory condition's tmpfs mounts (the pid follows).
pub const MEMORY_MOUNT_SOURCE: &str = "diskbench-memory-";

const MIB: u64 = 1024 * 1024;

/// What the what-if runs need, resolved once before any step runs.
#[derive(Clone, Debug)]
pub struct WhatIfOptions {
    /// Runs per condition (and of the normal run); medians when more than one.
    pub repeat: u32,
    pub cap_iops: u64,
    pub cap_mib_s: u64,
    /// `--like LABEL`: the label and the caps from its figures.
    pub like: Option<(String, IoCaps)>,
    /// The block-I/O hierarchy, or why the capped conditions cannot run (only memory runs).
    pub caps_target: Result<CapTarget, String>,
    /// Only these conditions (ids of [`CONDITION_IDS`]); None: all.
    pub only: Option<Vec<String>>,
}

/// The condition names `--what-if-only` takes (`like` is `like:<label>`).
pub const CONDITION_IDS: [&str; 4] = ["memory", "iops-capped", "bandwidth-capped", "like"];

/// Where caps go.
#[derive(Clone, Debug)]
pub struct CapTarget {
    pub hierarchy: Hierarchy,
    pub devices: Vec<DevNum>,
}

/// One condition to run.
#[derive(Clone, Debug, PartialEq)]
pub enum Condition {
    Normal,
    Memory,
    Capped { id: String, caps: IoCaps },
}

impl Condition {
    pub fn id(&self) -> &str {
        match self {
            Condition::Normal => "baseline",
            Condition::Memory => "memory",
            Condition::Capped { id, .. } => id,
        }
    }
}

impl WhatIfOptions {
    /// The conditions after the normal run, in order.
    pub fn conditions(&self) -> Vec<Condition> {
        let mut c = vec![Condition::Memory];
        if self.caps_target.is_ok() {
            c.push(Condition::Capped {
                id: "iops-capped".into(),
                caps: IoCaps {
                    riops: Some(self.cap_iops),
                    wiops: Some(self.cap_iops),
                    ..Default::default()
                },
            });
            c.push(Condition::Capped {
                id: "bandwidth-capped".into(),
                caps: IoCaps {
                    rbps: Some(self.cap_mib_s * MIB),
                    wbps: Some(self.cap_mib_s * MIB),
                    ..Default::default()
                },
            });
            if let Some((label, caps)) = &self.like {
                c.push(Condition::Capped {
                    id: format!("like:{label}"),
                    caps: *caps,
                });
            }
        }
        if let Some(only) = &self.only {
            c.retain(|c| {
                let id = c.id().split(':').next().unwrap_or_default();
                only.iter().any(|o| o == id)
            });
        }
        c
    }
}

/// Check, before any step runs, that the experiments can run: root (for the tmpfs mount and
/// the cgroups) and a block-I/O hierarchy this process may write. A usage error (exit 2)
/// names what is needed. The devices under `dir` are resolved here too; a filesystem caps
/// cannot reach is not an error (the memory condition still runs) and is returned as the
/// reason in `caps_target`.
pub fn preflight(dir: &Path, cgroup_fs: &Path) -> anyhow::Result<Result<CapTarget, String>> {
    const NEEDS: &str = "run it as root (`sudo -E cargo diskbench steps --what-if`) or set the \
                         GitHub action's `what-if` input";
    // SAFETY: geteuid has no preconditions and no side effects.
    if unsafe { libc::geteuid() } != 0 {
        return Err(usage(format!(
            "--what-if/--like need root: they create cgroups to cap the disk and mount a \
             private tmpfs; {NEEDS}"
        )));
    }
    one_run_at_a_time()?;
    let hierarchy = Hierarchy::detect(cgroup_fs).map_err(|why| {
        usage(format!(
            "--what-if/--like: {why}; {NEEDS} on a kernel with it"
        ))
    })?;
    hierarchy
        .check_writable()
        .map_err(|why| usage(format!("--what-if/--like: {why}; {NEEDS}")))?;
    for name in cgroup::sweep_stale(&hierarchy, Path::new("/proc")) {
        eprintln!("removed the cgroup {name} a killed run left behind");
    }
    sweep_stale_mounts();
    Ok(devices_under(dir).map(|devices| CapTarget { hierarchy, devices }))
}

/// Where the machine-wide what-if lock lives (root only, like the experiments).
const LOCK_PATH: &str = "/run/cargo-diskbench-what-if.lock";

/// Only one what-if or `--like` run at a time on a machine: two would cap each other's work
/// (a daemon moved into one run's cgroup looks to the other like the daemon's own cgroup), and
/// each run's "nothing of ours is left" check would see the other's groups. The lock is taken
/// here, waited for when another run holds it, and held until this process exits (the kernel
/// drops it then, also after SIGKILL).
fn one_run_at_a_time() -> anyhow::Result<()> {
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

/// The disks under `dir` (through partitions, device-mapper, md and loop), or why caps
/// cannot reach it (tmpfs, a network filesystem, ...).
pub fn devices_under(dir: &Path) -> Result<Vec<DevNum>, String> {
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
pub fn cap_daemon(
    group: &mut CapGroup,
    target: &CapTarget,
    caps: &IoCaps,
    commands: &[&str],
) -> Vec<String> {
    let mut moved = Vec::new();
    let mut in_place: Vec<String> = Vec::new();
    let mut failed = Vec::new();
    let Ok(procs) = super::docker_build::processes_named(commands) else {
        return vec!["cannot list /proc: the docker daemon was not capped".into()];
    };
    for (pid, comm) in procs {
        let Some(cg) = target.hierarchy.cgroup_of(Path::new("/proc"), pid) else {
            continue;
        };
        let result = if cg == "/" {
            group
                .adopt(pid)
                .map(|_| moved.push(format!("{comm} ({pid})")))
        } else if in_place.contains(&cg) {
            Ok(())
        } else {
            match group.cap_in_place(&cg, &target.devices, caps) {
                Ok(()) => {
                    in_place.push(cg.clone());
                    Ok(())
                }
                // No io controller in that cgroup (v2 without it delegated there): move the
                // process in instead, as for a daemon in the root.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => group
                    .adopt(pid)
                    .map(|_| moved.push(format!("{comm} ({pid})"))),
                Err(e) => Err(e),
            }
        };
        if let Err(e) = result {
            failed.push(format!("{comm} ({pid}): {e}"));
        }
    }
    let mut notes = Vec::new();
    if !moved.is_empty() {
        notes.push(format!(
            "the docker daemon's processes {} were moved into the capped cgroup for the run \
             and back afterwards",
            moved.join(", ")
        ));
    }
    if !in_place.is_empty() {
        notes.push(format!(
            "the docker daemon's cgroup(s) {} got the same caps for the run; their own limits \
             were written back afterwards",
            in_place.join(", ")
        ));
    }
    if moved.is_empty() && in_place.is_empty() {
        notes.push("no local docker daemon process found: only the client was capped".into());
    }
    notes.extend(failed.into_iter().map(|f| format!("could not cap {f}")));
    notes
}

/// Sync every regular file under `dir` and drop its pages from the page cache, so the run
/// reads them from the disk (under the caps). Best effort: a file that cannot be opened is
/// left as it is.
pub fn evict_from_cache(dir: &Path) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let Ok(kind) = e.file_type() else { continue };
        if kind.is_dir() {
            evict_from_cache(&e.path());
        } else if kind.is_file()
            && let Ok(f) = fs::File::open(e.path())
        {
            use std::os::fd::AsRawFd as _;
            let _ = f.sync_data();
            // SAFETY: a valid fd we own; fadvise only changes the page cache.
            unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
        }
    }
}

/// A private tmpfs mounted over a step's work folder; unmounted when dropped (an error,
/// Ctrl-C, a panic). A run killed with SIGKILL leaves it: [`sweep_stale_mounts`] removes it
/// on the next `--what-if` run (its source names the dead pid).
#[derive(Debug)]
pub struct MemoryMount {
    path: PathBuf,
    mounted: bool,
}

impl MemoryMount {
    pub fn mount(path: &Path) -> anyhow::Result<MemoryMount> {
        let source = CString::new(format!("{MEMORY_MOUNT_SOURCE}{}", std::process::id()))?;
        let target = CString::new(path.as_os_str().as_bytes())?;
        let fstype = CString::new("tmpfs")?;
        let data = CString::new("mode=0700")?;
        // SAFETY: NUL-terminated strings we own; mount has no memory effects on us.
        let rc = unsafe {
            libc::mount(
                source.as_ptr(),
                target.as_ptr(),
                fstype.as_ptr(),
                libc::MS_NOSUID | libc::MS_NODEV,
                data.as_ptr().cast(),
            )
        };
        if rc != 0 {
            anyhow::bail!(
                "cannot mount a tmpfs on {}: {}",
                path.display(),
                std::io::Error::last_os_error()
            );
        }
        let guard = MemoryMount {
            path: path.to_path_buf(),
            mounted: true,
        };
        // Private: the mount and its unmount do not propagate to other mount namespaces.
        // SAFETY: as above; only the propagation flag changes.
        unsafe {
            libc::mount(
                std::ptr::null(),
                target.as_ptr(),
                std::ptr::null(),
                libc::MS_PRIVATE,
                std::ptr::null(),
            )
        };
        Ok(guard)
    }

    /// Unmount now, reporting a failure.
    pub fn unmount(mut self) -> Result<(), String> {
        self.unmount_inner()
    }

    fn unmount_inner(&mut self) -> Result<(), String> {
        if !self.mounted {
            return Ok(());
        }
        self.mounted = false;
        unmount(&self.path)
    }
}

impl Drop for MemoryMount {
    fn drop(&mut self) {
        if let Err(e) = self.unmount_inner() {
            eprintln!("warning: {e}");
        }
    }
}

fn unmount(path: &Path) -> Result<(), String> {
    let target = CString::new(path.as_os_str().as_bytes()).map_err(|e| e.to_string())?;
    // SAFETY: a NUL-terminated path; umount2 has no memory effects on us.
    if unsafe { libc::umount2(target.as_ptr(), 0) } == 0 {
        return Ok(());
    }
    // Busy (a straggler holds a file): detach, the memory goes when the last user does.
    // SAFETY: as above.
    if unsafe { libc::umount2(target.as_ptr(), libc::MNT_DETACH) } == 0 {
        return Ok(());
    }
    Err(format!(
        "could not unmount the tmpfs on {}: {}",
        path.display(),
        std::io::Error::last_os_error()
    ))
}

/// The memory condition's tmpfs mounts in this mount namespace: (mount point, owner pid).
pub fn memory_mounts() -> Vec<(String, u32)> {
    let text = fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    let (mounts, _) = crate::machine::mountinfo::parse(&text);
    mounts
        .into_iter()
        .filter(|m| m.fstype == "tmpfs")
        .filter_map(|m| {
            let pid = m.source.strip_prefix(MEMORY_MOUNT_SOURCE)?.parse().ok()?;
            Some((m.mount_point, pid))
        })
        .collect()
}

/// Unmount what a killed run's memory condition left (its pid no longer runs).
pub fn sweep_stale_mounts() {
    for (point, pid) in memory_mounts() {
        if !Path::new(&format!("/proc/{pid}")).exists() && unmount(Path::new(&point)).is_ok() {
            eprintln!("unmounted the tmpfs {point} a killed run left behind");
            let _ = fs::remove_dir(&point);
        }
    }
}

/// The median of `runs` by wall time (the upper one of an even count), with the spread.
pub fn summarise(id: &str, caps: Option<IoCaps>, runs: &[Run]) -> WhatIfCondition {
    let mut order: Vec<usize> = (0..runs.len()).collect();
    order.sort_by(|a, b| runs[*a].wall_s.total_cmp(&runs[*b].wall_s));
    let Some(&mid) = order.get(runs.len() / 2) else {
        return WhatIfCondition {
            id: id.into(),
            caps,
            status: StepStatus::Skipped,
            ..Default::default()
        };
    };
    let m = &runs[mid];
    let walls: Vec<f64> = runs.iter().map(|r| r.wall_s).collect();
    let (lo, hi) = walls.iter().fold((f64::INFINITY, 0.0f64), |(lo, hi), w| {
        (lo.min(*w), hi.max(*w))
    });
    let mut notes: Vec<String> = Vec::new();
    for r in runs {
        for n in &r.notes {
            if !notes.contains(n) {
                notes.push(n.clone());
            }
        }
    }
    WhatIfCondition {
        id: id.into(),
        caps,
        wall_s: m.wall_s,
        user_s: m.user_s,
        sys_s: m.sys_s,
        cpu_wait_s: m.cpu_wait_s,
        runs: runs.len() as u32,
        wall_runs_s: walls,
        spread_pct: if m.wall_s > 0.0 && runs.len() > 1 {
            (hi - lo) / m.wall_s * 100.0
        } else {
            0.0
        },
        io: m.io.clone(),
        cgroup_io: m.cgroup_io,
        status: if runs.iter().all(|r| r.ok) {
            StepStatus::Ok
        } else {
            StepStatus::Failed
        },
        ratio: None,
        notes,
    }
}

/// One run of a step under one condition.
#[derive(Clone, Debug, Default)]
pub struct Run {
    pub wall_s: f64,
    pub user_s: f64,
    pub sys_s: f64,
    pub cpu_wait_s: Option<f64>,
    pub ok: bool,
    pub io: Option<record::StepIo>,
    pub cgroup_io: Option<record::CgroupIo>,
    pub notes: Vec<String>,
}

fn caps_text(caps: &IoCaps) -> String {
    let mut parts = Vec::new();
    match (caps.riops, caps.wiops) {
        (Some(r), Some(w)) if r == w => parts.push(format!("{r} I/Os per second")),
        (r, w) => {
            if let Some(r) = r {
                parts.push(format!("{r} read I/Os per second"));
            }
            if let Some(w) = w {
                parts.push(format!("{w} write I/Os per second"));
            }
        }
    }
    let mib = |b: u64| b as f64 / MIB as f64;
    match (caps.rbps, caps.wbps) {
        (Some(r), Some(w)) if r == w => parts.push(format!("{:.0} MiB/s", mib(r))),
        (r, w) => {
            if let Some(r) = r {
                parts.push(format!("{:.0} MiB/s reads", mib(r)));
            }
            if let Some(w) = w {
                parts.push(format!("{:.0} MiB/s writes", mib(w)));
            }
        }
    }
    parts.join(" and ")
}

/// The most time a cap can have added to a run: the I/Os and bytes the capped cgroup passed,
/// each at the capped rate, one after the other. A cap that let 26 reads through at 1000 per
/// second cost at most 26 ms, however much slower the run happened to be. None without the
/// cgroup's counters.
pub fn cap_cost_s(c: &WhatIfCondition) -> Option<f64> {
    let (caps, io) = (c.caps.as_ref()?, c.cgroup_io.as_ref()?);
    let part =
        |n: u64, rate: Option<u64>| rate.filter(|r| *r > 0).map_or(0.0, |r| n as f64 / r as f64);
    Some(
        part(io.read_ios, caps.riops)
            + part(io.write_ios, caps.wiops)
            + part(io.read_bytes, caps.rbps)
            + part(io.write_bytes, caps.wbps),
    )
}

/// The verdict by experiment: which cap slowed the step beyond the noise, and by how much.
/// Sets each condition's `ratio` against the baseline.
pub fn judge(baseline: &WhatIfCondition, conditions: &mut [WhatIfCondition]) -> (Bound, String) {
    if baseline.status != StepStatus::Ok || baseline.wall_s <= 0.0 {
        return (
            Bound::Unknown,
            "The normal run failed, so there is nothing to compare with.".into(),
        );
    }
    for c in conditions.iter_mut() {
        c.ratio = (c.status == StepStatus::Ok && c.runs > 0).then(|| c.wall_s / baseline.wall_s);
    }
    let noise = (baseline.spread_pct / 100.0).max(NOISE_FLOOR);
    let cap_explains = |c: &WhatIfCondition| {
        cap_cost_s(c).is_none_or(|cost| cost >= MIN_CAP_COST_SHARE * (c.wall_s - baseline.wall_s))
    };
    let slowed = |c: &WhatIfCondition| {
        c.ratio
            .is_some_and(|r| r > 1.0 + noise && c.wall_s - baseline.wall_s > MIN_EFFECT_S)
            && cap_explains(c)
    };
    let find = |id: &str| conditions.iter().find(|c| c.id == id);
    let describe = |c: &WhatIfCondition| -> String {
        let cost = match cap_cost_s(c) {
            Some(cost) if !cap_explains(c) => format!(
                ", but the I/O it let through could cost at most {cost:.2} s, so the rest is \
                 the machine's noise"
            ),
            _ => String::new(),
        };
        match c.ratio {
            Some(r) => format!(
                "at {} it took {:.2} s ({r:.1}x{cost})",
                c.caps.as_ref().map(caps_text).unwrap_or_default(),
                c.wall_s
            ),
            None => format!("{} failed", c.id),
        }
    };
    let mut parts = Vec::new();
    let iops = find("iops-capped");
    let bw = find("bandwidth-capped");
    if let Some(c) = iops {
        parts.push(describe(c));
    }
    if let Some(c) = bw {
        parts.push(describe(c));
    }
    let memory = find("memory");
    let memory_saved = memory.and_then(|m| m.ratio).map(|r| 1.0 - r);
    if let (Some(m), Some(saved)) = (memory, memory_saved) {
        parts.push(format!(
            "on memory {:.2} s ({:.0}% {})",
            m.wall_s,
            saved.abs() * 100.0,
            if saved >= 0.0 { "less" } else { "more" }
        ));
    }
    let figures = format!(
        "Normal run {:.2} s{}; {}",
        baseline.wall_s,
        if baseline.runs > 1 {
            format!(
                " (median of {}, spread {:.0}%)",
                baseline.runs, baseline.spread_pct
            )
        } else {
            String::new()
        },
        parts.join("; ")
    );
    let i = iops.filter(|c| slowed(c)).and_then(|c| c.ratio);
    let b = bw.filter(|c| slowed(c)).and_then(|c| c.ratio);
    // On a shared machine a compile waits for a CPU as much as it runs on one: both are the
    // CPU setting the pace (the run-queue wait is capped at the wall time).
    let cpu_wait_s = baseline.cpu_wait_s.unwrap_or(0.0).min(baseline.wall_s);
    let cpu_share = (baseline.user_s + baseline.sys_s + cpu_wait_s) / baseline.wall_s;
    let (bound, tail) = match (i, b) {
        (Some(ri), Some(rb)) if ri - 1.0 >= DOMINANCE * (rb - 1.0) => (
            Bound::Latency,
            "both caps slowed it, the I/O-rate cap far more: it waits on the latency of many \
             small operations"
                .to_string(),
        ),
        (Some(ri), Some(rb)) if rb - 1.0 >= DOMINANCE * (ri - 1.0) => (
            Bound::Bandwidth,
            "both caps slowed it, the bandwidth cap far more: it waits on moving bytes".into(),
        ),
        (Some(_), Some(_)) => (
            Bound::Mixed,
            "both caps slowed it comparably: it waits on operations and on bytes".into(),
        ),
        (Some(_), None) => (
            Bound::Latency,
            "only the I/O-rate cap slowed it: it waits on the latency of many small operations"
                .into(),
        ),
        (None, Some(_)) => (
            Bound::Bandwidth,
            "only the bandwidth cap slowed it: it waits on moving bytes".into(),
        ),
        (None, None) if iops.is_none() && bw.is_none() => (
            Bound::Unknown,
            "no capped run, so the experiment cannot say what kind of disk wait it is".into(),
        ),
        (None, None) if memory_saved.is_some_and(|s| s > noise) => (
            Bound::Unknown,
            format!(
                "neither cap slowed it beyond the noise ({:.0}%), yet memory saved time: the \
                 disk matters but the caps are looser than what this disk already does",
                noise * 100.0
            ),
        ),
        (None, None) if cpu_share >= CPU_SHARE => (
            Bound::Cpu,
            format!(
                "neither cap slowed it beyond the noise ({:.0}%) and it kept {:.1} cores busy \
                 or waited for one: the disk does not set its pace",
                noise * 100.0,
                cpu_share
            ),
        ),
        (None, None) => (
            Bound::Unknown,
            format!(
                "neither cap slowed it beyond the noise ({:.0}%) and it ran on or waited for a \
                 CPU only {:.0}% of the time: it waits on something else",
                noise * 100.0,
                cpu_share * 100.0
            ),
        ),
    };
    (bound, format!("{figures}: {tail}."))
}

/// The caps that make this disk look like `record`'s: reads and writes per second from its
/// rand-read/rand-write IOPS, bytes per second from its seq-read/seq-write MiB/s.
pub fn caps_like(record: &Record) -> Result<IoCaps, String> {
    use record::ColumnId;
    let fig = |c: ColumnId| {
        record
            .test(c)
            .and_then(|t| t.headline())
            .filter(|v| *v > 0.0)
    };
    let caps = IoCaps {
        riops: fig(ColumnId::RandRead).map(|v| v.round() as u64),
        wiops: fig(ColumnId::RandWrite).map(|v| v.round() as u64),
        rbps: fig(ColumnId::SeqRead).map(|v| (v * MIB as f64).round() as u64),
        wbps: fig(ColumnId::SeqWrite).map(|v| (v * MIB as f64).round() as u64),
    };
    if caps.is_empty() {
        return Err(format!(
            "the record of {} has none of seq-read, seq-write, rand-read, rand-write",
            record.runner.label
        ));
    }
    Ok(caps)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cond(id: &str, wall_s: f64) -> WhatIfCondition {
        WhatIfCondition {
            id: id.into(),
            caps: Some(IoCaps {
                riops: Some(1000),
                wiops: Some(1000),
                ..Default::default()
            }),
            wall_s,
            runs: 1,
            ..Default::default()
        }
    }

    fn base(wall_s: f64, cpu_s: f64, spread_pct: f64) -> WhatIfCondition {
        WhatIfCondition {
            id: "baseline".into(),
            wall_s,
            user_s: cpu_s,
            runs: 3,
            spread_pct,
            ..Default::default()
        }
    }

    #[test]
    fn the_cap_that_slows_the_step_names_its_bound() {
        let b = base(0.37, 0.2, 5.0);
        let mut c = vec![
            cond("memory", 0.12),
            cond("iops-capped", 5.78),
            cond("bandwidth-capped", 0.41),
        ];
        let (bound, why) = judge(&b, &mut c);
        assert_eq!(bound, Bound::Latency, "{why}");
        assert!(why.contains("15.6x"), "{why}");
        assert!(why.contains("only the I/O-rate cap"), "{why}");
        let mut c = vec![cond("iops-capped", 0.5), cond("bandwidth-capped", 4.0)];
        assert_eq!(judge(&b, &mut c).0, Bound::Bandwidth);
        let mut c = vec![cond("iops-capped", 2.0), cond("bandwidth-capped", 2.2)];
        assert_eq!(judge(&b, &mut c).0, Bound::Mixed);
        let mut c = vec![cond("iops-capped", 10.0), cond("bandwidth-capped", 1.0)];
        assert_eq!(judge(&b, &mut c).0, Bound::Latency);
    }

    #[test]
    fn changes_within_the_noise_are_no_effect() {
        // A compile: 10 s, 18 s of CPU, runs spread 30%: a 1.28x capped run is noise.
        let b = base(10.0, 18.0, 30.0);
        let mut c = vec![cond("iops-capped", 12.8), cond("bandwidth-capped", 9.5)];
        let (bound, why) = judge(&b, &mut c);
        assert_eq!(bound, Bound::Cpu, "{why}");
        assert!(why.contains("noise (30%)"), "{why}");
        // The same figures for an idle step: something else.
        let mut c = vec![cond("iops-capped", 12.8), cond("bandwidth-capped", 9.5)];
        assert_eq!(judge(&base(10.0, 0.5, 30.0), &mut c).0, Bound::Unknown);
        // Regression: a compile on a crowded machine, 1 s on a CPU and 3 s waiting for one
        // in 4.3 s, was judged "something else".
        let mut crowded = base(4.26, 1.0, 15.0);
        crowded.cpu_wait_s = Some(3.0);
        let mut c = vec![cond("iops-capped", 4.0), cond("bandwidth-capped", 5.0)];
        assert_eq!(judge(&crowded, &mut c).0, Bound::Cpu);
        // A build 40% slower under the caps on a busy machine, whose cgroup let 26 reads
        // through (26 ms at 1000 per second): noise, not the cap.
        let b = base(1.6, 1.4, 5.0);
        let mut slow = cond("iops-capped", 2.3);
        slow.cgroup_io = Some(record::CgroupIo {
            read_ios: 26,
            read_bytes: 184_320,
            ..Default::default()
        });
        let mut c = vec![slow.clone()];
        let (bound, why) = judge(&b, &mut c);
        assert_eq!(bound, Bound::Cpu, "{why}");
        assert!(why.contains("at most 0.03 s"), "{why}");
        // The same slowdown with 1700 writes through the cap is the cap's.
        slow.cgroup_io = Some(record::CgroupIo {
            write_ios: 1700,
            ..Default::default()
        });
        assert_eq!(judge(&b, &mut [slow]).0, Bound::Latency);
        // A tiny step doubling by 20 ms is no effect either.
        let mut c = vec![cond("iops-capped", 0.04)];
        assert_eq!(judge(&base(0.02, 0.02, 0.0), &mut c).0, Bound::Cpu);
    }

    #[test]
    fn failed_runs_and_missing_caps_give_no_kind() {
        let mut failed = base(1.0, 0.1, 0.0);
        failed.status = StepStatus::Failed;
        assert_eq!(judge(&failed, &mut []).0, Bound::Unknown);
        let mut c = vec![cond("memory", 0.2)];
        let (bound, why) = judge(&base(1.0, 0.1, 0.0), &mut c);
        assert_eq!(bound, Bound::Unknown);
        assert!(why.contains("no capped run"), "{why}");
        let mut f = cond("iops-capped", 3.0);
        f.status = StepStatus::Failed;
        let mut c = vec![f];
        let (_, why) = judge(&base(1.0, 0.1, 0.0), &mut c);
        assert!(why.contains("iops-capped failed"), "{why}");
        assert_eq!(c[0].ratio, None);
    }

    #[test]
    fn summary_takes_the_median_run_and_the_spread() {
        let run = |w: f64| Run {
            wall_s: w,
            ok: true,
            ..Default::default()
        };
        let s = summarise("baseline", None, &[run(2.0), run(1.0), run(1.5)]);
        assert_eq!(s.wall_s, 1.5);
        assert!((s.spread_pct - 100.0 / 1.5).abs() < 1e-9);
        assert_eq!(s.runs, 3);
        assert_eq!(s.status, StepStatus::Ok);
        assert_eq!(summarise("x", None, &[run(1.0)]).spread_pct, 0.0);
    }
}

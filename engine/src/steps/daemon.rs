//! A local daemon that does part of a step's work (the docker daemon for `docker-build`): its
//! processes, found by command name, sampled before and after the step so their CPU and I/O
//! count with the step's, and put under the same caps in a what-if run
//! ([`crate::experiments::what_if::caps::cap_daemon`]).

use std::collections::HashMap;
use std::fs;

use super::probe;
use record::StepIo;

/// The processes that do a daemon's work, by the start of their command names.
#[derive(Clone, Copy, Debug)]
pub(crate) struct LocalDaemon {
    pub commands: &'static [&'static str],
    /// Whether this process sees them (not when the client talks to a remote daemon).
    pub visible: bool,
}

impl LocalDaemon {
    /// CPU and I/O counters of the daemon's processes now; None when they are not visible.
    pub(crate) fn snapshot(&self) -> Option<DaemonSnapshot> {
        if !self.visible {
            return None;
        }
        let mut snap = DaemonSnapshot::default();
        for (pid, comm) in processes_named(self.commands).ok()? {
            let (Ok(io), Some((user, sys))) = (
                probe::read_proc_io(&pid.to_string()),
                probe::read_proc_stat(&pid.to_string()).map(|s| (s.utime_ticks, s.stime_ticks)),
            ) else {
                continue;
            };
            snap.procs.insert(pid, (comm, user, sys, io));
        }
        Some(snap)
    }
}

/// CPU and I/O counters of the daemon's processes at one moment.
#[derive(Clone, Debug, Default)]
pub(crate) struct DaemonSnapshot {
    /// pid -> (command, cpu ticks user, cpu ticks sys, io)
    procs: HashMap<u32, (String, u64, u64, StepIo)>,
}

/// Every process whose command name starts with one of `commands`, as (pid, name): the one
/// scan of /proc that finds a daemon's processes, for sampling them and for capping them.
pub(crate) fn processes_named(commands: &[&str]) -> std::io::Result<Vec<(u32, String)>> {
    let mut found = Vec::new();
    for entry in fs::read_dir("/proc")?.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(comm) = fs::read_to_string(entry.path().join("comm")) else {
            continue;
        };
        let comm = comm.trim();
        if commands.iter().any(|c| comm.starts_with(c)) {
            found.push((pid, comm.to_string()));
        }
    }
    Ok(found)
}

/// What the daemon's processes did between two snapshots.
#[derive(Clone, Debug, Default)]
pub(crate) struct DaemonUsage {
    pub user_s: f64,
    pub sys_s: f64,
    pub io: StepIo,
    pub commands: Vec<String>,
}

/// What the daemon did between `before` and `after`; None when it did nothing seen (no
/// process of it found).
pub(crate) fn usage(before: &DaemonSnapshot, after: &DaemonSnapshot) -> Option<DaemonUsage> {
    let tick = probe::clock_ticks_per_s();
    let mut usage = DaemonUsage::default();
    for (pid, (comm, user, sys, io)) in &after.procs {
        // A process born during the step counts from zero.
        let zero = (String::new(), 0, 0, StepIo::default());
        let (_, user0, sys0, io0) = before.procs.get(pid).unwrap_or(&zero);
        usage.user_s += user.saturating_sub(*user0) as f64 / tick;
        usage.sys_s += sys.saturating_sub(*sys0) as f64 / tick;
        usage.io = probe::io_add(&usage.io, &probe::io_delta(io0, io));
        if !usage.commands.contains(comm) {
            usage.commands.push(comm.clone());
        }
    }
    usage.commands.sort();
    (!usage.commands.is_empty()).then_some(usage)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_counts_what_grew_and_a_process_born_meanwhile_from_zero() {
        let io = |wchar| StepIo {
            wchar,
            ..Default::default()
        };
        let tick = probe::clock_ticks_per_s();
        let before = DaemonSnapshot {
            procs: HashMap::from([(10, ("dockerd".to_string(), 100, 50, io(1000)))]),
        };
        let after = DaemonSnapshot {
            procs: HashMap::from([
                (10, ("dockerd".to_string(), 100 + tick as u64, 50, io(1500))),
                (11, ("containerd".to_string(), 0, tick as u64, io(200))),
            ]),
        };
        let u = usage(&before, &after).unwrap();
        assert!((u.user_s - 1.0).abs() < 1e-9, "{u:?}");
        assert!((u.sys_s - 1.0).abs() < 1e-9, "{u:?}");
        assert_eq!(u.io.wchar, 700);
        assert_eq!(u.commands, ["containerd", "dockerd"]);
        assert!(usage(&before, &DaemonSnapshot::default()).is_none());
        let hidden = LocalDaemon {
            commands: &["dockerd"],
            visible: false,
        };
        assert!(hidden.snapshot().is_none());
    }
}

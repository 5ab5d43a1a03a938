//! What a step waited on, read from the kernel: `/proc/<pid>/io`, `/proc/pressure/io`,
//! `/proc/<pid>/stat` (CPU ticks, block-I/O delay) and `wait4`'s rusage.
//!
//! Checked on Linux 6.18: when a process reaps a child, the kernel folds the child's I/O
//! counters (and everything the child had reaped) into the parent's signal-wide counters, so
//! `/proc/<child>/io` read while the child is a zombie (after `waitid(WNOWAIT)`, before the
//! reap) covers the child's whole reaped tree. Reading the child rather than `/proc/self/io`
//! keeps this process's own threads (progress bars, a test harness) out of the figures.

use std::path::Path;

use record::StepIo;

/// Parse the text of a `/proc/<pid>/io` file.
pub(crate) fn parse_proc_io(text: &str) -> Option<StepIo> {
    let mut io = StepIo::default();
    let mut seen = 0;
    for line in text.lines() {
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let Ok(v) = value.trim().parse::<u64>() else {
            continue;
        };
        let slot = match key.trim() {
            "rchar" => &mut io.rchar,
            "wchar" => &mut io.wchar,
            "syscr" => &mut io.syscr,
            "syscw" => &mut io.syscw,
            "read_bytes" => &mut io.read_bytes,
            "write_bytes" => &mut io.write_bytes,
            "cancelled_write_bytes" => &mut io.cancelled_write_bytes,
            _ => continue,
        };
        *slot = v;
        seen += 1;
    }
    (seen >= 6).then_some(io)
}

/// `/proc/<pid>/io` of a process (`"self"` or a pid).
pub(crate) fn read_proc_io(pid: &str) -> Result<StepIo, String> {
    let path = format!("/proc/{pid}/io");
    let text = std::fs::read_to_string(&path).map_err(|e| format!("cannot read {path}: {e}"))?;
    parse_proc_io(&text).ok_or_else(|| format!("{path}: unexpected format"))
}

/// `after - before`, field by field (saturating: counters never go back, but a pid can be
/// reused between two reads).
pub(crate) fn io_delta(before: &StepIo, after: &StepIo) -> StepIo {
    StepIo {
        read_bytes: after.read_bytes.saturating_sub(before.read_bytes),
        write_bytes: after.write_bytes.saturating_sub(before.write_bytes),
        syscr: after.syscr.saturating_sub(before.syscr),
        syscw: after.syscw.saturating_sub(before.syscw),
        rchar: after.rchar.saturating_sub(before.rchar),
        wchar: after.wchar.saturating_sub(before.wchar),
        cancelled_write_bytes: after
            .cancelled_write_bytes
            .saturating_sub(before.cancelled_write_bytes),
    }
}

pub(crate) fn io_add(a: &StepIo, b: &StepIo) -> StepIo {
    StepIo {
        read_bytes: a.read_bytes + b.read_bytes,
        write_bytes: a.write_bytes + b.write_bytes,
        syscr: a.syscr + b.syscr,
        syscw: a.syscw + b.syscw,
        rchar: a.rchar + b.rchar,
        wchar: a.wchar + b.wchar,
        cancelled_write_bytes: a.cancelled_write_bytes + b.cancelled_write_bytes,
    }
}

/// Machine-wide I/O pressure: cumulative stall totals, microseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct Pressure {
    /// Time at least one task was stalled on I/O.
    pub some_us: u64,
    /// Time all non-idle tasks were stalled on I/O at once.
    pub full_us: Option<u64>,
}

pub(crate) const PRESSURE_IO: &str = "/proc/pressure/io";

pub(crate) fn parse_pressure(text: &str) -> Option<Pressure> {
    let total = |prefix: &str| -> Option<u64> {
        let line = text.lines().find(|l| l.starts_with(prefix))?;
        line.split_whitespace()
            .find_map(|w| w.strip_prefix("total="))?
            .parse()
            .ok()
    };
    Some(Pressure {
        some_us: total("some ")?,
        full_us: total("full "),
    })
}

pub(crate) fn read_pressure() -> Result<Pressure, String> {
    let text = std::fs::read_to_string(PRESSURE_IO).map_err(|e| {
        format!("io pressure: cannot read {PRESSURE_IO}: {e} (kernel without CONFIG_PSI, or psi=0)")
    })?;
    parse_pressure(&text).ok_or_else(|| format!("io pressure: {PRESSURE_IO}: unexpected format"))
}

/// Fields of `/proc/<pid>/stat` the steps use.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct ProcStat {
    /// User and system CPU, clock ticks (the process's threads, not its children).
    pub utime_ticks: u64,
    pub stime_ticks: u64,
    /// Field 42: aggregated block-I/O delay, clock ticks (0 unless delay accounting is on).
    pub blkio_ticks: u64,
}

pub(crate) fn parse_proc_stat(text: &str) -> Option<ProcStat> {
    // The command name (field 2) may hold spaces and parentheses: split after the last ')'.
    let rest = &text[text.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // `fields[0]` is field 3 (state), so field N is `fields[N - 3]`.
    let field = |n: usize| fields.get(n - 3).and_then(|f| f.parse::<u64>().ok());
    Some(ProcStat {
        utime_ticks: field(14)?,
        stime_ticks: field(15)?,
        blkio_ticks: field(42).unwrap_or(0),
    })
}

pub(crate) fn read_proc_stat(pid: &str) -> Option<ProcStat> {
    parse_proc_stat(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

pub(crate) fn clock_ticks_per_s() -> f64 {
    // SAFETY: sysconf has no memory effects.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 { t as f64 } else { 100.0 }
}

/// Whether per-task block-I/O delay accounting is on, and if not, why.
pub(crate) fn delay_accounting() -> Result<(), String> {
    let path = Path::new("/proc/sys/kernel/task_delayacct");
    match std::fs::read_to_string(path) {
        Ok(v) if v.trim() == "1" => Ok(()),
        Ok(_) => Err(
            "block-I/O delay: delay accounting is off (kernel.task_delayacct = 0; \
                      `sysctl kernel.task_delayacct=1` as root before the run turns it on)"
                .into(),
        ),
        Err(e) => Err(format!(
            "block-I/O delay: cannot read {}: {e} (kernel without CONFIG_TASK_DELAY_ACCT)",
            path.display()
        )),
    }
}

/// Run-queue delay of a process group's tasks, sampled: per task the latest
/// `/proc/<pid>/task/<tid>/schedstat` (on-CPU ns, run-queue wait ns). The kernel does not fold
/// these into the parent on reap, so they are sampled while the step runs: a process that
/// lives less than one scan interval is missed, and a process's wait after its last sample is
/// lost. Processes once found are therefore re-read more often ([`Self::sample_members`])
/// than `/proc` is scanned for new ones ([`Self::sample`]), which costs about a millisecond
/// of CPU per hundred processes.
#[derive(Debug, Default)]
pub(crate) struct RunQueueSampler {
    pgid: i32,
    wait_ns: std::collections::HashMap<u64, u64>,
    /// Processes of the group seen by a scan and not yet gone.
    members: std::collections::BTreeSet<u32>,
}

impl RunQueueSampler {
    pub(crate) fn new(pgid: i32) -> Self {
        RunQueueSampler {
            pgid,
            ..Default::default()
        }
    }

    /// Re-read the processes found by earlier scans; forget those gone or no longer in the
    /// group (a reused pid is checked against the group before its tasks are read).
    pub(crate) fn sample_members(&mut self) {
        let members = std::mem::take(&mut self.members);
        for pid in members {
            let pid_s = pid.to_string();
            let in_group = std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|stat| parse_pgrp(&stat))
                == Some(self.pgid);
            if in_group {
                self.sample_process(&pid_s);
                self.members.insert(pid);
            }
        }
    }

    /// Read every task of the group once.
    pub(crate) fn sample(&mut self) {
        let Ok(procs) = std::fs::read_dir("/proc") else {
            return;
        };
        for entry in procs.flatten() {
            let name = entry.file_name();
            let Some(pid) = name
                .to_str()
                .filter(|s| s.bytes().all(|b| b.is_ascii_digit()))
            else {
                continue;
            };
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                continue;
            };
            if parse_pgrp(&stat) != Some(self.pgid) {
                continue;
            }
            if let Ok(n) = pid.parse() {
                self.members.insert(n);
            }
            self.sample_process(pid);
        }
    }

    /// Read one process's tasks (e.g. the zombie leader just before it is reaped).
    pub(crate) fn sample_process(&mut self, pid: &str) {
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
            return;
        };
        for task in tasks.flatten() {
            let Some(tid) = task
                .file_name()
                .to_str()
                .and_then(|t| t.parse::<u64>().ok())
            else {
                continue;
            };
            if let Some(wait) = std::fs::read_to_string(task.path().join("schedstat"))
                .ok()
                .and_then(|t| t.split_whitespace().nth(1)?.parse::<u64>().ok())
            {
                self.wait_ns.insert(tid, wait);
            }
        }
    }

    /// Total run-queue wait seen, seconds.
    pub(crate) fn total_s(&self) -> f64 {
        self.wait_ns.values().sum::<u64>() as f64 / 1e9
    }
}

/// Field 5 of `/proc/<pid>/stat`: the process group.
pub(crate) fn parse_pgrp(stat: &str) -> Option<i32> {
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(2)?.parse().ok()
}

/// Resource use of a reaped child and everything it reaped, from `wait4`.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct Rusage {
    pub user_s: f64,
    pub sys_s: f64,
    pub max_rss_kib: u64,
    pub voluntary_switches: u64,
    pub involuntary_switches: u64,
}

pub(crate) fn rusage_from(ru: &libc::rusage) -> Rusage {
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    Rusage {
        user_s: secs(ru.ru_utime),
        sys_s: secs(ru.ru_stime),
        max_rss_kib: ru.ru_maxrss.max(0) as u64,
        voluntary_switches: ru.ru_nvcsw.max(0) as u64,
        involuntary_switches: ru.ru_nivcsw.max(0) as u64,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_proc_io() {
        let text = "rchar: 314\nwchar: 15728788\nsyscr: 6\nsyscw: 15\nread_bytes: 0\n\
                    write_bytes: 15761408\ncancelled_write_bytes: 4096\n";
        let io = parse_proc_io(text).unwrap();
        assert_eq!(io.wchar, 15_728_788);
        assert_eq!(io.write_bytes, 15_761_408);
        assert_eq!(io.cancelled_write_bytes, 4096);
        assert!(parse_proc_io("rchar: 1\n").is_none());
    }

    #[test]
    fn parses_pressure() {
        let text = "some avg10=2.67 avg60=1.08 avg300=1.18 total=11656009\n\
                    full avg10=2.38 avg60=0.86 avg300=0.97 total=10369717\n";
        let p = parse_pressure(text).unwrap();
        assert_eq!(p.some_us, 11_656_009);
        assert_eq!(p.full_us, Some(10_369_717));
        assert!(parse_pressure("garbage").is_none());
    }

    #[test]
    fn parses_stat_with_awkward_command_names() {
        let mut fields: Vec<String> = (3..=52).map(|n| n.to_string()).collect();
        fields[0] = "S".into();
        let text = format!("42 (a) b (c)) {}", fields.join(" "));
        let s = parse_proc_stat(&text).unwrap();
        assert_eq!((s.utime_ticks, s.stime_ticks), (14, 15));
        assert_eq!(parse_pgrp(&text), Some(5));
        assert_eq!(s.blkio_ticks, 42);
    }

    /// A process found by a scan is re-read without a scan; one outside the group never is.
    #[test]
    fn members_found_by_a_scan_are_re_read() {
        // This test process's own group: the harness is its leader or we are in it.
        // SAFETY: getpgrp has no preconditions.
        let pgid = unsafe { libc::getpgrp() };
        let mut rq = RunQueueSampler::new(pgid);
        rq.sample();
        assert!(rq.members.contains(&std::process::id()), "{:?}", rq.members);
        rq.sample_members();
        assert!(rq.members.contains(&std::process::id()));
        assert!(rq.wait_ns.contains_key(&u64::from(std::process::id())));
        // A sampler for a group nobody is in finds nothing and keeps nothing.
        let mut other = RunQueueSampler::new(i32::MAX);
        other.members.insert(std::process::id());
        other.sample_members();
        assert!(other.members.is_empty() && other.wait_ns.is_empty());
    }

    /// The claim the module relies on: a zombie child's /proc/<pid>/io already holds the I/O
    /// of the grandchildren it reaped.
    #[test]
    // The child is reaped with waitpid below, after reading its /proc entry as a zombie.
    #[allow(clippy::zombie_processes)]
    fn zombie_io_covers_reaped_grandchildren() {
        let dir = tempfile::tempdir().unwrap();
        let script = format!(
            "sh -c 'head -c 300000 /dev/zero > {0}/a' ; head -c 200000 /dev/zero > {0}/b",
            dir.path().display()
        );
        let child = std::process::Command::new("sh")
            .args(["-c", &script])
            .spawn()
            .unwrap();
        let pid = child.id() as libc::pid_t;
        while !crate::steps::child::has_exited(pid) {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        let io = read_proc_io(&pid.to_string()).unwrap();
        assert!(io.wchar >= 500_000, "{io:?}");
        let mut status = 0;
        // SAFETY: reaps our own child; `status` is ours.
        unsafe { libc::waitpid(pid, &mut status, 0) };
    }
}

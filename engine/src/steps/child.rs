//! Run one step as a child in its own process group and measure it.
//!
//! The child gets its own process group so that Ctrl-C (which the terminal sends to our
//! group only) is turned into an orderly end of the step's whole tree: SIGTERM to the group,
//! a grace period, then SIGKILL. The exit is noticed with a pidfd (or a short sleep loop
//! where pidfds are missing) and the child is first waited with `WNOWAIT`, so its
//! `/proc/<pid>/io` and `/proc/<pid>/stat` can be read while it is a zombie, before `wait4`
//! reaps it and returns the rusage of the whole reaped tree.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use super::probe::{self, Pressure, Rusage};
use record::StepIo;

/// How long a step gets between SIGTERM and SIGKILL after Ctrl-C.
const TERM_GRACE: Duration = Duration::from_secs(3);

/// What a finished child left behind.
#[derive(Debug, Default)]
pub(crate) struct Measured {
    pub wall_s: f64,
    /// The exit code, when the child exited (rather than being killed by a signal).
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    pub rusage: Rusage,
    /// The child's whole reaped tree.
    pub io: Option<StepIo>,
    /// Machine-wide I/O stall during the step: "some" and "full", seconds.
    pub pressure_some_s: Option<f64>,
    pub pressure_full_s: Option<f64>,
    /// Block-I/O delay of the top process (delay accounting on only).
    pub blkio_delay_s: Option<f64>,
    /// Run-queue wait of the step's tasks, sampled (see [`probe::RunQueueSampler`]).
    pub cpu_wait_s: Option<f64>,
    /// Signals that could not be collected, with the reason.
    pub unavailable: Vec<String>,
    /// The last lines of stdout and stderr, interleaved as written.
    pub output_tail: String,
}

impl Measured {
    pub(crate) fn succeeded(&self) -> bool {
        self.exit_code == Some(0)
    }
}

/// The last `n` lines of a stream, kept while it is read.
#[derive(Default)]
struct Tail {
    lines: VecDeque<String>,
    done: bool,
}

/// Run `cmd` to its end (or until Ctrl-C) and measure it. `tail_lines` lines of its output
/// are kept. Returns `error::interrupted()` when Ctrl-C arrived; the group is gone by then.
pub(crate) fn run_measured(mut cmd: Command, tail_lines: usize) -> Result<Measured> {
    let (reader, writer) = std::io::pipe().context("cannot create a pipe for the step's output")?;
    let writer2 = writer
        .try_clone()
        .context("cannot duplicate the step's output pipe")?;
    cmd.stdin(Stdio::null())
        .stdout(writer)
        .stderr(writer2)
        .process_group(0);

    let mut unavailable = Vec::new();
    let delay_on = match probe::delay_accounting() {
        Ok(()) => true,
        Err(why) => {
            unavailable.push(why);
            false
        }
    };
    let pressure_before = probe::read_pressure();
    let started = Instant::now();
    let child = cmd
        .spawn()
        .with_context(|| format!("cannot start {:?}", cmd.get_program()))?;
    // The Command still holds the pipe's write ends: drop them, or the reader never ends.
    drop(cmd);
    let pid = child.id() as libc::pid_t;

    let tail = Arc::new(Mutex::new(Tail::default()));
    let tail_for_reader = Arc::clone(&tail);
    let spawned = std::thread::Builder::new().spawn(move || {
        let mut r = BufReader::new(reader);
        let mut buf = Vec::new();
        loop {
            buf.clear();
            match r.read_until(b'\n', &mut buf) {
                Ok(0) | Err(_) => break,
                Ok(_) => {
                    let line = String::from_utf8_lossy(&buf).trim_end().to_string();
                    let mut t = tail_for_reader.lock().unwrap_or_else(|e| e.into_inner());
                    t.lines.push_back(line);
                    while t.lines.len() > tail_lines {
                        t.lines.pop_front();
                    }
                }
            }
        }
        tail_for_reader
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .done = true;
    });
    if let Err(e) = spawned {
        // No thread to read its output (a process or thread limit): the step cannot be
        // measured; its process group goes.
        end_group(pid);
        let _ = reap(pid);
        return Err(anyhow::anyhow!(
            "cannot start a thread to read the step's output ({e}): a limit on processes or \
             threads (the cgroup's pids.max, ulimit -u) was reached"
        ));
    }

    let mut run_queue = probe::RunQueueSampler::new(pid);
    let interrupted = !wait_exit(pid, true, Some(&mut run_queue));
    let wall_s = started.elapsed().as_secs_f64();
    if interrupted {
        end_group(pid);
    }

    // The child is a zombie now: read what it left before reaping it.
    let pressure_after = probe::read_pressure();
    let io = match probe::read_proc_io(&pid.to_string()) {
        Ok(io) => Some(io),
        Err(why) => {
            unavailable.push(format!("io: {why}"));
            None
        }
    };
    let blkio_delay_s = if delay_on {
        probe::read_proc_stat(&pid.to_string())
            .map(|s| s.blkio_ticks as f64 / probe::clock_ticks_per_s())
    } else {
        None
    };
    run_queue.sample_process(&pid.to_string());
    let cpu_wait_s = Some(run_queue.total_s());
    // Anything the step left running in its group (a background job) ends with it.
    // SAFETY: the leader is an unreaped zombie, so `pid` still names this group.
    unsafe { libc::killpg(pid, libc::SIGKILL) };

    let (status, rusage) = reap(pid)?;
    drop(child);

    let (pressure_some_s, pressure_full_s) = match (pressure_before, pressure_after) {
        (Ok(b), Ok(a)) => pressure_delta(b, a),
        (Err(why), _) | (_, Err(why)) => {
            unavailable.push(why);
            (None, None)
        }
    };

    // Give the reader a moment to drain the pipe; a straggler that left the group may hold it.
    let drain_deadline = Instant::now() + Duration::from_secs(1);
    let output_tail = loop {
        let t = tail.lock().unwrap_or_else(|e| e.into_inner());
        if t.done || Instant::now() >= drain_deadline {
            break t.lines.iter().cloned().collect::<Vec<_>>().join("\n");
        }
        drop(t);
        std::thread::sleep(Duration::from_millis(5));
    };

    if interrupted {
        return Err(record::error::interrupted());
    }
    let (exit_code, signal) = if libc::WIFEXITED(status) {
        (Some(libc::WEXITSTATUS(status)), None)
    } else if libc::WIFSIGNALED(status) {
        (None, Some(libc::WTERMSIG(status)))
    } else {
        (None, None)
    };
    Ok(Measured {
        wall_s,
        exit_code,
        signal,
        rusage,
        io,
        pressure_some_s,
        pressure_full_s,
        blkio_delay_s,
        cpu_wait_s,
        unavailable,
        output_tail,
    })
}

fn pressure_delta(before: Pressure, after: Pressure) -> (Option<f64>, Option<f64>) {
    let some = after.some_us.saturating_sub(before.some_us) as f64 / 1e6;
    let full = match (before.full_us, after.full_us) {
        (Some(b), Some(a)) => Some(a.saturating_sub(b) as f64 / 1e6),
        _ => None,
    };
    (Some(some), full)
}

/// How often `/proc` is scanned for the step's processes, for their run-queue wait.
const SCAN_EVERY: Duration = Duration::from_millis(100);
/// How often processes already found are re-read: what a process waited after its last read
/// is lost when it exits (a short rustc on a busy machine), so known ones are read more often
/// than the (costlier) scan runs.
const RESAMPLE_EVERY: Duration = Duration::from_millis(25);

/// Wait until `pid` has exited (it stays a zombie). Returns false if Ctrl-C came first
/// (only when `cancellable`). Samples the group's run-queue wait meanwhile.
fn wait_exit(
    pid: libc::pid_t,
    cancellable: bool,
    mut run_queue: Option<&mut probe::RunQueueSampler>,
) -> bool {
    let mut next_scan = Instant::now() + SCAN_EVERY;
    let poll_ms = if run_queue.is_some() {
        RESAMPLE_EVERY.as_millis() as libc::c_int
    } else {
        100
    };
    // SAFETY: pidfd_open takes a pid and flags and returns a new fd or -1.
    let pidfd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) } as libc::c_int;
    let result = loop {
        if has_exited(pid) {
            break true;
        }
        if cancellable && record::cancel::requested() {
            break false;
        }
        if let Some(rq) = run_queue.as_deref_mut() {
            if Instant::now() >= next_scan {
                rq.sample();
                next_scan = Instant::now() + SCAN_EVERY;
            } else {
                rq.sample_members();
            }
        }
        if pidfd >= 0 {
            let mut fds = libc::pollfd {
                fd: pidfd,
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: one valid pollfd we own. EINTR (Ctrl-C) just loops to the flag check.
            unsafe { libc::poll(&mut fds, 1, poll_ms) };
        } else {
            std::thread::sleep(Duration::from_millis(10));
        }
    };
    if pidfd >= 0 {
        // SAFETY: closing the fd pidfd_open gave us.
        unsafe { libc::close(pidfd) };
    }
    result
}

/// Whether the child has exited, leaving it unreaped (a zombie whose /proc files still read).
pub(super) fn has_exited(pid: libc::pid_t) -> bool {
    // SAFETY: waitid writes only into `info`, which we own; WNOWAIT leaves the child unreaped.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    let rc = unsafe {
        libc::waitid(
            libc::P_PID,
            pid as libc::id_t,
            &mut info,
            libc::WEXITED | libc::WNOWAIT | libc::WNOHANG,
        )
    };
    // SAFETY: reading the pid field of a siginfo that waitid filled (or left zeroed).
    rc == 0 && unsafe { info.si_pid() } == pid
}

/// Ctrl-C: SIGTERM to the group, a grace period, then SIGKILL; returns once the leader exited.
fn end_group(pid: libc::pid_t) {
    // SAFETY: the leader is not reaped yet, so `pid` still names the step's group.
    unsafe { libc::killpg(pid, libc::SIGTERM) };
    let deadline = Instant::now() + TERM_GRACE;
    while Instant::now() < deadline {
        if has_exited(pid) {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    // SAFETY: as above; kills whatever of the group is left, leader included.
    unsafe { libc::killpg(pid, libc::SIGKILL) };
    wait_exit(pid, false, None);
}

fn reap(pid: libc::pid_t) -> Result<(libc::c_int, Rusage)> {
    let mut status: libc::c_int = 0;
    // SAFETY: zeroed rusage is a valid value; wait4 fills `status` and `ru`, both ours.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: as above.
        let rc = unsafe { libc::wait4(pid, &mut status, 0, &mut ru) };
        if rc == pid {
            return Ok((status, probe::rusage_from(&ru)));
        }
        let err = std::io::Error::last_os_error();
        if err.kind() != std::io::ErrorKind::Interrupted {
            return Err(err).context(format!("wait4 on step process {pid}"));
        }
    }
}

/// Why a short query (`docker version`, `cargo --version`) gave no answer.
#[derive(Debug)]
pub(crate) enum NoAnswer {
    /// The program could not be started (not on PATH, not executable).
    NotStarted(std::io::Error),
    /// It did not exit within the time given; it was killed.
    TimedOut,
    /// Waiting for it or reading its output failed.
    Unreadable(std::io::Error),
}

/// Run a short query with stdin closed and its output captured, killed when it takes longer
/// than `timeout`: what a step asks before anything is measured, to know whether it can run.
pub(crate) fn answer_within(cmd: Command, timeout: Duration) -> Result<Output, NoAnswer> {
    answer_within_unless(cmd, timeout, &|| false)
}

/// [`answer_within`], also given up (killed, `TimedOut`) as soon as `stop` says so: cleanup
/// after Ctrl-C passes "another signal came", so a daemon that does not answer never holds
/// the exit beyond a second Ctrl-C.
pub(crate) fn answer_within_unless(
    mut cmd: Command,
    timeout: Duration,
    stop: &dyn Fn() -> bool,
) -> Result<Output, NoAnswer> {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(NoAnswer::NotStarted)?;
    let started = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if started.elapsed() > timeout || stop() => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(NoAnswer::TimedOut);
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(50)),
            Err(e) => return Err(NoAnswer::Unreadable(e)),
        }
    }
    child.wait_with_output().map_err(NoAnswer::Unreadable)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn measures_exit_code_output_and_io() {
        let dir = tempfile::tempdir().unwrap();
        let mut cmd = Command::new("sh");
        cmd.args([
            "-c",
            "for i in 1 2 3 4 5; do echo line $i; done; head -c 100000 /dev/zero > f; \
             echo oops >&2; exit 3",
        ])
        .current_dir(dir.path());
        let m = run_measured(cmd, 3).unwrap();
        assert_eq!(m.exit_code, Some(3));
        assert_eq!(m.output_tail, "line 4\nline 5\noops");
        let io = m.io.unwrap();
        assert!(io.wchar >= 100_000, "{io:?}");
        assert!(m.wall_s > 0.0);
    }

    #[test]
    fn background_jobs_do_not_hold_the_step() {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "sleep 30 & echo started"]);
        let t = Instant::now();
        let m = run_measured(cmd, 5).unwrap();
        assert!(m.succeeded());
        assert!(t.elapsed() < Duration::from_secs(10));
        assert_eq!(m.output_tail, "started");
    }

    #[test]
    fn a_query_answers_or_says_why_not() {
        let mut echo = Command::new("sh");
        echo.args(["-c", "echo 1.2.3"]);
        let out = answer_within(echo, Duration::from_secs(30)).unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "1.2.3");
        let missing = Command::new("/nonexistent/diskbench-no-such-program");
        assert!(matches!(
            answer_within(missing, Duration::from_secs(30)),
            Err(NoAnswer::NotStarted(_))
        ));
        let mut slow = Command::new("sleep");
        slow.arg("30");
        assert!(matches!(
            answer_within(slow, Duration::from_millis(100)),
            Err(NoAnswer::TimedOut)
        ));
    }
}

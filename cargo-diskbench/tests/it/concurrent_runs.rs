//! Runs that share a host: two `steps` runs on one docker daemon,
//! an interrupted docker build, a daemon that stops answering during the cleanup, and a
//! what-if run killed while the daemon sat in its capped cgroup.
//!
//! The docker tests need a docker engine (skipped without one) and share it with whatever
//! else runs on the machine.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{self, sandbox};

/// `run` measuring one column as quickly as it measures, no steps, no site.
fn quick_seq_read_run() -> Vec<&'static str> {
    let mut args = common::args("run --no-steps --no-site --only seq-read");
    args.extend(common::QUICK_RUN_ARGS);
    args
}

/// `steps` of the built-in sqlite step, small.
const SQLITE_STEP: &str = "steps --only sqlite --sqlite-transactions 20";

fn docker_answers() -> bool {
    Command::new("docker")
        .args(["version", "--format", "{{.Server.Version}}"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Images and containers labelled with this run id.
fn left_of_run(run_id: &str) -> Vec<String> {
    let filter = format!("label=diskbench.run={run_id}");
    let mut left = Vec::new();
    for args in [
        vec!["image", "ls", "-a", "-q", "--filter", &filter],
        vec!["ps", "-a", "-q", "--filter", &filter],
    ] {
        let out = Command::new("docker").args(&args).output().unwrap();
        left.extend(
            String::from_utf8_lossy(&out.stdout)
                .split_whitespace()
                .map(|s| format!("{} {s}", args[0])),
        );
    }
    left
}

/// `steps --only docker-build` with a built-in context of `mib` MiB, the record to `json`.
fn docker_step(project: &Path, dir: &Path, mib: u32, json: &Path) -> Command {
    let mut cmd = common::bin();
    cmd.current_dir(project)
        .args(["steps", "--only", "docker-build", "--docker-context-mib"])
        .arg(mib.to_string())
        .arg("--dir")
        .arg(dir)
        .arg("--json")
        .arg(json)
        .arg("--results")
        .arg(project.join("no-results"))
        .env_remove("GITHUB_STEP_SUMMARY")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    cmd
}

/// The docker-build step's status and run id (from its command's label) in a record.
fn step_of(json: &Path) -> (String, String, String) {
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap();
    let s = &v["steps"][0];
    let run_id = s["command"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|a| a.as_str()?.strip_prefix("diskbench.run="))
        .next()
        .unwrap()
        .to_string();
    (
        s["status"].as_str().unwrap_or_default().to_string(),
        s["reason"].as_str().unwrap_or_default().to_string(),
        run_id,
    )
}

/// The run id of the `docker build` a process `parent` started, once it runs.
fn build_of(parent: u32, limit: Duration) -> Option<(u32, String)> {
    let start = Instant::now();
    while start.elapsed() < limit {
        for e in std::fs::read_dir("/proc").unwrap().flatten() {
            let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
                continue;
            };
            let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else {
                continue;
            };
            let ppid = stat
                .rsplit(')')
                .next()
                .and_then(|r| r.split_whitespace().nth(1))
                .and_then(|p| p.parse::<u32>().ok());
            if ppid != Some(parent) {
                continue;
            }
            let cmdline = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
            let args: Vec<String> = cmdline
                .split(|b| *b == 0)
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect();
            // `docker build ...`, or `/bin/sh .../docker build ...` (a script standing in).
            if args.iter().take(3).any(|a| a == "build")
                && let Some(id) = args.iter().find_map(|a| a.strip_prefix("diskbench.run="))
            {
                return Some((pid, id.to_string()));
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    None
}

fn wait_bounded(child: &mut Child, limit: Duration) -> Option<std::process::ExitStatus> {
    let start = Instant::now();
    while start.elapsed() < limit {
        if let Some(s) = child.try_wait().unwrap() {
            return Some(s);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    let _ = child.wait();
    None
}

fn stderr_of(child: &mut Child) -> String {
    use std::io::Read as _;
    let mut s = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = e.read_to_string(&mut s);
    }
    s
}

/// A long docker build and short ones started while it builds, on one daemon, 5 times: the
/// short runs' cleanup used to prune the long build's untagged intermediate images (a filter
/// on the step's label alone), and the long build failed with "unknown parent image ID".
#[test]
fn concurrent_docker_builds_on_one_daemon_all_succeed_and_leave_nothing() {
    if !docker_answers() {
        eprintln!("skipped: no docker engine");
        return;
    }
    let _disk = common::disk_load();
    for attempt in 1..=5 {
        let project = sandbox();
        let (long_dir, short_dir) = (sandbox(), sandbox());
        let long_json = project.path().join("long.json");
        let mut long = docker_step(project.path(), long_dir.path(), 64, &long_json)
            .spawn()
            .unwrap();
        let Some((_, long_id)) = build_of(long.id(), Duration::from_secs(300)) else {
            let _ = long.kill();
            panic!(
                "attempt {attempt}: the long build never started: {}",
                stderr_of(&mut long)
            );
        };
        // Short runs, one after another, as long as the long build runs (at least one).
        let mut shorts: Vec<PathBuf> = Vec::new();
        while shorts.is_empty() || long.try_wait().unwrap().is_none() && shorts.len() < 3 {
            let json = project.path().join(format!("short-{}.json", shorts.len()));
            let out = docker_step(project.path(), short_dir.path(), 2, &json)
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "attempt {attempt}: a short run failed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            shorts.push(json);
        }
        let status = wait_bounded(&mut long, Duration::from_secs(600));
        let err = stderr_of(&mut long);
        assert!(
            status.is_some_and(|s| s.success()),
            "attempt {attempt}: the long run: {err}"
        );
        let (st, reason, id) = step_of(&long_json);
        assert_eq!(id, long_id);
        assert_eq!(
            st, "ok",
            "attempt {attempt}: the long build: {reason}\n{err}"
        );
        for json in &shorts {
            let (st, reason, id) = step_of(json);
            assert_eq!(st, "ok", "attempt {attempt}: a short build: {reason}");
            assert_eq!(left_of_run(&id), Vec::<String>::new(), "attempt {attempt}");
        }
        assert_eq!(
            left_of_run(&long_id),
            Vec::<String>::new(),
            "attempt {attempt}"
        );
    }
}

/// Ctrl-C (or SIGTERM) during a docker build, at several points: the daemon goes on with the
/// instruction the killed client started and commits its layer after the client is gone (a
/// 25-200 MB `<none>` image). Once the run has exited, nothing of its build is left.
#[test]
fn an_interrupted_docker_build_leaves_no_image_once_the_run_has_exited() {
    if !docker_answers() {
        eprintln!("skipped: no docker engine");
        return;
    }
    let _disk = common::disk_load();
    for (after_ms, sig) in [
        (300, libc::SIGINT),
        (1500, libc::SIGINT),
        (4000, libc::SIGTERM),
    ] {
        let project = sandbox();
        let dir = sandbox();
        let json = project.path().join("r.json");
        let mut run = docker_step(project.path(), dir.path(), 64, &json)
            .spawn()
            .unwrap();
        let Some((_, run_id)) = build_of(run.id(), Duration::from_secs(300)) else {
            let _ = run.kill();
            panic!("the build never started: {}", stderr_of(&mut run));
        };
        std::thread::sleep(Duration::from_millis(after_ms));
        // SAFETY: a signal to our own child.
        unsafe { libc::kill(run.id() as i32, sig) };
        let status = wait_bounded(&mut run, Duration::from_secs(300));
        let err = stderr_of(&mut run);
        let status = status.unwrap_or_else(|| panic!("the run did not exit: {err}"));
        assert_eq!(status.code(), Some(130), "{err}");
        assert_eq!(
            left_of_run(&run_id),
            Vec::<String>::new(),
            "interrupted {after_ms} ms into the build: {err}"
        );
        assert!(!json.exists(), "a record from an interrupted run");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "{err}");
    }
}

/// A `docker` that answers `version` and then never again (a daemon that stopped answering):
/// the cleanup after Ctrl-C gives each call a timeout, and a second signal ends it at once.
#[test]
fn ctrl_c_does_not_hang_on_a_docker_daemon_that_stopped_answering() {
    let bin = sandbox();
    let docker = bin.path().join("docker");
    std::fs::write(
        &docker,
        "#!/bin/sh\ncase \"$1\" in\n  version) echo 20.10.0; exit 0;;\n  build) sleep 1000;;\n  *) exec sleep 1000;;\nesac\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&docker, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!(
        "{}:{}",
        bin.path().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    // (signals, the longest the exit may take after the first)
    for (second_signal, limit_s) in [(true, 10), (false, 90), (true, 10)] {
        let project = sandbox();
        let dir = sandbox();
        let json = project.path().join("r.json");
        let mut cmd = docker_step(project.path(), dir.path(), 1, &json);
        cmd.env("PATH", &path).env_remove("DOCKER_HOST");
        let mut run = cmd.spawn().unwrap();
        build_of(run.id(), Duration::from_secs(120)).expect("the fake build never started");
        std::thread::sleep(Duration::from_millis(300));
        let sent = Instant::now();
        // SAFETY: signals to our own child.
        unsafe { libc::kill(run.id() as i32, libc::SIGINT) };
        if second_signal {
            std::thread::sleep(Duration::from_millis(1500));
            // SAFETY: a signal to our own child, still unreaped.
            unsafe { libc::kill(run.id() as i32, libc::SIGINT) };
        }
        let status = wait_bounded(&mut run, Duration::from_secs(limit_s));
        let err = stderr_of(&mut run);
        let took = sent.elapsed();
        let status = status.unwrap_or_else(|| {
            panic!("no exit within {limit_s} s of Ctrl-C (second: {second_signal}): {err}")
        });
        assert_eq!(status.code(), Some(130), "{err}");
        assert!(
            err.contains("docker image rm -f diskbench-step-"),
            "the image left is named with the command that removes it: {err}"
        );
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "{err}");
        eprintln!("exit {took:?} after Ctrl-C (second signal: {second_signal})");
    }
}

/// A capped cgroup as a what-if run killed with SIGKILL leaves it: named for a pid that no
/// longer runs, 1000 write IOPS on every disk, and a process inside (standing in for dockerd).
struct KilledRunGroup {
    dir: PathBuf,
    inside: Child,
}

impl KilledRunGroup {
    fn new(tag: &str) -> Option<KilledRunGroup> {
        // pid_max is at most 2^22: this pid never runs.
        KilledRunGroup::named_for(4_194_400, tag)
    }

    /// A group as a run that had pid `pid` made it.
    fn named_for(pid: u32, tag: &str) -> Option<KilledRunGroup> {
        let root = Path::new("/sys/fs/cgroup/blkio");
        if !common::is_root() || !root.join("blkio.throttle.write_iops_device").exists() {
            return None;
        }
        let dir = root.join(format!("cargo-diskbench-{pid}-{tag}"));
        std::fs::create_dir(&dir).unwrap();
        let dev =
            std::fs::read_to_string("/sys/class/block/vda/dev").unwrap_or_else(|_| "254:0".into());
        let _ = std::fs::write(
            dir.join("blkio.throttle.write_iops_device"),
            format!("{} 1000", dev.trim()),
        );
        let inside = Command::new("sleep").arg("600").spawn().unwrap();
        std::fs::write(dir.join("cgroup.procs"), inside.id().to_string()).unwrap();
        Some(KilledRunGroup { dir, inside })
    }

    fn blkio_cgroup_of_inside(&self) -> String {
        let text = std::fs::read_to_string(format!("/proc/{}/cgroup", self.inside.id())).unwrap();
        text.lines()
            .find_map(|l| {
                let mut p = l.splitn(3, ':');
                let (_, c, path) = (p.next()?, p.next()?, p.next()?);
                c.split(',').any(|c| c == "blkio").then(|| path.to_string())
            })
            .unwrap_or_default()
    }
}

impl Drop for KilledRunGroup {
    fn drop(&mut self) {
        let _ = self.inside.kill();
        let _ = self.inside.wait();
        if self.dir.exists() {
            let _ = std::fs::write(
                "/sys/fs/cgroup/blkio/cgroup.procs",
                self.inside.id().to_string(),
            );
            let _ = std::fs::remove_dir(&self.dir);
        }
    }
}

/// A what-if run killed with SIGKILL while the docker daemon sat in its capped cgroup left the
/// host's Docker engine throttled until the next `--what-if` run. Every `steps` and `run`
/// now releases it at its start, what-if or not, and says so.
#[test]
fn a_daemon_left_capped_by_a_killed_what_if_run_is_released_by_the_next_run() {
    if KilledRunGroup::new("probe").is_none() {
        eprintln!("skipped: needs root and cgroup v1 blkio");
        return;
    }
    let _disk = common::disk_load();
    let variants: [(&str, &[&str]); 3] = [
        ("steps", &common::args(SQLITE_STEP)),
        ("run", &quick_seq_read_run()),
        (
            "steps --what-if",
            &common::args(
                "steps --what-if --what-if-only memory --only sqlite \
                --sqlite-transactions 20",
            ),
        ),
    ];
    // Every run and steps of the tool sweeps such groups at its start, so one that another
    // test starts at the same moment can release this group first: then this run had
    // nothing to release and says nothing, and the variant is tried again with a new group.
    const TRIES: u32 = 5;
    for (k, (what, args)) in variants.iter().enumerate() {
        for attempt in 1..=TRIES {
            let group = KilledRunGroup::new(&format!("t{k}-{attempt}")).unwrap();
            assert_eq!(
                group.blkio_cgroup_of_inside(),
                format!("/{}", group.dir.file_name().unwrap().to_string_lossy())
            );
            let stderr = run_sandboxed(what, args);
            assert!(
                !group.dir.exists(),
                "{what}: the killed run's group is still there"
            );
            assert_eq!(group.blkio_cgroup_of_inside(), "/", "{what}: still capped");
            let said = stderr.contains(&format!("released sleep ({})", group.inside.id()));
            if said {
                break;
            }
            assert!(
                attempt < TRIES,
                "{what}: the run never said what it released in {TRIES} tries: {stderr}"
            );
            eprintln!("{what}: another run released the group first; trying again");
        }
    }
}

/// The what-if lock on the blkio hierarchy, taken by this test process as a live what-if run
/// holds it (the kernel names this process as its holder in /proc/locks). Taking it also
/// waits out any what-if run elsewhere on the machine.
struct HeldLock {
    _dir: std::fs::File,
}

impl HeldLock {
    fn take() -> HeldLock {
        use std::os::fd::AsRawFd;
        let dir = std::fs::File::open("/sys/fs/cgroup/blkio").unwrap();
        // SAFETY: flock on a descriptor this test owns.
        assert_eq!(unsafe { libc::flock(dir.as_raw_fd(), libc::LOCK_EX) }, 0);
        HeldLock { _dir: dir }
    }
}

/// `run --no-steps` or `steps` (no what-if), as root, in sandboxes: its stderr.
fn plain_run(which: &str) -> String {
    let args = if which == "steps" {
        common::args(SQLITE_STEP)
    } else {
        quick_seq_read_run()
    };
    run_sandboxed(which, &args)
}

/// The tool with `args`, its test files and records in sandboxes of their own, no job
/// summary: its stderr, once it succeeded (`what` names it if not).
fn run_sandboxed(what: &str, args: &[&str]) -> String {
    let (project, dir) = (sandbox(), sandbox());
    let mut cmd = common::bin();
    cmd.current_dir(project.path())
        .args(args)
        .arg("--dir")
        .arg(dir.path())
        .arg("--results")
        .arg(project.path().join("res"))
        .env_remove("GITHUB_STEP_SUMMARY");
    let ran = common::Ran::of(&mut cmd);
    assert!(ran.status.success(), "{what}: {}", ran.stderr);
    ran.stderr
}

/// The processes of the docker engine, when it runs in the blkio root (where this machine
/// starts it): a real daemon for a leftover group to hold.
fn docker_engine_in_root() -> Vec<u32> {
    let mut pids = Vec::new();
    for comm in ["dockerd", "containerd"] {
        let out = Command::new("pgrep").args(["-x", comm]).output().unwrap();
        for pid in String::from_utf8_lossy(&out.stdout).split_whitespace() {
            let cg = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).unwrap_or_default();
            if cg.lines().any(|l| l.ends_with(":blkio:/")) {
                pids.push(pid.parse().unwrap());
            }
        }
    }
    pids
}

/// Which run a leftover cgroup belongs to is told by the what-if lock, not by whether a
/// process with the pid in its name runs: the lock is held exactly while its run lives (a
/// SIGKILL drops it), across mount and pid namespaces, while a pid is reused. So with the lock
/// free, every group of ours is a killed run's, even one named for a pid that runs now (the
/// old check kept those for ever), and `run --no-steps` and `steps` release what is in it,
/// the real docker engine included; with the lock held, the holder's groups are left alone
/// (and said so) while a killed run's beside them still go.
#[test]
#[ignore = "needs root and cgroup v1 blkio: .ci/run runs these as root with --ignored"]
fn a_killed_run_s_cgroup_is_told_from_a_live_run_s_by_the_lock() {
    common::require_root();
    if KilledRunGroup::new("probe-lock").is_none() {
        return common::skip("no cgroup v1 blkio throttling here");
    }
    let _quiet = common::disk_quiet();
    let engine = docker_engine_in_root();
    for which in ["run", "steps"] {
        // Lock free: a group named for a pid that no longer runs, and one named for a pid that
        // runs but is no cargo-diskbench (a reused pid: this test's own).
        drop(HeldLock::take());
        let dead = KilledRunGroup::new(&format!("dead-{which}")).unwrap();
        let reused = KilledRunGroup::named_for(std::process::id(), &format!("re-{which}")).unwrap();
        let stderr = plain_run(which);
        for g in [&dead, &reused] {
            assert!(
                !g.dir.exists(),
                "{which}: {} is still there: {stderr}",
                g.dir.display()
            );
            assert_eq!(g.blkio_cgroup_of_inside(), "/", "{which}: still capped");
            assert!(
                stderr.contains(&format!("released sleep ({})", g.inside.id())),
                "{which}: says what it released: {stderr}"
            );
        }
        drop((dead, reused));

        // A live holder (this process): its group stays, with its process inside, and the run
        // says whose it is; a killed run's group beside it still goes.
        let lock = HeldLock::take();
        let live = KilledRunGroup::named_for(std::process::id(), &format!("live-{which}")).unwrap();
        let dead = KilledRunGroup::new(&format!("dead2-{which}")).unwrap();
        let stderr = plain_run(which);
        assert!(
            live.dir.exists(),
            "{which}: the live run's group was removed: {stderr}"
        );
        assert_eq!(
            live.blkio_cgroup_of_inside(),
            format!("/{}", live.dir.file_name().unwrap().to_string_lossy()),
            "{which}: the live run's process was moved out"
        );
        assert!(
            stderr.contains(&format!(
                "left the cgroup(s) {} alone",
                live.dir.file_name().unwrap().to_string_lossy()
            )) && stderr.contains(&format!("still running as pid {}", std::process::id())),
            "{which}: {stderr}"
        );
        assert!(!dead.dir.exists(), "{which}: {stderr}");
        assert_eq!(dead.blkio_cgroup_of_inside(), "/", "{which}: still capped");
        drop((live, dead, lock));
    }

    // The docker engine itself in a killed run's capped group, as SIGKILL during a what-if
    // docker-build leaves it: `run --no-steps` puts it back in the root, every process.
    if engine.is_empty() {
        return common::skip("no docker engine in the blkio root to move");
    }
    drop(HeldLock::take());
    let group = KilledRunGroup::new("engine").unwrap();
    for pid in &engine {
        std::fs::write(group.dir.join("cgroup.procs"), pid.to_string()).unwrap();
    }
    let stderr = plain_run("run");
    // Back in the root whatever happened above, before asserting.
    for pid in &engine {
        let _ = std::fs::write("/sys/fs/cgroup/blkio/cgroup.procs", pid.to_string());
    }
    assert!(!group.dir.exists(), "{stderr}");
    for pid in &engine {
        assert!(
            stderr.contains(&format!("({pid})")),
            "{pid} not released: {stderr}"
        );
    }
    assert_eq!(docker_engine_in_root(), engine);
}

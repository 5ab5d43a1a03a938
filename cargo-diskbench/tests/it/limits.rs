//! Limits and the arithmetic around them: a cap that the kernel
//! would read as "no limit" is refused by name before anything runs, and a process or thread
//! limit that stops the engine from starting its jobs is an error that cleans up, never a
//! panic or a hang.

use std::path::Path;

use crate::common::{self, Ran, sandbox, steps_cmd};

/// A results folder holding one imported record labelled `label` with these four figures
/// (seq-read and seq-write MiB/s, rand-read and rand-write IOPS).
fn results_with(label: &str, figures: [&str; 4]) -> tempfile::TempDir {
    let results = sandbox();
    let csv = results.path().join("figures.csv");
    std::fs::write(
        &csv,
        format!(
            "date,label,provider,arch,vcpus,ram_gib,seq-read_mib_s,seq-write_mib_s,\
             rand-read_iops,rand-write_iops\n2026-09-30,{label},Test,x64,2,8,{}\n",
            figures.join(",")
        ),
    )
    .unwrap();
    let mut import = common::bin();
    let results_dir = results.path().join("r");
    Ran::of(
        import
            .arg("import")
            .arg(&csv)
            .arg("--results")
            .arg(results_dir),
    )
    .ok();
    std::fs::remove_file(&csv).unwrap();
    results
}

fn assert_refused(out: &std::process::Output, names: &[&str], dir: &Path) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    for n in names {
        assert!(stderr.contains(n), "{n:?} not in: {stderr}");
    }
    assert!(
        !stderr.contains("panicked"),
        "a refusal must not be a panic: {stderr}"
    );
    assert_eq!(
        std::fs::read_dir(dir).unwrap().count(),
        0,
        "something was written under --dir"
    );
}

/// `--cap-mib-s` times 2^20 past u64 wrapped (2^44 MiB/s became 0 bytes/s, which removes a
/// v1 rule), an iops figure past 32 bits is cut by the kernel (2^32 becomes 0), and a `--like`
/// figure below 1 rounded to 0: each would make a run recorded as capped run uncapped.
#[test]
fn caps_that_would_become_no_limit_are_refused_naming_the_option() {
    let project = sandbox();
    let dir = sandbox();
    for (args, names) in [
        (
            &["--cap-mib-s", "17592186044416"][..],
            &["--cap-mib-s 17592186044416", "64 bits"][..],
        ),
        (
            &["--cap-mib-s", "18446744073709551615"][..],
            &["--cap-mib-s"][..],
        ),
        (&["--cap-mib-s", "0"][..], &["--cap-mib-s 0"][..]),
        (
            &["--cap-iops", "4294967296"][..],
            &["--cap-iops 4294967296", "4294967295"][..],
        ),
        (&["--cap-iops", "0"][..], &["--cap-iops 0"][..]),
    ] {
        // A step id no run has: were the caps let through, the run stops there (exit 2
        // naming --only) instead of building whatever project is around.
        let mut full = vec!["--what-if", "--only", "no-such-step"];
        full.extend_from_slice(args);
        let out = steps_cmd(project.path(), dir.path(), &full)
            .output()
            .unwrap();
        assert_refused(&out, names, dir.path());
    }

    // --like figures that would not survive as caps: one that rounds to 0, one beyond u64 as
    // bytes per second, one beyond the kernel's iops.
    for (figures, column) in [
        (["100", "100", "1000", "0.2"], "rand-write"),
        (["100", "1e300", "1000", "1000"], "seq-write"),
        (["100", "100", "0.4", "1000"], "rand-read"),
        (["100", "100", "1000", "5000000000"], "rand-write"),
    ] {
        let results = results_with("tiny-runner", figures);
        let r = results.path().join("r");
        let out = common::bin()
            .current_dir(project.path())
            .args(common::args(
                "steps --what-if --only no-such-step --like tiny-runner",
            ))
            .arg("--dir")
            .arg(dir.path())
            .arg("--results")
            .arg(&r)
            .output()
            .unwrap();
        assert_refused(&out, &["--like tiny-runner", column], dir.path());
        if common::is_root() {
            let out = common::bin()
                .args(common::args(
                    "run --no-steps --no-site --like tiny-runner --dir",
                ))
                .arg(dir.path())
                .arg("--results")
                .arg(&r)
                .env_remove("GITHUB_STEP_SUMMARY")
                .output()
                .unwrap();
            assert_refused(&out, &["--like tiny-runner", column], dir.path());
        }
    }
}

/// A cgroup v1 `pids` group of this test's own, removed when dropped.
struct PidsGroup(std::path::PathBuf);

impl PidsGroup {
    fn new(max: u32) -> Option<PidsGroup> {
        let root = Path::new("/sys/fs/cgroup/pids");
        if !common::is_root() || !root.join("cgroup.procs").exists() {
            return None;
        }
        let dir = root.join(format!(
            "diskbench-test-limits-{}-{max}",
            std::process::id()
        ));
        std::fs::create_dir(&dir).ok()?;
        std::fs::write(dir.join("pids.max"), max.to_string()).unwrap();
        Some(PidsGroup(dir))
    }

    /// `cmd` joins the group before it runs anything.
    fn enter(&self, cmd: &mut std::process::Command) {
        use std::os::unix::process::CommandExt as _;
        let procs =
            std::ffi::CString::new(self.0.join("cgroup.procs").as_os_str().as_encoded_bytes())
                .unwrap();
        // SAFETY: only open/write/close between fork and exec.
        unsafe {
            cmd.pre_exec(move || {
                let fd = libc::open(procs.as_ptr(), libc::O_WRONLY);
                if fd < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                let rc = libc::write(fd, b"0".as_ptr().cast(), 1);
                libc::close(fd);
                if rc == 1 {
                    Ok(())
                } else {
                    Err(std::io::Error::last_os_error())
                }
            });
        }
    }
}

impl Drop for PidsGroup {
    fn drop(&mut self) {
        for _ in 0..100 {
            if std::fs::remove_dir(&self.0).is_ok() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
}

/// Run `cmd` for at most two minutes: (exit code, stderr); None when it had to be killed.
fn bounded(cmd: std::process::Command) -> (Option<i32>, String) {
    common::bounded(cmd, std::time::Duration::from_secs(120))
}

/// Under a `pids.max` the jobs cannot all start: fork fails, then so does the thread
/// fallback. That used to panic (`expect("cannot start a job thread")`) with the started jobs
/// waiting forever at their start barrier, signals ignored, test files left. Now: an error
/// naming the limit, the test files gone, whichever job could not start; and the site, whose
/// threads are only a speed-up, still builds on one thread.
#[test]
fn a_process_or_thread_limit_is_an_error_that_cleans_up() {
    if PidsGroup::new(1).is_none() {
        eprintln!("skipped: needs root and the cgroup v1 pids controller");
        return;
    }
    let _disk = common::disk_load();
    for (max, thread) in [(1, false), (2, false), (4, false), (6, false), (3, true)] {
        let group = PidsGroup::new(max).unwrap();
        let dir = sandbox();
        let directory = format!("--directory={}", dir.path().display());
        let mut cmd = common::bin();
        cmd.args(common::args(
            "fio --name=t --rw=randread --bs=4k --size=4M --numjobs=8 --runtime=1s --time_based",
        ))
        .arg(&directory)
        .env_remove("GITHUB_STEP_SUMMARY");
        if thread {
            cmd.arg("--thread");
        }
        group.enter(&mut cmd);
        let what = format!("pids.max {max}, --thread {thread}");
        let (code, stderr) = bounded(cmd);
        assert_ne!(code, None, "{what}: hung");
        assert_eq!(code, Some(1), "{what}: {stderr}");
        assert!(!stderr.contains("panicked"), "{what}: {stderr}");
        assert!(
            stderr.contains("pids.max") && stderr.contains("of 8"),
            "{what}: the error names the limit and the job: {stderr}"
        );
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            0,
            "{what}: test files left"
        );
    }

    // The site under one task: every render thread fails to start and the work runs on the
    // calling thread.
    let group = PidsGroup::new(1).unwrap();
    let sb = sandbox();
    let res = sb.path().join("res");
    std::fs::create_dir(&res).unwrap();
    for r in site_gen::testdata::Fleet::small()
        .records()
        .into_iter()
        .take(12)
    {
        record::results::write_record(&res, &r).unwrap();
    }
    let mut cmd = common::bin();
    cmd.current_dir(sb.path())
        .args(["site", "--results", "res", "--out", "out"]);
    group.enter(&mut cmd);
    let (code, stderr) = bounded(cmd);
    assert_eq!(code, Some(0), "site under pids.max 1: {stderr}");
    assert!(sb.path().join("out/index.html").is_file());
}

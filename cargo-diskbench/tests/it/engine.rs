//! Integration tests: engine. Real I/O at small sizes through the binary, in temp folders on
//! the work disk (not /tmp, which may be tmpfs).

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use engine::job::hist::LatencyHist;
use record::{ColumnId, Record};

use crate::common;

/// A temp folder on the same disk as the build (CARGO_TARGET_TMPDIR).
fn workdir() -> tempfile::TempDir {
    tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("cannot create a temp folder")
}

/// `cargo-diskbench run` in `dir` with its records there, no steps, no site, no progress, and
/// every suite setting its own.
fn bare_run_cmd(dir: &Path) -> Command {
    let mut cmd = common::bin();
    cmd.current_dir(dir).args(common::args(
        "run --results results --no-steps --no-site --quiet",
    ));
    cmd
}

/// `cargo-diskbench run` in `dir` (test files and records there), quick settings unless
/// `extra` gives the option itself.
fn run_cmd(dir: &Path, extra: &[&str]) -> Command {
    let mut cmd = bare_run_cmd(dir);
    let defaults = [
        ("--dir", "."),
        ("--size", "16M"),
        ("--runtime", "1"),
        ("--ramp", "0"),
    ];
    for (option, value) in defaults {
        if !extra.iter().any(|a| a.split('=').next() == Some(option)) {
            cmd.args([option, value]);
        }
    }
    cmd.args(extra);
    cmd
}

fn output(mut cmd: Command) -> Output {
    let _load = common::disk_load();
    cmd.output().expect("cannot start cargo-diskbench")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Records written under `dir/results`.
fn records(dir: &Path) -> Vec<Record> {
    let Ok(entries) = std::fs::read_dir(dir.join("results")) else {
        return Vec::new();
    };
    entries
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .map(|p| serde_json::from_slice(&std::fs::read(&p).unwrap()).unwrap())
        .collect()
}

/// Test folders left behind in `dir`.
fn leftovers(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with(".diskbench-"))
        })
        .collect()
}

/// Whether this machine lets us set up io_uring (containers with seccomp often do not).
/// A private folder on tmpfs, or None (said on stderr) where /dev/shm is missing.
fn shm_tempdir() -> Option<tempfile::TempDir> {
    let shm = Path::new("/dev/shm");
    if !shm.is_dir() {
        common::skip("no /dev/shm");
        return None;
    }
    Some(tempfile::tempdir_in(shm).unwrap())
}

fn io_uring_available() -> bool {
    engine::backend::io_uring::probe().is_ok()
}

fn only_record(dir: &Path) -> Record {
    let mut r = records(dir);
    assert_eq!(r.len(), 1, "expected exactly one record");
    r.pop().unwrap()
}

#[test]
fn every_column_runs_end_to_end_and_records_sane_figures() {
    let dir = workdir();
    let summary = dir.path().join("step-summary.md");
    std::fs::write(&summary, "earlier summary\n").unwrap();
    let mut cmd = run_cmd(dir.path(), &["--json", "-", "--markdown", "summary.md"]);
    cmd.env("GITHUB_STEP_SUMMARY", &summary);
    let out = output(cmd);
    assert!(out.status.success(), "{}", stderr(&out));
    let record = only_record(dir.path());
    // The Markdown summary: into --markdown, and appended to GitHub's job summary.
    let markdown = std::fs::read_to_string(dir.path().join("summary.md")).unwrap();
    assert!(!markdown.is_empty());
    let appended = std::fs::read_to_string(&summary).unwrap();
    assert_eq!(appended, format!("earlier summary\n{markdown}"));
    // --json - prints the same record on stdout.
    let printed: Record = serde_json::from_slice(&out.stdout).expect("stdout is the record");
    assert_eq!(printed, record);
    assert_eq!(record.settings.suite, "standard");
    assert_eq!(record.settings.size, 16 << 20);
    assert!(record.cpu_reference.is_some());
    let ids: Vec<&str> = record.tests.iter().map(|t| t.id.as_str()).collect();
    assert_eq!(ids, ColumnId::ALL.map(|c| c.as_str()).to_vec());
    for t in &record.tests {
        let column = t.column().unwrap();
        let d = t
            .main_direction()
            .unwrap_or_else(|| panic!("{}: no figures", t.id));
        assert!(
            d.ios > 0 && d.iops > 0.0 && d.mib_s > 0.0,
            "{}: {d:?}",
            t.id
        );
        assert_eq!(d.bytes, d.ios * t.job.bs, "{}", t.id);
        let lat = d.lat_ns.as_ref().unwrap();
        let (p50, p99) = (lat.p50.unwrap(), lat.p99.unwrap());
        assert!(
            lat.min.unwrap() > 0 && p50 <= p99 && p99 <= lat.max.unwrap(),
            "{}: {lat:?}",
            t.id
        );
        let hist = LatencyHist::decode(d.hist.as_ref().unwrap()).unwrap();
        assert_eq!(hist.count(), d.ios, "{}: histogram holds every I/O", t.id);
        assert!(
            (t.elapsed_s - 1.0).abs() < 0.01,
            "{}: window {}",
            t.id,
            t.elapsed_s
        );
        assert!(t.cpu.user_s + t.cpu.sys_s > 0.0, "{}", t.id);
        // O_DIRECT where the filesystem takes it; otherwise the record must say so.
        assert!(
            t.engine.direct || t.notes.iter().any(|n| n.contains("O_DIRECT refused")),
            "{}",
            t.id
        );
        // Reads measure only reads, writes only writes.
        assert_eq!(t.read.is_some(), column.is_read(), "{}", t.id);
        assert_eq!(t.write.is_some(), !column.is_read(), "{}", t.id);
        // auto: psync at depth 1 (libaio for synced writes), io_uring deeper where the kernel
        // allows it.
        let expected = if t.job.sync != "none" {
            "libaio"
        } else if t.job.iodepth == 1 || !io_uring_available() {
            "psync"
        } else {
            "io_uring"
        };
        assert_eq!(t.engine.used, expected, "{}", t.id);
        assert_eq!(
            t.engine.fallback.is_some(),
            t.job.iodepth > 1 && !io_uring_available()
        );
        // Reads read data laid down first; writes write into a new, fallocated file.
        let prep = t.file_preparation.as_ref().expect("the record says how");
        let method = if column.is_read() {
            "written"
        } else {
            "fallocate"
        };
        assert_eq!(prep.method, method, "{}: {prep:?}", t.id);
        assert!(prep.fresh && !prep.detail.is_empty(), "{}", t.id);
    }
    let sync = record.test(ColumnId::SyncWrite).unwrap();
    assert_eq!(sync.job.sync, "fdatasync:1");
    assert_eq!(record.test(ColumnId::RandRead).unwrap().job.numjobs, 4);
    assert!(leftovers(dir.path()).is_empty(), "test files left behind");
}

#[test]
fn bad_options_are_refused_by_name_before_any_file_is_touched() {
    let dir = workdir();
    let cases: &[(&[&str], &str)] = &[
        (&["--size", "1000"], "--size 1000"),
        (&["--size", "5000000"], "--size 5000000"),
        (&["--size", "12Q"], "--size 12Q"),
        (&["--runtime", "0"], "--runtime 0"),
        (&["--runtime=-1"], "--runtime"),
        (&["--ramp", "nan"], "--ramp"),
        (&["--repeat", "0"], "--repeat 0"),
        (&["--only", "seq-read,nope"], "--only seq-read,nope"),
        (&["--only", ","], "--only"),
        (&["--engine", "aio"], "--engine aio"),
        (&["--dir", "does-not-exist"], "--dir does-not-exist"),
        (&["--label", " "], "--label"),
    ];
    for (args, needle) in cases {
        let out = output(run_cmd(dir.path(), args));
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains(needle),
            "{args:?}: message should name the option: {err}"
        );
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: one line: {err}");
    }
    let touched: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert!(touched.is_empty(), "nothing may be created: {touched:?}");
}

/// `--preset` fixes the time and the sizes: given beside any of them, it is refused with exit
/// 2 naming both, before any file is touched.
#[test]
fn a_preset_beside_its_own_settings_is_refused_by_name() {
    let dir = workdir();
    for (args, other) in [
        (
            &["--preset", "published", "--runtime", "5"][..],
            "--runtime",
        ),
        (&["--ramp", "0", "--preset", "published"][..], "--ramp"),
        (&["--preset", "published", "--size", "64M"][..], "--size"),
        (
            &["--preset", "fast"][..],
            "--preset fast: unknown preset; use published",
        ),
    ] {
        // Not run_cmd: it adds --size, --runtime and --ramp.
        let mut cmd = bare_run_cmd(dir.path());
        cmd.args(args);
        let out = output(cmd);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains("--preset") && err.contains(other),
            "{args:?}: the message names both options: {err}"
        );
    }
    let touched: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert!(touched.is_empty(), "nothing may be created: {touched:?}");
}

/// Without `--runtime` the window is steady; without `--ramp` too, the ramp may end from 1 s
/// on once the rate settles (2 s at most, or up to 5 s when the rate moved right after it),
/// and the record says how long it was. A ramp of the user's own is kept whole.
#[test]
fn the_steady_default_records_its_ramp_and_keeps_a_ramp_given() {
    for (ramp, allowed) in [(None, 1.0..5.0), (Some("0.3"), 0.3..0.301)] {
        let dir = workdir();
        let mut cmd = bare_run_cmd(dir.path());
        cmd.args(["--dir", ".", "--size", "16M", "--only", "rand-read"]);
        if let Some(r) = ramp {
            cmd.args(["--ramp", r]);
        }
        let out = output(cmd);
        assert!(out.status.success(), "{ramp:?}: {}", stderr(&out));
        let record = only_record(dir.path());
        let t = &record.tests[0];
        let w = t
            .window
            .as_ref()
            .expect("a steady column records its window");
        let ramp_s = w.ramp_s.expect("and its ramp");
        assert!(allowed.contains(&ramp_s), "{ramp:?}: ramp {ramp_s} s");
        match ramp {
            None => assert!(w.rule.contains("the ramp ends once"), "{}", w.rule),
            Some(r) => assert!(
                w.rule.contains(&format!("after a {r} s ramp")),
                "{}",
                w.rule
            ),
        }
        assert!(
            (3.0..21.0).contains(&t.elapsed_s),
            "{ramp:?}: {} s",
            t.elapsed_s
        );
        assert!(leftovers(dir.path()).is_empty());
    }
}

#[test]
fn refused_io_uring_falls_back_to_psync_and_says_why() {
    let dir = workdir();
    let mut cmd = run_cmd(dir.path(), &["--only", "rand-read"]);
    cmd.env(engine::backend::io_uring::FAKE_ERRNO_ENV, "EPERM");
    let out = output(cmd);
    assert!(out.status.success(), "{}", stderr(&out));
    let record = only_record(dir.path());
    let t = &record.tests[0];
    assert_eq!(t.engine.used, "psync");
    let why = t.engine.fallback.as_deref().unwrap();
    assert!(why.contains("io_uring_setup: EPERM"), "{why}");
    assert!(record.notes.iter().any(|n| n.contains("EPERM")));
    assert!(t.read.as_ref().unwrap().ios > 0);

    // Asked for explicitly, a refused io_uring is an error that names the option.
    let dir = workdir();
    let mut cmd = run_cmd(dir.path(), &["--only", "rand-read", "--engine", "io_uring"]);
    cmd.env(engine::backend::io_uring::FAKE_ERRNO_ENV, "ENOSYS");
    let out = output(cmd);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("--engine io_uring"),
        "{}",
        stderr(&out)
    );
    assert!(records(dir.path()).is_empty() && leftovers(dir.path()).is_empty());
}

/// Native AIO refused (fs.aio-max-nr reached, seccomp): on memory, where auto wants libaio,
/// the column runs on psync and says why; `--engine libaio` asked for is a usage error. The
/// real refusal is injected with strace where it is installed, the test switch otherwise.
#[test]
fn refused_libaio_falls_back_to_psync_and_says_why() {
    let Some(mem) = shm_tempdir() else {
        return;
    };
    let results = workdir();
    let args = [
        "run",
        "--dir",
        mem.path().to_str().unwrap(),
        "--results",
        "results",
        "--no-steps",
        "--no-site",
        "--quiet",
        "--only",
        "qd1-read",
        "--size",
        "16M",
        "--runtime",
        "0.3",
        "--ramp",
        "0",
    ];
    let strace = Command::new("strace").arg("-V").output().is_ok();
    let mut cmd = if strace {
        let mut c = Command::new("strace");
        c.args(["-f", "-qq", "-o", "/dev/null", "-e", "trace=io_setup"])
            .args(["-e", "inject=io_setup:error=EAGAIN"])
            .arg(env!("CARGO_BIN_EXE_cargo-diskbench"));
        c
    } else {
        let mut c = Command::new(env!("CARGO_BIN_EXE_cargo-diskbench"));
        c.env(engine::backend::libaio::FAKE_ERRNO_ENV, "11");
        c
    };
    cmd.current_dir(results.path()).args(args);
    let out = output(cmd);
    assert!(out.status.success(), "{}", stderr(&out));
    let record = only_record(results.path());
    let t = &record.tests[0];
    assert_eq!(t.engine.used, "psync");
    let why = t.engine.fallback.as_deref().unwrap();
    assert!(why.contains("io_setup: EAGAIN"), "{why}");
    assert!(t.read.as_ref().unwrap().ios > 0);

    // Asked for explicitly, a refused libaio is an error that names the option.
    let refused = workdir();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_cargo-diskbench"));
    cmd.current_dir(refused.path())
        .env(engine::backend::libaio::FAKE_ERRNO_ENV, "EPERM")
        .args(args)
        .args(["--engine", "libaio"]);
    let out = output(cmd);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("--engine libaio"), "{}", stderr(&out));
    assert!(records(refused.path()).is_empty());
    assert!(leftovers(mem.path()).is_empty());
}

/// `--engine io_uring` on a machine that refuses io_uring was refused (exit 2) only after the
/// first column's scratch folder and files were laid out (up to 4 x --size written for
/// nothing). The ring is now set up once before anything is made: strace shows the refused
/// io_uring_setup before any mkdir, for a read column (laid out with data) and a write column.
#[test]
fn engine_io_uring_refused_is_said_before_any_test_file_is_laid_out() {
    for only in ["seq-read", "rand-write"] {
        let dir = workdir();
        let log = dir.path().join("strace.log");
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        let trace = [
            &["-f", "-qq", "-o", log.to_str().unwrap()][..],
            &common::args("-e trace=io_uring_setup,mkdir,mkdirat,fallocate"),
            &common::args("-e inject=io_uring_setup:error=EPERM"),
        ]
        .concat();
        let mut args = common::args(
            "run --dir sub --results results --no-steps --no-site --quiet --engine io_uring",
        );
        args.extend(common::QUICK_RUN_ARGS);
        args.extend(["--only", only]);
        let Some(out) = common::strace(dir.path(), &trace, &args) else {
            return;
        };
        assert_eq!(out.status.code(), Some(2), "{only}: {}", stderr(&out));
        assert!(
            stderr(&out).contains("--engine io_uring: io_uring is refused here"),
            "{only}: {}",
            stderr(&out)
        );
        let trace = std::fs::read_to_string(&log).unwrap();
        let first_setup = trace
            .find("io_uring_setup(")
            .unwrap_or_else(|| panic!("{only}: no io_uring_setup: {trace}"));
        assert!(
            !trace[..first_setup].contains(".diskbench-")
                && !trace[..first_setup].contains("fallocate("),
            "{only}: files made before the refusal: {trace}"
        );
        assert!(!trace.contains(".diskbench-"), "{only}: {trace}");
        assert_eq!(
            std::fs::read_dir(dir.path().join("sub")).unwrap().count(),
            0,
            "{only}"
        );
        assert!(!dir.path().join("results").exists(), "{only}");
    }
}

/// An I/O error names the call that failed. An EIO from fdatasync (injected by strace on the
/// third call) was reported as a failed write; a short read (pread64 returning 100 bytes; the
/// 20th call of each process, past the dynamic loader's own reads) was
/// read on from an unaligned offset with O_DIRECT and reported as EINVAL. Both are exit 1
/// with no record.
#[test]
fn a_failed_fdatasync_and_a_short_read_are_named_as_what_they_are() {
    let cases = [
        (
            "sync-write",
            "fdatasync",
            "inject=fdatasync:error=EIO:when=3",
            "sync-write: fdatasync failed after the write of 4096 bytes at offset",
        ),
        (
            "qd1-read",
            "pread64",
            "inject=pread64:retval=100:when=20",
            "qd1-read: short read at offset",
        ),
        (
            "seq-read",
            "pread64",
            "inject=pread64:retval=4096:when=20",
            "seq-read: short read at offset",
        ),
    ];
    for (only, call, inject, says) in cases {
        let dir = workdir();
        let traced = format!("trace={call}");
        let trace = ["-f", "-qq", "-o", "/dev/null", "-e", &traced, "-e", inject];
        let mut args = common::args(
            "run --dir . --results results --no-steps --no-site --quiet --engine psync",
        );
        args.extend(common::QUICK_RUN_ARGS);
        args.extend(["--only", only]);
        let Some(out) = common::strace(dir.path(), &trace, &args) else {
            return;
        };
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{only}: {err}");
        assert!(err.contains(says), "{only}: {err}");
        assert!(!err.contains("EINVAL"), "{only}: {err}");
        if only != "sync-write" {
            assert!(err.contains(" bytes (a file shorter"), "{only}: {err}");
        }
        assert!(records(dir.path()).is_empty(), "{only}");
        assert!(leftovers(dir.path()).is_empty(), "{only}");
    }
}

#[test]
fn io_uring_refused_by_the_kernel_via_strace_falls_back_to_psync() {
    let dir = workdir();
    let trace = common::args(
        "-f -qq -o /dev/null -e trace=io_uring_setup -e inject=io_uring_setup:error=EPERM",
    );
    let args = common::args(
        "run --dir . --results results --no-steps --no-site --size 16M --runtime 0.5 --ramp 0 \
         --quiet --only seq-read",
    );
    let Some(out) = common::strace(dir.path(), &trace, &args) else {
        return;
    };
    assert!(out.status.success(), "{}", stderr(&out));
    let t = &only_record(dir.path()).tests[0];
    assert_eq!(t.engine.used, "psync");
    assert!(t.engine.fallback.as_deref().unwrap().contains("EPERM"));
}

#[test]
fn refused_o_direct_falls_back_to_buffered_io_with_a_note() {
    let dir = workdir();
    let mut cmd = run_cmd(dir.path(), &["--only", "qd1-read,seq-write"]);
    cmd.env(engine::files::testfile::FAKE_ODIRECT_EINVAL_ENV, "1");
    let out = output(cmd);
    assert!(out.status.success(), "{}", stderr(&out));
    let record = only_record(dir.path());
    for t in &record.tests {
        assert!(!t.engine.direct, "{}", t.id);
        assert!(
            t.notes.iter().any(|n| n.contains("O_DIRECT refused")),
            "{}: {:?}",
            t.id,
            t.notes
        );
        assert!(t.main_direction().unwrap().ios > 0);
    }
    // The table says so too.
    assert!(String::from_utf8_lossy(&out.stdout).contains("(buffered)"));
}

/// The file-size limit (RLIMIT_FSIZE) reached mid-run: a clear error naming the file and
/// --size, exit 1, files removed, no record.
#[test]
fn file_size_limit_mid_run_is_a_clear_error_and_leaves_nothing() {
    use std::os::unix::process::CommandExt;
    let dir = workdir();
    let mut cmd = run_cmd(dir.path(), &["--only", "seq-write"]);
    // SAFETY: only async-signal-safe calls (setrlimit, signal) between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            let limit = libc::rlimit {
                rlim_cur: 4 << 20,
                rlim_max: 4 << 20,
            };
            libc::setrlimit(libc::RLIMIT_FSIZE, &limit);
            libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
            Ok(())
        });
    }
    let out = output(cmd);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("File too large"), "{err}");
    assert!(
        err.contains("seq-write.0") && err.contains("--size"),
        "{err}"
    );
    assert!(err.contains("needs 16 MiB"), "{err}");
    assert!(records(dir.path()).is_empty(), "no record on failure");
    assert!(leftovers(dir.path()).is_empty(), "test files removed");
}

#[test]
#[ignore = "needs root: .ci/run runs these as root with --ignored"]
fn disk_full_before_and_during_the_run_is_a_clear_error_and_leaves_nothing() {
    let fs = workdir();
    let _mounted = common::Mounted::new("tmpfs", "size=8M", fs.path());
    // Found before anything is written: the file would not fit.
    let out = output(run_cmd(fs.path(), &["--only", "qd1-read"]));
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("not enough free space") && err.contains("--size"),
        "{err}"
    );
    assert!(leftovers(fs.path()).is_empty() && records(fs.path()).is_empty());

    // Found mid-run: the space check is skipped, so the kernel's ENOSPC arrives while
    // seq-write's new file is allocated.
    let mut cmd = run_cmd(fs.path(), &["--only", "seq-write"]);
    cmd.env(engine::files::testfile::SKIP_SPACE_CHECK_ENV, "1");
    let out = output(cmd);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("No space left on device"), "{err}");
    assert!(
        err.contains("seq-write.0") && err.contains("free") && err.contains("--size"),
        "{err}"
    );
    assert!(leftovers(fs.path()).is_empty(), "test files removed");
    assert!(records(fs.path()).is_empty(), "no record");
}

/// The running processes whose parent is `pid`.
fn children_of(pid: i32) -> Vec<i32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|p| {
            let stat = std::fs::read_to_string(format!("/proc/{p}/stat")).unwrap_or_default();
            let after = stat.rsplit_once(')').map(|(_, a)| a).unwrap_or("");
            let mut f = after.split_whitespace();
            let (state, ppid) = (f.next(), f.next().and_then(|p| p.parse::<i32>().ok()));
            ppid == Some(pid) && state != Some("Z")
        })
        .collect()
}

#[test]
fn ctrl_c_stops_quickly_removes_files_and_writes_no_record() {
    let _load = common::disk_load();
    let dir = workdir();
    let mut cmd = run_cmd(
        dir.path(),
        &["--only", "rand-read,qd1-read", "--runtime", "30"],
    );
    cmd.stdout(Stdio::null()).stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    // Wait until the test folder exists and the job is running.
    let deadline = Instant::now() + Duration::from_secs(20);
    while leftovers(dir.path()).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        !leftovers(dir.path()).is_empty(),
        "the run never created its test folder"
    );
    // Each job runs in a process of its own, as fio's do: wait until they measure (after the
    // layout, however slow the disk), then signal the tool alone, as `kill` would; it must
    // stop its job processes too.
    let mut jobs = Vec::new();
    while jobs.is_empty() && Instant::now() < deadline + Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(20));
        jobs = children_of(child.id() as i32);
    }
    std::thread::sleep(Duration::from_millis(500));
    let sent = Instant::now();
    // SAFETY: plain kill(2) on our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = child.wait().unwrap();
    let took = sent.elapsed();
    eprintln!("exited {took:?} after SIGINT; job processes {jobs:?}");
    assert_eq!(status.code(), Some(130));
    // The contract says within a second; allow slack for a loaded test machine.
    assert!(took < Duration::from_secs(3), "took {took:?}");
    assert!(!jobs.is_empty(), "the column's jobs ran as processes");
    for pid in jobs {
        // Waited for by the tool before it exited: gone, not orphaned and still running.
        let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        assert!(
            state.is_empty(),
            "job process {pid} outlived the tool: {state}"
        );
    }
    assert!(leftovers(dir.path()).is_empty(), "test files removed");
    assert!(records(dir.path()).is_empty(), "no record");
}

#[test]
fn repeat_reports_every_pass_and_the_spread() {
    let dir = workdir();
    let out = output(run_cmd(
        dir.path(),
        &common::args("--only qd1-read,sync-write --repeat 3 --runtime 0.5"),
    ));
    assert!(out.status.success(), "{}", stderr(&out));
    let record = only_record(dir.path());
    assert_eq!(record.settings.repeat, 3);
    assert_eq!(record.tests.len(), 2);
    for t in &record.tests {
        let r = t.repeats.as_ref().unwrap();
        assert_eq!(r.runs, 3);
        assert_eq!(r.headline.len(), 3);
        assert!(r.headline.iter().all(|&h| h > 0.0), "{:?}", r.headline);
        let mut sorted = r.headline.clone();
        sorted.sort_by(f64::total_cmp);
        // The reported figures are the median pass's.
        assert_eq!(t.headline().unwrap(), sorted[1]);
        let spread = (sorted[2] - sorted[0]) / sorted[1] * 100.0;
        assert!((r.spread_pct - spread).abs() < 1e-9 && r.spread_pct >= 0.0);
        // Whether the passes agree within 5 % is said, not left to the reader.
        assert_eq!(r.within_5pct, Some(r.spread_pct <= 5.0));
    }
    assert!(String::from_utf8_lossy(&out.stdout).contains("over 3"));
}

#[test]
fn explicit_engines_are_honoured() {
    if !io_uring_available() {
        common::skip("io_uring is refused on this machine");
        return;
    }
    // io_uring at depth 1, including the linked write + fdatasync pair of sync-write.
    let dir = workdir();
    let out = output(run_cmd(
        dir.path(),
        &common::args("--only sync-write,qd1-read --engine io_uring --runtime 0.5"),
    ));
    assert!(out.status.success(), "{}", stderr(&out));
    let record = only_record(dir.path());
    assert_eq!(record.settings.engine, "io_uring");
    for t in &record.tests {
        assert_eq!(t.engine.used, "io_uring", "{}", t.id);
        assert!(t.main_direction().unwrap().ios > 0, "{}", t.id);
    }
    // psync at depth: one I/O in flight per job, and the record says so.
    let dir = workdir();
    let out = output(run_cmd(
        dir.path(),
        &common::args("--only rand-write --engine psync --runtime 0.5"),
    ));
    assert!(out.status.success(), "{}", stderr(&out));
    let t = &only_record(dir.path()).tests[0];
    assert_eq!(t.engine.used, "psync");
    assert!(t.engine.fallback.is_none());
    assert!(
        t.notes.iter().any(|n| n.contains("--iodepth 32 ran as 1")),
        "{:?}",
        t.notes
    );
}

/// On tmpfs every I/O completes inside the system call, so the figure is the I/O path's cost:
/// auto takes the published harness's path there (libaio, at every depth) where the file took
/// O_DIRECT (tmpfs since Linux 6.6), psync where it did not, and says why; on the work disk,
/// io_uring at depth and psync at depth 1.
#[test]
fn auto_uses_libaio_on_memory_and_io_uring_on_a_disk() {
    if !io_uring_available() {
        common::skip("io_uring is refused on this machine");
        return;
    }
    let Some(mem) = shm_tempdir() else {
        return;
    };
    let results = workdir();
    let out = output(run_cmd(
        results.path(),
        &[
            "--only",
            "rand-read,sync-write",
            "--dir",
            mem.path().to_str().unwrap(),
            "--runtime",
            "0.5",
        ],
    ));
    assert!(out.status.success(), "{}", stderr(&out));
    let record = only_record(results.path());
    assert_auto_on_memory(&record);
    // libaio (and psync, where tmpfs refused O_DIRECT) times the sync apart from its write, as
    // fio's libaio engine reports it.
    let w = record
        .test(ColumnId::SyncWrite)
        .unwrap()
        .write
        .as_ref()
        .unwrap();
    let total = w.lat_ns.as_ref().unwrap().mean.unwrap();
    let sync = w
        .sync_lat_ns
        .as_ref()
        .expect("the sync timed alone")
        .mean
        .unwrap();
    assert!(
        sync > 0 && sync <= total,
        "sync {sync} ns, write + sync {total} ns"
    );

    let disk = workdir();
    let out = output(run_cmd(
        disk.path(),
        &["--only", "rand-read", "--runtime", "0.5"],
    ));
    assert!(out.status.success(), "{}", stderr(&out));
    let t = &only_record(disk.path()).tests[0];
    assert_eq!(t.engine.used, "io_uring");
    assert!(!t.notes.iter().any(|n| n.contains("memory-backed")));
}

/// auto's choice on memory, for every column of `record`: libaio where the file took O_DIRECT,
/// psync where it did not; a choice, not a fallback, and the record says why.
fn assert_auto_on_memory(record: &Record) {
    for t in &record.tests {
        let want = if t.engine.direct { "libaio" } else { "psync" };
        assert_eq!(t.engine.used, want, "{}: direct {}", t.id, t.engine.direct);
        assert!(t.engine.fallback.is_none(), "a choice, not a fallback");
        assert!(
            t.notes.iter().any(|n| n.contains("memory-backed")),
            "{:?}",
            t.notes
        );
    }
}

/// A 1 s run of the write columns `only` on memory-backed `dir`, its record kept in `results`:
/// every column measures, and rand-write's 4 KiB writes number more than 1000, which memory
/// does in 1 s on any machine (a CPU-starved one included), whatever the backend.
fn measures_on_memory(dir: &Path, results: &Path, only: &str) -> Record {
    let mut args = vec!["--only", only, "--dir", dir.to_str().unwrap()];
    args.extend(common::QUICK_RUN_ARGS);
    let out = output(run_cmd(results, &args));
    assert!(out.status.success(), "{}", stderr(&out));
    let record = only_record(results);
    for t in &record.tests {
        assert!(t.write.as_ref().unwrap().ios > 0, "{}", t.id);
    }
    let rand_write = record.test(ColumnId::RandWrite).unwrap();
    let ios = rand_write.write.as_ref().unwrap().ios;
    assert!(ios > 1000, "{ios} 4 KiB writes in 1 s on memory");
    assert_auto_on_memory(&record);
    record
}

/// tmpfs: libaio where it takes O_DIRECT. Only the 4 KiB column: at depth 32, libaio copies
/// 32 whole I/Os before it reaps the first (as fio does there), so on a starved CPU a 1 MiB
/// column can end its window before one is counted.
#[test]
fn a_second_on_tmpfs_measures_many_ios_on_the_backend_recorded() {
    let Some(mem) = shm_tempdir() else {
        return;
    };
    let results = workdir();
    measures_on_memory(mem.path(), results.path(), "rand-write");
}

/// ramfs never takes O_DIRECT: auto runs psync there, one I/O in flight per job, and says so.
/// seq-write is the column libaio left with no completed I/O in a short window on a busy
/// machine (docs/design/memory-backed-filesystems.md).
#[test]
#[ignore = "needs root: .ci/run runs these as root with --ignored"]
fn a_second_on_ramfs_measures_many_ios_with_psync() {
    let mnt = workdir();
    let _mounted = common::Mounted::new("ramfs", "", mnt.path());
    let results = workdir();
    let record = measures_on_memory(mnt.path(), results.path(), "seq-write,rand-write");
    for t in &record.tests {
        assert!(!t.engine.direct, "{}: ramfs took O_DIRECT", t.id);
        assert_eq!(t.engine.used, "psync", "{}", t.id);
        assert!(
            t.notes.iter().any(|n| n.contains("without O_DIRECT"))
                && t.notes.iter().any(|n| n.contains("--iodepth 32 ran as 1")),
            "{}: {:?}",
            t.id,
            t.notes
        );
    }
}

/// A write column writes into new files allocated as fio allocates them by default
/// (unwritten extents), never into blocks written before; a read column reads files whose every
/// block holds written data. One file per job, as the published harness makes them.
#[test]
fn write_columns_start_on_unwritten_blocks_and_read_columns_on_written_data() {
    use engine::files::prep::extent_map;
    use engine::suite::{self, SuiteOptions};
    use std::os::unix::fs::MetadataExt;
    let dir = workdir();
    const SIZE: u64 = 16 << 20;
    let opts = SuiteOptions {
        dir: dir.path().to_path_buf(),
        size: SIZE,
        ..Default::default()
    };
    for column in ColumnId::ALL {
        let spec = suite::column_job(column, &opts, dir.path());
        let align = spec.validate().unwrap();
        let (files, prep) = suite::prepare_column_files(&spec, &align, &mut |_| {}).unwrap();
        assert_eq!(files.len() as u32, spec.numjobs, "{column}: a file per job");
        assert!(prep.fresh, "{column}");
        for f in &files {
            let path = &f.path;
            let blocks = std::fs::metadata(path).unwrap().blocks() * 512;
            assert_eq!(std::fs::metadata(path).unwrap().len(), SIZE, "{column}");
            if column.is_read() {
                assert_eq!(prep.method, "written", "{column}");
                if let Some(map) = extent_map(path) {
                    assert_eq!(map.unwritten, 0, "{column}: {map:?}");
                    assert!(map.written >= SIZE, "{column}: {map:?}");
                }
                assert!(blocks >= SIZE, "{column}: {blocks}");
                continue;
            }
            assert_eq!(prep.method, "fallocate", "{column}");
            match extent_map(path) {
                Some(map) if !prep.detail.contains("refused") => {
                    assert_eq!(map.written, 0, "{column}: {map:?}");
                    assert!(map.unwritten >= SIZE, "{column}: {map:?}");
                }
                // fallocate refused: nothing allocated, the writes will allocate.
                _ if prep.detail.contains("refused") => assert_eq!(blocks, 0, "{column}"),
                // No FIEMAP (tmpfs): the blocks are reserved, which is all st_blocks can say.
                _ => assert!(blocks >= SIZE, "{column}: {blocks}"),
            }
        }
        drop(files);
        for (path, _) in spec.files() {
            std::fs::remove_file(path).unwrap();
        }
    }
}

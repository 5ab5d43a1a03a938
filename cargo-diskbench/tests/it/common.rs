//! Helpers shared by the integration tests.

#![allow(dead_code)]

use std::path::PathBuf;
use std::process::{Command, Output};

/// The built `cargo-diskbench` binary.
pub fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_cargo-diskbench"))
}

/// Run the binary with `args` as `cargo-diskbench diskbench ARGS` would.
pub fn run(args: &[&str]) -> Output {
    bin()
        .args(args)
        .output()
        .expect("cannot start cargo-diskbench")
}

/// `cargo diskbench fio ARGS` run in `dir` (a disk-loading run: see [`disk_load`]).
pub fn fio_cmd(dir: &std::path::Path, args: &[&str]) -> Output {
    let _load = disk_load();
    bin()
        .current_dir(dir)
        .arg("fio")
        .args(args)
        .output()
        .expect("cannot start cargo-diskbench")
}

/// A file system of `fstype` mounted on `at` (made if missing) for the life of the guard, with
/// `opts` (`-o`, none when empty). Mounting needs root: the tests that use it are `#[ignore]`d
/// and `.ci/run` runs them as root.
pub struct Mounted(PathBuf);

impl Mounted {
    pub fn new(fstype: &str, opts: &str, at: &std::path::Path) -> Mounted {
        Mounted::from(std::path::Path::new(fstype), fstype, opts, at)
    }

    /// `source` (a device, or an image with `opts` `loop`) mounted as `fstype` on `at`.
    pub fn from(
        source: &std::path::Path,
        fstype: &str,
        opts: &str,
        at: &std::path::Path,
    ) -> Mounted {
        require_root();
        std::fs::create_dir_all(at).unwrap();
        let mut mount = Command::new("mount");
        mount.args(["-t", fstype]);
        if !opts.is_empty() {
            mount.args(["-o", opts]);
        }
        let ok = mount
            .arg(source)
            .arg(at)
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "cannot mount {fstype} on {}", at.display());
        Mounted(at.to_path_buf())
    }

    /// `src` bound on `at`, read-only (a read-only bind mount, as `docker -v src:at:ro`).
    pub fn bind_read_only(src: &std::path::Path, at: &std::path::Path) -> Mounted {
        require_root();
        std::fs::create_dir_all(at).unwrap();
        let mount = |args: &[&str]| {
            Command::new("mount")
                .args(args)
                .arg(src)
                .arg(at)
                .status()
                .is_ok_and(|s| s.success())
        };
        assert!(
            mount(&["--bind"]),
            "cannot bind {} on {}",
            src.display(),
            at.display()
        );
        let mounted = Mounted(at.to_path_buf());
        assert!(
            mount(&["-o", "remount,bind,ro"]),
            "cannot make {} read-only",
            at.display()
        );
        mounted
    }
}

impl Drop for Mounted {
    fn drop(&mut self) {
        let unmounted = Command::new("umount")
            .arg(&self.0)
            .status()
            .is_ok_and(|s| s.success());
        if !unmounted {
            // Busy for a moment (a child just exited): detach it rather than leak the mount.
            let _ = Command::new("umount").arg("-l").arg(&self.0).status();
        }
    }
}

/// Whether this test runs as root.
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and no side effects.
    unsafe { libc::geteuid() == 0 }
}

/// For a test that needs root (`#[ignore]`d, so `.ci/run` runs it as root with `--ignored`):
/// fails at once, saying so, when run without root.
pub fn require_root() {
    assert!(
        is_root(),
        "this test needs root: run it as root, as .ci/run does with --ignored"
    );
}

/// Whether a test that cannot run here must fail rather than skip: `.ci/run` sets
/// `DISKBENCH_TEST_STRICT=1`, so CI cannot pass by skipping.
pub fn strict() -> bool {
    std::env::var_os("DISKBENCH_TEST_STRICT").is_some_and(|v| !v.is_empty() && v != "0")
}

/// A test that cannot run in this environment: says why and returns (the caller returns too),
/// or fails under `DISKBENCH_TEST_STRICT`.
pub fn skip(why: &str) {
    assert!(
        !strict(),
        "{why}, and DISKBENCH_TEST_STRICT is set: install or allow what the test needs"
    );
    eprintln!("SKIPPED: {why} (set DISKBENCH_TEST_STRICT=1 to make this fail)");
}

/// The repository root.
pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The repository's test inputs: the published fixtures and generated records.
pub mod fixture {
    use std::path::PathBuf;

    /// fio 3.33's JSON report of the suite's jobs (`fixtures/fio/suite.fio`).
    pub const FIO_SUITE: &str = "fio/fio-3.33-suite.json";
    /// A published CSV of EC2 storage figures.
    pub const PUBLISHED_CSV: &str = "published/ec2-storage-2026-09-30_10-01.csv";

    /// A file under `fixtures/` (`fio/...`, `published/...`); panics naming it if it is missing.
    pub fn path(rel: &str) -> PathBuf {
        let p = super::repo_root().join("fixtures").join(rel);
        assert!(p.is_file(), "no fixture {}", p.display());
        p
    }

    /// The text of a file under `fixtures/`.
    pub fn read(rel: &str) -> String {
        let p = path(rel);
        std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("cannot read {}: {e}", p.display()))
    }

    /// The first `n` records of the small generated fleet: good records with steps, the same
    /// on every call.
    pub fn records(n: usize) -> Vec<record::Record> {
        site_gen::testdata::Fleet::small()
            .records()
            .into_iter()
            .take(n)
            .collect()
    }
}

use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

/// Pressure stall figures are machine-wide, so a test that judges what a build step waited on
/// must not run while another test of this binary loads the disk: it would count that test's
/// I/O as its own stall. Tests that judge take the write side; tests that load the disk take
/// the read side and still run alongside each other.
static DISK_QUIET: RwLock<()> = RwLock::new(());

/// For a test that judges a step's waits: no disk-loading test runs meanwhile.
pub fn disk_quiet() -> RwLockWriteGuard<'static, ()> {
    DISK_QUIET.write().unwrap_or_else(|e| e.into_inner())
}

/// For a test that loads the disk: waits while a judging test runs.
pub fn disk_load() -> RwLockReadGuard<'static, ()> {
    DISK_QUIET.read().unwrap_or_else(|e| e.into_inner())
}

/// The test's own scratch folder, on the work disk (target/tmp), not on tmpfs; removed when
/// dropped.
pub fn sandbox() -> tempfile::TempDir {
    tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("cannot create a temp folder")
}

/// Whether /dev/fuse opens here: `--like`'s latency emulation can run (else it says what
/// latency it leaves out, and the tests check that instead).
pub fn fuse_opens() -> bool {
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/fuse")
        .is_ok()
}

/// A results folder with the published EC2 storage figures imported (what `--like` reads).
pub fn published_results() -> tempfile::TempDir {
    let results = sandbox();
    let out = bin()
        .arg("import")
        .arg(fixture::path(fixture::PUBLISHED_CSV))
        .arg("--results")
        .arg(results.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    results
}

/// Folder trees: what is in them, to compare before and after a command.
pub mod tree {
    use std::collections::BTreeMap;
    use std::hash::{Hash, Hasher};
    use std::path::{Path, PathBuf};

    /// Every entry below `root` (not following symlinks), sorted, with its metadata.
    fn entries(root: &Path) -> Vec<(PathBuf, std::fs::Metadata)> {
        let mut out = Vec::new();
        let mut stack = vec![root.to_path_buf()];
        while let Some(d) = stack.pop() {
            let Ok(rd) = std::fs::read_dir(&d) else {
                continue;
            };
            for e in rd.flatten() {
                let p = e.path();
                let Ok(meta) = std::fs::symlink_metadata(&p) else {
                    continue;
                };
                if meta.is_dir() {
                    stack.push(p.clone());
                }
                out.push((p, meta));
            }
        }
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out
    }

    /// Every regular file below `root`, sorted.
    pub fn files(root: &Path) -> Vec<PathBuf> {
        entries(root)
            .into_iter()
            .filter(|(_, m)| m.is_file())
            .map(|(p, _)| p)
            .collect()
    }

    /// Every regular file and symlink below `root`, by path relative to it, with its bytes (a
    /// symlink's are `symlink -> TARGET`, so one is never read through by accident).
    pub fn contents(root: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
        let mut out = BTreeMap::new();
        for (p, meta) in entries(root) {
            let bytes = if meta.file_type().is_symlink() {
                format!("symlink -> {}", std::fs::read_link(&p).unwrap().display()).into_bytes()
            } else if meta.is_file() {
                std::fs::read(&p).unwrap()
            } else {
                continue;
            };
            out.insert(p.strip_prefix(root).unwrap().to_path_buf(), bytes);
        }
        out
    }

    /// Every entry below `root` with its kind and content hash, leaving out the entries
    /// below `except` (the folders a command was told to write).
    pub fn snapshot(root: &Path, except: &[&Path]) -> BTreeMap<PathBuf, String> {
        let mut out = BTreeMap::new();
        for (p, meta) in entries(root) {
            if except.iter().any(|x| p.starts_with(x)) {
                continue;
            }
            let kind = if meta.file_type().is_symlink() {
                format!("link -> {}", std::fs::read_link(&p).unwrap().display())
            } else if meta.is_dir() {
                "dir".to_string()
            } else if meta.is_file() && meta.len() < (1 << 20) {
                let mut h = std::collections::hash_map::DefaultHasher::new();
                std::fs::read(&p).unwrap().hash(&mut h);
                format!("file {} {:x}", meta.len(), h.finish())
            } else {
                format!("other {:?} {}", meta.file_type(), meta.len())
            };
            out.insert(p.strip_prefix(root).unwrap().to_path_buf(), kind);
        }
        out
    }
}

/// `steps` in `project` with its test files under `dir`, the record on stdout and no results
/// folder of the user's touched; `args` follow.
pub fn steps_cmd(project: &std::path::Path, dir: &std::path::Path, args: &[&str]) -> Command {
    let mut cmd = bin();
    cmd.current_dir(project)
        .args(["steps", "--dir"])
        .arg(dir)
        .args(["--json", "-", "--results"])
        .arg(project.join("no-results"))
        .args(args);
    cmd
}

/// The quickest run options that still measure: 4 MiB files, one measured second, no warm-up.
/// One second, not less: on a CPU-starved machine a 0.2 s window was seen to end with a
/// single 1 MiB write done on ramfs, and a window with no completed I/O has no figure to
/// record (docs/benchmarks/2026-12-02-dev-vm/memory-first-io.md).
pub const QUICK_RUN_ARGS: [&str; 6] = ["--size", "4M", "--runtime", "1", "--ramp", "0"];

/// Run `cmd` and read the record it printed on stdout.
pub fn run_json(cmd: &mut Command) -> (Output, serde_json::Value) {
    let out = cmd.output().expect("cannot start cargo-diskbench");
    let json = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not a record ({e}); stderr: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out, json)
}

/// Whitespace-separated arguments, as a test writes a command line (no argument holds a space).
pub fn args(line: &str) -> Vec<&str> {
    line.split_whitespace().collect()
}

/// What a command did: its exit status, and its output as text.
pub struct Ran {
    pub status: std::process::ExitStatus,
    pub stdout: String,
    pub stderr: String,
}

impl Ran {
    /// Run `cmd` to its end.
    pub fn of(cmd: &mut Command) -> Ran {
        let out = cmd
            .output()
            .unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}"));
        Ran {
            status: out.status,
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    /// It exited 0 (else fail, showing its stderr).
    #[track_caller]
    pub fn ok(self) -> Ran {
        assert!(self.status.success(), "{}", self.stderr);
        self
    }

    /// It exited with `code` (else fail, showing its stderr).
    #[track_caller]
    pub fn code(self, code: i32) -> Ran {
        assert_eq!(self.status.code(), Some(code), "{}", self.stderr);
        self
    }

    /// Its stderr holds `text`.
    #[track_caller]
    pub fn says(self, text: &str) -> Ran {
        assert!(
            self.stderr.contains(text),
            "no {text:?} in: {}",
            self.stderr
        );
        self
    }

    /// Its stderr does not hold `text`.
    #[track_caller]
    pub fn never_says(self, text: &str) -> Ran {
        assert!(!self.stderr.contains(text), "{text:?} in: {}", self.stderr);
        self
    }

    /// The record it printed on stdout.
    #[track_caller]
    pub fn record(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not a record ({e}); stderr: {}", self.stderr))
    }
}

/// The element of the JSON array `list` whose `id` is `id` (a step, a condition, a column).
#[track_caller]
pub fn by_id<'a>(list: &'a serde_json::Value, id: &str) -> &'a serde_json::Value {
    list.as_array()
        .unwrap_or_else(|| panic!("not a list: {list:#}"))
        .iter()
        .find(|x| x["id"] == id)
        .unwrap_or_else(|| panic!("no {id} in {list:#}"))
}

/// A sandboxed run: a project folder (commands run in it; its `diskbench.toml` says the
/// steps) and a `--dir` for the test files on the work disk, both removed when dropped.
pub struct Sandbox {
    pub project: tempfile::TempDir,
    pub dir: tempfile::TempDir,
}

impl Default for Sandbox {
    fn default() -> Self {
        Sandbox::new()
    }
}

impl Sandbox {
    pub fn new() -> Sandbox {
        Sandbox::with_dir(sandbox())
    }

    /// With `dir` as `--dir` (e.g. one on tmpfs).
    pub fn with_dir(dir: tempfile::TempDir) -> Sandbox {
        Sandbox {
            project: tempfile::tempdir().expect("cannot create a temp folder"),
            dir,
        }
    }

    /// With `toml` as the project's `diskbench.toml`.
    pub fn steps_toml(self, toml: &str) -> Sandbox {
        self.file("diskbench.toml", toml)
    }

    /// With `text` in the project's file `rel` (its folder made).
    pub fn file(self, rel: &str, text: &str) -> Sandbox {
        let path = self.project.path().join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
        self
    }

    pub fn project(&self) -> &std::path::Path {
        self.project.path()
    }

    pub fn dir(&self) -> &std::path::Path {
        self.dir.path()
    }

    /// `steps` here (see [`steps_cmd`]) with `line`'s arguments.
    pub fn steps(&self, line: &str) -> Command {
        steps_cmd(self.project(), self.dir(), &args(line))
    }

    /// `steps --what-if` here with `line`'s arguments.
    pub fn what_if(&self, line: &str) -> Command {
        let mut cmd = self.steps("--what-if");
        cmd.args(args(line));
        cmd
    }

    /// The binary in the project folder with `line`'s arguments and `--dir` last.
    pub fn cmd(&self, line: &str) -> Command {
        let mut cmd = bin();
        cmd.current_dir(self.project())
            .args(args(line))
            .arg("--dir")
            .arg(self.dir());
        cmd
    }

    /// Nothing is left in `--dir`.
    #[track_caller]
    pub fn assert_dir_empty(&self) {
        let left: Vec<_> = std::fs::read_dir(self.dir())
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .collect();
        assert!(left.is_empty(), "left behind in --dir: {left:?}");
    }
}

/// The tool with `args` run in `dir` under `strace` with `trace` (strace's own options), as a
/// disk-loading run; None, said through [`skip`], where strace is missing or may not trace.
pub fn strace(dir: &std::path::Path, trace: &[&str], args: &[&str]) -> Option<Output> {
    if Command::new("strace").arg("-V").output().is_err() {
        skip("strace not installed");
        return None;
    }
    let _load = disk_load();
    let out = Command::new("strace")
        .current_dir(dir)
        .args(trace)
        .arg(env!("CARGO_BIN_EXE_cargo-diskbench"))
        .args(args)
        .output()
        .expect("cannot start strace");
    if !out.status.success() && String::from_utf8_lossy(&out.stderr).contains("ptrace") {
        skip("ptrace not permitted here");
        return None;
    }
    Some(out)
}

/// Run `cmd` for at most `limit` (a regression may block forever, in open(2) on a FIFO or at a
/// barrier), its output to a file so a full pipe never blocks it: (exit code, stderr), the
/// code None when it had to be killed.
pub fn bounded(mut cmd: Command, limit: std::time::Duration) -> (Option<i32>, String) {
    use std::process::Stdio;
    let logs = tempfile::tempdir().unwrap();
    let err = logs.path().join("stderr");
    cmd.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&err).unwrap());
    let mut child = cmd.spawn().unwrap();
    let start = std::time::Instant::now();
    let code = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s.code();
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    (code, std::fs::read_to_string(&err).unwrap_or_default())
}

/// A FIFO at `path`.
pub fn mkfifo(path: &std::path::Path) {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

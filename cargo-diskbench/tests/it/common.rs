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

/// The repository root.
pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
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

/// A scratch folder on the work disk (target/tmp), not on tmpfs.
pub fn work_disk_dir() -> tempfile::TempDir {
    tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap()
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

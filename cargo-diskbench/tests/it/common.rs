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

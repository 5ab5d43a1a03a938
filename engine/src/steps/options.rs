//! What `cargo diskbench steps` (and `run`, for its steps) asks of the steps.

use std::ffi::OsString;
use std::path::PathBuf;

use crate::experiments::what_if::options::WhatIfOptions;

/// What to run and where. Construct with `..Default::default()` so fields can be added.
#[derive(Clone, Debug, Default)]
pub struct StepsOptions {
    /// The folder the steps work in (a scratch folder is made under it and removed).
    pub dir: PathBuf,
    /// The user's Cargo.toml; else found from the current directory.
    pub manifest_path: Option<PathBuf>,
    /// Only these step ids (None: all).
    pub only: Option<Vec<String>>,
    /// Stop at the first failed step.
    pub fail_fast: bool,
    /// Modules of the generated crate (None: [`super::cargo_build::DEFAULT_MODULES`]).
    pub generated_modules: Option<u32>,
    /// Size of the built-in docker context in MiB (None: [`super::docker_build::DEFAULT_CONTEXT_MIB`]).
    pub docker_context_mib: Option<u32>,
    /// Transactions of the sqlite step (None: [`super::sqlite::DEFAULT_TRANSACTIONS`]).
    pub sqlite_transactions: Option<u32>,
    /// Program and leading arguments that reach this binary's `steps` command, to which
    /// [`super::sqlite::WORKER_FLAG`] is appended (None: the current executable with
    /// `diskbench steps`).
    pub worker_command: Option<Vec<OsString>>,
    /// CPUs the verdicts compare with (None: what this process may use).
    pub vcpus: Option<u32>,
    /// Where `columns` come from when not from the same run, e.g. a record's file name;
    /// noted on each step.
    pub columns_source: Option<String>,
    /// `--what-if`: rerun each step on memory and with the disk capped (checked beforehand
    /// with [`crate::experiments::what_if::preflight::preflight`]).
    pub what_if: Option<WhatIfOptions>,
}

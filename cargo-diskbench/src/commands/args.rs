//! The options `run` and `steps` share, and the parsers that check a number's range by name.

use std::path::{Path, PathBuf};

use engine::session::{MAX_REPEAT, WhatIfRequest};

/// The what-if options, shared by `steps` and `run`.
#[derive(clap::Args, Debug, Default)]
pub struct WhatIfArgs {
    /// Rerun each step on memory (tmpfs), with the disk capped in I/Os per second, and in
    /// MiB/s; the verdict by experiment is recorded beside the inferred one (needs root)
    #[arg(long)]
    pub what_if: bool,
    /// I/Os per second of the iops-capped condition (reads and writes each)
    #[arg(long, value_name = "N", default_value_t = engine::session::DEFAULT_CAP_IOPS)]
    pub cap_iops: u64,
    /// MiB/s of the bandwidth-capped condition (reads and writes each)
    #[arg(long, value_name = "N", default_value_t = engine::session::DEFAULT_CAP_MIB_S)]
    pub cap_mib_s: u64,
    /// Also run each step (with --what-if) or the columns (run) under caps taken from this
    /// runner's figures in --results: its seq-read/seq-write MiB/s and rand-read/rand-write IOPS
    #[arg(long, value_name = "LABEL")]
    pub like: Option<String>,
    /// Exactly N runs per what-if condition (and of the normal run); without it, 3 each and
    /// more, up to 7, while their spread is wide; the verdict compares medians
    #[arg(long, value_name = "N")]
    pub what_if_repeat: Option<u32>,
    /// Seconds one step's what-if runs may take before no run past the 3 of each condition is
    /// added
    #[arg(long, value_name = "S", default_value_t = engine::session::DEFAULT_BUDGET_S)]
    pub what_if_budget_s: u64,
    /// Only these what-if conditions: memory, iops-capped, bandwidth-capped, like
    #[arg(long, value_name = "IDS", value_delimiter = ',')]
    pub what_if_only: Option<Vec<String>>,
}

impl WhatIfArgs {
    /// The options as the session takes them.
    pub fn request(&self) -> WhatIfRequest {
        WhatIfRequest {
            on: self.what_if,
            cap_iops: self.cap_iops,
            cap_mib_s: self.cap_mib_s,
            like: self.like.clone(),
            repeat: self.what_if_repeat,
            budget_s: self.what_if_budget_s,
            only: self.what_if_only.clone(),
        }
    }
}

/// `--dir` as given, else $GITHUB_WORKSPACE when set.
pub fn dir_or_workspace(dir: Option<&Path>) -> Option<PathBuf> {
    dir.map(Path::to_path_buf).or_else(|| {
        std::env::var_os("GITHUB_WORKSPACE")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    })
}

/// The shortest measured time per column: below it a column may complete no I/O at all.
pub const MIN_RUNTIME_S: f64 = 0.1;
pub const MAX_SECS: f64 = 3600.0;

/// `--provisioned IOPS,BANDWIDTH` (run and device), for clap.
pub fn provisioned(text: &str) -> std::result::Result<record::Provisioned, String> {
    record::Provisioned::parse("--provisioned", text)
}

/// `--runtime`: a number of seconds in MIN_RUNTIME_S..=MAX_SECS, named in the error.
pub fn runtime_secs(text: &str) -> std::result::Result<f64, String> {
    seconds_in("--runtime", text, MIN_RUNTIME_S)
}

/// `--repeat`: a number of passes in 1..=MAX_REPEAT. clap's own u32 parser answered a figure
/// beyond u32 with "not in 0..=4294967295", a range that suggests 0 and 4 billion are fine.
pub fn repeat_passes(text: &str) -> std::result::Result<u32, String> {
    text.trim()
        .parse::<u32>()
        .ok()
        .filter(|n| (1..=MAX_REPEAT).contains(n))
        .ok_or_else(|| format!("--repeat {text}: use 1 to {MAX_REPEAT} passes"))
}

/// `--ramp`: a number of seconds in 0..=MAX_SECS.
pub fn ramp_secs(text: &str) -> std::result::Result<f64, String> {
    seconds_in("--ramp", text, 0.0)
}

fn seconds_in(option: &str, text: &str, min: f64) -> std::result::Result<f64, String> {
    text.trim()
        .parse::<f64>()
        .ok()
        .filter(|s| s.is_finite() && (min..=MAX_SECS).contains(s))
        .ok_or_else(|| format!("{option} {text}: use a number of seconds from {min} to {MAX_SECS}"))
}

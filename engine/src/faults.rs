//! Faults a test injects through the environment, to drive the code paths of real refusals
//! (io_uring or O_DIRECT refused, a full disk met mid-run, a run stopped mid-cap). Read only
//! in a build with the `fault-injection` feature, which the integration tests' build turns on
//! (the CLI's dev-dependency): a release binary reads none of these variables.

use std::ffi::OsString;

/// The value of the fault variable `env`, when a test set it.
#[cfg(feature = "fault-injection")]
pub(crate) fn asked(env: &str) -> Option<OsString> {
    std::env::var_os(env)
}

/// Without the feature no fault is ever asked for.
#[cfg(not(feature = "fault-injection"))]
pub(crate) fn asked(_env: &str) -> Option<OsString> {
    None
}

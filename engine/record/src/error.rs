//! Errors that decide the exit code ([`crate::exit`]). Everything else is an `anyhow::Error`
//! and exits 1.

use crate::exit;

#[derive(Debug, thiserror::Error)]
pub enum Fatal {
    /// Bad usage or bad input. The message names the option or file and what to do.
    #[error("{0}")]
    Usage(String),
    /// Ctrl-C or SIGTERM arrived; what the run had made was cleaned up, nothing recorded.
    /// Said the same by every command (`site` and `import` make no test files).
    #[error("interrupted: what this run had started was cleaned up; no record written")]
    Interrupted,
    /// Ctrl-C or SIGTERM, said by a command that writes no record (`site`): what it did.
    #[error("interrupted: {0}")]
    InterruptedHaving(String),
}

/// A usage error (exit code 2) with the given message.
pub fn usage(message: impl Into<String>) -> anyhow::Error {
    Fatal::Usage(message.into()).into()
}

pub fn interrupted() -> anyhow::Error {
    Fatal::Interrupted.into()
}

/// An interruption (exit code 130) that says what the command did about it.
pub fn interrupted_having(done: impl Into<String>) -> anyhow::Error {
    Fatal::InterruptedHaving(done.into()).into()
}

/// The exit code an error maps to: looks through the whole context chain.
pub fn exit_code(err: &anyhow::Error) -> i32 {
    for cause in err.chain() {
        if let Some(f) = cause.downcast_ref::<Fatal>() {
            return match f {
                Fatal::Usage(_) => exit::USAGE,
                Fatal::Interrupted | Fatal::InterruptedHaving(_) => exit::INTERRUPTED,
            };
        }
    }
    exit::FAILED
}

#[cfg(test)]
mod tests {
    use super::*;
    use anyhow::Context;

    #[test]
    fn exit_code_sees_through_context() {
        let e = Err::<(), _>(usage("--bs: not a size"))
            .context("validating job")
            .unwrap_err();
        assert_eq!(exit_code(&e), exit::USAGE);
        assert_eq!(exit_code(&interrupted()), exit::INTERRUPTED);
        assert_eq!(exit_code(&anyhow::anyhow!("disk full")), exit::FAILED);
    }
}

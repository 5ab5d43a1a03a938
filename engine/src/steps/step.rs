//! What every build step is: one small interface that the built-in steps and the user's own
//! implement (fio's `ioengine_ops`, for build steps), so the loop that runs them, the what-if
//! experiments and the verdicts are the same for all of them.
//!
//! A step's life: [`Step::check`] once, before anything is measured (a missing program is a
//! reason to skip it, a broken project a reason to refuse the run); then for each run (the
//! normal one and every what-if condition) [`Step::prepare`] in a fresh work folder, the
//! [`Prepared::command`] timed by the shared child and probe machinery ([`super::child`]),
//! [`Prepared::cleanup`] whatever happened, and [`Step::notes`] from the run's figures.

use std::path::Path;
use std::process::Command;

use anyhow::Result;
use record::TestResult;

use super::child::Measured;
use super::daemon::{DaemonUsage, LocalDaemon};

/// One build step.
pub(crate) trait Step {
    /// The id: in the record, in `--only`, in the progress lines.
    fn id(&self) -> &str;

    /// What the record calls the step when it does not run (a run names itself in
    /// [`Prepared::name`]).
    fn name(&self) -> String;

    /// Whether the step can run here, asked once before anything is measured. `Err` refuses
    /// the whole run (a usage error, exit code 2); [`Readiness::Skip`] records the step as
    /// skipped, with the reason.
    fn check(&self) -> Result<Readiness>;

    /// Lay out the step's inputs in `work` (an empty folder, removed after the run), untimed,
    /// and say what will run.
    fn prepare(&self, work: &Path) -> Result<Prepared>;

    /// What the run's figures say beside the verdict (`columns`: this disk's, may be empty).
    fn notes(&self, _ran: &Ran, _columns: &[TestResult]) -> Vec<String> {
        Vec::new()
    }

    /// What a what-if experiment on this step should say about where its I/O happens.
    fn what_if_note(&self) -> Option<&'static str> {
        None
    }
}

/// Whether a step can run here.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Readiness {
    Ready,
    /// It cannot, for this reason (no docker engine answers): recorded as skipped.
    Skip(String),
}

/// Undone after a run whatever happened; a note when it could not be (an image left).
pub(crate) type Cleanup = Box<dyn FnOnce() -> Option<String>>;

/// One run of a step, made ready by [`Step::prepare`].
pub(crate) struct Prepared {
    /// What the record calls this run ("cold cargo build of a generated crate (48 modules)").
    pub name: String,
    /// The program the run times.
    pub command: Command,
    /// Said about the inputs (a generated crate, a fetch that failed).
    pub notes: Vec<String>,
    /// A local daemon that does part of the work: counted with the step and capped with it.
    pub daemon: Option<LocalDaemon>,
    pub cleanup: Option<Cleanup>,
    /// The compiler the command builds with, for steps that compile (the record's
    /// `toolchain`: week-to-week changes of the compiler are not the disk's).
    pub toolchain: Option<String>,
    /// A cargo step's target folder outside its work folder (a user step running cargo):
    /// the memory condition puts `CARGO_TARGET_DIR` on memory, seeded from it.
    pub cargo_target: Option<std::path::PathBuf>,
}

impl Prepared {
    pub(crate) fn new(name: String, command: Command) -> Prepared {
        Prepared {
            name,
            command,
            notes: Vec::new(),
            daemon: None,
            cleanup: None,
            toolchain: None,
            cargo_target: None,
        }
    }
}

/// A run's figures: the step's process tree and, when a local daemon did part of the work,
/// what the daemon's processes did meanwhile.
#[derive(Debug, Default)]
pub(crate) struct Ran {
    pub measured: Measured,
    pub daemon: Option<DaemonUsage>,
}

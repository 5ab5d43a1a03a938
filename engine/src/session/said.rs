//! A line for the person running the tool, from the engine: a warning, a note, or what was
//! done. Most reach the session's caller as [`super::Event::Said`]; code that has no caller
//! to return them to (a guard released while unwinding, a wait deep inside a step's cleanup)
//! hands them to the sink the program installed with [`install_sink`]. This file imports
//! nothing of the engine, so any room may use it.

use std::sync::OnceLock;

/// A line for the user; the program chooses how to show it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Said {
    /// Something that may need action (shown as `warning: ...`).
    Warning(String),
    /// Something worth knowing that needs no action (shown as `note: ...`).
    Note(String),
    /// What is being done or was done, e.g. a leftover removed or a wait (shown as it is).
    Status(String),
}

static SINK: OnceLock<fn(&Said)> = OnceLock::new();

/// Where lines said outside a session's callback go; set once by the program (later calls
/// are ignored). Without it they are dropped: a library user who wants them installs one.
pub fn install_sink(sink: fn(&Said)) {
    let _ = SINK.set(sink);
}

/// Say `said` through the installed sink.
pub(crate) fn tell(said: Said) {
    if let Some(sink) = SINK.get() {
        sink(&said);
    }
}

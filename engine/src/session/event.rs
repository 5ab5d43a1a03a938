//! What a session reports while it works, to the callback its caller gives
//! [`super::Session::run`].

use crate::job::run::Progress;
use crate::steps::StepEvent;

use super::said::Said;

/// One thing a session reports.
#[derive(Debug)]
#[non_exhaustive]
pub enum Event<'a> {
    /// The machine as detected, once, before anything is measured (the runner's label names
    /// its earlier records, e.g. for the steps' estimates).
    Detected { runner: &'a record::Runner },
    /// The suite's columns (and `fio`'s jobs): a column starts, lays out, ticks, ends.
    Suite(&'a Progress<'a>),
    /// The build steps: planned, started, a what-if run, finished.
    Step(StepEvent<'a>),
    /// A line for the user: a warning, a note, a leftover tidied away.
    Said(Said),
}

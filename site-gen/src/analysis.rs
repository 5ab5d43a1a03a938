//! What the data says: statistics, the index's findings and picks, a runner over time, and
//! steps ranked across runners. The wording of a conclusion lives apart from its deciding
//! (`correlation::wording`).

pub mod correlation;
pub(crate) mod findings;
pub mod history;
pub(crate) mod pick;
pub(crate) mod stats;
pub(crate) mod timeline;

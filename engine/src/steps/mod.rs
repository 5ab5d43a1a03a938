//! Real build steps: timed, with what they waited on, and a verdict on what bound them.
//!
//! Every step implements one interface, [`step::Step`]: the built-in [`cargo_build`],
//! [`docker_build`] and [`sqlite`], and the user's own from the project's config ([`user`]).
//! [`plan`] chooses and checks them before anything is measured and runs them in order; each
//! run (`timed_run`) happens in a scratch folder under `--dir` that is removed after the
//! step whatever happened, as a child in its own process group ([`child`]). Its signals
//! ([`probe`]) and this disk's columns give the inferred verdict ([`verdict`], apart from the
//! steps); `--what-if` reruns each step under other conditions ([`crate::experiments::what_if`]).

pub mod cargo_build;
pub(crate) mod child;
pub(crate) mod cpu_probe;
pub(crate) mod daemon;
pub mod docker_build;
pub(crate) mod options;
pub(crate) mod plan;
pub(crate) mod probe;
pub(crate) mod project;
pub mod sqlite;
pub(crate) mod step;
pub(crate) mod step_result;
pub(crate) mod timed_run;
pub(crate) mod user;
pub(crate) mod verdict;

pub use cpu_probe::cpu_reference;
pub use options::StepsOptions;
pub use plan::{
    BUILTIN_IDS, StepEvent, StepPlan, WhatIfEvent, WhatIfPlan, is_builtin, run_steps_with,
};

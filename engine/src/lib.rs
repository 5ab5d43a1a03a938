//! The measuring half of cargo-diskbench.
//!
//! Data flows one way: options -> job specs -> I/O backends -> a [`record::Record`]. The record
//! (its own crate, `diskbench-record`) is the only thing this crate shares with the site
//! generator; nothing here renders.

pub mod backend;
pub(crate) mod errno;
pub mod experiments;
pub mod files;
pub mod job;
pub mod machine;
pub mod measured;
pub mod steps;
pub mod suite;
pub mod tools;

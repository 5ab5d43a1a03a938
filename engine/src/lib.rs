//! The measuring half of cargo-diskbench.
//!
//! Data flows one way: options -> a [`session::Session`] -> job specs -> I/O backends -> a
//! [`record::Record`]. The session is the front: a program checks its options and runs it,
//! and hears what happens as events. The record (its own crate, `diskbench-record`) is the
//! only thing this crate shares with the site generator; nothing here renders or prints.

pub mod backend;
pub(crate) mod errno;
pub mod experiments;
pub(crate) mod faults;
pub mod files;
pub mod job;
pub(crate) mod leftovers;
pub mod machine;
pub mod session;
pub mod steps;
pub mod suite;
pub mod tools;

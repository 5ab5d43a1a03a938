//! The measuring half of cargo-diskbench.
//!
//! Data flows one way: options -> job specs -> I/O backends -> a [`record::Record`]. The record
//! (its own crate, `diskbench-record`) is the only thing this crate shares with the site
//! generator; nothing here renders.

pub mod backend;
pub mod cgroup;
pub(crate) mod cpu;
pub(crate) mod direct_io;
pub mod fileprep;
// fio's command-line syntax read into a job (`cargo diskbench fio`).
pub mod fio;
pub mod hist;
pub mod job;
mod job_loop;
mod job_process;
pub mod like;
pub mod machine;
pub mod measured;
pub(crate) mod prng;
pub mod run;
pub mod steps;
pub mod suite;
pub mod testfile;

//! The measuring half of cargo-diskbench.
//!
//! Data flows one way: options -> job specs -> I/O backends -> a [`record::Record`]. The record
//! (its own crate, `diskbench-record`) is the only thing this crate shares with the site
//! generator; nothing here renders.

pub mod backend;
pub mod cgroup;
pub(crate) mod cpu;
// Reading a block device, never writing it (`cargo diskbench device`).
pub mod device;
pub(crate) mod direct_io;
pub(crate) mod errno;
pub mod fileprep;
// fio's command-line syntax read into a job (`cargo diskbench fio`).
pub mod fio;
// fio's job files (`cargo diskbench fio FILE.fio`), read into jobs and groups.
pub mod fio_jobfile;
pub mod hist;
// ioping's latency probe (`cargo diskbench ioping`).
pub mod ioping;
pub mod job;
mod job_loop;
mod job_process;
pub mod like;
pub mod machine;
pub mod measured;
pub(crate) mod prng;
pub mod run;
pub(crate) mod shared_page;
pub mod steady_window;
pub mod steps;
pub mod suite;
pub mod testfile;

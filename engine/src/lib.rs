//! The measuring half of cargo-diskbench.
//!
//! Data flows one way: options -> job specs -> I/O backends -> [`record::Record`]. The record
//! is the only thing this crate shares with the site generator; nothing here renders.

pub mod cancel;
pub mod error;
pub mod job;
pub mod machine;
pub mod record;
pub mod results;
pub mod steps;
pub mod time;
pub mod units;
// ENGINE-MODULES (the I/O engine's modules are declared below this line)
pub mod backend;
pub mod cpu;
pub mod hist;
pub mod prng;
pub mod runner;
pub mod suite;
pub mod testfile;

// fio's command-line syntax read into a job (`cargo diskbench fio`).
pub mod ceiling;
pub mod fileprep;
pub mod fio;

//! The measuring half of cargo-diskbench.
//!
//! Data flows one way: options -> job specs -> I/O backends -> [`record::Record`]. The record
//! is the only thing this crate shares with the site generator; nothing here renders.
//!
//! The default feature `measure` holds everything that measures. A reader of records (the
//! site generator, a user's script) depends on this crate with `default-features = false`
//! and gets [`record`], [`results`], [`units`], [`time`], [`error`] and [`cancel`] without
//! io-uring, SQLite or cargo_metadata.
//!
//! Reading a results folder (the site's "Running a measurement" page shows the same):
//!
//! ```no_run
//! use diskbench_engine::record::{ColumnId, Record, SCHEMA};
//!
//! for entry in std::fs::read_dir("diskbench-results")? {
//!     let path = entry?.path();
//!     if path.extension().is_none_or(|e| e != "json") {
//!         continue;
//!     }
//!     let record: Record = serde_json::from_str(&std::fs::read_to_string(&path)?)?;
//!     if record.schema != SCHEMA {
//!         continue; // a schema this version does not know
//!     }
//!     if let Some(t) = record.test(ColumnId::Qd1Read) {
//!         println!("{}: {:?} IOPS, p99 {:?} ns", record.runner.label, t.headline(), t.p99_ns());
//!     }
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

// What a storage class can physically deliver (figures above it came from a cache).
pub mod cancel;
pub mod ceiling;
pub mod cgroup;
pub mod error;
pub mod input;
pub mod job;
pub mod machine;
pub mod record;
pub mod results;
pub mod safe_name;
#[cfg(feature = "measure")]
pub mod steps;
pub mod time;
pub mod units;
// ENGINE-MODULES (the I/O engine's modules are declared below this line)
#[cfg(feature = "measure")]
pub mod backend;
#[cfg(feature = "measure")]
pub mod cpu;
#[cfg(feature = "measure")]
pub mod hist;
#[cfg(feature = "measure")]
mod job_process;
pub mod prng;
#[cfg(feature = "measure")]
pub mod runner;
pub mod suite;
#[cfg(feature = "measure")]
pub mod testfile;

// How a test file is prepared (fio's fallocate modes, FIEMAP).
#[cfg(feature = "measure")]
pub mod fileprep;

// fio's command-line syntax read into a job (`cargo diskbench fio`).
#[cfg(feature = "measure")]
pub mod fio;

//! The tools this one speaks for, each with its own syntax and output: fio's command line and
//! job files, ioping's probe, and the reader of a block device. The suite never meets them;
//! each turns its syntax into jobs (or device reads) and its figures back into its output.

// Reading a block device, never writing it (`cargo diskbench device`).
pub mod device;
// fio's command-line syntax read into a job (`cargo diskbench fio`).
pub mod fio;
// fio's job files (`cargo diskbench fio FILE.fio`), read into jobs and groups.
pub mod fio_jobfile;
// ioping's latency probe (`cargo diskbench ioping`).
pub mod ioping;

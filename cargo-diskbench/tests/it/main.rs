//! All integration tests, in one binary (it links once). One module per area.

// clippy.toml lets `#[test]` functions unwrap; the helpers beside them may too: in a test a
// panic is the failure report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod concurrent_runs;
mod destinations;
mod engine;
mod github;
mod hardening;
mod histograms;
mod layout;
mod limits;
mod machine;
mod manual;
mod schema;
mod site;
mod steps;
mod whatif;

// fio-syntax jobs (`cargo diskbench fio`).
mod fio;
// fio job files (`cargo diskbench fio FILE.fio`), beside fio itself.
mod fio_jobfile;
// Reading a block device, never writing it (`cargo diskbench device`).
mod device;
// ioping's probe (`cargo diskbench ioping`), beside ioping itself.
mod ioping;
// --provisioned IOPS,BANDWIDTH on run, fio and device.
mod provisioned;
// `run --like`: an emulation is its own runner, and says which latency it leaves out.
mod like;

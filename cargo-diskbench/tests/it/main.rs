//! All integration tests, in one binary (it links once). One module per area.

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
mod site;
mod steps;
mod whatif;

// fio-syntax jobs (`cargo diskbench fio`).
mod fio;

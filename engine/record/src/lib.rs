//! The record of a cargo-diskbench run, and everything a reader of records needs.
//!
//! One JSON file per run (CONTRACT section 4) is the only thing the measuring engine and the
//! site generator share. This crate holds its types ([`Record`] and the rest, at the crate's
//! root), the six columns and their settings ([`column`]), the fact tables that decide and
//! explain a storage class ([`storage_rules`], [`ceiling`]), how figures are written for people
//! ([`units`], [`size`]), and the results folder ([`results`]): file names, the no-clobber
//! atomic writer, reading. It depends on serde and a few small crates; nothing here measures
//! or renders, so a script that reads records builds in seconds.
//!
//! The README below is this crate's front page; its example is compiled as a doc test.
#![doc = ""]
#![doc = include_str!("../README.md")]

pub mod cancel;
pub mod ceiling;
pub mod column;
pub mod error;
pub mod exit;
pub mod input;
pub mod load;
pub mod machine_facts;
pub mod parallel;
pub mod provisioned;
pub mod random;
mod record;
pub mod results;
pub mod safe_name;
pub mod size;
pub mod storage_rules;
pub mod time;
pub mod units;
pub mod what_if_notes;

pub use column::{BackendKind, ColumnId, ColumnSettings, Headline, Medium};
pub use record::*;

/// The JSON schema of a [`Record`], derived from its types, as committed in
/// `jsonschemas/record.json` (pretty-printed, one trailing newline).
#[cfg(feature = "schema")]
pub fn json_schema() -> String {
    let schema = schemars::schema_for!(Record);
    let mut text = serde_json::to_string_pretty(&schema).unwrap_or_default();
    text.push('\n');
    text
}

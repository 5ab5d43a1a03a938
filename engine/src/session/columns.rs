//! The disk figures a `steps` run judges its steps by: this disk's columns from the newest
//! measured record of this machine and this storage in the results folder.

use std::path::Path;

use record::{Record, TestResult};

/// The six columns of the newest measured record for this machine and this storage.
pub(crate) fn newest_columns(
    results_dir: &Path,
    runner: &record::Runner,
    storage: &record::Storage,
    dir: &Path,
) -> Option<(Vec<TestResult>, String)> {
    let here = std::fs::canonicalize(dir).ok();
    let mut best: Option<(String, Vec<TestResult>, String)> = None;
    for entry in std::fs::read_dir(results_dir).ok()?.flatten() {
        let path = entry.path();
        if path.extension().and_then(|e| e.to_str()) != Some("json") {
            continue;
        }
        let Ok(text) = record::input::read_text(&path) else {
            continue;
        };
        // Records of another schema are for other readers: not an error here.
        let Ok(rec) = serde_json::from_str::<Record>(&text) else {
            continue;
        };
        // A run under --like caps measured another disk's figures, not this one's.
        if rec.schema != record::SCHEMA
            || rec.is_imported()
            || rec.settings.like.is_some()
            || rec.runner.label != runner.label
            || (rec.runner.hostname.is_some() && rec.runner.hostname != runner.hostname)
        {
            continue;
        }
        let same_storage = if !storage.mount_source.is_empty()
            && !rec.storage.mount_source.is_empty()
        {
            rec.storage.mount_source == storage.mount_source && rec.storage.fstype == storage.fstype
        } else {
            here.is_some() && std::fs::canonicalize(&rec.storage.path).ok() == here
        };
        let has_seq = rec
            .tests
            .iter()
            .any(|t| t.id == "seq-read" || t.id == "seq-write");
        if !same_storage || !has_seq {
            continue;
        }
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if best.as_ref().is_none_or(|(at, _, _)| rec.finished_at > *at) {
            best = Some((rec.finished_at.clone(), rec.tests, name));
        }
    }
    best.map(|(_, tests, name)| (tests, name))
}

//! `cargo diskbench merge`: add downloaded records (CI artifacts) to a results folder.
//!
//! The results folder is an append-only history: merging only ever adds files. Each source
//! record is validated, de-duplicated by its `id` against the folder and the other sources, and
//! copied byte for byte (so fields a newer version added survive) under the contract's file name.
//! Everything is checked before anything is written: a conflict leaves the folder untouched.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use record::results::{file_name, label_slug};
use record::{Record, SCHEMA};

/// What to merge where.
#[derive(Clone, Debug, Default)]
pub struct MergeOptions {
    /// The accumulated results folder (created if missing).
    pub into: PathBuf,
    /// Record files, or folders searched recursively for `*.json`.
    pub sources: Vec<PathBuf>,
    /// Runner labels that were asked for; those that produced no record are reported missing.
    pub expect: Vec<String>,
    /// A bad source file is an error (exit 2) instead of being reported and skipped.
    pub strict: bool,
}

/// What a merge did (or, with an error, would have done: nothing is written then).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MergeReport {
    /// (source, file written in the results folder).
    pub added: Vec<(PathBuf, PathBuf)>,
    /// (source, the file that already holds the same record: one in the results folder, or
    /// the source merged first).
    pub duplicates: Vec<(PathBuf, PathBuf)>,
    /// Source files that are not records this version reads, with the reason.
    pub rejected: Vec<(PathBuf, String)>,
    /// Files already in the results folder that could not be read (left as they are).
    pub unreadable_existing: Vec<(PathBuf, String)>,
    /// Expected labels with no record among the sources.
    pub missing: Vec<String>,
    /// Labels of the valid source records (added or duplicate), sorted, each once.
    pub labels: Vec<String>,
}

/// Where a record with a given id lives, and its content for comparison.
struct Known {
    path: PathBuf,
    value: serde_json::Value,
}

/// A source record that passed validation.
struct Candidate {
    path: PathBuf,
    bytes: Vec<u8>,
    value: serde_json::Value,
    record: Record,
}

pub fn merge(opts: &MergeOptions) -> Result<MergeReport> {
    let mut report = MergeReport::default();

    // What the folder already holds, by id.
    let mut known: BTreeMap<String, Known> = BTreeMap::new();
    if opts.into.exists() {
        if !opts.into.is_dir() {
            return Err(record::error::usage(format!(
                "--into {}: not a folder; give the results folder",
                opts.into.display()
            )));
        }
        for path in record::load::json_files(&opts.into)? {
            record::cancel::check()?;
            match read_record(&path) {
                Ok((_, value, record)) => {
                    known
                        .entry(record.id.clone())
                        .or_insert(Known { path, value });
                }
                Err(reason) => report.unreadable_existing.push((path, reason)),
            }
        }
    }

    // Every source file, validated.
    let mut candidates = Vec::new();
    for source in &opts.sources {
        let files = if source.is_dir() {
            record::load::json_files(source)?
        } else if fs::symlink_metadata(source).is_ok() {
            // Whatever it is, read_record opens it as an input and says why it is refused.
            vec![source.clone()]
        } else {
            return Err(record::error::usage(format!(
                "{}: no such file or folder; give record files or folders of downloaded artifacts",
                source.display()
            )));
        };
        for path in files {
            record::cancel::check()?;
            match read_record(&path) {
                Ok((bytes, value, record)) => candidates.push(Candidate {
                    path,
                    bytes,
                    value,
                    record,
                }),
                Err(reason) => report.rejected.push((path, reason)),
            }
        }
    }
    if opts.strict && !report.rejected.is_empty() {
        let list: Vec<String> = report
            .rejected
            .iter()
            .map(|(p, r)| format!("{}: {r}", p.display()))
            .collect();
        return Err(record::error::usage(format!(
            "--strict: {} bad record file(s), nothing merged: {}",
            list.len(),
            list.join("; ")
        )));
    }

    // Plan: decide every candidate's fate before writing anything.
    let mut planned: BTreeMap<String, PathBuf> = BTreeMap::new(); // target name -> source
    let mut to_write: Vec<(Candidate, PathBuf)> = Vec::new();
    let mut labels = Vec::new();
    for candidate in candidates {
        labels.push(candidate.record.runner.label.clone());
        if let Some(existing) = known.get(&candidate.record.id) {
            if existing.value == candidate.value {
                report
                    .duplicates
                    .push((candidate.path, existing.path.clone()));
                continue;
            }
            return Err(record::error::usage(format!(
                "{} and {} hold different records with the same id {}; nothing merged \
                 (remove the wrong one and merge again)",
                candidate.path.display(),
                existing.path.display(),
                candidate.record.id
            )));
        }
        let target = opts.into.join(file_name(&candidate.record));
        if target.exists() || planned.contains_key(&file_name(&candidate.record)) {
            let other = planned
                .get(&file_name(&candidate.record))
                .cloned()
                .unwrap_or_else(|| target.clone());
            return Err(record::error::usage(format!(
                "{} would be written as {}, which {} already takes with another id; \
                 nothing merged",
                candidate.path.display(),
                target.display(),
                other.display()
            )));
        }
        planned.insert(file_name(&candidate.record), candidate.path.clone());
        known.insert(
            candidate.record.id.clone(),
            Known {
                path: candidate.path.clone(),
                value: candidate.value.clone(),
            },
        );
        to_write.push((candidate, target));
    }

    // Apply: only new files, each atomically.
    if !to_write.is_empty() {
        fs::create_dir_all(&opts.into)
            .with_context(|| format!("cannot create the results folder {}", opts.into.display()))?;
    }
    for (candidate, target) in to_write {
        record::cancel::check()?;
        record::results::write_new_file(&opts.into, &target, &candidate.bytes)?;
        report.added.push((candidate.path, target));
    }

    let present: Vec<String> = labels.iter().map(|l| label_slug(l)).collect();
    report.missing = opts
        .expect
        .iter()
        .filter(|label| !present.contains(&label_slug(label)))
        .cloned()
        .collect();
    labels.sort();
    labels.dedup();
    report.labels = labels;
    Ok(report)
}

/// The file's bytes, its JSON value and the record; or why it is not a record this version reads.
fn read_record(path: &Path) -> std::result::Result<(Vec<u8>, serde_json::Value, Record), String> {
    let bytes = record::input::read(path).map_err(|e| e.to_string())?;
    let value: serde_json::Value =
        serde_json::from_slice(&bytes).map_err(|e| format!("not JSON: {e}"))?;
    match value.get("schema").and_then(|s| s.as_str()) {
        Some(SCHEMA) => {}
        Some(other) => {
            return Err(format!(
                "schema {other:?} is not one this version reads ({SCHEMA})"
            ));
        }
        None => return Err(format!("no \"schema\" field: not a {SCHEMA} record")),
    }
    let record: Record =
        serde_json::from_value(value.clone()).map_err(|e| format!("not a valid record: {e}"))?;
    if record.id.trim().is_empty() {
        return Err("the record has an empty id".into());
    }
    record::load::check_record(&record)?;
    // A histogram the site cannot draw would stop every later site build: refused here.
    for t in &record.tests {
        for (dir, d) in [("read", &t.read), ("write", &t.write)] {
            let Some(d) = d else { continue };
            for (field, h) in [("hist", &d.hist), ("sync_hist", &d.sync_hist)] {
                if let Some(h) = h.as_deref() {
                    crate::data::hist::check_stored(h)
                        .map_err(|why| format!("field tests[{:?}].{dir}.{field}: {why}", t.id))?;
                }
            }
        }
    }
    Ok((bytes, value, record))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_is_never_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("a.json");
        record::results::write_new_file(dir.path(), &target, b"first").unwrap();
        assert!(record::results::write_new_file(dir.path(), &target, b"second").is_err());
        assert_eq!(fs::read(&target).unwrap(), b"first");
        // No temporary file is left behind either way.
        let names: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("a.json")]);
    }

    #[test]
    fn unknown_schema_is_refused_with_the_reason() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.json");
        fs::write(&path, r#"{"schema":"diskbench.record/9","id":"x"}"#).unwrap();
        let reason = read_record(&path).unwrap_err();
        assert!(reason.contains("diskbench.record/9"), "{reason}");
        fs::write(&path, "{\"schema\":").unwrap();
        assert!(read_record(&path).unwrap_err().starts_with("not JSON"));
    }
}

//! The results folder: one record per run, written atomically, never overwriting another.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::Record;
use crate::safe_name::{NameKind, name};

/// Where records accumulate when `--results` is not given (relative to the current dir).
pub const DEFAULT_RESULTS_DIR: &str = "diskbench-results";
/// Where `site` writes when `--out` is not given.
pub const DEFAULT_SITE_DIR: &str = "diskbench-site";

/// A runner label as the slug of its record file names and its page.
pub fn label_slug(label: &str) -> String {
    name(label, NameKind::Slug, "runner")
}

/// `<UTC date>-<label slug>-<short id>.json`, as the contract fixes it.
/// Every part comes from the record, so each goes through [`crate::safe_name::name`]: a
/// `started_at` of `../../x` gives `0000-00-00`, never a path.
pub fn file_name(record: &Record) -> String {
    let date = match crate::time::parse_utc_secs(&record.started_at) {
        Some(_) => name(&record.started_at[..10], NameKind::File, "0000-00-00"),
        None => "0000-00-00".to_string(),
    };
    let short: String = name(&record.id, NameKind::Slug, "0")
        .chars()
        .take(8)
        .collect();
    let short = name(&short, NameKind::File, "0");
    let label = label_slug(&record.runner.label);
    format!("{date}-{label}-{short}.json")
}

/// Write `record` into `dir` atomically under its contract file name; never replaces a file.
/// Returns the path written.
pub fn write_record(dir: &Path, record: &Record) -> Result<PathBuf> {
    fs::create_dir_all(dir)
        .with_context(|| format!("cannot create the results folder {}", dir.display()))?;
    let mut json = serde_json::to_vec_pretty(record).context("cannot serialise the record")?;
    json.push(b'\n');
    let path = dir.join(file_name(record));
    write_new_file(dir, &path, &json)?;
    Ok(path)
}

/// Write `bytes` to `target` (in `dir`) atomically without ever replacing a file: a temporary
/// file is written and synced, then hard-linked to the target name (a link fails if the name
/// exists, where a rename would silently overwrite), then the folder is synced so the new
/// name is durable. The temporary file is removed whatever happens.
pub fn write_new_file(dir: &Path, target: &Path, bytes: &[u8]) -> Result<()> {
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    // The name must be one plain component directly in `dir`: a name built from data never
    // lands anywhere else, whatever went wrong in building it.
    if target.parent() != Some(dir) || crate::safe_name::inside(dir, &name).is_err() {
        return Err(crate::error::usage(format!(
            "refusing to write {}: not a plain file name directly in {}",
            target.display(),
            dir.display()
        )));
    }
    let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    let result = (|| -> Result<()> {
        let mut f = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)
            .with_context(|| format!("cannot create {}", tmp.display()))?;
        f.write_all(bytes)
            .and_then(|_| f.sync_all())
            .with_context(|| format!("cannot write {}", tmp.display()))?;
        // The last moment a Ctrl-C can still mean "no record": check it here, for every
        // command that writes records.
        crate::cancel::check()?;
        fs::hard_link(&tmp, target).with_context(|| {
            format!(
                "cannot add {} (records are never overwritten; is this record already there?)",
                target.display()
            )
        })?;
        if let Ok(d) = File::open(dir) {
            let _ = d.sync_all();
        }
        Ok(())
    })();
    let _ = fs::remove_file(&tmp);
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_slug_is_file_and_url_safe() {
        assert_eq!(label_slug("ubuntu-24.04-arm"), "ubuntu-24-04-arm");
        assert_eq!(label_slug("../../etc/passwd"), "etc-passwd");
        assert_eq!(label_slug("///"), "runner");
    }

    #[test]
    fn file_names_from_hostile_records_stay_plain() {
        let mut r = Record {
            schema: crate::SCHEMA.into(),
            id: "../../x".into(),
            source: "measured".into(),
            source_file: None,
            started_at: String::new(),
            finished_at: String::new(),
            tool: Default::default(),
            runner: crate::Runner {
                label: "../..".into(),
                ..Default::default()
            },
            storage: Default::default(),
            settings: Default::default(),
            tests: Vec::new(),
            steps: Vec::new(),
            cpu_reference: None,
            notes: Vec::new(),
        };
        for started in [
            "../../../x",
            "2026-02-31T00:00:00Z",
            "/etc/passwd",
            "2026-01-01<x>",
        ] {
            r.started_at = started.into();
            let name = file_name(&r);
            assert!(name.starts_with("0000-00-00-"), "{name}");
            assert!(!name.contains('/') && !name.starts_with('.'), "{name}");
        }
        r.started_at = "2026-11-30T10:00:00Z".into();
        assert!(file_name(&r).starts_with("2026-11-30-"));
    }
}

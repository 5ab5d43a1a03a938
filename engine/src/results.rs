//! The results folder: one record per run, written atomically, never overwriting another.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::record::Record;

/// Where records accumulate when `--results` is not given (relative to the current dir).
pub const DEFAULT_RESULTS_DIR: &str = "diskbench-results";
/// Where `site` writes when `--out` is not given.
pub const DEFAULT_SITE_DIR: &str = "diskbench-site";

/// A fresh random id: 16 hex digits from the kernel's CSPRNG.
pub fn new_id() -> String {
    let mut bytes = [0u8; 8];
    // SAFETY: getrandom writes at most `bytes.len()` bytes into the buffer we own.
    let n = unsafe { libc::getrandom(bytes.as_mut_ptr().cast(), bytes.len(), 0) };
    if n != bytes.len() as isize {
        // Never fatal: fall back to time and pid, which are unique enough for a file name.
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0);
        bytes = (t ^ ((std::process::id() as u64) << 40)).to_le_bytes();
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A label reduced to `[a-z0-9-]`, safe in a file name and a URL; never empty.
pub fn slug(label: &str) -> String {
    let mut out = String::new();
    for ch in label.chars() {
        let c = ch.to_ascii_lowercase();
        if c.is_ascii_alphanumeric() {
            out.push(c);
        } else if !out.ends_with('-') && !out.is_empty() {
            out.push('-');
        }
    }
    let out = out.trim_end_matches('-');
    let out: String = out.chars().take(60).collect();
    if out.is_empty() { "runner".into() } else { out }
}

/// `<UTC date>-<label slug>-<short id>.json`, as the contract fixes it.
pub fn file_name(record: &Record) -> String {
    let date = record.started_at.get(..10).unwrap_or("0000-00-00");
    let short: String = slug(&record.id).chars().take(8).collect();
    format!("{date}-{}-{short}.json", slug(&record.runner.label))
}

/// Write `record` into `dir` atomically (temporary file, fsync, rename, fsync of the folder).
/// Refuses to replace an existing file; returns the path written.
pub fn write_record(dir: &Path, record: &Record) -> Result<PathBuf> {
    fs::create_dir_all(dir)
        .with_context(|| format!("cannot create the results folder {}", dir.display()))?;
    let path = dir.join(file_name(record));
    if path.exists() {
        anyhow::bail!(
            "{} already exists; records are never overwritten (is this record already there?)",
            path.display()
        );
    }
    let json = serde_json::to_vec_pretty(record).context("cannot serialise the record")?;
    let tmp = dir.join(format!(".{}.tmp", file_name(record)));
    let result = (|| -> Result<()> {
        let mut f = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)
            .with_context(|| format!("cannot create {}", tmp.display()))?;
        f.write_all(&json)
            .and_then(|_| f.write_all(b"\n"))
            .and_then(|_| f.sync_all())
            .with_context(|| format!("cannot write {}", tmp.display()))?;
        fs::rename(&tmp, &path)
            .with_context(|| format!("cannot rename {} to {}", tmp.display(), path.display()))?;
        // The rename is durable only once the folder is synced.
        if let Ok(d) = File::open(dir) {
            let _ = d.sync_all();
        }
        Ok(())
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result.map(|_| path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slug_is_file_and_url_safe() {
        assert_eq!(slug("ubuntu-24.04-arm"), "ubuntu-24-04-arm");
        assert_eq!(slug("../../etc/passwd"), "etc-passwd");
        assert_eq!(slug("<script>alert(1)</script>"), "script-alert-1-script");
        assert_eq!(slug("///"), "runner");
    }

    #[test]
    fn ids_are_hex_and_distinct() {
        let a = new_id();
        let b = new_id();
        assert_eq!(a.len(), 16);
        assert!(a.chars().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, b);
    }
}

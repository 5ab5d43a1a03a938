//! `cargo diskbench import`: fio JSON output and CSVs of published figures become records.

use std::path::{Path, PathBuf};

use anyhow::Result;

/// Import each file into `results`; returns the records written. Placeholder until the site issue lands.
pub fn import_files(files: &[PathBuf], results: &Path) -> Result<Vec<PathBuf>> {
    let _ = (files, results);
    Ok(Vec::new())
}

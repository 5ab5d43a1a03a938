//! The rendering half of cargo-diskbench: loads records from a results folder and writes a
//! static report site. Nothing here measures.

use std::path::PathBuf;

use anyhow::Result;

pub mod import;
pub mod merge;
pub mod summary;
// SITE-MODULES (the site's modules are declared below this line)

/// What `cargo diskbench site` was asked to do.
#[derive(Clone, Debug, Default)]
pub struct SiteOptions {
    /// The folder of records (read recursively, never modified).
    pub results: PathBuf,
    /// Where the site is written.
    pub out: PathBuf,
    /// A theme folder whose files override the built-in ones, file by file.
    pub theme: Option<PathBuf>,
    /// Treat a bad record as an error instead of skipping it.
    pub strict: bool,
}

/// What was built.
#[derive(Clone, Debug, Default)]
pub struct SiteReport {
    pub records: usize,
    /// Files left out, with the reason.
    pub skipped: Vec<(PathBuf, String)>,
    pub pages: usize,
}

/// Build the site. Placeholder until the site issue lands.
pub fn build_site(opts: &SiteOptions) -> Result<SiteReport> {
    let _ = opts;
    Ok(SiteReport::default())
}

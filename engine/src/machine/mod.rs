//! Machine facts: the filesystem, device chain and storage class under `--dir`, and the
//! runner's identity. Fills the record's `runner` and `storage` sections.
//!
//! Everything is read through [`SysView`], so the same code runs on the live system and on
//! recorded fixture folders (`engine/tests/fixtures/machine/`). Nothing here needs root and
//! nothing fails: what cannot be read is reported as unknown, with the reason.

pub(crate) mod blockdev;
pub(crate) mod class;
#[cfg(test)]
mod fixture_tests;
pub(crate) mod mountinfo;
pub(crate) mod runner;
pub(crate) mod storage;
pub(crate) mod sysview;

use std::path::Path;

pub(crate) use sysview::SysView;

use record::{Runner, Storage};

/// Detect the runner and the storage under `dir` on this machine. Never fails: what cannot be
/// read is reported as unknown with the reason.
pub fn detect(dir: &Path, label: Option<&str>) -> (Runner, Storage) {
    let view = SysView::live();
    let (path, note) = match dir.canonicalize() {
        Ok(p) => (p.display().to_string(), None),
        Err(e) => {
            let abs = std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf());
            let why = format!(
                "cannot resolve {}: {e}; looked up as written",
                dir.display()
            );
            (abs.display().to_string(), Some(why))
        }
    };
    let (runner, mut storage) = detect_in(&view, &path, label);
    storage.notes.extend(note);
    (runner, storage)
}

/// Detect through any view; `dir` is an absolute path as the view's machine sees it.
pub(crate) fn detect_in(view: &SysView, dir: &str, label: Option<&str>) -> (Runner, Storage) {
    (runner::detect(view, label), storage::detect(view, dir))
}

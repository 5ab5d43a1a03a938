//! Machine facts: the filesystem, device chain and storage class under `--dir`, and the
//! runner's identity. Fills the record's `runner` and `storage` sections.

use std::path::Path;

use crate::record::{Runner, Storage};

/// Detect the runner and the storage under `dir`. Never fails: what cannot be read is
/// reported as unknown with the reason.
pub fn detect(dir: &Path, label: Option<&str>) -> (Runner, Storage) {
    // Placeholder until the machine issue lands: the minimum the record needs.
    let runner = Runner {
        label: label.unwrap_or("local").to_string(),
        arch: std::env::consts::ARCH.to_string(),
        vcpus: std::thread::available_parallelism()
            .map(|n| n.get() as u32)
            .unwrap_or(1),
        ..Default::default()
    };
    let storage = Storage {
        path: dir.display().to_string(),
        ..Default::default()
    };
    (runner, storage)
}

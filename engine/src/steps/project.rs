//! The project the steps are about: the Cargo workspace found from `--manifest-path` or the
//! current directory, or the current directory when there is none.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use record::error::usage;

/// The project the steps are about: the Cargo workspace, or the current directory.
#[derive(Clone, Debug)]
pub(crate) struct Project {
    pub root: PathBuf,
    /// The workspace root's Cargo.toml, when there is a Cargo project.
    pub manifest: Option<PathBuf>,
}

/// Find the Cargo workspace from `manifest_path` or the current directory.
pub(crate) fn find_project(manifest_path: Option<&Path>) -> Result<Project> {
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    let (start, label) = match manifest_path {
        Some(p) => {
            if !p.is_file() {
                return Err(usage(format!(
                    "--manifest-path {}: no such file; give the path of a Cargo.toml",
                    p.display()
                )));
            }
            (p.to_path_buf(), format!("--manifest-path {}", p.display()))
        }
        None => match cwd
            .ancestors()
            .map(|d| d.join("Cargo.toml"))
            .find(|p| p.is_file())
        {
            Some(p) => {
                let label = p.display().to_string();
                (p, label)
            }
            None => {
                return Ok(Project {
                    root: cwd,
                    manifest: None,
                });
            }
        },
    };
    let meta = cargo_metadata::MetadataCommand::new()
        .manifest_path(&start)
        .no_deps()
        .exec()
        .map_err(|e| {
            // No cargo to ask: say so, not "refused" (cargo_metadata runs $CARGO, else cargo).
            if let cargo_metadata::Error::Io(io) = &e {
                return usage(format!(
                    "{label}: cannot run `cargo metadata` to find the Cargo workspace ({io}): no \
                     cargo here; install Rust (https://rustup.rs), or leave the build steps out \
                     (`run --no-steps`)"
                ));
            }
            let text = e.to_string();
            let detail: Vec<&str> = text
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .collect();
            usage(format!(
                "{label}: `cargo metadata` refused the project: {}",
                detail.join(" ")
            ))
        })?;
    let root = meta.workspace_root.into_std_path_buf();
    Ok(Project {
        manifest: Some(root.join("Cargo.toml")),
        root,
    })
}

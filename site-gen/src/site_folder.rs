//! The site's output folder: checked against the results, rendered beside, swapped in.
//!
//! The results are the one thing that must never be lost, so `--out` is compared with
//! `--results` as canonical paths both ways (`--out` inside the results, or the results inside
//! `--out`, as an earlier site holding them would be). The site is rendered into a new hidden
//! folder beside `--out` and exchanged with the earlier site only when every page is written:
//! a render that fails (a broken theme template, a full disk, Ctrl-C) removes only its own new
//! folder and leaves the earlier site whole. Files the earlier site does not own (`CNAME`,
//! `.git`, anything the marker does not list) are carried over into the new one.

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};

use anyhow::{Context, Result};

/// A file in every site this tool writes; it lists the top-level names the site owns.
pub const MARKER: &str = ".diskbench-site";
/// Names a site written before the marker listed its files is taken not to own.
const KEPT_BY_DEFAULT: [&str; 6] = [
    "CNAME",
    ".git",
    ".github",
    ".gitignore",
    ".well-known",
    "robots.txt",
];

/// A site being rendered: `staging` is written, then [`SiteFolder::commit`] swaps it in.
pub struct SiteFolder {
    /// The folder the user named, resolved (symlinks followed) so the swap replaces the real one.
    pub out: PathBuf,
    /// The new folder beside it that pages are written into.
    pub staging: PathBuf,
    committed: bool,
}

/// `p` made absolute with every existing part resolved (symlinks, `..`); the parts that do not
/// exist yet cannot be symlinks, so they are resolved lexically.
pub fn resolve(p: &Path) -> Result<PathBuf> {
    let abs = std::path::absolute(p).with_context(|| format!("cannot resolve {}", p.display()))?;
    let mut existing = abs.clone();
    let mut rest: Vec<OsString> = Vec::new();
    loop {
        if let Ok(real) = existing.canonicalize() {
            let mut out = real;
            for part in rest.iter().rev() {
                match Path::new(part).components().next() {
                    Some(Component::ParentDir) => {
                        out.pop();
                    }
                    Some(Component::CurDir) | None => {}
                    _ => out.push(part),
                }
            }
            return Ok(out);
        }
        match (existing.file_name(), existing.parent()) {
            (Some(name), Some(parent)) => {
                rest.push(name.to_owned());
                existing = parent.to_path_buf();
            }
            _ => {
                // `..` as the last part: file_name() is None.
                if existing.ends_with("..") {
                    rest.push("..".into());
                    existing.pop();
                    continue;
                }
                return Ok(abs);
            }
        }
    }
}

/// Whether `out` (an existing folder) holds something other than a diskbench site: files and
/// no marker. Such a folder is never replaced; `run` asks before it measures.
pub fn not_a_site(out: &Path) -> Result<bool> {
    let mut entries =
        std::fs::read_dir(out).with_context(|| format!("cannot read {}", out.display()))?;
    Ok(entries.next().is_some() && !out.join(MARKER).is_file())
}

impl SiteFolder {
    /// Check `out` against `results` and make the staging folder. Nothing outside the staging
    /// folder is touched here, except creating `out`'s parent folders.
    pub fn prepare(out: &Path, results: &Path) -> Result<SiteFolder> {
        let out_real = resolve(out)?;
        let res_real = resolve(results)?;
        if out_real.starts_with(&res_real) {
            return Err(engine::error::usage(format!(
                "--out {}: inside the results folder {} ({}); the results are never modified, choose another folder",
                out.display(),
                results.display(),
                out_real.display()
            )));
        }
        if res_real.starts_with(&out_real) {
            return Err(engine::error::usage(format!(
                "--out {}: holds the results folder {}; replacing the site would delete the results, choose another folder",
                out.display(),
                results.display()
            )));
        }
        if out_real.exists() {
            if !out_real.is_dir() {
                return Err(engine::error::usage(format!(
                    "--out {}: exists and is not a folder",
                    out.display()
                )));
            }
            if not_a_site(&out_real)? {
                return Err(engine::error::usage(format!(
                    "--out {}: a non-empty folder that is not a diskbench site; give an empty or new folder",
                    out.display()
                )));
            }
        }
        let parent = out_real
            .parent()
            .ok_or_else(|| engine::error::usage("--out: give a folder, not the root"))?;
        std::fs::create_dir_all(parent).with_context(|| {
            format!(
                "--out {}: cannot create {}",
                out.display(),
                parent.display()
            )
        })?;
        let name = out_real
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "site".into());
        let staging = parent.join(format!(
            ".{}.diskbench-new-{}",
            engine::safe_name::component(&name, "site"),
            engine::results::new_id()
        ));
        std::fs::create_dir(&staging).with_context(|| {
            format!(
                "--out {}: cannot create the folder to render into ({})",
                out.display(),
                staging.display()
            )
        })?;
        Ok(SiteFolder {
            out: out_real,
            staging,
            committed: false,
        })
    }

    /// Write the marker (listing the names the new site owns), then put the new site where the
    /// earlier one was and carry over the files the earlier one did not own.
    pub fn commit(mut self) -> Result<()> {
        engine::cancel::check()?;
        let mut owned: Vec<String> = std::fs::read_dir(&self.staging)
            .with_context(|| format!("cannot read {}", self.staging.display()))?
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        owned.push(MARKER.into());
        owned.sort();
        let mut marker = String::from(
            "written by cargo diskbench site; the files below are replaced on the next build\n",
        );
        for n in &owned {
            marker.push_str(&format!("owns: {n}\n"));
        }
        std::fs::write(self.staging.join(MARKER), marker)
            .with_context(|| format!("cannot write {}", self.staging.display()))?;

        if !self.out.exists() {
            std::fs::rename(&self.staging, &self.out)
                .with_context(|| format!("cannot move the new site into {}", self.out.display()))?;
            self.committed = true;
            return Ok(());
        }
        let foreign = foreign_entries(&self.out)?;
        exchange(&self.staging, &self.out)?;
        self.committed = true;
        // `staging` now holds the earlier site. Carry over what it did not own, then remove it.
        let old = self.staging.clone();
        for name in &foreign {
            let (from, to) = (old.join(name), self.out.join(name));
            if to.exists() {
                continue; // the new site writes this name itself
            }
            std::fs::rename(&from, &to).with_context(|| {
                format!(
                    "the new site is in {}, but {} could not be carried over from the earlier site (it is still in {})",
                    self.out.display(),
                    name.to_string_lossy(),
                    old.display()
                )
            })?;
        }
        std::fs::remove_dir_all(&old)
            .with_context(|| format!("cannot remove the earlier site ({})", old.display()))
    }
}

impl Drop for SiteFolder {
    /// A render that did not finish removes only its own new folder.
    fn drop(&mut self) {
        if !self.committed {
            let _ = std::fs::remove_dir_all(&self.staging);
        }
    }
}

/// Top-level names in an earlier site that its marker does not list as its own.
fn foreign_entries(site: &Path) -> Result<Vec<OsString>> {
    let marker = std::fs::read_to_string(site.join(MARKER)).unwrap_or_default();
    let listed: BTreeSet<&str> = marker
        .lines()
        .filter_map(|l| l.strip_prefix("owns: "))
        .collect();
    let mut out = Vec::new();
    for entry in
        std::fs::read_dir(site).with_context(|| format!("cannot read {}", site.display()))?
    {
        let name = entry
            .with_context(|| format!("cannot read {}", site.display()))?
            .file_name();
        let s = name.to_string_lossy();
        let foreign = if listed.is_empty() {
            // A site from before the marker listed its files, or an empty folder.
            KEPT_BY_DEFAULT.contains(&s.as_ref())
        } else {
            !listed.contains(s.as_ref())
        };
        if foreign {
            out.push(name);
        }
    }
    Ok(out)
}

/// Swap two folders atomically (`renameat2(RENAME_EXCHANGE)`); where the file system cannot,
/// two renames with the earlier site moved back if the second fails.
fn exchange(a: &Path, b: &Path) -> Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let ca = std::ffi::CString::new(a.as_os_str().as_bytes())?;
    let cb = std::ffi::CString::new(b.as_os_str().as_bytes())?;
    // SAFETY: two valid NUL-terminated paths; AT_FDCWD is ignored for absolute paths.
    let rc = unsafe {
        libc::renameat2(
            libc::AT_FDCWD,
            ca.as_ptr(),
            libc::AT_FDCWD,
            cb.as_ptr(),
            libc::RENAME_EXCHANGE,
        )
    };
    if rc == 0 {
        return Ok(());
    }
    let aside = a.with_extension("aside");
    std::fs::rename(b, &aside)
        .with_context(|| format!("cannot move the earlier site {} aside", b.display()))?;
    if let Err(e) = std::fs::rename(a, b) {
        let _ = std::fs::rename(&aside, b);
        return Err(e).with_context(|| format!("cannot move the new site into {}", b.display()));
    }
    std::fs::rename(&aside, a)
        .with_context(|| format!("cannot move the earlier site to {}", a.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolve_follows_what_exists_and_folds_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().canonicalize().unwrap();
        std::fs::create_dir(real.join("res")).unwrap();
        std::os::unix::fs::symlink(real.join("res"), real.join("link")).unwrap();
        assert_eq!(
            resolve(&real.join("link/site")).unwrap(),
            real.join("res/site")
        );
        assert_eq!(
            resolve(&real.join("nope/../res/site")).unwrap(),
            real.join("res/site")
        );
        assert_eq!(resolve(&real.join("a/b/..")).unwrap(), real.join("a"));
    }
}

//! The site's output folder: checked against the results, rendered beside, swapped in.
//!
//! The results are the one thing that must never be lost, so `--out` is compared with
//! `--results` as canonical paths both ways (`--out` inside the results, or the results inside
//! `--out`, as an earlier site holding them would be). The site is rendered into a new hidden
//! folder beside `--out` and exchanged with the earlier site only when every page is written:
//! a render that fails (a broken theme template, a full disk, Ctrl-C) removes only its own new
//! folder and leaves the earlier site whole. Files the earlier site does not own (`CNAME`,
//! `.git`, a user's `runners/mine.txt`: anything the marker does not list, at any depth) are
//! carried over into the new one at the same relative path.
//!
//! A mount point (Docker `-v host:/site`, a tmpfs) cannot be renamed (EBUSY), so there the new
//! site is rendered into a hidden folder inside the mount and its top-level entries replace the
//! earlier site's one by one. That swap is not atomic: a crash in the middle leaves parts of
//! both sites (the earlier one's entries in a hidden `.diskbench-old-*` folder inside). A failed
//! render still leaves the earlier site whole, as it writes only the hidden folder.

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};

use anyhow::{Context, Result};

/// A file in every site this tool writes; it lists every file the site wrote (`file:` lines,
/// paths relative to the site) and, for older versions of this tool, the top-level names
/// (`owns:` lines). A marker with no `file:` line comes from an older version: there only the
/// top-level names count.
pub(crate) const MARKER: &str = ".diskbench-site";
/// Start of the hidden folders a render inside a mount point makes in it.
const STAGING_PREFIX: &str = ".diskbench-new-";
const OLD_PREFIX: &str = ".diskbench-old-";
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
pub(crate) struct SiteFolder {
    /// The folder the user named, resolved (symlinks followed) so the swap replaces the real one.
    pub out: PathBuf,
    /// The new folder beside it (inside it, for a mount point) that pages are written into.
    pub staging: PathBuf,
    /// `out` is a mount point: its entries are replaced, not the folder.
    mount_point: bool,
    committed: bool,
}

/// Whether `dir` (an existing folder, symlinks resolved) is a mount point: a different device
/// from its parent's, or a mount point in /proc/self/mountinfo (a bind mount of the same file
/// system shares the device). Such a folder cannot be renamed.
pub fn is_mount_point(dir: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    let Some(parent) = dir.parent() else {
        return true; // the root
    };
    if let (Ok(d), Ok(p)) = (std::fs::metadata(dir), std::fs::metadata(parent))
        && d.dev() != p.dev()
    {
        return true;
    }
    let Ok(info) = std::fs::read_to_string("/proc/self/mountinfo") else {
        return false;
    };
    info.lines()
        .filter_map(|l| l.split(' ').nth(4))
        .any(|m| Path::new(&unescape_mountinfo(m)) == dir)
}

/// A mountinfo path field with its octal escapes (`\040` for a space) decoded.
fn unescape_mountinfo(field: &str) -> OsString {
    use std::os::unix::ffi::OsStringExt;
    let b = field.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\'
            && i + 3 < b.len()
            && (b'0'..=b'3').contains(&b[i + 1])
            && b[i + 2..i + 4].iter().all(|c| (b'0'..=b'7').contains(c))
        {
            out.push((b[i + 1] - b'0') * 64 + (b[i + 2] - b'0') * 8 + (b[i + 3] - b'0'));
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    OsString::from_vec(out)
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
    // A render into a mount point killed before its swap leaves its hidden folder inside.
    let mut entries = std::fs::read_dir(out)
        .with_context(|| format!("cannot read {}", out.display()))?
        .filter_map(|e| e.ok())
        .filter(|e| {
            let n = e.file_name();
            let n = n.to_string_lossy();
            !n.starts_with(STAGING_PREFIX) && !n.starts_with(OLD_PREFIX)
        });
    Ok(entries.next().is_some() && !out.join(MARKER).is_file())
}

impl SiteFolder {
    /// Check `out` against `results` and make the staging folder. Nothing outside the staging
    /// folder is touched here, except creating `out`'s parent folders.
    pub(crate) fn prepare(out: &Path, results: &Path) -> Result<SiteFolder> {
        let out_real = resolve(out)?;
        let res_real = resolve(results)?;
        if out_real.starts_with(&res_real) {
            return Err(record::error::usage(format!(
                "--out {}: inside the results folder {} ({}); the results are never modified, choose another folder",
                out.display(),
                results.display(),
                out_real.display()
            )));
        }
        if res_real.starts_with(&out_real) {
            return Err(record::error::usage(format!(
                "--out {}: holds the results folder {}; replacing the site would delete the results, choose another folder",
                out.display(),
                results.display()
            )));
        }
        let mut mount_point = false;
        if out_real.exists() {
            if !out_real.is_dir() {
                return Err(record::error::usage(format!(
                    "--out {}: exists and is not a folder",
                    out.display()
                )));
            }
            if not_a_site(&out_real)? {
                return Err(record::error::usage(format!(
                    "--out {}: a non-empty folder that is not a diskbench site; give an empty or new folder",
                    out.display()
                )));
            }
            mount_point = is_mount_point(&out_real);
        }
        let parent = out_real
            .parent()
            .ok_or_else(|| record::error::usage("--out: give a folder, not the root"))?;
        let staging = if mount_point {
            // Renaming the mount point fails (EBUSY): render inside it, on its file system.
            out_real.join(format!("{STAGING_PREFIX}{}", record::random::new_id()))
        } else {
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
            parent.join(format!(
                ".{}{STAGING_PREFIX}{}",
                record::safe_name::name(&name, record::safe_name::NameKind::File, "site"),
                record::random::new_id()
            ))
        };
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
            mount_point,
            committed: false,
        })
    }

    /// Write the marker (listing every file the new site owns), then put the new site where
    /// the earlier one was and carry over the files the earlier one did not own.
    ///
    /// A file the earlier site did not own where the new site writes one is refused (exit 2,
    /// naming it) before the earlier site is touched: replacing it would delete a user's file,
    /// keeping it would leave the new site with a page that is not its own.
    pub(crate) fn commit(mut self) -> Result<()> {
        record::cancel::check()?;
        let (mut files, dirs) = site_entries(&self.staging)?;
        files.insert(MARKER.into());
        let mut marker = String::from(
            "written by cargo diskbench site; the files below are replaced on the next build\n",
        );
        let top: BTreeSet<&str> = files
            .iter()
            .chain(&dirs)
            .filter_map(|p| p.split('/').next())
            .collect();
        for n in top {
            marker.push_str(&format!("owns: {n}\n"));
        }
        for d in &dirs {
            marker.push_str(&format!("dir: {d}\n"));
        }
        for f in &files {
            marker.push_str(&format!("file: {f}\n"));
        }
        std::fs::write(self.staging.join(MARKER), marker)
            .with_context(|| format!("cannot write {}", self.staging.display()))?;

        if !self.out.exists() {
            std::fs::rename(&self.staging, &self.out)
                .with_context(|| format!("cannot move the new site into {}", self.out.display()))?;
            self.committed = true;
            return Ok(());
        }
        let skip = if self.mount_point {
            self.staging.file_name().map(OsString::from)
        } else {
            None
        };
        let foreign = foreign_paths(&self.out, skip.as_deref())?;
        for p in &foreign {
            if clashes(&self.staging, p) {
                return Err(record::error::usage(format!(
                    "--out {}: {} is not a file this tool wrote, and the new site writes {}; move or rename it and build again (nothing was changed)",
                    self.out.display(),
                    p.display(),
                    if self.staging.join(p).exists() {
                        "the same path"
                    } else {
                        "a file in its place"
                    }
                )));
            }
        }
        if self.mount_point {
            return self.replace_entries(&foreign);
        }
        exchange(&self.staging, &self.out)?;
        self.committed = true;
        // `staging` now holds the earlier site. Carry over what it did not own, then remove it.
        let old = self.staging.clone();
        for p in &foreign {
            carry_over(&old, &self.out, p)?;
        }
        std::fs::remove_dir_all(&old)
            .with_context(|| format!("cannot remove the earlier site ({})", old.display()))
    }

    /// The swap for a mount point, which cannot be renamed: the earlier site's top-level
    /// entries that hold anything it owned go into a hidden folder inside it, the new site's
    /// entries move in, and the earlier site's foreign files inside owned folders are moved
    /// back. Not atomic (each entry is one rename); foreign top-level entries never move.
    fn replace_entries(&mut self, foreign: &[PathBuf]) -> Result<()> {
        let old = self
            .out
            .join(format!("{OLD_PREFIX}{}", record::random::new_id()));
        std::fs::create_dir(&old).with_context(|| format!("cannot create {}", old.display()))?;
        let stays: BTreeSet<&Path> = foreign
            .iter()
            .filter(|p| p.components().count() == 1)
            .map(PathBuf::as_path)
            .collect();
        let keep = [self.staging.file_name(), old.file_name()];
        let moved = |e: &str| {
            format!(
                "{e}; the site in {} is half replaced: the earlier site's entries are in {}, the new one's in {}",
                self.out.display(),
                old.display(),
                self.staging.display()
            )
        };
        for entry in std::fs::read_dir(&self.out)
            .with_context(|| format!("cannot read {}", self.out.display()))?
        {
            let name = entry
                .with_context(|| format!("cannot read {}", self.out.display()))?
                .file_name();
            if keep.contains(&Some(name.as_os_str())) || stays.contains(Path::new(&name)) {
                continue;
            }
            std::fs::rename(self.out.join(&name), old.join(&name))
                .with_context(|| moved(&format!("cannot move {} aside", name.to_string_lossy())))?;
        }
        for entry in std::fs::read_dir(&self.staging)
            .with_context(|| format!("cannot read {}", self.staging.display()))?
        {
            let name = entry
                .with_context(|| format!("cannot read {}", self.staging.display()))?
                .file_name();
            std::fs::rename(self.staging.join(&name), self.out.join(&name))
                .with_context(|| moved(&format!("cannot move {} in", name.to_string_lossy())))?;
        }
        self.committed = true;
        for p in foreign.iter().filter(|p| !stays.contains(p.as_path())) {
            carry_over(&old, &self.out, p)?;
        }
        std::fs::remove_dir(&self.staging)
            .with_context(|| format!("cannot remove {}", self.staging.display()))?;
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

/// Every file (anything not a folder) and every folder below `site`, as `/`-separated
/// relative paths; symlinks are not followed.
fn site_entries(site: &Path) -> Result<(BTreeSet<String>, BTreeSet<String>)> {
    let (mut files, mut dirs) = (BTreeSet::new(), BTreeSet::new());
    let mut stack = vec![PathBuf::new()];
    while let Some(rel) = stack.pop() {
        let here = site.join(&rel);
        for entry in
            std::fs::read_dir(&here).with_context(|| format!("cannot read {}", here.display()))?
        {
            let entry = entry.with_context(|| format!("cannot read {}", here.display()))?;
            let p = rel.join(entry.file_name());
            let key = p.to_string_lossy().into_owned();
            if entry.file_type()?.is_dir() {
                dirs.insert(key);
                stack.push(p);
            } else {
                files.insert(key);
            }
        }
    }
    Ok((files, dirs))
}

/// Paths in an earlier site that its marker does not list as its own, relative to it: every
/// file not listed, and every folder that holds nothing listed (taken whole). A marker with no
/// `file:` lines (an older version of this tool) lists only top-level names, which are taken
/// as before. `skip` is a top-level name left out (the folder being rendered into).
fn foreign_paths(site: &Path, skip: Option<&std::ffi::OsStr>) -> Result<Vec<PathBuf>> {
    let marker = std::fs::read_to_string(site.join(MARKER)).unwrap_or_default();
    let listed = |prefix: &str| -> BTreeSet<&str> {
        marker
            .lines()
            .filter_map(|l| l.strip_prefix(prefix))
            .collect()
    };
    let (top, files) = (listed("owns: "), listed("file: "));
    let mut out = Vec::new();
    if files.is_empty() {
        for entry in
            std::fs::read_dir(site).with_context(|| format!("cannot read {}", site.display()))?
        {
            let name = entry
                .with_context(|| format!("cannot read {}", site.display()))?
                .file_name();
            if Some(name.as_os_str()) == skip || name == MARKER {
                continue; // the marker is always the site's own
            }
            let s = name.to_string_lossy();
            let foreign = if top.is_empty() {
                // A site from before the marker listed its files, or an empty folder.
                KEPT_BY_DEFAULT.contains(&s.as_ref())
            } else {
                !top.contains(s.as_ref())
            };
            if foreign {
                out.push(PathBuf::from(name));
            }
        }
        return Ok(out);
    }
    // Folders the site wrote: those listed, and every folder above a listed file. The listed
    // paths are only compared with, never opened, so a hostile marker cannot point anywhere.
    let mut dirs: BTreeSet<&Path> = listed("dir: ").into_iter().map(Path::new).collect();
    for f in &files {
        dirs.extend(
            Path::new(f)
                .ancestors()
                .skip(1)
                .filter(|a| !a.as_os_str().is_empty()),
        );
    }
    let mut stack = vec![PathBuf::new()];
    while let Some(rel) = stack.pop() {
        let here = site.join(&rel);
        for entry in
            std::fs::read_dir(&here).with_context(|| format!("cannot read {}", here.display()))?
        {
            let entry = entry.with_context(|| format!("cannot read {}", here.display()))?;
            let name = entry.file_name();
            if rel.as_os_str().is_empty() && Some(name.as_os_str()) == skip {
                continue;
            }
            let p = rel.join(&name);
            let is_dir = entry.file_type()?.is_dir();
            match p.to_str() {
                Some(k) if !is_dir && files.contains(k) => {} // the site's own: replaced
                Some(_) if is_dir && dirs.contains(p.as_path()) => stack.push(p),
                _ => out.push(p),
            }
        }
    }
    out.sort();
    Ok(out)
}

/// Whether carrying `rel` over into `site` would replace something there: an entry at `rel`,
/// or a non-folder where one of its parent folders would go.
fn clashes(site: &Path, rel: &Path) -> bool {
    let mut at = site.to_path_buf();
    for part in rel.components() {
        if std::fs::symlink_metadata(&at).is_ok_and(|m| !m.is_dir()) {
            return true;
        }
        at.push(part);
    }
    std::fs::symlink_metadata(&at).is_ok()
}

/// Move `from/rel` to `to/rel`, making the folders above it in `to` (checked by [`clashes`]
/// to be missing or real folders).
fn carry_over(from: &Path, to: &Path, rel: &Path) -> Result<()> {
    let dest = to.join(rel);
    if let Some(parent) = dest.parent() {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("cannot create {}", parent.display()))?;
    }
    std::fs::rename(from.join(rel), &dest).with_context(|| {
        format!(
            "the new site is in {}, but {} could not be carried over from the earlier site (it is still in {})",
            to.display(),
            rel.display(),
            from.display()
        )
    })
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

    #[test]
    fn mountinfo_escapes_are_decoded_and_mount_points_found() {
        assert_eq!(
            unescape_mountinfo(r"/a\040b\011c"),
            OsString::from("/a b\tc")
        );
        assert_eq!(unescape_mountinfo(r"/x\04"), OsString::from(r"/x\04"));
        assert_eq!(unescape_mountinfo(r"/x\777"), OsString::from(r"/x\777"));
        assert!(is_mount_point(Path::new("/proc")));
        let dir = tempfile::tempdir().unwrap();
        assert!(!is_mount_point(&dir.path().canonicalize().unwrap()));
    }

    #[test]
    fn files_the_marker_does_not_list_are_foreign_at_any_depth() {
        let dir = tempfile::tempdir().unwrap();
        let site = dir.path();
        for f in [
            "index.html",
            "runners/a.html",
            "runners/mine.txt",
            "data/x/y.json",
            "CNAME",
        ] {
            let p = site.join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, "").unwrap();
        }
        std::fs::create_dir(site.join("empty")).unwrap();
        std::fs::write(
            site.join(MARKER),
            "owns: index.html\nowns: runners\nowns: data\nowns: empty\ndir: empty\nfile: index.html\nfile: runners/a.html\nfile: .diskbench-site\n",
        )
        .unwrap();
        let foreign: Vec<String> = foreign_paths(site, None)
            .unwrap()
            .iter()
            .map(|p| p.to_string_lossy().into_owned())
            .collect();
        assert_eq!(foreign, ["CNAME", "data", "runners/mine.txt"]);
        // The same site with an older marker: top-level names only.
        std::fs::write(
            site.join(MARKER),
            "owns: index.html\nowns: runners\nowns: data\n",
        )
        .unwrap();
        let mut old: Vec<String> = foreign_paths(site, None)
            .unwrap()
            .iter()
            .map(|p| p.to_string_lossy().into_owned())
            .collect();
        old.sort();
        assert_eq!(old, ["CNAME", "empty"]);
        assert!(clashes(site, Path::new("runners/a.html")));
        assert!(clashes(site, Path::new("index.html/x")));
        assert!(!clashes(site, Path::new("runners/new.html")));
        assert!(!clashes(site, Path::new("nope/deeper/x")));
    }
}

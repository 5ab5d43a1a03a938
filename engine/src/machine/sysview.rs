//! Where detection reads from: the real `/` or a recorded fixture folder.
//!
//! Every file the machine module looks at goes through [`SysView`], addressed by its absolute
//! path on a live system (`/proc/self/mountinfo`, `/sys/dev/block/8:1`, ...). A fixture folder
//! holds the same paths below its root, plus an `env` file (`KEY=VALUE` lines) for the
//! environment. Errors name the logical path, never the fixture folder.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

#[derive(Clone, Debug)]
pub(crate) struct SysView {
    root: PathBuf,
    env: BTreeMap<String, String>,
    live: bool,
}

impl SysView {
    /// The running system: `/` and this process's environment.
    pub(crate) fn live() -> SysView {
        let env = std::env::vars_os()
            .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
            .collect();
        SysView {
            root: PathBuf::from("/"),
            env,
            live: true,
        }
    }

    /// A recorded machine: `dir` stands for `/`, `dir/env` holds the environment.
    #[cfg(test)]
    pub(crate) fn fixture(dir: &Path) -> SysView {
        let root = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
        let env = std::fs::read_to_string(root.join("env"))
            .unwrap_or_default()
            .lines()
            .filter(|l| !l.trim_start().starts_with('#'))
            .filter_map(|l| l.split_once('='))
            .map(|(k, v)| (k.trim().to_string(), v.to_string()))
            .collect();
        SysView {
            root,
            env,
            live: false,
        }
    }

    /// Whether this is the running system (syscalls like statfs mean something).
    pub(crate) fn is_live(&self) -> bool {
        self.live
    }

    /// The real path of a logical absolute path.
    pub(crate) fn path(&self, logical: &str) -> PathBuf {
        self.root.join(logical.trim_start_matches('/'))
    }

    /// A file's text, or why it could not be read (naming the logical path).
    pub(crate) fn read(&self, logical: &str) -> Result<String, String> {
        std::fs::read_to_string(self.path(logical))
            .map_err(|e| format!("cannot read {logical}: {e}"))
    }

    /// A one-line sysfs attribute, trimmed; `None` if missing, unreadable or empty.
    pub(crate) fn attr(&self, logical: &str) -> Option<String> {
        let text = std::fs::read_to_string(self.path(logical)).ok()?;
        let text = text.trim();
        (!text.is_empty()).then(|| text.to_string())
    }

    pub(crate) fn exists(&self, logical: &str) -> bool {
        self.path(logical).exists()
    }

    /// The target of a symlink, as written (usually relative).
    pub(crate) fn read_link(&self, logical: &str) -> Option<PathBuf> {
        std::fs::read_link(self.path(logical)).ok()
    }

    /// The logical path with every symlink resolved, or why not.
    pub(crate) fn canonical(&self, logical: &str) -> Result<String, String> {
        let real = self
            .path(logical)
            .canonicalize()
            .map_err(|e| format!("cannot resolve {logical}: {e}"))?;
        self.to_logical(&real)
            .ok_or_else(|| format!("{logical} resolves outside the view ({})", real.display()))
    }

    /// Logical path of a real path inside the view.
    fn to_logical(&self, real: &Path) -> Option<String> {
        let rel = real.strip_prefix(&self.root).ok()?;
        Some(format!("/{}", rel.display()))
    }

    /// Names in a directory, sorted; empty when it cannot be read.
    pub(crate) fn list(&self, logical: &str) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(self.path(logical))
            .map(|rd| {
                rd.filter_map(|e| e.ok()?.file_name().into_string().ok())
                    .collect()
            })
            .unwrap_or_default();
        names.sort();
        names
    }

    /// An environment variable, `None` when unset or empty.
    pub(crate) fn env(&self, key: &str) -> Option<&str> {
        self.env
            .get(key)
            .map(String::as_str)
            .filter(|v| !v.is_empty())
    }
}

/// `a/b/../c` -> `a/c` without touching the filesystem (for sysfs link targets).
pub(crate) fn join_lexically(base: &str, rel: &Path) -> String {
    let mut parts: Vec<String> = base
        .split('/')
        .filter(|p| !p.is_empty())
        .map(str::to_string)
        .collect();
    for comp in rel.components() {
        match comp {
            std::path::Component::ParentDir => {
                parts.pop();
            }
            std::path::Component::Normal(p) => parts.push(p.to_string_lossy().into_owned()),
            std::path::Component::RootDir => parts.clear(),
            _ => {}
        }
    }
    format!("/{}", parts.join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lexical_join_resolves_parent_components() {
        assert_eq!(
            join_lexically(
                "/sys/dev/block",
                Path::new("../../devices/virtual/block/md0")
            ),
            "/sys/devices/virtual/block/md0"
        );
        assert_eq!(join_lexically("/a/b", Path::new("/c")), "/c");
    }

    #[test]
    fn fixture_errors_name_the_logical_path() {
        let dir = tempfile::tempdir().unwrap();
        let view = SysView::fixture(dir.path());
        let err = view.read("/proc/meminfo").unwrap_err();
        assert!(err.starts_with("cannot read /proc/meminfo: "), "{err}");
        assert!(!err.contains(&dir.path().display().to_string()));
    }
}

//! File names made from data, and writes that stay inside their folder.
//!
//! Every path component that comes from a record, a CSV row, fio output or a label (dates,
//! labels, ids, job names) goes through [`component`]; every write of a file whose name was
//! built from data goes through [`inside`], which refuses a path that would land anywhere but
//! directly in (or below, for fixed sub-folders) the folder named by an option. Two checks,
//! because a bug in how a name is assembled must still not write outside the folder.

use std::path::{Component, Path, PathBuf};

/// The longest component this returns (well under any file system's 255-byte limit, leaving
/// room for the `.name.pid.tmp` the atomic writer adds).
pub const MAX_COMPONENT_CHARS: usize = 80;

/// `text` reduced to one safe file-name component: only `[a-z0-9._-]`, never empty, never
/// starting with `.` or `-` (so never `.`, `..`, a hidden file or an option), at most
/// [`MAX_COMPONENT_CHARS`] characters. Anything else becomes `-`; runs of `-` collapse.
/// `fallback` is used when nothing safe is left (it is itself reduced the same way).
pub fn component(text: &str, fallback: &str) -> String {
    let reduce = |s: &str| -> String {
        let mut out = String::new();
        for ch in s.chars() {
            let c = ch.to_ascii_lowercase();
            let keep = c.is_ascii_alphanumeric() || c == '.' || c == '_';
            if keep {
                out.push(c);
            } else if !out.ends_with('-') {
                out.push('-');
            }
        }
        let out = out.trim_start_matches(['.', '-', '_']);
        let out: String = out.chars().take(MAX_COMPONENT_CHARS).collect();
        // `..` inside a name is harmless for the file system but reads like a traversal.
        let out = out.replace("..", "-");
        out.trim_end_matches(['.', '-']).to_string()
    };
    let out = reduce(text);
    if out.is_empty() {
        let fb = reduce(fallback);
        if fb.is_empty() { "x".into() } else { fb }
    } else {
        out
    }
}

/// `folder` joined with `rel`, checked to stay inside `folder`: `rel` must be relative and
/// made only of normal components (no `..`, no root, no prefix, no empty name). The error
/// names the folder; it means a bug or hostile data, never a normal condition.
pub fn inside(folder: &Path, rel: &str) -> anyhow::Result<PathBuf> {
    let rel_path = Path::new(rel);
    let ok = !rel.is_empty()
        && !rel.contains('\0')
        && rel_path
            .components()
            .all(|c| matches!(c, Component::Normal(n) if !n.is_empty()));
    if !ok {
        return Err(crate::error::usage(format!(
            "refusing to write {rel:?}: the name comes from data and would land outside {}",
            folder.display()
        )));
    }
    Ok(folder.join(rel_path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn components_are_always_single_safe_names() {
        for (input, want) in [
            ("2026-11-30", "2026-11-30"),
            ("../../../x", "x"),
            ("..", "x"),
            (".", "x"),
            ("/etc/passwd", "etc-passwd"),
            (".hidden", "hidden"),
            ("-rf", "rf"),
            ("a/b\\c", "a-b-c"),
            ("a..b", "a-b"),
            ("ubuntu-24.04", "ubuntu-24.04"),
            ("\u{1b}[31mred", "31mred"),
            ("", "x"),
            ("日本", "x"),
        ] {
            let got = component(input, "x");
            assert_eq!(got, want, "{input:?}");
            assert!(
                inside(Path::new("/r"), &got).is_ok(),
                "{input:?} -> {got:?}"
            );
        }
        assert_eq!(component(&"a".repeat(500), "x").len(), MAX_COMPONENT_CHARS);
    }

    #[test]
    fn inside_refuses_every_way_out() {
        for bad in ["../x", "/x", "a/../../x", "", "a/./../b", "..", "a\0b"] {
            assert!(inside(Path::new("/r"), bad).is_err(), "{bad:?}");
        }
        assert_eq!(
            inside(Path::new("/r"), "runners/a.html").unwrap(),
            Path::new("/r/runners/a.html")
        );
    }
}

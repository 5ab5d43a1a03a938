//! File names made from data, and writes that stay inside their folder.
//!
//! Every path component that comes from a record, a CSV row, fio output or a label (dates,
//! labels, ids, job names) goes through [`name`]; every write of a file whose name was
//! built from data goes through [`inside`], which refuses a path that would land anywhere but
//! directly in (or below, for fixed sub-folders) the folder named by an option. Two checks,
//! because a bug in how a name is assembled must still not write outside the folder.

use std::path::{Component, Path, PathBuf};

/// What a name made from data is for; each use keeps its own characters and length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NameKind {
    /// One file-name component (a date, an id, a site folder): `[a-z0-9._-]`, at most
    /// [`MAX_FILE_CHARS`].
    File,
    /// A slug, safe in a URL and a file name alike (runner pages, content pages, step ids,
    /// the label part of a record's file name): `[a-z0-9-]`, at most [`MAX_SLUG_CHARS`].
    Slug,
}

/// The longest [`NameKind::File`] name (well under any file system's 255-byte limit, leaving
/// room for the `.name.pid.tmp` the atomic writer adds).
pub const MAX_FILE_CHARS: usize = 80;
/// The longest [`NameKind::Slug`]: short enough to read in a URL.
pub const MAX_SLUG_CHARS: usize = 60;

/// `text` reduced to one safe name of `kind`: only the kind's characters, lower case, never
/// empty, never starting with `.` or `-` (so never `.`, `..`, a hidden file or an option),
/// never ending with `.` or `-`, at most the kind's length. Anything else becomes `-`; runs
/// of `-` collapse. `fallback` is used when nothing safe is left (it is itself reduced the
/// same way; `x` when nothing is left of it either).
pub fn name(text: &str, kind: NameKind, fallback: &str) -> String {
    let reduce = |s: &str| -> String {
        let mut out = String::new();
        for ch in s.chars() {
            let c = ch.to_ascii_lowercase();
            let keep =
                c.is_ascii_alphanumeric() || (kind == NameKind::File && matches!(c, '.' | '_'));
            if keep {
                out.push(c);
            } else if !out.ends_with('-') {
                out.push('-');
            }
        }
        let out = out.trim_start_matches(['.', '-', '_']);
        let max = match kind {
            NameKind::File => MAX_FILE_CHARS,
            NameKind::Slug => MAX_SLUG_CHARS,
        };
        let out: String = out.chars().take(max).collect();
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
            let got = name(input, NameKind::File, "x");
            assert_eq!(got, want, "{input:?}");
            assert!(
                inside(Path::new("/r"), &got).is_ok(),
                "{input:?} -> {got:?}"
            );
        }
        assert_eq!(
            name(&"a".repeat(500), NameKind::File, "x").len(),
            MAX_FILE_CHARS
        );
    }

    #[test]
    fn slugs_are_file_and_url_safe() {
        let slug = |s: &str| name(s, NameKind::Slug, "runner");
        assert_eq!(slug("ubuntu-24.04-arm"), "ubuntu-24-04-arm");
        assert_eq!(slug("../../etc/passwd"), "etc-passwd");
        assert_eq!(slug("<script>alert(1)</script>"), "script-alert-1-script");
        assert_eq!(slug("a_b"), "a-b");
        assert_eq!(slug("///"), "runner");
        // Cut to length, then no dangling separator.
        let long = format!("{}-b", "a".repeat(MAX_SLUG_CHARS - 1));
        assert_eq!(slug(&long), "a".repeat(MAX_SLUG_CHARS - 1));
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

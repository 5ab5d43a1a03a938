//! The workspace's boundaries, checked from its sources: which crate depends on which, no
//! circle of imports between the source files of any crate, and a `Record` assembled in one
//! place. Run alone with `cargo test -p cargo-diskbench --test it layout::`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common;

/// Each crate's source root, as the workspace lays them out.
const CRATES: &[(&str, &str)] = &[
    ("diskbench-record", "engine/record/src"),
    ("diskbench-engine", "engine/src"),
    ("diskbench-site", "site-gen/src"),
    ("cargo-diskbench", "cargo-diskbench/src"),
];

/// The normal (not dev, not build) dependencies of `package`, all the way down, by name.
fn dependency_names(package: &str) -> BTreeSet<String> {
    let out = Command::new(env!("CARGO"))
        .args([
            "tree", "--frozen", "-e", "normal", "--prefix", "none", "-p", package,
        ])
        .current_dir(common::repo_root())
        .output()
        .expect("cannot run cargo tree");
    assert!(
        out.status.success(),
        "cargo tree -p {package}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_string)
        .collect()
}

#[test]
fn the_site_and_the_record_crate_build_without_what_measures_or_renders() {
    let site = dependency_names("diskbench-site");
    assert!(site.contains("diskbench-record"), "{site:?}");
    for heavy in [
        "diskbench-engine",
        "io-uring",
        "rusqlite",
        "libsqlite3-sys",
        "cargo_metadata",
    ] {
        assert!(!site.contains(heavy), "diskbench-site depends on {heavy}");
    }
    let record = dependency_names("diskbench-record");
    assert!(record.contains("serde"), "{record:?}");
    for heavy in [
        "diskbench-engine",
        "io-uring",
        "rusqlite",
        "cargo_metadata",
        "tera",
        "plotters",
        "clap",
        "indicatif",
    ] {
        assert!(
            !record.contains(heavy),
            "diskbench-record depends on {heavy}"
        );
    }
}

// ------------------------------------------------------------------ reading Rust sources

/// `text` with comments removed and string and character literals emptied, so that a path in
/// a comment or a message is not taken for an import.
fn code_only(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'/' if b.get(i + 1) == Some(&b'/') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                let mut depth = 0;
                while i < b.len() {
                    if b[i..].starts_with(b"/*") {
                        depth += 1;
                        i += 2;
                    } else if b[i..].starts_with(b"*/") {
                        depth -= 1;
                        i += 2;
                        if depth == 0 {
                            break;
                        }
                    } else {
                        if b[i] == b'\n' {
                            out.push('\n');
                        }
                        i += 1;
                    }
                }
            }
            b'r' if (b.get(i + 1) == Some(&b'"') || b.get(i + 1) == Some(&b'#'))
                && (i == 0 || !is_ident(b[i - 1])) =>
            {
                // A raw string: r"..." or r#"..."#.
                let mut j = i + 1;
                let mut hashes = 0;
                while b.get(j) == Some(&b'#') {
                    hashes += 1;
                    j += 1;
                }
                if b.get(j) != Some(&b'"') {
                    out.push('r');
                    i += 1;
                    continue;
                }
                let close: Vec<u8> = std::iter::once(b'"')
                    .chain(std::iter::repeat_n(b'#', hashes))
                    .collect();
                j += 1;
                let from = j;
                while j < b.len() && !b[j..].starts_with(&close) {
                    j += 1;
                }
                out.push_str("\"\"");
                push_newlines(&mut out, &b[from..j]);
                i = j + close.len();
            }
            b'"' => {
                i += 1;
                let from = i;
                while i < b.len() && b[i] != b'"' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
                out.push_str("\"\"");
                push_newlines(&mut out, &b[from..i.min(b.len())]);
                i += 1;
            }
            b'\'' => {
                // A character literal ('x', '\n', '"'), not a lifetime ('a).
                let lit = if b.get(i + 1) == Some(&b'\\') {
                    b[i + 2..].iter().position(|&c| c == b'\'').map(|p| p + 3)
                } else if b.get(i + 2) == Some(&b'\'') {
                    Some(3)
                } else {
                    None
                };
                match lit {
                    Some(len) => {
                        out.push_str("' '");
                        i += len;
                    }
                    None => {
                        out.push('\'');
                        i += 1;
                    }
                }
            }
            _ => {
                // Multi-byte characters are copied whole.
                let ch = text[i..].chars().next().unwrap();
                out.push(ch);
                i += ch.len_utf8();
            }
        }
    }
    out
}

/// The line breaks in `skipped`, so that the code keeps the source's line numbers.
fn push_newlines(out: &mut String, skipped: &[u8]) {
    out.extend(skipped.iter().filter(|&&c| c == b'\n').map(|_| '\n'));
}

fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// The end of the item that starts at `from`: through its balanced `{ }` block, or its `;`.
fn item_end(b: &[u8], from: usize) -> usize {
    let mut depth = 0usize;
    let mut i = from;
    while i < b.len() {
        match b[i] {
            b'{' => depth += 1,
            b'}' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return i + 1;
                }
            }
            b';' if depth == 0 => return i + 1,
            _ => {}
        }
        i += 1;
    }
    b.len()
}

/// `code` without the items marked `#[cfg(test)]`: test code may use anything.
fn without_test_items(code: &str) -> String {
    let mut out = String::new();
    let mut rest = code;
    while let Some(at) = rest.find("#[cfg(test)]") {
        out.push_str(&rest[..at]);
        let after = at + "#[cfg(test)]".len();
        let end = after + item_end(&rest.as_bytes()[after..], 0);
        // Blank, not cut: the lines keep their numbers.
        push_newlines(&mut out, &rest.as_bytes()[at..end]);
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

/// The names of the modules `code` declares for tests only (`#[cfg(test)] mod x;`).
fn test_modules(code: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for (at, _) in code.match_indices("#[cfg(test)]") {
        let tail = code[at + "#[cfg(test)]".len()..].trim_start();
        let tail = ["pub(crate) ", "pub(super) ", "pub "]
            .iter()
            .find_map(|p| tail.strip_prefix(p))
            .unwrap_or(tail);
        if let Some(decl) = tail.strip_prefix("mod ")
            && let Some(name) = decl.split(';').next()
            && name.chars().all(|c| c.is_alphanumeric() || c == '_')
        {
            names.insert(name.to_string());
        }
    }
    names
}

/// A module of a crate: its path from the crate root and the file that holds it.
#[derive(Debug)]
struct Module {
    path: Vec<String>,
    file: PathBuf,
    code: String,
}

/// Every module file of the crate rooted at `src`, test-only modules left out.
fn modules(src: &Path) -> Vec<Module> {
    let mut found = Vec::new();
    for file in common::tree::files(src) {
        if file.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let rel = file.strip_prefix(src).unwrap();
        let mut path: Vec<String> = rel
            .iter()
            .map(|c| c.to_string_lossy().trim_end_matches(".rs").to_string())
            .collect();
        if matches!(path.last().map(String::as_str), Some("mod")) {
            path.pop();
        }
        if path.len() == 1 && (path[0] == "lib" || path[0] == "main") {
            path.clear();
        }
        let text = std::fs::read_to_string(&file).unwrap();
        found.push(Module {
            path,
            file: file.clone(),
            code: code_only(&text),
        });
    }
    // Leave out the modules their parents declare for tests only, and everything below them.
    let mut test_paths = Vec::new();
    for m in &found {
        for name in test_modules(&m.code) {
            let mut p = m.path.clone();
            p.push(name);
            test_paths.push(p);
        }
    }
    found.retain(|m| !test_paths.iter().any(|t| m.path.starts_with(t)));
    for m in &mut found {
        m.code = without_test_items(&m.code);
    }
    found
}

/// The paths `code` names through `crate::`, `super::`, `self::` or a child module's name,
/// each as segments from the crate root (groups in `use` trees expanded).
fn named_paths(code: &str, here: &[String], children: &BTreeSet<String>) -> Vec<Vec<String>> {
    let b = code.as_bytes();
    let mut paths = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if !is_ident(b[i]) || (i > 0 && (is_ident(b[i - 1]) || b[i - 1] == b':')) {
            i += 1;
            continue;
        }
        let start = i;
        while i < b.len() && is_ident(b[i]) {
            i += 1;
        }
        let word = &code[start..i];
        if !code[i..].starts_with("::") {
            continue;
        }
        let base: Option<Vec<String>> = match word {
            "crate" => Some(Vec::new()),
            "self" => Some(here.to_vec()),
            "super" => Some(here[..here.len().saturating_sub(1)].to_vec()),
            w if children.contains(w) => {
                let mut p = here.to_vec();
                p.push(w.to_string());
                Some(p)
            }
            _ => None,
        };
        let Some(base) = base else { continue };
        let (tails, end) = use_tree(code, i);
        for tail in tails {
            let mut p = base.clone();
            for seg in tail {
                if seg == "super" {
                    p.pop();
                } else if seg != "self" {
                    p.push(seg);
                }
            }
            paths.push(p);
        }
        i = end;
    }
    paths
}

/// The paths below `::` at `at`: `::a::b` gives `[a, b]`, `::{a::b, c}` gives `[a, b]` and `[c]`.
/// Returns them and where the tree ends.
fn use_tree(code: &str, at: usize) -> (Vec<Vec<String>>, usize) {
    let b = code.as_bytes();
    let mut segs = Vec::new();
    let mut i = at;
    loop {
        if !code[i..].starts_with("::") {
            return (vec![segs], i);
        }
        i += 2;
        while i < b.len() && b[i].is_ascii_whitespace() {
            i += 1;
        }
        if b.get(i) == Some(&b'{') {
            let close = i + item_end(&b[i..], 0);
            let inner = &code[i + 1..close - 1];
            let mut out = Vec::new();
            for part in split_top(inner) {
                let part = part.trim();
                if part.is_empty() || part == "*" {
                    out.push(segs.clone());
                    continue;
                }
                let (head, rest) = match part.find("::") {
                    Some(p) => (&part[..p], Some(p)),
                    None => (part.split_whitespace().next().unwrap_or(""), None),
                };
                let mut with = segs.clone();
                with.push(head.trim().to_string());
                match rest {
                    Some(p) => {
                        let (tails, _) = use_tree(part, p);
                        for t in tails {
                            let mut w = with.clone();
                            w.extend(t);
                            out.push(w);
                        }
                    }
                    None => out.push(with),
                }
            }
            return (out, close);
        }
        let start = i;
        while i < b.len() && is_ident(b[i]) {
            i += 1;
        }
        if start == i {
            return (vec![segs], i);
        }
        segs.push(code[start..i].to_string());
    }
}

/// `a, b::{c, d}, e` split at the commas outside braces.
fn split_top(s: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut depth = 0;
    let mut start = 0;
    for (i, c) in s.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&s[start..]);
    parts
}

/// Names a module re-exports (`pub use a::b::{X, Y}`, `pub use a::*`, or the same with
/// `pub(crate)`): name -> the path it stands for, and the modules whose items it re-exports
/// whole.
type Reexports = (BTreeMap<String, Vec<String>>, Vec<Vec<String>>);

/// How a re-export starts.
const REEXPORT: [&str; 2] = ["pub use ", "pub(crate) use "];

fn reexports(m: &Module, children: &BTreeSet<String>) -> Reexports {
    let mut named = BTreeMap::new();
    let mut globs = Vec::new();
    let starts = REEXPORT.iter().flat_map(|prefix| {
        m.code
            .match_indices(prefix)
            .map(|(at, _)| at + prefix.len())
    });
    for start in starts {
        let stmt_end = start + m.code[start..].find(';').unwrap_or(m.code.len() - start);
        let stmt = &m.code[start..stmt_end];
        // `pub use child::X` names the child without a leading `self::`.
        let stmt = format!("self::{}", stmt.trim());
        for p in named_paths(&stmt, &m.path, children) {
            if stmt.contains('*') && p.len() > m.path.len() {
                globs.push(p);
            } else if let Some(last) = p.last() {
                named.insert(last.clone(), p.clone());
            }
        }
    }
    (named, globs)
}

/// Which module file a path names: the deepest module the path goes through, after
/// following re-exports of the module it stops at.
fn resolve(
    path: &[String],
    files: &BTreeMap<Vec<String>, usize>,
    exports: &BTreeMap<Vec<String>, Reexports>,
    items: &BTreeMap<Vec<String>, BTreeSet<String>>,
    depth: u32,
) -> Option<usize> {
    let mut deepest = None;
    for len in (0..=path.len()).rev() {
        if files.contains_key(&path[..len]) {
            deepest = Some(len);
            break;
        }
    }
    let len = deepest?;
    let module = &path[..len];
    if let (Some(next), true) = (path.get(len), depth < 8)
        && let Some((named, globs)) = exports.get(module)
    {
        if let Some(target) = named.get(next) {
            return resolve(target, files, exports, items, depth + 1);
        }
        for g in globs {
            if items.get(g).is_some_and(|names| names.contains(next)) {
                let mut p = g.clone();
                p.push(next.clone());
                return resolve(&p, files, exports, items, depth + 1);
            }
        }
    }
    files.get(module).copied()
}

/// The items a module defines at its top level, by name.
fn defined_items(code: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let words: Vec<&str> = code
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .collect();
    for w in words.windows(2) {
        if matches!(
            w[0],
            "struct" | "enum" | "fn" | "const" | "static" | "type" | "trait" | "mod"
        ) {
            names.insert(w[1].to_string());
        }
    }
    names
}

/// The circles among a crate's source files: each as the files on it, and what ties them.
fn circles(src: &Path) -> Vec<Vec<String>> {
    let mods = modules(src);
    let files: BTreeMap<Vec<String>, usize> = mods
        .iter()
        .enumerate()
        .map(|(i, m)| (m.path.clone(), i))
        .collect();
    let children = |m: &Module| -> BTreeSet<String> {
        mods.iter()
            .filter(|c| c.path.len() == m.path.len() + 1 && c.path.starts_with(&m.path))
            .map(|c| c.path.last().unwrap().clone())
            .collect()
    };
    let exports: BTreeMap<Vec<String>, Reexports> = mods
        .iter()
        .map(|m| (m.path.clone(), reexports(m, &children(m))))
        .collect();
    let items: BTreeMap<Vec<String>, BTreeSet<String>> = mods
        .iter()
        .map(|m| (m.path.clone(), defined_items(&m.code)))
        .collect();
    let mut edges: Vec<BTreeSet<usize>> = vec![BTreeSet::new(); mods.len()];
    for (i, m) in mods.iter().enumerate() {
        let kids = children(m);
        // `pub use` lines are how a module shows its children's items, not a use of them.
        let code: String = m
            .code
            .split_inclusive(';')
            .filter(|stmt| !REEXPORT.iter().any(|r| stmt.trim_start().starts_with(r)))
            .collect();
        for p in named_paths(&code, &m.path, &kids) {
            if let Some(j) = resolve(&p, &files, &exports, &items, 0)
                && j != i
            {
                edges[i].insert(j);
            }
        }
    }
    strongly_connected(&edges)
        .into_iter()
        .filter(|c| c.len() > 1)
        .map(|c| {
            c.iter()
                .map(|&i| {
                    let ties: Vec<String> = edges[i]
                        .iter()
                        .filter(|j| c.contains(j))
                        .map(|&j| {
                            mods[j]
                                .file
                                .strip_prefix(src)
                                .unwrap()
                                .display()
                                .to_string()
                        })
                        .collect();
                    format!(
                        "{} -> {}",
                        mods[i].file.strip_prefix(src).unwrap().display(),
                        ties.join(", ")
                    )
                })
                .collect()
        })
        .collect()
}

/// Tarjan's strongly connected components.
fn strongly_connected(edges: &[BTreeSet<usize>]) -> Vec<Vec<usize>> {
    struct State<'a> {
        edges: &'a [BTreeSet<usize>],
        index: Vec<Option<usize>>,
        low: Vec<usize>,
        on_stack: Vec<bool>,
        stack: Vec<usize>,
        next: usize,
        out: Vec<Vec<usize>>,
    }
    fn visit(s: &mut State<'_>, v: usize) {
        s.index[v] = Some(s.next);
        s.low[v] = s.next;
        s.next += 1;
        s.stack.push(v);
        s.on_stack[v] = true;
        for &w in s.edges[v].iter() {
            match s.index[w] {
                None => {
                    visit(s, w);
                    s.low[v] = s.low[v].min(s.low[w]);
                }
                Some(iw) if s.on_stack[w] => s.low[v] = s.low[v].min(iw),
                _ => {}
            }
        }
        if Some(s.low[v]) == s.index[v] {
            let mut comp = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack[w] = false;
                comp.push(w);
                if w == v {
                    break;
                }
            }
            s.out.push(comp);
        }
    }
    let n = edges.len();
    let mut s = State {
        edges,
        index: vec![None; n],
        low: vec![0; n],
        on_stack: vec![false; n],
        stack: Vec::new(),
        next: 0,
        out: Vec::new(),
    };
    for v in 0..n {
        if s.index[v].is_none() {
            visit(&mut s, v);
        }
    }
    s.out
}

#[test]
fn no_crate_has_a_circle_of_imports_between_its_source_files() {
    let root = common::repo_root();
    let mut found = Vec::new();
    for (name, src) in CRATES {
        for circle in circles(&root.join(src)) {
            found.push(format!("{name}:\n  {}", circle.join("\n  ")));
        }
    }
    assert!(found.is_empty(), "module circles:\n{}", found.join("\n"));
}

/// The checker itself finds a circle, through `use` groups, `super::`, a child's name and a
/// re-export, and does not count what a comment, a string or a test says.
#[test]
fn the_circle_check_sees_a_circle_and_only_real_ones() {
    let dir = common::sandbox();
    let src = dir.path();
    let write = |rel: &str, text: &str| {
        let p = src.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    };
    write(
        "lib.rs",
        "mod a;\nmod b;\nmod shown;\npub use shown::Thing;\n",
    );
    write("a.rs", "use crate::{b::{self, B}, shown};\npub struct A;\n");
    write(
        "b.rs",
        "// crate::a::A in a comment\nfn f() -> &'static str { \"crate::a\" }\n#[cfg(test)]\nmod tests { use crate::a::A; }\n",
    );
    write("shown.rs", "pub struct Thing;\n");
    assert!(circles(src).is_empty(), "{:?}", circles(src));
    write("b.rs", "pub fn g() { let _ = super::a::A; }\n");
    assert_eq!(circles(src).len(), 1, "{:?}", circles(src));
    write("b.rs", "pub struct B;\n");
    write(
        "shown.rs",
        "pub struct Thing;\nfn f() { let _ = crate::a::A; }\n",
    );
    assert_eq!(
        circles(src).len(),
        1,
        "through a re-export: {:?}",
        circles(src)
    );
    write("shown.rs", "pub struct Thing;\n");
    write("a/inner.rs", "pub fn h() { super::super::b::g(); }\n");
    write("a.rs", "mod inner;\npub fn x() { inner::h(); }\n");
    write("b.rs", "pub fn g() { crate::a::x(); }\n");
    assert_eq!(
        circles(src).len(),
        1,
        "through a child's name: {:?}",
        circles(src)
    );
}

// ------------------------------------------------------------------ one constructor

/// A `Record` is assembled in one place, the record crate's constructor: every command, the
/// importer and the engine start from it, so what every record holds is set once.
#[test]
fn a_record_is_built_only_by_its_constructor() {
    let root = common::repo_root();
    let mut literals = Vec::new();
    for (_, src) in CRATES {
        for m in modules(&root.join(src)) {
            let rel = m.file.strip_prefix(&root).unwrap().display().to_string();
            let in_constructor = rel.ends_with("engine/record/src/record.rs");
            for (at, _) in m.code.match_indices("Record {") {
                let before = m.code[..at].trim_end();
                // A longer name (`LoadedRecord {`), a definition, a return type or a
                // reference is not a literal.
                let not_a_literal = m.code[..at]
                    .ends_with(|c: char| c.is_alphanumeric() || c == '_')
                    || ["struct", "impl", "for", "->", "&", "mut"]
                        .iter()
                        .any(|w| before.ends_with(w));
                if !in_constructor && !not_a_literal {
                    literals.push(format!("{rel}:{}", m.code[..at].lines().count()));
                }
            }
        }
    }
    assert!(
        literals.is_empty(),
        "Record literals outside the constructor (use Record::new): {literals:?}"
    );
}

// ------------------------------------------------------------------ paths the docs name

/// Every repository path the docs and the site's pages name in backticks (`engine/src/x.rs`)
/// exists: a file that moves takes its mentions with it.
#[test]
fn every_path_the_docs_name_exists() {
    let root = common::repo_root();
    let mut docs: Vec<PathBuf> = vec![root.join("README.md"), root.join("CHANGELOG.md")];
    for dir in ["content", "docs"] {
        docs.extend(
            common::tree::files(&root.join(dir))
                .into_iter()
                .filter(|p| p.extension().is_some_and(|e| e == "md")),
        );
    }
    let tops = [
        "engine/",
        "site-gen/",
        "cargo-diskbench/",
        "bench/",
        "fixtures/",
        "themes/",
        "content/",
        "docs/",
        ".github/",
        ".ci/",
    ];
    // Paths the docs name on purpose before they exist, and who makes them.
    let made_later = [
        // the example workflow a user adds to their own repository
        ".github/workflows/diskbench.yml",
        // written by the release workflow at the first release
        ".github/actions/diskbench/release.sha256",
    ];
    let mut missing = Vec::new();
    let mut seen = 0;
    for doc in &docs {
        let text = std::fs::read_to_string(doc).unwrap();
        for (i, quoted) in text.split('`').enumerate() {
            // Odd pieces are inside backticks; a path has no spaces and names no glob.
            if i % 2 == 0 || quoted.contains(char::is_whitespace) || quoted.contains('*') {
                continue;
            }
            let path = quoted.trim_end_matches([':', ',', '.']);
            let path = path.split(['#', ':']).next().unwrap_or(path);
            // `cargo-diskbench/cargo-diskbench` is the GitHub owner/name, not a path.
            if !tops.iter().any(|t| path.starts_with(t))
                || path.contains('<')
                || path == "cargo-diskbench/cargo-diskbench"
            {
                continue;
            }
            seen += 1;
            if !root.join(path).exists() && !made_later.contains(&path) {
                missing.push(format!(
                    "{}: {path}",
                    doc.strip_prefix(&root).unwrap().display()
                ));
            }
        }
    }
    assert!(
        seen > 20,
        "only {seen} paths found: the check reads nothing"
    );
    assert!(
        missing.is_empty(),
        "paths named in docs that do not exist:\n{}",
        missing.join("\n")
    );
}

// ------------------------------------------------------------------ packageable

/// Every file a crate compiles in (`include_str!`, `include_bytes!`, what its build script
/// reads) lives inside that crate, so `cargo package` ships it and `cargo install` from the
/// registry builds. Test code may read the repository's fixtures.
#[test]
fn every_file_a_crate_compiles_in_lives_inside_it() {
    let root = common::repo_root();
    let mut outside = Vec::new();
    let mut seen = 0;
    for (_, src) in CRATES {
        let krate = root.join(src).parent().unwrap().to_path_buf();
        let krate_real = std::fs::canonicalize(&krate).unwrap();
        for file in common::tree::files(&krate) {
            if file.extension().is_none_or(|e| e != "rs") || file.starts_with(krate.join("tests")) {
                continue;
            }
            let text = without_test_items(&std::fs::read_to_string(&file).unwrap());
            if file.file_name().is_some_and(|n| n == "build.rs") && text.contains("\"..") {
                outside.push(format!("{}: reads outside the crate", file.display()));
            }
            for mac in ["include_str!(\"", "include_bytes!(\""] {
                for part in text.split(mac).skip(1) {
                    let rel = &part[..part.find('"').unwrap()];
                    let target = file.parent().unwrap().join(rel);
                    seen += 1;
                    // Lexically inside the crate's folder (a symlink in it that cargo follows
                    // when packaging counts as inside), and really there.
                    let lexical = normalize(&target);
                    if !lexical.starts_with(&krate) && !lexical.starts_with(&krate_real)
                        || !target.exists()
                    {
                        outside.push(format!("{}: {rel}", file.display()));
                    }
                }
            }
        }
    }
    assert!(seen >= 10, "only {seen} includes found");
    assert!(
        outside.is_empty(),
        "compiled in from outside the crate:\n{}",
        outside.join("\n")
    );
}

/// `path` with `.` and `..` resolved lexically (no symlinks followed).
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

// ------------------------------------------------------------------ comments

/// Whether `comment` cites an issue by its number in the tracker: a number nobody
/// outside the tracker can look up, where the comment should say the behaviour it pins.
fn cites_an_issue(comment: &str) -> bool {
    let lower = comment.to_lowercase();
    lower.match_indices("issue").any(|(at, _)| {
        let rest = lower[at + "issue".len()..].trim_start_matches([' ', '#']);
        rest.starts_with(|c: char| c.is_ascii_digit())
    })
}

/// No code comment in the workspace (Rust, and the shell scripts beside it) names an issue
/// number; it says the behaviour instead. (Unwraps outside tests are clippy's
/// `unwrap_used`/`expect_used`, in Cargo.toml.)
#[test]
fn no_code_comment_cites_an_issue_number() {
    let root = common::repo_root();
    let mut found = Vec::new();
    for top in ["engine", "site-gen", "cargo-diskbench", "bench"] {
        for file in common::tree::files(&root.join(top)) {
            let marker = match file.extension().and_then(|e| e.to_str()) {
                Some("rs") => "//",
                Some("sh") => "#",
                _ => continue,
            };
            let text = std::fs::read_to_string(&file).unwrap();
            for (n, line) in text.lines().enumerate() {
                if line
                    .split_once(marker)
                    .is_some_and(|(_, c)| cites_an_issue(c))
                {
                    found.push(format!("{}:{}: {}", file.display(), n + 1, line.trim()));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "comments citing an issue number: say the behaviour pinned instead:\n{}",
        found.join("\n")
    );
    assert!(cites_an_issue("/ Issue 29: x") && cites_an_issue(" (issue #3)"));
    assert!(!cites_an_issue(" the issue is 3 bytes") && !cites_an_issue(" an issue"));
}

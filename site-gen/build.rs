//! Embed every `content/*.md` page (the site's book, inside this crate so it packages) at build time, so the binary renders the site on its own
//! and a page added to `content/` appears without touching the code.

#![expect(
    clippy::unwrap_used,
    reason = "a build script reports by panicking: cargo shows the message"
)]

use std::fmt::Write as _;
use std::path::Path;

fn main() {
    let content = Path::new(env!("CARGO_MANIFEST_DIR")).join("content");
    println!("cargo:rerun-if-changed={}", content.display());
    let mut pages: Vec<_> = std::fs::read_dir(&content)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "md"))
                .collect()
        })
        .unwrap_or_default();
    pages.sort();
    let mut out = String::from(
        "/// Every `content/*.md` page: (file stem, Markdown).\npub const PAGES: &[(&str, &str)] = &[\n",
    );
    for p in &pages {
        println!("cargo:rerun-if-changed={}", p.display());
        let stem = p.file_stem().unwrap().to_string_lossy();
        writeln!(
            out,
            "    ({stem:?}, include_str!({:?})),",
            p.display().to_string()
        )
        .unwrap();
    }
    out.push_str("];\n");
    let dest = Path::new(&std::env::var("OUT_DIR").unwrap()).join("content_pages.rs");
    std::fs::write(dest, out).unwrap();
}

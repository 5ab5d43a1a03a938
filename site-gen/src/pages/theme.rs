//! Templates and CSS: built into the binary, each file overridable from a theme folder
//! (`DIR/templates/<name>.html`, `DIR/assets/<name>`), the way zola themes work.

use std::path::Path;

use anyhow::{Result, anyhow};
use tera::Tera;

/// The built-in templates (names as the pages use them).
pub(crate) const TEMPLATES: &[(&str, &str)] = &[
    (
        "base.html",
        include_str!("../../themes/default/templates/base.html"),
    ),
    (
        "index.html",
        include_str!("../../themes/default/templates/index.html"),
    ),
    (
        "pick.html",
        include_str!("../../themes/default/templates/pick.html"),
    ),
    (
        "runner_table.html",
        include_str!("../../themes/default/templates/runner_table.html"),
    ),
    (
        "column.html",
        include_str!("../../themes/default/templates/column.html"),
    ),
    (
        "runner.html",
        include_str!("../../themes/default/templates/runner.html"),
    ),
    (
        "steps.html",
        include_str!("../../themes/default/templates/steps.html"),
    ),
    (
        "page.html",
        include_str!("../../themes/default/templates/page.html"),
    ),
];

/// The built-in assets, copied into `assets/`.
pub(crate) const ASSETS: &[(&str, &str)] = &[(
    "style.css",
    include_str!("../../themes/default/assets/style.css"),
)];

pub(crate) struct Theme {
    pub tera: Tera,
    /// (file name, content) for `assets/`.
    pub assets: Vec<(String, Vec<u8>)>,
}

/// The built-in theme with `dir`'s files laid over it.
pub(crate) fn load(dir: Option<&Path>) -> Result<Theme> {
    let mut templates: Vec<(String, String)> = TEMPLATES
        .iter()
        .map(|(n, s)| (n.to_string(), s.to_string()))
        .collect();
    let mut assets: Vec<(String, Vec<u8>)> = ASSETS
        .iter()
        .map(|(n, s)| (n.to_string(), s.as_bytes().to_vec()))
        .collect();
    if let Some(dir) = dir {
        if !dir.is_dir() {
            return Err(record::error::usage(format!(
                "--theme {}: not a folder; give a folder with templates/ and/or assets/",
                dir.display()
            )));
        }
        let tdir = dir.join("templates");
        if tdir.is_dir() {
            for e in std::fs::read_dir(&tdir)?.filter_map(|e| e.ok()) {
                let name = e.file_name().to_string_lossy().to_string();
                if !name.ends_with(".html") {
                    continue;
                }
                let text = record::input::read_text(&e.path()).map_err(|err| {
                    record::error::usage(format!("--theme: {}: {err}", e.path().display()))
                })?;
                match templates.iter_mut().find(|(n, _)| *n == name) {
                    Some(t) => t.1 = text,
                    None => templates.push((name, text)),
                }
            }
        }
        let adir = dir.join("assets");
        if adir.is_dir() {
            for e in std::fs::read_dir(&adir)?.filter_map(|e| e.ok()) {
                if !e.file_type().map(|t| t.is_file()).unwrap_or(false) {
                    continue;
                }
                let name = e.file_name().to_string_lossy().to_string();
                // Only plain names: nothing from a theme lands outside assets/.
                if name.starts_with('.') || name.contains(['/', '\\']) {
                    continue;
                }
                let bytes = record::input::read(&e.path()).map_err(|err| {
                    record::error::usage(format!("--theme: {}: {err}", e.path().display()))
                })?;
                match assets.iter_mut().find(|(n, _)| *n == name) {
                    Some(a) => a.1 = bytes,
                    None => assets.push((name, bytes)),
                }
            }
        }
    }
    let mut tera = Tera::new();
    tera.autoescape_on([".html"]);
    tera.set_escape_fn(crate::pages::html::esc_into);
    tera.add_raw_templates(templates.iter().map(|(n, s)| (n.as_str(), s.as_str())))
        .map_err(|e| anyhow!("theme templates: {e}"))?;
    Ok(Theme { tera, assets })
}

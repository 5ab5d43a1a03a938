//! The site's written pages: `content/*.md` rendered with pulldown-cmark (tables, footnotes,
//! heading ids), embedded at build time and overridable from a folder. A page's
//! `{{ name(...) }}` calls are tera functions filled from the code's tables first (see
//! [`crate::pages::facts`]).

use std::collections::BTreeMap;
use std::path::Path;

use crate::pages::facts;
use anyhow::{Context, Result};
use pulldown_cmark::{CowStr, Event, HeadingLevel, Options, Parser, Tag, TagEnd, html};

mod embedded {
    include!(concat!(env!("OUT_DIR"), "/content_pages.rs"));
}

/// A rendered page.
#[derive(Clone, Debug)]
pub(crate) struct Page {
    /// File stem; the page is written as `<name>.html`. Always `[a-z0-9-]`.
    pub name: String,
    /// The first level-1 heading, or the name.
    pub title: String,
    pub html: String,
}

/// The built-in pages, then any `*.md` in `dir` (a page of the same name replaces the built-in one).
pub(crate) fn pages(dir: Option<&Path>, commands: &[facts::CommandDoc]) -> Result<Vec<Page>> {
    let mut sources: BTreeMap<String, String> = embedded::PAGES
        .iter()
        .map(|(n, s)| (n.to_string(), s.to_string()))
        .collect();
    if let Some(dir) = dir {
        let rd = std::fs::read_dir(dir)
            .with_context(|| format!("--content {}: cannot read the folder", dir.display()))?;
        for e in rd.filter_map(|e| e.ok()) {
            let p = e.path();
            if p.extension().is_some_and(|x| x == "md") {
                let text = record::input::read_text(&p).map_err(|e| {
                    record::error::usage(format!("--content: {}: {e}", p.display()))
                })?;
                let stem = p
                    .file_stem()
                    .unwrap_or_default()
                    .to_string_lossy()
                    .to_string();
                sources.insert(stem, text);
            }
        }
    }
    // Facts that live in code or in the published data come into the pages from there.
    let tera = facts::tera(facts::PageFacts::from_code(commands)?);
    sources
        .into_iter()
        .map(|(name, md)| {
            // A bad placeholder can only come from a `--content` page (the built-in ones are
            // tested), so it is a usage error that names the page.
            let md = fill(&tera, &md).map_err(|e| {
                record::error::usage(format!(
                    "--content: {name}.md: {e}; the report-site page lists the placeholders"
                ))
            })?;
            let (title, html) = render(&md);
            let name = record::safe_name::name(&name, record::safe_name::NameKind::Slug, "page");
            Ok(Page {
                title: title.unwrap_or_else(|| name.clone()),
                name,
                html,
            })
        })
        .collect()
}

/// A page's Markdown with its function calls replaced by what they return (Markdown too, so
/// nothing is escaped).
pub(crate) fn fill(tera: &tera::Tera, md: &str) -> tera::TeraResult<String> {
    tera.render_str(md, &tera::Context::new(), false)
}

/// A heading's text as an id: lower case, `[a-z0-9-]`.
pub(crate) fn heading_id(text: &str) -> String {
    let mut out = String::new();
    for ch in text.chars().flat_map(|c| c.to_lowercase()) {
        if ch.is_alphanumeric() {
            out.push(ch);
        } else if (ch == ' ' || ch == '-' || ch == '_') && !out.ends_with('-') && !out.is_empty() {
            out.push('-');
        }
    }
    out.trim_end_matches('-').to_string()
}

/// Markdown to HTML; every heading gets an id (its own `{#id}` or one made from its text), and
/// the first level-1 heading is returned as the title (and left out of the body: the page
/// template shows it).
pub(crate) fn render(md: &str) -> (Option<String>, String) {
    let opts = Options::ENABLE_TABLES
        | Options::ENABLE_HEADING_ATTRIBUTES
        | Options::ENABLE_FOOTNOTES
        | Options::ENABLE_STRIKETHROUGH
        | Options::ENABLE_SMART_PUNCTUATION;
    let events: Vec<Event<'_>> = Parser::new_ext(md, opts).collect();
    let mut out: Vec<Event<'_>> = Vec::with_capacity(events.len());
    let mut title = None;
    let mut used = std::collections::HashSet::new();
    let mut i = 0;
    while i < events.len() {
        if let Event::Start(Tag::Heading {
            level,
            id,
            classes,
            attrs,
        }) = &events[i]
        {
            // Gather the heading's text to make its id (and the title).
            let mut j = i + 1;
            let mut text = String::new();
            while j < events.len() && !matches!(events[j], Event::End(TagEnd::Heading(_))) {
                if let Event::Text(t) | Event::Code(t) = &events[j] {
                    text.push_str(t);
                }
                j += 1;
            }
            if *level == HeadingLevel::H1 && title.is_none() {
                title = Some(text);
                i = j + 1;
                continue;
            }
            let mut hid = id
                .as_ref()
                .map(|s| s.to_string())
                .unwrap_or_else(|| heading_id(&text));
            let base = hid.clone();
            let mut n = 2;
            while !used.insert(hid.clone()) {
                hid = format!("{base}-{n}");
                n += 1;
            }
            out.push(Event::Start(Tag::Heading {
                level: *level,
                id: Some(CowStr::from(hid)),
                classes: classes.clone(),
                attrs: attrs.clone(),
            }));
            i += 1;
            continue;
        }
        out.push(events[i].clone());
        i += 1;
    }
    let mut html_out = String::new();
    html::push_html(&mut html_out, out.into_iter());
    (title, html_out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headings_get_ids_and_tables_render() {
        let (title, html) = render(
            "# The title\n\n## What it says\n\n## What it says\n\n### Own {#mine}\n\n| a | b |\n|---|---|\n| 1 | 2 |\n",
        );
        assert_eq!(title.as_deref(), Some("The title"));
        assert!(html.contains("<h2 id=\"what-it-says\">"), "{html}");
        assert!(html.contains("<h2 id=\"what-it-says-2\">"));
        assert!(html.contains("<h3 id=\"mine\">"));
        assert!(html.contains("<table>"));
        assert!(!html.contains("The title"));
    }

    /// A page links to the repository for what lives outside the site (the contract, design
    /// notes, benchmark runs): each such link must name a file or folder that exists.
    #[test]
    fn every_repo_link_on_a_built_in_page_names_a_file_of_the_repository() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let mut seen = 0;
        for (name, md) in embedded::PAGES {
            for part in md.split("repo_link(path=\"").skip(1) {
                let path = &part[..part.find('"').expect("a closing quote")];
                assert!(
                    root.join(path).exists(),
                    "content/{name}.md links to {path}, which is not in the repository"
                );
                seen += 1;
            }
        }
        assert!(seen >= 5, "only {seen} repository links");
    }

    #[test]
    fn built_in_pages_include_the_guide_and_methodology() {
        let pages = pages(None, &[]).unwrap();
        for name in ["columns", "methodology"] {
            let p = pages.iter().find(|p| p.name == name).expect(name);
            assert!(p.html.len() > 2000, "{name} is too short");
        }
    }
}

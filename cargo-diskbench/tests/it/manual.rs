//! The manual is the site's pages: rendered with every site, reachable from every page, and
//! true to the command line and the tests it describes.

use std::collections::BTreeMap;
use std::path::Path;

use crate::common;

/// The manual's pages and their titles.
const MANUAL: &[(&str, &str)] = &[
    ("manual.html", "The manual"),
    ("running.html", "Running a measurement"),
    ("options.html", "Commands and options"),
    ("exit-codes.html", "Exit codes"),
    ("guarantees.html", "What is guaranteed"),
    ("machine.html", "What the figures were measured on"),
    ("build-steps.html", "Timing real build steps"),
    ("what-if.html", "How the what-if experiments work"),
    ("fio.html", "fio command lines"),
    ("importing.html", "Importing figures"),
    ("report-site.html", "The report site"),
    ("github-actions.html", "GitHub Actions"),
    ("history.html", "A runner over time"),
];

/// The commands the options page documents.
const COMMANDS: &[&str] = &[
    "run", "steps", "fio", "ioping", "device", "site", "import", "machine", "merge", "compare",
];

/// The site of an empty results folder: its top-level pages by file name.
fn rendered_site() -> BTreeMap<String, String> {
    let tmp = tempfile::tempdir().unwrap();
    let results = tmp.path().join("results");
    std::fs::create_dir(&results).unwrap();
    let out = tmp.path().join("site");
    let run = common::run(&[
        "site",
        "--results",
        results.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(
        run.status.success(),
        "site failed: {}",
        String::from_utf8_lossy(&run.stderr)
    );
    let mut pages = BTreeMap::new();
    for e in std::fs::read_dir(&out).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "html") {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            pages.insert(name, std::fs::read_to_string(&p).unwrap());
        }
    }
    pages
}

/// Text of an HTML fragment: tags dropped, the entities the renderer writes decoded.
fn text_of(html: &str) -> String {
    let mut out = String::new();
    let mut in_tag = false;
    for c in html.chars() {
        match c {
            '<' => in_tag = true,
            '>' => in_tag = false,
            c if !in_tag => out.push(c),
            _ => {}
        }
    }
    out.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&")
}

/// Whether `html` has `<code>` starting with the option `name` as a whole word.
fn has_code_option(html: &str, name: &str) -> bool {
    let pat = format!("<code>{name}");
    html.match_indices(&pat)
        .any(|(i, _)| matches!(html[i + pat.len()..].chars().next(), Some('<' | ' ' | '=')))
}

/// A table row's first cell (the option it is about).
fn first_cell(row: &str) -> &str {
    let Some(start) = row.find("<td>") else {
        return "";
    };
    let cell = &row[start..];
    &cell[..cell.find("</td>").unwrap_or(cell.len())]
}

/// The part of the options page about one command: from its heading to the next.
fn section<'a>(page: &'a str, command: &str) -> &'a str {
    let start = page
        .find(&format!("<h2 id=\"{command}\">"))
        .unwrap_or_else(|| panic!("options.html has no section for {command}"));
    let rest = &page[start + 1..];
    &rest[..rest.find("<h2").unwrap_or(rest.len())]
}

/// Every option a command's `--help` lists (aliases included), each with the default the help
/// states as `[default: X]` or `(default: X)`.
fn help_options(command: &str) -> Vec<(Vec<String>, Option<String>)> {
    let out = common::run(&[command, "--help"]);
    assert!(out.status.success(), "{command} --help failed");
    let help = String::from_utf8(out.stdout).unwrap();
    let mut options: Vec<(Vec<String>, String)> = Vec::new();
    for line in help.lines() {
        let t = line.trim_start();
        if line.starts_with(' ') && t.starts_with('-') {
            let words: Vec<&str> = t.split_whitespace().collect();
            let names: Vec<String> = words
                .iter()
                .take_while(|w| w.starts_with('-') || w.starts_with('<'))
                .filter(|w| w.starts_with("--"))
                .map(|w| w.trim_end_matches(',').to_string())
                .collect();
            let described = words
                .iter()
                .skip_while(|w| w.starts_with('-') || w.starts_with('<'))
                .copied()
                .collect::<Vec<_>>()
                .join(" ");
            options.push((names, described));
        } else if let Some((_, text)) = options.last_mut()
            && line.starts_with("  ")
        {
            // A description on the lines after its option (clap's long help).
            text.push(' ');
            text.push_str(t);
        }
    }
    let default_in = |text: &str| {
        for (open, close) in [("[default: ", ']'), ("(default: ", ')')] {
            if let Some(i) = text.find(open) {
                let rest = &text[i + open.len()..];
                return Some(rest[..rest.find(close).unwrap_or(rest.len())].to_string());
            }
        }
        None
    };
    options
        .into_iter()
        .filter(|(names, _)| !names.is_empty() && names[0] != "--help")
        .map(|(names, text)| (names, default_in(&text)))
        .collect()
}

#[test]
fn the_manual_pages_are_rendered_and_reachable_from_every_page() {
    let pages = rendered_site();
    for (file, title) in MANUAL {
        let html = pages
            .get(*file)
            .unwrap_or_else(|| panic!("{file} was not rendered"));
        assert!(
            html.contains(&format!("<title>{title} · cargo-diskbench</title>")),
            "{file}: not titled {title:?}"
        );
        // The manual's index links every page of it.
        if *file != "manual.html" {
            assert!(
                pages["manual.html"].contains(&format!("href=\"{file}\"")),
                "manual.html does not link {file}"
            );
        }
    }
    // The site's navigation leads to the manual from every page, and the index links the
    // manual's reference pages directly.
    for (file, html) in &pages {
        assert!(
            html.contains("href=\"manual.html\""),
            "{file} has no link to the manual"
        );
    }
    for file in ["options.html", "exit-codes.html", "guarantees.html"] {
        assert!(
            pages["index.html"].contains(&format!("href=\"{file}\"")),
            "index.html does not link {file}"
        );
    }
    let exit = &pages["exit-codes.html"];
    for code in ["0", "1", "2", "130", "141"] {
        assert!(
            exit.contains(&format!("<tr><td>{code}</td>")),
            "exit code {code}"
        );
    }
    assert!(pages["guarantees.html"].contains("class1_paths_built_from_record_content"));
}

/// Every option of every command is on the options page, in that command's section, with the
/// default its `--help` states; and every option the page lists is one the command has.
#[test]
fn the_options_page_lists_every_option_of_every_command_with_its_default() {
    let pages = rendered_site();
    let page = &pages["options.html"];
    for command in COMMANDS {
        let sec = section(page, command);
        let options = help_options(command);
        assert!(options.len() >= 2, "{command}: only {options:?} in --help");
        let mut known: Vec<String> = vec![];
        for (names, default) in &options {
            for name in names {
                assert!(
                    has_code_option(sec, name),
                    "options.html, {command}: {name} is missing"
                );
                known.push(name.clone());
            }
            if let Some(default) = default {
                let row = sec
                    .split("<tr>")
                    .find(|row| has_code_option(first_cell(row), &names[0]))
                    .unwrap_or_else(|| panic!("options.html, {command}: no row for {}", names[0]));
                assert!(
                    text_of(row).contains(default.as_str()),
                    "options.html, {command} {}: the default {default:?} is not in its row: {}",
                    names[0],
                    text_of(row)
                );
            }
        }
        // The other way round: the page documents no option the command does not have.
        for row in sec.split("<tr>") {
            for code in first_cell(row).split("<code>").skip(1) {
                let code = text_of(&code[..code.find("</code>").unwrap()]);
                let word = code.split([' ', '=']).next().unwrap();
                if word.starts_with("--") {
                    assert!(
                        known.iter().any(|k| k == word),
                        "options.html, {command}: {word} is not an option of {command}"
                    );
                }
            }
        }
    }
}

/// Each promise on the guarantees page names the test that shows it: that test must exist.
#[test]
fn every_test_named_on_the_guarantees_page_exists() {
    let pages = rendered_site();
    let named: Vec<String> = pages["guarantees.html"]
        .split("<code>")
        .skip(1)
        .map(|c| c[..c.find("</code>").unwrap()].to_string())
        .filter(|c| c.starts_with("class") && c.contains('_') && !c.contains(' '))
        .collect();
    assert!(named.len() >= 15, "only {} tests named", named.len());
    let sources: String = common::tree::files(&common::repo_root().join("cargo-diskbench/tests"))
        .iter()
        .filter(|p| p.extension().is_some_and(|x| x == "rs"))
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect();
    for name in &named {
        assert!(
            sources.contains(&format!("fn {name}(")),
            "guarantees.html names {name}, which is not a test in {}",
            Path::new("cargo-diskbench/tests").display()
        );
    }
}

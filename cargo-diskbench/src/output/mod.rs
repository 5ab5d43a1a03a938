//! What a run shows while it works and when it is done: a progress bar with ETA on a terminal,
//! one plain line per column elsewhere (CI logs), and the tables at the end, one file per
//! thing rendered.

mod left_in_project;
mod progress;
mod steps;
mod table;

use std::io::Write;

use engine::session::Said;

pub use left_in_project::left_in_project;
pub use progress::RunView;
pub use steps::steps_table;
pub use table::{like_table, provisioned_shares, table};

/// Terminal width the tables are laid out for.
pub const WIDTH: usize = 80;

/// `text` broken at spaces into lines of at most [`WIDTH`] characters (a longer word stays
/// whole), the first starting with `first`, the rest with `rest`; each ends in a newline.
pub fn wrap(text: &str, first: &str, rest: &str) -> String {
    // Any run of whitespace (a newline too) is one space, as in a paragraph.
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if text.is_empty() {
        return String::new();
    }
    let options = textwrap::Options::new(WIDTH)
        .initial_indent(first)
        .subsequent_indent(rest)
        .break_words(false)
        .word_separator(textwrap::WordSeparator::AsciiSpace)
        .word_splitter(textwrap::WordSplitter::NoHyphenation)
        .wrap_algorithm(textwrap::WrapAlgorithm::FirstFit);
    let mut out = String::new();
    for line in textwrap::wrap(&text, options) {
        out.push_str(&line);
        out.push('\n');
    }
    out
}

/// A line the engine said, as shown: `warning: ...`, `note: ...`, or as it is.
pub fn said_text(said: &Said) -> String {
    match said {
        Said::Warning(w) => format!("warning: {w}"),
        Said::Note(n) => format!("note: {n}"),
        Said::Status(s) => s.clone(),
    }
}

/// Show a line the engine said on stderr (also the sink for lines said outside a session's
/// callback, installed at start).
pub fn say(said: &Said) {
    eprintln!("{}", said_text(said));
}

/// Write `text` to stdout, or to stderr when stdout carries the JSON record.
pub fn print(text: &str, to_stderr: bool) {
    let text = &terminal_safe(text);
    if to_stderr {
        let _ = std::io::stderr().write_all(text.as_bytes());
    } else {
        let _ = std::io::stdout().write_all(text.as_bytes());
    }
}

/// Text from data (labels, CPU models, device names) made safe for a terminal: control
/// characters other than newline and tab are shown as `\u{1b}`-style escapes, so a label
/// cannot move the cursor, recolour the screen or set the window title.
pub fn terminal_safe(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for ch in text.chars() {
        if ch.is_control() && ch != '\n' && ch != '\t' {
            out.extend(ch.escape_unicode());
        } else {
            out.push(ch);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_never_reach_the_terminal() {
        for bad in [
            "\u{1b}[31mred",
            "a\rb",
            "\u{9b}2J",
            "\u{7}bell",
            "x\u{1b}]0;title\u{7}",
        ] {
            let safe = terminal_safe(bad);
            assert!(!safe.chars().any(|c| c.is_control()), "{safe:?}");
        }
        assert_eq!(terminal_safe("a\tb\nc µs"), "a\tb\nc µs");
    }
}

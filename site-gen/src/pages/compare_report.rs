//! How a comparison ([`crate::analysis::history::Comparison`]) is written for people: a terminal table
//! and Markdown (the job summary of `run --baseline`, `compare --markdown`). Strings from
//! records go through [`crate::pages::job_summary::escape`] in the Markdown.

use std::fmt::Write as _;

use crate::analysis::history::{Change, Comparison, FigureKind, Verdict};
use crate::analysis::stats::{fmt_ns, fmt_sig};
use crate::analysis::timeline::fmt_pct;
use crate::pages::job_summary::escape;

/// A figure with its unit, as the tables show it.
pub fn figure(c: &Change, v: f64) -> String {
    match c.kind {
        FigureKind::P99 => fmt_ns(v),
        FigureKind::Step => format!("{} s", fmt_sig(v)),
        FigureKind::Column => format!("{} {}", fmt_sig(v), c.unit),
    }
}

/// "+-6% (history of 5 records)", or "none: too little history (1 record, no --repeat)".
pub fn band_text(c: &Change, history_records: usize) -> String {
    match &c.band {
        Some(b) => format!("\u{b1}{} ({})", fmt_pct(b.pct), b.reason()),
        None => format!(
            "none: too little history ({history_records} earlier record{}, {} needed; no --repeat)",
            if history_records == 1 { "" } else { "s" },
            crate::analysis::history::MIN_HISTORY
        ),
    }
}

fn dates(c: &Comparison) -> (&str, &str) {
    (
        c.base_started_at.get(..10).unwrap_or(&c.base_started_at),
        c.new_started_at.get(..10).unwrap_or(&c.new_started_at),
    )
}

/// One line saying what was found, for under a table.
pub fn tally(c: &Comparison) -> String {
    let n = |v: Verdict| c.changes.iter().filter(|x| x.verdict == v).count();
    format!(
        "{} slower, {} faster, {} within noise, {} without enough history",
        n(Verdict::Slower),
        n(Verdict::Faster),
        n(Verdict::WithinNoise),
        n(Verdict::TooLittleHistory)
    )
}

/// The terminal table, one block per runner.
pub fn text(comparisons: &[Comparison]) -> String {
    let mut out = String::new();
    for c in comparisons {
        let (b, n) = dates(c);
        let _ = writeln!(
            out,
            "\n{}: {b} ({}) -> {n} ({})",
            c.label,
            short(&c.base_id),
            short(&c.new_id)
        );
        let rows: Vec<[String; 6]> = c
            .changes
            .iter()
            .map(|x| {
                [
                    x.name(),
                    figure(x, x.base),
                    figure(x, x.new),
                    format!("{:+.1}%", x.change_pct),
                    band_text(x, c.history_records),
                    x.verdict.as_str().to_string(),
                ]
            })
            .collect();
        let head = ["figure", "base", "new", "change", "noise band", "verdict"];
        let mut widths = head.map(|h| h.chars().count());
        for r in &rows {
            for (w, cell) in widths.iter_mut().zip(r) {
                *w = (*w).max(cell.chars().count());
            }
        }
        let line = |cells: &[String]| {
            let mut l = String::new();
            for (i, (cell, w)) in cells.iter().zip(widths).enumerate() {
                let pad = w - cell.chars().count();
                if (1..=3).contains(&i) {
                    let _ = write!(l, "{}{cell}  ", " ".repeat(pad));
                } else {
                    let _ = write!(l, "{cell}{}  ", " ".repeat(pad));
                }
            }
            l.trim_end().to_string()
        };
        let _ = writeln!(out, "{}", line(&head.map(String::from)));
        for r in &rows {
            let _ = writeln!(out, "{}", line(r));
        }
        let _ = writeln!(out, "{}", tally(c));
    }
    out
}

fn short(id: &str) -> String {
    id.chars().take(8).collect()
}

/// The Markdown section: a heading, a table per runner, what the band is, and what to do
/// with a `slower`. `missing` names runners NEW has and BASE has not (first runs).
pub fn markdown(comparisons: &[Comparison], missing: &[String]) -> String {
    let mut out = String::from("### Since the last run\n\n");
    for c in comparisons {
        let (b, n) = dates(c);
        let _ = writeln!(
            out,
            "**{}**: {b} → {n} ({} earlier record{} for the noise band)\n",
            escape(&c.label),
            c.history_records,
            if c.history_records == 1 { "" } else { "s" }
        );
        out.push_str("| Figure | Base | New | Change | Noise band | Verdict |\n");
        out.push_str("|---|---:|---:|---:|---|---|\n");
        for x in &c.changes {
            let verdict = match x.verdict {
                Verdict::Slower => "**slower**".to_string(),
                v => v.as_str().to_string(),
            };
            let _ = writeln!(
                out,
                "| {} | {} | {} | {:+.1}% | {} | {verdict} |",
                escape(&x.name()),
                escape(&figure(x, x.base)),
                escape(&figure(x, x.new)),
                x.change_pct,
                escape(&band_text(x, c.history_records)),
            );
        }
        let _ = writeln!(out, "\n{}\n", tally(c));
    }
    for m in missing {
        let _ = writeln!(
            out,
            "{}: no earlier record in the baseline, nothing to compare with yet.\n",
            escape(m)
        );
    }
    if comparisons.iter().any(|c| c.any(Verdict::Slower)) {
        out.push_str(
            "A **slower** figure moved more than twice as far as it moved between any two of \
             this runner's earlier runs (or beyond its `--repeat` spread). Rerun once to rule out a bad neighbour; if \
             it holds, compare the two records' storage (device, mount options, runner image) \
             with `cargo diskbench compare BASE NEW --json`.\n",
        );
    }
    out
}

//! The tables of the columns at the end of a run: the figures, their share of a provisioned
//! limit, and `--like`'s target beside what was measured under its caps.

use record::units::format_figure;
use record::{ColumnId, Headline, TestResult};

use super::wrap;

/// "1234.5 MiB/s, p99 2.31 ms (io_uring)".
pub fn one_line(r: &TestResult) -> String {
    let mut s = format!(
        "{}, p99 {}",
        headline(r),
        r.p99_ns().map(latency).unwrap_or("-".into())
    );
    s.push_str(&format!(" ({})", r.engine.used));
    if r.engine.fallback.is_some() {
        s.push_str(" fallback");
    }
    s
}

/// The column's headline figure with its unit.
pub fn headline(r: &TestResult) -> String {
    let Some(d) = r.main_direction() else {
        return "-".into();
    };
    match r.column().map(|c| c.headline()) {
        Some(h @ Headline::MibPerSecond) => format!("{} {}", format_figure(d.mib_s), h.unit()),
        Some(h @ Headline::Iops) => format!("{} {}", format_figure(d.iops), h.unit()),
        None => format!(
            "{} IOPS, {} MiB/s",
            format_figure(d.iops),
            format_figure(d.mib_s)
        ),
    }
}

/// Nanoseconds for people: "850 ns", "12.3 µs", "2.31 ms", "1.20 s".
pub fn latency(ns: u64) -> String {
    record::units::format_ns(ns)
}

/// What to do when a column's passes disagree by more than 5 % (also on the methodology page).
pub const SPREAD_ADVICE: &str = "a spread above 5% means this machine does not repeat that \
figure yet: run more passes (--repeat 5), measure longer (--runtime 20), and run on a quiet \
machine (no other jobs, no builds); report the median with its spread";

/// Each column's figure as a share of the volume's provisioned limit (`--provisioned`, or the
/// known default of the runner's variant); empty when there is no limit.
pub fn provisioned_shares(record: &record::Record) -> String {
    let Some(limit) = record::Provisioned::for_record(record) else {
        return String::new();
    };
    let mut out = format!(
        "provisioned limit: {:.0} IOPS, {:.1} MiB/s ({})\n",
        limit.iops,
        limit.bytes_s / 1_048_576.0,
        limit.source
    );
    for t in &record.tests {
        if let Some(share) = record::provisioned::share(&limit, t) {
            out.push_str(&format!("  {:<12} {}\n", t.id, share.describe()));
        }
    }
    out
}

/// The end-of-run table: one row per column, then the fallbacks and notes.
pub fn table(tests: &[TestResult]) -> String {
    let mut rows: Vec<[String; 6]> = vec![[
        "column".into(),
        "headline".into(),
        "p99".into(),
        "measured".into(),
        "engine".into(),
        "spread".into(),
    ]];
    let mut sorted: Vec<&TestResult> = tests.iter().collect();
    sorted.sort_by_key(|t| t.column().unwrap_or(ColumnId::SyncWrite));
    for t in &sorted {
        let engine = if t.engine.direct {
            t.engine.used.clone()
        } else {
            format!("{} (buffered)", t.engine.used)
        };
        let spread = t
            .repeats
            .as_ref()
            .map(|r| {
                let verdict = if r.spread_pct <= engine::session::REPEATABLE_SPREAD_PCT {
                    "within 5%"
                } else {
                    "NOT within 5%"
                };
                format!("{:.1}% over {} ({verdict})", r.spread_pct, r.runs)
            })
            .unwrap_or_else(|| "-".into());
        // The time measured, and how a rule ended it (steady / max-time).
        let measured = match &t.window {
            Some(w) => format!("{} {}", record::units::format_s(t.elapsed_s), w.ended),
            None => record::units::format_s(t.elapsed_s),
        };
        rows.push([
            t.id.clone(),
            headline(t),
            t.p99_ns().map(latency).unwrap_or_else(|| "-".into()),
            measured,
            engine,
            spread,
        ]);
    }
    let mut widths = [0usize; 6];
    for r in &rows {
        for (w, c) in widths.iter_mut().zip(r) {
            *w = (*w).max(c.chars().count());
        }
    }
    let mut out = String::new();
    for r in &rows {
        let line: Vec<String> = r
            .iter()
            .zip(widths)
            .enumerate()
            .map(|(i, (c, w))| {
                if i == 1 || i == 2 {
                    format!("{c:>w$}")
                } else {
                    format!("{c:<w$}")
                }
            })
            .collect();
        out.push_str(line.join("  ").trim_end());
        out.push('\n');
    }
    if sorted.iter().any(|t| {
        t.repeats
            .as_ref()
            .is_some_and(|r| r.spread_pct > engine::session::REPEATABLE_SPREAD_PCT)
    }) {
        out.push_str(SPREAD_ADVICE);
        out.push('\n');
    }
    for t in &sorted {
        if let Some(c) = &t.cache_suspect {
            out.push_str(&format!("{}: cache-served: {c}\n", t.id));
        }
    }
    for t in &sorted {
        if let Some(f) = &t.engine.fallback {
            out.push_str(&wrap(&format!("{}: fallback: {f}", t.id), "", "    "));
        }
        for n in &t.notes {
            out.push_str(&wrap(&format!("{}: {n}", t.id), "", "    "));
        }
    }
    out
}

/// Write `text` to stdout, or to stderr when stdout carries the JSON record.
/// `run --like LABEL`: per column, LABEL's figure beside the one measured under its caps.
pub fn like_table(like: &record::LikeSettings) -> String {
    let mut out = format!(
        "like {} (caps from {} on {}):\n{:<11} {:>12} {:>12} {:>8}  note\n",
        like.label,
        like.from,
        like.devices.join(", "),
        "column",
        "target",
        "measured",
        "off"
    );
    for c in &like.columns {
        let f = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.1}"));
        let off = if c.reproducible {
            c.off_pct.map_or("-".into(), |o| format!("{o:+.0}%"))
        } else {
            "n/a".into()
        };
        out.push_str(&format!(
            "{:<11} {:>12} {:>12} {:>8}  {}\n",
            c.id,
            f(c.target),
            f(c.measured),
            off,
            c.note
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latencies_read_well() {
        assert_eq!(latency(850), "850 ns");
        assert_eq!(latency(12_340), "12.3 µs");
        assert_eq!(latency(2_310_000), "2.31 ms");
        assert_eq!(latency(83_620_000), "83.6 ms");
        assert_eq!(latency(1_200_000_000), "1.20 s");
    }
}

//! A runner's figures over time: one series per column, latency p99 and build step, each
//! record a point judged against the records before it ([`crate::analysis::history::compare`]), the
//! changes beyond noise as findings, the series as `data/history.json` and as small SVG line
//! charts (hand-drawn: a band polygon, a line, marked points; no script).

use std::collections::BTreeSet;
use std::fmt::Write as _;

use record::{ColumnId, Record, StepStatus};
use serde::Serialize;

use crate::analysis::history::{FigureKind, HISTORY_WINDOW, Verdict, compare, is_latency_column};
use crate::analysis::stats::{fmt_ns, fmt_sig};
use crate::data::model::{Dataset, RunnerOverview};
use crate::pages::html::esc;

pub const SCHEMA: &str = "diskbench.site-history/1";

/// One record's figure.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Point {
    pub started_at: String,
    pub record_id: String,
    pub value: f64,
    /// The previous record's figure this one was set against (None for the first point).
    pub base: Option<f64>,
    pub change_pct: Option<f64>,
    /// The noise band's half-width in per cent (None: too little history and no repeats).
    pub band_pct: Option<f64>,
    /// None for the first point, which has nothing before it.
    pub verdict: Option<Verdict>,
}

/// One figure over time, oldest point first.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Series {
    pub id: String,
    pub kind: FigureKind,
    pub unit: &'static str,
    pub points: Vec<Point>,
}

impl Series {
    /// "seq-read", "qd1-read p99", "step cargo-build".
    pub fn name(&self) -> String {
        match self.kind {
            FigureKind::Column => self.id.clone(),
            FigureKind::P99 => format!("{} p99", self.id),
            FigureKind::Step => format!("step {}", self.id),
        }
    }

    fn fmt(&self, v: f64) -> String {
        match self.kind {
            FigureKind::P99 => fmt_ns(v),
            FigureKind::Step => format!("{} s", fmt_sig(v)),
            FigureKind::Column => format!("{} {}", fmt_sig(v), self.unit),
        }
    }
}

/// A runner's series.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RunnerHistory {
    pub label: String,
    pub slug: String,
    /// Distinct UTC days with a record.
    pub days: usize,
    pub series: Vec<Series>,
}

/// `data/history.json`.
#[derive(Clone, Debug, Serialize)]
pub struct HistoryFile<'a> {
    pub schema: &'static str,
    /// Runners with records on two or more days.
    pub runners: &'a [RunnerHistory],
}

/// Every series of `records` (one runner's), each record judged against those before it.
pub fn series(records: &[&Record]) -> Vec<Series> {
    let mut sorted: Vec<&Record> = records.to_vec();
    sorted.sort_by(|a, b| {
        a.started_at
            .cmp(&b.started_at)
            .then_with(|| a.id.cmp(&b.id))
    });
    let mut out: Vec<Series> = Vec::new();
    for (i, rec) in sorted.iter().enumerate() {
        let judged = (i > 0)
            .then(|| compare(&sorted[i.saturating_sub(HISTORY_WINDOW)..i], rec))
            .flatten();
        for (id, kind, unit, value) in figures(rec) {
            let change = judged
                .as_ref()
                .and_then(|c| c.changes.iter().find(|c| c.kind == kind && c.id == id));
            let point = Point {
                started_at: rec.started_at.clone(),
                record_id: rec.id.clone(),
                value,
                base: change.map(|c| c.base),
                change_pct: change.map(|c| c.change_pct),
                band_pct: change.and_then(|c| c.band.as_ref().map(|b| b.pct)),
                verdict: change.map(|c| c.verdict),
            };
            match out.iter_mut().find(|s| s.kind == kind && s.id == id) {
                Some(s) => s.points.push(point),
                None => out.push(Series {
                    id,
                    kind,
                    unit,
                    points: vec![point],
                }),
            }
        }
    }
    // Columns in the suite's order, then p99s, then steps (in the order first seen).
    let rank = |s: &Series| match s.kind {
        FigureKind::Column | FigureKind::P99 => (
            if s.kind == FigureKind::Column { 0 } else { 1 },
            ColumnId::parse(&s.id).map_or(9, crate::data::model::col_index),
        ),
        FigureKind::Step => (2, 0),
    };
    out.sort_by_key(rank);
    out
}

/// The figures of one record that a series is drawn for.
fn figures(rec: &Record) -> Vec<(String, FigureKind, &'static str, f64)> {
    let mut out = Vec::new();
    for c in ColumnId::ALL {
        let Some(t) = rec.test(c) else { continue };
        if let Some(v) = t.headline() {
            out.push((
                c.as_str().to_string(),
                FigureKind::Column,
                c.headline().unit(),
                v,
            ));
        }
        if is_latency_column(c)
            && let Some(p) = t.p99_ns()
        {
            out.push((c.as_str().to_string(), FigureKind::P99, "ns", p as f64));
        }
    }
    for s in rec.steps.iter().filter(|s| s.status == StepStatus::Ok) {
        out.push((s.id.clone(), FigureKind::Step, "s", s.wall_s));
    }
    out
}

/// The histories of the runners with records on two or more days (in the window).
pub fn histories(ds: &Dataset) -> Vec<RunnerHistory> {
    ds.runners
        .iter()
        .filter_map(|r| {
            let records: Vec<&Record> = r.runs.iter().map(|&i| ds.record(i)).collect();
            let days: BTreeSet<&str> = records
                .iter()
                .filter_map(|rec| rec.started_at.get(..10))
                .collect();
            (days.len() >= 2).then(|| RunnerHistory {
                label: r.label.clone(),
                slug: r.slug.clone(),
                days: days.len(),
                series: series(&records),
            })
        })
        .collect()
}

/// One change beyond noise, for the index.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ChangeFinding {
    pub started_at: String,
    pub html: String,
    pub text: String,
    pub verdict: Verdict,
}

/// Every point judged `slower` or `faster` (headlines and steps), newest first.
pub fn change_findings(
    histories: &[RunnerHistory],
    runners: &[RunnerOverview],
) -> Vec<ChangeFinding> {
    let mut out = Vec::new();
    for h in histories {
        let imported = runners
            .iter()
            .find(|r| r.slug == h.slug)
            .is_some_and(|r| r.imported);
        for s in h.series.iter().filter(|s| s.kind != FigureKind::P99) {
            for p in &s.points {
                let (Some(v @ (Verdict::Slower | Verdict::Faster)), Some(base), Some(band)) =
                    (p.verdict, p.base, p.band_pct)
                else {
                    continue;
                };
                let moved = if p.value < base { "fell" } else { "rose" };
                let date = p.started_at.get(..10).unwrap_or(&p.started_at);
                let what = match s.kind {
                    FigureKind::Step => format!("Build step {}", s.id),
                    _ => s.id.clone(),
                };
                let (from, to) = (s.fmt(base), s.fmt(p.value));
                let tail = format!(
                    " on {date}, outside its usual \u{b1}{} ({}).",
                    fmt_pct(band),
                    v.as_str()
                );
                let imp = if imported { " [imported]" } else { "" };
                let text = format!(
                    "{what} on {}{imp} {moved} from {from} to {to}{tail}",
                    h.label
                );
                let html = format!(
                    "{} on <a href=\"runners/{}.html\">{}</a>{} {moved} from <b>{}</b> to <b>{}</b>{}",
                    esc(&what),
                    h.slug,
                    esc(&h.label),
                    if imported {
                        " <span class=\"imp\">imported</span>"
                    } else {
                        ""
                    },
                    esc(&from),
                    esc(&to),
                    esc(&tail)
                );
                out.push(ChangeFinding {
                    started_at: p.started_at.clone(),
                    html,
                    text,
                    verdict: v,
                });
            }
        }
    }
    out.sort_by(|a, b| {
        b.started_at
            .cmp(&a.started_at)
            .then_with(|| a.text.cmp(&b.text))
    });
    out
}

/// "6%", "0.8%", "12%".
pub fn fmt_pct(p: f64) -> String {
    if p < 10.0 {
        let s = format!("{p:.1}");
        format!("{}%", s.trim_end_matches(".0"))
    } else {
        format!("{p:.0}%")
    }
}

/// One chart of a runner page's History section.
#[derive(Clone, Debug, Serialize)]
pub struct ChartView {
    pub title: String,
    pub svg: String,
    /// Points marked slower or faster.
    pub marked: usize,
    pub points: usize,
}

/// A range wider than this (max / min) is drawn on a log axis.
const LOG_ABOVE_RATIO: f64 = 10.0;
const W: f64 = 320.0;
const H: f64 = 120.0;
const PAD_L: f64 = 46.0;
const PAD_R: f64 = 8.0;
const PAD_T: f64 = 8.0;
const PAD_B: f64 = 20.0;

/// The chart of one series: a point per record, the band each point was judged in shaded,
/// points beyond it marked (slower: a red ring, faster: a green one). Time runs by record
/// date, so a gap in the runs is a gap in the line.
pub fn chart_svg(s: &Series) -> String {
    let pts: Vec<(f64, f64)> = s
        .points
        .iter()
        .filter_map(|p| {
            let t = record::time::parse_utc_secs(&p.started_at)? as f64;
            (p.value.is_finite() && p.value > 0.0).then_some((t, p.value))
        })
        .collect();
    let mut lo = pts.iter().map(|p| p.1).fold(f64::INFINITY, f64::min);
    let mut hi = pts.iter().map(|p| p.1).fold(0.0, f64::max);
    // The band must fit too.
    for p in &s.points {
        if let (Some(b), Some(pct)) = (p.base, p.band_pct) {
            lo = lo.min(b * (1.0 - pct / 100.0).max(0.01));
            hi = hi.max(b * (1.0 + pct / 100.0));
        }
    }
    if pts.is_empty() || !lo.is_finite() {
        return String::new();
    }
    let log = hi / lo > LOG_ABOVE_RATIO;
    let (lo, hi) = if hi > lo {
        (lo, hi)
    } else {
        (lo * 0.9, hi * 1.1)
    };
    let (t0, t1) = (
        pts.iter().map(|p| p.0).fold(f64::INFINITY, f64::min),
        pts.iter().map(|p| p.0).fold(f64::NEG_INFINITY, f64::max),
    );
    let x = |t: f64| {
        if t1 > t0 {
            PAD_L + (t - t0) / (t1 - t0) * (W - PAD_L - PAD_R)
        } else {
            (PAD_L + W - PAD_R) / 2.0
        }
    };
    let y = |v: f64| {
        let f = if log {
            (v.ln() - lo.ln()) / (hi.ln() - lo.ln())
        } else {
            (v - lo) / (hi - lo)
        };
        H - PAD_B - f * (H - PAD_T - PAD_B)
    };
    let mut svg = String::new();
    let _ = write!(
        svg,
        "<svg class=\"history-chart\" viewBox=\"0 0 {W} {H}\" role=\"img\" aria-label=\"{} over time{}\" xmlns=\"http://www.w3.org/2000/svg\">",
        esc(&s.name()),
        if log { ", log scale" } else { "" }
    );
    // The band: at each judged point, the range its figure could take and stay within noise.
    let band: Vec<(f64, f64, f64)> = s
        .points
        .iter()
        .filter_map(|p| {
            let t = record::time::parse_utc_secs(&p.started_at)? as f64;
            let (b, pct) = (p.base?, p.band_pct?);
            Some((
                x(t),
                y(b * (1.0 + pct / 100.0)),
                y((b * (1.0 - pct / 100.0)).max(lo)),
            ))
        })
        .collect();
    if !band.is_empty() {
        let mut d = String::new();
        for (i, (bx, top, _)) in band.iter().enumerate() {
            let _ = write!(d, "{}{bx:.1},{top:.1} ", if i == 0 { "M" } else { "L" });
        }
        for (bx, _, bottom) in band.iter().rev() {
            let _ = write!(d, "L{bx:.1},{bottom:.1} ");
        }
        if band.len() == 1 {
            // A single judged point: a short bar rather than a zero-width polygon.
            let (bx, top, bottom) = band[0];
            let _ = write!(
                svg,
                "<rect class=\"band\" x=\"{:.1}\" y=\"{top:.1}\" width=\"6\" height=\"{:.1}\" fill=\"currentColor\" fill-opacity=\"0.15\"/>",
                bx - 3.0,
                (bottom - top).max(0.5)
            );
        } else {
            let _ = write!(
                svg,
                "<path class=\"band\" d=\"{}Z\" fill=\"currentColor\" fill-opacity=\"0.15\"/>",
                d.trim_end()
            );
        }
    }
    // Axis labels: the range's ends.
    let _ = write!(
        svg,
        "<text x=\"{:.0}\" y=\"{:.1}\" font-size=\"10\" text-anchor=\"end\" fill=\"currentColor\">{}</text>\
         <text x=\"{:.0}\" y=\"{:.1}\" font-size=\"10\" text-anchor=\"end\" fill=\"currentColor\">{}</text>",
        PAD_L - 4.0,
        y(hi) + 4.0,
        esc(&s.fmt(hi)),
        PAD_L - 4.0,
        y(lo),
        esc(&s.fmt(lo))
    );
    let first = s
        .points
        .first()
        .map(|p| p.started_at.get(..10).unwrap_or(""));
    let last = s
        .points
        .last()
        .map(|p| p.started_at.get(..10).unwrap_or(""));
    let _ = write!(
        svg,
        "<text x=\"{PAD_L}\" y=\"{}\" font-size=\"10\" fill=\"currentColor\">{}</text>\
         <text x=\"{}\" y=\"{}\" font-size=\"10\" text-anchor=\"end\" fill=\"currentColor\">{}</text>",
        H - 4.0,
        esc(first.unwrap_or("")),
        W - PAD_R,
        H - 4.0,
        esc(last.unwrap_or(""))
    );
    let line: Vec<String> = pts
        .iter()
        .map(|&(t, v)| format!("{:.1},{:.1}", x(t), y(v)))
        .collect();
    let _ = write!(
        svg,
        "<polyline class=\"line\" points=\"{}\" fill=\"none\" stroke=\"currentColor\" stroke-width=\"1.5\"/>",
        line.join(" ")
    );
    for p in &s.points {
        let Some(t) = record::time::parse_utc_secs(&p.started_at) else {
            continue;
        };
        if !(p.value.is_finite() && p.value > 0.0) {
            continue;
        }
        let (cx, cy) = (x(t as f64), y(p.value));
        let title = format!(
            "{}: {}{}",
            p.started_at.get(..10).unwrap_or(&p.started_at),
            s.fmt(p.value),
            match (p.verdict, p.change_pct) {
                (Some(v), Some(c)) => format!(" ({c:+.1}%, {})", v.as_str()),
                _ => String::new(),
            }
        );
        let mark = match p.verdict {
            Some(Verdict::Slower) => " marked slower",
            Some(Verdict::Faster) => " marked faster",
            _ => "",
        };
        let _ = write!(
            svg,
            "<circle class=\"point{mark}\" cx=\"{cx:.1}\" cy=\"{cy:.1}\" r=\"{}\"{}><title>{}</title></circle>",
            if mark.is_empty() { 2.5 } else { 4.5 },
            match p.verdict {
                Some(Verdict::Slower) => " fill=\"none\" stroke=\"#dc2626\" stroke-width=\"2\"",
                Some(Verdict::Faster) => " fill=\"none\" stroke=\"#059669\" stroke-width=\"2\"",
                _ => " fill=\"currentColor\"",
            },
            esc(&title)
        );
    }
    svg.push_str("</svg>");
    svg
}

/// The History section's charts for a runner page (empty: no History section).
pub fn charts(h: &RunnerHistory) -> Vec<ChartView> {
    h.series
        .iter()
        .map(|s| {
            let title = match s.kind {
                FigureKind::Column => ColumnId::parse(&s.id)
                    .map(|c| format!("{} ({})", c.title(), s.unit))
                    .unwrap_or_else(|| s.id.clone()),
                FigureKind::P99 => ColumnId::parse(&s.id)
                    .map(|c| format!("{} p99 latency", c.title()))
                    .unwrap_or_else(|| s.name()),
                FigureKind::Step => format!("Build step {} (wall time)", s.id),
            };
            ChartView {
                title,
                svg: chart_svg(s),
                marked: s
                    .points
                    .iter()
                    .filter(|p| matches!(p.verdict, Some(Verdict::Slower | Verdict::Faster)))
                    .count(),
                points: s.points.len(),
            }
        })
        .collect()
}

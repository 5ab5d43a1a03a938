//! A runner's figure over time: small SVG line charts (a band polygon, a line, marked points;
//! no script) for the runner page's History section.

use std::fmt::Write as _;

use record::ColumnId;
use serde::Serialize;

use super::{Axis, open};
use crate::analysis::history::{FigureKind, Verdict};
use crate::analysis::timeline::{RunnerHistory, Series};
use crate::pages::html::esc;

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
    // One record: its point in the middle.
    let (t0, t1) = if t1 > t0 {
        (t0, t1)
    } else {
        (t0 - 1.0, t0 + 1.0)
    };
    let x = |t: f64| {
        Axis {
            lo: t0,
            hi: t1,
            log: false,
            from: PAD_L,
            to: W - PAD_R,
        }
        .at(t)
    };
    let y_axis = Axis {
        lo,
        hi,
        log,
        from: H - PAD_B,
        to: PAD_T,
    };
    let y = |v: f64| y_axis.at(v);
    let mut svg = open(
        "history-chart",
        &format!(
            "{} over time{}",
            s.name(),
            if log { ", log scale" } else { "" }
        ),
        W,
        H,
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

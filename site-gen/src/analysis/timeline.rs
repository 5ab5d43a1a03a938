//! A runner's figures over time: one series per column, latency p99 and build step, each
//! record a point judged against the records before it ([`crate::analysis::history::compare`]), the
//! changes beyond noise as findings and the series as `data/history.json` (drawn by
//! [`crate::charts::history`]).

use std::collections::BTreeSet;

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

    pub(crate) fn fmt(&self, v: f64) -> String {
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

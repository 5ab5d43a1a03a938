//! `data/steps.json`: every step's analysis, machine-readable (CONTRACT section 5), so others
//! can reuse the figures without scraping the page.

use serde_json::{Value, json};

use crate::analysis::correlation::{Figure, MIN_RUNNERS, StepAnalysis, rank};

pub(crate) const SCHEMA: &str = "diskbench.site-steps/1";

/// Rounded to 4 decimals: enough for a correlation, stable across platforms' last bits.
fn round4(v: f64) -> f64 {
    (v * 10_000.0).round() / 10_000.0
}

fn opt(v: Option<f64>) -> Value {
    v.map(|v| json!(round4(v))).unwrap_or(Value::Null)
}

pub(crate) fn steps_json(steps: &[StepAnalysis]) -> Value {
    json!({
        "schema": SCHEMA,
        "method": {
            "rank": "Spearman's rho of the step's median time per runner against each figure; figures within 10% of each other tie",
            "controlled": "partial rank correlation: each disk figure with the CPU figure held fixed, each CPU figure with the best disk figure held fixed",
            "interval": format!("{:.1}% percentile bootstrap over runners (95% for a step's {} figures together, Bonferroni), {} resamples, fixed seed; none where fewer than {:.0}% of resamples define the figure", rank::COVERAGE * 100.0, rank::FIGURES_TESTED, rank::RESAMPLES, rank::MIN_DEFINED_SHARE * 100.0),
            "call": "from the controlled figures, only where the interval lies below zero (qd1-read, sync-write: latency; rand-read, rand-write: throughput at depth; seq-read, seq-write: bandwidth); a disk-only pair (same CPU, disks at least 10x apart in every figure, times within their resolution or 10%) calls not-disk where the ranks made no call or a disk call; an experiment (what_if) outranks both",
            "tie_tolerance": rank::TIE_TOLERANCE,
            "min_runners": MIN_RUNNERS,
        },
        "steps": steps.iter().map(step_json).collect::<Vec<_>>(),
    })
}

fn step_json(s: &StepAnalysis) -> Value {
    json!({
        "suite": s.suite,
        "step": s.name,
        "id": s.id,
        "n": s.n,
        "imported_runners": s.imported_runners,
        "follows": s.follows.as_str(),
        "by": s.by.as_str(),
        "follows_by_correlation": s.follows_by_correlation.as_str(),
        "deciding": s.deciding.map(Figure::id),
        "cpu_benchmark": s.cpu_benchmark,
        "cpu_held": s.cpu_held.map(Figure::id),
        "best_disk": s.best_disk.map(|c| c.as_str()),
        "figures": s.links.iter().map(|l| json!({
            "figure": l.figure.id(),
            "rho": opt(l.rho),
            "n": l.points.len(),
            "held": l.held.map(Figure::id),
            "rho_controlled": opt(l.rho_controlled),
            "n_controlled": l.n_controlled,
            "interval": l.interval.map(|i| json!([round4(i.lo), round4(i.hi)])).unwrap_or(Value::Null),
            "defined_share": round4(l.defined_share),
        })).collect::<Vec<_>>(),
        "disk_only_pair": s.disk_only_pair.as_ref().map(|p| json!({
            "disk": p.disk.as_str(),
            "better": {"label": p.better.0, "class": p.better.1.as_str(), "figure": p.better.2, "wall_s": p.better.3},
            "worse": {"label": p.worse.0, "class": p.worse.1.as_str(), "figure": p.worse.2, "wall_s": p.worse.3},
            "min_ratio": round4(p.min_ratio),
            "resolution_s": p.resolution_s,
            "allowance_s": round4(p.allowance_s),
            "reading": p.reading.as_str(),
        })),
        "experiment": s.experiment.as_ref().map(|e| json!({"runner": e.runner, "bound": e.bound.as_str(), "why": e.why})),
        "conclusion": s.conclusion,
    })
}

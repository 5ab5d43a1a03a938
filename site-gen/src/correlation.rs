//! Steps across runners: does a build step's time follow a column (latency or bandwidth) or the
//! CPU? Spearman rank correlation over runners, with n, and the conclusion in words.

use std::collections::BTreeMap;

use engine::record::ColumnId;

use crate::model::Dataset;
use crate::stats::spearman;

/// One step against one figure across runners.
#[derive(Clone, Debug)]
pub struct Pair {
    /// A column, or None for the CPU reference.
    pub column: Option<ColumnId>,
    /// (figure, step wall seconds), one per runner that has both.
    pub points: Vec<(f64, f64)>,
    /// Spearman's rho of figure against time (negative: a better figure, a faster step).
    pub rho: Option<f64>,
}

#[derive(Clone, Debug)]
pub struct StepAnalysis {
    pub id: String,
    pub name: String,
    pub pairs: Vec<Pair>,
    /// What the step follows: "latency", "bandwidth", "cpu", "neither" or "too-few".
    pub follows: &'static str,
    pub conclusion: String,
    /// Runners where the step failed at least once (in the window).
    pub failed_runners: usize,
}

/// Fewer runners than this and no conclusion is drawn.
pub const MIN_RUNNERS: usize = 5;
/// |rho| at least this strong counts as following a figure.
pub const STRONG_RHO: f64 = 0.6;

pub fn is_latency_column(c: ColumnId) -> bool {
    matches!(c, ColumnId::Qd1Read | ColumnId::SyncWrite)
}

pub fn analyse(ds: &Dataset) -> Vec<StepAnalysis> {
    let mut ids: BTreeMap<&str, &str> = BTreeMap::new();
    for r in &ds.runners {
        for s in &r.steps {
            ids.entry(s.id.as_str()).or_insert(s.name.as_str());
        }
    }
    ids.into_iter()
        .map(|(id, name)| {
            let failed_runners = ds
                .runners
                .iter()
                .filter(|r| r.steps.iter().any(|s| s.id == id && s.failed > 0))
                .count();
            let wall = |r: &crate::model::RunnerSummary| {
                r.steps
                    .iter()
                    .find(|s| s.id == id && s.runs > 0)
                    .map(|s| s.wall_s)
                    .filter(|w| w.is_finite() && *w > 0.0)
            };
            let mut pairs: Vec<Pair> = ColumnId::ALL
                .into_iter()
                .map(|c| {
                    let points: Vec<(f64, f64)> = ds
                        .runners
                        .iter()
                        .filter_map(|r| Some((r.column(c)?.median, wall(r)?)))
                        .collect();
                    pair(Some(c), points)
                })
                .collect();
            let cpu: Vec<(f64, f64)> = ds
                .runners
                .iter()
                .filter_map(|r| Some((r.cpu_single_ops_s?, wall(r)?)))
                .collect();
            pairs.push(pair(None, cpu));
            let (follows, conclusion) = conclude(name, &pairs);
            StepAnalysis {
                id: id.into(),
                name: name.into(),
                pairs,
                follows,
                conclusion,
                failed_runners,
            }
        })
        .collect()
}

fn pair(column: Option<ColumnId>, points: Vec<(f64, f64)>) -> Pair {
    let (x, y): (Vec<f64>, Vec<f64>) = points.iter().copied().unzip();
    let rho = spearman(&x, &y);
    Pair {
        column,
        points,
        rho,
    }
}

fn label(p: &Pair) -> String {
    p.column
        .map(|c| c.as_str().to_string())
        .unwrap_or_else(|| "the CPU reference".into())
}

/// The conclusion in words, from the correlations alone.
fn conclude(name: &str, pairs: &[Pair]) -> (&'static str, String) {
    let n = pairs.iter().map(|p| p.points.len()).max().unwrap_or(0);
    if n < MIN_RUNNERS {
        return (
            "too-few",
            format!(
                "{name}: {} both figures; at least {MIN_RUNNERS} are needed to tell what it follows.",
                match n {
                    0 => "no runner has".to_string(),
                    1 => "only 1 runner has".to_string(),
                    n => format!("only {n} runners have"),
                }
            ),
        );
    }
    // Most negative rho: the figure whose improvement best predicts a faster step.
    let strongest = pairs
        .iter()
        .filter(|p| p.rho.is_some())
        .min_by(|a, b| a.rho.unwrap().total_cmp(&b.rho.unwrap()));
    let Some(best) = strongest else {
        return (
            "neither",
            format!("{name}: no figure varies enough across runners to compare."),
        );
    };
    let rho = best.rho.unwrap();
    let fmt = |p: &Pair| {
        format!(
            "ρ = {:.2}, n = {}",
            p.rho.unwrap_or(f64::NAN),
            p.points.len()
        )
    };
    if rho > -STRONG_RHO {
        return (
            "neither",
            format!(
                "{name} follows neither the disk nor the CPU clearly: its strongest link is {} ({}), too weak to call.",
                label(best),
                fmt(best)
            ),
        );
    }
    // Runner-up from the other family, to say how clear the call is.
    let others: Vec<&Pair> = pairs
        .iter()
        .filter(|p| p.rho.is_some() && family(p) != family(best))
        .collect();
    let runner_up = others
        .iter()
        .min_by(|a, b| a.rho.unwrap().total_cmp(&b.rho.unwrap()));
    let versus = runner_up
        .map(|p| format!("; next best outside that group: {} ({})", label(p), fmt(p)))
        .unwrap_or_default();
    let (follows, what) = match family(best) {
        "cpu" => ("cpu", "the CPU, not the disk"),
        "latency" => (
            "latency",
            "latency (one I/O at a time: QD1 reads, synced writes)",
        ),
        _ => ("bandwidth", "bandwidth (sequential, or random at depth)"),
    };
    (
        follows,
        format!(
            "{name} follows {what}: it runs faster where {} is higher ({}){versus}.",
            label(best),
            fmt(best)
        ),
    )
}

fn family(p: &Pair) -> &'static str {
    match p.column {
        None => "cpu",
        Some(c) if is_latency_column(c) => "latency",
        Some(_) => "bandwidth",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::LoadedRecord;
    use crate::testdata::Fleet;

    #[test]
    fn generated_steps_follow_what_they_were_made_of() {
        let recs = Fleet::small()
            .records()
            .into_iter()
            .map(|record| LoadedRecord {
                path: "x".into(),
                record,
            })
            .collect();
        let ds = Dataset::build(recs, None);
        let a = analyse(&ds);
        let sqlite = a.iter().find(|s| s.id == "sqlite").unwrap();
        let rhos: Vec<_> = sqlite.pairs.iter().map(|p| (p.column, p.rho)).collect();
        assert_eq!(sqlite.follows, "latency", "{} {rhos:?}", sqlite.conclusion);
        let cargo = a.iter().find(|s| s.id == "cargo-build").unwrap();
        assert_eq!(cargo.follows, "cpu", "{}", cargo.conclusion);
        let docker = a.iter().find(|s| s.id == "docker-build").unwrap();
        assert_eq!(docker.failed_runners, 1);
        assert!(sqlite.conclusion.contains("n = "));
    }
}

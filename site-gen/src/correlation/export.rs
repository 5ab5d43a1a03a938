//! `data/steps.json`: every step's analysis, machine-readable (CONTRACT section 5), so others
//! can reuse the figures without scraping the page.

use serde::Serialize;

use super::{Figure, StepAnalysis, rank};

pub(crate) const SCHEMA: &str = "diskbench.site-steps/1";

/// Rounded to 4 decimals: enough for a correlation, stable across platforms' last bits.
fn round4(v: f64) -> f64 {
    (v * 10_000.0).round() / 10_000.0
}

/// The whole file.
#[derive(Serialize)]
pub struct StepsFile<'a> {
    pub schema: &'static str,
    pub method: Method,
    pub steps: Vec<StepEntry<'a>>,
}

/// How the figures were computed, in words and the constants that matter.
#[derive(Serialize)]
pub struct Method {
    pub rank: &'static str,
    pub controlled: &'static str,
    pub interval: String,
    pub call: &'static str,
    pub tie_tolerance: f64,
    pub min_runners: usize,
}

/// One step's analysis.
#[derive(Serialize)]
pub struct StepEntry<'a> {
    pub suite: &'a str,
    pub step: &'a str,
    pub id: &'a str,
    pub n: usize,
    pub imported_runners: usize,
    pub follows: &'static str,
    pub by: &'static str,
    pub follows_by_correlation: &'static str,
    pub deciding: Option<&'static str>,
    pub cpu_benchmark: Option<&'a str>,
    pub cpu_held: Option<&'static str>,
    pub best_disk: Option<&'static str>,
    pub figures: Vec<FigureEntry>,
    pub disk_only_pair: Option<PairEntry<'a>>,
    pub experiment: Option<ExperimentEntry<'a>>,
    pub conclusion: &'a str,
}

/// One figure's link with the step's time.
#[derive(Serialize)]
pub struct FigureEntry {
    pub figure: &'static str,
    pub rho: Option<f64>,
    pub n: usize,
    pub held: Option<&'static str>,
    pub rho_controlled: Option<f64>,
    pub n_controlled: usize,
    /// `[lo, hi]`.
    pub interval: Option<[f64; 2]>,
    pub defined_share: f64,
}

/// Two runners with about the same CPU that differ in one disk figure.
#[derive(Serialize)]
pub struct PairEntry<'a> {
    pub disk: &'static str,
    pub better: PairRunner<'a>,
    pub worse: PairRunner<'a>,
}

#[derive(Serialize)]
pub struct PairRunner<'a> {
    pub label: &'a str,
    pub class: &'static str,
    pub figure: f64,
    pub wall_s: f64,
}

#[derive(Serialize)]
pub struct ExperimentEntry<'a> {
    pub runner: &'a str,
    pub bound: &'static str,
    pub why: &'a str,
}

pub fn steps_json(steps: &[StepAnalysis]) -> StepsFile<'_> {
    StepsFile {
        schema: SCHEMA,
        method: Method {
            rank: "Spearman's rho of the step's median time per runner against each figure; figures within 10% of each other tie",
            controlled: "partial rank correlation: each disk figure with the CPU figure held fixed, each CPU figure with the best disk figure held fixed",
            interval: format!(
                "{:.1}% percentile bootstrap over runners (95% for a step's {} figures together, Bonferroni), {} resamples, fixed seed; none where fewer than {:.0}% of resamples define the figure",
                rank::COVERAGE * 100.0,
                rank::FIGURES_TESTED,
                rank::RESAMPLES,
                rank::MIN_DEFINED_SHARE * 100.0
            ),
            call: "from the controlled figures, only where the interval lies below zero; an experiment (what_if) outranks it",
            tie_tolerance: rank::TIE_TOLERANCE,
            min_runners: super::MIN_RUNNERS,
        },
        steps: steps.iter().map(step_json).collect(),
    }
}

fn pair_runner(r: &(String, record::StorageClass, f64, f64)) -> PairRunner<'_> {
    PairRunner {
        label: &r.0,
        class: r.1.as_str(),
        figure: r.2,
        wall_s: r.3,
    }
}

fn step_json(s: &StepAnalysis) -> StepEntry<'_> {
    StepEntry {
        suite: &s.suite,
        step: &s.name,
        id: &s.id,
        n: s.n,
        imported_runners: s.imported_runners,
        follows: s.follows.as_str(),
        by: s.by.as_str(),
        follows_by_correlation: s.follows_by_correlation.as_str(),
        deciding: s.deciding.map(Figure::id),
        cpu_benchmark: s.cpu_benchmark.as_deref(),
        cpu_held: s.cpu_held.map(Figure::id),
        best_disk: s.best_disk.map(|c| c.as_str()),
        figures: s
            .links
            .iter()
            .map(|l| FigureEntry {
                figure: l.figure.id(),
                rho: l.rho.map(round4),
                n: l.points.len(),
                held: l.held.map(Figure::id),
                rho_controlled: l.rho_controlled.map(round4),
                n_controlled: l.n_controlled,
                interval: l.interval.map(|i| [round4(i.lo), round4(i.hi)]),
                defined_share: round4(l.defined_share),
            })
            .collect(),
        disk_only_pair: s.disk_only_pair.as_ref().map(|p| PairEntry {
            disk: p.disk.as_str(),
            better: pair_runner(&p.better),
            worse: pair_runner(&p.worse),
        }),
        experiment: s.experiment.as_ref().map(|e| ExperimentEntry {
            runner: &e.runner,
            bound: e.bound.as_str(),
            why: &e.why,
        }),
        conclusion: &s.conclusion,
    }
}

//! `data/steps.json`: every step's analysis, machine-readable (CONTRACT section 5), so others
//! can reuse the figures without scraping the page. Fields are declared in the order the file
//! has always written them (alphabetical).

use serde::Serialize;

use crate::analysis::correlation::{DiskOnlyPair, Figure, Link, MIN_RUNNERS, StepAnalysis, rank};

pub(crate) const SCHEMA: &str = "diskbench.site-steps/1";

/// Rounded to 4 decimals: enough for a correlation, stable across platforms' last bits.
fn round4(v: f64) -> f64 {
    (v * 10_000.0).round() / 10_000.0
}

/// The whole file.
#[derive(Serialize)]
pub(crate) struct StepsFile<'a> {
    /// How every step was analysed, in words and constants.
    pub method: Method,
    /// `diskbench.site-steps/1`.
    pub schema: &'static str,
    /// One entry per step across runners.
    pub steps: Vec<StepEntry<'a>>,
}

/// The method, said once for every step.
#[derive(Serialize)]
pub(crate) struct Method {
    /// How a step's call is made.
    pub call: &'static str,
    /// What a controlled figure holds fixed.
    pub controlled: &'static str,
    /// How each controlled figure's interval is computed.
    pub interval: String,
    /// The fewest runners a step needs for a call.
    pub min_runners: usize,
    /// What is ranked against what.
    pub rank: &'static str,
    /// Figures within this share of each other tie.
    pub tie_tolerance: f64,
}

/// One step.
#[derive(Serialize)]
pub(crate) struct StepEntry<'a> {
    /// The disk figure that ranked the step best, if any.
    pub best_disk: Option<&'static str>,
    /// How the call was made: `experiment`, `correlation`, `pair` or none.
    pub by: &'static str,
    /// The conclusion as the page says it.
    pub conclusion: &'a str,
    /// The CPU benchmark whose scores were ranked (one benchmark at a time).
    pub cpu_benchmark: &'a Option<String>,
    /// The CPU figure held fixed for the disk figures.
    pub cpu_held: Option<&'static str>,
    /// The figure the call rests on.
    pub deciding: Option<&'static str>,
    /// Two runners on one CPU level with disks far apart, when the data has them.
    pub disk_only_pair: Option<PairEntry<'a>>,
    /// The what-if experiment that outranks the correlation, when one ran.
    pub experiment: Option<ExperimentEntry<'a>>,
    /// The step against each figure.
    pub figures: Vec<FigureEntry>,
    /// What the step follows.
    pub follows: &'static str,
    /// What the correlation alone would say.
    pub follows_by_correlation: &'static str,
    /// The step's id.
    pub id: &'a str,
    /// How many of the runners are imported (published) ones.
    pub imported_runners: usize,
    /// Runners with a time for the step.
    pub n: usize,
    /// The step's name.
    pub step: &'a str,
    /// The suite (project) the step belongs to.
    pub suite: &'a str,
}

/// The step against one figure.
#[derive(Serialize)]
pub(crate) struct FigureEntry {
    /// Share of resamples where the controlled rho was defined.
    pub defined_share: f64,
    /// The figure's id.
    pub figure: &'static str,
    /// The figure held fixed for `rho_controlled`.
    pub held: Option<&'static str>,
    /// The bootstrap interval of `rho_controlled`, [low, high].
    pub interval: Option<[f64; 2]>,
    /// Runners with the figure and the time.
    pub n: usize,
    /// Runners with the figure, the time and the held figure.
    pub n_controlled: usize,
    /// Spearman's rho of figure and time.
    pub rho: Option<f64>,
    /// The partial rank correlation with `held` fixed.
    pub rho_controlled: Option<f64>,
}

/// One runner of a disk-only pair.
#[derive(Serialize)]
pub(crate) struct PairSide<'a> {
    /// Its storage class.
    pub class: &'static str,
    /// Its disk figure.
    pub figure: f64,
    /// Its runner label.
    pub label: &'a str,
    /// The step's wall time on it, seconds.
    pub wall_s: f64,
}

/// A disk-only pair.
#[derive(Serialize)]
pub(crate) struct PairEntry<'a> {
    /// Its time allowance, seconds.
    pub allowance_s: f64,
    /// The runner with the better disk.
    pub better: PairSide<'a>,
    /// The disk figure compared.
    pub disk: &'static str,
    /// The smallest ratio between the two disks over every figure.
    pub min_ratio: f64,
    /// What the pair says.
    pub reading: &'static str,
    /// The time's resolution, seconds.
    pub resolution_s: f64,
    /// The runner with the worse disk.
    pub worse: PairSide<'a>,
}

/// The experiment that decided a step.
#[derive(Serialize)]
pub(crate) struct ExperimentEntry<'a> {
    /// What it found the step bound by.
    pub bound: &'static str,
    /// The runner it ran on.
    pub runner: &'a str,
    /// Why, in words.
    pub why: &'a str,
}

pub(crate) fn steps_json(steps: &[StepAnalysis]) -> StepsFile<'_> {
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
            call: "from the controlled figures, only where the interval lies below zero (qd1-read, sync-write: latency; rand-read, rand-write: throughput at depth; seq-read, seq-write: bandwidth); a disk-only pair (same CPU, disks at least 10x apart in every figure, times within their resolution or 10%) calls not-disk where the ranks made no call or a disk call; an experiment (what_if) outranks both",
            tie_tolerance: rank::TIE_TOLERANCE,
            min_runners: MIN_RUNNERS,
        },
        steps: steps.iter().map(step_entry).collect(),
    }
}

fn figure_entry(l: &Link) -> FigureEntry {
    FigureEntry {
        figure: l.figure.id(),
        rho: l.rho.map(round4),
        n: l.points.len(),
        held: l.held.map(Figure::id),
        rho_controlled: l.rho_controlled.map(round4),
        n_controlled: l.n_controlled,
        interval: l.interval.map(|i| [round4(i.lo), round4(i.hi)]),
        defined_share: round4(l.defined_share),
    }
}

fn pair_side(s: &(String, record::StorageClass, f64, f64)) -> PairSide<'_> {
    PairSide {
        label: &s.0,
        class: s.1.as_str(),
        figure: s.2,
        wall_s: s.3,
    }
}

fn pair_entry(p: &DiskOnlyPair) -> PairEntry<'_> {
    PairEntry {
        disk: p.disk.as_str(),
        better: pair_side(&p.better),
        worse: pair_side(&p.worse),
        min_ratio: round4(p.min_ratio),
        resolution_s: p.resolution_s,
        allowance_s: round4(p.allowance_s),
        reading: p.reading.as_str(),
    }
}

fn step_entry(s: &StepAnalysis) -> StepEntry<'_> {
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
        cpu_benchmark: &s.cpu_benchmark,
        cpu_held: s.cpu_held.map(Figure::id),
        best_disk: s.best_disk.map(|c| c.as_str()),
        figures: s.links.iter().map(figure_entry).collect(),
        disk_only_pair: s.disk_only_pair.as_ref().map(pair_entry),
        experiment: s.experiment.as_ref().map(|e| ExperimentEntry {
            runner: &e.runner,
            bound: e.bound.as_str(),
            why: &e.why,
        }),
        conclusion: &s.conclusion,
    }
}

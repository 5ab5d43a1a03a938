//! The steps page's data: each step's analysis shaped for the template (figures formatted,
//! plots drawn).

use serde::Serialize;
use serde_json::Value;

use crate::analysis::correlation::wording::{fmt_interval, fmt_rho};
use crate::analysis::correlation::{Figure, Link, StepAnalysis, rank};
use crate::charts::scatter as plot;

fn unit(s: &StepAnalysis, f: Figure) -> String {
    match f {
        Figure::Column(c) => c.headline().unit().to_string(),
        _ => s
            .cpu_benchmark
            .clone()
            .unwrap_or_else(|| "CPU score".into()),
    }
}

/// A step against one figure, as the conclusion table shows it.
#[derive(Serialize)]
struct Row {
    /// The figure's id.
    id: &'static str,
    /// The figure's title.
    title: &'static str,
    /// Spearman's rho, formatted ("–": none).
    rho: String,
    /// Runners behind `rho`.
    n: usize,
    /// The controlled rho, formatted ("–": none).
    rho_controlled: String,
    /// What was held fixed (empty: nothing).
    held: &'static str,
    /// The bootstrap interval, formatted.
    interval: String,
    /// Runners behind `rho_controlled`.
    n_controlled: usize,
    /// Whether the controlled link is clear and counted.
    clear: bool,
    /// Whether this figure decided the call.
    deciding: bool,
}

fn row(l: &Link, deciding: Option<Figure>, called: bool) -> Row {
    Row {
        id: l.figure.id(),
        title: l.figure.title(),
        rho: l.rho.map(fmt_rho).unwrap_or_else(|| "–".into()),
        n: l.points.len(),
        rho_controlled: l.rho_controlled.map(fmt_rho).unwrap_or_else(|| "–".into()),
        held: l.held.map(|h| h.title()).unwrap_or(""),
        interval: fmt_interval(l),
        n_controlled: l.n_controlled,
        clear: called && l.clear(),
        deciding: deciding == Some(l.figure),
    }
}

/// A scatter plot of the step against one figure.
#[derive(Serialize)]
struct Plot {
    /// The figure's title.
    title: &'static str,
    /// rho, n and what was left out.
    caption: String,
    /// The chart (empty: every point was left out).
    svg: String,
}

fn plot_of(s: &StepAnalysis, f: Option<Figure>) -> Option<Plot> {
    let l = f.and_then(|f| s.link(f))?;
    let u = unit(s, l.figure);
    let left_out = plot::left_out(&l.points);
    let mut caption = format!(
        "{}: ρ {}, n {}",
        l.figure.title(),
        l.rho.map(fmt_rho).unwrap_or_else(|| "–".into()),
        l.points.len()
    );
    if left_out > 0 {
        caption.push_str(&format!(
            " ({left_out} figure{} outside {:e}..{:e} left out of the plot, still in the table)",
            if left_out == 1 { "" } else { "s" },
            crate::charts::PLOT_MIN,
            crate::charts::PLOT_MAX
        ));
    }
    let svg = match plot::scatter_svg(&l.points, l.figure.title(), &u, &s.name) {
        Some(svg) => svg,
        None if left_out > 0 => String::new(),
        None => return None,
    };
    Some(Plot {
        title: l.figure.title(),
        caption,
        svg,
    })
}

/// The disk figure to plot: the one that decided, else the one held fixed for the CPU, else
/// the one with the strongest plain link.
fn disk_to_plot(s: &StepAnalysis) -> Option<Figure> {
    s.deciding
        .filter(|f| !f.is_cpu())
        .or(s.best_disk.map(Figure::Column))
        .or_else(|| {
            s.links
                .iter()
                .filter(|l| !l.figure.is_cpu())
                .filter_map(|l| l.rho.map(|rho| (l.figure, rho)))
                .min_by(|a, b| a.1.total_cmp(&b.1))
                .map(|(figure, _)| figure)
        })
}

fn cpu_to_plot(s: &StepAnalysis) -> Option<Figure> {
    s.deciding
        .filter(|f| f.is_cpu())
        .or(s.cpu_held)
        .or_else(|| {
            [Figure::CpuMulti, Figure::CpuSingle]
                .into_iter()
                .find(|f| s.link(*f).is_some_and(|l| l.points.len() >= 2))
        })
}

fn plots(s: &StepAnalysis) -> Vec<Plot> {
    [plot_of(s, disk_to_plot(s)), plot_of(s, cpu_to_plot(s))]
        .into_iter()
        .flatten()
        .collect()
}

/// One step of the steps page.
#[derive(Serialize)]
pub(crate) struct StepView<'a> {
    /// The step's id.
    id: &'a str,
    /// The step's name.
    name: &'a str,
    /// The suite (project) it belongs to.
    suite: &'a str,
    /// Whether any runner behind it is imported.
    imported: bool,
    /// Runners with a time for it.
    n: usize,
    /// What it follows.
    follows: &'static str,
    /// How the call was made.
    by: &'static str,
    /// The conclusion in words.
    conclusion: &'a str,
    /// Runners where the step failed.
    failed_runners: usize,
    /// The CPU benchmark ranked.
    cpu_benchmark: &'a Option<String>,
    /// The step against each figure.
    rows: Vec<Row>,
    /// Its scatter plots (disk, CPU).
    plots: Vec<Plot>,
    /// Why no call was made, for the page's advice: every runner on one disk figure (other
    /// disks help), not too few runners (more runners help).
    one_disk: bool,
    /// Its time on each runner (filled by the page).
    pub times: Vec<Value>,
    /// The experiments that ran it (filled by the page).
    pub experiments: Vec<crate::pages::runner_steps::WhatIfView>,
}

pub(crate) fn steps(steps: &[StepAnalysis]) -> Vec<StepView<'_>> {
    steps
        .iter()
        .map(|s| StepView {
            id: &s.id,
            name: &s.name,
            suite: &s.suite,
            imported: s.imported_runners > 0,
            n: s.n,
            follows: s.follows.as_str(),
            by: s.by.as_str(),
            conclusion: &s.conclusion,
            failed_runners: s.failed_runners,
            cpu_benchmark: &s.cpu_benchmark,
            rows: s
                .links
                .iter()
                .map(|l| row(l, s.deciding, s.no_call.is_none()))
                .collect(),
            plots: plots(s),
            one_disk: matches!(
                s.no_call,
                Some(crate::analysis::correlation::NoCall::OneDiskFigure)
            ),
            times: Vec::new(),
            experiments: Vec::new(),
        })
        .collect()
}

/// How the figures were made, in one paragraph's worth of facts for the page.
#[derive(Serialize)]
pub(crate) struct Method {
    /// Bootstrap resamples.
    resamples: usize,
    /// Each interval's coverage, "99.4%".
    coverage: String,
    /// The tie tolerance, "10%".
    tie: String,
    /// The share of resamples that must define a figure, "80%".
    min_defined: String,
    /// The largest share of a time its resolution may be, "10%".
    resolution: String,
}

pub(crate) fn method() -> Method {
    Method {
        resamples: rank::RESAMPLES,
        coverage: format!("{:.1}%", rank::COVERAGE * 100.0),
        tie: format!("{:.0}%", rank::TIE_TOLERANCE * 100.0),
        min_defined: format!("{:.0}%", rank::MIN_DEFINED_SHARE * 100.0),
        resolution: format!(
            "{:.0}%",
            crate::analysis::correlation::MAX_RESOLUTION_SHARE * 100.0
        ),
    }
}

//! The steps page's data: each step's analysis shaped for the template (figures formatted,
//! plots drawn).

use serde_json::{Value, json};

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

fn row(l: &Link, deciding: Option<Figure>, called: bool) -> Value {
    json!({
        "id": l.figure.id(),
        "title": l.figure.title(),
        "rho": l.rho.map(fmt_rho).unwrap_or_else(|| "–".into()),
        "n": l.points.len(),
        "rho_controlled": l.rho_controlled.map(fmt_rho).unwrap_or_else(|| "–".into()),
        "held": l.held.map(|h| h.title()).unwrap_or(""),
        "interval": fmt_interval(l),
        "n_controlled": l.n_controlled,
        "clear": called && l.clear(),
        "deciding": deciding == Some(l.figure),
    })
}

fn plot_of(s: &StepAnalysis, f: Option<Figure>) -> Value {
    let Some(l) = f.and_then(|f| s.link(f)) else {
        return Value::Null;
    };
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
    match plot::scatter_svg(&l.points, l.figure.title(), &u, &s.name) {
        Some(svg) => json!({ "title": l.figure.title(), "caption": caption, "svg": svg }),
        None if left_out > 0 => json!({ "title": l.figure.title(), "caption": caption, "svg": "" }),
        None => Value::Null,
    }
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

fn plots(s: &StepAnalysis) -> Vec<Value> {
    [plot_of(s, disk_to_plot(s)), plot_of(s, cpu_to_plot(s))]
        .into_iter()
        .filter(|p| !p.is_null())
        .collect()
}

pub(crate) fn steps(steps: &[StepAnalysis]) -> Vec<Value> {
    steps
        .iter()
        .map(|s| {
            json!({
                "id": s.id,
                "name": s.name,
                "suite": s.suite,
                "imported": s.imported_runners > 0,
                "n": s.n,
                "follows": s.follows.as_str(),
                "by": s.by.as_str(),
                "conclusion": s.conclusion,
                "failed_runners": s.failed_runners,
                "cpu_benchmark": s.cpu_benchmark,
                "rows": s.links.iter().map(|l| row(l, s.deciding, s.no_call.is_none())).collect::<Vec<_>>(),
                "plots": plots(s),
                // Why no call was made, for the page's advice (more runners vs other disks).
                "one_disk": matches!(s.no_call, Some(crate::analysis::correlation::NoCall::OneDiskFigure)),
            })
        })
        .collect()
}

/// How the figures were made, in one paragraph's worth of facts for the page.
pub(crate) fn method() -> Value {
    json!({
        "resamples": rank::RESAMPLES,
        "coverage": format!("{:.1}%", rank::COVERAGE * 100.0),
        "tie": format!("{:.0}%", rank::TIE_TOLERANCE * 100.0),
        "min_defined": format!("{:.0}%", rank::MIN_DEFINED_SHARE * 100.0),
        "resolution": format!("{:.0}%", crate::analysis::correlation::MAX_RESOLUTION_SHARE * 100.0),
    })
}

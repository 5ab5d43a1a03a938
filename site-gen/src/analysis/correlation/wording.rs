//! The conclusion of a step's analysis in words. Every figure in a sentence comes from the
//! analysis; nothing here decides anything.

use super::analysis::{
    By, DiskOnlyPair, Figure, Follows, Link, MAX_RESOLUTION_SHARE, MIN_RUNNERS, NoCall,
    PairReading, StepAnalysis,
};
use crate::analysis::correlation::rank::TIE_TOLERANCE;
use crate::analysis::stats::fmt_s;
use record::Bound;

/// A conclusion (plain text; the page escapes it).
pub(crate) struct Wording {
    pub text: String,
}

/// "−0.98": a correlation as people read it (a real minus sign, two decimals).
pub(crate) fn fmt_rho(r: f64) -> String {
    let s = format!("{r:.2}");
    let s = if s == "-0.00" { "0.00".to_string() } else { s };
    s.replace('-', "−")
}

/// "−1.00 to −0.95" or a reason there is none.
pub(crate) fn fmt_interval(l: &Link) -> String {
    match l.interval {
        Some(i) => format!("{} to {}", fmt_rho(i.lo), fmt_rho(i.hi)),
        None if l.rho_controlled.is_some() => format!(
            "none: defined in only {:.0}% of resamples",
            l.defined_share * 100.0
        ),
        None => "–".into(),
    }
}

/// What a call means, in a few words: the site's one vocabulary (latency, throughput at depth,
/// bandwidth, CPU), the same words the verdict rule and the what-if experiments use.
pub(crate) fn what(f: Follows) -> &'static str {
    match f {
        Follows::Latency => {
            "latency (one operation at a time, or synced: QD1 reads, synced writes)"
        }
        Follows::Throughput => {
            "throughput at depth (many small operations in flight: random reads and writes at depth)"
        }
        Follows::Bandwidth => "bandwidth (big sequential transfers)",
        Follows::Cpu => "the CPU, not the disk",
        Follows::NotTheDisk => "not the disk",
        Follows::Neither => "neither clearly",
        Follows::TooFew => "nothing yet: too few runners to tell",
    }
}

/// A figure inside a sentence: "sequential write", "QD1 read", "the all-threads CPU score".
pub(crate) fn phrase(f: Figure) -> String {
    match f {
        Figure::Column(c) if c == record::ColumnId::Qd1Read => c.title().into(),
        Figure::Column(c) => c.title().to_lowercase(),
        Figure::CpuSingle => "the one-thread CPU score".into(),
        Figure::CpuMulti => "the all-threads CPU score".into(),
    }
}

fn held_name(f: Option<Figure>) -> String {
    f.map(phrase).unwrap_or_else(|| "?".into())
}

/// "ρ −0.98 with the CPU, all threads held fixed (99.4% interval −1.00 to −0.95, n = 7)".
fn controlled(l: &Link) -> String {
    format!(
        "ρ {} with {} held fixed ({:.1}% interval {}, n = {})",
        l.rho_controlled.map(fmt_rho).unwrap_or_else(|| "–".into()),
        held_name(l.held),
        super::rank::COVERAGE * 100.0,
        fmt_interval(l),
        l.n_controlled
    )
}

fn plain(l: &Link) -> String {
    format!(
        "ρ {}, n = {}",
        l.rho.map(fmt_rho).unwrap_or_else(|| "–".into()),
        l.points.len()
    )
}

/// The figure with the most negative plain rho (what ranking alone would pick).
fn strongest_plain(a: &StepAnalysis) -> Option<&Link> {
    a.links
        .iter()
        .filter_map(|l| l.rho.map(|rho| (l, rho)))
        .min_by(|x, y| x.1.total_cmp(&y.1))
        .map(|(l, _)| l)
}

/// The other side's controlled link: the CPU's when a disk figure decided, the best disk
/// figure's when the CPU did.
fn other_side(a: &StepAnalysis, deciding: Figure) -> Option<&Link> {
    if deciding.is_cpu() {
        a.best_disk.and_then(|d| a.link(Figure::Column(d)))
    } else {
        a.cpu_held.and_then(|c| a.link(c))
    }
}

const SETTLE: &str =
    "More runners, or a pair of runners that differ in disk only (same CPU), would settle it.";

/// What would settle an open question: a disk-only pair, unless the data already has one.
fn settle(a: &StepAnalysis) -> &'static str {
    match &a.disk_only_pair {
        Some(p) if p.reading != PairReading::Unclear => "More runners would settle it.",
        _ => SETTLE,
    }
}

pub(crate) fn conclusion(a: &StepAnalysis) -> Wording {
    let name = &a.name;
    let published = if a.imported_runners > 0 {
        format!(
            " (published timings, imported, on {} of the {} runners)",
            a.imported_runners, a.n
        )
    } else {
        String::new()
    };
    let by_correlation = correlation_sentence(a);
    let text = match (&a.experiment, a.by) {
        (Some(e), By::Experiment) => {
            // An I/O-rate cap slows small operations whether they go one at a time or many
            // in flight: the ranks' throughput at depth agrees with an experiment's latency.
            let same = a.follows_by_correlation == a.follows
                || (e.bound == Bound::Latency && a.follows_by_correlation == Follows::Throughput);
            let agree = if same {
                "The ranks across runners agree.".to_string()
            } else {
                format!("Across runners the ranks say: {by_correlation}")
            };
            format!(
                "{name} follows {} by experiment on {} (the disk changed, nothing else): {} {agree}",
                what_bound(e.bound),
                e.runner,
                e.why.trim_end_matches('.').to_string() + "."
            )
        }
        (_, By::DiskOnlyPair) => format!(
            "{name} does not follow the disk, by a pair of runners that differ in disk only (below). Across runners the ranks say: {by_correlation}"
        ),
        _ => by_correlation,
    };
    let pair = a
        .disk_only_pair
        .as_ref()
        .filter(|p| {
            p.reading != PairReading::Unclear
                || a.no_call.is_none()
                || a.no_call == Some(NoCall::Undecided)
        })
        .map(pair_sentence)
        .unwrap_or_default();
    Wording {
        text: format!(
            "{text}{pair}{}",
            if published.is_empty() {
                String::new()
            } else {
                format!(" Times{published}.")
            }
        ),
    }
}

/// "16" or "7.5": GiB as a person writes them.
fn fmt_gib(v: f64) -> String {
    if v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        crate::analysis::stats::fmt_sig(v)
    }
}

/// What an experiment's verdict means, in the same words as [`what`]. The I/O-rate cap slows
/// small operations one at a time and many in flight alike, so its `latency` covers both.
pub(crate) fn what_bound(b: Bound) -> &'static str {
    match b {
        Bound::Latency => {
            "small operations (latency, or throughput at depth: an I/O-rate cap slows both)"
        }
        Bound::Bandwidth => what(Follows::Bandwidth),
        Bound::Cpu => what(Follows::Cpu),
        Bound::Mixed => "a mix of the disk and the CPU",
        Bound::Unknown => "nothing the experiment could tell",
    }
}

/// " A pair that differs in disk only: a (tmpfs) and b (ebs) have the same CPU (4 vCPUs) and
/// disks at least 25x apart in every figure (41x in sequential read); the step took 35 s on the
/// faster disk against 35 s. ..." and what that pair says, with its limits.
pub(crate) fn pair_sentence(p: &DiskOnlyPair) -> String {
    let (b, w) = (&p.better, &p.worse);
    let fmt_t = |t: f64| {
        if p.resolution_s >= 1.0 {
            format!("{t:.0} s")
        } else {
            fmt_s(t)
        }
    };
    let mut s = format!(
        " A pair that differs in disk only: {} ({}) and {} ({}) have the same CPU and disks at least {} apart in every disk figure ({} in {}); the step took {} on the faster disk against {}.",
        b.0,
        b.1.as_str(),
        w.0,
        w.1.as_str(),
        crate::analysis::stats::fmt_ratio(p.min_ratio),
        crate::analysis::stats::fmt_ratio(b.2 / w.2),
        phrase(Figure::Column(p.disk)),
        fmt_t(b.3),
        fmt_t(w.3)
    );
    let resolution = if p.resolution_s >= 1.0 {
        "whole seconds".to_string()
    } else {
        fmt_s(p.resolution_s)
    };
    let limits = format!(
        " Its limits: one pair, one median each; times to {resolution}; it holds the CPU fixed, not the memory ({} GiB against {} GiB).",
        fmt_gib(p.memory_gib.0),
        fmt_gib(p.memory_gib.1)
    );
    match p.reading {
        PairReading::NotTheDisk => s.push_str(&format!(
            " Within {} (the resolution of the timings, or {:.0}% run-to-run spread) that is the same time: not the disk, by this pair; on the slower disk the disk costs it at most about {}.{limits}",
            fmt_t(p.allowance_s),
            TIE_TOLERANCE * 100.0,
            fmt_t(p.allowance_s)
        )),
        PairReading::TheDisk => s.push_str(&format!(
            " The faster disk saved {}, more than the {} the timings can blur: by this pair the disk matters (one pair cannot say which of its figures).{limits}",
            fmt_t(w.3 - b.3),
            fmt_t(p.allowance_s)
        )),
        PairReading::Unclear => {}
    }
    s
}

fn correlation_sentence(a: &StepAnalysis) -> String {
    let name = &a.name;
    match &a.no_call {
        Some(NoCall::TooFewRunners { n }) => format!(
            "{name}: {} both its time and disk figures; at least {MIN_RUNNERS} are needed before anything is called. More runners would settle it.",
            match n {
                0 => "no runner has".to_string(),
                1 => "only 1 runner has".to_string(),
                n => format!("only {n} runners have"),
            }
        ),
        Some(NoCall::OneDiskFigure) => format!(
            "{name}: all {} runners are on about the same disk (every column within {:.0}% across them), so the disk cannot explain any difference in time and no call is made. A runner with a different disk and the same CPU would settle it.",
            a.n,
            TIE_TOLERANCE * 100.0
        ),
        Some(NoCall::TimeDoesNotVary) => format!(
            "{name} took the same time on all {} runners: it follows neither the disk nor the CPU here.",
            a.n
        ),
        Some(NoCall::CoarseTimes { median_s }) => format!(
            "{name}: the data cannot tell. Its times are whole seconds and it takes about {} (median), so one second is {:.0}% of it (more than {:.0}%): ranks over such times order the rounding, not the runners. Finer timings, or a longer step, would settle it.",
            fmt_s(*median_s),
            100.0 / median_s.max(1e-9),
            MAX_RESOLUTION_SHARE * 100.0
        ),
        Some(NoCall::NoCpuFigures) => {
            let strongest = strongest_plain(a)
                .map(|l| format!(" Ranked alone its strongest link is {} ({}), but that may be the CPU's doing.", phrase(l.figure), plain(l)))
                .unwrap_or_default();
            format!(
                "{name}: the data cannot tell: too few of these runners have CPU figures of one benchmark to hold the CPU fixed.{strongest} CPU figures for these runners would settle it."
            )
        }
        Some(NoCall::Undecided) => {
            let strongest = strongest_plain(a)
                .map(|l| {
                    format!(
                        " Ranked alone its strongest link is {} ({}).",
                        phrase(l.figure),
                        plain(l)
                    )
                })
                .unwrap_or_default();
            let disk = a
                .best_disk
                .and_then(|d| a.link(Figure::Column(d)))
                .map(|l| format!(" With the CPU held fixed the best disk figure is {} ({}), and its interval is not clear of zero", phrase(l.figure), controlled(l)))
                .unwrap_or_else(|| " With the CPU held fixed no disk figure's link is defined".into());
            let cpu = a
                .cpu_held
                .and_then(|c| a.link(c))
                .filter(|l| l.rho_controlled.is_some())
                .map(|l| format!("; the CPU's, {}, is not either.", controlled(l)))
                .unwrap_or_else(|| ".".into());
            format!(
                "{name}: the data cannot tell.{strongest}{disk}{cpu} {}",
                settle(a)
            )
        }
        None => {
            let Some(d) = a.deciding.and_then(|f| a.link(f)) else {
                return format!("{name}: the data cannot tell. {}", settle(a));
            };
            let mut s = format!(
                "{name} follows {}: it runs faster where {} is higher, {}; ranked alone, {}.",
                what(a.follows),
                phrase(d.figure),
                controlled(d),
                plain(d)
            );
            if let Some(o) = other_side(a, d.figure).filter(|o| o.rho_controlled.is_some()) {
                let verdict = if o.clear() {
                    "also clear, but weaker"
                } else if o.interval.is_none() {
                    "too unstable over these runners to judge"
                } else {
                    "not clear of zero"
                };
                s.push_str(&format!(
                    " The other side, {}: {} ({verdict}).",
                    phrase(o.figure),
                    controlled(o)
                ));
            }
            if let Some(p) = strongest_plain(a).filter(|p| p.figure.family() != d.figure.family()) {
                s.push_str(&format!(
                    " Ranking alone would have picked {} ({}): the disk and the CPU grow together on these runners.",
                    phrase(p.figure),
                    plain(p)
                ));
            }
            if a.cpu_other_benchmark > 0 {
                s.push_str(&format!(
                    " {} runner(s) with CPU figures of another benchmark are left out of the CPU ranks.",
                    a.cpu_other_benchmark
                ));
            }
            s
        }
    }
}

/// A Markdown table of steps' links (step, figure, ρ, held fixed, ρ held fixed, interval, n),
/// as the methodology page quotes the node example; a test keeps the page equal to it.
#[cfg(test)]
pub(crate) fn markdown_table(steps: &[&StepAnalysis]) -> String {
    let mut out = format!(
        "| step | figure | ρ | held fixed | ρ, held fixed | {:.1}% interval | n | call |\n|---|---|---|---|---|---|---|---|\n",
        super::rank::COVERAGE * 100.0
    );
    for s in steps {
        for l in &s.links {
            out.push_str(&format!(
                "| {} | {} | {} | {} | {} | {} | {} | {} |\n",
                s.name,
                l.figure.title(),
                l.rho.map(fmt_rho).unwrap_or_else(|| "–".into()),
                l.held.map(|h| h.title()).unwrap_or("–"),
                l.rho_controlled.map(fmt_rho).unwrap_or_else(|| "–".into()),
                fmt_interval(l),
                l.n_controlled,
                if s.deciding == Some(l.figure) {
                    s.follows.as_str()
                } else {
                    ""
                }
            ));
        }
    }
    out
}

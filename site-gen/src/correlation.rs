//! Steps across runners: does a build step's time follow latency, bandwidth or the CPU?
//!
//! Per step, its median time on each runner is ranked against every column and against both
//! CPU figures (one thread, all threads; one benchmark at a time). Bigger runners tend to have
//! both more cores and faster volumes, so a plain rank correlation cannot tell the disk from
//! the CPU; each disk figure's link is therefore also given with the CPU held fixed (partial
//! rank correlation), and the CPU's with the best disk figure held fixed, each with a bootstrap
//! interval over runners. The call is made from those controlled figures, and only where the
//! interval excludes zero. An experiment on the step (`what_if`, changing the disk and nothing
//! else) outranks all of this.
//!
//! The statistics live in [`rank`], the sentences in [`wording`], the scatter plots in
//! [`plot`] and the machine-readable copy in [`export`]; this module decides.

pub mod export;
pub mod plot;
pub mod rank;
pub mod wording;

use std::collections::BTreeMap;

use engine::record::{Bound, ColumnId, StorageClass};

use crate::model::{Dataset, RunnerSummary};
use rank::{RESAMPLES, RankSample, SEED, TIE_TOLERANCE};

/// Fewer runners than this and no call is made.
pub const MIN_RUNNERS: usize = 5;
/// Whole-second timings are too coarse when one second is more than this share of the step's
/// median time: the ranks would mostly order rounding.
pub const MAX_RESOLUTION_SHARE: f64 = 0.10;

/// What a step's time is ranked against.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Figure {
    Column(ColumnId),
    CpuSingle,
    CpuMulti,
}

/// What a figure stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    Latency,
    Bandwidth,
    Cpu,
}

pub fn is_latency_column(c: ColumnId) -> bool {
    matches!(c, ColumnId::Qd1Read | ColumnId::SyncWrite)
}

impl Figure {
    pub const ALL: [Figure; 8] = [
        Figure::Column(ColumnId::SeqRead),
        Figure::Column(ColumnId::SeqWrite),
        Figure::Column(ColumnId::RandRead),
        Figure::Column(ColumnId::RandWrite),
        Figure::Column(ColumnId::Qd1Read),
        Figure::Column(ColumnId::SyncWrite),
        Figure::CpuSingle,
        Figure::CpuMulti,
    ];

    /// The id used in `data/steps.json`: a column id, `cpu-single` or `cpu-multi`.
    pub fn id(self) -> &'static str {
        match self {
            Figure::Column(c) => c.as_str(),
            Figure::CpuSingle => "cpu-single",
            Figure::CpuMulti => "cpu-multi",
        }
    }

    pub fn title(self) -> &'static str {
        match self {
            Figure::Column(c) => c.title(),
            Figure::CpuSingle => "CPU, one thread",
            Figure::CpuMulti => "CPU, all threads",
        }
    }

    pub fn family(self) -> Family {
        match self {
            Figure::Column(c) if is_latency_column(c) => Family::Latency,
            Figure::Column(_) => Family::Bandwidth,
            _ => Family::Cpu,
        }
    }

    pub fn is_cpu(self) -> bool {
        self.family() == Family::Cpu
    }
}

/// What a step follows across runners (the `follows` of `data/steps.json`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Follows {
    Latency,
    Bandwidth,
    Cpu,
    /// Enough runners, but no controlled link is clear: the data cannot tell.
    Neither,
    /// Too few runners, or too little variety among them, to try.
    TooFew,
}

impl Follows {
    pub fn as_str(self) -> &'static str {
        match self {
            Follows::Latency => "latency",
            Follows::Bandwidth => "bandwidth",
            Follows::Cpu => "cpu",
            Follows::Neither => "neither",
            Follows::TooFew => "too-few",
        }
    }

    fn of(f: Family) -> Follows {
        match f {
            Family::Latency => Follows::Latency,
            Family::Bandwidth => Follows::Bandwidth,
            Family::Cpu => Follows::Cpu,
        }
    }
}

/// How the call was made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum By {
    Experiment,
    Correlation,
}

impl By {
    pub fn as_str(self) -> &'static str {
        match self {
            By::Experiment => "experiment",
            By::Correlation => "correlation",
        }
    }
}

/// Why no call was made from the correlations.
#[derive(Clone, Debug, PartialEq)]
pub enum NoCall {
    /// Fewer than [`MIN_RUNNERS`] runners have the step's time and figures.
    TooFewRunners { n: usize },
    /// Every column's figure is about the same on every runner (within the tie tolerance).
    OneDiskFigure,
    /// The step took the same time everywhere.
    TimeDoesNotVary,
    /// Published whole-second times, and one second is a large share of the step.
    CoarseTimes { median_s: f64 },
    /// No CPU figures (of one benchmark) on enough runners to hold the CPU fixed.
    NoCpuFigures,
    /// Controlled figures computed, but no interval lies clear of zero.
    Undecided,
}

/// A runner's point on a scatter plot.
#[derive(Clone, Debug, PartialEq)]
pub struct Point {
    pub label: String,
    pub class: StorageClass,
    pub imported: bool,
    /// The figure (MiB/s, IOPS or CPU score).
    pub x: f64,
    pub time_s: f64,
}

/// One step against one figure across runners.
#[derive(Clone, Debug)]
pub struct Link {
    pub figure: Figure,
    /// Runners with both the figure and the step's time.
    pub points: Vec<Point>,
    /// Spearman's rho of figure and time over `points` (negative: a better figure, a faster step).
    pub rho: Option<f64>,
    /// What was held fixed for `rho_controlled`: the CPU for a disk figure, the deciding disk
    /// figure for a CPU figure.
    pub held: Option<Figure>,
    pub rho_controlled: Option<f64>,
    /// Runners with the figure, the time and the held figure.
    pub n_controlled: usize,
    /// Percentile bootstrap interval of `rho_controlled` ([`rank::COVERAGE`]).
    pub interval: Option<rank::Interval>,
    /// Share of resamples where `rho_controlled` was defined.
    pub defined_share: f64,
}

impl Link {
    /// Whether the controlled link is clear: the interval lies entirely below zero.
    pub fn clear(&self) -> bool {
        self.interval.is_some_and(|i| i.hi < 0.0) && self.rho_controlled.is_some_and(|r| r < 0.0)
    }
}

/// Two runners on the same CPU level (both CPU figures within the tie tolerance) and
/// different disks.
#[derive(Clone, Debug, PartialEq)]
pub struct DiskOnlyPair {
    pub disk: ColumnId,
    /// (label, class, disk figure, step time) of the runner with the better disk first.
    pub better: (String, StorageClass, f64, f64),
    pub worse: (String, StorageClass, f64, f64),
}

/// At least this ratio between two runners' disk figures makes them a pair "differing in disk".
pub const PAIR_DISK_RATIO: f64 = 2.0;

fn disk_only_pair(
    timed: &[(&RunnerSummary, f64)],
    disk: ColumnId,
    bench: &Option<String>,
) -> Option<DiskOnlyPair> {
    let same = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(a), Some(b)) => a.max(b) <= a.min(b) * (1.0 + TIE_TOLERANCE),
        _ => false,
    };
    let mut best: Option<(f64, DiskOnlyPair)> = None;
    for (i, (a, ta)) in timed.iter().enumerate() {
        for (b, tb) in &timed[i + 1..] {
            let cpu_same = [Figure::CpuSingle, Figure::CpuMulti]
                .iter()
                .all(|&f| same(figure_value(a, f, bench), figure_value(b, f, bench)));
            let (Some(da), Some(db)) = (
                figure_value(a, Figure::Column(disk), bench),
                figure_value(b, Figure::Column(disk), bench),
            ) else {
                continue;
            };
            let ratio = da.max(db) / da.min(db);
            if !cpu_same || ratio < PAIR_DISK_RATIO || best.as_ref().is_some_and(|b| b.0 >= ratio) {
                continue;
            }
            let side = |r: &RunnerSummary, d: f64, t: f64| (r.label.clone(), r.class, d, t);
            let (better, worse) = if da >= db {
                (side(a, da, *ta), side(b, db, *tb))
            } else {
                (side(b, db, *tb), side(a, da, *ta))
            };
            best = Some((
                ratio,
                DiskOnlyPair {
                    disk,
                    better,
                    worse,
                },
            ));
        }
    }
    best.map(|b| b.1)
}

/// A verdict by experiment on one runner, which outranks the correlations.
#[derive(Clone, Debug, PartialEq)]
pub struct Experiment {
    pub runner: String,
    pub bound: Bound,
    pub why: String,
}

#[derive(Clone, Debug)]
pub struct StepAnalysis {
    pub id: String,
    pub name: String,
    /// The job the step belongs to: `cargo-diskbench` for this tool's steps, else the
    /// published suite.
    pub suite: String,
    /// Runners with a time for the step.
    pub n: usize,
    /// Runners whose times are all imported (published), never shown as measured.
    pub imported_runners: usize,
    /// Every link: six columns, then both CPU figures.
    pub links: Vec<Link>,
    /// The CPU benchmark whose figures were used, and runners left out because their CPU
    /// figures come from another benchmark.
    pub cpu_benchmark: Option<String>,
    pub cpu_other_benchmark: usize,
    /// The CPU figure held fixed for the disk figures.
    pub cpu_held: Option<Figure>,
    /// The disk figure with the strongest link with the CPU held fixed (held fixed for the CPU).
    pub best_disk: Option<ColumnId>,
    /// The figure that decided the call, when one did.
    pub deciding: Option<Figure>,
    pub follows: Follows,
    pub by: By,
    pub no_call: Option<NoCall>,
    /// What the correlations alone would say when an experiment decided.
    pub follows_by_correlation: Follows,
    pub experiment: Option<Experiment>,
    /// Runners where the step failed at least once (in the window).
    pub failed_runners: usize,
    /// Two runners with about the same CPU whose disk figure differs most: the closest thing
    /// to an experiment the data holds. Shown beside the call, never used to make it.
    pub disk_only_pair: Option<DiskOnlyPair>,
    /// The conclusion in words (plain text).
    pub conclusion: String,
}

impl StepAnalysis {
    pub fn link(&self, f: Figure) -> Option<&Link> {
        self.links.iter().find(|l| l.figure == f)
    }
}

/// Experiments per step id: the `what_if` verdicts (CONTRACT section 5,
/// `steps[].what_if.bound`) of each runner's newest run that has one. Only a decisive verdict
/// (latency, bandwidth, cpu) counts: `mixed` or `unknown` by experiment leaves the call to the
/// correlation. Where runners' experiments disagree, the first runner's is kept and the others
/// are named in its sentence.
pub fn experiments(ds: &Dataset) -> BTreeMap<String, Experiment> {
    let mut out: BTreeMap<String, Experiment> = BTreeMap::new();
    for r in &ds.runners {
        let mut seen: Vec<&str> = Vec::new();
        for &i in &r.runs {
            for s in &ds.record(i).steps {
                let Some(w) = &s.what_if else { continue };
                if seen.contains(&s.id.as_str()) {
                    continue;
                }
                seen.push(&s.id);
                if !matches!(w.bound, Bound::Latency | Bound::Bandwidth | Bound::Cpu) {
                    continue;
                }
                match out.get_mut(&s.id) {
                    None => {
                        out.insert(
                            s.id.clone(),
                            Experiment {
                                runner: r.label.clone(),
                                bound: w.bound,
                                why: w.why.clone(),
                            },
                        );
                    }
                    Some(e) if e.bound != w.bound => e.why.push_str(&format!(
                        " (On {}, the experiment said {}.)",
                        r.label,
                        w.bound.as_str()
                    )),
                    Some(_) => {}
                }
            }
        }
    }
    out
}

pub fn analyse(ds: &Dataset) -> Vec<StepAnalysis> {
    analyse_with(ds, &experiments(ds))
}

/// The analysis, with the experiments given (tests give their own).
pub fn analyse_with(ds: &Dataset, experiments: &BTreeMap<String, Experiment>) -> Vec<StepAnalysis> {
    let mut ids: BTreeMap<&str, &str> = BTreeMap::new();
    for r in &ds.runners {
        for s in &r.steps {
            ids.entry(s.id.as_str()).or_insert(s.name.as_str());
        }
    }
    // Steps are independent and the bootstraps are most of the work: one thread per step, up
    // to the cores there are (the result does not depend on the order).
    let ids: Vec<(&str, &str)> = ids.into_iter().collect();
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .min(8);
    let chunk = ids.len().div_ceil(threads).max(1);
    std::thread::scope(|scope| {
        let handles: Vec<_> = ids
            .chunks(chunk)
            .map(|part| {
                scope.spawn(move || {
                    part.iter()
                        .map(|(id, name)| analyse_step(ds, id, name, experiments.get(*id)))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("a steps analysis thread panicked"))
            .collect()
    })
}

fn wall(r: &RunnerSummary, id: &str) -> Option<f64> {
    r.steps
        .iter()
        .find(|s| s.id == id && s.runs > 0)
        .map(|s| s.wall_s)
        .filter(|w| w.is_finite() && *w >= 0.0)
}

/// The CPU benchmark most of the step's runners have figures from (this tool's probe first
/// on a tie).
fn pick_benchmark(runners: &[(&RunnerSummary, f64)]) -> Option<Option<String>> {
    let mut count: BTreeMap<Option<&str>, usize> = BTreeMap::new();
    for (r, _) in runners {
        for c in &r.cpu {
            *count.entry(c.benchmark.as_deref()).or_default() += 1;
        }
    }
    count
        .into_iter()
        .max_by(|a, b| a.1.cmp(&b.1).then_with(|| b.0.cmp(&a.0)))
        .map(|(b, _)| b.map(String::from))
}

fn figure_value(r: &RunnerSummary, f: Figure, benchmark: &Option<String>) -> Option<f64> {
    let v = match f {
        Figure::Column(c) => r.column(c).map(|c| c.median),
        Figure::CpuSingle | Figure::CpuMulti => {
            let c = r.cpu.iter().find(|c| &c.benchmark == benchmark)?;
            if f == Figure::CpuSingle {
                c.single
            } else {
                c.multi
            }
        }
    }?;
    (v.is_finite() && v > 0.0).then_some(v)
}

/// Times and the tie-grid levels of `x` (and `z`) over the runners that have all of them.
struct Columns {
    t: Vec<f64>,
    x: Vec<f64>,
    z: Option<Vec<f64>>,
}

fn columns(
    timed: &[(&RunnerSummary, f64)],
    x: Figure,
    z: Option<Figure>,
    bench: &Option<String>,
) -> Columns {
    let mut t = Vec::new();
    let mut xs = Vec::new();
    let mut zs = Vec::new();
    for (r, w) in timed {
        let Some(xv) = figure_value(r, x, bench) else {
            continue;
        };
        let zv = match z {
            Some(z) => match figure_value(r, z, bench) {
                Some(v) => Some(v),
                None => continue,
            },
            None => None,
        };
        t.push(*w);
        xs.push(xv);
        if let Some(v) = zv {
            zs.push(v);
        }
    }
    Columns {
        t,
        x: rank::tie_levels(&xs, TIE_TOLERANCE),
        z: z.map(|_| rank::tie_levels(&zs, TIE_TOLERANCE)),
    }
}

fn plain_link(timed: &[(&RunnerSummary, f64)], f: Figure, bench: &Option<String>) -> Link {
    let points: Vec<Point> = timed
        .iter()
        .filter_map(|(r, w)| {
            Some(Point {
                label: r.label.clone(),
                class: r.class,
                imported: r.imported,
                x: figure_value(r, f, bench)?,
                time_s: *w,
            })
        })
        .collect();
    let c = columns(timed, f, None, bench);
    let rho = (c.t.len() >= 3)
        .then(|| RankSample::new(&c.t, &c.x, None).rho())
        .flatten();
    Link {
        figure: f,
        points,
        rho,
        held: None,
        rho_controlled: None,
        n_controlled: 0,
        interval: None,
        defined_share: 0.0,
    }
}

/// Fill in `link`'s controlled figure with `held` fixed, and its bootstrap interval.
fn control(link: &mut Link, timed: &[(&RunnerSummary, f64)], held: Figure, bench: &Option<String>) {
    let c = columns(timed, link.figure, Some(held), bench);
    link.held = Some(held);
    link.n_controlled = c.t.len();
    if c.t.len() < MIN_RUNNERS {
        return;
    }
    let sample = RankSample::new(&c.t, &c.x, c.z.as_deref());
    link.rho_controlled = sample.rho_controlled();
    if link.rho_controlled.is_some() {
        let b = sample.bootstrap(RESAMPLES, SEED);
        link.interval = b.interval;
        link.defined_share = b.defined_share;
    }
}

fn analyse_step(
    ds: &Dataset,
    id: &str,
    name: &str,
    experiment: Option<&Experiment>,
) -> StepAnalysis {
    let failed_runners = ds
        .runners
        .iter()
        .filter(|r| r.steps.iter().any(|s| s.id == id && s.failed > 0))
        .count();
    let timed: Vec<(&RunnerSummary, f64)> = ds
        .runners
        .iter()
        .filter_map(|r| Some((r, wall(r, id)?)))
        .collect();
    let bench = pick_benchmark(&timed).unwrap_or(None);
    let has_cpu = timed
        .iter()
        .filter(|(r, _)| r.cpu.iter().any(|c| c.benchmark == bench))
        .count();
    let cpu_other_benchmark = timed
        .iter()
        .filter(|(r, _)| !r.cpu.is_empty() && !r.cpu.iter().any(|c| c.benchmark == bench))
        .count();
    let mut links: Vec<Link> = Figure::ALL
        .iter()
        .map(|&f| plain_link(&timed, f, &bench))
        .collect();
    let mut a = StepAnalysis {
        id: id.into(),
        name: name.into(),
        suite: crate::published_timings::suite_of(id).into(),
        n: timed.len(),
        imported_runners: timed.iter().filter(|(r, _)| r.imported).count(),
        links: Vec::new(),
        cpu_benchmark: (has_cpu > 0).then(|| {
            ds.runners
                .iter()
                .flat_map(|r| &r.cpu)
                .find(|c| c.benchmark == bench)
                .map(|c| c.benchmark_name().to_string())
                .unwrap_or_default()
        }),
        cpu_other_benchmark,
        cpu_held: None,
        best_disk: None,
        deciding: None,
        follows: Follows::TooFew,
        by: By::Correlation,
        no_call: None,
        follows_by_correlation: Follows::TooFew,
        experiment: experiment.cloned(),
        failed_runners,
        disk_only_pair: None,
        conclusion: String::new(),
    };
    let no_call = decide(&mut a, &mut links, &timed, &bench);
    a.links = links;
    a.no_call = no_call;
    a.follows_by_correlation = a.follows;
    if let Some(e) = experiment {
        let by_experiment = match e.bound {
            Bound::Latency => Some(Follows::Latency),
            Bound::Bandwidth => Some(Follows::Bandwidth),
            Bound::Cpu => Some(Follows::Cpu),
            Bound::Mixed | Bound::Unknown => None,
        };
        if let Some(f) = by_experiment {
            a.follows = f;
            a.by = By::Experiment;
        }
    }
    let pair_disk = match a.deciding {
        Some(Figure::Column(c)) => Some(c),
        _ => a.best_disk,
    };
    a.disk_only_pair = pair_disk.and_then(|d| disk_only_pair(&timed, d, &bench));
    a.conclusion = wording::conclusion(&a).text;
    a
}

/// The call from the correlations; returns why none was made.
fn decide(
    a: &mut StepAnalysis,
    links: &mut [Link],
    timed: &[(&RunnerSummary, f64)],
    bench: &Option<String>,
) -> Option<NoCall> {
    let disk_n = links
        .iter()
        .filter(|l| !l.figure.is_cpu())
        .map(|l| l.points.len())
        .max()
        .unwrap_or(0);
    if disk_n < MIN_RUNNERS {
        a.follows = Follows::TooFew;
        return Some(NoCall::TooFewRunners { n: disk_n });
    }
    let times: Vec<f64> = timed.iter().map(|(_, w)| *w).collect();
    let median_s = crate::stats::median(&times).unwrap_or(0.0);
    if times.iter().all(|&w| w == times[0]) {
        a.follows = Follows::Neither;
        return Some(NoCall::TimeDoesNotVary);
    }
    let one_disk = links.iter().filter(|l| !l.figure.is_cpu()).all(|l| {
        let xs: Vec<f64> = l.points.iter().map(|p| p.x).collect();
        rank::distinct_levels(&xs, TIE_TOLERANCE) <= 1
    });
    if one_disk {
        a.follows = Follows::TooFew;
        return Some(NoCall::OneDiskFigure);
    }
    // The CPU figure to hold fixed: of the two, the one the time follows more closely.
    let cpu_held = [Figure::CpuMulti, Figure::CpuSingle]
        .into_iter()
        .filter_map(|f| {
            let l = links.iter().find(|l| l.figure == f)?;
            (l.points.len() >= MIN_RUNNERS).then_some((f, l.rho?))
        })
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(f, _)| f);
    let coarse = times.iter().all(|w| w.fract() == 0.0) && median_s * MAX_RESOLUTION_SHARE < 1.0;
    let Some(cpu_held) = cpu_held else {
        a.follows = Follows::Neither;
        return Some(if coarse {
            NoCall::CoarseTimes { median_s }
        } else {
            NoCall::NoCpuFigures
        });
    };
    a.cpu_held = Some(cpu_held);
    for l in links.iter_mut().filter(|l| !l.figure.is_cpu()) {
        control(l, timed, cpu_held, bench);
    }
    a.best_disk = links
        .iter()
        .filter_map(|l| match l.figure {
            Figure::Column(c) => Some((c, l.rho_controlled?)),
            _ => None,
        })
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(c, _)| c)
        // No disk figure's link is defined with the CPU held fixed when the time ranks exactly
        // as the CPU does (nothing is left to relate): hold fixed the disk figure ranking
        // alone picks, so that the CPU's own link can still be judged.
        .or_else(|| {
            links
                .iter()
                .filter_map(|l| match l.figure {
                    Figure::Column(c) => Some((c, l.rho?)),
                    _ => None,
                })
                .min_by(|a, b| a.1.total_cmp(&b.1))
                .map(|(c, _)| c)
        });
    if let Some(d) = a.best_disk {
        for l in links.iter_mut().filter(|l| l.figure.is_cpu()) {
            control(l, timed, Figure::Column(d), bench);
        }
    }
    if coarse {
        a.follows = Follows::Neither;
        return Some(NoCall::CoarseTimes { median_s });
    }
    let deciding = links
        .iter()
        .filter(|l| l.clear())
        .min_by(|a, b| {
            a.rho_controlled
                .unwrap_or(0.0)
                .total_cmp(&b.rho_controlled.unwrap_or(0.0))
        })
        .map(|l| l.figure);
    match deciding {
        Some(f) => {
            a.deciding = Some(f);
            a.follows = Follows::of(f.family());
            None
        }
        None => {
            a.follows = Follows::Neither;
            Some(NoCall::Undecided)
        }
    }
}

#[cfg(test)]
mod tests;

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
//! What an analysis found is typed in `analysis`; the statistics live in [`rank`], the
//! sentences in [`wording`], the scatter plots in [`plot`] and the machine-readable copy in
//! [`export`]; this module decides.

mod analysis;
pub mod rank;
pub mod wording;

pub use analysis::Point;
pub(crate) use analysis::*;

use std::collections::BTreeMap;

use record::{Bound, ColumnId};

use crate::data::model::{Dataset, RunnerOverview};
use rank::{RESAMPLES, RankSample, SEED, TIE_TOLERANCE};

/// The pair of runners with the same CPU (both CPU figures within the tie tolerance, the same
/// vCPU count) whose disks differ most: one better in every disk figure both have, by at least
/// [`PAIR_DISK_RATIO`] in the smallest of those ratios. `quote`: the disk figure to name.
fn disk_only_pair(
    timed: &[(&RunnerOverview, f64)],
    quote: Option<ColumnId>,
    bench: &Option<String>,
) -> Option<DiskOnlyPair> {
    let same = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(a), Some(b)) => a.max(b) <= a.min(b) * (1.0 + TIE_TOLERANCE),
        _ => false,
    };
    let mut best: Option<DiskOnlyPair> = None;
    for (i, (a, ta)) in timed.iter().enumerate() {
        for (b, tb) in &timed[i + 1..] {
            let cpu_same = a.vcpus == b.vcpus
                && [Figure::CpuSingle, Figure::CpuMulti]
                    .iter()
                    .all(|&f| same(figure_value(a, f, bench), figure_value(b, f, bench)));
            if !cpu_same {
                continue;
            }
            // Ratios a over b in every disk figure both have; a clean pair has them all on one
            // side of one.
            let ratios: Vec<(ColumnId, f64, f64)> = ColumnId::ALL
                .iter()
                .filter_map(|&c| {
                    let da = figure_value(a, Figure::Column(c), bench)?;
                    let db = figure_value(b, Figure::Column(c), bench)?;
                    Some((c, da, db))
                })
                .collect();
            if ratios.is_empty() {
                continue;
            }
            let a_better = ratios.iter().all(|(_, da, db)| da > db);
            let b_better = ratios.iter().all(|(_, da, db)| db > da);
            if !a_better && !b_better {
                continue;
            }
            let min_ratio = ratios
                .iter()
                .map(|(_, da, db)| da.max(*db) / da.min(*db))
                .fold(f64::INFINITY, f64::min);
            if min_ratio < PAIR_DISK_RATIO
                || best.as_ref().is_some_and(|p| p.min_ratio >= min_ratio)
            {
                continue;
            }
            // The figure quoted: the one asked for if both have it, else the widest apart.
            let (disk, da, db) = quote
                .and_then(|q| ratios.iter().find(|(c, _, _)| *c == q))
                .or_else(|| {
                    ratios.iter().max_by(|x, y| {
                        (x.1.max(x.2) / x.1.min(x.2)).total_cmp(&(y.1.max(y.2) / y.1.min(y.2)))
                    })
                })
                .copied()?;
            let side = |r: &RunnerOverview, d: f64, t: f64| (r.label.clone(), r.class, d, t);
            let (better, worse, memory_gib) = if a_better {
                (
                    side(a, da, *ta),
                    side(b, db, *tb),
                    (a.memory_gib, b.memory_gib),
                )
            } else {
                (
                    side(b, db, *tb),
                    side(a, da, *ta),
                    (b.memory_gib, a.memory_gib),
                )
            };
            let resolution_s: f64 = if [*ta, *tb].iter().all(|t| t.fract() == 0.0) {
                1.0
            } else {
                0.01
            };
            let longer = ta.max(*tb);
            let allowance_s = resolution_s.max(TIE_TOLERANCE * longer);
            // Too short for its resolution: one tick is more than the share the ranks allow.
            let long_enough = resolution_s <= MAX_RESOLUTION_SHARE * longer;
            let reading = if !long_enough {
                PairReading::Unclear
            } else if (better.3 - worse.3).abs() <= allowance_s {
                if min_ratio >= DECIDING_PAIR_RATIO {
                    PairReading::NotTheDisk
                } else {
                    PairReading::Unclear
                }
            } else if worse.3 - better.3 > allowance_s {
                PairReading::TheDisk
            } else {
                PairReading::Unclear
            };
            best = Some(DiskOnlyPair {
                disk,
                better,
                worse,
                min_ratio,
                memory_gib,
                resolution_s,
                allowance_s,
                reading,
            });
        }
    }
    best
}

/// Experiments per step id: the `what_if` verdicts (CONTRACT section 5,
/// `steps[].what_if.bound`) of each runner's newest run that has one. Only a decisive verdict
/// (latency, bandwidth, cpu) counts: `mixed` or `unknown` by experiment leaves the call to the
/// correlation. Where runners' experiments disagree, the first runner's is kept and the others
/// are named in its sentence.
pub(crate) fn experiments(ds: &Dataset) -> BTreeMap<String, Experiment> {
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

pub(crate) fn analyse(ds: &Dataset) -> Vec<StepAnalysis> {
    analyse_with(ds, &experiments(ds))
}

/// The analysis, with the experiments given (tests give their own).
pub(crate) fn analyse_with(
    ds: &Dataset,
    experiments: &BTreeMap<String, Experiment>,
) -> Vec<StepAnalysis> {
    let mut ids: BTreeMap<&str, &str> = BTreeMap::new();
    for r in &ds.runners {
        for s in &r.steps {
            ids.entry(s.id.as_str()).or_insert(s.name.as_str());
        }
    }
    // Steps are independent and the bootstraps are most of the work: one thread per step, up
    // to the cores there are (the result does not depend on the order).
    let ids: Vec<(&str, &str)> = ids.into_iter().collect();
    record::parallel::map_parts(&ids, record::parallel::threads(), |part| {
        part.iter()
            .map(|(id, name)| analyse_step(ds, id, name, experiments.get(*id)))
            .collect::<Vec<_>>()
    })
    .into_iter()
    // A part whose thread panicked is a bug; its steps are left out, not the whole site.
    .flatten()
    .flatten()
    .collect()
}

fn wall(r: &RunnerOverview, id: &str) -> Option<f64> {
    r.steps
        .iter()
        .find(|s| s.id == id && s.runs > 0)
        .map(|s| s.wall_s)
        .filter(|w| w.is_finite() && *w >= 0.0)
}

/// The CPU benchmark most of the step's runners have figures from (this tool's probe first
/// on a tie).
fn pick_benchmark(runners: &[(&RunnerOverview, f64)]) -> Option<Option<String>> {
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

fn figure_value(r: &RunnerOverview, f: Figure, benchmark: &Option<String>) -> Option<f64> {
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
    timed: &[(&RunnerOverview, f64)],
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

fn plain_link(timed: &[(&RunnerOverview, f64)], f: Figure, bench: &Option<String>) -> Link {
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
fn control(
    link: &mut Link,
    timed: &[(&RunnerOverview, f64)],
    held: Figure,
    bench: &Option<String>,
) {
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
    let timed: Vec<(&RunnerOverview, f64)> = ds
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
        suite: crate::data::published_timings::suite_of(id).into(),
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
    a.disk_only_pair = disk_only_pair(&timed, pair_disk, &bench);
    // A pair that differs in disk only and took the same time outranks the ranks (it holds the
    // CPU fixed by construction, not by a model); an experiment on the step outranks both.
    // Where the ranks already say the CPU, the pair agrees and the call stays theirs.
    if a.by != By::Experiment
        && a.follows != Follows::Cpu
        && a.disk_only_pair
            .as_ref()
            .is_some_and(|p| p.reading == PairReading::NotTheDisk)
    {
        a.follows = Follows::NotTheDisk;
        a.by = By::DiskOnlyPair;
    }
    a.conclusion = wording::conclusion(&a).text;
    a
}

/// The call from the correlations; returns why none was made.
fn decide(
    a: &mut StepAnalysis,
    links: &mut [Link],
    timed: &[(&RunnerOverview, f64)],
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
    let median_s = crate::analysis::stats::median(&times).unwrap_or(0.0);
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
pub(crate) mod tests;

//! From records to runners: runs grouped by runner label, each figure the median of the runs
//! in the window, with its spread, p99 and the newest date.

use std::collections::{BTreeMap, HashMap, HashSet};

use record::{ColumnId, Record, StepStatus, StorageClass};

use crate::analysis::stats::median;
use record::load::LoadedRecord;

/// Position of a column in `ColumnId::ALL` (and in every per-column array here).
pub(crate) fn col_index(c: ColumnId) -> usize {
    ColumnId::ALL.iter().position(|&x| x == c).unwrap_or(0)
}

/// One column's figure for a runner, over the runs in the window.
#[derive(Clone, Debug)]
pub(crate) struct ColumnFigure {
    /// Median headline (MiB/s or IOPS).
    pub median: f64,
    pub min: f64,
    pub max: f64,
    pub runs: usize,
    /// Median of the runs' p99 latencies, where they have one.
    pub p99_ns: Option<f64>,
    /// Why the median cannot have come from the storage the runner claims (a cache served
    /// it; `record::ceiling`). Such a figure is shown with its mark but kept out of the disk
    /// extremes and class ranges.
    pub cache_suspect: Option<String>,
}

impl ColumnFigure {
    /// (max - min) / median in percent; None with a single run.
    pub(crate) fn spread_pct(&self) -> Option<f64> {
        (self.runs > 1 && self.median > 0.0).then(|| (self.max - self.min) / self.median * 100.0)
    }
}

/// One build step's time for a runner (runs where it succeeded).
#[derive(Clone, Debug)]
pub(crate) struct StepFigure {
    pub id: String,
    pub name: String,
    pub wall_s: f64,
    pub runs: usize,
    pub failed: usize,
}

/// A runner's CPU figures from one benchmark: scores of different benchmarks are never compared.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct CpuFigures {
    /// None for this tool's own probe, else the published benchmark's name.
    pub benchmark: Option<String>,
    /// Median score on one thread.
    pub single: Option<f64>,
    /// Median score on all threads.
    pub multi: Option<f64>,
}

impl CpuFigures {
    /// How the benchmark is named on the pages.
    pub(crate) fn benchmark_name(&self) -> &str {
        self.benchmark
            .as_deref()
            .unwrap_or("cargo-diskbench CPU probe")
    }
}

/// Medians of the runs' CPU figures, one entry per benchmark (this tool's first).
fn cpu_figures(records: &[LoadedRecord], runs: &[usize]) -> Vec<CpuFigures> {
    let mut by: BTreeMap<Option<&str>, (Vec<f64>, Vec<f64>)> = BTreeMap::new();
    for &i in runs {
        if let Some(c) = &records[i].record.cpu_reference {
            let e = by.entry(c.benchmark.as_deref()).or_default();
            let ok = |v: f64| v.is_finite() && v > 0.0;
            if ok(c.single_thread_ops_s) {
                e.0.push(c.single_thread_ops_s);
            }
            if ok(c.all_threads_ops_s) {
                e.1.push(c.all_threads_ops_s);
            }
        }
    }
    by.into_iter()
        .map(|(b, (s, m))| CpuFigures {
            benchmark: b.map(String::from),
            single: median(&s),
            multi: median(&m),
        })
        .filter(|c| c.single.is_some() || c.multi.is_some())
        .collect()
}

#[derive(Clone, Debug)]
pub(crate) struct RunnerOverview {
    pub label: String,
    /// File-name-safe and unique among runners: `runners/<slug>.html`.
    pub slug: String,
    pub class: StorageClass,
    pub arch: String,
    pub cpu_model: String,
    pub vcpus: u32,
    /// The runner's memory: a disk-only pair says when it differs (it holds the CPU fixed, not
    /// the page cache).
    pub memory_gib: f64,
    pub instance_type: Option<String>,
    pub variant: Option<String>,
    /// `run --like LABEL` records: the runner they emulate. Such a runner is this disk under
    /// caps, shown as its own runner and kept out of everything that compares disks.
    pub emulates: Option<String>,
    /// Indices into `Dataset::records`, newest first, inside the window.
    pub runs: Vec<usize>,
    /// Runs outside the window (older), not counted in the figures.
    pub older_runs: usize,
    /// `started_at` of the newest run.
    pub newest: String,
    /// Every run in the window is imported.
    pub imported: bool,
    /// Where imported runs came from (distinct `source` and `source_file`).
    pub sources: Vec<String>,
    pub columns: [Option<ColumnFigure>; 6],
    pub steps: Vec<StepFigure>,
    /// Median single-thread compute reference (this tool's own probe only).
    pub cpu_single_ops_s: Option<f64>,
    /// CPU figures per benchmark (this tool's probe and published ones), medians over the runs.
    pub cpu: Vec<CpuFigures>,
    /// Geometric mean of each column relative to the best runner in that column (1 = best in all).
    pub score: f64,
}

impl RunnerOverview {
    pub(crate) fn column(&self, c: ColumnId) -> Option<&ColumnFigure> {
        self.columns[col_index(c)].as_ref()
    }

    /// The column's figure when a disk can have produced it (not marked as cache-served).
    pub(crate) fn disk_column(&self, c: ColumnId) -> Option<&ColumnFigure> {
        self.column(c).filter(|f| f.cache_suspect.is_none())
    }

    /// The column's median, for ordering runners already filtered on having the column
    /// (one without sorts last, as nothing is below minus infinity).
    pub(crate) fn median(&self, c: ColumnId) -> f64 {
        self.column(c).map_or(f64::NEG_INFINITY, |f| f.median)
    }

    /// [`Self::median`] of the [`Self::disk_column`].
    pub(crate) fn disk_median(&self, c: ColumnId) -> f64 {
        self.disk_column(c).map_or(f64::NEG_INFINITY, |f| f.median)
    }
}

/// Everything the site shows, computed once.
#[derive(Debug)]
pub(crate) struct Dataset {
    pub records: Vec<LoadedRecord>,
    /// Real disks, best overall score first: what findings, picks and correlations compare.
    pub runners: Vec<RunnerOverview>,
    /// `run --like` runs, one runner per real runner and emulated label: shown on their own
    /// (own row, own page) and never compared as disks.
    pub emulations: Vec<RunnerOverview>,
    /// Newest run across all runners (RFC 3339), the anchor of the window.
    pub newest: Option<String>,
    pub window_days: Option<u32>,
}

/// Days since 1970-01-01 of an RFC 3339 time's date part; None if it is not one.
pub(crate) fn epoch_day(rfc3339: &str) -> Option<i64> {
    let d = rfc3339.get(..10)?;
    let mut parts = d.split('-');
    let y: i64 = parts.next()?.parse().ok()?;
    let m: i64 = parts.next()?.parse().ok()?;
    let day: i64 = parts.next()?.parse().ok()?;
    if !(1..=12).contains(&m) || !(1..=31).contains(&day) {
        return None;
    }
    // Howard Hinnant's days_from_civil.
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    Some(era * 146_097 + doe - 719_468)
}

impl Dataset {
    /// Group `records` by runner label. `window_days`: only runs that started at most that many
    /// days before the newest run in the data count (None: all runs).
    pub(crate) fn build(mut records: Vec<LoadedRecord>, window_days: Option<u32>) -> Dataset {
        // Newest first, ties broken by id so the order never depends on the file system.
        records.sort_by(|a, b| {
            b.record
                .started_at
                .cmp(&a.record.started_at)
                .then_with(|| a.record.id.cmp(&b.record.id))
        });
        let newest = records.first().map(|r| r.record.started_at.clone());
        let newest_day = newest.as_deref().and_then(epoch_day);
        // Grouped by `runner_name`: a `--like` run is its own (emulated) runner, never
        // merged into the real disk's figures.
        let mut by_label: BTreeMap<String, Vec<usize>> = BTreeMap::new();
        for (i, r) in records.iter().enumerate() {
            by_label
                .entry(r.record.runner_name().into_owned())
                .or_default()
                .push(i);
        }
        let mut used_slugs = HashSet::new();
        let mut runners = Vec::with_capacity(by_label.len());
        for (label, all) in &by_label {
            let in_window = |i: &usize| match (window_days, newest_day) {
                (Some(w), Some(n)) => epoch_day(&records[*i].record.started_at)
                    .map(|d| n - d <= w as i64)
                    .unwrap_or(false),
                _ => true,
            };
            let runs: Vec<usize> = all.iter().copied().filter(in_window).collect();
            if runs.is_empty() {
                continue;
            }
            let mut slug = record::results::label_slug(label);
            if !used_slugs.insert(slug.clone()) {
                let mut n = 2;
                while !used_slugs.insert(format!("{slug}-{n}")) {
                    n += 1;
                }
                slug = format!("{slug}-{n}");
            }
            runners.push(summarise(label, slug, &records, runs, all.len()));
        }
        let (mut emulations, mut runners): (Vec<_>, Vec<_>) =
            runners.into_iter().partition(|r| r.emulates.is_some());
        score(&mut runners);
        score(&mut emulations);
        emulations.sort_by(|a, b| a.label.cmp(&b.label));
        runners.sort_by(|a, b| {
            b.score
                .total_cmp(&a.score)
                .then_with(|| a.label.cmp(&b.label))
        });
        Dataset {
            records,
            runners,
            emulations,
            newest,
            window_days,
        }
    }

    /// Every runner with a page: the real disks, then the emulations.
    pub(crate) fn all_runners(&self) -> impl Iterator<Item = &RunnerOverview> {
        self.runners.iter().chain(&self.emulations)
    }

    pub(crate) fn record(&self, i: usize) -> &Record {
        &self.records[i].record
    }

    /// The file record `i` was read from.
    pub(crate) fn path(&self, i: usize) -> &std::path::Path {
        &self.records[i].path
    }

    /// Runners that have a figure for `c`, best first.
    pub(crate) fn ranked(&self, c: ColumnId) -> Vec<&RunnerOverview> {
        let mut v: Vec<&RunnerOverview> = self
            .runners
            .iter()
            .filter(|r| r.column(c).is_some())
            .collect();
        v.sort_by(|a, b| {
            let (x, y) = (a.median(c), b.median(c));
            y.total_cmp(&x).then_with(|| a.label.cmp(&b.label))
        });
        v
    }

    /// Smallest and largest median of a column across runners.
    pub(crate) fn column_range(&self, c: ColumnId) -> Option<(f64, f64)> {
        let mut it = self
            .runners
            .iter()
            .filter_map(|r| r.column(c))
            .map(|f| f.median);
        let first = it.next()?;
        Some(it.fold((first, first), |(lo, hi), v| (lo.min(v), hi.max(v))))
    }
}

fn summarise(
    label: &str,
    slug: String,
    records: &[LoadedRecord],
    runs: Vec<usize>,
    all_runs: usize,
) -> RunnerOverview {
    // What the runner is (class, CPU, size) from its newest run with figures: a record of
    // published build timings names the runner only.
    let newest = runs
        .iter()
        .map(|&i| &records[i].record)
        .find(|r| !r.tests.is_empty())
        .unwrap_or(&records[runs[0]].record);
    let columns = ColumnId::ALL.map(|c| {
        let mut heads = Vec::new();
        let mut p99s = Vec::new();
        for &i in &runs {
            let Some(t) = records[i].record.test(c) else {
                continue;
            };
            if let Some(h) = t.headline().filter(|h| h.is_finite() && *h > 0.0) {
                heads.push(h);
                if let Some(p) = t.p99_ns() {
                    p99s.push(p as f64);
                }
            }
        }
        let med = median(&heads)?;
        Some(ColumnFigure {
            median: med,
            min: heads.iter().copied().fold(f64::INFINITY, f64::min),
            max: heads.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            runs: heads.len(),
            p99_ns: median(&p99s),
            cache_suspect: cache_suspect(records, &runs, c, med),
        })
    });
    let mut step_walls: BTreeMap<&str, (String, Vec<f64>, usize)> = BTreeMap::new();
    for &i in &runs {
        for s in &records[i].record.steps {
            let e = step_walls
                .entry(s.id.as_str())
                .or_insert_with(|| (s.name.clone(), Vec::new(), 0));
            match s.status {
                StepStatus::Ok => e.1.push(s.wall_s),
                StepStatus::Failed => e.2 += 1,
                StepStatus::Skipped => {}
            }
        }
    }
    let steps = step_walls
        .into_iter()
        .map(|(id, (name, walls, failed))| StepFigure {
            id: id.into(),
            name,
            wall_s: median(&walls).unwrap_or(f64::NAN),
            runs: walls.len(),
            failed,
        })
        .collect();
    let cpu: Vec<f64> = runs
        .iter()
        .filter_map(|&i| records[i].record.cpu_reference.as_ref())
        .filter(|c| c.benchmark.is_none())
        .map(|c| c.single_thread_ops_s)
        .collect();
    let mut sources: Vec<String> = Vec::new();
    for &i in &runs {
        let r = &records[i].record;
        if r.is_imported() {
            let s = match &r.source_file {
                Some(f) => format!("{} ({})", r.source, f),
                None => r.source.clone(),
            };
            if !sources.contains(&s) {
                sources.push(s);
            }
        }
    }
    RunnerOverview {
        label: label.into(),
        slug,
        class: newest.storage.class,
        arch: newest.runner.arch.clone(),
        cpu_model: newest.runner.cpu_model.clone(),
        vcpus: newest.runner.vcpus,
        memory_gib: newest.runner.memory_gib,
        instance_type: newest.runner.instance_type.clone(),
        variant: match newest.emulates() {
            Some(like) => Some(format!(
                "emulation: this disk capped like {like}, not a disk's own figures"
            )),
            None => newest.runner.variant.clone(),
        },
        emulates: newest.emulates().map(String::from),
        older_runs: all_runs - runs.len(),
        newest: records[runs[0]].record.started_at.clone(),
        imported: runs.iter().all(|&i| records[i].record.is_imported()),
        sources,
        columns,
        steps,
        cpu_single_ops_s: median(&cpu),
        cpu: cpu_figures(records, &runs),
        runs,
        score: 0.0,
    }
}

/// A column's median above what the storage of the newest run with disk figures can deliver,
/// or marked so by most of the runs themselves (our own runs record the mark with the PCIe link
/// they saw). A runner whose newest record is an imported build-timings record (no disk
/// figures, storage of unknown class) is judged by the record its figures come from, so a tmpfs
/// runner stays tmpfs and is never marked: memory is what tmpfs is.
fn cache_suspect(
    records: &[LoadedRecord],
    runs: &[usize],
    c: ColumnId,
    med: f64,
) -> Option<String> {
    let newest = runs
        .iter()
        .map(|&i| &records[i].record)
        .find(|r| !r.tests.is_empty())?;
    if newest.storage.class == StorageClass::Tmpfs {
        return None;
    }
    if let Some(ceiling) = record::ceiling::ceiling(&newest.storage)
        && let Some(why) = record::ceiling::exceeds(c, med, &ceiling)
    {
        return Some(why);
    }
    let marks: Vec<&String> = runs
        .iter()
        .filter_map(|&i| records[i].record.test(c)?.cache_suspect.as_ref())
        .collect();
    let with_figure = runs
        .iter()
        .filter(|&&i| records[i].record.test(c).is_some())
        .count();
    (marks.len() * 2 > with_figure).then(|| marks[0].clone())
}

fn score(runners: &mut [RunnerOverview]) {
    let best: Vec<f64> = ColumnId::ALL
        .iter()
        .map(|&c| {
            runners
                .iter()
                .filter_map(|r| r.column(c))
                .map(|f| f.median)
                .fold(0.0, f64::max)
        })
        .collect();
    for r in runners.iter_mut() {
        let logs: Vec<f64> = r
            .columns
            .iter()
            .zip(&best)
            .filter_map(|(f, &b)| f.as_ref().filter(|_| b > 0.0).map(|f| (f.median / b).ln()))
            .collect();
        r.score = if logs.is_empty() {
            0.0
        } else {
            (logs.iter().sum::<f64>() / logs.len() as f64).exp()
        };
    }
}

/// Runners of each storage class, classes in `StorageClass::ALL` order, best first inside.
pub(crate) fn by_class(runners: &[RunnerOverview]) -> Vec<(StorageClass, Vec<&RunnerOverview>)> {
    let mut map: HashMap<StorageClass, Vec<&RunnerOverview>> = HashMap::new();
    for r in runners {
        map.entry(r.class).or_default().push(r);
    }
    StorageClass::ALL
        .into_iter()
        .filter_map(|c| map.remove(&c).map(|v| (c, v)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::testdata::Fleet;

    fn dataset(window: Option<u32>) -> Dataset {
        let recs = Fleet::small()
            .records()
            .into_iter()
            .map(|record| LoadedRecord {
                path: "x.json".into(),
                record,
            })
            .collect();
        Dataset::build(recs, window)
    }

    #[test]
    fn runs_group_by_label_with_median_and_window() {
        let ds = dataset(None);
        let fleet = Fleet::small();
        assert_eq!(ds.runners.len(), fleet.runners.len());
        let r = ds
            .runners
            .iter()
            .find(|r| r.label == "ubuntu-24.04")
            .unwrap();
        assert_eq!(r.runs.len(), 3);
        let heads: Vec<f64> = r
            .runs
            .iter()
            .map(|&i| {
                ds.record(i)
                    .test(ColumnId::Qd1Read)
                    .unwrap()
                    .headline()
                    .unwrap()
            })
            .collect();
        let f = r.column(ColumnId::Qd1Read).unwrap();
        assert_eq!(f.median, median(&heads).unwrap());
        assert!(f.min <= f.median && f.median <= f.max);
        assert_eq!(r.newest, ds.record(r.runs[0]).started_at);
        // A one-day window keeps the two newest days' runs.
        let ds1 = dataset(Some(1));
        let r1 = ds1
            .runners
            .iter()
            .find(|r| r.label == "ubuntu-24.04")
            .unwrap();
        assert_eq!((r1.runs.len(), r1.older_runs), (2, 1));
        // Slugs are unique and safe.
        let evil = ds
            .runners
            .iter()
            .find(|r| r.label.starts_with("../"))
            .unwrap();
        assert_eq!(evil.slug, "escape-x");
        assert!(ds.runners[0].score >= ds.runners[ds.runners.len() - 1].score);
    }

    #[test]
    fn epoch_days() {
        assert_eq!(epoch_day("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(epoch_day("2026-11-30"), Some(20_787));
        assert_eq!(epoch_day("garbage"), None);
    }
}

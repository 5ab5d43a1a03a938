//! Pages: the data shaped for the templates (figures already formatted, bars already sized),
//! rendered with tera and written under the output folder.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, anyhow};
use record::{ColumnId, Record, StepStatus, StorageClass};
use serde::Serialize;
use serde_json::{Value, json};
use tera::Context as TeraContext;

use crate::analysis::correlation::StepAnalysis;
use crate::analysis::findings::Finding;
use crate::analysis::stats::{fmt_ns, fmt_s, fmt_sig};
use crate::charts;
use crate::data::model::{Dataset, RunnerOverview, by_class, col_index};
use crate::pages::content::Page;
use crate::pages::theme::Theme;

/// Everything shared by all pages.
pub(crate) struct Site<'a> {
    pub ds: &'a Dataset,
    pub theme: &'a Theme,
    pub out: &'a Path,
    pub pages: &'a [Page],
    pub findings: &'a [Finding],
    pub steps: &'a [StepAnalysis],
    /// The index's "Pick a runner for your job" answers.
    pub picks: &'a [crate::analysis::pick::JobPick],
    pub skipped: &'a [(PathBuf, String)],
    /// Per column: (lo, hi) of the bar scale.
    pub scales: [Option<(f64, f64)>; 6],
    /// The runners with records on two or more days, over time.
    pub histories: &'a [crate::analysis::timeline::RunnerHistory],
    /// Changes beyond noise, newest first.
    pub changes: &'a [crate::analysis::timeline::ChangeFinding],
    /// What the pages left out of a kept record (an unreadable histogram), for stderr.
    pub warnings: &'a std::sync::Mutex<Vec<String>>,
}

/// Bar width in percent on a log scale from the column's range.
pub(crate) fn bar_pct(v: f64, scale: Option<(f64, f64)>) -> f64 {
    let Some((lo, hi)) = scale else { return 0.0 };
    // The smallest figure still gets a visible bar: the scale starts a bit below it.
    let floor = lo / 2.0;
    if hi <= floor || v <= 0.0 {
        return 0.0;
    }
    let pct = (v / floor).ln() / (hi / floor).ln() * 100.0;
    (pct.clamp(1.0, 100.0) * 10.0).round() / 10.0
}

#[derive(Serialize)]
struct ColumnHead {
    id: &'static str,
    title: &'static str,
    unit: &'static str,
    colour: &'static str,
}

fn column_head(c: ColumnId) -> ColumnHead {
    ColumnHead {
        id: c.as_str(),
        title: c.title(),
        unit: c.headline().unit(),
        colour: charts::column_colour_css(c),
    }
}

fn column_heads() -> Vec<ColumnHead> {
    ColumnId::ALL.into_iter().map(column_head).collect()
}

/// A link in the navigation to a content page.
#[derive(Serialize)]
struct NavLink<'a> {
    /// The page, relative to the page linking it.
    href: String,
    /// The page's title.
    title: &'a str,
}

/// A file the site left out, on the index.
#[derive(Serialize)]
struct Skipped<'a> {
    /// The file.
    path: String,
    /// Why it was left out.
    why: &'a str,
}

/// A mount option of the storage, flagged when it changes what a flush costs.
#[derive(Serialize)]
struct MountOption<'a> {
    /// The option as mounted.
    opt: &'a str,
    /// Whether it is flagged.
    flag: bool,
    /// Why it is flagged (empty: it is not).
    why: &'static str,
}

#[derive(Serialize)]
struct Cell {
    col: &'static str,
    value: String,
    p99: String,
    /// Why this p99 is not comparable with measured ones (empty when it is).
    p99_note: &'static str,
    spread: String,
    bar: f64,
    missing: bool,
    /// Why the figure is a cache's, not the disk's (empty when it is the disk's).
    cache: String,
}

#[derive(Serialize)]
struct Row {
    label: String,
    href: String,
    class: &'static str,
    class_title: &'static str,
    arch: String,
    detail: String,
    imported: bool,
    sources: String,
    runs: usize,
    newest: String,
    cells: Vec<Cell>,
}

impl Site<'_> {
    fn cell(&self, r: &RunnerOverview, c: ColumnId) -> Cell {
        match r.column(c) {
            Some(f) => Cell {
                col: c.as_str(),
                value: fmt_sig(f.median),
                p99: f.p99_ns.map(fmt_ns).unwrap_or_default(),
                p99_note: if r.imported && c == ColumnId::SyncWrite {
                    "published p99: the write alone, without the fdatasync"
                } else {
                    ""
                },
                spread: f
                    .spread_pct()
                    .map(|s| format!("±{:.0}%", s / 2.0))
                    .unwrap_or_default(),
                bar: bar_pct(f.median, self.scales[col_index(c)]),
                missing: false,
                cache: f.cache_suspect.clone().unwrap_or_default(),
            },
            None => Cell {
                col: c.as_str(),
                value: "–".into(),
                p99: String::new(),
                p99_note: "",
                spread: String::new(),
                bar: 0.0,
                missing: true,
                cache: String::new(),
            },
        }
    }

    fn row(&self, r: &RunnerOverview, root: &str) -> Row {
        let mut detail = Vec::new();
        if let Some(it) = &r.instance_type {
            detail.push(it.clone());
        }
        detail.push(if r.vcpus > 0 {
            format!("{} vCPU", r.vcpus)
        } else {
            "vCPUs unknown".into()
        });
        if let Some(v) = &r.variant {
            detail.push(v.clone());
        }
        Row {
            label: r.label.clone(),
            href: format!("{root}runners/{}.html", r.slug),
            class: r.class.as_str(),
            class_title: r.class.title(),
            arch: r.arch.clone(),
            detail: detail.join(" · "),
            imported: r.imported,
            sources: r.sources.join("; "),
            runs: r.runs.len(),
            newest: r.newest.get(..10).unwrap_or(&r.newest).to_string(),
            cells: ColumnId::ALL.into_iter().map(|c| self.cell(r, c)).collect(),
        }
    }

    fn base_context(&self, root: &str, title: &str, nav: &str) -> TeraContext {
        let mut ctx = TeraContext::new();
        ctx.insert("root", root);
        ctx.insert("title", title);
        ctx.insert("nav", nav);
        ctx.insert("version", env!("CARGO_PKG_VERSION"));
        ctx.insert(
            "newest",
            &self
                .ds
                .newest
                .as_deref()
                .and_then(|s| s.get(..10))
                .unwrap_or("–"),
        );
        ctx.insert("columns", &column_heads());
        let extra: Vec<NavLink<'_>> = self
            .pages
            .iter()
            .filter(|p| {
                !matches!(
                    p.name.as_str(),
                    "columns" | "methodology" | "verdicts" | "manual"
                )
            })
            .map(|p| NavLink {
                href: format!("{root}{}.html", p.name),
                title: &p.title,
            })
            .collect();
        ctx.insert("extra_pages", &extra);
        ctx
    }

    fn write(&self, rel: &str, template: &str, ctx: &TeraContext) -> Result<()> {
        let html = self
            .theme
            .tera
            .render(template, ctx)
            .map_err(|e| anyhow!("rendering {rel} with {template}: {e}"))?;
        write_file(self.out, rel, html.as_bytes())
    }

    pub(crate) fn index(&self) -> Result<()> {
        let mut ctx = self.base_context("", "Runner disks, measured", "index");
        let mut groups: Vec<Value> = by_class(&self.ds.runners)
            .into_iter()
            .map(|(class, rs)| {
                json!({
                    "class": class.as_str(),
                    "title": class.title(),
                    "blurb": class_blurb(class),
                    "rows": rs.iter().map(|r| self.row(r, "")).collect::<Vec<_>>(),
                })
            })
            .collect();
        if !self.ds.emulations.is_empty() {
            groups.push(json!({
                "class": "emulation",
                "title": "Emulations (run --like): a disk capped like another runner",
                "blurb": EMULATION_BLURB,
                "rows": self.ds.emulations.iter().map(|r| self.row(r, "")).collect::<Vec<_>>(),
            }));
        }
        ctx.insert("groups", &groups);
        let kinds = [
            "extremes",
            "tmpfs",
            "same-cpu",
            "provisioned",
            "class-range",
            "cache-suspect",
        ];
        let finding_groups: Vec<Value> = kinds
            .iter()
            .filter_map(|k| {
                let items: Vec<&Finding> = self.findings.iter().filter(|f| f.kind == *k).collect();
                (!items.is_empty()).then(|| {
                    json!({"kind": k, "title": finding_title(k), "items": items.iter().map(|f| &f.html).collect::<Vec<_>>()})
                })
            })
            .collect();
        ctx.insert("finding_groups", &finding_groups);
        ctx.insert("changes", self.changes);
        ctx.insert("picks", self.picks);
        ctx.insert("runner_count", &self.ds.runners.len());
        let runs: usize = self.ds.runners.iter().map(|r| r.runs.len()).sum();
        ctx.insert("run_count", &runs);
        let imported = self.ds.runners.iter().filter(|r| r.imported).count();
        ctx.insert("imported_count", &imported);
        ctx.insert(
            "window",
            &self
                .ds
                .window_days
                .map(|d| format!("runs from the {d} days up to the newest run"))
                .unwrap_or_else(|| "all runs".into()),
        );
        let skipped: Vec<Skipped<'_>> = self
            .skipped
            .iter()
            .map(|(p, why)| Skipped {
                path: p.display().to_string(),
                why,
            })
            .collect();
        ctx.insert("skipped", &skipped);
        self.write("index.html", "index.html", &ctx)
    }

    pub(crate) fn column_page(&self, c: ColumnId) -> Result<()> {
        let mut ctx = self.base_context(
            "../",
            &format!("{} — every runner, best first", c.title()),
            c.as_str(),
        );
        let rows: Vec<Value> = self
            .ds
            .ranked(c)
            .into_iter()
            .enumerate()
            .map(|(i, r)| {
                let cell = self.cell(r, c);
                // `ranked` keeps only runners with the column.
                let range = match r.column(c) {
                    Some(f) if f.runs > 1 => format!("{}–{}", fmt_sig(f.min), fmt_sig(f.max)),
                    _ => String::new(),
                };
                json!({
                    "rank": i + 1,
                    "row": self.row(r, "../"),
                    "cell": cell,
                    "range": range,
                })
            })
            .collect();
        ctx.insert("rows", &rows);
        ctx.insert("col", &column_head(c));
        ctx.insert("job", &column_job(c));
        self.write(&format!("by/{}.html", c.as_str()), "column.html", &ctx)
    }

    pub(crate) fn runner_page(
        &self,
        r: &RunnerOverview,
        scratch: &mut crate::data::hist::Scratch,
    ) -> Result<()> {
        let newest = self.ds.record(r.runs[0]);
        let mut ctx = self.base_context("../", &r.label, "runner");
        ctx.insert("row", &self.row(r, "../"));
        ctx.insert("facts", &facts(r, newest));
        ctx.insert("storage", &storage_view(newest));
        ctx.insert(
            "storage_facts",
            &record::machine_facts::storage(&newest.storage),
        );
        // Every run, newest first.
        let runs: Vec<Value> = r
            .runs
            .iter()
            .map(|&i| {
                let rec = self.ds.record(i);
                json!({
                    "date": rec.started_at.replace('T', " ").trim_end_matches('Z').to_string(),
                    "imported": rec.is_imported(),
                    "source": match &rec.source_file { Some(f) => format!("{} ({f})", rec.source), None => rec.source.clone() },
                    "engine": engines(rec),
                    "method": rec.settings.method().unwrap_or_default(),
                    "cells": ColumnId::ALL.into_iter().map(|c| {
                        let t = rec.test(c);
                        json!({
                            "value": t.and_then(|t| t.headline()).map(fmt_sig).unwrap_or_else(|| "–".into()),
                            "p99": t.and_then(|t| t.p99_ns()).map(|p| fmt_ns(p as f64)).unwrap_or_default(),
                        })
                    }).collect::<Vec<_>>(),
                    "notes": rec.notes.iter().chain(rec.tests.iter().flat_map(|t| t.notes.iter())).cloned().collect::<Vec<_>>(),
                    "ci": rec.runner.ci.as_ref().map(|c| format!("{} run {}", c.system, c.run_id.as_deref().unwrap_or("?"))).unwrap_or_default(),
                })
            })
            .collect();
        ctx.insert("runs", &runs);
        // Jobs that are not one of the six columns (imported fio jobs with other settings):
        // shown with their settings, never ranked in a column.
        let jobs: Vec<Value> = r
            .runs
            .iter()
            .flat_map(|&i| {
                let rec = self.ds.record(i);
                rec.tests.iter().filter(|t| t.column().is_none()).map(move |t| {
                    let dir = t.main_direction();
                    json!({
                        "date": rec.started_at.replace('T', " ").trim_end_matches('Z').to_string(),
                        "name": t.id,
                        "settings": crate::data::import::settings_text(&t.job),
                        "engine": t.engine.used,
                        "iops": dir.map(|d| fmt_sig(d.iops)).unwrap_or_else(|| "–".into()),
                        "mib_s": dir.map(|d| fmt_sig(d.mib_s)).unwrap_or_else(|| "–".into()),
                        "p99": t.p99_ns().map(|p| fmt_ns(p as f64)).unwrap_or_default(),
                        "notes": t.notes,
                    })
                })
            })
            .collect();
        ctx.insert("jobs", &jobs);
        let (svg, lat_rows, merged_runs, unreadable) = self.latency(r, scratch);
        if !unreadable.is_empty()
            && let Ok(mut w) = self.warnings.lock()
        {
            w.extend(
                unreadable
                    .iter()
                    .map(|u| format!("runner {}: {u}", r.label)),
            );
        }
        ctx.insert("hist_unreadable", &unreadable);
        ctx.insert("cdf_svg", &svg);
        ctx.insert("lat_rows", &lat_rows);
        ctx.insert("merged_runs", &merged_runs);
        ctx.insert("steps", &crate::pages::runner_steps::steps_view(self.ds, r));
        let history: Vec<crate::charts::history::ChartView> = self
            .histories
            .iter()
            .find(|h| h.slug == r.slug)
            .map(crate::charts::history::charts)
            .unwrap_or_default();
        ctx.insert("history", &history);
        self.write(&format!("runners/{}.html", r.slug), "runner.html", &ctx)
    }

    /// The runner's latency: every run's stored histograms merged per column, drawn as CDFs.
    fn latency(
        &self,
        r: &RunnerOverview,
        scratch: &mut crate::data::hist::Scratch,
    ) -> (String, Vec<Value>, usize, Vec<String>) {
        let mut series = Vec::new();
        let mut rows = Vec::new();
        let mut merged_runs = 0;
        let mut unreadable = Vec::new();
        for c in ColumnId::ALL {
            let mut merger = crate::data::hist::Merger::default();
            for &i in &r.runs {
                let Some(d) = self.ds.record(i).test(c).and_then(|t| t.main_direction()) else {
                    continue;
                };
                if let Some(b64) = d.hist.as_deref()
                    && !merger.add(b64, scratch)
                {
                    unreadable.push(format!(
                        "the {} latency histogram of {} (run of {}) could not be read (or its counts overflow): left out of the latency table and chart",
                        c.as_str(),
                        self.ds.path(i).display(),
                        self.ds.record(i).started_at
                    ));
                }
            }
            let (merged, n) = (merger.merged, merger.runs);
            merged_runs = merged_runs.max(n);
            if let Some(h) = merged.filter(|h| !h.is_empty()) {
                let p: Vec<String> = h
                    .value_at_quantiles([0.5, 0.9, 0.99, 0.999])
                    .map(|v| fmt_ns(v as f64))
                    .collect();
                rows.push(json!({
                    "col": c.as_str(), "title": c.title(), "colour": charts::column_colour_css(c),
                    "ops": fmt_sig(h.len() as f64), "runs": n,
                    "p50": p[0], "p90": p[1], "p99": p[2], "p999": p[3],
                    "max": fmt_ns(h.max() as f64),
                }));
                series.push((c, charts::cdf_points(&h)));
            }
        }
        let svg = if series.is_empty() {
            String::new()
        } else {
            charts::cdf_svg(&series).unwrap_or_default()
        };
        (svg, rows, merged_runs, unreadable)
    }

    /// The step's median time on each runner, fastest first, so a site with too few runners
    /// for a conclusion still shows the times.
    fn step_times(&self, id: &str) -> Vec<Value> {
        let mut times: Vec<(
            &crate::data::model::RunnerOverview,
            &crate::data::model::StepFigure,
        )> = self
            .ds
            .runners
            .iter()
            .filter_map(|r| r.steps.iter().find(|f| f.id == id).map(|f| (r, f)))
            .collect();
        times.sort_by(|a, b| a.1.wall_s.total_cmp(&b.1.wall_s));
        times
            .into_iter()
            .map(|(r, f)| {
                json!({
                    "label": r.label, "href": format!("runners/{}.html", r.slug),
                    "class": r.class.as_str(), "class_title": r.class.title(),
                    "wall": if f.runs > 0 { fmt_s(f.wall_s) } else { "–".into() },
                    "runs": f.runs, "failed": f.failed,
                })
            })
            .collect()
    }

    pub(crate) fn steps_page(&self) -> Result<()> {
        let mut ctx = self.base_context("", "Build steps across runners", "steps");
        let mut experiments = experiments_by_step(self.ds);
        let mut steps = crate::pages::steps_view::steps(self.steps);
        for (view, s) in steps.iter_mut().zip(self.steps) {
            view.times = self.step_times(&s.id);
            view.experiments = experiments.remove(&s.id).unwrap_or_default();
        }
        ctx.insert("steps", &steps);
        ctx.insert("method", &crate::pages::steps_view::method());
        ctx.insert("min_runners", &crate::analysis::correlation::MIN_RUNNERS);
        self.write("steps.html", "steps.html", &ctx)
    }

    pub(crate) fn content_page(&self, page: &Page) -> Result<()> {
        let mut ctx = self.base_context("", &page.title, &page.name);
        ctx.insert("body", &page.html);
        if page.name == "verdicts" {
            ctx.insert("verdicts", &verdict_counts(self.ds));
        }
        self.write(&format!("{}.html", page.name), "page.html", &ctx)
    }

    /// A verdicts page even when `content/verdicts.md` is absent: the counts from the data.
    pub(crate) fn verdicts_fallback(&self) -> Result<()> {
        let page = Page {
            name: "verdicts".into(),
            title: "Step verdicts".into(),
            html: "<p>Each build step's record carries a verdict (latency, bandwidth, CPU, mixed or unknown) and the one sentence of figures behind it. Below: how often each verdict was given, per step, in this data.</p>".into(),
        };
        self.content_page(&page)
    }
}

fn verdict_counts(ds: &Dataset) -> Vec<Value> {
    /// Per step id: its name, how often each verdict was given, one example sentence.
    type Tally = (
        String,
        std::collections::BTreeMap<&'static str, usize>,
        Option<String>,
    );
    let mut by_step: std::collections::BTreeMap<String, Tally> = Default::default();
    for r in &ds.runners {
        for &i in &r.runs {
            // Published timings have no verdict of their own (no signals were recorded).
            if ds.record(i).is_imported() {
                continue;
            }
            for s in &ds.record(i).steps {
                let e = by_step
                    .entry(s.id.clone())
                    .or_insert_with(|| (s.name.clone(), Default::default(), None));
                // A verdict by experiment outranks the inferred one.
                let k = if s.status == StepStatus::Ok {
                    s.what_if.as_ref().map_or(s.bound, |w| w.bound).as_str()
                } else if s.status == StepStatus::Failed {
                    "failed"
                } else {
                    "skipped"
                };
                *e.1.entry(k).or_default() += 1;
                if e.2.is_none() && s.status == StepStatus::Ok {
                    e.2 = Some(s.what_if.as_ref().map_or(&s.why, |w| &w.why).clone());
                }
            }
        }
    }
    by_step
        .into_iter()
        .map(|(id, (name, counts, why))| {
            json!({"id": id, "name": name, "why": why.unwrap_or_default(),
                   "counts": counts.into_iter().map(|(k, v)| json!({"bound": k, "n": v})).collect::<Vec<_>>()})
        })
        .collect()
}

fn finding_title(kind: &str) -> &'static str {
    match kind {
        "extremes" => "Fastest and slowest disk, per column and architecture",
        "tmpfs" => "Memory against disk",
        "same-cpu" => "Same CPU, different storage",
        "provisioned" => "Provisioned against default volumes",
        "cache-suspect" => "Figures no disk can produce (served by a cache)",
        _ => "Each storage class's range",
    }
}

/// What an emulated runner's figures are, wherever its row is shown.
const EMULATION_BLURB: &str = "Each row is a real disk measured under block-I/O caps taken from \
     another runner's published figures (`run --like`): not a disk's own figures, kept out of the \
     findings, the picks and the real runner's medians. A cap limits the rate and adds no latency, \
     so one-at-a-time columns (QD1 read, sync-write) stay this disk's.";

fn class_blurb(c: StorageClass) -> &'static str {
    match c {
        StorageClass::Tmpfs => "Files in memory: no device, no flush. The ceiling, not a disk.",
        StorageClass::LocalNvme => {
            "NVMe attached to the host (instance store): low latency, fast flushes, gone when the machine is."
        }
        StorageClass::Ebs => {
            "Amazon's network block storage: IOPS and throughput are provisioned; every I/O crosses the network."
        }
        StorageClass::NetworkDisk => {
            "A network-attached disk from another cloud (Azure managed disk, GCP persistent disk)."
        }
        StorageClass::VmDisk => {
            "A virtual disk of a VM (virtio, Hyper-V): what most hosted CI runners get."
        }
        StorageClass::Unknown => "No rule recognised the device; see each runner's evidence.",
    }
}

/// A column's job as the suite runs it (from the engine's own job table), then what it is for.
fn column_job(c: ColumnId) -> String {
    let settings = crate::data::import::settings_text(&record::JobSettings::of_column(c, 0));
    let what_for = match c {
        ColumnId::SeqRead => "Restoring caches, reading images, big artifacts.",
        ColumnId::SeqWrite => "Writing build outputs, docker layers, artifacts.",
        ColumnId::RandRead => "Many small files read in parallel.",
        ColumnId::RandWrite => {
            "Parallel small writes: package extraction (npm, pip, cargo unpack without syncing), compilers writing objects."
        }
        ColumnId::Qd1Read => {
            "Pure latency: a program that waits for each read (SQLite lookups, cold starts)."
        }
        ColumnId::SyncWrite => {
            "Durable commits per second: databases, dpkg (which syncs every file it unpacks), anything that must not lose a write."
        }
    };
    format!("{settings}. {what_for}")
}

fn engines(rec: &Record) -> String {
    let mut e: Vec<String> = rec
        .tests
        .iter()
        .map(|t| {
            let mut s = t.engine.used.clone();
            if !t.engine.direct {
                s.push_str(" buffered");
            }
            s
        })
        .collect();
    e.sort();
    e.dedup();
    e.join(", ")
}

/// The machine's facts ([`record::machine_facts`], as the terminal and the job summary show
/// them), then what only the site knows: the CPU reference over the window and the runs.
fn facts(r: &RunnerOverview, rec: &Record) -> Vec<record::machine_facts::Fact> {
    use record::machine_facts::Fact;
    let mut f = record::machine_facts::machine(&rec.runner);
    if let Some(c) = r.cpu_single_ops_s {
        f.push(Fact {
            key: "cpu-reference",
            name: "CPU reference",
            lines: vec![format!("{} ops/s on one thread (median)", fmt_sig(c))],
        });
    }
    f.push(Fact {
        key: "runs",
        name: "Runs",
        lines: vec![format!(
            "{} in the window{}",
            r.runs.len(),
            if r.older_runs > 0 {
                format!(", {} older not counted", r.older_runs)
            } else {
                String::new()
            }
        )],
    });
    f
}

/// Mount options that change what fdatasync costs, and why: the engine's table, the same one
/// that fills the record's `fsync_flags` and the methodology page.
pub(crate) fn fsync_option(opt: &str) -> Option<&'static str> {
    let o = opt.trim();
    record::storage_rules::FSYNC_OPTIONS
        .iter()
        .find(|(name, _)| *name == o)
        .map(|(_, why)| *why)
}

fn model_of(d: &record::Device) -> String {
    [d.vendor.clone(), d.model.clone()]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join(" ")
}

fn rotational(r: Option<bool>) -> &'static str {
    match r {
        Some(true) => "yes",
        Some(false) => "no",
        None => "unknown",
    }
}

fn storage_view(rec: &Record) -> Value {
    let s = &rec.storage;
    let options: Vec<MountOption<'_>> = s
        .mount_options
        .split(',')
        .filter(|o| !o.is_empty())
        .map(|o| {
            let why = fsync_option(o).or_else(|| {
                s.fsync_flags
                    .iter()
                    .any(|f| f == o)
                    .then_some("the record flags this option as changing fsync cost")
            });
            MountOption {
                opt: o,
                flag: why.is_some(),
                why: why.unwrap_or(""),
            }
        })
        .collect();
    let devices: Vec<Value> = if s.devices.is_empty() { s.device.iter().collect::<Vec<_>>() } else { s.devices.iter().collect() }
        .into_iter()
        .map(|d| {
            json!({
                "name": d.name,
                "model": model_of(d),
                "transport": d.transport.clone().unwrap_or_default(),
                "rotational": rotational(d.rotational),
                "scheduler": d.scheduler.clone().unwrap_or_default(),
                "size": d.size_bytes.map(|b| format!("{} GiB", fmt_sig(b as f64 / (1u64 << 30) as f64))).unwrap_or_default(),
                "raid": d.raid_level.clone().unwrap_or_default(),
                "members": d.members.join(", "),
            })
        })
        .collect();
    json!({
        "class": s.class.as_str(), "class_title": s.class.title(),
        "evidence": s.class_evidence,
        "path": s.path, "fstype": s.fstype, "mount_source": s.mount_source,
        "options": options,
        "overlay": s.overlay_upper.as_ref().map(|m| format!("{} on {} ({})", m.fstype, m.mount_source, m.mount_options)),
        "devices": devices,
        "notes": s.notes,
        "free": match (s.free_bytes, s.total_bytes) {
            (Some(f), Some(t)) => format!("{} GiB free of {} GiB", fmt_sig(f as f64 / (1u64 << 30) as f64), fmt_sig(t as f64 / (1u64 << 30) as f64)),
            _ => String::new(),
        },
        "evidence_runner": rec.runner.evidence,
    })
}

/// Per step id: the newest what-if experiment on each runner that has one.
fn experiments_by_step(
    ds: &Dataset,
) -> std::collections::BTreeMap<String, Vec<crate::pages::runner_steps::WhatIfView>> {
    let mut out: std::collections::BTreeMap<String, Vec<_>> = Default::default();
    for r in &ds.runners {
        let mut seen: Vec<String> = Vec::new();
        for &i in &r.runs {
            for s in &ds.record(i).steps {
                if s.what_if.is_none() || seen.contains(&s.id) {
                    continue;
                }
                seen.push(s.id.clone());
                if let Some(mut v) = crate::pages::runner_steps::what_if_view(s, &[]) {
                    v.runner = Some(r.label.clone());
                    v.slug = Some(r.slug.clone());
                    out.entry(s.id.clone()).or_default().push(v);
                }
            }
        }
    }
    out
}

/// Write `rel` (a path made only of fixed names and slugs) under `out`.
pub(crate) fn write_file(out: &Path, rel: &str, bytes: &[u8]) -> Result<()> {
    // Runner slugs and page names come from data: whatever they hold, the page lands in `out`.
    let path = record::safe_name::inside(out, rel)?;
    // Whatever text a record carried, no control character reaches a page or a data file raw.
    let text = std::str::from_utf8(bytes).ok();
    let cleaned = match text {
        Some(t) if rel.ends_with(".html") || rel.ends_with(".svg") => {
            Some(crate::pages::html::visible_controls(t))
        }
        Some(t) if rel.ends_with(".json") => Some(crate::pages::html::json_controls_escaped(t)),
        _ => None,
    };
    let bytes = cleaned.as_ref().map_or(bytes, |t| t.as_bytes());
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    std::fs::write(&path, bytes).with_context(|| format!("cannot write {}", path.display()))
}

//! The rendering half of cargo-diskbench: loads records from a results folder and writes a
//! static report site. Nothing here measures.

use std::path::PathBuf;

use anyhow::Result;

pub mod analysis;
pub mod charts;
pub mod data;
pub mod pages;

// The crate's public face keeps the short paths the CLI uses.
pub use analysis::{correlation, history};
use analysis::{findings, pick, timeline};
use data::{hist, model};
pub use data::{import, merge, testdata};
pub use pages::facts::{CommandDoc, OptionDoc};
pub use pages::{compare_report, job_summary, site_folder};
use pages::{content, render, runners_json, theme};

/// What `cargo diskbench site` was asked to do.
#[derive(Clone, Debug, Default)]
pub struct SiteOptions {
    /// The folder of records (read recursively, never modified).
    pub results: PathBuf,
    /// Where the site is written.
    pub out: PathBuf,
    /// A theme folder whose files override the built-in ones, file by file.
    pub theme: Option<PathBuf>,
    /// Treat a bad record as an error instead of skipping it.
    pub strict: bool,
    /// Only runs that started at most this many days before the newest run count (None: all).
    pub window_days: Option<u32>,
    /// A folder of `*.md` pages laid over the built-in `content/` pages.
    pub content: Option<PathBuf>,
    /// The CLI's commands and options, made from its command definition, for the options
    /// page (empty: the page points to `--help` instead of listing them).
    pub commands: Vec<CommandDoc>,
}

/// What was built.
#[derive(Clone, Debug, Default)]
pub struct SiteReport {
    pub records: usize,
    /// Files left out, with the reason.
    pub skipped: Vec<(PathBuf, String)>,
    pub pages: usize,
    /// What the site left out of a record it kept (an unreadable histogram), one line each,
    /// naming the record's file; the pages say it too.
    pub warnings: Vec<String>,
    /// When each stage ended, in seconds from the start (the CLI prints them with
    /// `DISKBENCH_SITE_TIMING` set).
    pub timings: Vec<(&'static str, f64)>,
}

/// Records that share an id are one run copied twice (a results folder merged by hand, an
/// artifact downloaded twice): counted twice, it would weigh double in every median. The
/// first in file order is kept; each other one is left out with a reason naming both files.
fn drop_duplicate_ids(loaded: &mut record::load::Loaded) {
    // Found with borrowed ids and removed in place: 10,000 records are most of the site's
    // memory, and a second vector of them would be its peak.
    let mut first: std::collections::HashMap<&str, usize> =
        std::collections::HashMap::with_capacity(loaded.records.len());
    let mut dups: Vec<(usize, usize)> = Vec::new();
    for (i, r) in loaded.records.iter().enumerate() {
        if let Some(&kept) = first.get(r.record.id.as_str()) {
            dups.push((i, kept));
        } else {
            first.insert(&r.record.id, i);
        }
    }
    drop(first);
    for &(i, kept) in &dups {
        let (r, k) = (&loaded.records[i], &loaded.records[kept]);
        let why = format!(
            "record id {} is also the id of {} (kept): the same run twice, counted once",
            r.record.id,
            k.path.display()
        );
        loaded.skipped.push((r.path.clone(), why));
    }
    if dups.is_empty() {
        return;
    }
    // `dups` is in file order: a binary search finds each.
    let mut i = 0;
    loaded.records.retain(|_| {
        let keep = dups.binary_search_by_key(&i, |&(d, _)| d).is_err();
        i += 1;
        keep
    });
}

/// Build the site: load, aggregate, analyse, render. The results folder is only read.
pub fn build_site(opts: &SiteOptions) -> Result<SiteReport> {
    let t0 = std::time::Instant::now();
    let mut timings = Vec::new();
    let mut lap = |what: &'static str| timings.push((what, t0.elapsed().as_secs_f64()));
    let mut loaded = record::load::load_dir(&opts.results)?;
    lap("loaded");
    if opts.strict && !loaded.skipped.is_empty() {
        let list: Vec<String> = loaded
            .skipped
            .iter()
            .map(|(p, why)| format!("{}: {why}", p.display()))
            .collect();
        return Err(record::error::usage(format!(
            "--strict: {} bad record(s) in {}:\n  {}",
            list.len(),
            opts.results.display(),
            list.join("\n  ")
        )));
    }
    // Everything that can fail on bad input is checked before the output folder is touched.
    let theme = theme::load(opts.theme.as_deref())?;
    let pages = content::pages(opts.content.as_deref(), &opts.commands)?;
    record::cancel::check()?;
    let folder = site_folder::SiteFolder::prepare(&opts.out, &opts.results)?;
    drop_duplicate_ids(&mut loaded);
    let records = loaded.records.len();
    let ds = model::Dataset::build(loaded.records, opts.window_days);
    let findings = findings::findings(&ds);
    let histories = timeline::histories(&ds);
    let changes = timeline::change_findings(&histories, &ds.runners);
    lap("dataset and findings");
    let steps = correlation::analyse(&ds);
    let picks = pick::picks(&ds, &steps);
    let scales = record::ColumnId::ALL.map(|c| ds.column_range(c));
    let warnings = std::sync::Mutex::new(Vec::new());
    let site = render::Site {
        ds: &ds,
        theme: &theme,
        out: &folder.staging,
        pages: &pages,
        findings: &findings,
        steps: &steps,
        picks: &picks,
        skipped: &loaded.skipped,
        scales,
        histories: &histories,
        changes: &changes,
        warnings: &warnings,
    };
    lap("analysed");
    record::cancel::check()?;
    let mut written = 0;
    site.index()?;
    written += 1;
    for c in record::ColumnId::ALL {
        record::cancel::check()?;
        site.column_page(c)?;
        written += 1;
    }
    site.steps_page()?;
    written += 1;
    render::write_file(
        &folder.staging,
        "data/steps.json",
        serde_json::to_string_pretty(&pages::steps_json::steps_json(&steps))?.as_bytes(),
    )?;
    for p in &pages {
        record::cancel::check()?;
        site.content_page(p)?;
        written += 1;
    }
    if !pages.iter().any(|p| p.name == "verdicts") {
        site.verdicts_fallback()?;
        written += 1;
    }
    lap("summary pages");
    written += render_runner_pages(&site)?;
    lap("runner pages");
    runners_json::write(&ds, &folder.staging)?;
    written += 1;
    render::write_file(
        &folder.staging,
        "data/history.json",
        serde_json::to_string_pretty(&timeline::HistoryFile {
            schema: timeline::SCHEMA,
            runners: &histories,
        })?
        .as_bytes(),
    )?;
    for (name, bytes) in &theme.assets {
        render::write_file(&folder.staging, &format!("assets/{name}"), bytes)?;
    }
    render::write_file(&folder.staging, ".nojekyll", b"")?;
    folder.commit()?;
    let mut warnings = warnings.into_inner().unwrap_or_else(|e| e.into_inner());
    warnings.sort();
    Ok(SiteReport {
        records,
        skipped: loaded.skipped,
        pages: written,
        warnings,
        timings,
    })
}

/// Runner pages on every core: decoding histograms and drawing CDFs is most of the work.
fn render_runner_pages(site: &render::Site<'_>) -> Result<usize> {
    let runners: Vec<&model::RunnerOverview> = site.ds.all_runners().collect();
    let done = record::parallel::map_parts(
        &runners,
        record::parallel::threads(),
        |part| -> Result<usize> {
            let mut scratch = hist::Scratch::default();
            for r in part {
                record::cancel::check()?;
                site.runner_page(r, &mut scratch)?;
            }
            Ok(part.len())
        },
    );
    let mut n = 0;
    for d in done {
        n += d.ok_or_else(|| anyhow::anyhow!("a rendering thread panicked"))??;
    }
    Ok(n)
}

//! The rendering half of cargo-diskbench: loads records from a results folder and writes a
//! static report site. Nothing here measures.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

pub mod import;
pub mod merge;
pub mod summary;
// SITE-MODULES (the site's modules are declared below this line)
pub mod charts;
pub mod content;
pub mod correlation;
pub mod findings;
pub mod hist;
pub mod html;
pub mod load;
pub mod model;
pub mod render;
pub mod runners_json;
pub mod stats;
pub mod testdata;
pub mod theme;

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
}

/// What was built.
#[derive(Clone, Debug, Default)]
pub struct SiteReport {
    pub records: usize,
    /// Files left out, with the reason.
    pub skipped: Vec<(PathBuf, String)>,
    pub pages: usize,
}

/// A file written into an output folder that is a diskbench site, so a rebuild may clear it.
const MARKER: &str = ".diskbench-site";

/// Build the site: load, aggregate, analyse, render. The results folder is only read.
pub fn build_site(opts: &SiteOptions) -> Result<SiteReport> {
    let timing = std::env::var_os("DISKBENCH_SITE_TIMING").is_some();
    let t0 = std::time::Instant::now();
    let lap = |what: &str| {
        if timing {
            eprintln!("timing: {what} at {:.3} s", t0.elapsed().as_secs_f64());
        }
    };
    let loaded = load::load_dir(&opts.results)?;
    lap("loaded");
    if opts.strict && !loaded.skipped.is_empty() {
        let list: Vec<String> = loaded
            .skipped
            .iter()
            .map(|(p, why)| format!("{}: {why}", p.display()))
            .collect();
        return Err(engine::error::usage(format!(
            "--strict: {} bad record(s) in {}:\n  {}",
            list.len(),
            opts.results.display(),
            list.join("\n  ")
        )));
    }
    // Everything that can fail on bad input is checked before the output folder is touched.
    let theme = theme::load(opts.theme.as_deref())?;
    let pages = content::pages(opts.content.as_deref())?;
    prepare_out(&opts.out, &opts.results)?;
    let records = loaded.records.len();
    let ds = model::Dataset::build(loaded.records, opts.window_days);
    let findings = findings::findings(&ds);
    let steps = correlation::analyse(&ds);
    let scales = engine::record::ColumnId::ALL.map(|c| ds.column_range(c));
    let site = render::Site {
        ds: &ds,
        theme: &theme,
        out: &opts.out,
        pages: &pages,
        findings: &findings,
        steps: &steps,
        skipped: &loaded.skipped,
        scales,
    };
    lap("analysed");
    let mut written = 0;
    site.index()?;
    written += 1;
    for c in engine::record::ColumnId::ALL {
        site.column_page(c)?;
        written += 1;
    }
    site.steps_page()?;
    written += 1;
    for p in &pages {
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
    runners_json::write(&ds, &opts.out)?;
    written += 1;
    for (name, bytes) in &theme.assets {
        render::write_file(&opts.out, &format!("assets/{name}"), bytes)?;
    }
    render::write_file(&opts.out, ".nojekyll", b"")?;
    render::write_file(
        &opts.out,
        MARKER,
        b"written by cargo diskbench site; the folder is cleared on the next build\n",
    )?;
    Ok(SiteReport {
        records,
        skipped: loaded.skipped,
        pages: written,
    })
}

/// Runner pages on every core: decoding histograms and drawing CDFs is most of the work.
fn render_runner_pages(site: &render::Site) -> Result<usize> {
    let runners = &site.ds.runners;
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .min(8);
    let chunk = runners.len().div_ceil(threads).max(1);
    std::thread::scope(|scope| {
        let handles: Vec<_> = runners
            .chunks(chunk)
            .map(|part| {
                scope.spawn(move || -> Result<usize> {
                    let mut scratch = hist::Scratch::default();
                    for r in part {
                        site.runner_page(r, &mut scratch)?;
                    }
                    Ok(part.len())
                })
            })
            .collect();
        let mut n = 0;
        for h in handles {
            n += h
                .join()
                .map_err(|_| anyhow::anyhow!("a rendering thread panicked"))??;
        }
        Ok(n)
    })
}

/// Make `out` ready: refuse a folder inside the results (the results are never modified) or a
/// non-empty folder that is not an earlier site; clear an earlier site's files.
fn prepare_out(out: &Path, results: &Path) -> Result<()> {
    let abs = |p: &Path| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
    let (out_abs, res_abs) = (abs(out), abs(results));
    let res_real = results.canonicalize().unwrap_or(res_abs.clone());
    if out_abs.starts_with(&res_abs) || out_abs.starts_with(&res_real) {
        return Err(engine::error::usage(format!(
            "--out {}: inside the results folder {}; the results are never modified, choose another folder",
            out.display(),
            results.display()
        )));
    }
    if out.exists() {
        if !out.is_dir() {
            return Err(engine::error::usage(format!(
                "--out {}: exists and is not a folder",
                out.display()
            )));
        }
        let mut entries =
            std::fs::read_dir(out).with_context(|| format!("cannot read {}", out.display()))?;
        let empty = entries.next().is_none();
        if !empty {
            if !out.join(MARKER).exists() {
                return Err(engine::error::usage(format!(
                    "--out {}: a non-empty folder that is not a diskbench site; give an empty or new folder",
                    out.display()
                )));
            }
            std::fs::remove_dir_all(out)
                .with_context(|| format!("cannot clear the earlier site in {}", out.display()))?;
        }
    }
    std::fs::create_dir_all(out).with_context(|| format!("cannot create {}", out.display()))
}

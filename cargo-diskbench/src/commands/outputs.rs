//! Where a run's record and reports go: every destination checked before the run, and
//! written after it (the record, the site, the --json copy, the Markdown summary).

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use record::Record;
use record::results::{DEFAULT_RESULTS_DIR, DEFAULT_SITE_DIR};

use crate::output;

/// Where the record and report go (boxed: keeps the command enum small).
#[derive(clap::Args, Debug)]
pub struct RecordArgs {
    /// How this machine is named in the report; without it, as detected
    #[arg(long, value_name = "TEXT")]
    pub label: Option<String>,
    /// The folder of accumulated records
    #[arg(long, value_name = "DIR", default_value = DEFAULT_RESULTS_DIR)]
    pub results: PathBuf,
    /// Also write this run's record here ('-' = stdout)
    #[arg(long, value_name = "FILE")]
    pub json: Option<String>,
    /// Also write the Markdown summary here (it is appended to $GITHUB_STEP_SUMMARY when set)
    #[arg(long, value_name = "FILE")]
    pub markdown: Option<PathBuf>,
    /// Do not render the report site after the run
    #[arg(long)]
    pub no_site: bool,
    /// Compare this run with this runner's earlier records in DIR (a results folder, or one
    /// record file): printed after the table and added to the Markdown summary
    #[arg(long, value_name = "DIR")]
    pub baseline: Option<PathBuf>,
    /// Where the site is rendered
    #[arg(long, value_name = "DIR", default_value = DEFAULT_SITE_DIR)]
    pub site_out: PathBuf,
}

impl RecordArgs {
    /// `--json -`: stdout carries the record, so every other line goes to stderr.
    pub fn json_to_stdout(&self) -> bool {
        self.json.as_deref() == Some("-")
    }
}

/// Every destination, checked before the first test file is made.
pub fn check_destinations(record: &RecordArgs) -> Result<()> {
    use super::destination;
    let results_dir = &record.results;
    destination::folder("--results", results_dir)?;
    match record.json.as_deref() {
        Some("-") => destination::stdout("--json")?,
        Some(json) => destination::file("--json", Path::new(json))?,
        None => {}
    }
    if let Some(md) = &record.markdown {
        destination::file("--markdown", md)?;
    }
    destination::step_summary()?;
    if !record.no_site {
        destination::site_out("--site-out", results_dir, &record.site_out)?;
    }
    Ok(())
}

/// The record into the results folder, then the site, the --json copy and the Markdown
/// summary. A run that exits non-zero leaves no record: if anything after the record fails
/// (or Ctrl-C arrives), the record just written is removed again.
pub fn keep(
    args: &RecordArgs,
    record: &Record,
    comparison: Option<&Option<site_gen::history::Comparison>>,
    quiet: bool,
) -> Result<()> {
    let path = record::results::write_record(&args.results, record)?;
    let mut json_written = false;
    let rest = write_outputs(args, record, comparison, &path, quiet, &mut json_written)
        .and_then(|()| record::cancel::check());
    if let Err(err) = rest {
        let _ = std::fs::remove_file(&path);
        // The --json copy of a record that is no longer kept goes too (only if this run wrote
        // it: a file there from before a failed site render is the user's).
        if let Some(copy) = args.json.as_deref().filter(|j| *j != "-" && json_written) {
            let _ = std::fs::remove_file(copy);
        }
        return Err(err.context(format!("no record kept ({} removed)", path.display())));
    }
    Ok(())
}

/// What follows the record: the site, the --json copy, the Markdown summary. Sets
/// `json_written` once the --json file holds this record (so a later failure removes it).
fn write_outputs(
    args: &RecordArgs,
    record: &Record,
    comparison: Option<&Option<site_gen::history::Comparison>>,
    path: &Path,
    quiet: bool,
    json_written: &mut bool,
) -> Result<()> {
    let (results_dir, json_to_stdout) = (&args.results, args.json_to_stdout());
    output::print(&format!("record: {}\n", path.display()), json_to_stdout);
    // The site first (the output most likely to fail), then the copies: a failure leaves as
    // little as possible behind, and $GITHUB_STEP_SUMMARY, which cannot be taken back, last.
    if !args.no_site {
        let out = args.site_out.clone();
        site_gen::build_site(&site_gen::SiteOptions {
            results: results_dir.to_path_buf(),
            out: out.clone(),
            commands: super::site::command_docs(),
            ..Default::default()
        })
        .with_context(|| format!("the site could not be rendered into {}", out.display()))?;
        output::print(&format!("site: {}\n", out.display()), json_to_stdout);
    }
    if let Some(target) = &args.json {
        if target == "-" {
            record_to_stdout(record)?;
        } else {
            let json =
                serde_json::to_string_pretty(record).context("cannot serialise the record")?;
            *json_written = true;
            std::fs::write(target, format!("{json}\n"))
                .with_context(|| format!("--json {target}: cannot write the record"))?;
        }
    }
    let mut text = site_gen::job_summary::markdown(record);
    // With --baseline, how the runner moved since its last run follows the run's own summary.
    match comparison {
        Some(Some(c)) => text.push_str(&site_gen::compare_report::markdown(
            std::slice::from_ref(c),
            &[],
        )),
        Some(None) => text.push_str(&site_gen::compare_report::markdown(
            &[],
            std::slice::from_ref(&record.runner.label),
        )),
        None => {}
    }
    write_markdown(&text, args.markdown.as_deref())?;
    let site_out = (!args.no_site).then(|| args.site_out.clone());
    if !quiet {
        eprint!(
            "{}",
            output::left_in_project(
                results_dir,
                site_out.as_deref(),
                &std::env::current_dir().unwrap_or_default()
            )
        );
    }
    Ok(())
}

/// The Markdown summary into `--markdown FILE` and appended to $GITHUB_STEP_SUMMARY.
fn write_markdown(text: &str, file: Option<&Path>) -> Result<()> {
    if let Some(path) = file {
        std::fs::write(path, text)
            .with_context(|| format!("--markdown {}: cannot write", path.display()))?;
    }
    if let Some(summary) = std::env::var_os("GITHUB_STEP_SUMMARY").filter(|v| !v.is_empty()) {
        let mut f =
            super::destination::open_step_summary(Path::new(&summary)).with_context(|| {
                format!(
                    "cannot open $GITHUB_STEP_SUMMARY ({})",
                    Path::new(&summary).display()
                )
            })?;
        f.write_all(text.as_bytes())
            .context("cannot append to $GITHUB_STEP_SUMMARY")?;
    }
    Ok(())
}

/// The record as JSON on stdout (`--json -`).
pub fn record_to_stdout(record: &Record) -> Result<()> {
    let json = serde_json::to_string_pretty(record).context("cannot serialise the record")?;
    let mut out = std::io::stdout().lock();
    writeln!(out, "{json}")
        .and_then(|()| out.flush())
        .context("--json -: cannot write the record to stdout")
}

/// Write `json` to `path` through a temporary file and a rename, so a reader never sees half.
pub fn write_json(path: &Path, json: &str) -> Result<()> {
    // A temporary name nobody can have planted (a random part) created with create_new, so
    // this never writes through a symlink someone else made.
    let tmp = path.with_file_name(format!(
        ".{}.{}.tmp",
        path.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "record.json".into()),
        record::random::new_id()
    ));
    let result = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&tmp)
        .and_then(|mut f| std::io::Write::write_all(&mut f, format!("{json}\n").as_bytes()))
        .and_then(|_| std::fs::rename(&tmp, path))
        .with_context(|| format!("--json {}: cannot write", path.display()));
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

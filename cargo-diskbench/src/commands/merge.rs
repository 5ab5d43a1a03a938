//! `cargo diskbench merge`: add downloaded records (CI artifacts) to the results folder.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::PathBuf;

use anyhow::{Context, Result};
use site_gen::merge::{MergeOptions, MergeReport, merge};

#[derive(clap::Args, Debug)]
pub struct MergeArgs {
    /// The accumulated results folder; records are only ever added to it
    #[arg(long, value_name = "RESULTS_DIR")]
    pub into: PathBuf,
    /// Record files, or folders (searched recursively for *.json), e.g. downloaded artifacts
    #[arg(value_name = "SRC", required = true)]
    pub sources: Vec<PathBuf>,
    /// Comma-separated runner labels that were asked for; those with no record are reported
    #[arg(long, value_name = "LABELS", value_delimiter = ',')]
    pub expect: Vec<String>,
    /// Fail (exit 2) on a source file that is not a readable record, instead of skipping it
    #[arg(long)]
    pub strict: bool,
}

pub fn exec(args: MergeArgs) -> Result<()> {
    let expect: Vec<String> = args
        .expect
        .iter()
        .map(|l| l.trim().to_string())
        .filter(|l| !l.is_empty())
        .collect();
    super::destination::folder("--into", &args.into)?;
    super::destination::step_summary()?;
    let report = merge(&MergeOptions {
        into: args.into.clone(),
        sources: args.sources,
        expect,
        strict: args.strict,
    })?;
    print_report(&report);
    if let Some(path) = std::env::var_os("GITHUB_STEP_SUMMARY").filter(|p| !p.is_empty()) {
        let mut f = super::destination::open_step_summary(std::path::Path::new(&path))
            .with_context(|| format!("cannot open $GITHUB_STEP_SUMMARY ({})", path.display()))?;
        f.write_all(job_summary_markdown(&report).as_bytes())
            .with_context(|| format!("cannot write $GITHUB_STEP_SUMMARY ({})", path.display()))?;
    }
    Ok(())
}

fn print_report(report: &MergeReport) {
    for (src, dest) in &report.added {
        println!("added      {} -> {}", src.display(), dest.display());
    }
    for (src, same) in &report.duplicates {
        println!(
            "duplicate  {} (same record as {}): skipped",
            src.display(),
            same.display()
        );
    }
    for (src, reason) in &report.rejected {
        let line = format!("skipped    {}: {reason}", src.display());
        eprintln!("{}", crate::output::terminal_safe(&line));
    }
    for (path, reason) in &report.unreadable_existing {
        eprintln!(
            "warning: {} in the results folder is not readable ({reason}); left as it is",
            path.display()
        );
    }
    let in_actions = std::env::var_os("GITHUB_ACTIONS").is_some();
    for label in &report.missing {
        println!("missing    {label}: no record from this runner");
        if in_actions {
            // An annotation on the workflow run's page, where a missing runner is noticed.
            println!("::warning title=cargo-diskbench::runner {label} produced no record");
        }
    }
    println!(
        "{} added, {} duplicate(s), {} skipped, {} missing",
        report.added.len(),
        report.duplicates.len(),
        report.rejected.len(),
        report.missing.len()
    );
}

/// The merge's part of the job summary: what was added and which runners are missing.
fn job_summary_markdown(report: &MergeReport) -> String {
    use site_gen::job_summary::escape;
    let file = |p: &PathBuf| {
        escape(
            &p.file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
        )
    };
    let mut out = String::from("## cargo-diskbench: merged records\n\n");
    let _ = writeln!(
        out,
        "{} added, {} duplicate(s) skipped, {} bad file(s) skipped, {} runner(s) missing.\n",
        report.added.len(),
        report.duplicates.len(),
        report.rejected.len(),
        report.missing.len()
    );
    for (_, dest) in &report.added {
        let _ = writeln!(out, "- added {}", file(dest));
    }
    for (src, reason) in &report.rejected {
        let _ = writeln!(
            out,
            "- skipped {}: {}",
            escape(&src.display().to_string()),
            escape(reason)
        );
    }
    if !report.missing.is_empty() {
        let missing: Vec<String> = report.missing.iter().map(|l| escape(l)).collect();
        let _ = writeln!(
            out,
            "\n**Missing runners** (no record: the job failed, timed out or never started): {}",
            missing.join(", ")
        );
    }
    out.push('\n');
    out
}

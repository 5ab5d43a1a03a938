//! `cargo diskbench compare BASE NEW`: each figure of a runner's newer record against its
//! earlier ones, judged by the runner's own noise (`site_gen::history`). This module maps the
//! options and prints; the judging and the tables live in site-gen.

use std::io::Write as _;
use std::path::PathBuf;

use anyhow::{Context, Result};
use record::error::usage;
use site_gen::history::{Side, Verdict, compare_sides};

#[derive(clap::Args, Debug)]
pub struct CompareArgs {
    /// The earlier side: a record file, or a results folder (its records of a runner are that
    /// runner's history)
    #[arg(value_name = "BASE")]
    pub base: PathBuf,
    /// The newer side: a record file, or a results folder (the newest record of each runner)
    #[arg(value_name = "NEW")]
    pub new: PathBuf,
    /// Compare only the runner with this label
    #[arg(long, value_name = "TEXT")]
    pub label: Option<String>,
    /// Print the comparison as JSON instead of a table
    #[arg(long, conflicts_with = "markdown")]
    pub json: bool,
    /// Print the comparison as Markdown instead of a table
    #[arg(long)]
    pub markdown: bool,
    /// Exit 1 when any column or step is slower beyond its noise band (only "slower")
    #[arg(long, value_name = "slower")]
    pub fail_on: Option<String>,
}

pub fn exec(args: CompareArgs) -> Result<()> {
    if let Some(f) = args.fail_on.as_deref()
        && f != "slower"
    {
        return Err(usage(format!(
            "--fail-on {f}: unknown verdict; use --fail-on slower"
        )));
    }
    if let Some(l) = &args.label
        && l.trim().is_empty()
    {
        return Err(usage("--label: must not be empty"));
    }
    let (base, skipped_base) = Side::load("BASE", &args.base)?;
    let (new, skipped_new) = Side::load("NEW", &args.new)?;
    for (path, why) in skipped_base.iter().chain(&skipped_new) {
        eprintln!("warning: {} left out: {why}", path.display());
    }
    let comparisons = compare_sides(&base, &new, args.label.as_deref()).map_err(usage)?;
    let text = if args.json {
        format!(
            "{}\n",
            serde_json::to_string_pretty(&comparisons)
                .context("cannot serialise the comparison")?
        )
    } else if args.markdown {
        site_gen::compare_report::markdown(&comparisons, &[])
    } else {
        site_gen::compare_report::text(&comparisons)
    };
    crate::output::print(&text, false);
    let _ = std::io::stdout().flush();
    if args.fail_on.is_some() {
        let slower: Vec<String> = comparisons
            .iter()
            .flat_map(|c| {
                c.changes
                    .iter()
                    .filter(|x| x.verdict == Verdict::Slower)
                    .map(move |x| format!("{} on {}", x.name(), c.label))
            })
            .collect();
        if !slower.is_empty() {
            anyhow::bail!(
                "--fail-on slower: {} figure(s) slower beyond their noise band: {}",
                slower.len(),
                slower.join(", ")
            );
        }
    }
    Ok(())
}

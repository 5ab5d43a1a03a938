//! `cargo diskbench site`: render the report site from a results folder.

use std::path::PathBuf;

use anyhow::Result;

#[derive(clap::Args, Debug)]
pub struct SiteArgs {
    /// The folder of records (read recursively, never modified)
    #[arg(long, value_name = "DIR", default_value = record::results::DEFAULT_RESULTS_DIR)]
    pub results: PathBuf,
    /// Where the site is written (a new or empty folder, or an earlier site, which is replaced)
    #[arg(long, value_name = "DIR", default_value = record::results::DEFAULT_SITE_DIR)]
    pub out: PathBuf,
    /// A theme folder whose templates/ and assets/ files override the built-in ones
    #[arg(long, value_name = "DIR")]
    pub theme: Option<PathBuf>,
    /// A folder of *.md pages laid over the built-in ones (same name replaces)
    #[arg(long, value_name = "DIR")]
    pub content: Option<PathBuf>,
    /// Only count runs that started at most this many days before the newest run
    #[arg(long, value_name = "DAYS")]
    pub window_days: Option<u32>,
    /// Fail (exit code 2) if any record cannot be read, instead of leaving it out
    #[arg(long)]
    pub strict: bool,
}

pub fn exec(args: SiteArgs) -> Result<()> {
    super::destination::site_out("--out", &args.results, &args.out)?;
    let opts = site_gen::SiteOptions {
        results: args.results,
        out: args.out,
        theme: args.theme,
        strict: args.strict,
        window_days: args.window_days,
        content: args.content,
    };
    let report = site_gen::build_site(&opts).map_err(|e| {
        // The site has no test files and writes no record: say what it did instead. A signal
        // is only acted on before the new site replaces the earlier one.
        if record::error::exit_code(&e) == record::exit::INTERRUPTED {
            record::error::interrupted_having(format!(
                "the unfinished new site was removed; {} was left as it was{}",
                opts.out.display(),
                if opts.out.exists() {
                    ""
                } else {
                    " (not created)"
                }
            ))
        } else {
            e
        }
    })?;
    for (path, why) in &report.skipped {
        // File names in a downloaded results folder are data too: no raw control characters.
        let line = format!("warning: left out {}: {why}", path.display());
        eprintln!("{}", crate::output::terminal_safe(&line));
    }
    for w in &report.warnings {
        eprintln!("{}", crate::output::terminal_safe(&format!("warning: {w}")));
    }
    eprintln!(
        "site: {} records, {} left out, {} pages written to {}",
        report.records,
        report.skipped.len(),
        report.pages,
        opts.out.display()
    );
    Ok(())
}

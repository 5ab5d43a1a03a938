//! `cargo diskbench site`: render the report site from a results folder.

use std::path::PathBuf;

use anyhow::Result;

#[derive(clap::Args, Debug)]
pub struct SiteArgs {
    /// The folder of records (read recursively, never modified)
    #[arg(long, value_name = "DIR", default_value = record::results::DEFAULT_RESULTS_DIR)]
    pub results: PathBuf,
    /// Where the site is written (a new or empty folder, or an earlier site, which is replaced)
    #[arg(
        long,
        value_name = "DIR",
        default_value = record::results::DEFAULT_SITE_DIR,
        long_help = "Where the site is written: a new or empty folder, or an earlier site, which \
                     is replaced (files it did not write, such as CNAME and .git, are kept); never \
                     inside --results nor holding it"
    )]
    pub out: PathBuf,
    /// A theme folder whose templates/ and assets/ files override the built-in ones
    #[arg(long, value_name = "DIR")]
    pub theme: Option<PathBuf>,
    /// A folder of *.md pages laid over the built-in ones (same name replaces)
    #[arg(
        long,
        value_name = "DIR",
        long_help = "A folder of *.md pages laid over the built-in ones (the same name replaces); \
                     a page may call the placeholders the report-site page lists"
    )]
    pub content: Option<PathBuf>,
    /// Only count runs that started at most this many days before the newest run
    #[arg(long, value_name = "DAYS")]
    pub window_days: Option<u32>,
    /// Fail (exit code 2) if any record cannot be read, instead of leaving it out
    #[arg(long)]
    pub strict: bool,
}

/// Every command and its options as the options page lists them, read from the clap
/// definition, so the page and `--help` cannot drift apart.
pub fn command_docs() -> Vec<site_gen::CommandDoc> {
    use clap::CommandFactory;
    let mut cargo = crate::cli::Cargo::command();
    cargo.build();
    let Some(diskbench) = cargo.find_subcommand("diskbench") else {
        return Vec::new();
    };
    diskbench
        .get_subcommands()
        // clap's own `help` command is `--help` by another name.
        .filter(|sub| sub.get_name() != "help" && !sub.is_hide_set())
        .map(|sub| site_gen::CommandDoc {
            name: sub.get_name().to_string(),
            about: sub.get_about().map(|a| a.to_string()).unwrap_or_default(),
            options: sub
                .get_arguments()
                .filter(|a| !a.is_positional() && !a.is_hide_set() && a.get_id() != "help")
                .map(option_doc)
                .collect(),
        })
        .collect()
}

fn option_doc(arg: &clap::Arg) -> site_gen::OptionDoc {
    let value = match arg.get_value_names() {
        Some(names) if arg.get_action().takes_values() => {
            let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
            format!(" {}", names.join(" "))
        }
        _ => String::new(),
    };
    let mut names: Vec<String> = arg
        .get_short()
        .map(|s| format!("-{s}"))
        .into_iter()
        .collect();
    names.extend(arg.get_long().map(|l| format!("--{l}{value}")));
    names.extend(
        arg.get_visible_aliases()
            .into_iter()
            .flatten()
            .map(|a| format!("--{a}")),
    );
    let defaults: Vec<String> = arg
        .get_default_values()
        .iter()
        .map(|v| v.to_string_lossy().into_owned())
        .collect();
    // A flag's implied `false` is no default to show (`--help` shows none either).
    let shown = arg.get_action().takes_values() && !arg.is_hide_default_value_set();
    site_gen::OptionDoc {
        names,
        default: (shown && !defaults.is_empty()).then(|| defaults.join(",")),
        help: arg
            .get_long_help()
            .or(arg.get_help())
            .map(|h| h.to_string())
            .unwrap_or_default(),
    }
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
        commands: command_docs(),
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
    if std::env::var_os("DISKBENCH_SITE_TIMING").is_some() {
        for (what, s) in &report.timings {
            eprintln!("timing: {what} at {s:.3} s");
        }
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

//! Argument parsing. Each subcommand's options live beside its code in `commands/`.

use std::ffi::OsString;

use anyhow::Result;
use clap::{Parser, Subcommand};

use crate::commands;

/// Cargo runs `cargo-diskbench diskbench ARGS`; people also run `cargo-diskbench ARGS`.
#[derive(Parser, Debug)]
#[command(name = "cargo", bin_name = "cargo")]
pub enum Cargo {
    /// Measure this machine's disk and what it costs real build steps
    #[command(version, args_conflicts_with_subcommands = true)]
    Diskbench(Diskbench),
}

#[derive(clap::Args, Debug)]
pub struct Diskbench {
    #[command(subcommand)]
    pub command: Option<Command>,
    /// Options of `run` (the default command)
    #[command(flatten)]
    pub run: commands::run::RunArgs,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run the six-column suite and the build steps; write a record (the default)
    Run(commands::run::RunArgs),
    /// Time only the real build steps
    Steps(commands::steps::StepsArgs),
    /// Run one job given in fio's own option syntax, or fio job files
    Fio(commands::fio::FioArgs),
    /// ioping's latency probe: one request a second, ioping's lines and summary
    Ioping(commands::ioping::IopingArgs),
    /// Read a block device (never write it): first and second pass, sequential and random
    Device(commands::device::DeviceArgs),
    /// Render the report site from a results folder
    Site(commands::site::SiteArgs),
    /// Turn fio JSON output or a CSV of published figures into records
    Import(commands::import::ImportArgs),
    /// Print what the tool detects about this machine and its storage
    Machine(commands::machine::MachineArgs),
    /// Add downloaded records (CI artifacts) to a results folder; never overwrites
    Merge(commands::merge::MergeArgs),
    /// Compare a runner's newer record with its earlier ones: faster, slower or within noise
    Compare(commands::compare::CompareArgs),
}

/// Insert the `diskbench` word when the binary is run directly as `cargo-diskbench ...`.
pub fn normalized_args(args: impl IntoIterator<Item = OsString>) -> Vec<OsString> {
    let mut args: Vec<OsString> = args.into_iter().collect();
    if args.get(1).map(|a| a != "diskbench").unwrap_or(true) {
        args.insert(1, "diskbench".into());
    }
    args
}

pub fn dispatch(cli: Cargo) -> Result<()> {
    let Cargo::Diskbench(d) = cli;
    match d.command {
        None => commands::run::exec(d.run),
        Some(Command::Run(a)) => commands::run::exec(a),
        Some(Command::Steps(a)) => commands::steps::exec(a),
        Some(Command::Fio(a)) => commands::fio::exec(a),
        Some(Command::Device(a)) => commands::device::exec(a),
        Some(Command::Ioping(a)) => commands::ioping::exec(a),
        Some(Command::Site(a)) => commands::site::exec(a),
        Some(Command::Import(a)) => commands::import::exec(a),
        Some(Command::Machine(a)) => commands::machine::exec(a),
        Some(Command::Merge(a)) => commands::merge::exec(a),
        Some(Command::Compare(a)) => commands::compare::exec(a),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_definition_is_consistent() {
        Cargo::command().debug_assert();
    }

    /// Every default `--help` shows is its constant's value, and no help text types a
    /// default of its own (a typed default drifts from the constant).
    #[test]
    fn help_shows_each_default_equal_to_its_constant() {
        use crate::commands::device;
        use engine::experiments::what_if::options as what_if;
        use engine::steps::{cargo_build, docker_build, sqlite};
        use engine::suite;
        use record::results::{DEFAULT_RESULTS_DIR, DEFAULT_SITE_DIR};
        let what_if_cases = |command: &'static str| {
            [
                (command, "cap-iops", what_if::DEFAULT_CAP_IOPS.to_string()),
                (command, "cap-mib-s", what_if::DEFAULT_CAP_MIB_S.to_string()),
                (
                    command,
                    "what-if-budget-s",
                    what_if::DEFAULT_BUDGET_S.to_string(),
                ),
            ]
        };
        let mut cases = vec![
            (
                "run",
                "size",
                record::size::tool_size_text(suite::DEFAULT_SIZE),
            ),
            ("run", "repeat", suite::DEFAULT_REPEAT.to_string()),
            ("run", "results", DEFAULT_RESULTS_DIR.to_string()),
            ("run", "site-out", DEFAULT_SITE_DIR.to_string()),
            ("steps", "results", DEFAULT_RESULTS_DIR.to_string()),
            (
                "steps",
                "crate-modules",
                cargo_build::DEFAULT_MODULES.to_string(),
            ),
            (
                "steps",
                "docker-context-mib",
                docker_build::DEFAULT_CONTEXT_MIB.to_string(),
            ),
            (
                "steps",
                "sqlite-transactions",
                sqlite::DEFAULT_TRANSACTIONS.to_string(),
            ),
            ("site", "results", DEFAULT_RESULTS_DIR.to_string()),
            ("site", "out", DEFAULT_SITE_DIR.to_string()),
            ("import", "results", DEFAULT_RESULTS_DIR.to_string()),
            ("device", "offset", device::DEFAULT_OFFSET.to_string()),
            ("device", "size", device::DEFAULT_REGION.to_string()),
            ("device", "runtime", device::DEFAULT_RUNTIME_S.to_string()),
        ];
        cases.extend(what_if_cases("run"));
        cases.extend(what_if_cases("steps"));

        let mut cargo = Cargo::command();
        cargo.build();
        let diskbench = cargo.find_subcommand_mut("diskbench").unwrap();
        for (command, long, want) in &cases {
            let sub = diskbench.find_subcommand_mut(command).unwrap();
            let help = sub.render_long_help().to_string();
            let start = help
                .find(&format!("--{long} "))
                .unwrap_or_else(|| panic!("{command} --help has no --{long}:\n{help}"));
            let entry = &help[start..];
            let entry = &entry[..entry.find("\n  -").unwrap_or(entry.len())];
            assert!(
                entry.contains(&format!("[default: {want}]")),
                "{command} --{long}: the help shows no default {want}:\n{entry}"
            );
        }
        for sub in diskbench.get_subcommands() {
            for arg in sub.get_arguments() {
                for text in [arg.get_help(), arg.get_long_help()].into_iter().flatten() {
                    let text = text.to_string();
                    assert!(
                        !text.contains("default:"),
                        "{} --{}: a default typed into the help text: {text}",
                        sub.get_name(),
                        arg.get_id()
                    );
                }
                // A default is shown by clap only when it comes from the definition.
                if !arg.get_default_values().is_empty()
                    && arg.get_action().takes_values()
                    && !arg.is_hide_set()
                {
                    let long = arg.get_long().unwrap_or_default();
                    assert!(
                        cases
                            .iter()
                            .any(|(c, l, _)| *c == sub.get_name() && *l == long),
                        "{} --{long}: a default no test compares with its constant",
                        sub.get_name()
                    );
                }
            }
        }
    }

    #[test]
    fn direct_invocation_gets_the_subcommand_word() {
        let a = normalized_args(["cargo-diskbench".into(), "site".into()]);
        assert_eq!(a[1], "diskbench");
        let b = normalized_args(["cargo-diskbench".into(), "diskbench".into()]);
        assert_eq!(b.len(), 2);
    }
}

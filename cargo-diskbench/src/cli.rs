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

    #[test]
    fn direct_invocation_gets_the_subcommand_word() {
        let a = normalized_args(["cargo-diskbench".into(), "site".into()]);
        assert_eq!(a[1], "diskbench");
        let b = normalized_args(["cargo-diskbench".into(), "diskbench".into()]);
        assert_eq!(b.len(), 2);
    }
}

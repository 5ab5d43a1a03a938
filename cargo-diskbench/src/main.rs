//! `cargo diskbench`: the thin command line over the engine and site-gen libraries.

mod cli;
mod commands;
mod output;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    engine::cancel::install_handler();
    let cli = match cli::Cargo::try_parse_from(cli::normalized_args(std::env::args_os())) {
        Ok(cli) => cli,
        Err(e) => {
            // clap prints help/version to stdout (exit 0) and usage errors to stderr (exit 2).
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { 2 } else { 0 });
        }
    };
    match cli::dispatch(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("Error: {err:#}");
            ExitCode::from(engine::error::exit_code(&err) as u8)
        }
    }
}

//! `cargo diskbench`: the thin command line over the engine and site-gen libraries.

mod cli;
mod commands;
mod output;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    engine::cancel::install_handler();
    quiet_on_closed_stdout();
    let cli = match cli::Cargo::try_parse_from(cli::normalized_args(std::env::args_os())) {
        Ok(cli) => cli,
        Err(e) => {
            // Our value parsers name the option and its range themselves: print that one line,
            // like every other usage error, instead of clap's three.
            if e.kind() == clap::error::ErrorKind::ValueValidation
                && let Some(why) = std::error::Error::source(&e).map(|s| s.to_string())
                && why.starts_with("--")
            {
                eprintln!("Error: {why}");
                return ExitCode::from(2);
            }
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

/// `print!` panics when stdout is gone: `cargo diskbench fio --help | head` closes the pipe,
/// `> /dev/full` fills it. Neither is a bug worth a backtrace: a closed pipe exits quietly
/// with 141 (128 + SIGPIPE, what a shell reports for tools killed by it), any other write
/// error says what failed and exits 1. Both are non-zero, so a caller never takes a cut-off
/// report for a whole one.
fn quiet_on_closed_stdout() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let msg = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or("");
        if msg.starts_with("failed printing to std") {
            if msg.contains("Broken pipe") {
                std::process::exit(141);
            }
            use std::io::Write as _;
            let _ = writeln!(std::io::stderr(), "Error: {msg}");
            std::process::exit(1);
        }
        default(info);
    }));
}

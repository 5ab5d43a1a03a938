//! `cargo diskbench`: the thin command line over the engine and site-gen libraries.

mod cli;
mod commands;
mod output;

use std::io::Write as _;
use std::process::ExitCode;

use clap::Parser;
use record::exit;

fn main() -> ExitCode {
    record::cancel::install_handler();
    // What the engine says outside a session's callback (a guard's warning while unwinding).
    engine::session::install_sink(output::say);
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
                return code(exit::USAGE);
            }
            // clap prints help/version to stdout (exit 0) and usage errors to stderr (exit 2).
            let _ = e.print();
            return code(if e.use_stderr() {
                exit::USAGE
            } else {
                exit::OK
            });
        }
    };
    // A failed print panics (see `quiet_on_closed_stdout`); the panic unwinds, so every guard on
    // the way out runs (test files, cgroups, a daemon's limits, a tmpfs) before the exit code
    // is chosen here.
    match std::panic::catch_unwind(|| cli::dispatch(cli)) {
        Ok(Ok(())) => code(exit::OK),
        Ok(Err(err)) => {
            let _ = writeln!(std::io::stderr(), "Error: {err:#}");
            code(record::error::exit_code(&err))
        }
        Err(payload) => match print_failure(payload.as_ref()) {
            Some(msg) if msg.contains("Broken pipe") => code(exit::STDOUT_CLOSED),
            Some(msg) => {
                let _ = writeln!(std::io::stderr(), "Error: {msg}");
                code(exit::FAILED)
            }
            None => std::panic::resume_unwind(payload),
        },
    }
}

/// The process exit code for one of [`record::exit`]'s codes (all of them fit in a byte).
fn code(c: i32) -> ExitCode {
    ExitCode::from(u8::try_from(c).unwrap_or(1))
}

/// The message of a panic raised by a failed `print!`/`eprint!`, if that is what it was.
fn print_failure(payload: &(dyn std::any::Any + Send)) -> Option<&str> {
    payload
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| payload.downcast_ref::<&str>().copied())
        .filter(|m| m.starts_with("failed printing to std"))
}

/// `print!` panics when stdout is gone: `cargo diskbench fio --help | head` closes the pipe,
/// `> /dev/full` fills it. Neither is a bug worth a backtrace: a closed pipe exits quietly
/// with `exit::STDOUT_CLOSED` (141: 128 + SIGPIPE, what a shell reports for tools killed by it), any other write
/// error says what failed and exits 1. Both are non-zero, so a caller never takes a cut-off
/// report for a whole one.
fn quiet_on_closed_stdout() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if let Some(msg) = print_failure(info.payload()) {
            // No backtrace, and no exit here: stop the work (I/O threads check the flag) and
            // let the panic unwind through the guards; `main` picks the exit code. The stream
            // that failed now goes to /dev/null, so a guard that prints on the way out cannot
            // panic again (a second panic while unwinding would abort and skip the rest).
            record::cancel::request();
            silence(if msg.contains("stdout") { 1 } else { 2 });
            return;
        }
        default(info);
    }));
}

/// Point file descriptor `fd` at /dev/null.
fn silence(fd: libc::c_int) {
    // SAFETY: a NUL-terminated path; dup2 onto a standard descriptor and close of our own one.
    unsafe {
        let null = libc::open(c"/dev/null".as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if null >= 0 {
            libc::dup2(null, fd);
            libc::close(null);
        }
    }
}

//! Every exit code the tool uses, each a documented constant (CONTRACT section 3). The site's
//! exit-code table is printed from [`ALL`].

/// Success.
pub const OK: i32 = 0;
/// The run failed: an I/O error, disk full, a required step failed; `compare --fail-on` found
/// what it was told to fail on.
pub const FAILED: i32 = 1;
/// Bad usage or bad input; the message names the option or file and what to do.
pub const USAGE: i32 = 2;
/// Interrupted (Ctrl-C or SIGTERM): what the command had started undone (test files removed,
/// no record written; `site` removes its unfinished new site).
pub const INTERRUPTED: i32 = 130;
/// Standard output was closed (e.g. piped into `head`): the command stops quietly, 128 +
/// SIGPIPE as a shell reports a tool killed by it, so a cut-off report is never taken for a
/// whole one.
pub const STDOUT_CLOSED: i32 = 141;

/// Each code with its meaning, in order.
pub const ALL: &[(i32, &str)] = &[
    (OK, "success"),
    (
        FAILED,
        "the run failed (an I/O error, disk full, a step the user required failed)",
    ),
    (
        USAGE,
        "bad usage or bad input: the message names the option or file and what to do",
    ),
    (
        INTERRUPTED,
        "interrupted (Ctrl-C, SIGTERM): what the command had started was undone (run, steps: test files removed, no record written; site: its unfinished new site removed, the folder given to --out left as it was)",
    ),
    (
        STDOUT_CLOSED,
        "standard output was closed (piped into `head`): the command stopped quietly",
    ),
];

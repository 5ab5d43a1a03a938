//! Hardening: each class of fault a hostile user found, tried in several variants.
//! One file per class; each test named on `site-gen/content/guarantees.md` lives in the file of
//! its class.
//!
//! Every test works in a sandbox folder and snapshots the whole tree around the folder an
//! option names, before and after: nothing may appear, change or vanish outside it. Commands
//! that could hang on old code (a FIFO, /dev/zero, an endless chart loop) run under a time
//! limit and an address-space limit, so a regression fails the test instead of the machine.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use record::Record;
use site_gen::testdata::Fleet;

use crate::common;
use crate::common::tree::snapshot as tree;
use crate::common::{Mounted, mkfifo, sandbox};

/// Class 6: bad input is refused where it is read; readers never panic.
mod bad_input;
/// Class 5: every destination is checked before anything is measured.
mod destinations;
/// Class 7: importing the same figures twice adds nothing.
mod duplicates;
/// Class 1: file names built from data stay inside their folder.
mod safe_names;
/// Class 4: signals and hangs: every command stops, leaving a record only on success.
mod signals;
/// Class 3: the results and an earlier site are never lost.
mod site_folder;
/// Class 2: inputs and test files that are not regular files.
mod special_files;
/// Class 8: what a run meets around it: option ranges, closed pipes, leftovers, ramfs.
mod surroundings;

/// What a command did.
struct Ran {
    code: Option<i32>,
    stderr: String,
    timed_out: bool,
}

impl Ran {
    fn context(&self) -> String {
        format!(
            "exit {:?}, timed out {}\nstderr: {}",
            self.code, self.timed_out, self.stderr
        )
    }
}

/// Run `cmd` with a time limit and a 2 GiB address-space limit (so reading /dev/zero cannot
/// take the machine's memory). Output goes to files, so a full pipe never blocks it.
fn run_limited(mut cmd: Command, limit: Duration) -> Ran {
    let logs = tempfile::tempdir().unwrap();
    let err_path = logs.path().join("stderr");
    cmd.stdin(Stdio::null())
        .stdout(std::fs::File::create(logs.path().join("stdout")).unwrap())
        .stderr(std::fs::File::create(&err_path).unwrap());
    // SAFETY: setrlimit is async-signal-safe and touches only the child's own limits.
    unsafe {
        cmd.pre_exec(|| {
            let lim = libc::rlimit {
                rlim_cur: 2 << 30,
                rlim_max: 2 << 30,
            };
            libc::setrlimit(libc::RLIMIT_AS, &lim);
            Ok(())
        });
    }
    let mut child = cmd.spawn().expect("cannot start cargo-diskbench");
    let start = Instant::now();
    let (code, timed_out) = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break (status.code(), false);
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            break (None, true);
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Ran {
        code,
        stderr: std::fs::read_to_string(&err_path).unwrap_or_default(),
        timed_out,
    }
}

fn cmd_in(dir: &Path, args: &[&str]) -> Command {
    let mut c = common::bin();
    c.current_dir(dir)
        .args(args)
        .env_remove("GITHUB_STEP_SUMMARY");
    c
}

const LIMIT: Duration = Duration::from_secs(120);

/// `cmd_in(dir, args)` under the limits.
fn run_in(dir: &Path, args: &[&str]) -> Ran {
    run_limited(cmd_in(dir, args), LIMIT)
}

/// Run `args` in `cwd`, expecting exit 0 and nothing changed below `around` outside `inside`
/// (the folder the command was told to write).
fn run_writing_only_inside(around: &Path, cwd: &Path, args: &[&str], inside: &Path) -> Ran {
    let before = common::tree::snapshot(around, &[inside]);
    let ran = run_in(cwd, args);
    assert_eq!(ran.code, Some(0), "{args:?}: {}", ran.context());
    assert_eq!(
        before,
        common::tree::snapshot(around, &[inside]),
        "{args:?} wrote outside {}",
        inside.display()
    );
    ran
}

/// The quickest `run` that measures one column in `dir` and keeps its record in `results`:
/// append what the test varies (the settings: [`common::QUICK_RUN_ARGS`]).
fn quick_run<'a>(dir: &'a str, results: &'a str, only: &'a str) -> Vec<&'a str> {
    let mut args = vec!["run", "--dir", dir, "--results", results];
    args.extend(common::QUICK_RUN_ARGS);
    args.extend(["--only", only, "--no-steps", "--quiet"]);
    args
}

/// How many entries `dir` holds (0 when it does not exist).
fn count_entries(dir: &Path) -> usize {
    std::fs::read_dir(dir).map(|d| d.count()).unwrap_or(0)
}

fn write_records(dir: &Path, records: &[Record]) {
    std::fs::create_dir_all(dir).unwrap();
    for r in records {
        record::results::write_record(dir, r).unwrap();
    }
}

/// A few good records with steps (so the steps page draws its scatters).
fn some_records() -> Vec<Record> {
    common::fixture::records(12)
}

/// Plain `*.json` names directly in `dir` (what the writer may create there).
fn assert_plain_records_only(dir: &Path) {
    for e in std::fs::read_dir(dir).unwrap() {
        let e = e.unwrap();
        let name = e.file_name().to_string_lossy().into_owned();
        assert!(
            e.file_type().unwrap().is_file() && name.ends_with(".json") && !name.starts_with('.'),
            "unexpected entry {name:?} in {}",
            dir.display()
        );
    }
}

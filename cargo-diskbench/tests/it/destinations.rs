//! Destinations that could block: a FIFO, a socket or a block device as
//! `--json`, `--markdown`, fio's `--output` or `$GITHUB_STEP_SUMMARY` is refused before
//! anything runs (exit 2, naming the option), instead of an open that waits for a reader
//! with signals unanswered and leaves the record or the test files behind.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{self, sandbox};

fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

/// Run `cmd` for at most a minute (a regression blocks in open(2) forever): exit code, stderr.
fn run_bounded(mut cmd: Command) -> (Option<i32>, String) {
    let logs = tempfile::tempdir().unwrap();
    let err = logs.path().join("stderr");
    cmd.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&err).unwrap());
    let mut child = cmd.spawn().unwrap();
    let start = Instant::now();
    let code = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s.code();
        }
        if start.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    (code, std::fs::read_to_string(&err).unwrap_or_default())
}

/// `run` with its test files in `dir`, its record in `results`, no site, then `extra`.
fn run_args<'a>(dir: &'a str, results: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec!["run", "--dir", dir, "--results", results, "--no-site"];
    args.extend_from_slice(extra);
    args
}

#[test]
fn blocking_destinations_are_refused_before_anything_runs() {
    let sb = sandbox();
    let fifo = sb.path().join("pipe");
    mkfifo(&fifo);
    let socket_path = sb.path().join("sock");
    let _socket = std::os::unix::net::UnixListener::bind(&socket_path).unwrap();
    let dir = sb.path().join("work");
    std::fs::create_dir(&dir).unwrap();
    let res = sb.path().join("res");
    let (f, s) = (fifo.to_str().unwrap(), socket_path.to_str().unwrap());
    let d = dir.to_str().unwrap();
    let r = res.to_str().unwrap();
    let output = format!("--output={f}");
    let directory = format!("--directory={d}");
    let results = format!("--results={r}");
    let cases: Vec<(Vec<&str>, Option<&str>, &str)> = vec![
        (vec!["steps", "--dir", d, "--json", f], None, "--json"),
        (vec!["steps", "--dir", d, "--json", s], None, "--json"),
        (run_args(d, r, &["--json", f]), None, "--json"),
        (run_args(d, r, &["--markdown", f]), None, "--markdown"),
        (run_args(d, r, &["--markdown", s]), None, "--markdown"),
        (run_args(d, r, &[]), Some(f), "$GITHUB_STEP_SUMMARY"),
        (
            vec!["merge", "--into", r, d],
            Some(f),
            "$GITHUB_STEP_SUMMARY",
        ),
        (
            vec![
                "fio",
                "--name=t",
                &directory,
                "--rw=read",
                "--size=1M",
                &output,
                &results,
            ],
            None,
            "--output",
        ),
    ];
    for (args, summary, option) in cases {
        let mut cmd = common::bin();
        cmd.current_dir(sb.path()).args(&args);
        match summary {
            Some(p) => cmd.env("GITHUB_STEP_SUMMARY", p),
            None => cmd.env_remove("GITHUB_STEP_SUMMARY"),
        };
        let (code, stderr) = run_bounded(cmd);
        assert_ne!(code, None, "{args:?}: blocked on the destination");
        assert_eq!(code, Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.contains(option) && (stderr.contains("FIFO") || stderr.contains("socket")),
            "{args:?}: the refusal names {option} and what it is: {stderr}"
        );
        assert_eq!(
            std::fs::read_dir(&dir).unwrap().count(),
            0,
            "{args:?}: test files made"
        );
        assert!(!res.exists(), "{args:?}: a results folder made");
        use std::os::unix::fs::FileTypeExt as _;
        assert!(
            std::fs::symlink_metadata(&fifo)
                .unwrap()
                .file_type()
                .is_fifo(),
            "{args:?}: the FIFO was replaced"
        );
    }
}

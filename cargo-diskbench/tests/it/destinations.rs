//! Destinations that could block: a FIFO, a socket or a block device as
//! `--json`, `--markdown`, fio's `--output` or `$GITHUB_STEP_SUMMARY` is refused before
//! anything runs (exit 2, naming the option), instead of an open that waits for a reader
//! with signals unanswered and leaves the record or the test files behind.

use std::time::Duration;

use crate::common::{self, mkfifo, sandbox};

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
            [
                &common::args("fio --name=t --rw=read --size=1M"),
                &[&*directory, &output, &results][..],
            ]
            .concat(),
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
        // At most a minute: a regression blocks in open(2) forever.
        let (code, stderr) = common::bounded(cmd, Duration::from_secs(60));
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

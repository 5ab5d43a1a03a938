//! Integration tests: everything GitHub. The job summary (insta snapshots under
//! `github/snapshots/`), `cargo diskbench merge` as the benchmark workflow runs it, the data
//! branch script against local bare remotes, the composite action's steps run as the runner
//! runs them (a sudo stand-in, a loopback download server), the release scripts, and the
//! workflow files' shape (tokens, pins, retention).
//!
//! Snapshots: after an intended change run `cargo insta review` (or `INSTA_UPDATE=always`)
//! and commit the `.snap` files; with `CI` set a missing or different snapshot fails.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use record::Record;

use crate::common;

mod action;
mod compare;
mod merge;
mod publish;
mod records;
mod release;
mod summary;
mod workflows;

/// A file under `.github/`.
fn github_file(rel: &str) -> String {
    let path = common::repo_root().join(".github").join(rel);
    fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The `run:` script of the step with `id: <id>` in a workflow or action file, dedented as the
/// runner runs it.
fn step_script(file_text: &str, id: &str) -> String {
    let lines: Vec<&str> = file_text.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.trim() == format!("id: {id}"))
        .unwrap_or_else(|| panic!("no step with id {id}"));
    let run = (at..lines.len())
        .find(|&i| lines[i].trim() == "run: |")
        .expect("the step has a run: | block");
    let key_indent = lines[run].len() - lines[run].trim_start().len();
    let body: Vec<&str> = lines[run + 1..]
        .iter()
        .take_while(|l| l.trim().is_empty() || l.len() - l.trim_start().len() > key_indent)
        .copied()
        .collect();
    let indent = body
        .iter()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.len() - l.trim_start().len())
        .min()
        .unwrap();
    body.iter()
        .map(|l| l.get(indent..).unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every file below `dir` (relative path -> bytes).
fn tree(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    common::tree::contents(dir)
        .into_iter()
        .map(|(p, bytes)| (p.display().to_string(), bytes))
        .collect()
}

/// A record as a runner uploads it: pretty (with a final newline) or compact.
fn write_json(path: &Path, record: &Record, pretty: bool) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    let text = if pretty {
        serde_json::to_string_pretty(record).unwrap() + "\n"
    } else {
        serde_json::to_string(record).unwrap()
    };
    fs::write(path, text).unwrap();
}

/// `git ARGS` in `dir`, with no configuration of this machine's (hooks, identity) and the
/// default branch `main`; panics on failure, returns stdout.
fn git(dir: &Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .current_dir(dir)
        .args([
            "-c",
            "user.name=test",
            "-c",
            "user.email=test@example.invalid",
        ])
        .args([
            "-c",
            "init.defaultBranch=main",
            "-c",
            "advice.detachedHead=false",
        ])
        .args(args)
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?} in {}: {}",
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// An executable script at `path`.
fn write_script(path: &Path, text: &str) {
    use std::os::unix::fs::PermissionsExt;
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
    fs::set_permissions(path, fs::Permissions::from_mode(0o755)).unwrap();
}

/// `dir` in front of this process's PATH.
fn path_with(dir: &Path) -> String {
    format!(
        "{}:{}",
        dir.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

/// The key=value lines a step wrote to $GITHUB_OUTPUT.
fn outputs(file: &Path) -> BTreeMap<String, String> {
    fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// stdout and stderr of a finished process, in that order.
fn output_text(out: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// What a step's script did: its exit code, its output, and what it wrote to $GITHUB_OUTPUT.
struct StepRun {
    code: i32,
    text: String,
    outputs: BTreeMap<String, String>,
}

/// Runs the `run:` script of the step with `id: <id>` in `file` (under `.github/`) as the
/// runner does (`bash --noprofile --norc -eo pipefail`, or `python3` for `shell: python`), in
/// `cwd`, with a $GITHUB_OUTPUT of its own and `env` on top of this process's environment.
fn run_step(file: &str, id: &str, program: &str, cwd: &Path, env: &[(&str, &str)]) -> StepRun {
    let script = step_script(&github_file(file), id);
    let scratch = tempfile::tempdir().unwrap();
    let output_file = scratch.path().join("github-output");
    // bash by its absolute path: a test may give the step a PATH without it.
    let mut cmd = if program == "python3" {
        let mut c = std::process::Command::new("python3");
        c.args(["-c", &script]);
        c
    } else {
        let mut c = std::process::Command::new("/bin/bash");
        c.args(["--noprofile", "--norc", "-eo", "pipefail", "-c", &script]);
        c
    };
    cmd.current_dir(cwd)
        .env("GITHUB_OUTPUT", &output_file)
        .env_remove("GITHUB_ACTIONS")
        .env_remove("GITHUB_STEP_SUMMARY");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    StepRun {
        code: out.status.code().unwrap_or(-1),
        text: output_text(&out),
        outputs: outputs(&output_file),
    }
}

//! The data branch: `.github/scripts/publish-records.sh` against a local bare `origin`, as
//! the benchmark workflow's merge job (fetch, merge: read-only, runs cargo-diskbench) and push
//! job (push: git alone, the only one with the token) run it.

use std::fs;
use std::path::{Path, PathBuf};

use record::results::file_name;

use super::records::normal_record;
use super::{git, output_text, write_json};
use crate::common;

/// The folder the test binary's cargo-diskbench is in.
fn tool_dir() -> String {
    Path::new(env!("CARGO_BIN_EXE_cargo-diskbench"))
        .parent()
        .unwrap()
        .display()
        .to_string()
}

/// A code repository with a bare `origin` and a clone to publish from, as the merge job has.
struct DataRemote {
    tmp: tempfile::TempDir,
    origin: PathBuf,
    work: PathBuf,
}

impl DataRemote {
    fn new() -> Self {
        let tmp = tempfile::tempdir().unwrap();
        let origin = tmp.path().join("origin.git");
        let work = tmp.path().join("work");
        fs::create_dir_all(&origin).unwrap();
        git(&origin, &["init", "--quiet", "--bare"]);
        git(
            tmp.path(),
            &["clone", "--quiet", origin.to_str().unwrap(), "work"],
        );
        fs::write(work.join("README.md"), "code\n").unwrap();
        git(&work, &["add", "README.md"]);
        git(&work, &["commit", "--quiet", "-m", "code"]);
        git(
            &work,
            &["push", "--quiet", "origin", "HEAD:refs/heads/main"],
        );
        DataRemote { tmp, origin, work }
    }

    /// Another clone of the code, as a job of its own checks it out.
    fn clone(&self, name: &str) -> PathBuf {
        git(
            self.tmp.path(),
            &["clone", "--quiet", self.origin.to_str().unwrap(), name],
        );
        self.tmp.path().join(name)
    }

    /// A pre-push hook (in the clone the script pushes from) running `script`.
    fn pre_push_hook(&self, clone: &Path, script: &str) {
        super::write_script(
            &clone.join(".git/hooks/pre-push"),
            &format!("#!/bin/sh\n{script}"),
        );
    }

    /// Another run's record, committed in a clone of the data branch of its own (`other`) and
    /// not pushed yet.
    fn other_run(&self, record: &record::Record) -> PathBuf {
        git(
            self.tmp.path(),
            &[
                "clone",
                "--quiet",
                "--branch",
                "data",
                self.origin.to_str().unwrap(),
                "other",
            ],
        );
        let other = self.tmp.path().join("other");
        write_json(&other.join("results").join(file_name(record)), record, true);
        git(&other, &["add", "results"]);
        git(&other, &["commit", "--quiet", "-m", "their run"]);
        other
    }

    /// Runs publish-records.sh with `args` in `clone` with `path` as PATH and `env`; returns
    /// whether it succeeded, its output and what it added to the job summary.
    fn run_in(
        &self,
        clone: &Path,
        args: &[&str],
        path: &str,
        env: &[(&str, &str)],
    ) -> (bool, String, String) {
        let script = common::repo_root().join(".github/scripts/publish-records.sh");
        let summary = self.tmp.path().join("step-summary.md");
        let _ = fs::remove_file(&summary);
        let mut cmd = std::process::Command::new("bash");
        cmd.arg(&script)
            .args(args)
            .current_dir(clone)
            .env("PATH", path)
            .env("RETRY_DELAY_S", "0")
            // The machine's git configuration (a global core.hooksPath, say) must not change
            // what this test does.
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("MARKER", self.tmp.path().join("hook-ran"))
            .env("OTHER", self.tmp.path().join("other"))
            .env("GITHUB_STEP_SUMMARY", &summary)
            .env_remove("GITHUB_ACTIONS")
            .env_remove("DATA_PUSH_TOKEN")
            .env_remove("DATA_HANDOFF_DIR");
        for (k, v) in env {
            cmd.env(k, v);
        }
        let out = cmd.output().unwrap();
        let summary = fs::read_to_string(&summary).unwrap_or_default();
        (out.status.success(), output_text(&out), summary)
    }

    /// All three phases in one process in the main clone, cargo-diskbench on PATH.
    fn publish(&self, artifacts: &Path, expect: &str) -> (bool, String, String) {
        let path = format!(
            "{}:{}",
            tool_dir(),
            std::env::var("PATH").unwrap_or_default()
        );
        self.run_in(
            &self.work,
            &[artifacts.to_str().unwrap(), expect],
            &path,
            &[],
        )
    }

    fn data_branch_files(&self) -> Vec<String> {
        let listing = git(
            &self.origin,
            &["ls-tree", "-r", "--name-only", "refs/heads/data"],
        );
        listing.lines().map(String::from).collect()
    }

    fn data_branch_exists(&self) -> bool {
        !git(&self.origin, &["branch", "--list", "data"])
            .trim()
            .is_empty()
    }

    /// The file on the data branch, as bytes.
    fn on_branch(&self, rel: &str) -> Vec<u8> {
        git(&self.origin, &["show", &format!("refs/heads/data:{rel}")]).into_bytes()
    }

    /// The data branch holds exactly `records`, and `ours` on it is byte for byte the file
    /// the runner uploaded.
    fn assert_holds(&self, records: &[&record::Record], ours: &record::Record, uploaded: &Path) {
        assert_eq!(self.data_branch_files(), listing(records));
        assert_eq!(
            self.on_branch(&format!("results/{}", file_name(ours))),
            fs::read(uploaded).unwrap()
        );
    }

    /// Publishing the same again (`again`) succeeds with nothing new and makes no empty
    /// commit.
    fn assert_nothing_new(&self, again: impl FnOnce() -> (bool, String, String)) {
        let before = git(&self.origin, &["rev-parse", "refs/heads/data"]);
        let (ok, text, _) = again();
        assert!(ok, "{text}");
        assert!(text.contains("nothing new"), "{text}");
        assert_eq!(git(&self.origin, &["rev-parse", "refs/heads/data"]), before);
    }
}

/// The expected listing of the data branch: README, .gitkeep and these records, sorted.
fn listing(records: &[&record::Record]) -> Vec<String> {
    let mut out = vec!["README.md".to_string(), "results/.gitkeep".to_string()];
    out.extend(records.iter().map(|r| format!("results/{}", file_name(r))));
    out.sort();
    out
}

/// The whole script in one process against a local remote: the first publication creates the
/// data branch; a second one races with another run that pushes between our fetch and our
/// push (a pre-push hook does it), so our push is refused, and the retry must keep both runs'
/// records.
#[test]
fn publishing_to_the_data_branch_survives_a_concurrent_push() {
    let remote = DataRemote::new();
    let tmp = remote.tmp.path();

    // First publication: the branch does not exist yet.
    let first = normal_record("ubuntu-24.04", "1111111111111111", "2026-11-23T10:00:00Z");
    write_json(&tmp.join("run1/a/record.json"), &first, true);
    let (ok, text, _) = remote.publish(&tmp.join("run1"), "ubuntu-24.04,ubuntu-24.04-arm");
    assert!(ok, "{text}");
    assert!(text.contains("missing    ubuntu-24.04-arm"), "{text}");
    assert_eq!(remote.data_branch_files(), listing(&[&first]));
    // The data branch shares no history with the code.
    assert_eq!(
        git(&remote.origin, &["rev-list", "--count", "refs/heads/data"]).trim(),
        "1"
    );

    // Another run's publication lands between our fetch and our push.
    let theirs = normal_record("ubuntu-22.04", "2222222222222222", "2026-11-30T09:00:00Z");
    remote.other_run(&theirs);
    remote.pre_push_hook(
        &remote.work,
        "if [ ! -e \"$MARKER\" ]; then\n\
           touch \"$MARKER\"\n\
           env -u GIT_DIR -u GIT_WORK_TREE -u GIT_INDEX_FILE git -C \"$OTHER\" push --quiet origin data\n\
         fi\n",
    );
    let ours = normal_record("ubuntu-24.04", "3333333333333333", "2026-11-30T10:00:00Z");
    write_json(&tmp.join("run2/a/record.json"), &ours, true);
    // The earlier record again, as a re-downloaded artifact: skipped, not added twice.
    write_json(&tmp.join("run2/b/record.json"), &first, false);
    let (ok, text, _) = remote.publish(&tmp.join("run2"), "");
    assert!(ok, "{text}");
    assert!(tmp.join("hook-ran").exists(), "the race happened");
    assert!(text.contains("refused (attempt 1 of 5)"), "{text}");
    remote.assert_holds(
        &[&first, &theirs, &ours],
        &ours,
        &tmp.join("run2/a/record.json"),
    );
    remote.assert_nothing_new(|| remote.publish(&tmp.join("run2"), ""));
}

/// The workflow's split: fetch and merge in the read-only merge job (merge runs
/// cargo-diskbench and refuses to be given the token), the new record files handed on in a
/// folder, and push in a job of its own, a fresh clone holding the token, with no
/// cargo-diskbench on PATH at all. Another run pushes while ours is being pushed: the push
/// phase adds our record to the new tip by itself, keeping both runs' records.
#[test]
fn the_merge_runs_in_a_phase_without_the_token_and_the_push_retries_without_the_tool() {
    let remote = DataRemote::new();
    let tmp = remote.tmp.path();
    let system_path = std::env::var("PATH").unwrap_or_default();
    assert!(
        !system_path
            .split(':')
            .any(|d| Path::new(d).join("cargo-diskbench").exists()),
        "this test needs a PATH without cargo-diskbench"
    );
    let tool_path = format!("{}:{system_path}", tool_dir());
    let token = ("DATA_PUSH_TOKEN", "not-a-real-token");
    let handoff = tmp.join("data-handoff");
    let handoff_env = ("DATA_HANDOFF_DIR", handoff.to_str().unwrap());

    // A first run publishes a record, so the branch exists.
    let first = normal_record("ubuntu-24.04", "7777777777777777", "2026-11-23T10:00:00Z");
    write_json(&tmp.join("run1/a/record.json"), &first, true);
    let (ok, text, _) = remote.publish(&tmp.join("run1"), "");
    assert!(ok, "{text}");

    let ours = normal_record("ubuntu-24.04", "8888888888888888", "2026-11-30T10:00:00Z");
    write_json(&tmp.join("run2/a/record.json"), &ours, true);
    let artifacts = tmp.join("run2").display().to_string();

    // The merge job.
    let (ok, text, _) = remote.run_in(&remote.work, &["fetch"], &system_path, &[token]);
    assert!(ok, "{text}");
    // The merge phase is never given the token, nor is the one-process form, which runs
    // cargo-diskbench too.
    for args in [
        &["merge", artifacts.as_str()][..],
        &[artifacts.as_str()][..],
    ] {
        let (ok, text, _) = remote.run_in(&remote.work, args, &tool_path, &[token, handoff_env]);
        assert!(!ok, "{args:?}: {text}");
        assert!(text.contains("must not be given DATA_PUSH_TOKEN"), "{text}");
    }
    let (ok, text, _) = remote.run_in(
        &remote.work,
        &["merge", &artifacts],
        &tool_path,
        &[handoff_env],
    );
    assert!(ok, "{text}");
    assert!(text.contains("1 new record file(s) handed on"), "{text}");
    assert_eq!(
        fs::read(handoff.join("results").join(file_name(&ours))).unwrap(),
        fs::read(tmp.join("run2/a/record.json")).unwrap()
    );

    // The push job: a clone of its own, the hand-off folder, no tool. Another run's record
    // lands on the branch while ours is pushed.
    let push_clone = remote.clone("push-job");
    let theirs = normal_record(
        "ubuntu-24.04-arm",
        "9999999999999999",
        "2026-11-30T09:00:00Z",
    );
    remote.other_run(&theirs);
    remote.pre_push_hook(
        &push_clone,
        "if [ ! -e \"$MARKER\" ]; then touch \"$MARKER\"; \
         env -u GIT_DIR -u GIT_WORK_TREE -u GIT_INDEX_FILE git -C \"$OTHER\" push --quiet origin data; fi\n",
    );
    let push = || {
        remote.run_in(
            &push_clone,
            &["push", handoff.to_str().unwrap()],
            &system_path,
            &[token],
        )
    };
    let (ok, text, summary) = push();
    assert!(ok, "{text}");
    assert!(text.contains("refused (attempt 1 of 5)"), "{text}");
    assert!(text.contains("pushed 1 record(s) to data"), "{text}");
    // The merge's summary, reported once the push went through.
    assert!(summary.contains("1 added"), "{summary}");
    assert!(summary.contains("Pushed to `data`"), "{summary}");
    remote.assert_holds(
        &[&first, &theirs, &ours],
        &ours,
        &tmp.join("run2/a/record.json"),
    );
    // Pushing again has nothing to do.
    remote.assert_nothing_new(push);
}

/// The first run measured nothing (every runner failed or never started): the data branch is
/// still created with `results/`, and the deploy job's render of it succeeds with an empty but
/// valid site.
#[test]
fn an_empty_first_run_publishes_a_branch_the_site_renders() {
    let remote = DataRemote::new();
    let artifacts = remote.tmp.path().join("no-artifacts");
    let (ok, text, summary) = remote.publish(&artifacts, "ubuntu-24.04");
    assert!(ok, "{text}");
    assert!(text.contains("missing    ubuntu-24.04"), "{text}");
    assert_eq!(remote.data_branch_files(), listing(&[]));
    assert!(summary.contains("0 added"), "{summary}");

    // What the render job does: check the data branch out, render results/ strictly.
    let checkout = remote.tmp.path().join("data-branch");
    git(
        remote.tmp.path(),
        &[
            "clone",
            "--quiet",
            "--branch",
            "data",
            remote.origin.to_str().unwrap(),
            "data-branch",
        ],
    );
    let site = remote.tmp.path().join("site");
    let out = common::run(&[
        "diskbench",
        "site",
        "--strict",
        "--results",
        checkout.join("results").to_str().unwrap(),
        "--out",
        site.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let index = fs::read_to_string(site.join("index.html")).unwrap();
    assert!(index.contains("<html"), "{index}");
    assert!(site.join(".nojekyll").exists());

    // The next run adds its record next to the .gitkeep.
    let first = normal_record("ubuntu-24.04", "4444444444444444", "2026-11-23T10:00:00Z");
    write_json(&remote.tmp.path().join("run2/a/record.json"), &first, true);
    let (ok, text, _) = remote.publish(&remote.tmp.path().join("run2"), "");
    assert!(ok, "{text}");
    assert_eq!(remote.data_branch_files(), listing(&[&first]));
}

/// The first publication's push is refused once (the branch does not exist yet): the retry
/// starts again from the remote and goes through; the summary reports the records once.
#[test]
fn a_refused_first_push_is_retried() {
    let remote = DataRemote::new();
    remote.pre_push_hook(
        &remote.work,
        "if [ ! -e \"$MARKER\" ]; then touch \"$MARKER\"; echo refused by hook >&2; exit 1; fi\n",
    );
    let record = normal_record("ubuntu-24.04", "5555555555555555", "2026-11-23T10:00:00Z");
    write_json(&remote.tmp.path().join("run1/a/record.json"), &record, true);
    let (ok, text, summary) = remote.publish(&remote.tmp.path().join("run1"), "");
    assert!(ok, "{text}");
    assert!(text.contains("refused (attempt 1 of 5)"), "{text}");
    assert!(text.contains("pushed 1 record(s) to data"), "{text}");
    assert_eq!(remote.data_branch_files(), listing(&[&record]));
    assert_eq!(summary.matches("1 added").count(), 1, "{summary}");
    assert!(summary.contains("Pushed to `data`"), "{summary}");
}

/// Every push refused: five attempts, then our message and exit 1; the summary does not
/// claim anything was added, and no branch was created.
#[test]
fn a_push_refused_every_time_ends_with_our_message() {
    let remote = DataRemote::new();
    remote.pre_push_hook(&remote.work, "echo refused by hook >&2\nexit 1\n");
    let record = normal_record("ubuntu-24.04", "6666666666666666", "2026-11-23T10:00:00Z");
    write_json(&remote.tmp.path().join("run1/a/record.json"), &record, true);
    let (ok, text, summary) = remote.publish(&remote.tmp.path().join("run1"), "");
    assert!(!ok, "{text}");
    assert!(text.contains("refused (attempt 4 of 5)"), "{text}");
    assert!(
        text.contains("could not push to data after 5 attempts"),
        "{text}"
    );
    assert!(!text.contains("already exists"), "{text}");
    assert!(summary.contains("**Not published:**"), "{summary}");
    assert!(!remote.data_branch_exists());
}

/// `git ls-remote` failing (no such remote path, here; no network or no access on GitHub) is
/// an error, never taken for "no data branch yet": nothing is created or pushed, and the
/// message says what failed. Only a remote that answers "no such branch" starts a new one.
#[test]
fn an_unreachable_origin_is_an_error_not_a_missing_branch() {
    let system_path = std::env::var("PATH").unwrap_or_default();
    for phase in [&["fetch"][..], &["push"][..]] {
        let remote = DataRemote::new();
        let missing = remote.tmp.path().join("gone.git");
        git(
            &remote.work,
            &["remote", "set-url", "origin", missing.to_str().unwrap()],
        );
        let (ok, text, _) = remote.run_in(&remote.work, phase, &system_path, &[]);
        assert!(!ok, "{phase:?}: {text}");
        assert!(
            text.contains("cannot ask origin whether data exists (git ls-remote exit 128)"),
            "{phase:?}: {text}"
        );
        assert!(text.contains("nothing was published"), "{phase:?}: {text}");
        assert!(!text.contains("pushed"), "{phase:?}: {text}");
        // No orphan branch was started in the clone.
        assert!(
            git(&remote.work, &["branch", "--list", "data"])
                .trim()
                .is_empty(),
            "{phase:?}"
        );
    }
}

/// The push job trusts the hand-off folder only as far as its names go: every entry must be a
/// plain file named like a record (the merge phase's names); anything else stops the push
/// before a byte is added.
#[test]
fn the_push_refuses_a_hand_off_that_is_not_record_files() {
    let system_path = std::env::var("PATH").unwrap_or_default();
    type Make = fn(&Path);
    let cases: [(&str, Make); 4] = [
        ("a name with a space", |d| {
            fs::write(d.join("a b.json"), "{}").unwrap()
        }),
        ("not a .json file", |d| {
            fs::write(d.join("notes.txt"), "x").unwrap()
        }),
        ("a symlink", |d| {
            std::os::unix::fs::symlink("/etc/hostname", d.join("x.json")).unwrap()
        }),
        ("a folder", |d| fs::create_dir(d.join("sub.json")).unwrap()),
    ];
    for (what, make) in cases {
        let remote = DataRemote::new();
        let handoff = remote.tmp.path().join("handoff");
        fs::create_dir_all(handoff.join("results")).unwrap();
        make(&handoff.join("results"));
        let (ok, text, _) = remote.run_in(
            &remote.work,
            &["push", handoff.to_str().unwrap()],
            &system_path,
            &[],
        );
        assert!(!ok, "{what}: {text}");
        assert!(text.contains("not a record file"), "{what}: {text}");
        assert!(!remote.data_branch_exists(), "{what}: pushed anyway");
    }
}

/// The bench jobs' baseline: `exists` says whether the data branch is there (false on the
/// first run, true once published), as a step output the checkout of it is conditioned on, so
/// the first run has no failed step; an origin it cannot ask is a warning and no baseline.
#[test]
fn exists_tells_the_first_run_from_a_later_one_without_failing() {
    let system_path = std::env::var("PATH").unwrap_or_default();
    let remote = DataRemote::new();
    let output = remote.tmp.path().join("github-output");
    let exists = |remote: &DataRemote| {
        let _ = fs::remove_file(&output);
        let (ok, text, _) = remote.run_in(
            &remote.work,
            &["exists"],
            &system_path,
            &[("GITHUB_OUTPUT", output.to_str().unwrap())],
        );
        (ok, text, fs::read_to_string(&output).unwrap_or_default())
    };
    let (ok, text, written) = exists(&remote);
    assert!(ok, "{text}");
    assert_eq!(written, "exists=false\n", "{text}");
    assert!(text.contains("no data branch yet"), "{text}");
    assert!(!text.contains("::error"), "{text}");

    let artifacts = remote.tmp.path().join("artifacts");
    let first = normal_record("ubuntu-24.04", "1111111111111111", "2026-11-23T10:00:00Z");
    write_json(&artifacts.join(file_name(&first)), &first, true);
    let (ok, text, _) = remote.publish(&artifacts, "");
    assert!(ok, "{text}");
    let (ok, text, written) = exists(&remote);
    assert!(ok, "{text}");
    assert_eq!(written, "exists=true\n", "{text}");

    git(
        &remote.work,
        &[
            "remote",
            "set-url",
            "origin",
            remote.tmp.path().join("gone.git").to_str().unwrap(),
        ],
    );
    let (ok, text, written) = exists(&remote);
    assert!(ok, "{text}");
    assert_eq!(written, "exists=false\n", "{text}");
    assert!(
        text.contains("::warning title=cargo-diskbench::cannot ask origin whether data exists"),
        "{text}"
    );

    let jobs = super::github_file("workflows/benchmark.yml");
    assert!(
        !jobs.contains("continue-on-error"),
        "a step may fail and be ignored"
    );
    assert!(jobs.contains("run: .github/scripts/publish-records.sh exists"));
    assert!(jobs.contains("if: steps.data-branch.outputs.exists == 'true'"));
    // The Pages deployments queue in a group of this workflow's own.
    assert!(jobs.contains("group: diskbench-pages"));
    assert!(!jobs.contains("group: pages\n"));
}

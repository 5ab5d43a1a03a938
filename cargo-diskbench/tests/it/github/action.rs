//! The composite action's steps, run outside Actions as the runner runs them: the checks
//! before the install, how it decides between the release binary and a build, the missing
//! tools it names, the run step in a workspace it must leave alone, and the run as root
//! through a stand-in `sudo` that resets the environment as sudo-rs does.

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use record::Record;
use serde_json::Value;

use super::{StepRun, github_file, path_with, run_step, step_script, tree, write_script};
use crate::common;

const ACTION: &str = "actions/diskbench/action.yml";

/// The run step's environment as action.yml maps the inputs (measuring little, quickly), with
/// `extra` on top.
fn run_env<'a>(tmp: &'a Path, extra: &[(&'a str, &'a str)]) -> Vec<(&'a str, String)> {
    let mut env: Vec<(&str, String)> = vec![
        ("BIN", env!("CARGO_BIN_EXE_cargo-diskbench").to_string()),
        ("INPUT_LABEL", "local-test".into()),
        ("INPUT_ONLY", "qd1-read".into()),
        ("INPUT_RUNTIME", "0.3".into()),
        ("INPUT_PROVISIONED", String::new()),
        ("INPUT_STEPS", "false".into()),
        ("INPUT_WHAT_IF", "false".into()),
        ("INPUT_ARGS", "--size 16M --ramp 0 --quiet".into()),
        ("RESULTS_NAME", "diskbench-record".into()),
        ("INPUT_SITE_OUT", String::new()),
        ("RUNNER_TEMP", tmp.join("runner-temp").display().to_string()),
        (
            "GITHUB_STEP_SUMMARY",
            tmp.join("step-summary.md").display().to_string(),
        ),
    ];
    for (k, v) in extra {
        env.retain(|(name, _)| name != k);
        env.push((k, v.to_string()));
    }
    env
}

/// The action's `run` step in `workspace` with `env` (see [`run_env`]).
fn run_action_step(tmp: &Path, workspace: &Path, env: &[(&str, String)]) -> StepRun {
    fs::create_dir_all(tmp.join("runner-temp")).unwrap();
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    run_step(ACTION, "run", "bash", workspace, &env)
}

fn assert_upload_ready(run: &StepRun, tmp: &Path) {
    let record = PathBuf::from(
        run.outputs
            .get("record")
            .unwrap_or_else(|| panic!("no record output: {}", run.text)),
    );
    assert!(record.starts_with(tmp.join("runner-temp")), "{record:?}");
    let parsed: Record = serde_json::from_slice(&fs::read(&record).unwrap()).unwrap();
    assert_eq!(parsed.runner.label, "local-test");
    assert_eq!(parsed.tests.len(), 1);
    assert_eq!(
        run.outputs["artifact-name"],
        format!(
            "diskbench-record-{}",
            record.file_stem().unwrap().to_string_lossy()
        )
    );
}

/// The user's checkout already holds a `diskbench-site/` that is not a site: the action
/// measures, hands a record to the upload step and writes nothing into the workspace; a site
/// is written only where site-out asks, and a site-out the tool refuses still leaves the
/// record ready for upload.
#[test]
fn the_action_leaves_the_workspace_alone_and_the_record_ready_for_upload() {
    let _disk = common::disk_load();
    let tmp = tempfile::tempdir().unwrap();
    let workspace = tmp.path().join("workspace");
    fs::create_dir_all(workspace.join("diskbench-site")).unwrap();
    fs::write(
        workspace.join("diskbench-site/notes.txt"),
        "the user's own\n",
    )
    .unwrap();
    fs::write(workspace.join("Cargo.toml"), "[workspace]\n").unwrap();
    let before = tree(&workspace);

    // The default: no site.
    let run = run_action_step(tmp.path(), &workspace, &run_env(tmp.path(), &[]));
    assert_eq!(run.code, 0, "{}", run.text);
    assert_upload_ready(&run, tmp.path());
    assert!(!run.outputs.contains_key("site"), "{:?}", run.outputs);
    assert_eq!(tree(&workspace), before, "the workspace was written to");

    // Asked for a site: there and nowhere else.
    let run = run_action_step(
        tmp.path(),
        &workspace,
        &run_env(tmp.path(), &[("INPUT_SITE_OUT", "report")]),
    );
    assert_eq!(run.code, 0, "{}", run.text);
    assert_upload_ready(&run, tmp.path());
    assert_eq!(
        run.outputs["site"],
        workspace.join("report").display().to_string()
    );
    assert!(workspace.join("report/index.html").exists());
    let mut after = tree(&workspace);
    after.retain(|k, _| !k.starts_with("report/"));
    assert_eq!(after, before);

    // Asked for a site in the user's non-site folder: the tool refuses (exit 2) before it
    // measures anything, so no record is made and nothing waits for the upload step.
    let run = run_action_step(
        tmp.path(),
        &workspace,
        &run_env(tmp.path(), &[("INPUT_SITE_OUT", "diskbench-site")]),
    );
    assert_ne!(run.code, 0, "{}", run.text);
    assert!(
        run.text
            .contains("--site-out diskbench-site: a non-empty folder that is not a diskbench site"),
        "{}",
        run.text
    );
    assert!(
        !run.text.contains("IOPS"),
        "it measured first: {}",
        run.text
    );
    assert!(!run.outputs.contains_key("record"), "{:?}", run.outputs);
    let mut after = tree(&workspace);
    after.retain(|k, _| !k.starts_with("report/"));
    assert_eq!(after, before, "the user's folder was touched");
}

/// actionlint lints workflows, not a composite action's metadata; this checks what a runner
/// needs from action.yml: the required keys, every input documented, and every `inputs.X`
/// the steps use declared.
#[test]
fn the_action_declares_what_its_steps_use() {
    let action = github_file(ACTION);
    for key in ["name:", "description:", "inputs:", "outputs:", "runs:"] {
        assert!(
            action.lines().any(|l| l.starts_with(key)),
            "action.yml has no top-level {key}"
        );
    }
    assert!(action.contains("using: composite"));
    let declared: Vec<&str> = action
        .lines()
        .skip_while(|l| !l.starts_with("inputs:"))
        .skip(1)
        .take_while(|l| l.starts_with(' ') || l.is_empty())
        .filter(|l| l.starts_with("  ") && !l.starts_with("   ") && l.trim_end().ends_with(':'))
        .map(|l| l.trim().trim_end_matches(':'))
        .collect();
    for input in [
        "version",
        "what-if",
        "retention-days",
        "label",
        "only",
        "runtime",
        "provisioned",
        "steps",
        "working-directory",
        "results-name",
        "args",
        "site-out",
    ] {
        assert!(
            declared.contains(&input),
            "input {input} not declared: {declared:?}"
        );
    }
    let mut rest = action.as_str();
    while let Some(i) = rest.find("inputs.") {
        rest = &rest[i + "inputs.".len()..];
        let name: String = rest
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
            .collect();
        assert!(
            declared.contains(&name.as_str()),
            "inputs.{name} used but not declared"
        );
    }
    // Composite steps that run a shell must say which one.
    let runs = action.matches("\n      run:").count() + action.matches("\n        run:").count();
    let shells = action.matches("shell: bash").count();
    assert!(
        runs > 0 && shells >= runs,
        "{runs} run steps, {shells} shells"
    );
}

/// A build from source keys its cached binary on a hash of the paths listed in the action's
/// `plan` step: every file a crate compiles in with `include_str!`/`include_bytes!` (outside
/// `#[cfg(test)]`) must be under one of them, or a change to it would keep serving the old
/// binary.
#[test]
fn the_action_cache_key_covers_every_file_compiled_in() {
    let script = step_script(&github_file(ACTION), "plan");
    let list_line = script
        .lines()
        .find(|l| l.trim_start().starts_with("for p in Cargo.toml"))
        .expect("the list of hashed paths");
    let hashed: Vec<&str> = list_line
        .trim()
        .trim_start_matches("for p in ")
        .trim_end_matches("; do")
        .split_whitespace()
        .collect();
    let root = common::repo_root();
    let mut seen = 0;
    for crate_dir in ["engine", "site-gen", "cargo-diskbench"] {
        for path in common::tree::files(&root.join(crate_dir).join("src")) {
            if path.extension().is_none_or(|x| x != "rs") {
                continue;
            }
            let text = fs::read_to_string(&path).unwrap();
            // Code before a test module only.
            let code = text.split("#[cfg(test)]").next().unwrap();
            for macro_name in ["include_str!(\"", "include_bytes!(\""] {
                for (at, _) in code.match_indices(macro_name) {
                    let rest = &code[at + macro_name.len()..];
                    let rel = &rest[..rest.find('"').unwrap()];
                    let target = path.parent().unwrap().join(rel);
                    let target = fs::canonicalize(&target)
                        .unwrap_or_else(|e| panic!("{}: {rel}: {e}", path.display()));
                    let in_repo = target
                        .strip_prefix(fs::canonicalize(&root).unwrap())
                        .unwrap()
                        .to_string_lossy()
                        .into_owned();
                    assert!(
                        hashed
                            .iter()
                            .any(|h| in_repo == *h || in_repo.starts_with(&format!("{h}/"))),
                        "{}: {in_repo} is compiled in but not in the action's cache key {hashed:?}",
                        path.display()
                    );
                    assert!(
                        !in_repo.contains("/tests/"),
                        "{in_repo}: the key skips tests/"
                    );
                    seen += 1;
                }
            }
        }
    }
    assert!(seen >= 8, "only {seen} include_str! found");
    // site-gen's build script embeds its content/*.md.
    assert!(
        fs::read_to_string(root.join("site-gen/build.rs"))
            .unwrap()
            .contains("join(\"content\")")
    );
    assert!(hashed.contains(&"site-gen"));
}

/// The action's default `steps: true` runs the cargo-build step in the user's project: its
/// `cargo fetch` and `cargo build` write a Cargo.lock into a project that commits none. The
/// step removes the lockfile it created (so neither the action nor a local run leaves one
/// behind) and leaves a lockfile that was there as it was; the record names the compiler.
#[test]
fn the_cargo_build_step_leaves_no_new_cargo_lock_in_the_project() {
    let _disk = common::disk_load();
    let project = tempfile::tempdir().unwrap();
    fs::write(
        project.path().join("Cargo.toml"),
        "[package]\nname = \"demo\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace]\n",
    )
    .unwrap();
    fs::create_dir(project.path().join("src")).unwrap();
    fs::write(
        project.path().join("src/lib.rs"),
        "pub fn one() -> u32 { 1 }\n",
    )
    .unwrap();
    let before = tree(project.path());
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let steps = || {
        let out = common::bin()
            .current_dir(project.path())
            .args(["diskbench", "steps", "--only", "cargo-build", "--dir"])
            .arg(dir.path())
            .args(["--json", "-", "--results"])
            .arg(dir.path().join("no-results"))
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{stderr}");
        let record: Value = serde_json::from_slice(&out.stdout).unwrap();
        let step = record["steps"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["id"] == "cargo-build")
            .unwrap_or_else(|| panic!("no cargo-build step: {record:#}"))
            .clone();
        // The project's own build ran (not the generated crate), and passed.
        assert_eq!(step["status"], "ok", "{step:#}");
        assert!(
            step["name"]
                .as_str()
                .unwrap()
                .contains("cold cargo build of"),
            "{step:#}"
        );
        assert!(
            !step["notes"].to_string().contains("generated crate"),
            "{step:#}"
        );
        // The compiler that built it is in the record (steps[].toolchain).
        assert!(
            step["toolchain"]
                .as_str()
                .is_some_and(|t| t.starts_with("rustc 1.")),
            "{step:#}"
        );
    };
    steps();
    assert!(!project.path().join("Cargo.lock").exists());
    assert_eq!(tree(project.path()), before, "the project was written to");

    // A project that commits its lockfile keeps it, byte for byte.
    let lock = "# This file is automatically @generated by Cargo.\n# It is not intended for manual editing.\nversion = 4\n\n[[package]]\nname = \"demo\"\nversion = \"0.1.0\"\n";
    fs::write(project.path().join("Cargo.lock"), lock).unwrap();
    let before = tree(project.path());
    steps();
    assert_eq!(
        tree(project.path()),
        before,
        "the project's lockfile was changed"
    );
}

/// A self-hosted runner without cargo or a C compiler: the install step names both and what
/// to install, before building or measuring anything; with the binary cached and the build
/// steps off, neither is needed.
#[test]
fn the_action_names_missing_cargo_and_cc_before_building() {
    let script = step_script(&github_file(ACTION), "install");
    let tmp = tempfile::tempdir().unwrap();
    let install = |cache_hit: &str, steps: &str, cached_binary: bool| {
        let home = tmp
            .path()
            .join(format!("home-{cache_hit}-{steps}-{cached_binary}"));
        let bin = home.join(".cache/cargo-diskbench-bin/bin/cargo-diskbench");
        fs::create_dir_all(bin.parent().unwrap()).unwrap();
        if cached_binary {
            use std::os::unix::fs::PermissionsExt;
            fs::write(&bin, "#!/bin/sh\n").unwrap();
            fs::set_permissions(&bin, fs::Permissions::from_mode(0o755)).unwrap();
        }
        let out = std::process::Command::new("/bin/bash")
            .args(["--noprofile", "--norc", "-eo", "pipefail", "-c", &script])
            // Nothing on PATH: no cargo, no cc (the script needs no other program to check).
            .env("PATH", tmp.path().join("empty-path"))
            .env("HOME", &home)
            .env("MODE", "source")
            .env("VERSION", "source")
            .env("SRC", tmp.path().join("no-source"))
            .env("CACHE_HIT", cache_hit)
            .env("INSTALL_ONLY", "false")
            .env("INPUT_STEPS", steps)
            .env("RUNNER_TEMP", tmp.path())
            .env("GITHUB_PATH", tmp.path().join("github-path"))
            .env("GITHUB_OUTPUT", tmp.path().join("github-output"))
            .output()
            .unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        )
    };
    // Nothing cached: both named, as needed to build.
    let (code, text) = install("false", "false", false);
    assert_eq!(code, 1, "{text}");
    assert!(
        text.contains(
            "missing to build cargo-diskbench: cargo: install rustup (https://rustup.rs)"
        ),
        "{text}"
    );
    assert!(
        text.contains("a C compiler as cc: apt-get install build-essential"),
        "{text}"
    );
    // Cached binary, build steps timed: still needed, and said why.
    let (code, text) = install("true", "true", true);
    assert_eq!(code, 1, "{text}");
    assert!(
        text.contains("for the timed build steps (or set steps: false)"),
        "{text}"
    );
    // Cached binary, no build steps: neither is needed.
    let (code, text) = install("true", "false", true);
    assert_eq!(code, 0, "{text}");
    assert!(
        fs::read_to_string(tmp.path().join("github-output"))
            .unwrap()
            .contains("bin="),
    );
}

/// A folder of stand-ins for the check step: `id` answering `uid` (`id -g` the same), `sudo`
/// as `sudo` says (none, one that needs a password, or one that runs the command), and the
/// root probe's `mount` and `mkdir` of a cgroup, refused when FAKE_MOUNT or FAKE_CGROUP is
/// `fail` (a container), with `umount` and `rmdir` that succeed.
fn fake_bin(dir: &Path, uid: u32, sudo: Option<&str>) -> PathBuf {
    let bin = dir.join(format!("bin-{uid}-{}", sudo.unwrap_or("none")));
    write_script(
        &bin.join("id"),
        &format!(
            "#!/bin/sh\ncase \"$1\" in -u|-g) echo {uid} ;; *) exec /usr/bin/id \"$@\" ;; esac\n"
        ),
    );
    match sudo {
        Some("password") => write_script(
            &bin.join("sudo"),
            "#!/bin/sh\necho 'sudo: a password is required' >&2\nexit 1\n",
        ),
        Some("ok") => write_script(
            &bin.join("sudo"),
            "#!/bin/sh\n[ \"$1\" = -n ] && shift\nexec /usr/bin/env PATH=\"$PATH:/usr/bin:/bin\" \"$@\"\n",
        ),
        _ => {}
    }
    write_script(
        &bin.join("mount"),
        "#!/bin/sh\nif [ \"${FAKE_MOUNT:-}\" = fail ]; then echo 'mount: permission denied' >&2; exit 32; fi\n",
    );
    write_script(
        &bin.join("mkdir"),
        "#!/bin/sh\ncase \"$*\" in */sys/fs/cgroup/*) if [ \"${FAKE_CGROUP:-}\" = fail ]; then \
         echo 'mkdir: Read-only file system' >&2; exit 1; fi ;; esac\n",
    );
    for name in ["umount", "rmdir"] {
        write_script(&bin.join(name), "#!/bin/sh\nexit 0\n");
    }
    bin
}

/// (what, inputs, uid, sudo stand-in, exit code, what the output must say)
type CheckCase = (
    &'static str,
    &'static [(&'static str, &'static str)],
    u32,
    Option<&'static str>,
    i32,
    &'static str,
);

/// Everything the first step can refuse is refused there, before anything is installed or
/// measured, naming the input and what it takes: the OS, the typed inputs, and what-if's needs
/// (the build steps, and root or passwordless sudo).
#[test]
fn the_check_step_refuses_bad_inputs_before_the_install() {
    let tmp = tempfile::tempdir().unwrap();
    let cases: &[CheckCase] = &[
        ("the defaults", &[], 1001, None, 0, ""),
        (
            "a release version",
            &[("INPUT_VERSION", "v0.1.0")],
            1001,
            None,
            0,
            "",
        ),
        (
            "a build from source",
            &[("INPUT_VERSION", "source")],
            1001,
            None,
            0,
            "",
        ),
        (
            "a week's retention",
            &[("INPUT_RETENTION_DAYS", "7")],
            1001,
            None,
            0,
            "",
        ),
        (
            "macOS",
            &[("RUNNER_OS", "macOS")],
            1001,
            None,
            2,
            "Linux runners only",
        ),
        (
            "version latest",
            &[("INPUT_VERSION", "latest")],
            1001,
            None,
            2,
            "input version must be X.Y.Z",
        ),
        (
            "version 1.2",
            &[("INPUT_VERSION", "1.2")],
            1001,
            None,
            2,
            "input version must be X.Y.Z",
        ),
        (
            "steps yes",
            &[("INPUT_STEPS", "yes")],
            1001,
            None,
            2,
            "input steps must be true or false, not 'yes'",
        ),
        (
            "what-if maybe",
            &[("INPUT_WHAT_IF", "maybe")],
            1001,
            None,
            2,
            "input what-if must be true or false, not 'maybe'",
        ),
        (
            "install-only 1",
            &[("INSTALL_ONLY", "1")],
            1001,
            None,
            2,
            "input install-only must be true or false",
        ),
        (
            "retention 0",
            &[("INPUT_RETENTION_DAYS", "0")],
            1001,
            None,
            2,
            "retention-days must be a whole number of days from 1 to 90",
        ),
        (
            "retention 91",
            &[("INPUT_RETENTION_DAYS", "91")],
            1001,
            None,
            2,
            "retention-days",
        ),
        (
            "retention 7d",
            &[("INPUT_RETENTION_DAYS", "7d")],
            1001,
            None,
            2,
            "retention-days",
        ),
        (
            "what-if without steps",
            &[("INPUT_WHAT_IF", "true"), ("INPUT_STEPS", "false")],
            0,
            None,
            2,
            "drop one of them",
        ),
        (
            "what-if, no sudo",
            &[("INPUT_WHAT_IF", "true")],
            1001,
            None,
            2,
            "what-if: true needs root",
        ),
        (
            "what-if, sudo asks a password",
            &[("INPUT_WHAT_IF", "true")],
            1001,
            Some("password"),
            2,
            "passwordless sudo",
        ),
        (
            "what-if with passwordless sudo",
            &[("INPUT_WHAT_IF", "true")],
            1001,
            Some("ok"),
            0,
            "",
        ),
        (
            "what-if as root",
            &[("INPUT_WHAT_IF", "true")],
            0,
            None,
            0,
            "",
        ),
        (
            "what-if, install only",
            &[("INPUT_WHAT_IF", "true"), ("INSTALL_ONLY", "true")],
            1001,
            None,
            0,
            "",
        ),
        // A `container:` job or ubuntu-slim: root, and still no mount or no cgroup.
        (
            "what-if where nothing may be mounted",
            &[("INPUT_WHAT_IF", "true"), ("FAKE_MOUNT", "fail")],
            0,
            None,
            2,
            "mounts a file system, and this job may not",
        ),
        (
            "what-if where cgroups are read-only",
            &[("INPUT_WHAT_IF", "true"), ("FAKE_CGROUP", "fail")],
            1001,
            Some("ok"),
            2,
            "creates cgroups under /sys/fs/cgroup",
        ),
        (
            "like a published runner, through sudo",
            &[("INPUT_LIKE", "github-x64-2x8"), ("INPUT_STEPS", "false")],
            1001,
            Some("ok"),
            0,
            "",
        ),
        (
            "like, no sudo",
            &[("INPUT_LIKE", "github-x64-2x8")],
            1001,
            None,
            2,
            "like: github-x64-2x8 needs root",
        ),
        (
            "like two labels",
            &[("INPUT_LIKE", "a b")],
            0,
            None,
            2,
            "input like must be one runner label",
        ),
        (
            "like in a container",
            &[("INPUT_LIKE", "github-x64-2x8"), ("FAKE_MOUNT", "fail")],
            0,
            None,
            2,
            "like: github-x64-2x8 mounts a file system",
        ),
        (
            "cache maybe",
            &[("INPUT_CACHE", "maybe")],
            1001,
            None,
            2,
            "input cache must be true or false, not 'maybe'",
        ),
        (
            "pull_request_target",
            &[("GITHUB_EVENT_NAME", "pull_request_target")],
            1001,
            None,
            0,
            "::warning title=cargo-diskbench::this job runs on pull_request_target",
        ),
    ];
    let step = step_script(&github_file(ACTION), "check");
    assert!(!step.is_empty());
    let tmp_s = tmp.path().display().to_string();
    for (what, inputs, uid, sudo, code, needle) in cases {
        let bin = fake_bin(tmp.path(), *uid, *sudo);
        let mut env: BTreeMap<&str, &str> = BTreeMap::from([
            ("RUNNER_OS", "Linux"),
            ("INPUT_VERSION", ""),
            ("INPUT_STEPS", "true"),
            ("INPUT_WHAT_IF", "false"),
            ("INSTALL_ONLY", "false"),
            ("INPUT_RETENTION_DAYS", ""),
            ("INPUT_LIKE", ""),
            ("INPUT_CACHE", "true"),
            ("GITHUB_EVENT_NAME", "push"),
            ("RUNNER_TEMP", tmp_s.as_str()),
        ]);
        env.extend(inputs.iter().copied());
        let path = bin.display().to_string();
        env.insert("PATH", &path);
        let env: Vec<(&str, &str)> = env.into_iter().collect();
        let run = run_step(ACTION, "check", "bash", tmp.path(), &env);
        assert_eq!(run.code, *code, "{what}: {}", run.text);
        assert!(run.text.contains(needle), "{what}: {}", run.text);
        if *code != 0 {
            assert!(
                run.text.contains("::error title=cargo-diskbench::"),
                "{what}: {}",
                run.text
            );
        }
    }
}

/// A pins file as the release workflow writes it: `version` is the release the ref belongs to,
/// `pinned` every version it pins.
fn pins_file(version: &str, pinned: &[&str]) -> String {
    let mut text = format!(
        "# written by the release workflow\n# version: {version}\n# download: https://github.com/owner/repo/releases/download\n"
    );
    for v in pinned {
        for t in ["aarch64-unknown-linux-musl", "x86_64-unknown-linux-musl"] {
            text.push_str(&format!(
                "{}  cargo-diskbench-{t}-v{v}.tar.gz\n",
                "ab".repeat(32)
            ));
        }
    }
    text
}

/// (what, pins file (version, pinned versions), version input, RUNNER_ARCH, exit code, mode,
/// version installed, the log says)
type PlanCase = (
    &'static str,
    Option<(&'static str, &'static [&'static str])>,
    &'static str,
    &'static str,
    i32,
    &'static str,
    &'static str,
    &'static str,
);

/// How the action installs: the release its ref pins (or the `version` input) as a checked
/// download; a ref with no release, `version: source` or an architecture with no release
/// binary builds from source, and the log says why; a version on a ref that pins none is
/// refused before anything happens.
#[test]
fn the_plan_step_installs_the_pinned_release_or_builds_from_source_and_says_why() {
    let tmp = tempfile::tempdir().unwrap();
    let cases: &[PlanCase] = &[
        (
            "a branch",
            None,
            "",
            "X64",
            0,
            "source",
            "source",
            "belongs to no release",
        ),
        (
            "a branch, a version asked",
            None,
            "0.1.0",
            "X64",
            2,
            "",
            "",
            "pins no release binaries",
        ),
        (
            "a branch, source asked",
            None,
            "source",
            "X64",
            0,
            "source",
            "source",
            "asks for a build from source",
        ),
        (
            "a release tag",
            Some(("0.2.0", &["0.1.0", "0.2.0"])),
            "",
            "X64",
            0,
            "release",
            "0.2.0",
            "the release binary, checked against",
        ),
        (
            "a release tag, arm64",
            Some(("0.2.0", &["0.2.0"])),
            "",
            "ARM64",
            0,
            "release",
            "0.2.0",
            "the release binary",
        ),
        (
            "a release tag, an older version",
            Some(("0.2.0", &["0.1.0", "0.2.0"])),
            "v0.1.0",
            "X64",
            0,
            "release",
            "0.1.0",
            "cargo-diskbench 0.1.0",
        ),
        (
            "a release tag, source asked",
            Some(("0.2.0", &["0.2.0"])),
            "source",
            "X64",
            0,
            "source",
            "source",
            "asks for a build from source",
        ),
        (
            "a release tag, 32-bit ARM",
            Some(("0.2.0", &["0.2.0"])),
            "",
            "ARM",
            0,
            "source",
            "source",
            "X64 and ARM64 only, this runner is ARM",
        ),
    ];
    for (i, (what, pins, version, arch, code, mode, installs, log)) in cases.iter().enumerate() {
        // The action's folder in a repository of its own: src is three folders up.
        let repo = tmp.path().join(format!("repo-{i}"));
        let action_dir = repo.join(".github/actions/diskbench");
        fs::create_dir_all(&action_dir).unwrap();
        fs::write(repo.join("Cargo.toml"), "[workspace]\n").unwrap();
        if let Some((v, pinned)) = pins {
            fs::write(action_dir.join("release.sha256"), pins_file(v, pinned)).unwrap();
        }
        let run = run_step(
            ACTION,
            "plan",
            "bash",
            tmp.path(),
            &[
                ("GITHUB_ACTION_PATH", action_dir.to_str().unwrap()),
                ("INPUT_VERSION", version),
                ("RUNNER_OS", "Linux"),
                ("RUNNER_ARCH", arch),
            ],
        );
        assert_eq!(run.code, *code, "{what}: {}", run.text);
        assert!(run.text.contains(log), "{what}: {}", run.text);
        if *code != 0 {
            assert!(run.outputs.is_empty(), "{what}: {:?}", run.outputs);
            continue;
        }
        assert_eq!(run.outputs["mode"], *mode, "{what}");
        assert_eq!(run.outputs["version"], *installs, "{what}");
        // Only a build from source has a cache key, over the source it builds.
        assert_eq!(
            run.outputs
                .get("key")
                .is_some_and(|k| k.starts_with(&format!("cargo-diskbench-bin-v1-Linux-{arch}-"))),
            *mode == "source",
            "{what}: {:?}",
            run.outputs
        );
        if *mode == "source" {
            assert!(
                run.text.contains("will be built from source"),
                "{what}: {}",
                run.text
            );
        }
    }
}

/// sudo-rs ignores `-E`, and both sudos reset the environment: nothing under `.github/` may
/// rely on `sudo -E`, and every sudo the action runs is `sudo -n` (a runner that would ask
/// for a password fails at once instead of hanging).
#[test]
fn nothing_relies_on_sudo_keeping_the_environment() {
    let dir = common::repo_root().join(".github");
    let mut read = 0;
    for path in common::tree::files(&dir) {
        let text = fs::read_to_string(&path).unwrap_or_default();
        read += 1;
        for needle in ["sudo -E", "sudo --preserve-env", "sudo -sE", "sudo -nE"] {
            assert!(!text.contains(needle), "{}: {needle}", path.display());
        }
    }
    assert!(read >= 8, "only {read} files read under .github/");
    let action = github_file(ACTION);
    // Commands, not messages: lines that only print.
    for line in action
        .lines()
        .filter(|l| l.contains("sudo") && !l.trim_start().starts_with("echo "))
    {
        let code = line.split('#').next().unwrap();
        for (at, _) in code.match_indices("sudo ") {
            let rest = &code[at..];
            assert!(
                rest.starts_with("sudo -n") || code.contains("command -v sudo"),
                "a sudo without -n: {line}"
            );
        }
    }
    assert!(action.contains("sudo_=(sudo -n)"));
}

/// The sudo-rs stand-in: `-E` ignored with sudo-rs's own warning, the environment reset to
/// what sudo keeps (HOME=/root, a secure PATH), every call logged.
fn sudo_rs_stand_in(bin: &Path, log: &Path) {
    write_script(
        &bin.join("sudo"),
        &format!(
            "#!/bin/sh\n\
             # Stand-in for sudo-rs on a GitHub-hosted runner (NOPASSWD): -E is ignored, the\n\
             # environment reset; any option it does not know is refused.\n\
             echo \"$*\" >> '{log}'\n\
             while [ $# -gt 0 ]; do\n\
               case \"$1\" in\n\
                 -n) shift ;;\n\
                 -E) echo \"sudo: preserving the entire environment is not supported, '-E' is ignored\" >&2; shift ;;\n\
                 --) shift; break ;;\n\
                 -*) echo \"sudo stand-in: $1 is not supported here\" >&2; exit 1 ;;\n\
                 *) break ;;\n\
               esac\n\
             done\n\
             exec /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
             HOME=/root USER=root LOGNAME=root SHELL=/bin/sh TERM=unknown SUDO_USER=runner \
             SUDO_UID=1001 SUDO_GID=1001 \"$@\"\n",
            log = log.display()
        ),
    );
}

/// `what-if: true` on a runner whose sudo is sudo-rs (Ubuntu 26.04): the run step runs the tool
/// through a stand-in `sudo` that resets the environment as sudo-rs does and ignores `-E`, as
/// a runner user (uid 1001 by a stand-in `id`). Root gets exactly the variables the tool
/// needs: the job summary is written, the record holds the runner's metadata, the cargo-build
/// step finds its toolchain without rustup, no token reaches root; root writes nothing into
/// the runner user's ~/.cargo, and only what the run created is handed back to the user.
#[test]
#[ignore = "needs root: .ci/run runs these as root with --ignored"]
fn the_action_runs_the_tool_as_root_with_exactly_the_variables_it_needs() {
    common::require_root();
    let _disk = common::disk_load();
    let tmp = common::sandbox();
    let bin = tmp.path().join("fake-bin");
    let sudo_log = tmp.path().join("sudo.log");
    sudo_rs_stand_in(&bin, &sudo_log);
    write_script(
        &bin.join("id"),
        "#!/bin/sh\ncase \"$1\" in -u|-g) echo 1001 ;; *) exec /usr/bin/id \"$@\" ;; esac\n",
    );
    let path = path_with(&bin);

    // The stand-in is faithful: `sudo -E` keeps nothing.
    let out = std::process::Command::new("sudo")
        .args([
            "-E",
            "sh",
            "-c",
            "echo \"run=${GITHUB_RUN_ID:-unset} home=$HOME\"",
        ])
        .env("PATH", &path)
        .env("GITHUB_RUN_ID", "4242")
        .output()
        .unwrap();
    let said = super::output_text(&out);
    assert!(said.contains("run=unset home=/root"), "{said}");
    assert!(said.contains("'-E' is ignored"), "{said}");
    fs::remove_file(&sudo_log).unwrap();

    // The runner user's home: a cargo home with a config, which root must not touch.
    let home = tmp.path().join("home");
    fs::create_dir_all(home.join(".cargo/registry")).unwrap();
    fs::write(home.join(".cargo/config.toml"), "[net]\nretry = 3\n").unwrap();
    let cargo_home_before = tree(&home.join(".cargo"));
    // The workspace: a small crate (the cargo-build step), a step of the user's that shows
    // what root's environment holds, and a file root owned before the run.
    let workspace = tmp.path().join("workspace");
    fs::create_dir_all(workspace.join("src")).unwrap();
    fs::create_dir_all(workspace.join("data")).unwrap();
    fs::write(
        workspace.join("Cargo.toml"),
        "[package]\nname = \"demo\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace]\n",
    )
    .unwrap();
    fs::write(workspace.join("src/lib.rs"), "pub fn one() -> u32 { 1 }\n").unwrap();
    let env_dump = tmp.path().join("root-env.txt");
    fs::write(
        workspace.join("diskbench.toml"),
        format!(
            "[[steps]]\nid = \"show-env\"\nrun = \"env | sort > {}\"\n",
            env_dump.display()
        ),
    )
    .unwrap();
    fs::write(workspace.join("data/keep.txt"), "root's own\n").unwrap();
    let rustup_home = std::env::var("RUSTUP_HOME")
        .unwrap_or_else(|_| format!("{}/.rustup", std::env::var("HOME").unwrap_or_default()));

    let summary = tmp.path().join("step-summary.md");
    let user_cargo_home = home.join(".cargo");
    let env = run_env(
        tmp.path(),
        &[
            ("PATH", &path),
            ("HOME", home.to_str().unwrap()),
            ("CARGO_HOME", user_cargo_home.to_str().unwrap()),
            ("RUSTUP_HOME", &rustup_home),
            ("INPUT_LABEL", ""),
            ("INPUT_STEPS", "true"),
            ("INPUT_WHAT_IF", "true"),
            (
                "INPUT_ARGS",
                "--size 16M --ramp 0 --quiet --what-if-only memory",
            ),
            ("INPUT_SITE_OUT", "report"),
            ("GITHUB_STEP_SUMMARY", summary.to_str().unwrap()),
            // The job's metadata, as the runner sets it.
            ("GITHUB_ACTIONS", "true"),
            ("GITHUB_RUN_ID", "4242"),
            ("GITHUB_JOB", "bench"),
            ("GITHUB_REPOSITORY", "owner/repo"),
            ("RUNNER_ENVIRONMENT", "github-hosted"),
            ("RUNNER_NAME", "GitHub Actions 7"),
            ("ImageOS", "ubuntu26"),
            ("ImageVersion", "20261201.1"),
            ("RUSTFLAGS", "-Cdebuginfo=0"),
            // No docker daemon answers here: the docker step is skipped at once.
            ("DOCKER_HOST", "unix:///nonexistent/docker.sock"),
            // Tokens a job holds, which root must never see.
            ("GITHUB_TOKEN", "ghs_not-a-real-token"),
            ("ACTIONS_RUNTIME_TOKEN", "not-a-real-runtime-token"),
        ],
    );
    let run = run_action_step(tmp.path(), &workspace, &env);
    assert_eq!(run.code, 0, "{}", run.text);

    // The job summary was written, and the record holds the runner's metadata.
    let summary = fs::read_to_string(&summary).unwrap_or_else(|e| {
        panic!("no job summary was written ({e}): $GITHUB_STEP_SUMMARY did not reach root")
    });
    assert!(summary.contains("## cargo-diskbench"), "{summary}");
    let record_path = PathBuf::from(&run.outputs["record"]);
    let record: Record = serde_json::from_slice(&fs::read(&record_path).unwrap()).unwrap();
    let ci = record.runner.ci.as_ref().expect("runner.ci");
    assert_eq!(ci.run_id.as_deref(), Some("4242"));
    assert_eq!(ci.job.as_deref(), Some("bench"));
    assert_eq!(ci.repository.as_deref(), Some("owner/repo"));
    assert_eq!(ci.image.as_deref(), Some("ubuntu26/20261201.1"));
    assert_eq!(ci.environment.as_deref(), Some("github-hosted"));
    assert!(
        record.runner.label.starts_with("github-ubuntu26-"),
        "{}",
        record.runner.label
    );
    // The cargo-build step found its toolchain as root, and ran under the experiment.
    let cargo = record
        .steps
        .iter()
        .find(|s| s.id == "cargo-build")
        .expect("cargo-build step");
    assert_eq!(cargo.status, record::StepStatus::Ok, "{cargo:#?}");
    assert!(cargo.what_if.is_some(), "{cargo:#?}");
    assert!(
        cargo
            .toolchain
            .as_deref()
            .is_some_and(|t| t.starts_with("rustc ")),
        "{cargo:#?}"
    );

    // Through sudo, always with -n and env, never -E.
    let calls = fs::read_to_string(&sudo_log).unwrap();
    assert!(calls.lines().any(|c| c.starts_with("-n env ")), "{calls}");
    assert!(!calls.contains("-E"), "{calls}");

    // Root's environment: what the action passed, nothing else of the job's.
    let root_env = fs::read_to_string(&env_dump).unwrap();
    let root_env: BTreeMap<&str, &str> =
        root_env.lines().filter_map(|l| l.split_once('=')).collect();
    for (k, v) in [
        ("GITHUB_RUN_ID", "4242"),
        ("ImageOS", "ubuntu26"),
        ("RUSTFLAGS", "-Cdebuginfo=0"),
        ("DOCKER_HOST", "unix:///nonexistent/docker.sock"),
        ("HOME", "/root"),
    ] {
        assert_eq!(root_env.get(k), Some(&v), "{k}: {root_env:#?}");
    }
    for k in [
        "GITHUB_TOKEN",
        "ACTIONS_RUNTIME_TOKEN",
        "RUSTUP_HOME",
        "INPUT_ARGS",
    ] {
        assert!(!root_env.contains_key(k), "{k} reached root: {root_env:#?}");
    }
    let root_cargo_home = root_env["CARGO_HOME"];
    assert!(
        root_cargo_home.starts_with(tmp.path().join("runner-temp").to_str().unwrap()),
        "{root_cargo_home}"
    );
    assert!(
        !Path::new(root_cargo_home).exists(),
        "root's CARGO_HOME is removed afterwards"
    );
    let toolchain_bin = Path::new(root_env["CARGO"]).parent().unwrap();
    assert!(
        root_env["PATH"].starts_with(toolchain_bin.to_str().unwrap()),
        "{root_env:#?}"
    );
    assert!(toolchain_bin.join("rustc").exists(), "{toolchain_bin:?}");

    // Root wrote nothing into the runner user's ~/.cargo.
    assert_eq!(tree(&home.join(".cargo")), cargo_home_before);
    // What the run created is the runner user's again; what root owned before stays root's.
    let owner = |p: &Path| fs::symlink_metadata(p).unwrap().uid();
    assert_eq!(owner(&workspace.join("data/keep.txt")), 0);
    assert_eq!(owner(&workspace.join("Cargo.toml")), 0);
    assert!(workspace.join("report/index.html").exists());
    for (rel, _) in tree(&workspace.join("report")) {
        assert_eq!(
            owner(&workspace.join("report").join(&rel)),
            1001,
            "report/{rel}"
        );
    }
    assert_eq!(owner(&workspace.join("report")), 1001);
    assert_eq!(owner(&record_path), 1001);
    assert!(
        !workspace.join("Cargo.lock").exists(),
        "the build's lockfile is removed"
    );
}

/// `provisioned: 3000,125M` reaches the run as `--provisioned`: the record keeps the limit and
/// the job summary sets each figure beside it.
#[test]
fn the_provisioned_input_reaches_the_record_and_the_summary() {
    let tmp = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let workspace = tmp.path().join("ws");
    fs::create_dir_all(&workspace).unwrap();
    let env = run_env(tmp.path(), &[("INPUT_PROVISIONED", "3000,125M")]);
    let run = {
        let _load = common::disk_load();
        run_action_step(tmp.path(), &workspace, &env)
    };
    assert_eq!(run.code, 0, "{}", run.text);
    let record: Record =
        serde_json::from_slice(&fs::read(&run.outputs["record"]).unwrap()).unwrap();
    let p = record
        .settings
        .provisioned
        .expect("the limit in the record");
    assert_eq!((p.iops, p.bytes_s), (3000.0, 125.0 * 1_048_576.0));
    let summary = fs::read_to_string(tmp.path().join("step-summary.md")).unwrap();
    assert!(
        summary.contains("Share of the provisioned limit"),
        "{summary}"
    );
    assert!(
        summary.contains("of the provisioned 3000 IOPS"),
        "{summary}"
    );
}

/// `like:` through the action's run step, with a stand-in tool that logs what it is asked:
/// the published runners' CSVs (the action's checkout holds them) are imported into the run's
/// fresh results folder first, `--like LABEL` is passed, and the record handed to the upload
/// is the run's own, not one of the imported ones.
#[test]
fn the_like_input_imports_the_published_figures_and_passes_like() {
    let tmp = tempfile::tempdir().unwrap();
    let workspace = tmp.path().join("ws");
    fs::create_dir_all(&workspace).unwrap();
    let log = tmp.path().join("tool.log");
    let tool = tmp.path().join("tool/cargo-diskbench");
    // import: one record per CSV; run: its record in --results, as the tool names them.
    write_script(
        &tool,
        r#"#!/bin/bash
echo "$*" >> "$TOOL_LOG"
results=""; prev=""
for a in "$@"; do if [ "$prev" = --results ]; then results="$a"; fi; prev="$a"; done
case "$2" in
  import) for f in "$@"; do case "$f" in *.csv) echo '{}' > "$results/2026-10-08-$(basename "$f" .csv)-0a1b2c3d.json" ;; esac; done ;;
  run) echo '{}' > "$results/2026-12-05-local-test-4e5f6a7b.json" ;;
esac
"#,
    );
    // Root already (the sudo path has its own test): `id -u` answers 0.
    let bin = tmp.path().join("root-id");
    write_script(
        &bin.join("id"),
        "#!/bin/sh\ncase \"$1\" in -u|-g) echo 0 ;; *) exec /usr/bin/id \"$@\" ;; esac\n",
    );
    let path = path_with(&bin);
    let action_path = common::repo_root().join(".github/actions/diskbench");
    let env = run_env(
        tmp.path(),
        &[
            ("BIN", tool.to_str().unwrap()),
            ("INPUT_LIKE", "github-x64-2x8"),
            ("GITHUB_ACTION_PATH", action_path.to_str().unwrap()),
            ("TOOL_LOG", log.to_str().unwrap()),
            ("PATH", &path),
        ],
    );
    let run = run_action_step(tmp.path(), &workspace, &env);
    assert_eq!(run.code, 0, "{}", run.text);
    let calls: Vec<String> = fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(String::from)
        .collect();
    assert_eq!(calls.len(), 2, "{calls:#?}");
    assert!(calls[0].starts_with("diskbench import "), "{}", calls[0]);
    let published = common::repo_root().join("fixtures/published");
    let csvs = fs::read_dir(&published)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "csv")
        })
        .count();
    assert!(csvs >= 2);
    assert_eq!(calls[0].matches(".csv").count(), csvs, "{}", calls[0]);
    assert!(calls[1].starts_with("diskbench run "), "{}", calls[1]);
    assert!(calls[1].contains(" --like github-x64-2x8"), "{}", calls[1]);
    let record = &run.outputs["record"];
    assert!(
        record.ends_with("/2026-12-05-local-test-4e5f6a7b.json"),
        "{record}"
    );
    assert_eq!(
        run.outputs["artifact-name"],
        "diskbench-record-2026-12-05-local-test-4e5f6a7b"
    );
}

/// No step of the measuring action holds a token: the job has built and run the workspace's
/// code by then. comment-on only hands the comparison on as an artifact; the comment action,
/// for a job of its own, posts it with the token given to its one step, on the pull
/// request's head commit (not the test merge GITHUB_SHA names), and warns when refused.
#[test]
fn comments_are_posted_from_a_job_of_their_own_on_the_pull_requests_head() {
    let action = github_file(ACTION);
    for token in ["github.token", "GH_TOKEN", "secrets."] {
        assert!(!action.contains(token), "action.yml uses {token}");
    }
    assert!(action.contains("name: ${{ steps.run.outputs.artifact-name }}-comparison"));
    let comment_file = "actions/diskbench-comment/action.yml";
    let comment = github_file(comment_file);
    assert!(comment.contains("pattern: ${{ inputs.results-name }}-*-comparison"));
    assert!(
        !comment.contains("actions/checkout"),
        "the comment job checks code out"
    );
    assert_eq!(comment.matches("GH_TOKEN").count(), 1, "{comment}");

    let tmp = tempfile::tempdir().unwrap();
    let comparisons = tmp.path().join("comparisons/diskbench-record-x-comparison");
    fs::create_dir_all(&comparisons).unwrap();
    fs::write(comparisons.join("comparison.md"), "qd1-read: slower\n").unwrap();
    let bin = tmp.path().join("bin");
    let log = tmp.path().join("gh.log");
    write_script(
        &bin.join("gh"),
        "#!/bin/sh\necho \"$* token=$GH_TOKEN\" >> \"$GH_LOG\"\n[ \"${GH_REFUSE:-}\" = 1 ] && exit 1\nexit 0\n",
    );
    let head = "1111111111111111111111111111111111111111";
    let merge = "2222222222222222222222222222222222222222";
    let event = tmp.path().join("event.json");
    fs::write(
        &event,
        format!(r#"{{"pull_request": {{"head": {{"sha": "{head}"}}}}}}"#),
    )
    .unwrap();
    let push_event = tmp.path().join("push.json");
    fs::write(&push_event, r#"{"after": "x"}"#).unwrap();
    let path = path_with(&bin);
    let post = |event: &Path, refuse: &str| {
        let _ = fs::remove_file(&log);
        let run = run_step(
            comment_file,
            "post",
            "bash",
            tmp.path(),
            &[
                ("PATH", path.as_str()),
                ("GH_LOG", log.to_str().unwrap()),
                ("GH_TOKEN", "t0ken"),
                ("GH_REFUSE", refuse),
                (
                    "COMPARISONS",
                    tmp.path().join("comparisons").to_str().unwrap(),
                ),
                ("GITHUB_EVENT_PATH", event.to_str().unwrap()),
                ("GITHUB_SHA", merge),
                ("GITHUB_REPOSITORY", "owner/repo"),
            ],
        );
        (run, fs::read_to_string(&log).unwrap_or_default())
    };
    let (run, calls) = post(&event, "");
    assert_eq!(run.code, 0, "{}", run.text);
    assert_eq!(run.outputs["comments"], "1");
    assert!(
        calls.contains(&format!(
            "api repos/owner/repo/commits/{head}/comments -F body=@"
        )),
        "{calls}"
    );
    assert!(calls.contains("token=t0ken"), "{calls}");
    let (run, calls) = post(&push_event, "");
    assert_eq!(run.code, 0, "{}", run.text);
    assert!(
        calls.contains(&format!("commits/{merge}/comments")),
        "{calls}"
    );
    let (run, _) = post(&event, "1");
    assert_eq!(run.code, 0, "{}", run.text);
    assert_eq!(run.outputs["comments"], "0");
    assert!(
        run.text.contains("needs permissions: contents: write"),
        "{}",
        run.text
    );
}

//! The workflow files, read and run: tokens (who holds what, and that no job that compiles
//! or runs our binary holds a write token), pins (every action by full SHA with its release
//! as a comment), artifacts' retention, the benchmark's workload, CI running what `.ci/run`
//! runs, and the benchmark workflow's own scripts (setup, gate, queue watchdog) outside
//! Actions.

use std::collections::BTreeMap;
use std::fs;

use super::{github_file, run_step, write_script};
use crate::common;

/// One job of a workflow, as the few things these checks read: its permissions (scope ->
/// level; `{}` as `"*" -> "{}"`) and its lines.
struct Job {
    name: String,
    permissions: BTreeMap<String, String>,
    lines: Vec<String>,
}

impl Job {
    /// Whether this job compiles anything (crates' build scripts then run with its token):
    /// a Rust toolchain, cargo, or our action, which builds the tool even with install-only.
    fn builds(&self) -> bool {
        self.lines.iter().any(|l| {
            let l = l.trim();
            l.contains("uses: ./.github/actions/diskbench")
                || l.contains("rust-toolchain")
                || l.contains("Swatinem/rust-cache")
                || l.starts_with("- run: cargo ")
                || l.starts_with("run: cargo ")
                || l.starts_with("cargo ")
        })
    }

    fn writes(&self) -> Vec<String> {
        self.permissions
            .iter()
            .filter(|(_, level)| level.as_str() == "write" || level.as_str() == "write-all")
            .map(|(scope, _)| scope.clone())
            .collect()
    }

    /// Whether it runs on a runner the workflow does not choose (a matrix of labels given at
    /// dispatch: self-hosted and third-party runners among them).
    fn runs_on_given_runners(&self) -> bool {
        self.lines
            .iter()
            .any(|l| l.trim().starts_with("runs-on: ${{ matrix."))
    }

    /// The `uses:` of its steps, without the version comment.
    fn uses(&self) -> Vec<String> {
        self.lines
            .iter()
            .filter_map(|l| l.trim().trim_start_matches("- ").strip_prefix("uses: "))
            .map(|u| u.split(" #").next().unwrap().trim().to_string())
            .collect()
    }
}

/// The jobs of a workflow file (block YAML as this project writes it: jobs at two spaces,
/// their keys at four) and its top-level permissions.
fn workflow_jobs(text: &str) -> (BTreeMap<String, String>, Vec<Job>) {
    fn permissions_at(lines: &[&str], at: usize, indent: usize) -> BTreeMap<String, String> {
        let line = lines[at].trim();
        let inline = line.trim_start_matches("permissions:").trim();
        if !inline.is_empty() {
            return BTreeMap::from([("*".to_string(), inline.to_string())]);
        }
        lines[at + 1..]
            .iter()
            .take_while(|l| l.trim().is_empty() || l.starts_with(&" ".repeat(indent + 2)))
            .filter_map(|l| l.trim().split_once(':'))
            .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
            .collect()
    }
    let lines: Vec<&str> = text.lines().collect();
    let top = lines
        .iter()
        .position(|l| l.starts_with("permissions:"))
        .map(|at| permissions_at(&lines, at, 0))
        .unwrap_or_default();
    let jobs_at = lines.iter().position(|l| *l == "jobs:").expect("jobs:");
    let mut jobs: Vec<Job> = Vec::new();
    for (i, line) in lines.iter().enumerate().skip(jobs_at + 1) {
        let is_job = line.starts_with("  ")
            && !line.starts_with("   ")
            && line.trim_end().ends_with(':')
            && !line.trim().starts_with('#');
        if is_job {
            jobs.push(Job {
                name: line.trim().trim_end_matches(':').to_string(),
                permissions: BTreeMap::new(),
                lines: Vec::new(),
            });
        } else if let Some(job) = jobs.last_mut() {
            if line.starts_with("    permissions:") {
                job.permissions = permissions_at(&lines, i, 4);
            }
            job.lines.push(line.to_string());
        }
    }
    (top, jobs)
}

fn workflows() -> Vec<(String, String)> {
    let dir = common::repo_root().join(".github/workflows");
    let mut out: Vec<(String, String)> = fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "yml" || x == "yaml"))
        .map(|p| {
            (
                p.file_name().unwrap().to_string_lossy().into_owned(),
                fs::read_to_string(&p).unwrap(),
            )
        })
        .collect();
    out.sort();
    for name in ["benchmark.yml", "ci.yml", "release.yml"] {
        assert!(out.iter().any(|(n, _)| n == name), "no {name}");
    }
    out
}

/// The job `name` of `jobs`.
fn job<'a>(jobs: &'a [Job], name: &str) -> &'a Job {
    jobs.iter()
        .find(|j| j.name == name)
        .unwrap_or_else(|| panic!("no job {name}"))
}

/// A job's steps, each as its lines.
fn steps(job: &Job) -> Vec<String> {
    let mut steps: Vec<Vec<&str>> = Vec::new();
    for line in &job.lines {
        if line.starts_with("      - ") {
            steps.push(Vec::new());
        }
        if let Some(step) = steps.last_mut() {
            step.push(line);
        }
    }
    steps.into_iter().map(|s| s.join("\n")).collect()
}

/// The value of `key:` in a workflow's top-level `env:`.
fn workflow_env(text: &str, key: &str) -> String {
    text.lines()
        .skip_while(|l| *l != "env:")
        .take_while(|l| l.is_empty() || l.starts_with(' ') || *l == "env:")
        .find_map(|l| l.trim().strip_prefix(&format!("{key}:")))
        .map(|v| {
            v.split(" #")
                .next()
                .unwrap()
                .trim()
                .trim_matches('"')
                .to_string()
        })
        .unwrap_or_else(|| panic!("no env {key}"))
}

/// Runs the `run:` script of the step with `id: <id>` in benchmark.yml with `program`
/// (bash or python3) and `env`, in a folder of its own; returns (exit code, output, what it
/// wrote to $GITHUB_OUTPUT).
fn run_workflow_step(id: &str, program: &str, env: &[(&str, &str)]) -> (i32, String, String) {
    let text = github_file("workflows/benchmark.yml");
    let defaults = workflow_env(&text, "DEFAULT_RUNNERS");
    let tmp = tempfile::tempdir().unwrap();
    let mut all: Vec<(&str, &str)> = vec![
        ("GITHUB_REPOSITORY", "owner/repo"),
        ("GITHUB_RUN_ID", "1"),
        ("GITHUB_RUN_ATTEMPT", "1"),
        ("DEFAULT_RUNNERS", &defaults),
    ];
    all.extend_from_slice(env);
    let run = run_step("workflows/benchmark.yml", id, program, tmp.path(), &all);
    // Nothing an input smuggled in ran.
    assert!(!tmp.path().join("pwned").exists(), "{}", run.text);
    let written: String = run
        .outputs
        .iter()
        .map(|(k, v)| format!("{k}={v}\n"))
        .collect();
    (run.code, run.text, written)
}

/// The matrix does not hold the publication back: fail-fast off, the merge job runs always(),
/// the expected runners are handed to the merge, and the site is deployed.
#[test]
fn the_benchmark_workflow_publishes_even_when_a_runner_fails() {
    let wf = github_file("workflows/benchmark.yml");
    let publish = github_file("scripts/publish-records.sh");
    assert!(wf.contains(".github/scripts/publish-records.sh"));
    assert!(publish.contains("diskbench merge"));
    assert!(wf.contains("fail-fast: false"));
    assert!(wf.contains("actions/deploy-pages@"));
    assert!(wf.contains("actions/upload-pages-artifact@"));
    assert!(wf.contains("needs.setup.outputs.expect") && publish.contains("--expect"));
    assert!(
        wf.contains("if: always()"),
        "the merge job runs whatever the matrix did"
    );
    assert!(wf.contains("pages: write") && wf.contains("id-token: write"));
}

/// queue-minutes is checked as digits in the setup job, before any shell sees it, and the
/// watchdog checks it again before its arithmetic; macOS and Windows labels are refused
/// with the reason; the default matrix is the one the workflow names.
#[test]
fn the_setup_job_checks_queue_minutes_and_refuses_non_linux_labels() {
    let setup = |runners: &str, minutes: &str| {
        run_workflow_step(
            "labels",
            "python3",
            &[("RUNNERS", runners), ("QUEUE_MINUTES", minutes)],
        )
    };
    // The default matrix: what `ubuntu-latest` is today and the images by name, x64 and arm64;
    // the same list as the dispatch form's default.
    let (code, text, written) = setup("", "");
    assert_eq!(code, 0, "{text}");
    assert!(
        written.contains(
            "runners=[\"ubuntu-latest\", \"ubuntu-26.04\", \"ubuntu-26.04-arm\", \"ubuntu-24.04\", \"ubuntu-24.04-arm\"]"
        ),
        "{written}"
    );
    let wf = github_file("workflows/benchmark.yml");
    let defaults = workflow_env(&wf, "DEFAULT_RUNNERS");
    assert!(
        wf.contains(&format!("        default: {defaults}\n")),
        "the dispatch form's default differs from DEFAULT_RUNNERS ({defaults})"
    );
    assert!(written.contains("queue-minutes=30\n"), "{written}");
    let (code, text, written) = setup("ubuntu-24.04", "45");
    assert_eq!(code, 0, "{text}");
    assert!(written.contains("queue-minutes=45\n"), "{written}");
    for bad in [
        "30m",
        "0",
        "201",
        "1.5",
        "$(touch pwned)",
        "30; touch pwned",
        "-5",
    ] {
        let (code, text, written) = setup("ubuntu-24.04", bad);
        assert_ne!(code, 0, "{bad}: {text}");
        assert!(text.contains("queue-minutes"), "{bad}: {text}");
        assert!(written.is_empty(), "{bad}: {written}");
    }
    for label in ["macos-15", "windows-2025", "macOS"] {
        let (code, text, _) = setup(&format!("ubuntu-24.04, {label}"), "");
        assert_ne!(code, 0, "{label}: {text}");
        assert!(text.contains("Linux runners only"), "{label}: {text}");
    }
    // The watchdog's own check, before its first sleep.
    for bad in ["30m", "$(touch pwned)", "1+1", ""] {
        let (code, text, _) = run_workflow_step("wait", "bash", &[("QUEUE_MINUTES", bad)]);
        assert_eq!(code, 2, "{bad}: {text}");
        assert!(text.contains("not a whole number"), "{bad}: {text}");
    }
}

/// The merge job's gate: a run the watchdog cancelled is published, one a person cancelled
/// is not, and a bench job that hit its timeout-minutes (conclusion `cancelled` in the API, the
/// run going on) does not stop the other runners' records. The run's own cancellation comes
/// from the `run-cancelled` job (`if: cancelled()`, evaluated by GitHub for the run); `gh` is
/// replaced by a script answering the API calls, its jobs listing showing a cancelled bench
/// job as a timed-out one looks.
#[test]
fn the_merge_job_publishes_after_the_watchdog_cancels_or_a_job_times_out_but_not_after_a_person() {
    let tmp = tempfile::tempdir().unwrap();
    write_script(
        &tmp.path().join("gh"),
        "#!/bin/sh\ncase \"$*\" in\n  */jobs*) printf '%s' \"$FAKE_CANCELLED_JOBS\" ;;\n  \
         */artifacts*) printf '%s' \"$FAKE_ARTIFACTS\" ;;\n  *) exit 9 ;;\nesac\n",
    );
    let path = format!(
        "{}:{}",
        tmp.path().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let gate = |run_cancelled_job: &str, cancelled_jobs: &str, artifacts: &str| {
        run_workflow_step(
            "gate",
            "bash",
            &[
                ("PATH", &path),
                ("RUN_CANCELLED_JOB", run_cancelled_job),
                ("FAKE_CANCELLED_JOBS", cancelled_jobs),
                ("FAKE_ARTIFACTS", artifacts),
            ],
        )
    };
    // Nothing cancelled.
    let (code, text, written) = gate("skipped", "", "diskbench-record-a\n");
    assert_eq!(code, 0, "{text}");
    assert_eq!(written, "publish=true\n");
    // One runner timed out (its job is `cancelled`), the run was not cancelled: the others'
    // records are published.
    let (code, text, written) = gate("skipped", "bench slow-runner\n", "diskbench-record-a\n");
    assert_eq!(code, 0, "{text}");
    assert_eq!(written, "publish=true\n");
    assert!(!text.contains("cancelled by a person"), "{text}");
    // The watchdog cancelled the run (its marker is there).
    for result in ["success", "failure", "cancelled"] {
        let (code, text, written) = gate(
            result,
            "bench my-runner\n",
            "diskbench-record-a\nqueue-watchdog-gave-up\n",
        );
        assert_eq!(code, 0, "{text}");
        assert_eq!(written, "publish=true\n", "{result}");
    }
    // A person cancelled the run: no marker, nothing published.
    let (code, text, written) = gate("success", "bench ubuntu-24.04\n", "diskbench-record-a\n");
    assert_eq!(code, 0, "{text}");
    assert_eq!(written, "publish=false\n");
    assert!(text.contains("cancelled by a person"), "{text}");
    // A result the gate does not know: no guess either way.
    let (code, text, written) = gate("", "", "");
    assert_eq!(code, 2, "{text}");
    assert!(written.is_empty(), "{written}");

    // The wiring the gate relies on: the run-cancelled job runs on the run's cancellation only,
    // and the merge job waits for it and hands its result to the gate.
    let (_, jobs) = workflow_jobs(&github_file("workflows/benchmark.yml"));
    let job = |name: &str| {
        jobs.iter()
            .find(|j| j.name == name)
            .unwrap_or_else(|| panic!("no job {name}"))
            .lines
            .join("\n")
    };
    assert!(
        job("run-cancelled")
            .lines()
            .any(|l| l == "    if: cancelled()")
    );
    let merge = job("merge");
    assert!(
        merge.contains("needs: [setup, tool, bench, run-cancelled]"),
        "{merge}"
    );
    assert!(merge.contains("RUN_CANCELLED_JOB: ${{ needs.run-cancelled.result }}"));
}

/// The queue watchdog cancels the whole run: it must not start before the `tool` job has
/// finished, or its cancel could stop the build the merge job needs (merge requires the tool).
#[test]
fn the_queue_watchdog_never_cancels_the_tool_build() {
    let (_, jobs) = workflow_jobs(&github_file("workflows/benchmark.yml"));
    let lines = &jobs
        .iter()
        .find(|j| j.name == "queue-watchdog")
        .expect("queue-watchdog job")
        .lines;
    let has = |line: &str| lines.iter().any(|l| l == line);
    assert!(has("    needs: [setup, tool]"), "{lines:#?}");
    // Runs after a failed tool build too (so queued jobs are still given up on), but not in a
    // run already cancelled.
    assert!(
        has("    if: ${{ !cancelled() && needs.setup.result == 'success' }}"),
        "{lines:#?}"
    );
    assert!(lines.iter().any(|l| l.contains("gh run cancel")));
}

/// The queue watchdog's loop, with `sleep`, `date` and `gh` faked (a minute passes per
/// `date`): it waits while a bench job runs, gives up on the still-queued ones once none runs
/// and the limit has passed (naming them), and stops without a cancel once every job started.
#[test]
fn the_queue_watchdog_gives_up_only_on_jobs_still_queued_after_the_limit() {
    let fake = |answers: &[&str], rest: &str, minutes: &str, bench_minutes: &str| {
        let dir = tempfile::tempdir().unwrap();
        let scripts = [
            ("sleep", "#!/bin/sh\nexit 0\n".to_string()),
            (
                "date",
                "#!/bin/sh\nn=$(cat \"$FAKE_DIR/clock\" 2>/dev/null || echo 0)\nn=$((n + 60))\n\
                 echo \"$n\" > \"$FAKE_DIR/clock\"\necho \"$n\"\n"
                    .to_string(),
            ),
            (
                "gh",
                "#!/bin/sh\nn=$(cat \"$FAKE_DIR/calls\" 2>/dev/null || echo 0)\nn=$((n + 1))\n\
                 echo \"$n\" > \"$FAKE_DIR/calls\"\n[ \"$n\" -gt 50 ] && exit 1\n\
                 if [ -e \"$FAKE_DIR/answer-$n\" ]; then cat \"$FAKE_DIR/answer-$n\"; \
                 else cat \"$FAKE_DIR/answer\"; fi\n"
                    .to_string(),
            ),
        ];
        for (name, text) in scripts {
            write_script(&dir.path().join(name), &text);
        }
        for (i, a) in answers.iter().enumerate() {
            fs::write(dir.path().join(format!("answer-{}", i + 1)), a).unwrap();
        }
        fs::write(dir.path().join("answer"), rest).unwrap();
        let path = format!(
            "{}:{}",
            dir.path().display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let fake_dir = dir.path().display().to_string();
        let (code, text, written) = run_workflow_step(
            "wait",
            "bash",
            &[
                ("PATH", &path),
                ("FAKE_DIR", &fake_dir),
                ("QUEUE_MINUTES", minutes),
                ("BENCH_TIMEOUT_MINUTES", bench_minutes),
            ],
        );
        let calls: u32 = fs::read_to_string(dir.path().join("calls"))
            .unwrap_or_default()
            .trim()
            .parse()
            .unwrap_or(0);
        (code, text, written, calls)
    };
    // One job runs for five polls while the other stays queued: no giving up while one runs;
    // then, with none running and the limit (3 min) passed, the queued one is named.
    let running = "in_progress bench ubuntu-24.04\nqueued bench my-self-hosted";
    let (code, text, written, calls) = fake(
        &[running; 5],
        "completed bench ubuntu-24.04\nqueued bench my-self-hosted",
        "3",
        "60",
    );
    assert_eq!(code, 0, "{text}");
    assert_eq!(written, "gave-up=true\n", "{text}");
    assert_eq!(calls, 6, "{text}");
    assert!(
        text.contains("my-self-hosted never started a job in 3 min"),
        "{text}"
    );
    assert!(!text.contains("ubuntu-24.04 never started"), "{text}");
    // Nothing queued: done, no cancel.
    let (code, text, written, _) = fake(
        &[""],
        "in_progress bench ubuntu-24.04\ncompleted bench ubuntu-24.04-arm",
        "3",
        "60",
    );
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("every bench job has started"), "{text}");
    assert!(written.is_empty(), "{written}");
    // Queued, none running, but the limit not reached yet: it keeps waiting (30 min limit,
    // every job starts at the fourth poll).
    let (code, text, written, calls) = fake(
        &["queued bench a", "queued bench a", "queued bench a"],
        "in_progress bench a",
        "30",
        "60",
    );
    assert_eq!(code, 0, "{text}");
    assert!(written.is_empty(), "{written}");
    assert_eq!(calls, 4, "{text}");
    // A job runs and another stays queued for ever (jobs that start one after another on one
    // runner): it gives up one bench timeout after the limit (3 + 5 min), not later, and
    // says the running job is cancelled with the run.
    let (code, text, written, calls) = fake(&[], running, "3", "5");
    assert_eq!(code, 0, "{text}");
    assert_eq!(written, "gave-up=true\n", "{text}");
    assert!((8..=9).contains(&calls), "{calls} polls: {text}");
    assert!(
        text.contains("1 bench job(s) that started after the 3 min limit are cancelled"),
        "{text}"
    );
    assert!(
        text.contains("my-self-hosted never started a job in 3 min"),
        "{text}"
    );
}

/// The watchdog is done before its own timeout in the worst case: the largest queue-minutes
/// the setup job accepts, plus one bench job's timeout (which the script is given), plus a
/// poll; so a run whose runners never come is always given up on by the watchdog, never by
/// GitHub's timeout.
#[test]
fn the_queue_watchdog_outlasts_its_worst_case() {
    let text = github_file("workflows/benchmark.yml");
    let (_, jobs) = workflow_jobs(&text);
    let minutes = |job: &Job| -> u32 {
        job.lines
            .iter()
            .find_map(|l| l.strip_prefix("    timeout-minutes: "))
            .unwrap_or_else(|| panic!("job {} has no timeout-minutes", job.name))
            .trim()
            .parse()
            .unwrap()
    };
    let watchdog = job(&jobs, "queue-watchdog");
    let bench = minutes(job(&jobs, "bench"));
    let given: u32 = watchdog
        .lines
        .iter()
        .find_map(|l| l.trim().strip_prefix("BENCH_TIMEOUT_MINUTES: "))
        .expect("the watchdog is given the bench timeout")
        .parse()
        .unwrap();
    assert_eq!(
        given, bench,
        "BENCH_TIMEOUT_MINUTES is not the bench job's timeout-minutes"
    );
    let setup = job(&jobs, "setup").lines.join("\n");
    let largest: u32 = setup
        .split("<= int(queue) <= ")
        .nth(1)
        .and_then(|r| r.split(':').next())
        .expect("the setup job's bound on queue-minutes")
        .parse()
        .unwrap();
    assert!(
        minutes(watchdog) > largest + bench + 5,
        "the watchdog's timeout-minutes {} is not above {largest} + {bench} + a poll",
        minutes(watchdog)
    );
}

/// No job inherits a token (`permissions: {}` at the top of every workflow); each job says
/// what it holds, and one that needs no token holds none. A job that compiles runs crates'
/// build scripts: it holds no write or deploy rights. A job with write rights checks out
/// without persisting the token, and the job that deploys does nothing else.
#[test]
fn jobs_that_build_never_hold_write_or_deploy_tokens() {
    for (file, text) in workflows() {
        let (top, jobs) = workflow_jobs(&text);
        assert!(!jobs.is_empty(), "{file}: no jobs read");
        assert_eq!(
            top,
            BTreeMap::from([("*".to_string(), "{}".to_string())]),
            "{file}: the workflow's default token must hold nothing"
        );
        for job in &jobs {
            let body = job.lines.join("\n");
            assert!(
                job.lines.iter().any(|l| l.starts_with("    permissions:")),
                "{file}: job {} does not say what its token holds",
                job.name
            );
            for level in job.permissions.values() {
                assert!(
                    !level.contains("-all"),
                    "{file}: job {} holds {level}",
                    job.name
                );
            }
            let uses_token = body.contains("actions/checkout@")
                || body.contains("github.token")
                || body.contains("actions/deploy-pages@")
                || body.contains("actions/attest@");
            if !uses_token {
                assert_eq!(
                    job.permissions,
                    BTreeMap::from([("*".to_string(), "{}".to_string())]),
                    "{file}: job {} needs no token and must hold none (permissions: {{}})",
                    job.name
                );
            }
            let writes = job.writes();
            if job.builds() || job.runs_on_given_runners() {
                assert!(
                    writes.is_empty(),
                    "{file}: job {} builds or runs on a runner given at dispatch, and holds {writes:?}",
                    job.name
                );
            }
            if !writes.is_empty() {
                assert_eq!(
                    body.matches("uses: actions/checkout@").count(),
                    body.matches("persist-credentials: false").count(),
                    "{file}: job {} holds {writes:?} and persists a checkout's token",
                    job.name
                );
                // Nothing of ours that was built runs beside a write token.
                for banned in ["cargo-diskbench-tool", "tool/cargo-diskbench", "cargo "] {
                    assert!(
                        !body.contains(banned),
                        "{file}: job {} holds {writes:?} and runs {banned:?}",
                        job.name
                    );
                }
            }
            // Deploying, or signing an attestation of what another job built: nothing else.
            if job.permissions.contains_key("pages") || job.permissions.contains_key("id-token") {
                let uses: Vec<String> = job
                    .uses()
                    .iter()
                    .map(|u| u.split('@').next().unwrap().to_string())
                    .collect();
                assert!(
                    uses == ["actions/deploy-pages"]
                        || uses == ["actions/download-artifact", "actions/attest"],
                    "{file}: job {} holds deploy or signing rights and does more than that: {uses:?}",
                    job.name
                );
                assert!(
                    !job.permissions.contains_key("contents"),
                    "{file}: job {}",
                    job.name
                );
                assert!(
                    !job.lines.iter().any(|l| l.trim_start().starts_with("run:")
                        || l.trim_start().starts_with("- run:")),
                    "{file}: job {} runs scripts",
                    job.name
                );
            }
        }
    }

    let (_, jobs) = workflow_jobs(&github_file("workflows/benchmark.yml"));
    // The merge job runs cargo-diskbench with a read-only token, handed only to the steps
    // that read the API (the gate) and fetch the data branch; the merge step has none.
    let merge = job(&jobs, "merge");
    assert_eq!(
        merge.permissions,
        BTreeMap::from([
            ("actions".to_string(), "read".to_string()),
            ("contents".to_string(), "read".to_string()),
        ])
    );
    for step in steps(merge) {
        if step.contains("publish-records.sh merge") {
            assert!(
                !step.contains("token"),
                "cargo-diskbench beside a token: {step}"
            );
        }
        if step.contains("github.token") {
            assert!(
                step.contains("id: gate") || step.contains("publish-records.sh fetch"),
                "{step}"
            );
        }
    }
    assert!(
        steps(merge)
            .iter()
            .any(|s| s.contains("publish-records.sh merge artifacts"))
    );
    // The push job, the only one that writes, runs git alone: a checkout, the merge job's
    // hand-off, and publish-records.sh push.
    let push = job(&jobs, "push");
    assert_eq!(push.writes(), vec!["contents".to_string()]);
    assert!(!push.builds());
    let push_steps = steps(push);
    assert_eq!(push_steps.len(), 3, "{push_steps:#?}");
    assert!(push_steps[1].contains("name: data-branch-additions"));
    assert!(
        push_steps[2]
            .contains("run: .github/scripts/publish-records.sh push \"$RUNNER_TEMP/data-handoff\"")
    );
    let writers: Vec<&str> = jobs
        .iter()
        .filter(|j| !j.writes().is_empty())
        .map(|j| j.name.as_str())
        .collect();
    assert_eq!(writers, ["queue-watchdog", "push", "deploy"]);
    // The binary those jobs run comes from the tool job of the same run, built with no cache.
    let tool = job(&jobs, "tool");
    let tool_body = tool.lines.join("\n");
    assert!(tool_body.contains("cargo build --release --locked -p cargo-diskbench"));
    for cache in ["actions/cache", "rust-cache", "./.github/actions/diskbench"] {
        assert!(!tool_body.contains(cache), "the tool job restores {cache}");
    }

    // The release: only the publish job writes contents, and it runs no cargo, only the
    // scripts, git and gh on the tarballs the build jobs made; the attest job signs them.
    let (_, jobs) = workflow_jobs(&github_file("workflows/release.yml"));
    let writers: Vec<(&str, Vec<String>)> = jobs
        .iter()
        .filter(|j| !j.writes().is_empty())
        .map(|j| (j.name.as_str(), j.writes()))
        .collect();
    assert_eq!(
        writers,
        [
            (
                "attest",
                vec!["attestations".to_string(), "id-token".to_string()]
            ),
            ("publish", vec!["contents".to_string()]),
        ]
    );
    let publish = job(&jobs, "publish").lines.join("\n");
    for run in [
        "release.sh pin \"$VERSION\" dist",
        "release.sh push \"$VERSION\"",
        "release.sh publish \"$VERSION\" dist",
        "needs: [prepare, build, attest]",
    ] {
        assert!(publish.contains(run), "{run}");
    }
    let attest = job(&jobs, "attest").lines.join("\n");
    assert!(attest.contains("subject-path: dist/*.tar.gz"), "{attest}");
}

/// The binary the merge and render jobs run (they feed the data branch and the Pages site) is
/// checked, before it runs, against the SHA-256 the `tool` job wrote into its job outputs: an
/// artifact can be replaced by any job of the run (a bench job on a third-party runner
/// included), a job's outputs only by that job. The tool job is no bench job, and the bench
/// jobs restore no cached binary (a self-hosted one could have written it).
#[test]
fn merge_and_render_run_only_the_binary_the_tool_job_hashed() {
    let text = github_file("workflows/benchmark.yml");
    let (_, jobs) = workflow_jobs(&text);
    let tool = job(&jobs, "tool");
    let tool_body = tool.lines.join("\n");
    assert!(!tool.runs_on_given_runners());
    assert!(tool_body.contains("      sha256: ${{ steps.build.outputs.sha256 }}"));
    let build = steps(tool)
        .into_iter()
        .find(|s| s.contains("id: build"))
        .expect("the tool job's build step");
    assert!(
        build.contains("sha256sum target/release/cargo-diskbench")
            && build.contains(">> \"$GITHUB_OUTPUT\""),
        "{build}"
    );
    let mut checks = Vec::new();
    for name in ["merge", "render"] {
        let job = job(&jobs, name);
        let needs = job
            .lines
            .iter()
            .find_map(|l| l.strip_prefix("    needs: "))
            .unwrap();
        assert!(needs.contains("tool"), "{name} needs {needs}");
        let steps = steps(job);
        let download = steps
            .iter()
            .position(|s| s.contains("name: cargo-diskbench-tool"))
            .unwrap_or_else(|| panic!("{name}: no download of the tool"));
        let check = steps
            .iter()
            .position(|s| s.contains("id: tool-check"))
            .unwrap_or_else(|| panic!("{name}: no check of the tool"));
        assert!(
            steps[check].contains("TOOL_SHA256: ${{ needs.tool.outputs.sha256 }}"),
            "{name}: {}",
            steps[check]
        );
        let runs_tool: Vec<usize> = steps
            .iter()
            .enumerate()
            .filter(|(_, s)| {
                !s.contains("id: tool-check")
                    && (s.contains("tool/cargo-diskbench") || s.contains("$RUNNER_TEMP/tool:"))
            })
            .map(|(i, _)| i)
            .collect();
        assert!(!runs_tool.is_empty(), "{name} runs the tool nowhere");
        assert!(
            download < check && runs_tool.iter().all(|&i| i > check),
            "{name}: the tool runs before it is checked"
        );
        checks.push(
            steps[check]
                .lines()
                .skip_while(|l| !l.contains("run: |"))
                .take_while(|l| !l.trim_start().starts_with('#'))
                .collect::<Vec<_>>()
                .join("\n"),
        );
    }
    assert_eq!(
        checks[0], checks[1],
        "merge and render check the tool differently"
    );
    let bench = steps(job(&jobs, "bench"))
        .into_iter()
        .find(|s| s.contains("uses: ./.github/actions/diskbench"))
        .unwrap();
    assert!(bench.contains("cache: \"false\""), "{bench}");

    // The check itself: the built binary passes, a replaced one and a missing hash do not.
    let tmp = tempfile::tempdir().unwrap();
    let bin = tmp.path().join("tool/cargo-diskbench");
    fs::create_dir_all(bin.parent().unwrap()).unwrap();
    fs::write(&bin, "#!/bin/sh\necho built by the tool job\n").unwrap();
    let hash = super::release::sha256(&bin);
    let temp = tmp.path().display().to_string();
    let run = |sha: &str| {
        run_step(
            "workflows/benchmark.yml",
            "tool-check",
            "bash",
            tmp.path(),
            &[("RUNNER_TEMP", temp.as_str()), ("TOOL_SHA256", sha)],
        )
    };
    let ok = run(&hash);
    assert_eq!(ok.code, 0, "{}", ok.text);
    use std::os::unix::fs::PermissionsExt;
    assert_ne!(fs::metadata(&bin).unwrap().permissions().mode() & 0o111, 0);
    fs::write(&bin, "#!/bin/sh\necho swapped by a bench job\n").unwrap();
    let swapped = run(&hash);
    assert_eq!(swapped.code, 1, "{}", swapped.text);
    assert!(
        swapped
            .text
            .contains("is not the binary the tool job built"),
        "{}",
        swapped.text
    );
    let none = run("");
    assert_eq!(none.code, 1, "{}", none.text);
    assert!(none.text.contains("gave no SHA-256"), "{}", none.text);
}

/// The major release current for each action the workflows and the action use, all on Node 24
/// (checked against each action's tags and action.yml `runs.using`). Dependabot moves the SHA
/// and the `# vX.Y.Z` comment within a major; a new major changes this table on purpose.
const CURRENT_MAJORS: &[(&str, &str)] = &[
    ("actions/checkout", "v7"),
    ("actions/cache/restore", "v5"),
    ("actions/cache/save", "v5"),
    ("actions/upload-artifact", "v7"),
    ("actions/download-artifact", "v8"),
    ("actions/upload-pages-artifact", "v5"),
    ("actions/deploy-pages", "v5"),
    ("actions/attest", "v4"),
    ("Swatinem/rust-cache", "v2"),
];

/// Orgs that require SHA pinning apply it to a composite action's own steps too: every action
/// is pinned by its full commit SHA with the release as a comment (`@<40 hex> # vX.Y.Z`), on
/// its current major, and the same action at the same commit everywhere, toolchain set-up
/// included (no toolchain action: the runner's rustup, through rust-toolchain.sh);
/// `dependabot.yml` keeps them current, the composite actions' folders included.
#[test]
fn every_action_is_pinned_by_sha_to_its_current_release() {
    let mut files = workflows();
    for action in ["diskbench", "diskbench-comment"] {
        files.push((
            format!("{action}/action.yml"),
            github_file(&format!("actions/{action}/action.yml")),
        ));
    }
    let mut seen: BTreeMap<String, (String, String)> = BTreeMap::new();
    let mut pinned = 0;
    for (file, text) in &files {
        for line in text.lines() {
            let Some(uses) = line.trim().trim_start_matches("- ").strip_prefix("uses: ") else {
                continue;
            };
            if uses.starts_with("./") {
                continue;
            }
            let (action, rest) = uses.split_once('@').expect("uses: name@ref");
            let (sha, comment) = rest
                .split_once(" # ")
                .unwrap_or_else(|| panic!("{file}: {uses}: no `# vX.Y.Z` comment"));
            assert!(
                sha.len() == 40
                    && sha
                        .chars()
                        .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()),
                "{file}: {uses}: not a full commit SHA"
            );
            let version = comment.trim();
            let parts: Vec<&str> = version.trim_start_matches('v').split('.').collect();
            assert!(
                version.starts_with('v')
                    && parts.len() == 3
                    && parts
                        .iter()
                        .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit())),
                "{file}: {uses}: the comment must be the release, vX.Y.Z"
            );
            let major = format!("v{}", parts[0]);
            assert!(
                CURRENT_MAJORS.contains(&(action, major.as_str())),
                "{file}: {uses} is not on the current major of {action}"
            );
            if let Some((s, v)) = seen.get(action) {
                assert_eq!(
                    (s.as_str(), v.as_str()),
                    (sha, version),
                    "{file}: {action} pinned differently elsewhere"
                );
            }
            seen.insert(action.to_string(), (sha.to_string(), version.to_string()));
            pinned += 1;
        }
        assert!(
            !text.contains("ubuntu-22.04"),
            "{file}: ubuntu-22.04 (deprecated, retired 2027-04-17)"
        );
    }
    assert!(pinned > 15, "only {pinned} pinned uses: read");
    for (action, _) in CURRENT_MAJORS {
        assert!(
            seen.contains_key(*action),
            "{action} is not used any more: drop it"
        );
    }
    let dependabot = github_file("dependabot.yml");
    for needle in [
        "package-ecosystem: github-actions",
        "- /\n",
        "- /.github/actions/diskbench\n",
        "- /.github/actions/diskbench-comment\n",
        "interval: weekly",
    ] {
        assert!(dependabot.contains(needle), "dependabot.yml: {needle}");
    }
    // Toolchains: every job that runs cargo on a runner's own image sets Rust up with the
    // runner's rustup, pinned or not by nothing but rustup's signed channel.
    let setup = github_file("scripts/rust-toolchain.sh");
    assert!(
        setup.contains("rustup toolchain install \"$toolchain\"")
            && setup.contains("RUSTUP_TOOLCHAIN=$toolchain"),
        "{setup}"
    );
    for (file, text) in &files {
        assert!(
            !text.contains("rust-toolchain@") && !text.contains("actions-rs/"),
            "{file}: a toolchain action"
        );
        if !file.ends_with(".yml") || file.contains('/') {
            continue;
        }
        let (_, jobs) = workflow_jobs(text);
        for job in &jobs {
            let body = job.lines.join("\n");
            let runs_cargo = job.lines.iter().any(|l| {
                let l = l
                    .trim()
                    .trim_start_matches("- ")
                    .trim_start_matches("run: ");
                l.starts_with("cargo ")
            });
            if runs_cargo && !body.contains("container:") {
                assert!(
                    body.contains(".github/scripts/rust-toolchain.sh "),
                    "{file}: job {} runs cargo without setting its toolchain up",
                    job.name
                );
            }
        }
    }
}

/// Artifacts outlive a day: every upload in the benchmark and release workflows keeps its
/// files RETENTION_DAYS (7) days, the record artifacts too (the action's retention-days), so
/// a failed or cancelled merge, push or deploy job can be re-run in that window; the manual
/// says so.
#[test]
fn artifacts_are_kept_for_the_rerun_window() {
    let bench = github_file("workflows/benchmark.yml");
    assert_eq!(workflow_env(&bench, "RETENTION_DAYS"), "7");
    for (file, text) in [
        ("benchmark.yml", bench.clone()),
        ("release.yml", github_file("workflows/release.yml")),
    ] {
        let (_, jobs) = workflow_jobs(&text);
        let mut uploads = 0;
        for job in &jobs {
            for step in steps(job) {
                let uploads_here = step.contains("actions/upload-artifact@")
                    || step.contains("actions/upload-pages-artifact@")
                    || step.contains("uses: ./.github/actions/diskbench");
                if !uploads_here || step.contains("install-only") {
                    continue;
                }
                uploads += 1;
                assert!(
                    step.contains("retention-days: ${{ env.RETENTION_DAYS }}")
                        || step.contains("retention-days: 7\n")
                        || step.ends_with("retention-days: 7"),
                    "{file}: job {}: an upload without the 7-day retention:\n{step}",
                    job.name
                );
            }
        }
        let least = if file == "benchmark.yml" { 5 } else { 1 };
        assert!(uploads >= least, "{file}: only {uploads} uploads read");
    }
    let action = github_file("actions/diskbench/action.yml");
    assert!(action.contains("retention-days: ${{ inputs.retention-days }}"));
    let manual = fs::read_to_string(common::repo_root().join("content/github-actions.md")).unwrap();
    assert!(
        manual.contains("7 days"),
        "content/github-actions.md says nothing of the 7 days"
    );
}

/// The bench job's cargo-build step measures the same thing every week: a fixed crate at a
/// fixed commit, built with a fixed toolchain (not `@stable`, not this repository's `main`).
#[test]
fn the_benchmark_workload_is_pinned() {
    let text = github_file("workflows/benchmark.yml");
    let repository = workflow_env(&text, "WORKLOAD_REPOSITORY");
    let reference = workflow_env(&text, "WORKLOAD_REF");
    let toolchain = workflow_env(&text, "WORKLOAD_TOOLCHAIN");
    assert_eq!(repository.matches('/').count(), 1, "{repository}");
    assert!(
        reference.len() == 40 && reference.chars().all(|c| c.is_ascii_hexdigit()),
        "WORKLOAD_REF {reference} is not a commit SHA"
    );
    let parts: Vec<&str> = toolchain.split('.').collect();
    assert!(
        parts.len() == 3 && parts.iter().all(|p| p.parse::<u32>().is_ok()),
        "WORKLOAD_TOOLCHAIN {toolchain} is not a fixed release"
    );
    let (_, jobs) = workflow_jobs(&text);
    let bench_steps = steps(job(&jobs, "bench"));
    let checkout = bench_steps
        .iter()
        .find(|s| s.contains("repository: ${{ env.WORKLOAD_REPOSITORY }}"))
        .expect("the bench job checks the workload out");
    assert!(
        checkout.contains("ref: ${{ env.WORKLOAD_REF }}"),
        "{checkout}"
    );
    let path = checkout
        .lines()
        .find_map(|l| l.trim().strip_prefix("path: "))
        .expect("the workload's path");
    let toolchain_step = bench_steps
        .iter()
        .find(|s| s.contains("rust-toolchain.sh"))
        .expect("a toolchain step");
    assert!(
        toolchain_step.contains("run: .github/scripts/rust-toolchain.sh \"$WORKLOAD_TOOLCHAIN\""),
        "{toolchain_step}"
    );
    let action = bench_steps
        .iter()
        .find(|s| s.contains("uses: ./.github/actions/diskbench"))
        .expect("the action");
    assert!(
        action.contains(&format!("working-directory: {path}\n")),
        "{action}"
    );
}

/// ci.yml runs what .ci/run runs: every check command of .ci/run (cargo, actionlint, the
/// action linter, shellcheck) is a step of ci.yml, and every package .ci/run installs is
/// installed by some job there. And CI runs the composite action itself on ubuntu-latest,
/// briefly, once with what-if (sudo-rs there).
#[test]
fn ci_runs_what_ci_run_runs_and_the_action_itself() {
    let root = common::repo_root();
    let ci_run = fs::read_to_string(root.join(".ci/run")).unwrap();
    let ci = github_file("workflows/ci.yml");
    let run_lines: Vec<String> = ci
        .lines()
        .map(|l| {
            l.trim()
                .trim_start_matches("- ")
                .trim_start_matches("run: ")
                .to_string()
        })
        .collect();
    let mut commands = 0;
    for line in ci_run.lines().map(str::trim) {
        let is_check = ["cargo ", "actionlint ", "shellcheck ", "python3 .github/"]
            .iter()
            .any(|p| line.starts_with(p))
            && !line.contains("-version");
        if !is_check {
            continue;
        }
        commands += 1;
        assert!(
            run_lines.iter().any(|l| l == line),
            ".ci/run runs `{line}`, ci.yml does not"
        );
    }
    assert!(commands >= 6, "only {commands} commands read from .ci/run");
    // Packages: every `apt-get install` of .ci/run (continued lines joined).
    let joined = ci_run.replace("\\\n", " ");
    let mut packages = Vec::new();
    for line in joined.lines().filter(|l| l.contains("apt-get install")) {
        for word in line
            .split_whitespace()
            .skip_while(|w| *w != "install")
            .skip(1)
        {
            if word.starts_with('-') || word.starts_with('>') || word.starts_with('/') {
                continue;
            }
            packages.push(word.to_string());
        }
    }
    assert!(packages.len() >= 6, "{packages:?}");
    let ci_joined = ci.replace("\\\n", " ");
    let installed: Vec<&str> = ci_joined
        .lines()
        .filter(|l| l.contains("apt-get install"))
        .flat_map(|l| l.split_whitespace())
        .collect();
    for package in &packages {
        assert!(
            installed.contains(&package.as_str()),
            ".ci/run installs {package}, ci.yml does not"
        );
    }

    let (_, jobs) = workflow_jobs(&ci);
    let action = job(&jobs, "action");
    assert!(
        action
            .lines
            .iter()
            .any(|l| l.trim() == "runs-on: ubuntu-latest")
    );
    let uses: Vec<String> = steps(action)
        .into_iter()
        .filter(|s| s.contains("uses: ./.github/actions/diskbench"))
        .collect();
    assert_eq!(uses.len(), 3, "{uses:#?}");
    for step in &uses {
        assert!(step.contains("runtime: \"1\""), "a short run: {step}");
    }
    assert!(uses[1].contains("what-if: \"true\""), "{}", uses[1]);
    // like: through the action, with a label the published figures have, and the record
    // checked to be a --like run of that label.
    assert!(uses[2].contains("like: github-x64-2x8"), "{}", uses[2]);
    let published =
        fs::read_to_string(root.join("fixtures/published/hardware-node-runners-2026-10-08.csv"))
            .unwrap();
    assert!(
        published.contains(",github-x64-2x8,"),
        "the like: label is not published"
    );
    assert!(
        steps(action)
            .iter()
            .any(|s| s.contains("the like: run is no --like run")),
        "the job checks the like: record"
    );
    assert!(
        steps(action)
            .iter()
            .any(|s| s.contains("runner.ci lacks the job's metadata")),
        "the job checks the records"
    );
}

/// The release workflow: dispatched with a version from the default branch; builds static
/// binaries for both architectures natively with no cache; tags only after the build; a tag
/// pushed by hand is checked by release.sh check-tag.
#[test]
fn the_release_workflow_builds_then_pins_then_tags() {
    let text = github_file("workflows/release.yml");
    for needle in [
        "workflow_dispatch:",
        "tags: [\"v*\"]",
        "release.sh check-tag \"$TAG\"",
        "release.sh check \"$VERSION\"",
        "refs/heads/$DEFAULT_BRANCH",
        "target: x86_64-unknown-linux-musl",
        "target: aarch64-unknown-linux-musl",
        "runner: ubuntu-24.04-arm",
        "musl-tools",
        "Requesting program interpreter",
        "needs: [prepare, build, attest]",
        "release.sh publish \"$VERSION\" dist",
        // Stripped: the symbols only serve a debugger, and every action install downloads it.
        "CARGO_PROFILE_RELEASE_STRIP: symbols",
        "run: .github/scripts/rust-toolchain.sh stable --target \"$TARGET\"",
    ] {
        assert!(text.contains(needle), "release.yml: {needle}");
    }
    let (_, jobs) = workflow_jobs(&text);
    for name in ["build", "publish", "prepare", "hand-pushed-tag"] {
        let body = job(&jobs, name).lines.join("\n");
        for cache in ["actions/cache", "rust-cache"] {
            assert!(!body.contains(cache), "job {name} restores {cache}");
        }
    }
    // The build jobs check the binary they made is static and runs.
    let build = job(&jobs, "build").lines.join("\n");
    assert!(build.contains("\"$bin\" diskbench --version"), "{build}");
}

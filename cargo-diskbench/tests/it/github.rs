//! Integration tests: github. The job summary (snapshots), `cargo diskbench merge` as the
//! benchmark workflow's merge job runs it, and the action/workflow files' shape.
//!
//! Snapshots are plain files under `tests/it/snapshots/`, compared exactly; run with
//! `UPDATE_SNAPSHOTS=1` to rewrite them after an intended change, and review the diff.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use record::results::file_name;
use record::*;
use serde_json::{Value, json};

use crate::common;

// ---------------------------------------------------------------------------------------------
// Hand-built records

// Types without Default are built from JSON, so that fields other parts add later (always
// `#[serde(default)]`) do not break these tests.

fn column(c: ColumnId, iops: f64, p99_ns: u64, engine: &str) -> TestResult {
    let (rw, bs, iodepth, numjobs, sync) = match c {
        ColumnId::SeqRead => ("read", 1u64 << 20, 32, 1, "none"),
        ColumnId::SeqWrite => ("write", 1 << 20, 32, 1, "none"),
        ColumnId::RandRead => ("randread", 4096, 32, 4, "none"),
        ColumnId::RandWrite => ("randwrite", 4096, 32, 4, "none"),
        ColumnId::Qd1Read => ("randread", 4096, 1, 1, "none"),
        ColumnId::SyncWrite => ("write", 4096, 1, 1, "fdatasync:1"),
    };
    let elapsed_s = 5.0;
    let ios = (iops * elapsed_s) as u64;
    let stats = json!({
        "ios": ios,
        "bytes": ios * bs,
        "iops": iops,
        "mib_s": iops * bs as f64 / 1048576.0,
        "lat_ns": {
            "min": p99_ns / 10, "mean": p99_ns / 3, "p50": p99_ns / 4, "p90": p99_ns / 2,
            "p99": p99_ns, "p99_9": p99_ns * 2, "max": p99_ns * 5,
        },
        "hist": null,
    });
    let (read, write) = if c.is_read() {
        (stats, Value::Null)
    } else {
        (Value::Null, stats)
    };
    serde_json::from_value(json!({
        "id": c.as_str(),
        "job": {
            "rw": rw, "bs": bs, "iodepth": iodepth, "numjobs": numjobs, "size": 1u64 << 30,
            "direct": true, "sync": sync, "rwmixread": null,
        },
        "engine": { "used": engine, "fallback": null, "direct": true },
        "elapsed_s": elapsed_s,
        "read": read,
        "write": write,
        "cpu": { "user_s": 0.2, "sys_s": 1.1 },
    }))
    .expect("a valid test result")
}

fn step(id: &str, name: &str, wall_s: f64, bound: Bound, why: &str) -> StepResult {
    StepResult {
        id: id.into(),
        name: name.into(),
        command: vec!["cargo".into(), "build".into()],
        status: StepStatus::Ok,
        reason: None,
        wall_s,
        user_s: wall_s * 1.5,
        sys_s: wall_s * 0.2,
        io: Some(StepIo {
            read_bytes: 10 << 20,
            write_bytes: 300 << 20,
            syscr: 1000,
            syscw: 2000,
            ..Default::default()
        }),
        io_pressure_s: Some(0.4),
        bound,
        why: why.into(),
        ..Default::default()
    }
}

/// A GitHub-hosted x64 runner: all six columns on io_uring with O_DIRECT, three steps.
fn normal_record(label: &str, id: &str, started_at: &str) -> Record {
    let mut record: Record = serde_json::from_value(json!({
        "schema": SCHEMA,
        "id": id,
        "source": "measured",
        "started_at": started_at,
        "finished_at": started_at.replace("T10:00", "T10:03"),
        "tool": { "name": "cargo-diskbench", "version": "0.1.0" },
        "runner": {
            "label": "", "provider": null, "arch": "", "vcpus": 0, "memory_gib": 0.0,
            "cpu_model": "", "kernel": "", "os": "",
        },
        "storage": {
            "path": "", "fstype": "", "mount_source": "", "mount_options": "", "class": "unknown",
        },
        "settings": {
            "suite": "standard", "runtime_s": 5.0, "ramp_s": 1.0, "size": 1u64 << 30,
            "engine": "auto",
        },
        "tests": [],
    }))
    .expect("a valid record");
    record.runner = Runner {
        label: label.into(),
        provider: Some("github-hosted".into()),
        arch: "x64".into(),
        vcpus: 4,
        memory_gib: 15.6,
        cpu_model: "AMD EPYC 7763 64-Core Processor".into(),
        kernel: "6.8.0-1017-azure".into(),
        os: "Ubuntu 24.04.1 LTS".into(),
        ci: Some(Ci {
            system: "github-actions".into(),
            run_id: Some("12345".into()),
            job: Some("bench".into()),
            image: Some("ubuntu24/20261118.1".into()),
            ..Default::default()
        }),
        ..Default::default()
    };
    record.storage = Storage {
        path: "/home/runner/work/app/app".into(),
        fstype: "ext4".into(),
        mount_source: "/dev/root".into(),
        mount_options: "rw,relatime,discard".into(),
        device: Some(Device {
            name: "sda".into(),
            model: Some("Virtual Disk".into()),
            rotational: Some(true),
            transport: Some("scsi".into()),
            scheduler: Some("mq-deadline".into()),
            ..Default::default()
        }),
        class: StorageClass::VmDisk,
        class_evidence: vec![
            "vendor = Msft, model = Virtual Disk".into(),
            "transport = scsi (Hyper-V storvsc)".into(),
            "DMI sys_vendor = Microsoft Corporation".into(),
            "rotational = 1 (hypervisors report this for remote disks)".into(),
        ],
        ..Default::default()
    };
    record.tests = vec![
        column(ColumnId::SeqRead, 209.6, 158_000_000, "io_uring"),
        column(ColumnId::SeqWrite, 208.1, 161_300_000, "io_uring"),
        column(ColumnId::RandRead, 8_734.2, 29_100_000, "io_uring"),
        column(ColumnId::RandWrite, 8_702.9, 30_400_000, "io_uring"),
        column(ColumnId::Qd1Read, 1_012.4, 2_150_000, "io_uring"),
        column(ColumnId::SyncWrite, 402.7, 4_880_000, "io_uring"),
    ];
    record.steps = vec![
        step(
            "cargo-build",
            "cargo build (ripgrep)",
            48.2,
            Bound::Cpu,
            "1.70 of 4 cores busy over 48.2 s, the machine stalled on I/O (PSI) for 1% of the wall time",
        ),
        step(
            "docker-build",
            "docker build (FROM scratch, 200 MiB of layers)",
            7.9,
            Bound::Bandwidth,
            "wrote 300 MiB at 38 MiB/s, 18% of this disk's sequential write",
        ),
        step(
            "sqlite",
            "SQLite inserts, one transaction each",
            12.6,
            Bound::Latency,
            "5000 commits at 2.5 ms each, close to this disk's synced-write p99 (4.88 ms)",
        ),
    ];
    record
}

/// A container on an arm64 runner: io_uring refused (seccomp), overlayfs over an ext4 mounted
/// nobarrier (cheap fdatasync), buffered I/O on some columns, one column left out, a skipped
/// and a failed step.
fn fallback_record() -> Record {
    let mut r = normal_record(
        "ubuntu-24.04-arm",
        "b7e3a1c09d2f4e58",
        "2026-11-30T10:00:00Z",
    );
    r.runner.arch = "arm64".into();
    r.runner.cpu_model = "Neoverse-N2".into();
    r.runner.in_container = true;
    r.storage.fstype = "overlay".into();
    r.storage.mount_source = "overlay".into();
    r.storage.overlay_upper = serde_json::from_value(json!({
        "path": "/var/lib/docker/overlay2/3f2a/diff",
        "fstype": "ext4",
        "mount_source": "/dev/sda1",
        "mount_options": "rw,relatime,nobarrier",
    }))
    .expect("a valid mount");
    r.storage.fsync_flags = vec!["nobarrier".into()];
    r.storage.notes = vec!["/sys/block/sda/device/model: permission denied".into()];
    for t in &mut r.tests {
        t.engine.used = "psync".into();
        t.engine.fallback = Some("io_uring_setup: EPERM (seccomp); used psync".into());
    }
    for t in r.tests.iter_mut().filter(|t| !t.id.starts_with("seq")) {
        t.engine.direct = false;
    }
    r.tests.retain(|t| t.id != "rand-write");
    r.tests[0].notes = vec!["the first second was 3x slower (cloud disk warm-up)".into()];
    r.steps[1].status = StepStatus::Skipped;
    r.steps[1].reason = Some("docker not found on PATH".into());
    r.steps[2].status = StepStatus::Failed;
    r.steps[2].exit_code = Some(101);
    r.steps[2].reason = Some("sqlite3: disk I/O error".into());
    r.notes = vec!["--only: rand-write left out".into()];
    r
}

// ---------------------------------------------------------------------------------------------
// Snapshots

fn snapshot_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/it/snapshots")
}

/// Compare `actual` with the stored snapshot `name`, or rewrite it with `UPDATE_SNAPSHOTS=1`.
fn assert_snapshot(name: &str, actual: &str) {
    let path = snapshot_dir().join(name);
    if std::env::var_os("UPDATE_SNAPSHOTS").is_some_and(|v| v == "1") {
        fs::create_dir_all(snapshot_dir()).unwrap();
        fs::write(&path, actual).unwrap();
        return;
    }
    let expected = fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "snapshot {}: {e}; run with UPDATE_SNAPSHOTS=1 to create it",
            path.display()
        )
    });
    if expected != actual {
        let first_diff = expected
            .lines()
            .zip(actual.lines())
            .position(|(a, b)| a != b)
            .unwrap_or_else(|| expected.lines().count().min(actual.lines().count()));
        panic!(
            "snapshot {} differs from line {}:\n--- expected\n{}\n--- actual\n{}\n\
             (run with UPDATE_SNAPSHOTS=1 to accept the new output)",
            path.display(),
            first_diff + 1,
            expected.lines().nth(first_diff).unwrap_or("<end of file>"),
            actual.lines().nth(first_diff).unwrap_or("<end of file>"),
        );
    }
}

#[test]
fn summary_of_a_normal_run() {
    let record = normal_record("ubuntu-24.04", "4f1c2d3e5a6b7c8d", "2026-11-30T10:00:00Z");
    assert_snapshot("summary-normal.md", &site_gen::summary::markdown(&record));
}

#[test]
fn summary_of_a_run_with_fallbacks_and_a_skipped_step() {
    let md = site_gen::summary::markdown(&fallback_record());
    assert_snapshot("summary-fallback.md", &md);
    // What the snapshot must say, whatever its wording.
    assert!(md.contains("psync"));
    assert!(md.contains("EPERM"));
    assert!(md.contains("docker not found on PATH"));
    assert!(md.contains("nobarrier"));
    assert!(!md.contains("Random write"), "a column not run is omitted");
}

#[test]
fn summary_escapes_record_strings() {
    let mut record = normal_record(
        "evil|label <script>alert(1)</script>",
        "0123456789abcdef",
        "2026-11-30T10:00:00Z",
    );
    record.steps[0].why = "a | b\n| injected | row |".into();
    record.runner.cpu_model = "[click](javascript:alert(1)) <img src=x onerror=alert(1)>".into();
    let md = site_gen::summary::markdown(&record);
    assert_snapshot("summary-escaped.md", &md);
    assert!(!md.contains("<script"), "{md}");
    assert!(!md.contains("<img"), "{md}");
    assert!(
        md.contains("\\[click\\](javascript"),
        "the link is literal text: {md}"
    );
    // Every table row still has exactly its columns: no unescaped `|` was added.
    for line in md.lines().filter(|l| l.starts_with("| ")) {
        let cells = line.replace("\\|", "").matches('|').count();
        // Columns: 4 cells (5 bars); steps: 6 cells (7 bars).
        assert!(cells == 5 || cells == 7, "broken row: {line}");
    }
}

// ---------------------------------------------------------------------------------------------
// Merge

fn write_json(path: &Path, record: &Record, pretty: bool) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    let text = if pretty {
        serde_json::to_string_pretty(record).unwrap() + "\n"
    } else {
        serde_json::to_string(record).unwrap()
    };
    fs::write(path, text).unwrap();
}

/// Every file under `dir` (relative path -> bytes).
fn folder_contents(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let rel = p.strip_prefix(dir).unwrap().to_string_lossy().into_owned();
                out.insert(rel, fs::read(&p).unwrap());
            }
        }
    }
    out
}

/// The benchmark workflow's merge job, locally: the accumulated results hold an earlier run;
/// the artifacts hold a new record from each of two runners (one of them with a failed step),
/// the same record uploaded twice (a re-run job), a truncated upload, and nothing at all from a
/// third runner whose job failed. The merge adds exactly the two new records, byte for byte
/// under the contract's names, leaves the earlier record alone, reports the missing runner, and
/// the site builds from the result.
#[test]
fn merge_adds_new_records_once_and_reports_missing_runners() {
    let tmp = tempfile::tempdir().unwrap();
    let results = tmp.path().join("data/results");
    let artifacts = tmp.path().join("artifacts");

    let earlier = normal_record("ubuntu-24.04", "00aa11bb22cc33dd", "2026-11-23T10:00:00Z");
    let earlier_path = results.join(file_name(&earlier));
    write_json(&earlier_path, &earlier, true);
    let before = folder_contents(&results);

    let x64 = normal_record("ubuntu-24.04", "4f1c2d3e5a6b7c8d", "2026-11-30T10:00:00Z");
    let mut arm = fallback_record();
    arm.steps[1].status = StepStatus::Failed; // a step that failed is still a measurement
    let x64_src = artifacts.join("diskbench-ubuntu-24-04-1/record.json");
    let arm_src = artifacts.join("diskbench-ubuntu-24-04-arm-1/record.json");
    write_json(&x64_src, &x64, true);
    write_json(&arm_src, &arm, true);
    // The same record uploaded again by a re-run job, serialised differently (compact): it is
    // the same record by content and must be skipped, not added twice.
    write_json(
        &artifacts.join("diskbench-ubuntu-24-04-2/record.json"),
        &x64,
        false,
    );
    // The earlier record, downloaded again (e.g. an old artifact still matching the pattern).
    write_json(&artifacts.join("old/earlier.json"), &earlier, false);
    // A truncated upload: reported and skipped, never copied.
    fs::create_dir_all(artifacts.join("diskbench-broken")).unwrap();
    fs::write(
        artifacts.join("diskbench-broken/record.json"),
        "{\"schema\": \"diskb",
    )
    .unwrap();
    // Not a record file at all (the Markdown summary beside it): ignored.
    fs::write(
        artifacts.join("diskbench-ubuntu-24-04-1/summary.md"),
        "# hi",
    )
    .unwrap();

    let summary = tmp.path().join("step-summary.md");
    let out = common::bin()
        .args(["diskbench", "merge", "--into"])
        .arg(&results)
        .arg(&artifacts)
        .args(["--expect", "ubuntu-24.04,ubuntu-24.04-arm, ubuntu-22.04"])
        .env("GITHUB_STEP_SUMMARY", &summary)
        .env_remove("GITHUB_ACTIONS")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");

    // Exactly the expected folder: the earlier record untouched, two new ones byte-exact.
    let mut expected = before.clone();
    expected.insert(file_name(&x64), fs::read(&x64_src).unwrap());
    expected.insert(file_name(&arm), fs::read(&arm_src).unwrap());
    let actual = folder_contents(&results);
    assert_eq!(
        actual.keys().collect::<Vec<_>>(),
        expected.keys().collect::<Vec<_>>()
    );
    assert_eq!(actual, expected);
    assert_eq!(
        file_name(&arm),
        "2026-11-30-ubuntu-24-04-arm-b7e3a1c0.json",
        "the contract's file name"
    );

    assert!(
        stdout.contains("2 added, 2 duplicate(s), 1 skipped, 1 missing"),
        "{stdout}"
    );
    assert!(stdout.contains("missing    ubuntu-22.04"), "{stdout}");
    assert!(
        stderr.contains("diskbench-broken/record.json: not JSON"),
        "{stderr}"
    );
    let summary = fs::read_to_string(&summary).unwrap();
    assert!(summary.contains("**Missing runners**"), "{summary}");
    assert!(summary.contains("ubuntu-22.04"), "{summary}");
    assert!(!summary.contains("ubuntu-24.04-arm,"), "{summary}");

    // Merging the same artifacts again changes nothing.
    let again = common::bin()
        .args(["diskbench", "merge", "--into"])
        .arg(&results)
        .arg(&artifacts)
        .env_remove("GITHUB_STEP_SUMMARY")
        .output()
        .unwrap();
    assert_eq!(again.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&again.stdout).contains("0 added, 4 duplicate(s)"));
    assert_eq!(folder_contents(&results), expected);

    // The site builds from the merged folder.
    let site = tmp.path().join("site");
    let help = common::run(&["diskbench", "site", "--help"]);
    if String::from_utf8_lossy(&help.stdout).contains("--results") {
        let built = common::bin()
            .args(["diskbench", "site", "--results"])
            .arg(&results)
            .arg("--out")
            .arg(&site)
            .output()
            .unwrap();
        let site_stderr = String::from_utf8_lossy(&built.stderr);
        assert_eq!(built.status.code(), Some(0), "{site_stderr}");
        assert!(site.is_dir(), "the site's folder exists");
    } else {
        // Only while this branch is apart from the site's, whose `site` command takes
        // --results/--out: the library the command calls is used directly then.
        eprintln!("note: `site` command not wired yet; building with the library");
        site_gen::build_site(&site_gen::SiteOptions {
            results: results.clone(),
            out: site.clone(),
            strict: true,
            ..Default::default()
        })
        .expect("the site builds from the merged folder");
    }
}

#[test]
fn merge_refuses_a_conflicting_record_and_writes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let results = tmp.path().join("results");
    let a = normal_record("ubuntu-24.04", "4f1c2d3e5a6b7c8d", "2026-11-30T10:00:00Z");
    let mut b = a.clone();
    b.tests[0].read.as_mut().unwrap().iops = 1.0; // same id, different figures
    let other = normal_record("ubuntu-22.04", "99aa11bb22cc33dd", "2026-11-30T10:00:00Z");
    write_json(&tmp.path().join("in/a/r.json"), &a, true);
    write_json(&tmp.path().join("in/b/r.json"), &b, true);
    write_json(&tmp.path().join("in/c/r.json"), &other, true);

    let out = common::bin()
        .args(["diskbench", "merge", "--into"])
        .arg(&results)
        .arg(tmp.path().join("in"))
        .env_remove("GITHUB_STEP_SUMMARY")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("in/a/r.json"), "{stderr}");
    assert!(stderr.contains("in/b/r.json"), "{stderr}");
    assert!(stderr.contains("4f1c2d3e5a6b7c8d"), "{stderr}");
    assert!(
        !results.exists(),
        "nothing written, not even the other record"
    );
}

#[test]
fn merge_strict_fails_on_a_bad_file_and_writes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let results = tmp.path().join("results");
    fs::create_dir_all(&results).unwrap();
    let good = normal_record("ubuntu-24.04", "4f1c2d3e5a6b7c8d", "2026-11-30T10:00:00Z");
    write_json(&tmp.path().join("in/good.json"), &good, true);
    fs::write(
        tmp.path().join("in/future.json"),
        r#"{"schema": "diskbench.record/2", "id": "x"}"#,
    )
    .unwrap();

    let out = common::bin()
        .args(["diskbench", "merge", "--strict", "--into"])
        .arg(&results)
        .arg(tmp.path().join("in"))
        .env_remove("GITHUB_STEP_SUMMARY")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("future.json"), "{stderr}");
    assert!(stderr.contains("diskbench.record/2"), "{stderr}");
    assert!(folder_contents(&results).is_empty());

    // A source that does not exist is a usage error naming it.
    let out = common::run(&[
        "diskbench",
        "merge",
        "--into",
        "x",
        "/nonexistent/artifacts",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent/artifacts"));
}

// ---------------------------------------------------------------------------------------------
// The GitHub files

fn github_file(rel: &str) -> String {
    let path = common::repo_root().join(".github").join(rel);
    fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// actionlint lints workflows, not a composite action's metadata; this checks what a runner
/// needs from action.yml: the required keys, every input documented, and every `inputs.X`
/// the steps use declared.
#[test]
fn the_action_declares_what_its_steps_use() {
    let action = github_file("actions/diskbench/action.yml");
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
        "label",
        "only",
        "runtime",
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

// ---------------------------------------------------------------------------------------------
// The data branch

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

/// The merge job's script against a local remote: the first publication creates the data
/// branch; a second one races with another run that pushes between our fetch and our push
/// (a pre-push hook does it), so our push is refused, and the retry must keep both runs'
/// records.
#[test]
fn publishing_to_the_data_branch_survives_a_concurrent_push() {
    let tmp = tempfile::tempdir().unwrap();
    let origin = tmp.path().join("origin.git");
    let work = tmp.path().join("work");
    let other = tmp.path().join("other");
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

    let script = common::repo_root().join(".github/scripts/publish-records.sh");
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_cargo-diskbench"))
        .parent()
        .unwrap()
        .to_path_buf();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let publish = |artifacts: &Path, expect: &str| {
        let out = std::process::Command::new("bash")
            .arg(&script)
            .arg(artifacts)
            .arg(expect)
            .current_dir(&work)
            .env("PATH", &path)
            .env("RETRY_DELAY_S", "0")
            // The machine's git configuration (a global core.hooksPath, say) must not
            // change what this test does.
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("OTHER", &other)
            .env("MARKER", tmp.path().join("raced"))
            .env_remove("GITHUB_STEP_SUMMARY")
            .env_remove("GITHUB_ACTIONS")
            .output()
            .unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.status.success(), "{text}");
        text
    };
    let on_data_branch = || -> Vec<String> {
        let listing = git(
            &origin,
            &["ls-tree", "-r", "--name-only", "refs/heads/data"],
        );
        listing.lines().map(String::from).collect()
    };

    // First publication: the branch does not exist yet.
    let first = normal_record("ubuntu-24.04", "1111111111111111", "2026-11-23T10:00:00Z");
    write_json(&tmp.path().join("run1/a/record.json"), &first, true);
    let text = publish(&tmp.path().join("run1"), "ubuntu-24.04,ubuntu-24.04-arm");
    assert!(text.contains("missing    ubuntu-24.04-arm"), "{text}");
    let first_name = format!("results/{}", file_name(&first));
    assert_eq!(
        on_data_branch(),
        vec![
            "README.md".to_string(),
            "results/.gitkeep".to_string(),
            first_name.clone()
        ]
    );
    // The data branch shares no history with the code.
    assert_eq!(
        git(&origin, &["rev-list", "--count", "refs/heads/data"]).trim(),
        "1"
    );

    // Another run's publication lands between our fetch and our push.
    git(
        tmp.path(),
        &[
            "clone",
            "--quiet",
            "--branch",
            "data",
            origin.to_str().unwrap(),
            "other",
        ],
    );
    let theirs = normal_record("ubuntu-22.04", "2222222222222222", "2026-11-30T09:00:00Z");
    write_json(
        &other.join("results").join(file_name(&theirs)),
        &theirs,
        true,
    );
    git(&other, &["add", "results"]);
    git(&other, &["commit", "--quiet", "-m", "their run"]);
    let hook = work.join(".git/hooks/pre-push");
    fs::write(
        &hook,
        "#!/bin/sh\n\
         if [ ! -e \"$MARKER\" ]; then\n\
           touch \"$MARKER\"\n\
           env -u GIT_DIR -u GIT_WORK_TREE -u GIT_INDEX_FILE git -C \"$OTHER\" push --quiet origin data\n\
         fi\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(&hook, fs::Permissions::from_mode(0o755)).unwrap();

    let ours = normal_record("ubuntu-24.04", "3333333333333333", "2026-11-30T10:00:00Z");
    write_json(&tmp.path().join("run2/a/record.json"), &ours, true);
    // The earlier record again, as a re-downloaded artifact: skipped, not added twice.
    write_json(&tmp.path().join("run2/b/record.json"), &first, false);
    let text = publish(&tmp.path().join("run2"), "");
    assert!(tmp.path().join("raced").exists(), "the race happened");
    assert!(text.contains("refused (attempt 1 of 5)"), "{text}");
    let mut expected = vec![
        "README.md".to_string(),
        "results/.gitkeep".to_string(),
        first_name,
        format!("results/{}", file_name(&theirs)),
        format!("results/{}", file_name(&ours)),
    ];
    expected.sort();
    assert_eq!(on_data_branch(), expected);
    // Byte for byte what the runner uploaded.
    let stored = git(
        &origin,
        &[
            "show",
            &format!("refs/heads/data:results/{}", file_name(&ours)),
        ],
    );
    assert_eq!(
        stored.as_bytes(),
        fs::read(tmp.path().join("run2/a/record.json")).unwrap()
    );

    // Nothing new: no empty commit.
    let before = git(&origin, &["rev-parse", "refs/heads/data"]);
    let text = publish(&tmp.path().join("run2"), "");
    assert!(text.contains("nothing new"), "{text}");
    assert_eq!(git(&origin, &["rev-parse", "refs/heads/data"]), before);
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

    /// A pre-push hook (in the clone the script pushes from) running `script`.
    fn pre_push_hook(&self, script: &str) {
        use std::os::unix::fs::PermissionsExt;
        let hook = self.work.join(".git/hooks/pre-push");
        fs::write(&hook, format!("#!/bin/sh\n{script}")).unwrap();
        fs::set_permissions(&hook, fs::Permissions::from_mode(0o755)).unwrap();
    }

    /// Runs publish-records.sh; returns whether it succeeded, its output and what it added to
    /// the job summary.
    fn publish(&self, artifacts: &Path, expect: &str) -> (bool, String, String) {
        let script = common::repo_root().join(".github/scripts/publish-records.sh");
        let bin_dir = Path::new(env!("CARGO_BIN_EXE_cargo-diskbench"))
            .parent()
            .unwrap()
            .to_path_buf();
        let path = format!(
            "{}:{}",
            bin_dir.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let summary = self.tmp.path().join("step-summary.md");
        let _ = fs::remove_file(&summary);
        let out = std::process::Command::new("bash")
            .arg(&script)
            .arg(artifacts)
            .arg(expect)
            .current_dir(&self.work)
            .env("PATH", &path)
            .env("RETRY_DELAY_S", "0")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("MARKER", self.tmp.path().join("hook-ran"))
            .env("GITHUB_STEP_SUMMARY", &summary)
            .env_remove("GITHUB_ACTIONS")
            .env_remove("DATA_PUSH_TOKEN")
            .output()
            .unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let summary = fs::read_to_string(&summary).unwrap_or_default();
        (out.status.success(), text, summary)
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
}

/// Runs one phase of publish-records.sh in `remote`'s clone with `path` as PATH and the
/// environment `env`; returns whether it succeeded and its output.
fn publish_phase(
    remote: &DataRemote,
    args: &[&str],
    path: &str,
    env: &[(&str, &str)],
) -> (bool, String) {
    let script = common::repo_root().join(".github/scripts/publish-records.sh");
    let mut cmd = std::process::Command::new("bash");
    cmd.arg(&script)
        .args(args)
        .current_dir(&remote.work)
        .env("PATH", path)
        .env("RETRY_DELAY_S", "0")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("MARKER", remote.tmp.path().join("hook-ran"))
        .env_remove("GITHUB_STEP_SUMMARY")
        .env_remove("GITHUB_ACTIONS")
        .env_remove("DATA_PUSH_TOKEN");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    (
        out.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

/// The workflow's three steps: fetch and push get the token and run git alone (here with no
/// cargo-diskbench on PATH at all), merge runs cargo-diskbench and refuses to be given the
/// token. Another run pushes between our merge and our push: the push phase adds our record
/// to the new tip without cargo-diskbench, keeping both runs' records.
#[test]
fn the_merge_runs_in_a_phase_without_the_token_and_the_push_retries_without_the_tool() {
    let remote = DataRemote::new();
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_cargo-diskbench"))
        .parent()
        .unwrap()
        .display()
        .to_string();
    let system_path = std::env::var("PATH").unwrap_or_default();
    assert!(
        !system_path
            .split(':')
            .any(|d| Path::new(d).join("cargo-diskbench").exists()),
        "this test needs a PATH without cargo-diskbench"
    );
    let tool_path = format!("{bin_dir}:{system_path}");
    let token = [("DATA_PUSH_TOKEN", "not-a-real-token")];

    // A first run publishes a record, so the branch exists.
    let first = normal_record("ubuntu-24.04", "7777777777777777", "2026-11-23T10:00:00Z");
    write_json(&remote.tmp.path().join("run1/a/record.json"), &first, true);
    let (ok, text, _) = remote.publish(&remote.tmp.path().join("run1"), "");
    assert!(ok, "{text}");

    let ours = normal_record("ubuntu-24.04", "8888888888888888", "2026-11-30T10:00:00Z");
    write_json(&remote.tmp.path().join("run2/a/record.json"), &ours, true);
    let artifacts = remote.tmp.path().join("run2").display().to_string();

    let (ok, text) = publish_phase(&remote, &["fetch"], &system_path, &token);
    assert!(ok, "{text}");
    // The merge phase is never given the token.
    let (ok, text) = publish_phase(&remote, &["merge", &artifacts], &tool_path, &token);
    assert!(!ok, "{text}");
    assert!(text.contains("must not be given DATA_PUSH_TOKEN"), "{text}");
    // Nor is the one-process form, which runs cargo-diskbench too.
    let (ok, text) = publish_phase(&remote, &[&artifacts], &tool_path, &token);
    assert!(!ok, "{text}");
    assert!(text.contains("must not be given DATA_PUSH_TOKEN"), "{text}");
    let (ok, text) = publish_phase(&remote, &["merge", &artifacts], &tool_path, &[]);
    assert!(ok, "{text}");

    // Another run's record lands on the branch before our push.
    let theirs = normal_record(
        "ubuntu-24.04-arm",
        "9999999999999999",
        "2026-11-30T09:00:00Z",
    );
    git(
        remote.tmp.path(),
        &[
            "clone",
            "--quiet",
            "--branch",
            "data",
            remote.origin.to_str().unwrap(),
            "other",
        ],
    );
    let other = remote.tmp.path().join("other");
    write_json(
        &other.join("results").join(file_name(&theirs)),
        &theirs,
        true,
    );
    git(&other, &["add", "results"]);
    git(&other, &["commit", "--quiet", "-m", "their run"]);
    git(&other, &["push", "--quiet", "origin", "data"]);

    let (ok, text) = publish_phase(&remote, &["push"], &system_path, &token);
    assert!(ok, "{text}");
    assert!(text.contains("refused (attempt 1 of 5)"), "{text}");
    assert!(text.contains("pushed 1 record(s) to data"), "{text}");
    let mut expected = vec![
        "README.md".to_string(),
        "results/.gitkeep".to_string(),
        format!("results/{}", file_name(&first)),
        format!("results/{}", file_name(&theirs)),
        format!("results/{}", file_name(&ours)),
    ];
    expected.sort();
    assert_eq!(remote.data_branch_files(), expected);
    let stored = git(
        &remote.origin,
        &[
            "show",
            &format!("refs/heads/data:results/{}", file_name(&ours)),
        ],
    );
    assert_eq!(
        stored.as_bytes(),
        fs::read(remote.tmp.path().join("run2/a/record.json")).unwrap()
    );
    // Pushing again has nothing to do.
    let before = git(&remote.origin, &["rev-parse", "refs/heads/data"]);
    let (ok, text) = publish_phase(&remote, &["push"], &system_path, &token);
    assert!(ok, "{text}");
    assert_eq!(
        git(&remote.origin, &["rev-parse", "refs/heads/data"]),
        before
    );
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
    assert_eq!(
        remote.data_branch_files(),
        vec!["README.md".to_string(), "results/.gitkeep".to_string()]
    );
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
    assert_eq!(
        remote.data_branch_files(),
        vec![
            "README.md".to_string(),
            "results/.gitkeep".to_string(),
            format!("results/{}", file_name(&first)),
        ]
    );
}

/// The first publication's push is refused once (the branch does not exist yet): the retry
/// starts again from the remote and goes through; the summary reports the records once.
#[test]
fn a_refused_first_push_is_retried() {
    let remote = DataRemote::new();
    remote.pre_push_hook(
        "if [ ! -e \"$MARKER\" ]; then touch \"$MARKER\"; echo refused by hook >&2; exit 1; fi\n",
    );
    let record = normal_record("ubuntu-24.04", "5555555555555555", "2026-11-23T10:00:00Z");
    write_json(&remote.tmp.path().join("run1/a/record.json"), &record, true);
    let (ok, text, summary) = remote.publish(&remote.tmp.path().join("run1"), "");
    assert!(ok, "{text}");
    assert!(text.contains("refused (attempt 1 of 5)"), "{text}");
    assert!(text.contains("pushed 1 record(s) to data"), "{text}");
    assert_eq!(
        remote.data_branch_files(),
        vec![
            "README.md".to_string(),
            "results/.gitkeep".to_string(),
            format!("results/{}", file_name(&record)),
        ]
    );
    assert_eq!(summary.matches("1 added").count(), 1, "{summary}");
    assert!(summary.contains("Pushed to `data`"), "{summary}");
}

/// Every push refused: five attempts, then our message and exit 1; the summary does not
/// claim anything was added, and no branch was created.
#[test]
fn a_push_refused_every_time_ends_with_our_message() {
    let remote = DataRemote::new();
    remote.pre_push_hook("echo refused by hook >&2\nexit 1\n");
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

// ---------------------------------------------------------------------------------------------
// The action's run step, outside Actions

/// The `run:` script of the composite step with `id: <id>`, dedented as the runner runs it.
fn action_step_script(action: &str, id: &str) -> String {
    let lines: Vec<&str> = action.lines().collect();
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
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let rel = path.strip_prefix(dir).unwrap().display().to_string();
                out.insert(rel, fs::read(&path).unwrap());
            }
        }
    }
    out
}

struct ActionRun {
    ok: bool,
    text: String,
    outputs: BTreeMap<String, String>,
}

/// The action's `run` step as the runner would run it (bash -e, the step's env), in
/// `workspace`, with `site_out` as the site-out input.
fn run_action_step(tmp: &Path, workspace: &Path, site_out: &str) -> ActionRun {
    let script = action_step_script(&github_file("actions/diskbench/action.yml"), "run");
    let runner_temp = tmp.join("runner-temp");
    fs::create_dir_all(&runner_temp).unwrap();
    let output_file = tmp.join("github-output");
    let _ = fs::remove_file(&output_file);
    let out = std::process::Command::new("bash")
        .args(["--noprofile", "--norc", "-eo", "pipefail", "-c", &script])
        .current_dir(workspace)
        .env("BIN", env!("CARGO_BIN_EXE_cargo-diskbench"))
        .env("INPUT_LABEL", "local-test")
        .env("INPUT_ONLY", "qd1-read")
        .env("INPUT_RUNTIME", "0.3")
        .env("INPUT_STEPS", "false")
        .env("INPUT_WHAT_IF", "false")
        .env("INPUT_ARGS", "--size 16M --ramp 0 --quiet")
        .env("RESULTS_NAME", "diskbench-record")
        .env("INPUT_SITE_OUT", site_out)
        .env("RUNNER_TEMP", &runner_temp)
        .env("GITHUB_OUTPUT", &output_file)
        .env("GITHUB_STEP_SUMMARY", tmp.join("step-summary.md"))
        .env_remove("GITHUB_WORKSPACE")
        .env_remove("GITHUB_ACTIONS")
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let outputs = fs::read_to_string(&output_file)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    ActionRun {
        ok: out.status.success(),
        text,
        outputs,
    }
}

/// What the upload step needs: a record file outside the workspace, under the runner's temp
/// folder, and an artifact name made of the prefix and the record's file name.
fn assert_upload_ready(run: &ActionRun, tmp: &Path) {
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
    let run = run_action_step(tmp.path(), &workspace, "");
    assert!(run.ok, "{}", run.text);
    assert_upload_ready(&run, tmp.path());
    assert!(!run.outputs.contains_key("site"), "{:?}", run.outputs);
    assert_eq!(tree(&workspace), before, "the workspace was written to");

    // Asked for a site: there and nowhere else.
    let run = run_action_step(tmp.path(), &workspace, "report");
    assert!(run.ok, "{}", run.text);
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
    let run = run_action_step(tmp.path(), &workspace, "diskbench-site");
    assert!(!run.ok, "{}", run.text);
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

// ---------------------------------------------------------------------------------------------
// Tokens and versions, read from the workflows

/// One job of a workflow, as the few things these checks read: its permissions (scope ->
/// level) and its lines.
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
                || l.contains("dtolnay/rust-toolchain")
                || l.contains("Swatinem/rust-cache")
                || l.starts_with("- run: cargo ")
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

    fn uses(&self) -> Vec<String> {
        self.lines
            .iter()
            .filter_map(|l| l.trim().trim_start_matches("- ").strip_prefix("uses: "))
            .map(|u| u.trim().to_string())
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
    assert!(out.iter().any(|(n, _)| n == "benchmark.yml"));
    out
}

/// A job that compiles runs crates' build scripts: it must hold no write or deploy rights
/// (neither its own nor the workflow's defaults). A job with write rights checks out without
/// persisting the token, and the job that deploys does nothing else.
#[test]
fn jobs_that_build_never_hold_write_or_deploy_tokens() {
    for (file, text) in workflows() {
        let (top, jobs) = workflow_jobs(&text);
        assert!(!jobs.is_empty(), "{file}: no jobs read");
        assert_eq!(
            top,
            BTreeMap::from([("contents".to_string(), "read".to_string())]),
            "{file}: the workflow's default token must be read-only"
        );
        for job in &jobs {
            let writes = job.writes();
            if job.builds() {
                assert!(
                    writes.is_empty(),
                    "{file}: job {} builds and holds {writes:?}",
                    job.name
                );
                assert!(
                    !job.permissions.contains_key("*"),
                    "{file}: job {}",
                    job.name
                );
            }
            if !writes.is_empty() {
                let body = job.lines.join("\n");
                assert_eq!(
                    body.matches("uses: actions/checkout@").count(),
                    body.matches("persist-credentials: false").count(),
                    "{file}: job {} holds {writes:?} and persists a checkout's token",
                    job.name
                );
            }
            if job.permissions.contains_key("pages") || job.permissions.contains_key("id-token") {
                assert_eq!(
                    job.uses()
                        .iter()
                        .map(|u| u.split('@').next().unwrap().to_string())
                        .collect::<Vec<_>>(),
                    vec!["actions/deploy-pages".to_string()],
                    "{file}: job {} holds deploy rights and does more than deploy",
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
    // The merge job pushes: the token only in the environment of its fetch and push steps,
    // which run publish-records.sh (git alone); the step that runs cargo-diskbench has none.
    let (_, jobs) = workflow_jobs(&github_file("workflows/benchmark.yml"));
    let merge = jobs.iter().find(|j| j.name == "merge").expect("merge job");
    assert_eq!(merge.writes(), vec!["contents".to_string()]);
    assert!(!merge.builds());
    let mut steps: Vec<Vec<&str>> = Vec::new();
    for line in &merge.lines {
        if line.starts_with("      - ") {
            steps.push(Vec::new());
        }
        if let Some(step) = steps.last_mut() {
            step.push(line);
        }
    }
    let mut with_token = Vec::new();
    for step in &steps {
        let text = step.join("\n");
        if text.contains("github.token") {
            let run = step
                .iter()
                .find_map(|l| l.trim().strip_prefix("run: "))
                .unwrap_or("");
            if text.contains("DATA_PUSH_TOKEN") {
                with_token.push(run.to_string());
            } else {
                // The gate reads the API (actions: read); it runs no program of ours.
                assert!(text.contains("id: gate"), "{text}");
            }
        }
        if text.contains("publish-records.sh merge") || text.contains("tool/cargo-diskbench") {
            assert!(
                !text.contains("token"),
                "cargo-diskbench runs beside a token: {text}"
            );
        }
    }
    assert_eq!(
        with_token,
        vec![
            ".github/scripts/publish-records.sh fetch".to_string(),
            ".github/scripts/publish-records.sh push".to_string(),
        ]
    );
    assert!(
        steps
            .iter()
            .any(|s| s.join("\n").contains("publish-records.sh merge artifacts"))
    );
}

/// The current major of every action the workflows and the action use, all on Node 24
/// (checked on 2026-12-01 against each action's tags and action.yml `runs.using`; update
/// when a new major is released). Composite actions (dtolnay/rust-toolchain) are not run on
/// Node and are pinned by branch.
const CURRENT_MAJORS: &[(&str, &str)] = &[
    ("actions/checkout", "v7"),
    ("actions/cache/restore", "v5"),
    ("actions/cache/save", "v5"),
    ("actions/upload-artifact", "v7"),
    ("actions/download-artifact", "v8"),
    ("actions/upload-pages-artifact", "v5"),
    ("actions/deploy-pages", "v5"),
    ("Swatinem/rust-cache", "v2"),
    ("dtolnay/rust-toolchain", "stable"),
    ("dtolnay/rust-toolchain", "master"),
];

#[test]
fn every_action_is_on_its_current_major() {
    let mut files = workflows();
    files.push((
        "action.yml".into(),
        github_file("actions/diskbench/action.yml"),
    ));
    let mut seen = 0;
    for (file, text) in files {
        for line in text.lines() {
            let Some(uses) = line.trim().trim_start_matches("- ").strip_prefix("uses: ") else {
                continue;
            };
            if uses.starts_with("./") {
                continue;
            }
            let (name, version) = uses.split_once('@').expect("uses: name@version");
            assert!(
                CURRENT_MAJORS.contains(&(name, version)),
                "{file}: {uses} is not on the current major of {name}"
            );
            seen += 1;
        }
        assert!(
            !text.contains("ubuntu-22.04"),
            "{file}: ubuntu-22.04 (deprecated, retired 2027-04-17)"
        );
    }
    assert!(seen > 10, "only {seen} uses: read");
}

// ---------------------------------------------------------------------------------------------
// The benchmark workflow's scripts, outside Actions

/// Runs the `run:` script of the step with `id: <id>` in benchmark.yml with `program`
/// (bash or python3) and `env`; returns (exit code, output, what it wrote to $GITHUB_OUTPUT).
fn run_workflow_step(id: &str, program: &str, env: &[(&str, &str)]) -> (i32, String, String) {
    let script = action_step_script(&github_file("workflows/benchmark.yml"), id);
    let tmp = tempfile::tempdir().unwrap();
    let output_file = tmp.path().join("github-output");
    let mut cmd = std::process::Command::new(program);
    if program == "bash" {
        cmd.args(["--noprofile", "--norc", "-eo", "pipefail", "-c", &script]);
    } else {
        cmd.args(["-c", &script]);
    }
    cmd.current_dir(tmp.path())
        .env("GITHUB_OUTPUT", &output_file)
        .env("GITHUB_REPOSITORY", "owner/repo")
        .env("GITHUB_RUN_ID", "1")
        .env("GITHUB_RUN_ATTEMPT", "1")
        .env("DEFAULT_RUNNERS", "ubuntu-24.04, ubuntu-24.04-arm");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let written = fs::read_to_string(&output_file).unwrap_or_default();
    // Nothing an input smuggled in ran.
    assert!(!tmp.path().join("pwned").exists(), "{text}");
    (out.status.code().unwrap_or(-1), text, written)
}

/// queue-minutes is checked as digits in the setup job, before any shell sees it, and the
/// watchdog checks it again before its arithmetic; macOS and Windows labels are refused
/// with the reason.
#[test]
fn the_setup_job_checks_queue_minutes_and_refuses_non_linux_labels() {
    let setup = |runners: &str, minutes: &str| {
        run_workflow_step(
            "labels",
            "python3",
            &[("RUNNERS", runners), ("QUEUE_MINUTES", minutes)],
        )
    };
    let (code, text, written) = setup("", "");
    assert_eq!(code, 0, "{text}");
    assert!(
        written.contains("runners=[\"ubuntu-24.04\", \"ubuntu-24.04-arm\"]"),
        "{written}"
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
    let gh = tmp.path().join("gh");
    fs::write(
        &gh,
        "#!/bin/sh\ncase \"$*\" in\n  */jobs*) printf '%s' \"$FAKE_CANCELLED_JOBS\" ;;\n  \
         */artifacts*) printf '%s' \"$FAKE_ARTIFACTS\" ;;\n  *) exit 9 ;;\nesac\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(&gh, fs::Permissions::from_mode(0o755)).unwrap();
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

/// A self-hosted runner without cargo or a C compiler: the install step names both and what
/// to install, before building or measuring anything; with the binary cached and the build
/// steps off, neither is needed.
#[test]
fn the_action_names_missing_cargo_and_cc_before_building() {
    let script = action_step_script(&github_file("actions/diskbench/action.yml"), "install");
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
        text.contains("missing to build cargo-diskbench: cargo: add dtolnay/rust-toolchain"),
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

/// The action keys its cached binary on a hash of the paths listed in its `source` step: every
/// file a crate compiles in with `include_str!`/`include_bytes!` (outside `#[cfg(test)]`) must
/// be under one of them, or a change to it would keep serving the old binary.
#[test]
fn the_action_cache_key_covers_every_file_compiled_in() {
    let script = action_step_script(&github_file("actions/diskbench/action.yml"), "source");
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
        let mut stack = vec![root.join(crate_dir).join("src")];
        while let Some(dir) = stack.pop() {
            for entry in fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    stack.push(path);
                    continue;
                }
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
    }
    assert!(seen >= 8, "only {seen} include_str! found");
    // site-gen's build script embeds content/*.md.
    assert!(
        fs::read_to_string(root.join("site-gen/build.rs"))
            .unwrap()
            .contains("../content")
    );
    assert!(hashed.contains(&"content"));
}

/// The action's default `steps: true` runs the cargo-build step in the user's project: its
/// `cargo fetch` and `cargo build` write a Cargo.lock into a project that commits none. The
/// step removes the lockfile it created (so neither the action nor a local run leaves one
/// behind) and leaves a lockfile that was there as it was.
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

/// The queue watchdog's loop, with `sleep`, `date` and `gh` faked (a minute passes per
/// `date`): it waits while a bench job runs, gives up on the still-queued ones once none runs
/// and the limit has passed (naming them), and stops without a cancel once every job started.
#[test]
fn the_queue_watchdog_gives_up_only_on_jobs_still_queued_after_the_limit() {
    use std::os::unix::fs::PermissionsExt;
    let fake = |answers: &[&str], rest: &str, minutes: &str| {
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
            let path = dir.path().join(name);
            fs::write(&path, text).unwrap();
            fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).unwrap();
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
    );
    assert_eq!(code, 0, "{text}");
    assert!(written.is_empty(), "{written}");
    assert_eq!(calls, 4, "{text}");
}

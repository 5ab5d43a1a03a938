//! `run --like LABEL` records on the site, in `compare` and in the job summary: a run under
//! caps is its own (emulated) runner, never merged into the real disk's figures.

use std::path::Path;

use serde_json::Value;

use crate::common::{self, Ran, by_id};

const LIKE: &str = "runson-m8a-2xlarge";
const REAL: &str = "ubuntu-24.04";

/// `site --results results --out out`, then its data/runners.json.
fn site(results: &Path, out: &Path) -> Value {
    let mut cmd = common::bin();
    Ran::of(
        cmd.arg("site")
            .arg("--results")
            .arg(results)
            .arg("--out")
            .arg(out),
    )
    .ok();
    serde_json::from_str(&std::fs::read_to_string(out.join("data/runners.json")).unwrap()).unwrap()
}

fn runner<'a>(runners: &'a Value, label: &str) -> Option<&'a Value> {
    runners["runners"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["label"] == label)
}

/// A `--like` record made from REAL's newest run as the bug report had it: the same label,
/// newer, the variant `capped like LIKE`, every figure a tenth (a cap slowed it down).
fn like_record(real: &[record::Record]) -> record::Record {
    let newest = real
        .iter()
        .filter(|r| r.runner.label == REAL)
        .max_by(|a, b| a.started_at.cmp(&b.started_at))
        .unwrap();
    let mut r = newest.clone();
    r.id = format!("1ike0000{}", r.id);
    r.started_at = format!("{}:59:59Z", &newest.started_at[..13]);
    r.finished_at = r.started_at.clone();
    r.runner.variant = Some(format!("capped like {LIKE}"));
    r.settings.like = Some(record::LikeSettings {
        label: LIKE.into(),
        from: "published.csv (imported:csv)".into(),
        ..Default::default()
    });
    for t in &mut r.tests {
        for d in [t.read.as_mut(), t.write.as_mut()].into_iter().flatten() {
            d.iops /= 10.0;
            d.mib_s /= 10.0;
        }
    }
    r
}

/// After `run --like X` the site's runner for this machine must not read "capped like X, 3
/// runs" with capped and uncapped medians mixed: the real runner's entry in
/// data/runners.json is byte for byte what it was before the like run, the emulation is a
/// runner of its own (own label, own page, marked), the findings never name it, and
/// `compare` takes the real runner's newest real run.
#[test]
fn a_like_run_leaves_the_real_runners_figures_unchanged_and_is_its_own_runner() {
    let results = common::sandbox();
    let real = site_gen::testdata::Fleet::small().records();
    for r in &real {
        record::results::write_record(results.path(), r).unwrap();
    }
    let before_out = common::sandbox();
    let before = site(results.path(), before_out.path());
    let real_before = runner(&before, REAL).unwrap().clone();

    let like = like_record(&real);
    let like_path = record::results::write_record(results.path(), &like).unwrap();
    let after_out = common::sandbox();
    let after = site(results.path(), after_out.path());
    assert_eq!(runner(&after, REAL).unwrap(), &real_before);
    let emulated_label = format!("{REAL} like {LIKE} (capped)");
    let emulated = runner(&after, &emulated_label).unwrap_or_else(|| panic!("{after:#}"));
    assert_eq!(emulated["emulates"], LIKE);
    assert!(runner(&before, &emulated_label).is_none());
    // Its figures are the like run's alone: a tenth of the real runner's.
    let (e, r) = (
        emulated["columns"]["qd1-read"]["median"].as_f64().unwrap(),
        real_before["columns"]["qd1-read"]["median"]
            .as_f64()
            .unwrap(),
    );
    assert_eq!(emulated["columns"]["qd1-read"]["runs"], 1);
    assert!(e < r / 5.0, "{e} vs {r}");

    // Its own page, and a row under the emulations, marked as one; never in the findings.
    let slug = emulated["slug"].as_str().unwrap();
    let page =
        std::fs::read_to_string(after_out.path().join(format!("runners/{slug}.html"))).unwrap();
    assert!(page.contains("not a disk"), "{page}");
    let index = std::fs::read_to_string(after_out.path().join("index.html")).unwrap();
    let (findings, every) = index.split_once("id=\"every\"").unwrap();
    assert!(!findings.contains("(capped)"), "{findings}");
    assert!(every.contains("Emulations (run --like)"), "{every}");
    let real_slug = real_before["slug"].as_str().unwrap();
    let real_page =
        std::fs::read_to_string(after_out.path().join(format!("runners/{real_slug}.html")))
            .unwrap();
    assert!(!real_page.contains("capped like"), "{real_page}");

    // compare: the real runner's newest run is a real one; the like record has no history.
    let compare = |new: &Path, extra: &[&str]| {
        let mut cmd = common::bin();
        Ran::of(cmd.arg("compare").arg(results.path()).arg(new).args(extra))
    };
    let cmp = compare(results.path(), &["--label", REAL, "--json"])
        .ok()
        .record();
    assert_ne!(cmp[0]["new_id"], like.id.as_str(), "{cmp:#}");
    compare(&like_path, &[]).code(2).says(&emulated_label);

    // The job summary names the emulation.
    let md = site_gen::job_summary::markdown(&like);
    assert!(
        md.starts_with(&format!(
            "## cargo-diskbench: {}",
            site_gen::job_summary::escape(&emulated_label)
        )),
        "{md}"
    );
}

/// `cargo diskbench run` with small sizes on `dir`, `extra` added; the record it printed.
fn small_run(dir: &Path, results: &Path, extra: &[&str]) -> (Value, String) {
    small_run_with(dir, results, extra, &[])
}

/// [`small_run`] with these environment variables set.
fn small_run_with(
    dir: &Path,
    results: &Path,
    extra: &[&str],
    env: &[(&str, &str)],
) -> (Value, String) {
    let mut cmd = common::bin();
    cmd.envs(env.iter().copied())
        .args(common::args(
            "run --no-steps --no-site --only seq-read,qd1-read,sync-write --size 32M \
             --runtime 0.5 --ramp 0.25 --json -",
        ))
        .args(extra)
        .arg("--dir")
        .arg(dir)
        .arg("--results")
        .arg(results);
    let ran = Ran::of(&mut cmd).ok();
    (ran.record(), ran.stderr)
}

/// The like run kept apart, with the real command line: two real runs, the site; then `run --like`
/// (real cgroup caps, and a real FUSE mount where /dev/fuse opens): the site's runner for this
/// machine keeps exactly its figures and the like run is its own runner; the like record and
/// table give, for qd1-read and sync-write, the target's time per I/O and p99 beside the
/// emulated run's; and `steps --what-if --like` puts the sqlite step's database on the
/// emulation (or, without FUSE, labels its estimate of the latency it leaves out).
#[test]
#[ignore = "needs root: --like puts the columns in a capped cgroup"]
fn run_like_is_its_own_runner_and_says_which_latency_it_leaves_out() {
    common::require_root();
    let _quiet = common::disk_quiet();
    let results = common::published_results();
    let dir = common::sandbox();
    let (real, _) = small_run(dir.path(), results.path(), &[]);
    small_run(dir.path(), results.path(), &[]);
    let label = real["runner"]["label"].as_str().unwrap().to_string();
    let before_out = common::sandbox();
    let before = site(results.path(), before_out.path());
    let real_before = runner(&before, &label).unwrap().clone();
    assert_eq!(real_before["columns"]["qd1-read"]["runs"], 2);

    // With FUSE the one-at-a-time columns run on the latency emulation; without, the
    // table says what the caps leave out.
    let emulates = common::fuse_opens();
    let (like, table) = small_run(dir.path(), results.path(), &["--like", LIKE]);
    let after_out = common::sandbox();
    let after = site(results.path(), after_out.path());
    assert_eq!(runner(&after, &label).unwrap(), &real_before);
    let emulated = runner(&after, &format!("{label} like {LIKE} (capped)"))
        .unwrap_or_else(|| panic!("{after:#}"));
    assert_eq!(emulated["emulates"], LIKE);
    assert_eq!(emulated["columns"]["qd1-read"]["runs"], 1);

    // The target's figures are the published runner's (its IOPS and p99), whatever this busy
    // disk measured under the caps.
    for id in ["qd1-read", "sync-write"] {
        let c = by_id(&like["settings"]["like"]["columns"], id);
        let lat = &c["latency"];
        let f = |k: &str| lat[k].as_f64().unwrap_or_else(|| panic!("{id} {k}: {c:#}"));
        let target = 1e9 / c["target"].as_f64().unwrap();
        let measured = 1e9 / c["measured"].as_f64().unwrap();
        assert!((f("target_per_io_ns") - target).abs() < 1.0, "{c:#}");
        assert!(f("target_p99_ns") > 0.0, "{c:#}");
        assert!((f("measured_per_io_ns") - measured).abs() < 1.0, "{c:#}");
        assert!(f("measured_p99_ns") > 0.0, "{c:#}");
        assert!(
            (f("left_out_per_io_ns") - (target - measured)).abs() < 1.0,
            "{c:#}"
        );
        let note = c["note"].as_str().unwrap();
        if emulates {
            // Every I/O is held for at least its drawn latency, whose mean is the target's
            // time per I/O: this disk (13,000+ QD1 reads/s here) cannot come out faster
            // than the target by more than the draws' noise, however quiet the machine.
            assert!(note.contains("latency emulated"), "{c:#}");
            assert!(measured >= 0.95 * target, "{id}: {c:#}");
        } else {
            assert!(note.contains("latency is not emulated"), "{c:#}");
        }
        assert!(table.contains(id), "{table}");
    }
    let emulation = &like["settings"]["like"]["latency_emulation"];
    if emulates {
        assert_eq!(
            emulation["columns"],
            serde_json::json!(["qd1-read", "sync-write"])
        );
        assert!(
            emulation["held_reads"].as_u64().unwrap() > 0,
            "{emulation:#}"
        );
        assert!(
            emulation["held_syncs"].as_u64().unwrap() > 0,
            "{emulation:#}"
        );
        assert!(table.contains("latency emulated"), "{table}");
        // Nothing of the emulation is left: no mount, no folder.
        let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
        assert!(!mounts.contains("diskbench-latency"), "{mounts}");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    } else {
        assert!(emulation.is_null(), "{emulation:#}");
        assert!(table.contains("latency is not emulated"), "{table}");
    }

    // A step's prediction under --like: the latency it leaves out, as a labelled estimate.
    let project = tempfile::tempdir().unwrap();
    let mut cmd = common::bin();
    cmd.current_dir(project.path())
        .args(common::args("steps --what-if --what-if-only like --like"))
        .arg(LIKE)
        .args(common::args(
            "--only sqlite --sqlite-transactions 50 --json - --dir",
        ))
        .arg(dir.path())
        .arg("--results")
        .arg(results.path());
    let rec = Ran::of(&mut cmd).ok().record();
    let notes = rec["steps"][0]["what_if"]["notes"].to_string();
    let like_condition = by_id(
        &rec["steps"][0]["what_if"]["conditions"],
        &format!("like:{LIKE}"),
    );
    if emulates {
        // The database is in the step's folder, on the emulation: each of its flushes was
        // held for the target's time (50 transactions, each at least one flush of about
        // 1.3 ms on that disk).
        assert!(notes.contains("latency in this prediction"), "{notes}");
        assert!(notes.contains("added on the step's folder"), "{notes}");
        let held = like_condition["latency_held_s"].as_f64().unwrap();
        assert!(held > 0.05, "{like_condition:#}");
        assert!(
            like_condition["notes"]
                .to_string()
                .contains("FUSE passthrough"),
            "{like_condition:#}"
        );
    } else {
        assert!(
            notes.contains("latency left out of this prediction"),
            "{notes}"
        );
        assert!(notes.contains("Estimate, not measured"), "{notes}");
        // This disk's own latency came from the real runs' columns, not the like run's.
        assert!(
            notes.contains("this disk's own from its qd1-read"),
            "{notes}"
        );
        assert!(like_condition["latency_held_s"].is_null());
    }
    // Nothing of the emulation is left: no mount, no backing folder.
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    assert!(!mounts.contains("diskbench-latency"), "{mounts}");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

/// Where the latency emulation cannot be mounted (a container may open /dev/fuse and still
/// not be allowed to mount), `run --like` says why, runs qd1-read on the disk under the caps
/// and the table says the latency it leaves out: a run, not a failure.
#[test]
#[ignore = "needs root: --like puts the columns in a capped cgroup"]
fn run_like_where_fuse_cannot_mount_says_so_and_leaves_the_latency_out() {
    common::require_root();
    let _quiet = common::disk_quiet();
    let results = common::published_results();
    let dir = common::sandbox();
    let (rec, stderr) = small_run_with(
        dir.path(),
        results.path(),
        &["--like", LIKE],
        &[("DISKBENCH_FAKE_FUSE_MOUNT_EPERM", "1")],
    );
    assert!(
        stderr.contains("cannot mount the latency emulation"),
        "{stderr}"
    );
    let like = &rec["settings"]["like"];
    assert!(like["latency_emulation"].is_null(), "{like:#}");
    let qd1 = by_id(&like["columns"], "qd1-read");
    assert!(
        qd1["note"]
            .as_str()
            .unwrap()
            .contains("latency is not emulated"),
        "{qd1:#}"
    );
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

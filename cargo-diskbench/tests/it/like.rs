//! `run --like LABEL` records on the site, in `compare` and in the job summary: a run under
//! caps is its own (emulated) runner, never merged into the real disk's figures (issue 29).

use std::path::Path;

use serde_json::Value;

use crate::common;

const LIKE: &str = "runson-m8a-2xlarge";
const REAL: &str = "ubuntu-24.04";

/// `site --results results --out out`, then its data/runners.json.
fn site(results: &Path, out: &Path) -> Value {
    let o = common::bin()
        .arg("site")
        .arg("--results")
        .arg(results)
        .arg("--out")
        .arg(out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
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

/// Issue 29: after `run --like X` the site's runner for this machine read "capped like X, 3
/// runs" with capped and uncapped medians mixed. Now the real runner's entry in
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
    let o = common::bin()
        .arg("compare")
        .arg(results.path())
        .arg(results.path())
        .args(["--label", REAL, "--json"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let cmp: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_ne!(cmp[0]["new_id"], like.id.as_str(), "{cmp:#}");
    let o = common::bin()
        .arg("compare")
        .arg(results.path())
        .arg(&like_path)
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    assert!(String::from_utf8_lossy(&o.stderr).contains(&emulated_label));

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

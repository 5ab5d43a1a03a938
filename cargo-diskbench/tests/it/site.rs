//! Integration tests: the report site and `import`.
//!
//! Sites are built into temp dirs from generated records (every storage class, a failed step,
//! an imported row, hostile strings) and from the published CSV fixture, then checked page by
//! page: every page exists, every internal link resolves inside the output, nothing from a
//! record reaches the HTML unescaped, and the findings match figures computed here,
//! independently, from the CSV.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use site_gen::testdata::Fleet;

use crate::common;

fn write_fleet(results: &Path, fleet: &Fleet) -> usize {
    let recs = fleet.records();
    for r in &recs {
        record::results::write_record(results, r).unwrap();
    }
    recs.len()
}

/// The small fleet with build steps as long as the real engine's: its step names and verdict
/// sentences (as `run` wrote them on a 2-vCPU VM) and a what-if experiment with
/// its conditions table. The generated fleet's short sentences fit any table.
fn write_fleet_with_real_steps(results: &Path) {
    use record::{Bound, WhatIf, WhatIfCondition};
    let cond = |id: &str, wall_s: f64, ratio: Option<f64>| WhatIfCondition {
        id: id.into(),
        wall_s,
        runs: 3,
        ratio,
        wall_runs_s: vec![wall_s * 0.98, wall_s, wall_s * 1.03],
        ..WhatIfCondition::default()
    };
    for mut r in Fleet::small().records() {
        for s in &mut r.steps {
            match s.id.as_str() {
                "docker-build" => {
                    s.name = "docker build --no-cache of a built-in FROM scratch context".into();
                    s.why = "The machine stalled on I/O (PSI) for 45% of the wall time; storage \
                        traffic 69.1 MiB/s would take 4% of the time at this disk's sequential \
                        speed, 4.9 KiB per read/write call, 0.43 of 2 cores busy over its 13.1 s, \
                        0.49 of 2 cores busy over the 11.4 s of its 13.1 s not spent waiting for \
                        a CPU (13% waiting: a busy machine): it waits on many small, dependent \
                        operations, not on moving bytes."
                        .into();
                }
                "sqlite" => {
                    s.name = "SQLite: small synced transactions, then indexed reads".into();
                    s.what_if = Some(WhatIf {
                        baseline: Some(cond("baseline", 5.37, None)),
                        conditions: vec![
                            cond("memory", 0.41, Some(0.08)),
                            cond("iops-capped", 40.2, Some(7.49)),
                            cond("bandwidth-capped", 5.6, Some(1.04)),
                        ],
                        devices: vec!["8:0".into()],
                        bound: Bound::Latency,
                        why: "In memory it took 0.08x the normal time and under an IOPS cap \
                            7.49x, while a bandwidth cap changed it by 1.04x."
                            .into(),
                        // The engine's long notes, which the page splits into sentences.
                        notes: vec![
                            "every run started with the step's own files (its work folder) \
                             synced and dropped from the page cache; the toolchain and the rest \
                             of the machine stay warm"
                                .into(),
                            "cgroup v1: the caps reach reads, O_DIRECT writes and the write-back \
                             an fsync forces; write-back of buffered writes by the kernel's \
                             flusher is not attributed to the cgroup, so a step that writes much \
                             without syncing is slowed less here than on a disk that slow"
                                .into(),
                        ],
                        ..Default::default()
                    });
                }
                _ => {}
            }
        }
        record::results::write_record(results, &r).unwrap();
    }
}

fn site(results: &Path, out: &Path, extra: &[&str]) -> std::process::Output {
    let mut args = vec![
        "site",
        "--results",
        results.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    common::run(&args)
}

fn ok(out: &std::process::Output) {
    assert!(
        out.status.success(),
        "exit {:?}\nstdout: {}\nstderr: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Values of `attr="..."` in an HTML text.
fn attr_values<'a>(html: &'a str, attr: &str) -> Vec<&'a str> {
    let pat = format!(" {attr}=\"");
    let mut out = Vec::new();
    let mut rest = html;
    while let Some(i) = rest.find(&pat) {
        rest = &rest[i + pat.len()..];
        let end = rest.find('"').unwrap();
        out.push(&rest[..end]);
        rest = &rest[end..];
    }
    out
}

/// Check every page of a built site: internal links resolve (file and #fragment), nothing
/// points to another host, no script, no file outside the folder. Returns the pages' text.
fn check_site(out: &Path) -> BTreeMap<PathBuf, String> {
    let files = common::tree::contents(out);
    assert!(files.contains_key(Path::new(".nojekyll")));
    assert!(files.contains_key(Path::new("assets/style.css")));
    let root = out.canonicalize().unwrap();
    let mut pages = BTreeMap::new();
    for (rel, bytes) in &files {
        let abs = out.join(rel).canonicalize().unwrap();
        assert!(
            abs.starts_with(&root),
            "{} escapes the output folder",
            rel.display()
        );
        if rel.extension().is_some_and(|e| e == "html") {
            pages.insert(rel.clone(), String::from_utf8(bytes.clone()).unwrap());
        }
    }
    let css = String::from_utf8(files[Path::new("assets/style.css")].clone()).unwrap();
    assert!(!css.contains("http:") && !css.contains("https:") && !css.contains("@import"));
    for (rel, html) in &pages {
        assert!(
            !html.to_lowercase().contains("<script"),
            "{}: has a <script>",
            rel.display()
        );
        assert!(html.starts_with("<!doctype html>"), "{}", rel.display());
        for tag in html.split("<link").skip(1) {
            let tag = &tag[..tag.find('>').unwrap_or(tag.len())];
            assert!(
                !tag.contains("://"),
                "{}: <link{tag}> loads from another host",
                rel.display()
            );
        }
        for v in attr_values(html, "href")
            .into_iter()
            .chain(attr_values(html, "src"))
        {
            let v = v.replace("&amp;", "&");
            // A link a reader clicks to a primary source is fine (the Sources sections); nothing
            // is ever loaded from another host: no `src`, `<link>` or CSS import goes there,
            // which the checks on `src`, `<link` and the CSS below hold.
            if v.starts_with("https://") && !html.contains(&format!("src=\"{v}\"")) {
                continue;
            }
            assert!(
                !v.contains("://") && !v.starts_with("//") && !v.starts_with('/'),
                "{}: link {v} is not relative",
                rel.display()
            );
            let (path, frag) = v.split_once('#').unwrap_or((&v, ""));
            let target = if path.is_empty() {
                rel.clone()
            } else {
                let joined = out.join(rel.parent().unwrap()).join(path);
                let canon = joined
                    .canonicalize()
                    .unwrap_or_else(|_| panic!("{}: link {v} does not resolve", rel.display()));
                assert!(
                    canon.starts_with(&root),
                    "{}: link {v} leaves the site",
                    rel.display()
                );
                canon.strip_prefix(&root).unwrap().to_path_buf()
            };
            if !frag.is_empty() {
                let text = pages
                    .get(&target)
                    .unwrap_or_else(|| panic!("{}: {v} points into a non-page", rel.display()));
                assert!(
                    text.contains(&format!("id=\"{frag}\"")),
                    "{}: link {v}: no id {frag:?} in {}",
                    rel.display(),
                    target.display()
                );
            }
        }
    }
    pages
}

#[test]
fn generated_records_make_a_complete_safe_site() {
    let tmp = tempfile::tempdir().unwrap();
    let (results, out) = (tmp.path().join("results"), tmp.path().join("site"));
    let fleet = Fleet::small();
    let n = write_fleet(&results, &fleet);
    let before = common::tree::contents(&results);
    let run = site(&results, &out, &[]);
    ok(&run);
    assert!(String::from_utf8_lossy(&run.stderr).contains(&format!("{n} records, 0 left out")));
    assert_eq!(
        before,
        common::tree::contents(&results),
        "the results folder was modified"
    );
    // Nothing was written next to the output folder.
    let siblings: BTreeSet<String> = std::fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .collect();
    assert_eq!(
        siblings,
        BTreeSet::from(["results".to_string(), "site".to_string()])
    );
    // The runners' figures as data (CONTRACT section 5), one entry per runner.
    let data: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("data/runners.json")).unwrap()).unwrap();
    assert_eq!(data["schema"], "diskbench.site-runners/1");
    assert_eq!(
        data["runners"].as_array().unwrap().len(),
        fleet.runners.len()
    );

    let pages = check_site(&out);
    for p in [
        "index.html",
        "columns.html",
        "methodology.html",
        "verdicts.html",
        "steps.html",
    ] {
        assert!(pages.contains_key(Path::new(p)), "{p} missing");
    }
    for c in record::ColumnId::ALL {
        assert!(
            pages.contains_key(&PathBuf::from(format!("by/{c}.html"))),
            "by/{c}.html missing"
        );
    }
    let runner_pages: Vec<&PathBuf> = pages.keys().filter(|p| p.starts_with("runners")).collect();
    assert_eq!(runner_pages.len(), fleet.runners.len());

    let index = &pages[Path::new("index.html")];
    // Every class gets its table; every runner is linked from the index.
    for c in record::StorageClass::ALL {
        assert!(
            index.contains(&format!("id=\"class-{c}\"")),
            "class {c} has no table"
        );
    }
    for p in &runner_pages {
        assert!(
            index.contains(&format!("href=\"{}\"", p.display())),
            "{} not linked",
            p.display()
        );
    }
    // Hostile strings: escaped wherever they appear, and the slug never climbs out.
    let all: String = pages.values().cloned().collect();
    assert!(
        all.contains("&lt;script&gt;alert(&quot;label&quot;)&lt;&#47;script&gt; &amp; co")
            || all.contains("&lt;script&gt;alert(&quot;label&quot;)&lt;/script&gt; &amp; co")
    );
    assert!(
        !all.contains("<b>x</b>"),
        "a mount option reached the page unescaped"
    );
    assert!(pages.contains_key(Path::new("runners/escape-x.html")));
    assert!(
        all.contains("../../escape/../x"),
        "the hostile label is shown as text"
    );
    // The imported row is marked wherever it is shown.
    let imported = &pages[Path::new("runners/published-m8a-gp3.html")];
    assert!(imported.contains("class=\"imp\"") && imported.contains("published/generated.csv"));
    let row = index.split("published-m8a-gp3.html").nth(1).unwrap();
    assert!(
        row[..300].contains(">imported<"),
        "index row not marked as imported"
    );
    for c in record::ColumnId::ALL {
        let page = &pages[&PathBuf::from(format!("by/{c}.html"))];
        let row = page.split("published-m8a-gp3.html").nth(1).unwrap();
        assert!(
            row[..200].contains(">imported<"),
            "by/{c}.html row not marked as imported"
        );
    }
    // The failed step is shown with its reason; the mount option that weakens fsync is flagged.
    let failed = &pages[Path::new("runners/ubuntu-24-04.html")];
    assert!(failed.contains("s-failed") && failed.contains("permission denied"));
    let hostile = pages
        .iter()
        .find(|(p, t)| p.starts_with("runners") && t.contains("<h1>&lt;script&gt;"))
        .unwrap()
        .1;
    assert!(hostile.contains("<code class=\"flag\"") && hostile.contains(">nobarrier<"));
    // Latency charts come from the stored histograms.
    let latency_chart = "<svg role=\"img\" aria-label=\"Latency distribution\"";
    assert!(failed.contains(latency_chart));
    assert!(!imported.contains(latency_chart));
    // Steps across runners: a conclusion with n.
    let steps = &pages[Path::new("steps.html")];
    assert!(steps.contains("n = "), "no correlation figures");
    assert!(
        steps.contains("b-latency"),
        "the SQLite step should follow latency"
    );

    // A rebuild replaces the earlier site; an unrelated non-empty folder is refused.
    ok(&site(&results, &out, &[]));
    let other = tmp.path().join("other");
    std::fs::create_dir(&other).unwrap();
    std::fs::write(other.join("keep.txt"), "mine").unwrap();
    let refused = site(&results, &other, &[]);
    assert_eq!(refused.status.code(), Some(2));
    assert_eq!(
        std::fs::read_to_string(other.join("keep.txt")).unwrap(),
        "mine"
    );
    // The output may not be inside the results.
    let inside = site(&results, &results.join("site"), &[]);
    assert_eq!(inside.status.code(), Some(2));
    assert_eq!(before, common::tree::contents(&results));
}

#[test]
fn theme_and_content_folders_override_file_by_file() {
    let tmp = tempfile::tempdir().unwrap();
    let (results, out) = (tmp.path().join("results"), tmp.path().join("site"));
    let fleet = Fleet {
        runners: Fleet::small().runners.into_iter().take(3).collect(),
        runs_per_runner: 1,
        ..Fleet::small()
    };
    write_fleet(&results, &fleet);
    let theme = tmp.path().join("theme");
    std::fs::create_dir_all(theme.join("templates")).unwrap();
    std::fs::create_dir_all(theme.join("assets")).unwrap();
    std::fs::write(
        theme.join("templates/page.html"),
        "{% extends \"base.html\" %}{% block content %}<p id=\"mine\">MY PAGE {{ title }}</p>{{ body | safe }}{% endblock content %}",
    )
    .unwrap();
    std::fs::write(
        theme.join("assets/style.css"),
        "body { color: rebeccapurple; }",
    )
    .unwrap();
    std::fs::write(
        theme.join("assets/logo.svg"),
        "<svg xmlns=\"http://www.w3.org/2000/svg\"/>",
    )
    .unwrap();
    let content = tmp.path().join("content");
    std::fs::create_dir_all(&content).unwrap();
    std::fs::write(content.join("about.md"), "# About us\n\nOur runners.\n").unwrap();
    let run = site(
        &results,
        &out,
        &[
            "--theme",
            theme.to_str().unwrap(),
            "--content",
            content.to_str().unwrap(),
        ],
    );
    ok(&run);
    let pages = check_site(&out);
    // The overridden template is used for content pages; the others are the built-in ones.
    assert!(pages[Path::new("columns.html")].contains("MY PAGE What each column says"));
    assert!(pages[Path::new("about.html")].contains("MY PAGE About us"));
    assert!(pages[Path::new("index.html")].contains("Every runner, by storage class"));
    assert_eq!(
        std::fs::read_to_string(out.join("assets/style.css")).unwrap(),
        "body { color: rebeccapurple; }"
    );
    assert!(out.join("assets/logo.svg").exists());
    // The added page is linked from every page's footer.
    assert!(pages[Path::new("index.html")].contains("href=\"about.html\""));
    // A theme that is not a folder is bad usage.
    let bad = site(
        &results,
        &tmp.path().join("site2"),
        &["--theme", "/nonexistent/theme"],
    );
    assert_eq!(bad.status.code(), Some(2));
}

/// Minimal CSV reading for the test's own computation (quotes, no embedded newlines).
fn csv_rows(text: &str) -> Vec<BTreeMap<String, String>> {
    let split = |line: &str| {
        let mut out = vec![String::new()];
        let mut q = false;
        for ch in line.chars() {
            match ch {
                '"' => q = !q,
                ',' if !q => out.push(String::new()),
                c => out.last_mut().unwrap().push(c),
            }
        }
        out
    };
    let mut lines = text.lines();
    let header = split(lines.next().unwrap());
    lines
        .filter(|l| !l.is_empty())
        .map(|l| header.iter().cloned().zip(split(l)).collect())
        .collect()
}

fn med(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn ratio_text(r: f64) -> String {
    if r >= 100.0 {
        format!("{}", r.round() as i64)
    } else {
        format!("{r:.1}")
    }
}

fn published_csv() -> PathBuf {
    common::fixture::path(common::fixture::PUBLISHED_CSV)
}

#[test]
fn published_csv_findings_match_an_independent_computation() {
    let tmp = tempfile::tempdir().unwrap();
    let (results, out) = (tmp.path().join("results"), tmp.path().join("site"));
    let csv = published_csv();
    let imp = common::run(&[
        "import",
        csv.to_str().unwrap(),
        "--results",
        results.to_str().unwrap(),
    ]);
    ok(&imp);
    assert_eq!(String::from_utf8_lossy(&imp.stdout).lines().count(), 41);
    // Importing again writes nothing new.
    let again = common::run(&[
        "import",
        csv.to_str().unwrap(),
        "--results",
        results.to_str().unwrap(),
    ]);
    ok(&again);
    assert_eq!(String::from_utf8_lossy(&again.stdout).lines().count(), 0);
    ok(&site(&results, &out, &[]));
    let pages = check_site(&out);
    let index = &pages[Path::new("index.html")];
    let items: Vec<&str> = index
        .split("<li>")
        .skip(1)
        .map(|s| s.split("</li>").next().unwrap())
        .collect();

    // Independent computation: median per label and column, disks only, per architecture.
    let rows = csv_rows(&std::fs::read_to_string(&csv).unwrap());
    let cols = [
        ("seq-read", "seq-read_mib_s", "Sequential read"),
        ("seq-write", "seq-write_mib_s", "Sequential write"),
        ("rand-read", "rand-read_iops", "Random read"),
        ("rand-write", "rand-write_iops", "Random write"),
        ("qd1-read", "qd1-read_iops", "QD1 read"),
        ("sync-write", "sync-write_iops", "Synced write"),
    ];
    let mut checked = 0;
    for arch in ["x64", "arm64"] {
        for (_, key, title) in cols {
            let mut by_label: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
            for r in rows
                .iter()
                .filter(|r| r["arch"] == arch && r["storage_class"] != "tmpfs")
            {
                by_label
                    .entry(r["label"].as_str())
                    .or_default()
                    .push(r[key].parse().unwrap());
            }
            let meds: Vec<(&str, f64)> = by_label.into_iter().map(|(l, v)| (l, med(v))).collect();
            let best = meds.iter().max_by(|a, b| a.1.total_cmp(&b.1)).unwrap();
            let worst = meds.iter().min_by(|a, b| a.1.total_cmp(&b.1)).unwrap();
            let prefix = format!("{title}, {arch}:");
            let item = items
                .iter()
                .find(|i| i.starts_with(&prefix))
                .unwrap_or_else(|| panic!("no finding {prefix}"));
            assert!(
                item.contains(&format!(">{}</a>", best.0)),
                "{prefix} best should be {}: {item}",
                best.0
            );
            assert!(
                item.contains(&format!(">{}</a>", worst.0)),
                "{prefix} worst should be {}: {item}",
                worst.0
            );
            let ratio = format!("{} x apart", ratio_text(best.1 / worst.1));
            assert!(item.contains(&ratio), "{prefix} expected {ratio}: {item}");
            checked += 1;
        }
    }
    assert_eq!(checked, 12);

    // Provisioned against default: the tuned gp3 against the default one, same instance type.
    let label_med = |label: &str, key: &str| {
        med(rows
            .iter()
            .filter(|r| r["label"] == label)
            .map(|r| r[key].parse().unwrap())
            .collect())
    };
    let prov = items
        .iter()
        .find(|i| i.starts_with("Provisioned vs default on m8a.2xlarge"))
        .expect("no provisioned finding");
    assert!(
        prov.contains(">runson-m8a-2xlarge-gp3tuned</a>")
            && prov.contains(">runson-m8a-2xlarge</a>")
    );
    for (_, key, title) in cols {
        let r =
            label_med("runson-m8a-2xlarge-gp3tuned", key) / label_med("runson-m8a-2xlarge", key);
        let lower = if title == "QD1 read" {
            title.to_string()
        } else {
            title.to_lowercase()
        };
        assert!(
            prov.contains(&format!("{lower} <b>{} x</b>", ratio_text(r))),
            "{title}: {prov}"
        );
    }
    // tmpfs against the best disk, x64: QD1 read ratio.
    let tm = items
        .iter()
        .find(|i| i.starts_with("tmpfs against the best disk, x64"))
        .unwrap();
    let best_disk_qd1 = rows
        .iter()
        .filter(|r| r["arch"] == "x64" && r["storage_class"] != "tmpfs")
        .map(|r| r["label"].as_str())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .map(|l| label_med(l, "qd1-read_iops"))
        .fold(0.0, f64::max);
    let tmpfs_qd1 = label_med("runson-m8a-2xlarge-tmpfs", "qd1-read_iops");
    assert!(
        tm.contains(&format!(
            "<b>{} x</b>",
            ratio_text(tmpfs_qd1 / best_disk_qd1)
        )),
        "{tm}"
    );
    // Every row is marked imported, with its source file.
    let page = &pages[Path::new("runners/runson-i7i-large.html")];
    assert!(page.contains("imported:csv") && page.contains("ec2-storage-2026-09-30_10-01.csv"));
    assert!(page.contains("3 runs"));
    // 16 distinct runners in the CSV, each marked in its index row.
    assert!(index.matches("<span class=\"imp\"").count() >= 16);
}

#[test]
fn fio_json_imports_with_leading_noise_and_bad_input_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let results = tmp.path().join("results");
    let fio = tmp.path().join("fio.json");
    let text = common::fixture::read(common::fixture::FIO_SUITE);
    std::fs::write(&fio, format!("fio: note, this line is not JSON\n{text}")).unwrap();
    let out = common::run(&[
        "import",
        fio.to_str().unwrap(),
        "--results",
        results.to_str().unwrap(),
        "--label",
        "fio-here",
    ]);
    ok(&out);
    let written = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let rec: record::Record =
        serde_json::from_str(&std::fs::read_to_string(&written).unwrap()).unwrap();
    assert_eq!(rec.source, "imported:fio");
    assert_eq!(rec.runner.label, "fio-here");
    assert_eq!(rec.tests.len(), 6);
    assert!(rec.source_file.unwrap().ends_with("fio.json"));

    // A bad CSV: exit 2, the file and line named, nothing written.
    let bad = tmp.path().join("bad.csv");
    std::fs::write(
        &bad,
        "date,label,seq-read_mib_s\n2026-10-01,ok,100\n2026-10-02,broken,fast\n",
    )
    .unwrap();
    let before = common::tree::contents(&results);
    let out = common::run(&[
        "import",
        bad.to_str().unwrap(),
        "--results",
        results.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("bad.csv") && err.contains("line 3"), "{err}");
    assert_eq!(before, common::tree::contents(&results));
}

#[test]
fn bad_records_are_reported_by_path_and_skipped_and_strict_fails() {
    let tmp = tempfile::tempdir().unwrap();
    let (results, out) = (tmp.path().join("results"), tmp.path().join("site"));
    let fleet = Fleet::small();
    let good = fleet.record(0, 0);
    record::results::write_record(&results, &good).unwrap();
    let json = serde_json::to_string_pretty(&good).unwrap();
    let sub = results.join("older");
    std::fs::create_dir_all(&sub).unwrap();
    std::fs::write(sub.join("truncated.json"), &json[..json.len() / 3]).unwrap();
    std::fs::write(
        results.join("future.json"),
        json.replace("diskbench.record/1", "diskbench.record/9"),
    )
    .unwrap();
    let mut v: serde_json::Value = serde_json::from_str(&json).unwrap();
    v["runner"]["cpu_model"] = serde_json::json!(12345);
    std::fs::write(results.join("wrong-type.json"), v.to_string()).unwrap();
    std::fs::write(results.join("notes.txt"), "not a record, not a .json").unwrap();
    let before = common::tree::contents(&results);

    let run = site(&results, &out, &[]);
    ok(&run);
    let err = String::from_utf8_lossy(&run.stderr);
    for (file, why) in [
        ("truncated.json", "truncated"),
        ("future.json", "unknown schema"),
        ("wrong-type.json", "expected a string"),
    ] {
        let line = err
            .lines()
            .find(|l| l.contains(file))
            .unwrap_or_else(|| panic!("{file} not reported: {err}"));
        assert!(line.contains(why), "{file}: {line}");
    }
    assert!(err.contains("1 records, 3 left out"), "{err}");
    let index = std::fs::read_to_string(out.join("index.html")).unwrap();
    assert!(index.contains("Records left out") && index.contains("future.json"));

    let strict_out = tmp.path().join("strict-site");
    let strict = site(&results, &strict_out, &["--strict"]);
    assert_eq!(strict.status.code(), Some(2));
    let err = String::from_utf8_lossy(&strict.stderr);
    assert!(
        err.contains("--strict") && err.contains("truncated.json") && err.contains("future.json")
    );
    assert!(!strict_out.exists(), "--strict wrote a site anyway");
    assert_eq!(before, common::tree::contents(&results));
}

// ---------------------------------------------------------------- browser

/// What Chromium said about a page: console messages and failed loads, from its log.
fn chromium_problems(stderr: &str) -> Vec<String> {
    stderr
        .lines()
        .filter(|l| {
            l.contains("CONSOLE")
                || l.contains("Failed to load resource")
                || l.contains("ERR_FILE_NOT_FOUND")
        })
        .map(String::from)
        .collect()
}

fn chromium() -> Option<PathBuf> {
    ["chromium", "chromium-browser", "google-chrome"]
        .into_iter()
        .find_map(|name| {
            let out = Command::new("sh")
                .arg("-c")
                .arg(format!("command -v {name}"))
                .output()
                .ok()?;
            out.status
                .success()
                .then(|| PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
        })
}

fn screenshot(chrome: &Path, page: &Path, png: &Path, width: u32, height: u32) -> String {
    let profile = tempfile::tempdir().unwrap();
    let out = Command::new(chrome)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--no-first-run",
            "--disable-extensions",
            "--enable-logging=stderr",
            "--v=1",
            "--virtual-time-budget=2000",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg(format!("--window-size={width},{height}"))
        .arg(format!("--screenshot={}", png.display()))
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("cannot start chromium");
    assert!(
        png.exists(),
        "no screenshot of {}: {}",
        page.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stderr).to_string()
}

#[test]
fn pages_render_in_chromium_without_console_errors() {
    // The project's GitHub CI runs this test in its own job (Debian's chromium); the other
    // test jobs say so explicitly rather than silently skipping.
    if std::env::var_os("DISKBENCH_BROWSER_TEST_ELSEWHERE").is_some() {
        eprintln!("SKIPPED: DISKBENCH_BROWSER_TEST_ELSEWHERE is set (the browser job runs it)");
        return;
    }
    let Some(chrome) = chromium() else {
        if std::env::var_os("CI").is_some() {
            panic!("chromium is not installed, and CI is set: the browser test must run in CI");
        }
        common::skip("chromium not found (install Debian's chromium; CI=1 also makes this fail)");
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let (results, out) = (tmp.path().join("results"), tmp.path().join("site"));
    write_fleet_with_real_steps(&results);
    ok(&common::run(&[
        "import",
        published_csv().to_str().unwrap(),
        "--results",
        results.to_str().unwrap(),
    ]));
    ok(&site(&results, &out, &[]));
    let shots = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("site-screenshots");
    std::fs::create_dir_all(&shots).unwrap();

    // The detector must see a real problem: a page with a missing image and a console error.
    let bad = tmp.path().join("bad.html");
    std::fs::write(
        &bad,
        "<!doctype html><img src=\"missing.png\"><script>console.error('boom')</script>",
    )
    .unwrap();
    let log = screenshot(&chrome, &bad, &shots.join("control.png"), 400, 300);
    assert!(
        !chromium_problems(&log).is_empty(),
        "the console check sees nothing even on a broken page:\n{log}"
    );

    for (name, page) in [
        ("index", "index.html"),
        ("runner", "runners/i7i-large-nvme.html"),
        ("columns", "columns.html"),
    ] {
        for (w, h, kind) in [(1280, 2200, "desktop"), (390, 2400, "phone")] {
            let png = shots.join(format!("{name}-{kind}.png"));
            let log = screenshot(&chrome, &out.join(page), &png, w, h);
            let problems = chromium_problems(&log);
            assert!(problems.is_empty(), "{page} at {w}px: {problems:#?}");
            assert!(
                std::fs::metadata(&png).unwrap().len() > 10_000,
                "{} looks empty",
                png.display()
            );
        }
    }
    // At phone width (390 px) nothing may stick out of the page, except inside a container
    // that scrolls sideways, and such a container must show that it scrolls (its shadow).
    // A copy of each page gets a probe script (the site itself has none) that measures the
    // laid-out page and writes what it found into the DOM, which --dump-dom prints.
    // The same at a tablet's 900 px and a desktop's 1280 px, where the runner tables are
    // nearly wide enough: no figure may run into the next, and a table that scrolls says so.
    // At every width the sentence rows (verdicts, job notes) are readable whole.
    for (w, page) in [390, 900, 1280].into_iter().flat_map(|w| {
        [
            "runners/ubuntu-24-04.html",
            "index.html",
            "runners/i7i-large-nvme.html",
            "steps.html",
            "by/qd1-read.html",
            "columns.html",
            "verdicts.html",
            "methodology.html",
            "options.html",
            "guarantees.html",
            "exit-codes.html",
        ]
        .map(|p| (w, p))
    }) {
        let report = probe_at(&chrome, &out.join(page), w);
        assert!(
            report.overflowing.is_empty() && report.page_width <= report.viewport,
            "{page} at {w} px: the page is {} px wide in a {} px viewport; sticking out: {:#?}",
            report.page_width,
            report.viewport,
            report.overflowing
        );
        assert!(
            report.unhinted.is_empty(),
            "{page} at {w} px: containers that scroll without a visible hint: {:#?}",
            report.unhinted
        );
        assert!(
            report.clipped_why.is_empty(),
            "{page} at {w} px: sentence rows cut off: {:#?}",
            report.clipped_why
        );
        assert!(
            report.overlaps.is_empty() && report.unhinted_tables.is_empty(),
            "{page} at {w} px: runner-table cells running into each other: {:#?}; \
             tables scrolling without their hint: {:#?}",
            report.overlaps,
            report.unhinted_tables
        );
        // The per-class tables of the index line up column for column.
        if page == "index.html" {
            assert!(report.columns.len() >= 3, "{report:?}");
            assert!(
                report.columns.windows(2).all(|w| w[0] == w[1]),
                "per-class tables do not line up: {:?}",
                report.columns
            );
        }
    }
    // The detector sees overflow where there is some: a wide block outside any scroller.
    let wide = out.join("wide-control.html");
    std::fs::write(
        &wide,
        "<!doctype html><meta name=viewport content=\"width=device-width\"><body>\
         <div style=\"width:900px\">x</div><div style=\"overflow-x:auto\">\
         <div style=\"width:900px\">y</div></div>",
    )
    .unwrap();
    let report = phone_overflow(&chrome, &wide);
    assert!(
        report.page_width > report.viewport && report.unhinted.len() == 1,
        "the overflow probe sees nothing on a page that overflows: {report:?}"
    );
    // It also sees a sentence row cut by its scroll box, a figure running into the next cell,
    // and a runner table that scrolls with its hint hidden.
    let cut = out.join("cut-control.html");
    std::fs::write(
        &cut,
        "<!doctype html><meta name=viewport content=\"width=device-width\"><body>\
         <div style=\"overflow-x:auto;width:200px;box-shadow:0 0 1px red\">\
         <table style=\"width:400px\"><tr class=why><td>a sentence wider than its scroll box \
         is cut on the right</td></tr></table></div>\
         <p class=scroll-hint style=\"display:none\">swipe</p>\
         <div style=\"overflow-x:auto;width:300px;box-shadow:0 0 1px red\">\
         <table class=runners style=\"table-layout:fixed;width:600px\"><tr>\
         <td style=\"width:60px;white-space:nowrap\">4,134,074 \u{b1}1%</td>\
         <td style=\"white-space:nowrap\">3,679,547</td></tr></table></div>",
    )
    .unwrap();
    let report = probe_at(&chrome, &cut, 390);
    assert!(
        report.clipped_why.len() == 1
            && !report.overlaps.is_empty()
            && report.unhinted_tables.len() == 1,
        "the probe misses a cut sentence, overlapping cells or a hidden hint: {report:?}"
    );
    // The phone screenshots of the pages that broke before, to look at.
    for (name, page) in [
        ("runner-steps", "runners/ubuntu-24-04.html"),
        ("steps", "steps.html"),
    ] {
        let png = shots.join(format!("{name}-phone.png"));
        screenshot(&chrome, &out.join(page), &png, 390, 3000);
    }
    eprintln!("screenshots in {}", shots.display());
}

/// A `--content` page with an unknown `{{ ... }}` placeholder is a usage error naming the page,
/// found before the output folder is touched.
#[test]
fn a_content_page_with_an_unknown_placeholder_is_refused_before_writing() {
    let tmp = tempfile::tempdir().unwrap();
    let (results, out) = (tmp.path().join("results"), tmp.path().join("site"));
    std::fs::create_dir_all(&results).unwrap();
    let content = tmp.path().join("content");
    std::fs::create_dir_all(&content).unwrap();
    std::fs::write(content.join("notes.md"), "# Notes\n\n{{ class_rulez() }}\n").unwrap();
    let run = site(&results, &out, &["--content", content.to_str().unwrap()]);
    assert_eq!(run.status.code(), Some(2));
    let err = String::from_utf8_lossy(&run.stderr);
    assert!(
        err.contains("--content: notes.md") && err.contains("Unknown function `class_rulez`"),
        "{err}"
    );
    assert!(!out.exists(), "nothing is written on bad input");
}

/// What the phone-width probe found on one page.
#[derive(Debug)]
struct OverflowReport {
    viewport: u64,
    page_width: u64,
    /// Elements whose right edge is past the viewport and not inside a scroll container.
    overflowing: Vec<String>,
    /// Scroll containers that overflow but show no shadow or hint.
    unhinted: Vec<String>,
    /// Per runner table, where each heading starts (px from the table's left).
    columns: Vec<Vec<u64>>,
    /// Sentence rows (`tr.why`) with text outside the viewport or cut by their scroll box.
    clipped_why: Vec<String>,
    /// Runner-table cells whose text crosses their cell's edge (into the next cell).
    overlaps: Vec<String>,
    /// Runner tables that scroll sideways while their scroll hint is hidden.
    unhinted_tables: Vec<String>,
}

const OVERFLOW_PROBE: &str = r#"<script>
addEventListener('load', () => {
  const vw = document.documentElement.clientWidth;
  const scrolls = s => s.overflowX === 'auto' || s.overflowX === 'scroll';
  const scroller = el => {
    for (let a = el.parentElement; a && a !== document.body; a = a.parentElement) {
      if (scrolls(getComputedStyle(a))) return a;
    }
    return null;
  };
  const name = el => el.tagName.toLowerCase() + (typeof el.className === 'string' && el.className
    ? '.' + el.className.trim().split(/\s+/).join('.') : '');
  const overflowing = [], unhinted = [];
  for (const el of document.body.querySelectorAll('*')) {
    const r = el.getBoundingClientRect();
    if (r.width === 0 || r.right <= vw + 1) continue;
    const box = scroller(el);
    if (box && box.getBoundingClientRect().right <= vw + 1) continue;
    overflowing.push(name(el) + ' right=' + Math.round(r.right) + ' "' + (el.textContent || '').trim().slice(0, 40) + '"');
  }
  for (const el of document.body.querySelectorAll('*')) {
    const s = getComputedStyle(el);
    if (scrolls(s) && el.scrollWidth > el.clientWidth + 1 && s.backgroundImage === 'none' && s.boxShadow === 'none') {
      unhinted.push(name(el));
    }
  }
  // Text boxes of an element's text (not its element boxes), one rect per line piece.
  const textRects = el => {
    const rects = [], walk = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
    for (let n = walk.nextNode(); n; n = walk.nextNode()) {
      if (!n.textContent.trim()) continue;
      const range = document.createRange();
      range.selectNodeContents(n);
      for (const r of range.getClientRects()) if (r.width > 0) rects.push(r);
    }
    return rects;
  };
  // Sentence rows: every piece of text lies inside the viewport and inside the visible part
  // of the scroll box around it (a scroll box hides what sticks out of it: the probe above
  // cannot see that).
  const clipped_why = [];
  for (const row of document.querySelectorAll('tr.why')) {
    const box = scroller(row);
    let left = 0, right = vw;
    if (box) {
      const b = box.getBoundingClientRect();
      left = Math.max(left, b.left + box.clientLeft);
      right = Math.min(right, b.left + box.clientLeft + box.clientWidth);
    }
    for (const r of textRects(row)) {
      if (r.left < left - 1 || r.right > right + 1) {
        clipped_why.push(name(row) + ' text ' + Math.round(r.left) + '..' + Math.round(r.right)
          + ' outside ' + Math.round(left) + '..' + Math.round(right) + ' "' + row.textContent.trim().slice(0, 40) + '"');
        break;
      }
    }
  }
  // Runner tables: each cell's text stays inside its cell, so neighbours never overlap;
  // and a runner table that scrolls has its scroll hint showing.
  const overlaps = [], unhinted_tables = [];
  const union = rs => rs.length ? { left: Math.min(...rs.map(r => r.left)), right: Math.max(...rs.map(r => r.right)) } : null;
  for (const t of document.querySelectorAll('table.runners')) {
    for (const tr of t.rows) {
      const cells = [...tr.cells].map(c => ({ c, r: c.getBoundingClientRect(), t: union(textRects(c)) }));
      cells.forEach((x, i) => {
        if (!x.t) return;
        const next = cells.slice(i + 1).find(y => y.t);
        if (x.t.left < x.r.left - 1 || x.t.right > x.r.right + 1 || (next && x.t.right > next.t.left + 1)) {
          overlaps.push('"' + x.c.textContent.trim().replace(/\s+/g, ' ').slice(0, 30) + '" text '
            + Math.round(x.t.left) + '..' + Math.round(x.t.right) + ' in cell ' + Math.round(x.r.left) + '..' + Math.round(x.r.right)
            + (next ? ', next text from ' + Math.round(next.t.left) : ''));
        }
      });
    }
    const box = scroller(t);
    if (box && box.scrollWidth > box.clientWidth + 1) {
      const hint = box.previousElementSibling;
      if (!hint || !hint.classList.contains('scroll-hint') || hint.getClientRects().length === 0) {
        unhinted_tables.push('table.runners scrolls ' + box.scrollWidth + ' in ' + box.clientWidth + ' px, no hint shown');
      }
    }
  }
  // Where each column starts in every per-class runner table (they must line up).
  const columns = [...document.querySelectorAll('table.runners')].map(t =>
    [...t.querySelectorAll('thead th')].map(th => Math.round(th.offsetLeft)));
  const out = document.createElement('pre');
  out.id = 'overflow-probe';
  out.textContent = JSON.stringify({ vw, sw: document.documentElement.scrollWidth,
    overflowing: overflowing.slice(0, 15), unhinted, columns,
    clipped_why, overlaps: overlaps.slice(0, 15), unhinted_tables });
  document.body.appendChild(out);
  if (parent !== window) parent.postMessage(out.textContent, '*');
});
</script>"#;

fn phone_overflow(chrome: &Path, page: &Path) -> OverflowReport {
    probe_at(chrome, page, 390)
}

/// The probe's findings on a copy of `page` laid out in a window `width` px wide.
fn probe_at(chrome: &Path, page: &Path, width: u32) -> OverflowReport {
    let html = std::fs::read_to_string(page).unwrap();
    let probe = page.with_file_name(format!(
        "{}.probe.html",
        page.file_stem().unwrap().to_string_lossy()
    ));
    let probed = match html.rfind("</body>") {
        Some(i) => format!("{}{OVERFLOW_PROBE}{}", &html[..i], &html[i..]),
        None => format!("{html}{OVERFLOW_PROBE}"),
    };
    std::fs::write(&probe, probed).unwrap();
    // Headless Chromium's window is never narrower than 500 px, whatever --window-size says:
    // the copy is laid out in an iframe of the width asked for, which posts the findings to
    // the frame around it for --dump-dom to print.
    let frame = probe.with_extension("frame.html");
    std::fs::write(
        &frame,
        format!(
            "<!doctype html><body style=\"margin:0\"><iframe src=\"{}\" \
             style=\"width:{width}px;height:2400px;border:0\"></iframe><script>\
             addEventListener('message', e => {{ const p = document.createElement('pre'); \
             p.id = 'overflow-probe'; p.textContent = e.data; document.body.appendChild(p); }});\
             </script>",
            probe.file_name().unwrap().to_string_lossy()
        ),
    )
    .unwrap();
    let profile = tempfile::tempdir().unwrap();
    let out = Command::new(chrome)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--no-first-run",
            "--disable-extensions",
            "--virtual-time-budget=2000",
            "--dump-dom",
        ])
        .arg(format!("--window-size={},2400", width.max(500) + 20))
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg(format!("file://{}", frame.display()))
        .output()
        .expect("cannot start chromium");
    std::fs::remove_file(&probe).unwrap();
    std::fs::remove_file(&frame).unwrap();
    let dom = String::from_utf8_lossy(&out.stdout);
    let start = dom.find("<pre id=\"overflow-probe\">").unwrap_or_else(|| {
        panic!(
            "the probe did not run on {}: {}",
            page.display(),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    let text = &dom[start + "<pre id=\"overflow-probe\">".len()..];
    let text = &text[..text.find("</pre>").unwrap()];
    let text = text
        .replace("&quot;", "\"")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&");
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let list = |k: &str| -> Vec<String> {
        v[k].as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_str().unwrap().to_string())
            .collect()
    };
    OverflowReport {
        viewport: v["vw"].as_u64().unwrap(),
        page_width: v["sw"].as_u64().unwrap(),
        overflowing: list("overflowing"),
        unhinted: list("unhinted"),
        columns: v["columns"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| {
                t.as_array()
                    .unwrap()
                    .iter()
                    .map(|x| x.as_u64().unwrap())
                    .collect()
            })
            .collect(),
        clipped_why: list("clipped_why"),
        overlaps: list("overlaps"),
        unhinted_tables: list("unhinted_tables"),
    }
}

/// An imported fio run whose rand-read job ran 2 jobs x 16 (the column is 4 x 32): that job
/// is shown as its own job with its settings and notes, never ranked in the rand-read column;
/// the machine fio does not describe reads "unknown"; the source is the file's name, not the
/// relative path typed at import, and the page says it was imported from a file.
#[test]
fn imported_fio_jobs_are_columns_only_with_the_columns_settings() {
    let tmp = tempfile::tempdir().unwrap();
    let (results, out) = (tmp.path().join("results"), tmp.path().join("site"));
    let text = common::fixture::read(common::fixture::FIO_SUITE).replacen(
        "\"numjobs\" : \"4\"",
        "\"numjobs\" : \"2\"",
        1,
    );
    let sub = tmp.path().join("runs");
    std::fs::create_dir(&sub).unwrap();
    std::fs::write(sub.join("fio-2x.json"), &text).unwrap();
    let out_import = common::bin()
        .current_dir(tmp.path())
        .args(["import", "runs/../runs/fio-2x.json", "--results"])
        .arg(&results)
        .args(["--label", "fio-local"])
        .output()
        .unwrap();
    ok(&out_import);
    ok(&site(&results, &out, &[]));
    let pages = check_site(&out);
    let page = &pages[Path::new("runners/fio-local.html")];
    assert!(page.contains("imported from a file"), "{page}");
    assert!(!page.contains("published elsewhere"), "{page}");
    assert!(page.contains("imported:fio (fio-2x.json)"), "{page}");
    assert!(!page.contains("runs/../runs"), "{page}");
    assert!(
        !page.contains("0 vCPU") && !page.contains("0.0 GiB"),
        "{page}"
    );
    assert!(page.contains("<dt>vCPUs</dt><dd>unknown</dd>"), "{page}");
    assert!(page.contains("<dt>Memory</dt><dd>unknown</dd>"), "{page}");
    // The job with other settings: its own row with its settings, its note in view.
    assert!(page.contains("id=\"jobs\""), "{page}");
    assert!(page.contains("rand-read (fio job)"), "{page}");
    assert!(
        page.contains("randread, 4 KiB, 2 jobs x 32 in flight"),
        "{page}"
    );
    assert!(page.contains("not ranked in the column"), "{page}");
    // Not ranked: the rand-read column page does not list this runner.
    let by = &pages[Path::new("by/rand-read.html")];
    assert!(!by.contains("fio-local"), "{by}");
    let by = &pages[Path::new("by/rand-write.html")];
    assert!(by.contains("fio-local"), "{by}");
}

/// With fewer runners than a conclusion needs, steps.html still shows each step's time per
/// runner and says what more runners would add, instead of tables of "-".
#[test]
fn steps_page_with_one_runner_shows_the_times_and_what_more_runners_add() {
    let tmp = tempfile::tempdir().unwrap();
    let (results, out) = (tmp.path().join("results"), tmp.path().join("site"));
    let rec = Fleet::small().record(0, 0);
    let step = rec
        .steps
        .iter()
        .find(|s| s.status == record::StepStatus::Ok)
        .expect("the fleet's first runner has a step that passed")
        .clone();
    record::results::write_record(&results, &rec).unwrap();
    ok(&site(&results, &out, &[]));
    let pages = check_site(&out);
    let steps = &pages[Path::new("steps.html")];
    assert!(steps.contains("only 1 runner has"), "{steps}");
    assert!(!steps.contains("only 1 runners"), "{steps}");
    assert!(steps.contains("With 5 or more runners"), "{steps}");
    assert!(
        steps.contains(&format!(">{}</td>", record::units::format_s(step.wall_s))),
        "the step's time is not shown: {steps}"
    );
    assert!(steps.contains(&rec.runner.label), "{steps}");
    assert!(!steps.contains("class=\"rho\""), "{steps}");
    // The runner page: the same CPU figure as the terminal and the summary.
    let runner = pages
        .iter()
        .find(|(p, _)| p.starts_with("runners"))
        .map(|(_, t)| t)
        .unwrap();
    let cores = record::units::format_cores_busy(
        step.user_s + step.sys_s,
        step.wall_s,
        Some(rec.runner.vcpus),
    );
    assert!(runner.contains(&format!(">{cores}</td>")), "{runner}");
    assert!(runner.contains("Cores busy"), "{runner}");
}

/// The shipped fixtures (`fixtures/published/*.csv`) imported through the command line and
/// built into a site in `tmp`; returns the site folder and its pages.
fn fixture_site(tmp: &Path) -> (PathBuf, BTreeMap<PathBuf, String>) {
    let (results, out) = (tmp.join("results"), tmp.join("site"));
    let dir = common::repo_root().join("fixtures/published");
    let mut files: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "csv"))
        .map(|p| p.to_str().unwrap().to_string())
        .collect();
    files.sort();
    assert!(files.len() >= 3, "{files:?}");
    let mut args = vec!["import"];
    args.extend(files.iter().map(|s| s.as_str()));
    args.extend(["--results", results.to_str().unwrap()]);
    ok(&common::run(&args));
    ok(&site(&results, &out, &[]));
    let pages = check_site(&out);
    (out, pages)
}

/// The cache check judges a runner by its newest record with disk figures (not an
/// imported build-timings record of unknown class), and tmpfs is memory, never "a cache".
#[test]
fn no_tmpfs_runner_is_marked_as_served_by_a_cache() {
    let tmp = tempfile::tempdir().unwrap();
    let (out, pages) = fixture_site(tmp.path());
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("data/runners.json")).unwrap()).unwrap();
    let runners = json["runners"].as_array().unwrap();
    let tmpfs: Vec<&serde_json::Value> = runners.iter().filter(|r| r["class"] == "tmpfs").collect();
    // The EC2 ladder has tmpfs rows and the node runners one more (which also has timings).
    assert!(tmpfs.len() >= 2, "{json}");
    assert!(tmpfs.iter().any(|r| r["label"] == "runson-r8a-tmpfs-x64"));
    for r in &tmpfs {
        for (c, f) in r["columns"].as_object().unwrap() {
            assert!(f["cache_suspect"].is_null(), "{} {c}: {f}", r["label"]);
        }
    }
    for (rel, html) in &pages {
        for label in tmpfs.iter().map(|r| r["label"].as_str().unwrap()) {
            for piece in html.split(label).skip(1) {
                let near = &piece[..piece.len().min(300)];
                assert!(
                    !near.contains("served by a cache"),
                    "{}: {label} next to 'served by a cache': {near}",
                    rel.display()
                );
            }
        }
    }
    // A tmpfs runner's own page never carries the mark at all.
    let page = &pages[Path::new("runners/runson-r8a-tmpfs-x64.html")];
    assert!(!page.contains("served by a cache"), "{page}");
}

/// Built from the shipped fixtures, the index opens with "Pick a runner for your
/// job": a runner for each of the three job kinds, the figure that decides and a link to its
/// evidence, all from the data (the best disk by synced writes is the one data/runners.json
/// says; the compile evidence is the node job's typecheck).
#[test]
fn index_opens_with_a_runner_for_each_kind_of_job() {
    let tmp = tempfile::tempdir().unwrap();
    let (out, pages) = fixture_site(tmp.path());
    let index = &pages[Path::new("index.html")];
    let first = index.find("<section").unwrap();
    assert_eq!(
        &index[first..first + 40],
        "<section class=\"pick\" aria-labelledby=\"p",
        "the first section must be the pick"
    );
    let end = index[first..].find("</section>").unwrap() + first;
    let pick = &index[first..end];
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("data/runners.json")).unwrap()).unwrap();
    let best_sync = json["runners"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["class"] != "tmpfs")
        .filter_map(|r| {
            let f = &r["columns"]["sync-write"];
            if !f["cache_suspect"].is_null() {
                return None;
            }
            Some((r["label"].as_str()?, f["median"].as_f64()?))
        })
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .unwrap();
    for (kind, figure_word) in [
        ("database", "synced write "),
        ("install", "sequential write "),
        ("compile", " threads"),
    ] {
        let at = pick
            .find(&format!("id=\"pick-{kind}\""))
            .unwrap_or_else(|| panic!("no {kind} answer: {pick}"));
        let part = &pick[at..];
        let part = &part[..part[4..].find("<h3").map(|i| i + 4).unwrap_or(part.len())];
        let li = part
            .split("<li>")
            .nth(1)
            .unwrap_or_else(|| panic!("{part}"));
        assert!(li.contains("href=\"runners/"), "{kind}: {li}");
        assert!(
            li.contains("<b>") && li.contains(figure_word),
            "{kind}: {li}"
        );
        assert!(
            part.contains("Evidence: <a href=\"steps.html#step-")
                || part.contains("Evidence: <a href=\"by/"),
            "{kind}: {part}"
        );
        if kind == "database" {
            assert!(li.contains(best_sync.0), "{kind}: {li} {best_sync:?}");
            let shown = format!("{}", best_sync.1.round() as u64);
            let digits: String = li.chars().filter(|c| c.is_ascii_digit()).collect();
            assert!(digits.contains(&shown), "{kind}: {li} {shown}");
            assert!(
                part.contains("tmpfs") && part.contains("synchronous=OFF"),
                "{part}"
            );
        }
        if kind == "compile" {
            assert!(
                part.contains("typecheck") && part.contains("not the disk"),
                "{part}"
            );
        }
    }
}

/// A page's text with tags dropped, entities undone and white space folded: what a reader sees.
fn visible_text(html: &str) -> String {
    let mut out = String::with_capacity(html.len());
    let mut in_tag = false;
    for ch in html.chars() {
        match ch {
            '<' => in_tag = true,
            '>' => {
                in_tag = false;
                out.push(' ');
            }
            c if !in_tag => out.push(c),
            _ => {}
        }
    }
    let out = out
        .replace("&amp;", "&")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#x27;", "'")
        .replace("&#39;", "'")
        .replace('\u{2019}', "'")
        .replace(['\u{201c}', '\u{201d}'], "\"");
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The wrong or misleading sentences found in the guide are gone from every
/// page built from the shipped fixtures (and from the README), and each corrected sentence is
/// there with a link to its source on the same page.
#[test]
fn corrected_guide_sentences_stay_corrected() {
    let tmp = tempfile::tempdir().unwrap();
    let (_, pages) = fixture_site(tmp.path());
    let readme = std::fs::read_to_string(common::repo_root().join("README.md")).unwrap();
    let mut texts: Vec<(String, String)> = pages
        .iter()
        .map(|(p, h)| (p.display().to_string(), visible_text(h)))
        .collect();
    texts.push((
        "README.md".into(),
        readme.split_whitespace().collect::<Vec<_>>().join(" "),
    ));
    let wrong = [
        // write_bytes is counted when pages are dirtied; ru_maxrss is the largest process.
        "bytes that reached storage",
        "of the whole process tree",
        // The what-if cpu outcome needs two conditions; an experiment is not proof.
        "neither moved it beyond the normal runs' spread",
        "an experiment is proof",
        // The code refuses every non-root user.
        "or a delegated cgroup",
        // Azure's OS-disk address also holds ephemeral OS disks.
        "at the VMBus address of Azure's OS disk or on Azure's data-disk SCSI controllers (a managed disk)",
        "Azure managed disk (a Hyper-V SCSI disk at Azure's OS or data disk address)",
        // The ceilings overclaimed.
        "certainly not the disk's",
        "generous on purpose",
        // File preparation: the lengths differ from the harness's.
        "prepares files as the public harness does",
        // Depth does not matter more than the storage class; sync-write is not the widest.
        "Depth matters more than anything else",
        "spreads wider across runners than any other",
        // Unsupported.
        "Most build tools are the second kind of program",
        "which many virtual disks answer without touching storage",
        "gains more from a faster CPU than from anything else",
        "the floor of your job's time",
        "31-38 GB/s",
        "19.8 GB/s",
        // The disk-only pair is now used, and the words are one vocabulary.
        "never used to make it",
        "bandwidth (sequential, or random at depth)",
        "it waits on the latency of many small",
    ];
    for (name, text) in &texts {
        for w in wrong {
            assert!(!text.contains(w), "{name} still says {w:?}");
        }
    }
    // Each correction is on its page, with a link to a source in the same section.
    let corrected = [
        ("build-steps.html", "the largest single", "getrusage"),
        ("build-steps.html", "counted when", "proc"),
        ("what-if.html", "Both conditions are needed", "judgement.rs"),
        ("what-if.html", "run as any other user", "preflight.rs"),
        (
            "machine.html",
            "ephemeral OS disk",
            "methodology.html#sources",
        ),
        (
            "methodology.html",
            "ephemeral OS disk",
            "ephemeral-os-disks",
        ),
        (
            "methodology.html",
            "most likely a cache's, not proof",
            "ceiling.rs",
        ),
        (
            "methodology.html",
            "20 s after 2 s on 2 GiB",
            "options.html",
        ),
        (
            "columns.html",
            "how many requests are in flight matters most",
            "verdicts.html",
        ),
        (
            "columns.html",
            "the widest column there is",
            "benchmark-public",
        ),
        (
            "columns.html",
            "cannot show a burst running out",
            "options.html",
        ),
        (
            "methodology.html",
            "called not the disk by that pair",
            "correlation.rs",
        ),
    ];
    for (page, sentence, source) in corrected {
        let html = &pages[Path::new(page)];
        let text = visible_text(html);
        assert!(text.contains(sentence), "{page}: {sentence:?} missing");
        // The page links the source (in the sentence's section or its Sources section).
        assert!(
            attr_values(html, "href").iter().any(|h| h.contains(source)),
            "{page}: no link to {source} for {sentence:?}"
        );
    }
}

/// "4,336": a whole number with thousands separators.
fn grouped(v: f64) -> String {
    let digits = format!("{}", v.round() as u64);
    let mut out = String::new();
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

/// Figures the guide quotes from the shipped rows are the rows' own,
/// computed here from the CSV files independently of the site: the GitHub-hosted runners'
/// synced writes and QD1 reads, and how far synced writes spread over the EC2 ladder.
#[test]
fn figures_quoted_by_the_guide_come_from_the_fixtures() {
    let tmp = tempfile::tempdir().unwrap();
    let (_, pages) = fixture_site(tmp.path());
    let columns = visible_text(&pages[Path::new("columns.html")]);
    let dir = common::repo_root().join("fixtures/published");
    let hw = csv_rows(
        &std::fs::read_to_string(dir.join("hardware-node-runners-2026-10-08.csv")).unwrap(),
    );
    for col in ["sync-write", "qd1-read"] {
        let v: Vec<f64> = hw
            .iter()
            .filter(|r| r["provider"] == "GitHub")
            .map(|r| r[&format!("{col}_iops")].parse().unwrap())
            .collect();
        assert!(v.len() >= 2);
        let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = v.iter().copied().fold(0.0, f64::max);
        let want = format!("{} IOPS–{} IOPS", grouped(lo), grouped(hi));
        assert!(columns.contains(&want), "columns.html lacks {want}");
    }
    let ec2 = csv_rows(&std::fs::read_to_string(published_csv()).unwrap());
    let sync: Vec<f64> = ec2
        .iter()
        .filter_map(|r| r.get("sync-write_iops")?.parse().ok())
        .collect();
    let spread = sync.iter().copied().fold(0.0, f64::max)
        / sync.iter().copied().fold(f64::INFINITY, f64::min);
    // As the site writes a ratio: one decimal below 100, none (with separators) above.
    let want = if spread >= 100.0 {
        format!("spreads {} x", grouped(spread))
    } else {
        format!("spreads {spread:.1} x")
    };
    assert!(columns.contains(&want), "columns.html lacks {want}");
}

/// Each guide page opens with a plain answer in three lines, before the
/// detail.
#[test]
fn guide_pages_open_with_a_three_line_answer() {
    let tmp = tempfile::tempdir().unwrap();
    let (_, pages) = fixture_site(tmp.path());
    for page in [
        "columns.html",
        "verdicts.html",
        "methodology.html",
        "what-if.html",
    ] {
        let html = &pages[Path::new(page)];
        let h1 = html.find("<h1").unwrap();
        let first_p = html[h1..].find("<p>").unwrap() + h1;
        let end = html[first_p..].find("</p>").unwrap() + first_p;
        let para = &html[first_p..end];
        assert!(
            para.starts_with("<p><strong>In three lines.</strong>"),
            "{page}: {para}"
        );
        let lines: Vec<&str> = para.lines().filter(|l| !l.trim().is_empty()).collect();
        assert_eq!(lines.len(), 3, "{page}: {para}");
        // Nothing but the page title comes before it.
        assert!(!html[h1..first_p].contains("<h2"), "{page}");
    }
}

/// The node job's published timings with the same runners' disk and CPU figures, and the EC2
/// figures, imported through the command line: the steps page calls typecheck cpu and
/// `bun install` disk, and `data/steps.json` says the same.
#[test]
fn published_build_timings_make_the_steps_page_and_steps_json() {
    let tmp = tempfile::tempdir().unwrap();
    let (results, out) = (tmp.path().join("results"), tmp.path().join("site"));
    let files: Vec<String> = [
        "published/build-steps-node-2026-10-10.csv",
        "published/hardware-node-runners-2026-10-08.csv",
        common::fixture::PUBLISHED_CSV,
    ]
    .iter()
    .map(|f| common::fixture::path(f).to_str().unwrap().to_string())
    .collect();
    let mut args = vec!["import"];
    args.extend(files.iter().map(|s| s.as_str()));
    args.extend(["--results", results.to_str().unwrap()]);
    ok(&common::run(&args));
    ok(&site(&results, &out, &[]));
    let pages = check_site(&out);
    let steps = &pages[Path::new("steps.html")];
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("data/steps.json")).unwrap()).unwrap();
    assert_eq!(json["schema"], "diskbench.site-steps/1");
    let follows = |step: &str| {
        let s = json["steps"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["suite"] == "node" && s["step"] == step)
            .unwrap_or_else(|| panic!("{step} missing from steps.json"));
        // The page shows the same conclusion (escaped as the page escapes text).
        let text = s["conclusion"].as_str().unwrap().replace('&', "&amp;");
        assert!(steps.contains(&text), "{step}: {text}");
        s["follows"].as_str().unwrap().to_string()
    };
    assert_eq!(follows("typecheck"), "cpu");
    assert!(["bandwidth", "throughput", "latency"].contains(&follows("bun install").as_str()));
    assert!(steps.contains("<title>runson-r8a-tmpfs-x64 (tmpfs, imported):"));
    assert!(steps.contains(">imported<"));
    let method = &pages[Path::new("methodology.html")];
    assert!(method.contains("id=\"across-runners\"") && method.contains("data/steps.json"));
}

/// A runner with six dated records, the sixth at half the seq-read of the fifth: its page has
/// a History chart per column with six points, the sixth seq-read point marked slower, the
/// index lists the change, and `data/history.json` holds the series.
#[test]
fn six_dated_records_make_a_history_with_the_regression_marked_and_listed() {
    let tmp = common::sandbox();
    let results = tmp.path().join("results");
    let out = tmp.path().join("site");
    let small = Fleet::small();
    let fleet = Fleet {
        runners: vec![small.runners[1].clone()],
        runs_per_runner: 6,
        ..small
    };
    let label = fleet.runners[0].label.clone();
    let mut recs = fleet.records();
    recs.sort_by(|a, b| a.started_at.cmp(&b.started_at));
    let fifth = recs[4]
        .test(record::ColumnId::SeqRead)
        .and_then(|t| t.headline())
        .unwrap();
    let sixth_date = recs[5].started_at[..10].to_string();
    let t = recs[5]
        .tests
        .iter_mut()
        .find(|t| t.id == "seq-read")
        .unwrap();
    t.read.as_mut().unwrap().mib_s = fifth / 2.0;
    for r in &recs {
        record::results::write_record(&results, r).unwrap();
    }
    ok(&site(&results, &out, &[]));
    let pages = check_site(&out);
    let runner = pages
        .iter()
        .find(|(p, html)| p.starts_with("runners") && html.contains(&format!("<h1>{label}")))
        .map(|(_, html)| html.clone())
        .expect("the runner's page");
    let at = runner.find("id=\"history\"").expect("a History section");
    assert!(
        !runner[at..].contains("<script"),
        "no script in the History section"
    );
    let figures: Vec<&str> = runner[at..]
        .split("<figure class=\"history-box\">")
        .skip(1)
        .collect();
    for c in record::ColumnId::ALL {
        let fig = figures
            .iter()
            .find(|f| f.starts_with(&format!("<figcaption>{} (", c.title())))
            .unwrap_or_else(|| panic!("no History chart for {c}"));
        assert_eq!(
            fig.matches("<circle class=\"point").count(),
            6,
            "{c}: {fig}"
        );
        assert!(
            fig.contains("class=\"band\""),
            "{c}: the noise band is shaded"
        );
    }
    let seq = figures
        .iter()
        .find(|f| f.starts_with("<figcaption>Sequential read ("))
        .unwrap();
    let marked: Vec<&str> = seq
        .split("<circle ")
        .filter(|c| c.contains("marked slower"))
        .collect();
    assert_eq!(marked.len(), 1, "{seq}");
    assert!(
        marked[0].contains(&format!("<title>{sixth_date}")),
        "{}",
        marked[0]
    );
    let index = &pages[Path::new("index.html")];
    let finding = "seq-read on <a href=\"runners/";
    let item = index
        .split("<li")
        .find(|li| li.contains(finding) && li.contains(&sixth_date))
        .unwrap_or_else(|| panic!("the index lists the change: {index}"));
    assert!(
        item.contains("fell from") && item.contains("outside its usual"),
        "{item}"
    );
    let history: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("data/history.json")).unwrap()).unwrap();
    assert_eq!(history["schema"], "diskbench.site-history/1");
    let series = history["runners"][0]["series"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == "seq-read" && s["kind"] == "column")
        .unwrap();
    let points = series["points"].as_array().unwrap();
    assert_eq!(points.len(), 6);
    assert_eq!(points[5]["verdict"], "slower");
    assert!(points[0]["verdict"].is_null());
}

/// Published figures carry their dates: a label published on several dates gets a History
/// section, and a drop beyond its noise is a finding like a measured runner's.
#[test]
fn published_figures_from_several_dates_get_a_history() {
    let tmp = common::sandbox();
    let (results, out) = (tmp.path().join("results"), tmp.path().join("site"));
    let text = std::fs::read_to_string(published_csv()).unwrap();
    let mut lines = text.lines();
    let header = lines.next().unwrap();
    let row = lines
        .find(|l| l.starts_with("2026-09-30,runson-i7i-large,"))
        .expect("the fixture's runson-i7i-large row");
    let seq_at = header
        .split(',')
        .position(|h| h == "seq-read_mib_s")
        .unwrap();
    // Five dates around the published figure, then one at half of it.
    let mut csv = format!("{header}\n");
    for (day, factor) in [
        (1, 1.0),
        (2, 1.02),
        (3, 0.99),
        (4, 1.01),
        (5, 1.0),
        (6, 0.5),
    ] {
        let mut cells: Vec<String> = row.split(',').map(String::from).collect();
        cells[0] = format!("2026-10-{day:02}");
        let v: f64 = cells[seq_at].parse().unwrap();
        cells[seq_at] = format!("{:.1}", v * factor);
        csv.push_str(&cells.join(","));
        csv.push('\n');
    }
    let file = tmp.path().join("published-dates.csv");
    std::fs::write(&file, csv).unwrap();
    ok(&common::run(&[
        "import",
        file.to_str().unwrap(),
        "--results",
        results.to_str().unwrap(),
    ]));
    ok(&site(&results, &out, &[]));
    let pages = check_site(&out);
    let runner = &pages[Path::new("runners/runson-i7i-large.html")];
    assert!(runner.contains("id=\"history\""), "no History section");
    assert_eq!(runner.matches("marked slower").count(), 1, "{runner}");
    let index = &pages[Path::new("index.html")];
    assert!(
        index.contains("seq-read on <a href=\"runners/runson-i7i-large.html\">runson-i7i-large</a> <span class=\"imp\">imported</span> fell from"),
        "{index}"
    );
}

/// A run made with `--preset published` is marked as such in its runner's table of runs,
/// with the preset's settings; the runs made with other settings say theirs.
#[test]
fn runs_made_with_the_published_preset_are_marked_on_their_runner_page() {
    let tmp = tempfile::tempdir().unwrap();
    let (results, out) = (tmp.path().join("results"), tmp.path().join("site"));
    let mut records = Fleet::small().records();
    let label = records[0].runner.label.clone();
    let mut marked = 0;
    for r in records.iter_mut().filter(|r| r.runner.label == label) {
        if marked == 0 && r.settings.suite == "standard" {
            r.settings.preset = Some("published".into());
            r.settings.runtime_s = 20.0;
            r.settings.ramp_s = 2.0;
            r.settings.size = 2 << 30;
            marked += 1;
        }
    }
    assert_eq!(marked, 1, "the fleet's first runner has a standard run");
    let others = records
        .iter()
        .filter(|r| r.runner.label == label && r.settings.preset.is_none())
        .count();
    assert!(others > 0, "the runner has runs without the preset too");
    for r in &records {
        record::results::write_record(&results, r).unwrap();
    }
    ok(&site(&results, &out, &[]));
    let page = std::fs::read_dir(out.join("runners"))
        .unwrap()
        .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap())
        .find(|html| html.contains(&format!("<title>{label} · ")))
        .expect("the runner's page");
    assert_eq!(
        page.matches(
            "published preset: 20 s after a 2 s ramp, 2 GiB files (1 GiB per job in four-job \
             columns)"
        )
        .count(),
        1,
        "one run is marked with the preset and its settings"
    );
    assert!(
        page.matches("5 s after a 1 s ramp").count() >= others,
        "every other run says its own settings"
    );
}

//! The site's weak cases, each tried with several variants: control characters in
//! any record string, absurd figures, two records with one id, an unreadable histogram.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use record::{Bound, Record, WhatIf, WhatIfCondition};

use crate::data::testdata::Fleet;

/// Build a site from `records` (each written to its own file); returns the report and every
/// text file of the site by relative path.
fn site_of(records: &[Record]) -> (crate::SiteReport, BTreeMap<PathBuf, String>) {
    let dir = tempfile::tempdir().unwrap();
    let results = dir.path().join("results");
    for r in records {
        record::results::write_record(&results, r).unwrap();
    }
    site_from(dir.path(), &results)
}

fn site_from(dir: &Path, results: &Path) -> (crate::SiteReport, BTreeMap<PathBuf, String>) {
    let out = dir.join("site");
    let report = crate::build_site(&crate::SiteOptions {
        results: results.to_path_buf(),
        out: out.clone(),
        ..Default::default()
    })
    .unwrap();
    let mut files = BTreeMap::new();
    let mut stack = vec![out.clone()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if let Ok(text) = std::fs::read_to_string(&p) {
                files.insert(p.strip_prefix(&out).unwrap().to_path_buf(), text);
            }
        }
    }
    (report, files)
}

fn with_experiment(r: &mut Record, ratio: f64, wall_s: f64, note: &str) {
    let s = &mut r.steps[0];
    s.status = record::StepStatus::Ok;
    s.what_if = Some(WhatIf {
        baseline: Some(WhatIfCondition {
            id: "baseline".into(),
            wall_s,
            runs: 2,
            wall_runs_s: vec![wall_s, wall_s],
            ..Default::default()
        }),
        conditions: vec![WhatIfCondition {
            id: format!("like:{note}"),
            wall_s,
            ratio: Some(ratio),
            runs: 1,
            notes: vec![note.into()],
            ..Default::default()
        }],
        bound: Bound::Latency,
        why: format!("why {note}"),
        notes: vec![note.into(), format!("second {note}")],
        ..Default::default()
    });
}

#[test]
fn control_characters_in_any_record_string_never_reach_a_page_or_data_file_raw() {
    let hidden = |c: char| {
        (c < ' ' && !matches!(c, '\t' | '\n' | '\r'))
            || matches!(c, '\u{7f}'..='\u{9f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}' | '\u{61c}')
    };
    for (k, bad) in [
        "\u{1b}[31mred\u{1b}[0m",
        "bell\u{7}",
        "csi\u{9b}2J",
        "nel\u{85}x",
        "exe.\u{202e}fdp",
        "iso\u{2066}late\u{2069}",
        "nul\u{0}del\u{7f}",
        "mark\u{200f}\u{61c}",
    ]
    .into_iter()
    .enumerate()
    {
        let mut records = Fleet::small().records();
        let label = records[0].runner.label.clone();
        for r in records.iter_mut().filter(|r| r.runner.label == label) {
            r.runner.label = format!("runner {bad}");
            r.runner.cpu_model = format!("cpu {bad}");
            r.storage.path = format!("/mnt/{bad}");
            r.storage.notes.push(format!("storage note {bad}"));
            r.notes.push(format!("record note {bad}"));
            r.steps[0].name = format!("step {bad}");
            r.steps[0].why = format!("why {bad}");
            if let Some(t) = r.tests.first_mut() {
                t.notes.push(format!("test note {bad}"));
            }
            with_experiment(r, 2.0, 1.0, &format!("note {bad}"));
        }
        let (_, files) = site_of(&records);
        for (rel, text) in &files {
            if let Some(c) = text.chars().find(|&c| hidden(c)) {
                panic!(
                    "variant {k}: {} holds U+{:04X} raw",
                    rel.display(),
                    c as u32
                );
            }
        }
        // Shown, visibly: the runner's page names it with the character made visible.
        let shown = crate::pages::html::esc(&format!("runner {bad}"));
        assert!(
            files
                .iter()
                .any(|(p, t)| p.starts_with("runners") && t.contains(&shown)),
            "variant {k}: {shown:?} not on any runner page"
        );
        // The data files keep the string exactly, escaped.
        let json: serde_json::Value =
            serde_json::from_str(&files[Path::new("data/runners.json")]).unwrap();
        assert!(
            json["runners"]
                .as_array()
                .unwrap()
                .iter()
                .any(|r| r["label"] == format!("runner {bad}")),
            "variant {k}"
        );
    }
}

/// The longest run of digits in `text` (thousands separators and a decimal point inside a
/// number do not break it).
fn longest_digit_run(text: &str) -> (usize, String) {
    let (mut best, mut at, mut run, mut start) = (0, String::new(), 0, 0);
    let chars: Vec<char> = text.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        if c.is_ascii_digit() {
            if run == 0 {
                start = i;
            }
            run += 1;
            if run > best {
                best = run;
                at = chars[start.saturating_sub(20)..(i + 20).min(chars.len())]
                    .iter()
                    .collect();
            }
        } else if !(run > 0 && matches!(c, ',' | '.')) {
            run = 0;
        }
    }
    (best, at)
}

#[test]
fn absurd_figures_are_written_compactly_never_as_300_digits() {
    for (k, v) in [1e308, f64::MAX, 1.7e300, 9.9e20, 1e25]
        .into_iter()
        .enumerate()
    {
        let mut records = Fleet::small().records();
        let label = records[0].runner.label.clone();
        for r in records.iter_mut().filter(|r| r.runner.label == label) {
            for t in &mut r.tests {
                for d in [t.read.as_mut(), t.write.as_mut()].into_iter().flatten() {
                    d.iops = v;
                    d.mib_s = v;
                }
                t.elapsed_s = v;
            }
            for s in &mut r.steps {
                s.wall_s = v;
                s.user_s = v;
                s.sys_s = v;
                s.io_pressure_s = Some(v);
            }
            if let Some(c) = r.cpu_reference.as_mut() {
                c.single_thread_ops_s = v;
                c.all_threads_ops_s = v;
            }
            r.storage.free_bytes = Some(u64::MAX);
            r.storage.total_bytes = Some(u64::MAX);
            with_experiment(r, v, v, "absurd");
        }
        let (_, files) = site_of(&records);
        for (rel, text) in files
            .iter()
            .filter(|(p, _)| p.extension().is_some_and(|e| e == "html" || e == "svg"))
        {
            let (n, at) = longest_digit_run(text);
            // u64::MAX bytes is 20 digits at most; anything longer is a float written out.
            assert!(
                n <= 20,
                "variant {k} ({v:e}): {} has {n} digits: {at:?}",
                rel.display()
            );
        }
        assert!(
            files.values().any(|t| t.contains("e308")
                || t.contains("e300")
                || t.contains("e20")
                || t.contains("e25")),
            "variant {k}: the absurd figure is shown compactly somewhere"
        );
    }
}

#[test]
fn two_records_with_one_id_are_counted_once_and_both_files_named() {
    for copies in [2usize, 3] {
        let records = Fleet::small().records();
        let dir = tempfile::tempdir().unwrap();
        let results = dir.path().join("results");
        for r in &records {
            record::results::write_record(&results, r).unwrap();
        }
        // The same run again under other names (an artifact downloaded twice, edited).
        let original = std::fs::read_dir(&results)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "json"))
            .find(|p| std::fs::read_to_string(p).unwrap().contains(&records[0].id))
            .unwrap();
        for i in 1..copies {
            let mut changed = records[0].clone();
            changed.notes.push(format!("copy {i}"));
            std::fs::write(
                results.join(format!("zz-copy-{i}.json")),
                serde_json::to_string(&changed).unwrap(),
            )
            .unwrap();
        }
        let (report, _) = site_from(dir.path(), &results);
        let dups: Vec<&(PathBuf, String)> = report
            .skipped
            .iter()
            .filter(|(_, why)| why.contains("is also the id of"))
            .collect();
        assert_eq!(dups.len(), copies - 1, "{:?}", report.skipped);
        for (path, why) in dups {
            assert!(path.to_string_lossy().contains("zz-copy-"), "{path:?}");
            assert!(
                why.contains(&records[0].id) && why.contains(&original.display().to_string()),
                "{why}"
            );
        }
        assert_eq!(report.records, records.len());
    }
}

#[test]
fn an_unreadable_histogram_is_named_on_the_page_and_in_the_report() {
    for (k, bad) in [
        "not base64 at all!",
        "AAAA",
        "HISTFAAAACB4nJNpmSzMwMDAxAABzFCaEUoz2X+AiIEIAFsfBGY=",
    ]
    .into_iter()
    .enumerate()
    {
        let mut records = Fleet::small().records();
        let target = records
            .iter()
            .position(|r| {
                r.tests
                    .iter()
                    .any(|t| t.main_direction().is_some_and(|d| d.hist.is_some()))
            })
            .expect("a record with histograms");
        let t = records[target]
            .tests
            .iter_mut()
            .find(|t| t.main_direction().is_some_and(|d| d.hist.is_some()))
            .unwrap();
        let col = t.id.clone();
        for d in [t.read.as_mut(), t.write.as_mut()].into_iter().flatten() {
            if d.hist.is_some() {
                d.hist = Some(bad.into());
            }
        }
        let (report, files) = site_of(&records);
        let w = report
            .warnings
            .iter()
            .find(|w| w.contains("could not be read"))
            .unwrap_or_else(|| panic!("variant {k}: no warning in {:?}", report.warnings));
        assert!(
            w.contains(&format!("the {col} latency histogram of"))
                && w.contains(".json")
                && w.contains(&records[target].started_at),
            "variant {k}: {w}"
        );
        let label = crate::pages::html::esc(&records[target].runner.label);
        let said = format!("Left out: the {col} latency histogram of");
        let pages: Vec<&PathBuf> = files
            .iter()
            .filter(|(p, t)| p.starts_with("runners") && t.contains(&said))
            .map(|(p, _)| p)
            .collect();
        assert_eq!(pages.len(), 1, "variant {k}: {pages:?}");
        assert!(
            files[pages[0]].contains(&format!("<h1>{label}")),
            "variant {k}: said on {:?}, not the runner's page",
            pages[0]
        );
    }
}

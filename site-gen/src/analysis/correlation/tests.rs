use super::*;
use crate::data::testdata::Fleet;
use record::StorageClass;
use record::load::LoadedRecord;

fn dataset(records: Vec<record::Record>) -> Dataset {
    let recs = records
        .into_iter()
        .map(|record| LoadedRecord {
            path: "x".into(),
            record,
        })
        .collect();
    Dataset::build(recs, None)
}

fn fixture(rel: &str) -> String {
    std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../fixtures/published")
            .join(rel),
    )
    .unwrap()
}

/// The shared node files and the EC2 CSV, imported as `cargo diskbench import` does.
pub(crate) fn node_records() -> Vec<record::Record> {
    let mut recs = Vec::new();
    for f in [
        "build-steps-node-2026-10-10.csv",
        "hardware-node-runners-2026-10-08.csv",
        "ec2-storage-2026-09-30_10-01.csv",
    ] {
        let text = fixture(f);
        let mut r = if crate::data::published_timings::is_build_timings(&text) {
            crate::data::published_timings::build_timing_records(&text, f).unwrap()
        } else {
            crate::data::import::csv_records(&text, f).unwrap()
        };
        recs.append(&mut r);
    }
    recs
}

/// A generated runner: its figures and its step times.
struct Gen {
    label: String,
    class: &'static str,
    vcpus: u32,
    seq_mib_s: f64,
    qd1_iops: f64,
    cpu_single: f64,
    cpu_multi: f64,
    steps: Vec<(&'static str, f64)>,
}

/// Records of generated runners, through the real importers (published-figures CSV with CPU
/// columns, build-timings CSV).
fn records_of(fleet: &[Gen]) -> Vec<record::Record> {
    let mut hw = String::from(
        "date,label,vcpus,storage_class,seq-read_mib_s,seq-write_mib_s,rand-read_iops,rand-write_iops,qd1-read_iops,sync-write_iops,cpu_single,cpu_multi,cpu_benchmark\n",
    );
    let mut times = String::from("date,label,suite,step,wall_s,status\n");
    for g in fleet {
        hw.push_str(&format!(
            "2026-11-01,{},{},{},{},{},{},{},{},{},{},{},gen\n",
            g.label,
            g.vcpus,
            g.class,
            g.seq_mib_s,
            g.seq_mib_s * 0.8,
            g.seq_mib_s * 150.0,
            g.seq_mib_s * 90.0,
            g.qd1_iops,
            g.qd1_iops * 0.5,
            g.cpu_single,
            g.cpu_multi
        ));
        for (step, t) in &g.steps {
            times.push_str(&format!(
                "2026-11-02,{},gen,{step},{t:.3},success\n",
                g.label
            ));
        }
    }
    let mut recs = crate::data::import::csv_records(&hw, "hw.csv").unwrap();
    recs.append(
        &mut crate::data::published_timings::build_timing_records(&times, "t.csv").unwrap(),
    );
    recs
}

/// A small deterministic wobble in [-1, 1] per runner and step.
fn wobble(i: usize, k: u64) -> f64 {
    let mut r = crate::data::testdata::Rng::new(k * 1000 + i as u64);
    r.unit() * 2.0 - 1.0
}

/// Sixteen runners in four sizes and four families. Within a family the disk grows exactly
/// with the cores (instance storage scales with the size), so across the fleet the faster
/// disks sit where the more cores are; families differ in per-core speed and in disk, in
/// different orders, which is the only thing that can tell the two apart.
fn confounded_fleet(time: impl Fn(&Gen, usize) -> Vec<(&'static str, f64)>) -> Vec<Gen> {
    // (per-core speed, disk MiB/s per vCPU, QD1 IOPS)
    let families = [
        (0.75, 160.0, 9_000.0),
        (0.9, 50.0, 3_000.0),
        (1.05, 280.0, 14_000.0),
        (1.25, 90.0, 6_000.0),
    ];
    let mut out = Vec::new();
    for (fi, (speed, disk, qd1)) in families.iter().enumerate() {
        for vcpus in [2u32, 4, 8, 16] {
            let mut g = Gen {
                label: format!("fam{fi}-{vcpus}x"),
                class: "nvme",
                vcpus,
                seq_mib_s: disk * vcpus as f64,
                qd1_iops: *qd1,
                cpu_single: 1000.0 * speed,
                cpu_multi: 1000.0 * speed * vcpus as f64,
                steps: Vec::new(),
            };
            let i = out.len();
            g.steps = time(&g, i);
            out.push(g);
        }
    }
    out
}

fn step<'a>(a: &'a [StepAnalysis], name: &str) -> &'a StepAnalysis {
    a.iter().find(|s| s.name == name).unwrap()
}

#[test]
fn confounded_fleet_cpu_only_step_is_called_cpu_not_bandwidth() {
    let fleet = confounded_fleet(|g, i| {
        vec![(
            "compile",
            4_000.0 / g.cpu_multi * 100.0 * (1.0 + 0.12 * wobble(i, 1)),
        )]
    });
    let a = analyse(&dataset(records_of(&fleet)));
    let s = step(&a, "compile");
    // The trap: ranked alone, sequential read looks strongly linked.
    let seq = s.link(Figure::Column(ColumnId::SeqRead)).unwrap();
    assert!(seq.rho.unwrap() < -0.6, "{:?}", seq.rho);
    assert_eq!(s.follows, Follows::Cpu, "{}", s.conclusion);
    assert_eq!(s.deciding, Some(Figure::CpuMulti), "{}", s.conclusion);
    // The single-thread figure alone (what the steps page used to rank against) misses it.
    let single = s.link(Figure::CpuSingle).unwrap();
    assert!(single.rho.unwrap() > seq.rho.unwrap(), "{single:?}");
    assert!(!seq.clear(), "{seq:?}");
}

#[test]
fn confounded_fleet_disk_bound_step_is_called_disk() {
    let fleet = confounded_fleet(|g, i| {
        vec![(
            "unpack",
            (30_000.0 / g.seq_mib_s + 100.0 / g.cpu_multi) * (1.0 + 0.12 * wobble(i, 2)),
        )]
    });
    let a = analyse(&dataset(records_of(&fleet)));
    let s = step(&a, "unpack");
    let cpu = s.link(Figure::CpuMulti).unwrap();
    assert!(cpu.rho.unwrap() < -0.5, "confounded: {:?}", cpu.rho);
    assert_eq!(s.follows, Follows::Bandwidth, "{}", s.conclusion);
    assert!(!cpu.clear(), "{cpu:?}");
}

#[test]
fn confounded_fleet_latency_step_is_called_latency() {
    let fleet = confounded_fleet(|g, i| {
        vec![(
            "commit",
            50_000.0 / g.qd1_iops * (1.0 + 0.12 * wobble(i, 3)),
        )]
    });
    let s = analyse(&dataset(records_of(&fleet))).remove(0);
    assert_eq!(s.follows, Follows::Latency, "{}", s.conclusion);
}

#[test]
fn four_runners_no_call_and_the_reason() {
    let fleet: Vec<Gen> = confounded_fleet(|g, _| vec![("compile", 4_000.0 / g.cpu_multi)])
        .into_iter()
        .step_by(4)
        .collect();
    assert_eq!(fleet.len(), 4);
    let s = analyse(&dataset(records_of(&fleet))).remove(0);
    assert_eq!(s.follows, Follows::TooFew);
    assert_eq!(s.no_call, Some(NoCall::TooFewRunners { n: 4 }));
    assert!(s.conclusion.contains("only 4 runners"), "{}", s.conclusion);
    assert!(s.deciding.is_none());
}

#[test]
fn all_runners_on_one_disk_figure_no_call_and_the_reason() {
    // Eight EBS volumes at the same provisioned figures (within run-to-run noise), CPUs apart.
    let fleet: Vec<Gen> = (0..8)
        .map(|i| {
            let cpu = 1000.0 * (1.0 + i as f64 * 0.3);
            Gen {
                label: format!("ebs-{i}"),
                class: "ebs",
                vcpus: 4,
                seq_mib_s: 400.0 * (1.0 + 0.01 * wobble(i, 4)),
                qd1_iops: 1800.0 * (1.0 + 0.02 * wobble(i, 5)),
                cpu_single: cpu,
                cpu_multi: cpu * 4.0,
                steps: vec![("compile", 4_000.0 / cpu * 10.0)],
            }
        })
        .collect();
    let s = analyse(&dataset(records_of(&fleet))).remove(0);
    assert_eq!(s.no_call, Some(NoCall::OneDiskFigure), "{}", s.conclusion);
    assert_eq!(s.follows, Follows::TooFew);
    assert!(s.conclusion.contains("same disk"), "{}", s.conclusion);
    let (html, _) = site_of(&records_of(&fleet));
    assert!(
        html.contains("all 8 runners are on about the same disk"),
        "{html}"
    );
    // The advice fits the reason: other disks would settle it, not more of the same runners.
    assert!(html.contains("A runner with a different disk"), "{html}");
    assert!(!html.contains("Measure more runners"), "{html}");
}

#[test]
fn an_experiment_outranks_the_correlation() {
    let fleet = confounded_fleet(|g, _| vec![("compile", 4_000.0 / g.cpu_multi)]);
    let ds = dataset(records_of(&fleet));
    let mut exp = BTreeMap::new();
    exp.insert(
        "gen/compile".to_string(),
        Experiment {
            runner: "here".into(),
            bound: Bound::Latency,
            why: "capping the disk at 1,000 IOPS made it 15x slower".into(),
        },
    );
    let s = analyse_with(&ds, &exp).remove(0);
    assert_eq!((s.follows, s.by), (Follows::Latency, By::Experiment));
    assert_eq!(s.follows_by_correlation, Follows::Cpu);
    assert!(
        s.conclusion.contains("by experiment on here"),
        "{}",
        s.conclusion
    );
    assert!(
        s.conclusion.contains("Across runners the ranks say"),
        "{}",
        s.conclusion
    );
}

#[test]
fn node_job_typecheck_follows_the_cpu_and_bun_install_the_disk() {
    let a = analyse(&dataset(node_records()));
    let tc = step(&a, "typecheck");
    assert_eq!(tc.suite, "node");
    assert_eq!(tc.follows, Follows::Cpu, "{}", tc.conclusion);
    assert_eq!(tc.cpu_benchmark.as_deref(), Some("sysbench cpu, events/s"));
    let bun = step(&a, "bun install");
    assert!(
        matches!(bun.follows, Follows::Bandwidth | Follows::Latency),
        "{}",
        bun.conclusion
    );
    // 8 runners have times; 7 have disk and CPU figures (the 8th has none published).
    assert_eq!(tc.n, 8);
    assert_eq!(tc.link(Figure::CpuMulti).unwrap().points.len(), 7);
    // Whole-second steps of a second or two are not called.
    for short in ["clone", "toolchain"] {
        let s = step(&a, short);
        assert!(
            matches!(s.no_call, Some(NoCall::CoarseTimes { .. })),
            "{}",
            s.conclusion
        );
    }
    assert!(tc.conclusion.contains("imported"), "{}", tc.conclusion);
    // The pair in the data that differs in disk only: tmpfs against EBS on the same CPU.
    let pair = bun.disk_only_pair.as_ref().unwrap();
    assert_eq!(
        (pair.better.0.as_str(), pair.worse.0.as_str()),
        ("runson-r8a-tmpfs-x64", "runson-m8a-x64")
    );
    assert_eq!((pair.better.3, pair.worse.3), (8.0, 21.0));
    let pair = tc.disk_only_pair.as_ref().unwrap();
    assert_eq!(pair.better.3, pair.worse.3, "{}", tc.conclusion);
}

/// The shipped node data holds a disk-only pair (tmpfs and EBS, same CPU, at least
/// 10x apart in every disk figure). typecheck took 35 s on both: "not the disk" by that pair,
/// which agrees with the CPU call of the ranks; `bun install` took 8 s against 21 s: the disk
/// matters, by the same pair.
#[test]
fn node_job_disk_only_pair_says_typecheck_is_not_the_disk() {
    let a = analyse(&dataset(node_records()));
    let tc = step(&a, "typecheck");
    let p = tc.disk_only_pair.as_ref().unwrap();
    assert_eq!(
        (p.better.0.as_str(), p.worse.0.as_str()),
        ("runson-r8a-tmpfs-x64", "runson-m8a-x64")
    );
    assert!(p.min_ratio >= DECIDING_PAIR_RATIO, "{p:?}");
    assert_eq!(p.resolution_s, 1.0);
    assert_eq!(p.reading, PairReading::NotTheDisk, "{}", tc.conclusion);
    assert_eq!((tc.follows, tc.by), (Follows::Cpu, By::Correlation));
    assert!(
        tc.conclusion.contains("not the disk, by this pair"),
        "{}",
        tc.conclusion
    );
    // Its limits are said: one pair, whole seconds, the memory it does not hold fixed.
    assert!(
        tc.conclusion.contains("one pair") && tc.conclusion.contains("32 GiB against 16 GiB"),
        "{}",
        tc.conclusion
    );
    let bun = step(&a, "bun install");
    let p = bun.disk_only_pair.as_ref().unwrap();
    assert_eq!(p.reading, PairReading::TheDisk, "{}", bun.conclusion);
    assert_ne!(bun.follows, Follows::NotTheDisk);
    assert!(
        bun.conclusion.contains("the disk matters"),
        "{}",
        bun.conclusion
    );
    // Whole-second steps of a second or two: the pair cannot tell, and says nothing.
    for short in ["clone", "toolchain"] {
        let s = step(&a, short);
        assert!(
            s.disk_only_pair
                .as_ref()
                .is_none_or(|p| p.reading == PairReading::Unclear),
            "{}",
            s.conclusion
        );
        assert_ne!(s.follows, Follows::NotTheDisk);
    }
}

/// Generated rows: six runners whose step time is noise (no call from the ranks), two of them
/// on the same CPU with disks `ratio` apart in every figure and the given times.
fn pair_fleet(ratio: f64, pair_times: (f64, f64)) -> Vec<Gen> {
    let mut out: Vec<Gen> = (0..6)
        .map(|i| {
            let cpu = 1000.0 * (1.0 + i as f64 * 0.25);
            Gen {
                label: format!("other-{i}"),
                class: "nvme",
                vcpus: 4 + 2 * i as u32,
                seq_mib_s: 300.0 * (1.0 + ((i * 5) % 6) as f64 * 0.6),
                qd1_iops: 3000.0 * (1.0 + ((i * 2) % 6) as f64 * 0.5),
                cpu_single: cpu,
                cpu_multi: cpu * (4 + 2 * i) as f64,
                steps: vec![("lint", [28.0, 31.0, 27.0, 33.0, 29.0, 30.0][i])],
            }
        })
        .collect();
    for (label, class, disk, t) in [
        ("pair-fast", "tmpfs", ratio, pair_times.0),
        ("pair-slow", "ebs", 1.0, pair_times.1),
    ] {
        out.push(Gen {
            label: label.into(),
            class,
            vcpus: 4,
            seq_mib_s: 400.0 * disk,
            qd1_iops: 1800.0 * disk,
            cpu_single: 5000.0,
            cpu_multi: 20_000.0,
            steps: vec![("lint", t)],
        });
    }
    out
}

#[test]
fn a_disk_only_pair_with_equal_times_decides_not_the_disk() {
    // 41x apart, 28 s against 27 s (whole seconds): the same time, not the disk.
    let s = analyse(&dataset(records_of(&pair_fleet(41.0, (28.0, 27.0))))).remove(0);
    let p = s.disk_only_pair.as_ref().unwrap();
    assert_eq!(
        (p.better.0.as_str(), p.worse.0.as_str()),
        ("pair-fast", "pair-slow")
    );
    assert!((p.min_ratio - 41.0).abs() < 0.5, "{p:?}");
    assert_eq!(p.reading, PairReading::NotTheDisk);
    assert_eq!(
        (s.follows, s.by),
        (Follows::NotTheDisk, By::DiskOnlyPair),
        "{}",
        s.conclusion
    );
    assert!(
        s.conclusion.contains("does not follow the disk"),
        "{}",
        s.conclusion
    );
    // The advice no longer asks for the pair the data already has.
    assert!(
        !s.conclusion.contains("would settle it.")
            || !s
                .conclusion
                .contains("differ in disk only (same CPU), would"),
        "{}",
        s.conclusion
    );
    let j = serde_json::to_value(crate::pages::steps_json::steps_json(std::slice::from_ref(
        &s,
    )))
    .unwrap();
    assert_eq!(j["steps"][0]["follows"], "not-disk");
    assert_eq!(j["steps"][0]["by"], "disk-only-pair");
    assert_eq!(j["steps"][0]["disk_only_pair"]["reading"], "not-disk");
}

#[test]
fn a_disk_only_pair_decides_only_when_it_can() {
    // Times apart: the disk matters by the pair; the pair does not make it "not the disk".
    let s = analyse(&dataset(records_of(&pair_fleet(41.0, (9.0, 27.0))))).remove(0);
    assert_eq!(
        s.disk_only_pair.as_ref().unwrap().reading,
        PairReading::TheDisk
    );
    assert_ne!(s.follows, Follows::NotTheDisk, "{}", s.conclusion);
    // Disks only 5x apart: equal times prove too little to decide.
    let s = analyse(&dataset(records_of(&pair_fleet(5.0, (28.0, 27.0))))).remove(0);
    assert_eq!(
        s.disk_only_pair.as_ref().unwrap().reading,
        PairReading::Unclear
    );
    assert_ne!(s.follows, Follows::NotTheDisk, "{}", s.conclusion);
    // A step of 3 whole seconds: one second is a third of it; the pair cannot tell.
    let mut fleet = pair_fleet(41.0, (3.0, 3.0));
    for g in fleet.iter_mut() {
        g.steps = vec![("lint", (g.steps[0].1 / 9.0).round())];
    }
    fleet[6].steps = vec![("lint", 3.0)];
    fleet[7].steps = vec![("lint", 3.0)];
    let s = analyse(&dataset(records_of(&fleet))).remove(0);
    assert_eq!(
        s.disk_only_pair.as_ref().unwrap().reading,
        PairReading::Unclear
    );
    assert_ne!(s.follows, Follows::NotTheDisk, "{}", s.conclusion);
    // An experiment on the step outranks the pair.
    let ds = dataset(records_of(&pair_fleet(41.0, (28.0, 27.0))));
    let mut exp = BTreeMap::new();
    exp.insert(
        "gen/lint".to_string(),
        Experiment {
            runner: "here".into(),
            bound: Bound::Bandwidth,
            why: "a bandwidth cap made it 3x slower".into(),
        },
    );
    let s = analyse_with(&ds, &exp).remove(0);
    assert_eq!((s.follows, s.by), (Follows::Bandwidth, By::Experiment));
}

#[test]
fn generated_small_fleet_steps_follow_what_they_were_made_of() {
    let ds = dataset(Fleet::small().records());
    let a = analyse(&ds);
    let sqlite = a.iter().find(|s| s.id == "sqlite").unwrap();
    assert_eq!(sqlite.follows, Follows::Latency, "{}", sqlite.conclusion);
    let docker = a.iter().find(|s| s.id == "docker-build").unwrap();
    assert_eq!(docker.failed_runners, 1);
    assert!(sqlite.conclusion.contains("n = "));
    let cargo = a.iter().find(|s| s.id == "cargo-build").unwrap();
    assert_ne!(cargo.follows, Follows::Latency, "{}", cargo.conclusion);
    assert_ne!(cargo.follows, Follows::Bandwidth, "{}", cargo.conclusion);
}

#[test]
fn steps_json_holds_the_same_conclusions() {
    let a = analyse(&dataset(node_records()));
    let v = serde_json::to_value(crate::pages::steps_json::steps_json(&a)).unwrap();
    assert_eq!(v["schema"], crate::pages::steps_json::SCHEMA);
    let steps = v["steps"].as_array().unwrap();
    assert_eq!(steps.len(), a.len());
    for (j, s) in steps.iter().zip(&a) {
        assert_eq!(j["follows"], s.follows.as_str());
        assert_eq!(j["conclusion"], s.conclusion.as_str());
        assert_eq!(j["suite"], s.suite.as_str());
        assert_eq!(j["step"], s.name.as_str());
        assert_eq!(j["figures"].as_array().unwrap().len(), 8);
    }
    let tc = steps.iter().find(|s| s["step"] == "typecheck").unwrap();
    assert_eq!(tc["follows"], "cpu");
    assert_eq!(tc["by"], "correlation");
    let multi = tc["figures"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["figure"] == "cpu-multi")
        .unwrap();
    let i = multi["interval"].as_array().unwrap();
    assert!(i[1].as_f64().unwrap() < 0.0, "{multi}");
}

/// Build a site from `records` in a temp dir; returns (steps.html, steps.json).
fn site_of(records: &[record::Record]) -> (String, serde_json::Value) {
    let dir = tempfile::tempdir().unwrap();
    let results = dir.path().join("results");
    for r in records {
        record::results::write_record(&results, r).unwrap();
    }
    let out = dir.path().join("site");
    crate::build_site(&crate::SiteOptions {
        results,
        out: out.clone(),
        ..Default::default()
    })
    .unwrap();
    let html = std::fs::read_to_string(out.join("steps.html")).unwrap();
    let json = std::fs::read_to_string(out.join("data/steps.json")).unwrap();
    (html, serde_json::from_str(&json).unwrap())
}

#[test]
fn node_site_shows_each_step_with_conclusion_table_and_plots() {
    let recs = node_records();
    let (html, json) = site_of(&recs);
    let a = analyse(&dataset(recs));
    assert_eq!(json["schema"], "diskbench.site-steps/1");
    for s in &a {
        let esc = crate::pages::html::esc(&s.conclusion);
        assert!(
            html.contains(&esc),
            "{} missing from the page",
            s.conclusion
        );
        let j = json["steps"]
            .as_array()
            .unwrap()
            .iter()
            .find(|j| j["id"] == s.id.as_str())
            .unwrap();
        assert_eq!(j["conclusion"], s.conclusion.as_str());
        assert_eq!(j["follows"], s.follows.as_str());
    }
    let section = |name: &str| {
        let start = html.find("<h2 id=\"step-").unwrap();
        let at = html[start..].find(&format!("{name} <code>")).unwrap() + start;
        let end = html[at..].find("</section>").unwrap() + at;
        html[at..end].to_string()
    };
    let tc = section("typecheck");
    assert!(tc.contains("b-cpu") && tc.contains(">imported<"), "{tc}");
    assert!(tc.contains("<table class=\"rho\">") && tc.contains("CPU, all threads"));
    // Two plots (the deciding disk figure and the CPU), points labelled by runner and class.
    assert_eq!(tc.matches("<svg").count(), 2, "{tc}");
    assert!(
        tc.contains("<title>runson-r8a-tmpfs-x64 (tmpfs, imported):"),
        "{tc}"
    );
    let bun = section("bun install");
    assert!(
        bun.contains("b-bandwidth") || bun.contains("b-latency"),
        "{bun}"
    );
    assert!(html.contains("data/steps.json"));
}

#[test]
fn four_runner_site_says_why_there_is_no_call() {
    let fleet: Vec<Gen> = confounded_fleet(|g, _| vec![("compile", 4_000.0 / g.cpu_multi)])
        .into_iter()
        .step_by(4)
        .collect();
    let (html, json) = site_of(&records_of(&fleet));
    assert!(html.contains("b-too-few"), "{html}");
    assert!(
        html.contains("only 4 runners have both its time and disk figures"),
        "{html}"
    );
    assert_eq!(json["steps"][0]["follows"], "too-few");
}

#[test]
fn methodology_quotes_the_node_example_as_computed() {
    let a = analyse(&dataset(node_records()));
    let table = wording::markdown_table(&[step(&a, "typecheck"), step(&a, "bun install")]);
    let page = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../content/methodology.md"),
    )
    .unwrap();
    assert!(
        page.contains(&table),
        "content/methodology.md must quote the node example as computed; expected:\n{table}"
    );
    // The pair the page names: same CPU (within 1%), tmpfs against EBS, 8 s against 21 s.
    let bun = step(&a, "bun install");
    let at = |label: &str, f: Figure| {
        let l = bun.link(f).unwrap();
        let p = l.points.iter().find(|p| p.label == label).unwrap();
        (p.x, p.time_s, p.class)
    };
    let (cpu_t, t_t, c_t) = at("runson-r8a-tmpfs-x64", Figure::CpuMulti);
    let (cpu_e, t_e, c_e) = at("runson-m8a-x64", Figure::CpuMulti);
    assert!((cpu_t / cpu_e - 1.0).abs() < 0.01);
    assert_eq!((c_t, c_e), (StorageClass::Tmpfs, StorageClass::Ebs));
    assert!(page.contains(&format!(
        "the\ntmpfs runner and an EBS runner with the same CPU differ {t_t} s to {t_e} s"
    )));
}

#[test]
fn cpu_scores_of_different_benchmarks_are_never_ranked_together() {
    let fleet = confounded_fleet(|g, _| vec![("compile", 4_000.0 / g.cpu_multi)]);
    let mut recs = records_of(&fleet);
    // Three runners' CPU figures come from another benchmark (scaled 1000x, as another
    // benchmark's scores might be): they must be left out of the CPU ranks, not ranked as fastest.
    let mut renamed = 0;
    for r in recs.iter_mut() {
        if let Some(c) = r.cpu_reference.as_mut().filter(|_| renamed < 3) {
            c.benchmark = Some("geekbench".into());
            c.single_thread_ops_s *= 1000.0;
            c.all_threads_ops_s *= 1000.0;
            renamed += 1;
        }
    }
    let s = analyse(&dataset(recs)).remove(0);
    assert_eq!(s.cpu_benchmark.as_deref(), Some("gen"));
    assert_eq!(s.cpu_other_benchmark, 3);
    assert_eq!(s.link(Figure::CpuMulti).unwrap().points.len(), 13);
    assert!(
        s.link(Figure::CpuMulti)
            .unwrap()
            .points
            .iter()
            .all(|p| p.x < 1e6)
    );
    assert!(
        s.conclusion.contains("another benchmark"),
        "{}",
        s.conclusion
    );
}

/// How often a step whose time is pure noise gets a call anyway (figures confounded as in the
/// fleets above, 8 runners drawn from them). The bootstrap over few runners is rough and the
/// best of six disk figures is picked, so this is not 5%; it must stay small.
#[test]
fn noise_steps_are_rarely_called() {
    let (mut called, trials) = (0, 60);
    for k in 0..trials {
        let fleet = confounded_fleet(|_, i| vec![("noise", 50.0 + 10.0 * wobble(i, 100 + k))]);
        let keep: Vec<Gen> = fleet
            .into_iter()
            .enumerate()
            .filter(|(i, _)| wobble(*i, 500 + k) > -0.05)
            .map(|(_, g)| g)
            .take(8)
            .collect();
        let s = analyse(&dataset(records_of(&keep))).remove(0);
        if s.deciding.is_some() {
            called += 1;
        }
    }
    eprintln!("noise steps called: {called} of {trials}");
    assert!(
        called * 5 <= trials,
        "{called} of {trials} noise steps got a call"
    );
}

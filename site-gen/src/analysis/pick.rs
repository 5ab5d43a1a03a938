//! "Pick a runner for your job", the index's first section: for three kinds of CI job, the best
//! runners in the data by the figure that decides, the evidence for that figure (a verdict by
//! experiment, a correlation across runners, a disk-only pair) and the configuration that beats
//! any runner. Every name and figure comes from the data; where the data has no evidence for a
//! job, the section says so instead of guessing.

use record::{ColumnId, StorageClass};
use serde::Serialize;

use crate::analysis::correlation::{
    By, Family, Figure, Follows, PairReading, StepAnalysis, wording,
};
use crate::analysis::findings::fmt_headline;
use crate::analysis::stats::{fmt_ratio, fmt_sig};
use crate::data::model::{Dataset, RunnerOverview};

/// How many runners each job names.
pub(crate) const TOP: usize = 3;

/// The three kinds of job the section answers for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum JobKind {
    /// Database- or SQLite-backed tests: synced writes and one-at-a-time reads.
    Database,
    /// Docker builds and package installs: big sequential transfers and small files at depth.
    Install,
    /// Compiles: the CPU, the disk only if a step's evidence says so.
    Compile,
}

impl JobKind {
    pub const ALL: [JobKind; 3] = [JobKind::Database, JobKind::Install, JobKind::Compile];

    pub(crate) fn id(self) -> &'static str {
        match self {
            JobKind::Database => "database",
            JobKind::Install => "install",
            JobKind::Compile => "compile",
        }
    }

    pub(crate) fn title(self) -> &'static str {
        match self {
            JobKind::Database => "Database- or SQLite-backed tests",
            JobKind::Install => "Docker builds and package installs",
            JobKind::Compile => "Compiles",
        }
    }

    /// Which kind a build step is, from its id and name (this tool's steps by id, published
    /// ones by the words in their name).
    pub(crate) fn of_step(id: &str, name: &str) -> Option<JobKind> {
        let s = format!("{id} {name}").to_lowercase();
        let any = |words: &[&str]| words.iter().any(|w| s.contains(w));
        if any(&["sqlite", "database", "postgres", "mysql"]) {
            Some(JobKind::Database)
        } else if any(&["docker", "install", "npm ci", "apt-get", "pip ", "restore"]) {
            Some(JobKind::Install)
        } else if any(&[
            "cargo-build",
            "compile",
            "typecheck",
            "tsc",
            "clippy",
            "cargo build",
            "build",
        ]) {
            Some(JobKind::Compile)
        } else {
            None
        }
    }
}

/// One runner named for a job.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct Pick {
    pub label: String,
    pub slug: String,
    pub class: &'static str,
    pub imported: bool,
    /// The deciding figure, formatted ("4,336 IOPS").
    pub figure: String,
    /// The second figure the job leans on, formatted, when there is one.
    pub also: Option<String>,
}

/// A link to what says which figure decides.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct Evidence {
    /// "experiment", "correlation", "disk-only pair", "column".
    pub kind: &'static str,
    /// Relative to the site root.
    pub href: String,
    /// Plain text (the template escapes it).
    pub text: String,
}

/// One job's answer.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct JobPick {
    pub id: &'static str,
    pub job: &'static str,
    /// What decides, in words: "synced writes (sync-write)".
    pub decides: String,
    pub runners: Vec<Pick>,
    pub evidence: Vec<Evidence>,
    /// The configuration that beats any runner, with its figures from the data.
    pub config: Option<String>,
    /// Why no runner is named (no figures in the data).
    pub none: Option<String>,
}

fn col_phrase(c: ColumnId) -> String {
    wording::phrase(Figure::Column(c))
}

/// Runners on a disk (not tmpfs) with a figure a disk can produce in `c`, best first.
fn best_disks(ds: &Dataset, c: ColumnId) -> Vec<&RunnerOverview> {
    let mut v: Vec<&RunnerOverview> = ds
        .runners
        .iter()
        .filter(|r| r.class != StorageClass::Tmpfs && r.disk_column(c).is_some())
        .collect();
    v.sort_by(|a, b| {
        let (x, y) = (a.median(c), b.median(c));
        y.total_cmp(&x).then_with(|| a.label.cmp(&b.label))
    });
    v
}

fn pick_of(r: &RunnerOverview, figure: String, also: Option<String>) -> Pick {
    Pick {
        label: r.label.clone(),
        slug: r.slug.clone(),
        class: r.class.as_str(),
        imported: r.imported,
        figure,
        also,
    }
}

fn fig_of(r: &RunnerOverview, c: ColumnId) -> Option<String> {
    r.disk_column(c)
        .map(|f| format!("{} {}", col_phrase(c), fmt_headline(c, f.median)))
}

/// The steps of a kind, with their place on the steps page (`steps.html#step-N`).
fn steps_of(steps: &[StepAnalysis], kind: JobKind) -> Vec<(usize, &StepAnalysis)> {
    steps
        .iter()
        .enumerate()
        .filter(|(_, s)| JobKind::of_step(&s.id, &s.name) == Some(kind))
        .map(|(i, s)| (i + 1, s))
        .collect()
}

/// What the steps of a kind say, as links: the call (by experiment, disk-only pair or
/// correlation) of each step that has one, and each pair that reads the disk or not.
fn step_evidence(steps: &[(usize, &StepAnalysis)]) -> Vec<Evidence> {
    let mut out = Vec::new();
    for (n, s) in steps {
        let href = format!("steps.html#step-{n}");
        let called = !matches!(s.follows, Follows::Neither | Follows::TooFew);
        if called {
            let (kind, how) = match s.by {
                By::Experiment => (
                    "experiment",
                    format!(
                        "by experiment on {}",
                        s.experiment
                            .as_ref()
                            .map(|e| e.runner.as_str())
                            .unwrap_or("?")
                    ),
                ),
                By::DiskOnlyPair => ("disk-only pair", "by a disk-only pair".to_string()),
                By::Correlation => (
                    "correlation",
                    format!("by rank correlation over {} runners", s.n),
                ),
            };
            let what = match (s.by, &s.experiment) {
                (By::Experiment, Some(e)) => wording::what_bound(e.bound),
                _ => wording::what(s.follows),
            };
            let deciding = match s.deciding {
                Some(f) if s.by == By::Correlation => format!(", on {}", wording::phrase(f)),
                _ => String::new(),
            };
            out.push(Evidence {
                kind,
                href: href.clone(),
                text: format!("{} follows {what}{deciding}, {how}", s.name),
            });
        }
        if let Some(p) = &s.disk_only_pair
            && p.reading != PairReading::Unclear
            && s.by != By::DiskOnlyPair
        {
            let says = match p.reading {
                PairReading::NotTheDisk => "not the disk",
                _ => "the disk matters",
            };
            out.push(Evidence {
                kind: "disk-only pair",
                href,
                text: format!(
                    "{}: {says}, by a disk-only pair ({} against {}, same CPU, disks at least {} apart: {:.0} s against {:.0} s)",
                    s.name,
                    p.better.0,
                    p.worse.0,
                    fmt_ratio(p.min_ratio),
                    p.better.3,
                    p.worse.3
                ),
            });
        }
    }
    out
}

fn column_evidence(c: ColumnId, what: &str) -> Evidence {
    Evidence {
        kind: "column",
        href: format!("by/{}.html", c.as_str()),
        text: format!(
            "no such step in this data: {} is the column that does what {what}",
            col_phrase(c)
        ),
    }
}

/// The best tmpfs figure against the best disk's in `c`: "on tmpfs (label) 434,802 IOPS, 100 x
/// the best disk's".
fn tmpfs_against_disk(
    ds: &Dataset,
    c: ColumnId,
    best_disk: Option<&RunnerOverview>,
) -> Option<String> {
    let t = ds
        .runners
        .iter()
        .filter(|r| r.class == StorageClass::Tmpfs)
        .filter_map(|r| Some((r, r.column(c)?.median)))
        .max_by(|a, b| a.1.total_cmp(&b.1))?;
    let d = best_disk?.disk_column(c)?.median;
    (d > 0.0).then(|| {
        format!(
            "{} on tmpfs ({}) against {} on the best disk, {}",
            fmt_headline(c, t.1),
            t.0.label,
            fmt_headline(c, d),
            fmt_ratio(t.1 / d)
        )
    })
}

fn database(ds: &Dataset, steps: &[StepAnalysis]) -> JobPick {
    let c = ColumnId::SyncWrite;
    let ranked = best_disks(ds, c);
    let runners: Vec<Pick> = ranked
        .iter()
        .take(TOP)
        .map(|r| {
            pick_of(
                r,
                fig_of(r, c).unwrap_or_default(),
                fig_of(r, ColumnId::Qd1Read),
            )
        })
        .collect();
    let mut evidence = step_evidence(&steps_of(steps, JobKind::Database));
    if evidence.is_empty() {
        evidence.push(column_evidence(
            c,
            "a database commit does (a 4 KiB write and fdatasync, one at a time)",
        ));
    }
    let config = tmpfs_against_disk(ds, c, ranked.first().copied()).map(|t| {
        format!(
            "Beats any runner: put the test database on tmpfs (/dev/shm), or set PRAGMA synchronous=OFF in tests, which skips the sync. Synced writes here: {t}."
        )
    });
    JobPick {
        id: JobKind::Database.id(),
        job: JobKind::Database.title(),
        decides: format!(
            "latency: synced writes ({}) first, then one-at-a-time reads ({})",
            c.as_str(),
            ColumnId::Qd1Read.as_str()
        ),
        none: runners
            .is_empty()
            .then(|| "No runner in this data has a sync-write figure from a disk.".into()),
        runners,
        evidence,
        config,
    }
}

fn install(ds: &Dataset, steps: &[StepAnalysis]) -> JobPick {
    let kind_steps = steps_of(steps, JobKind::Install);
    // The figure a step of this kind was found to follow, where one was; else sequential write
    // with random write at depth beside it.
    let decided = kind_steps
        .iter()
        .find_map(|(_, s)| match (s.by, s.deciding) {
            (By::Correlation, Some(Figure::Column(c))) => Some(c),
            // An experiment that says small operations: small writes at depth decide.
            (By::Experiment, _) if s.follows == Follows::Latency => Some(ColumnId::RandWrite),
            (By::Experiment, _) if s.follows == Follows::Bandwidth => Some(ColumnId::SeqWrite),
            _ => None,
        });
    let main = decided.unwrap_or(ColumnId::SeqWrite);
    let second = if main == ColumnId::RandWrite {
        ColumnId::SeqWrite
    } else {
        ColumnId::RandWrite
    };
    let ranked = best_disks(ds, main);
    let runners: Vec<Pick> = ranked
        .iter()
        .take(TOP)
        .map(|r| pick_of(r, fig_of(r, main).unwrap_or_default(), fig_of(r, second)))
        .collect();
    let mut evidence = step_evidence(&kind_steps);
    if evidence.is_empty() {
        evidence.push(column_evidence(
            main,
            "unpacking layers and packages does (big sequential writes)",
        ));
    }
    // The local disk against the network volumes, where the data has both.
    let best_of = |class: StorageClass| {
        ranked
            .iter()
            .find(|r| r.class == class)
            .and_then(|r| Some((*r, r.disk_column(main)?.median)))
    };
    let network = [StorageClass::Ebs, StorageClass::NetworkDisk]
        .into_iter()
        .filter_map(best_of)
        .max_by(|a, b| a.1.total_cmp(&b.1));
    let config = match (best_of(StorageClass::LocalNvme), network) {
        (Some((l, lv)), Some((n, nv))) if nv > 0.0 && lv > nv => Some(format!(
            "Beats any runner size: build on the local scratch disk where the provider has one (Docker's data-root and the package cache there). In this data the best local NVMe ({}) does {} against {} on the best network volume ({}), {}.",
            l.label,
            fmt_headline(main, lv),
            fmt_headline(main, nv),
            n.label,
            fmt_ratio(lv / nv)
        )),
        _ => None,
    };
    JobPick {
        id: JobKind::Install.id(),
        job: JobKind::Install.title(),
        decides: format!(
            "{} ({}), with {} beside it",
            if Figure::Column(main).family() == Family::Bandwidth {
                "bandwidth"
            } else {
                "throughput at depth"
            },
            col_phrase(main),
            col_phrase(second)
        ),
        none: runners.is_empty().then(|| {
            format!(
                "No runner in this data has a {} figure from a disk.",
                main.as_str()
            )
        }),
        runners,
        evidence,
        config,
    }
}

fn compile(ds: &Dataset, steps: &[StepAnalysis]) -> JobPick {
    let kind_steps = steps_of(steps, JobKind::Compile);
    let evidence = step_evidence(&kind_steps);
    // A compile step found to follow a disk figure makes that figure decide.
    let disk = kind_steps.iter().find_map(|(_, s)| match s.follows {
        Follows::Latency | Follows::Throughput | Follows::Bandwidth => match s.deciding {
            Some(Figure::Column(c)) => Some((s.name.clone(), c)),
            _ => None,
        },
        _ => None,
    });
    if let Some((name, c)) = disk {
        let runners = best_disks(ds, c)
            .into_iter()
            .take(TOP)
            .map(|r| pick_of(r, fig_of(r, c).unwrap_or_default(), None))
            .collect();
        return JobPick {
            id: JobKind::Compile.id(),
            job: JobKind::Compile.title(),
            decides: format!("the disk, for {name}: {}", col_phrase(c)),
            runners,
            evidence,
            config: None,
            none: None,
        };
    }
    // The CPU: the benchmark most runners have, all threads (a compile runs in parallel).
    let mut count: std::collections::BTreeMap<Option<&str>, usize> = Default::default();
    for r in &ds.runners {
        for c in r.cpu.iter().filter(|c| c.multi.is_some()) {
            *count.entry(c.benchmark.as_deref()).or_default() += 1;
        }
    }
    let bench = count
        .into_iter()
        .max_by(|a, b| a.1.cmp(&b.1).then_with(|| b.0.cmp(&a.0)))
        .map(|(b, _)| b.map(String::from));
    let mut ranked: Vec<(&RunnerOverview, f64, Option<f64>, String)> = match &bench {
        Some(b) => ds
            .runners
            .iter()
            .filter_map(|r| {
                let c = r.cpu.iter().find(|c| &c.benchmark == b)?;
                Some((r, c.multi?, c.single, c.benchmark_name().to_string()))
            })
            .collect(),
        None => Vec::new(),
    };
    ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.label.cmp(&b.0.label)));
    let bench_name = ranked.first().map(|r| r.3.clone()).unwrap_or_default();
    let runners: Vec<Pick> = ranked
        .iter()
        .take(TOP)
        .map(|(r, multi, single, _)| {
            pick_of(
                r,
                format!("{} on all {} threads", fmt_sig(*multi), r.vcpus),
                single.map(|s| format!("{} on one", fmt_sig(s))),
            )
        })
        .collect();
    JobPick {
        id: JobKind::Compile.id(),
        job: JobKind::Compile.title(),
        decides: if bench_name.is_empty() {
            "the CPU".into()
        } else {
            format!("the CPU, all threads ({bench_name})")
        },
        none: runners
            .is_empty()
            .then(|| "No runner in this data has CPU figures.".into()),
        runners,
        evidence,
        config: None,
    }
}

/// The section's three answers, in [`JobKind::ALL`] order.
pub(crate) fn picks(ds: &Dataset, steps: &[StepAnalysis]) -> Vec<JobPick> {
    JobKind::ALL
        .iter()
        .map(|k| match k {
            JobKind::Database => database(ds, steps),
            JobKind::Install => install(ds, steps),
            JobKind::Compile => compile(ds, steps),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use record::load::LoadedRecord;

    fn fixture_dataset() -> Dataset {
        let recs = crate::analysis::correlation::tests::node_records()
            .into_iter()
            .map(|record| LoadedRecord {
                path: "x".into(),
                record,
            })
            .collect();
        Dataset::build(recs, None)
    }

    #[test]
    fn steps_are_sorted_into_job_kinds() {
        assert_eq!(
            JobKind::of_step("sqlite", "sqlite"),
            Some(JobKind::Database)
        );
        assert_eq!(
            JobKind::of_step("docker-build", "docker build"),
            Some(JobKind::Install)
        );
        assert_eq!(
            JobKind::of_step("node/bun-install", "bun install"),
            Some(JobKind::Install)
        );
        assert_eq!(
            JobKind::of_step("cargo-build", "cargo build"),
            Some(JobKind::Compile)
        );
        assert_eq!(
            JobKind::of_step("node/typecheck", "typecheck"),
            Some(JobKind::Compile)
        );
        assert_eq!(JobKind::of_step("node/clone", "clone"), None);
    }

    /// From the shipped fixtures: every job names runners with figures from the data and links
    /// its evidence; the figures are the runners' own.
    #[test]
    fn the_fixture_data_names_a_runner_for_each_job() {
        let ds = fixture_dataset();
        let steps = crate::analysis::correlation::analyse(&ds);
        let p = picks(&ds, &steps);
        assert_eq!(p.len(), 3);
        for j in &p {
            assert!(!j.runners.is_empty(), "{j:?}");
            assert!(!j.evidence.is_empty(), "{j:?}");
            assert!(j.none.is_none());
        }
        // Database: the best disk by synced writes, never tmpfs, the figure its own.
        let db = &p[0];
        let best = best_disks(&ds, ColumnId::SyncWrite)[0];
        assert_eq!(db.runners[0].label, best.label);
        assert_ne!(db.runners[0].class, "tmpfs");
        assert!(
            db.runners[0]
                .figure
                .contains(&fmt_sig(best.column(ColumnId::SyncWrite).unwrap().median))
        );
        assert!(db.config.as_ref().unwrap().contains("tmpfs"), "{db:?}");
        // Install: the node job's bun install is the evidence, and the figure it follows ranks.
        let inst = &p[1];
        assert!(
            inst.evidence
                .iter()
                .any(|e| e.text.starts_with("bun install")),
            "{inst:?}"
        );
        // Compile: typecheck follows the CPU; the pair says not the disk.
        let comp = &p[2];
        assert!(comp.decides.starts_with("the CPU"), "{comp:?}");
        assert!(
            comp.evidence
                .iter()
                .any(|e| e.text.contains("typecheck") && e.text.contains("not the disk")),
            "{comp:?}"
        );
        let top = ds
            .runners
            .iter()
            .filter_map(|r| Some((r, r.cpu.first()?.multi?)))
            .max_by(|a, b| a.1.total_cmp(&b.1))
            .unwrap();
        assert_eq!(comp.runners[0].label, top.0.label);
    }
}

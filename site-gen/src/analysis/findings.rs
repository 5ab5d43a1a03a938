//! The findings at the top of the index: short sentences, each computed from the data with
//! its figures. A finding whose data is missing is left out, never guessed.

use std::collections::BTreeMap;

use record::{ColumnId, Headline, StorageClass};

use crate::analysis::stats::{fmt_ns, fmt_ratio, fmt_sig};
use crate::data::model::{Dataset, RunnerOverview, by_class};
use crate::pages::html::esc;

/// One sentence, as HTML (links relative to the site root) and as plain text.
#[derive(Clone, Debug, serde::Serialize)]
pub(crate) struct Finding {
    /// "extremes", "class-range", "same-cpu", "provisioned", "tmpfs".
    pub kind: &'static str,
    pub html: String,
    pub text: String,
}

/// A sentence built twice at once: HTML for the page and plain text for tests and logs.
#[derive(Default)]
struct Sentence {
    html: String,
    text: String,
}

impl Sentence {
    fn t(&mut self, s: &str) -> &mut Self {
        self.html.push_str(&esc(s));
        self.text.push_str(s);
        self
    }
    fn runner(&mut self, r: &RunnerOverview) -> &mut Self {
        self.html.push_str(&format!(
            "<a href=\"runners/{}.html\">{}</a>",
            r.slug,
            esc(&r.label)
        ));
        self.text.push_str(&r.label);
        if r.imported {
            self.html.push_str(" <span class=\"imp\">imported</span>");
            self.text.push_str(" [imported]");
        }
        self
    }
    fn fig(&mut self, s: &str) -> &mut Self {
        self.html.push_str(&format!("<b>{}</b>", esc(s)));
        self.text.push_str(s);
        self
    }
    fn done(&mut self, kind: &'static str) -> Finding {
        Finding {
            kind,
            html: std::mem::take(&mut self.html),
            text: std::mem::take(&mut self.text),
        }
    }
}

/// "12,120 IOPS" or "2,035 MiB/s".
pub(crate) fn fmt_headline(c: ColumnId, v: f64) -> String {
    match c.headline() {
        Headline::MibPerSecond => format!("{} MiB/s", fmt_sig(v)),
        Headline::Iops => format!("{} IOPS", fmt_sig(v)),
    }
}

fn lower_title(c: ColumnId) -> String {
    let t = c.title();
    if c == ColumnId::Qd1Read {
        t.into()
    } else {
        t.to_lowercase()
    }
}

/// A runner's p99 for `c` when it means what this project's p99 means. Published sync-write
/// p99s leave the fdatasync out (see the methodology page), so they are not set beside ours.
pub(crate) fn comparable_p99(r: &RunnerOverview, c: ColumnId) -> Option<f64> {
    if r.imported && c == ColumnId::SyncWrite {
        return None;
    }
    r.column(c)?.p99_ns
}

pub(crate) fn findings(ds: &Dataset) -> Vec<Finding> {
    let mut out = Vec::new();
    extremes(ds, &mut out);
    tmpfs_vs_disk(ds, &mut out);
    same_cpu(ds, &mut out);
    provisioned(ds, &mut out);
    class_ranges(ds, &mut out);
    cache_served(ds, &mut out);
    out
}

/// Figures above what the runner's storage can physically deliver: named once, with the
/// reason, and left out of the extremes and class ranges above.
fn cache_served(ds: &Dataset, out: &mut Vec<Finding>) {
    for r in &ds.runners {
        for c in ColumnId::ALL {
            let Some(f) = r.column(c) else { continue };
            let Some(why) = &f.cache_suspect else {
                continue;
            };
            let mut s = Sentence::default();
            s.t("Served by a cache, not a disk: ")
                .runner(r)
                .t(&format!(" {} ", lower_title(c)))
                .fig(&fmt_headline(c, f.median))
                .t(&format!(
                    " ({}, {why}); left out of the disk comparisons.",
                    r.class.title()
                ));
            out.push(s.done("cache-suspect"));
        }
    }
}

fn archs(ds: &Dataset) -> Vec<String> {
    let mut a: Vec<String> = ds.runners.iter().map(|r| r.arch.clone()).collect();
    a.sort();
    a.dedup();
    a
}

/// Per architecture and column: the best and worst disk (tmpfs is memory, shown on its own).
fn extremes(ds: &Dataset, out: &mut Vec<Finding>) {
    for arch in archs(ds) {
        for c in ColumnId::ALL {
            let mut disks: Vec<&RunnerOverview> = ds
                .runners
                .iter()
                .filter(|r| {
                    r.arch == arch && r.class != StorageClass::Tmpfs && r.disk_column(c).is_some()
                })
                .collect();
            if disks.len() < 2 {
                continue;
            }
            disks.sort_by(|a, b| {
                b.disk_median(c)
                    .total_cmp(&a.disk_median(c))
                    .then_with(|| a.label.cmp(&b.label))
            });
            let (best, worst) = (disks[0], disks[disks.len() - 1]);
            let (Some(fb), Some(fw)) = (best.disk_column(c), worst.disk_column(c)) else {
                continue;
            };
            if fw.median <= 0.0 {
                continue;
            }
            let mut s = Sentence::default();
            s.t(&format!("{}, {arch}: ", c.title()))
                .runner(best)
                .t(" ")
                .fig(&fmt_headline(c, fb.median))
                .t(" against ")
                .runner(worst)
                .t(" ")
                .fig(&fmt_headline(c, fw.median))
                .t(", ")
                .fig(&format!("{} apart", fmt_ratio(fb.median / fw.median)));
            if let (Some(pb), Some(pw)) = (comparable_p99(best, c), comparable_p99(worst, c)) {
                s.t(&format!(" (p99 {} vs {})", fmt_ns(pb), fmt_ns(pw)));
            }
            s.t(".");
            out.push(s.done("extremes"));
        }
    }
}

fn best_in<'a>(
    runners: impl Iterator<Item = &'a RunnerOverview>,
    c: ColumnId,
) -> Option<&'a RunnerOverview> {
    runners
        .filter(|r| r.column(c).is_some())
        .max_by(|a, b| a.median(c).total_cmp(&b.median(c)))
}

/// Per architecture: the best tmpfs runner against the best disk, on the latency columns.
fn tmpfs_vs_disk(ds: &Dataset, out: &mut Vec<Finding>) {
    for arch in archs(ds) {
        let mut s = Sentence::default();
        let mut parts = 0;
        for c in [ColumnId::Qd1Read, ColumnId::SyncWrite] {
            let tmpfs = best_in(
                ds.runners
                    .iter()
                    .filter(|r| r.arch == arch && r.class == StorageClass::Tmpfs),
                c,
            );
            let disk = best_in(
                ds.runners.iter().filter(|r| {
                    r.arch == arch && r.class != StorageClass::Tmpfs && r.disk_column(c).is_some()
                }),
                c,
            );
            let (Some(t), Some(d)) = (tmpfs, disk) else {
                continue;
            };
            let (Some(ft), Some(fd)) = (t.column(c), d.column(c)) else {
                continue;
            };
            if fd.median <= 0.0 {
                continue;
            }
            if parts > 0 {
                s.t("; ");
            } else {
                s.t(&format!("tmpfs against the best disk, {arch}: "));
            }
            s.t(&format!("{} ", lower_title(c)))
                .fig(&fmt_headline(c, ft.median))
                .t(" on ")
                .runner(t)
                .t(" vs ")
                .fig(&fmt_headline(c, fd.median))
                .t(" on ")
                .runner(d);
            if let (Some(pt), Some(pd)) = (comparable_p99(t, c), comparable_p99(d, c)) {
                s.t(&format!(" (p99 {} vs {})", fmt_ns(pt), fmt_ns(pd)));
            }
            s.t(", ").fig(&fmt_ratio(ft.median / fd.median));
            parts += 1;
        }
        if parts > 0 {
            s.t(".");
            out.push(s.done("tmpfs"));
        }
    }
}

/// Same CPU model on different storage classes: the latency column that differs most.
fn same_cpu(ds: &Dataset, out: &mut Vec<Finding>) {
    let mut by_cpu: BTreeMap<&str, Vec<&RunnerOverview>> = BTreeMap::new();
    for r in &ds.runners {
        if !r.cpu_model.trim().is_empty() {
            by_cpu.entry(r.cpu_model.as_str()).or_default().push(r);
        }
    }
    for (cpu, rs) in by_cpu {
        let mut classes: Vec<StorageClass> = rs.iter().map(|r| r.class).collect();
        classes.sort();
        classes.dedup();
        if classes.len() < 2 {
            continue;
        }
        // For each latency column: the best and worst runner of this CPU, on different classes,
        // from figures a disk can produce (a cache-served one is never an end of "N x apart").
        let mut best_pick: Option<(f64, ColumnId, &RunnerOverview, &RunnerOverview)> = None;
        for c in [ColumnId::Qd1Read, ColumnId::SyncWrite] {
            let with: Vec<&&RunnerOverview> =
                rs.iter().filter(|r| r.disk_column(c).is_some()).collect();
            let hi = with
                .iter()
                .max_by(|a, b| a.disk_median(c).total_cmp(&b.disk_median(c)));
            let lo = with
                .iter()
                .min_by(|a, b| a.disk_median(c).total_cmp(&b.disk_median(c)));
            if let (Some(hi), Some(lo)) = (hi, lo) {
                if hi.class == lo.class {
                    continue;
                }
                let ratio = hi.disk_median(c) / lo.disk_median(c);
                if best_pick.as_ref().is_none_or(|b| ratio > b.0) {
                    best_pick = Some((ratio, c, hi, lo));
                }
            }
        }
        let Some((ratio, c, hi, lo)) = best_pick else {
            continue;
        };
        let mut s = Sentence::default();
        s.t(&format!(
            "Same CPU ({cpu}), different storage: {} goes from ",
            lower_title(c)
        ))
        .fig(&fmt_headline(c, lo.median(c)))
        .t(" on ")
        .runner(lo)
        .t(&format!(" ({}) to ", lo.class.as_str()))
        .fig(&fmt_headline(c, hi.median(c)))
        .t(" on ")
        .runner(hi)
        .t(&format!(" ({}): ", hi.class.as_str()))
        .fig(&format!("{} apart", fmt_ratio(ratio)))
        .t(".");
        out.push(s.done("same-cpu"));
    }
}

fn is_default_variant(v: &str) -> bool {
    v.to_lowercase().contains("default")
}

/// Runners of the same instance type and class whose variants say "default" and something else.
fn provisioned(ds: &Dataset, out: &mut Vec<Finding>) {
    let mut groups: BTreeMap<(&str, StorageClass), Vec<&RunnerOverview>> = BTreeMap::new();
    for r in &ds.runners {
        if let (Some(it), Some(_)) = (&r.instance_type, &r.variant) {
            groups.entry((it.as_str(), r.class)).or_default().push(r);
        }
    }
    for ((it, class), rs) in groups {
        let Some(base) = rs
            .iter()
            .find(|r| r.variant.as_deref().is_some_and(is_default_variant))
        else {
            continue;
        };
        for other in rs
            .iter()
            .filter(|r| !r.variant.as_deref().is_some_and(is_default_variant))
        {
            let mut s = Sentence::default();
            s.t(&format!(
                "Provisioned vs default on {it} ({}): ",
                class.title()
            ))
            .runner(other)
            .t(&format!(
                " ({}) against ",
                other.variant.as_deref().unwrap_or("")
            ))
            .runner(base)
            .t(&format!(" ({}): ", base.variant.as_deref().unwrap_or("")));
            let mut raised = Vec::new();
            let mut same = Vec::new();
            let mut n = 0;
            for c in ColumnId::ALL {
                let (Some(a), Some(b)) = (other.column(c), base.column(c)) else {
                    continue;
                };
                if b.median <= 0.0 {
                    continue;
                }
                let r = a.median / b.median;
                if n > 0 {
                    s.t(", ");
                }
                s.t(&format!("{} ", lower_title(c))).fig(&fmt_ratio(r));
                n += 1;
                if r >= 1.5 {
                    raised.push(lower_title(c));
                } else if (0.8..=1.25).contains(&r) {
                    same.push(lower_title(c));
                }
            }
            if n == 0 {
                continue;
            }
            s.t(".");
            if !raised.is_empty() {
                s.t(&format!(" Provisioning raised {}", raised.join(", ")));
                if !same.is_empty() {
                    s.t(&format!("; {} stayed within 25%", same.join(", ")));
                }
                s.t(".");
            }
            out.push(s.done("provisioned"));
        }
    }
}

/// Each storage class's range across its runners.
fn class_ranges(ds: &Dataset, out: &mut Vec<Finding>) {
    for (class, rs) in by_class(&ds.runners) {
        if rs.len() < 2 {
            continue;
        }
        let mut s = Sentence::default();
        s.t(&format!("{}, {} runners: ", class.title(), rs.len()));
        let mut n = 0;
        for c in ColumnId::ALL {
            let v: Vec<f64> = rs
                .iter()
                .filter_map(|r| r.disk_column(c))
                .map(|f| f.median)
                .collect();
            if v.is_empty() {
                continue;
            }
            let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            if n > 0 {
                s.t("; ");
            }
            let unit = c.headline().unit();
            // One runner with the figure (or all alike): one value, not "1,294–1,294".
            let figure = if v.len() == 1 {
                format!("{} {unit} (one runner)", fmt_sig(lo))
            } else if fmt_sig(lo) == fmt_sig(hi) {
                format!("{} {unit}", fmt_sig(lo))
            } else {
                format!("{}–{} {unit}", fmt_sig(lo), fmt_sig(hi))
            };
            s.t(&format!("{} ", lower_title(c))).fig(&figure);
            n += 1;
        }
        if n > 0 {
            s.t(".");
            out.push(s.done("class-range"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::testdata::Fleet;
    use record::load::LoadedRecord;

    fn dataset(keep: impl Fn(&record::Record) -> bool) -> Dataset {
        let recs = Fleet::small()
            .records()
            .into_iter()
            .filter(|r| keep(r))
            .map(|record| LoadedRecord {
                path: "x".into(),
                record,
            })
            .collect();
        Dataset::build(recs, None)
    }

    #[test]
    fn findings_with_missing_data_are_left_out() {
        let all = findings(&dataset(|_| true));
        for kind in [
            "extremes",
            "tmpfs",
            "same-cpu",
            "provisioned",
            "class-range",
        ] {
            assert!(all.iter().any(|f| f.kind == kind), "{kind} missing");
        }
        // No tmpfs runner: no tmpfs finding; no default variant: no provisioned finding.
        let no_tmpfs = findings(&dataset(|r| {
            r.storage.class != StorageClass::Tmpfs
                && r.runner.variant.as_deref() != Some("gp3 default")
        }));
        assert!(
            !no_tmpfs
                .iter()
                .any(|f| f.kind == "tmpfs" || f.kind == "provisioned")
        );
        // One runner per architecture: no extremes, no class ranges.
        let one = findings(&dataset(|r| r.runner.label == "ubuntu-24.04"));
        assert!(one.is_empty(), "{one:?}");
        // The imported runner's sync-write p99 (write only) is never set beside a measured one.
        let imported_p99 = all
            .iter()
            .filter(|f| {
                f.text.contains("published-m8a-gp3 [imported]")
                    && f.text.starts_with("Synced write")
            })
            .count();
        assert_eq!(imported_p99, 0);
    }

    #[test]
    fn extremes_name_best_and_worst_with_their_ratio() {
        let ds = dataset(|r| r.runner.arch == "x64" && r.storage.class != StorageClass::Tmpfs);
        let all = findings(&ds);
        let f = all
            .iter()
            .find(|f| f.text.starts_with("QD1 read, x64:"))
            .unwrap();
        let ranked = ds.ranked(ColumnId::Qd1Read);
        let (best, worst) = (ranked[0], ranked[ranked.len() - 1]);
        assert!(f.text.contains(&best.label) && f.text.contains(&worst.label));
        let ratio = best.column(ColumnId::Qd1Read).unwrap().median
            / worst.column(ColumnId::Qd1Read).unwrap().median;
        assert!(
            f.text.contains(&format!("{} apart", fmt_ratio(ratio))),
            "{}",
            f.text
        );
    }

    /// A class whose figure only one runner has prints that one value, not "x–x".
    #[test]
    fn a_class_range_with_one_runner_prints_one_value() {
        let all = dataset(|_| true);
        let (class, rs) = by_class(&all.runners)
            .into_iter()
            .find(|(_, rs)| rs.len() >= 2)
            .expect("a class with two runners");
        let keeper = rs[0].label.clone();
        let recs = Fleet::small()
            .records()
            .into_iter()
            .filter(|r| r.storage.class == class)
            .map(|mut record| {
                if record.runner.label != keeper {
                    record.tests.retain(|t| t.id != "seq-read");
                }
                LoadedRecord {
                    path: "x".into(),
                    record,
                }
            })
            .collect();
        let ds = Dataset::build(recs, None);
        let f = findings(&ds)
            .into_iter()
            .find(|f| f.kind == "class-range")
            .expect("a class range");
        let one = ds
            .runners
            .iter()
            .find(|r| r.label == keeper)
            .and_then(|r| r.column(ColumnId::SeqRead))
            .unwrap()
            .median;
        assert!(
            f.text
                .contains(&format!("{} MiB/s (one runner)", fmt_sig(one))),
            "{}",
            f.text
        );
        assert!(
            !f.text.contains(&format!("{0}–{0}", fmt_sig(one))),
            "{}",
            f.text
        );
    }
}

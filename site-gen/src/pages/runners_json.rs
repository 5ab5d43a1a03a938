//! `data/runners.json`: every runner's column figures as data, for scripts and other sites
//! (CONTRACT section 5). A figure a cache served carries the reason in `cache_suspect`.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::Result;
use record::ColumnId;
use serde::Serialize;

use crate::data::model::Dataset;

pub(crate) const SCHEMA: &str = "diskbench.site-runners/1";

/// The whole file.
#[derive(Serialize)]
pub struct RunnersFile<'a> {
    pub schema: &'static str,
    pub runners: Vec<RunnerEntry<'a>>,
}

/// One runner: who it is and its figure per column (columns it has no figure for are left out).
#[derive(Serialize)]
pub struct RunnerEntry<'a> {
    pub label: &'a str,
    pub slug: &'a str,
    pub class: &'static str,
    pub arch: &'a str,
    pub imported: bool,
    /// `run --like LABEL` runs: the runner they emulate (this disk under caps, not a disk's
    /// own figures); absent for a real runner.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub emulates: Option<&'a str>,
    pub columns: BTreeMap<&'static str, ColumnEntry<'a>>,
}

/// One column's figure on one runner.
#[derive(Serialize)]
pub struct ColumnEntry<'a> {
    pub median: f64,
    pub p99_ns: Option<f64>,
    pub runs: usize,
    pub cache_suspect: Option<&'a str>,
}

/// The file's contents.
pub fn runners_json(ds: &Dataset) -> RunnersFile<'_> {
    let runners = ds
        .all_runners()
        .map(|r| RunnerEntry {
            label: &r.label,
            slug: &r.slug,
            class: r.class.as_str(),
            arch: &r.arch,
            imported: r.imported,
            emulates: r.emulates.as_deref(),
            columns: ColumnId::ALL
                .into_iter()
                .filter_map(|c| {
                    let f = r.column(c)?;
                    Some((
                        c.as_str(),
                        ColumnEntry {
                            median: f.median,
                            p99_ns: f.p99_ns,
                            runs: f.runs,
                            cache_suspect: f.cache_suspect.as_deref(),
                        },
                    ))
                })
                .collect(),
        })
        .collect();
    RunnersFile {
        schema: SCHEMA,
        runners,
    }
}

/// Write `data/runners.json` into the site folder `out`.
pub(crate) fn write(ds: &Dataset, out: &Path) -> Result<()> {
    let mut bytes = serde_json::to_vec_pretty(&runners_json(ds))?;
    bytes.push(b'\n');
    crate::pages::render::write_file(out, "data/runners.json", &bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use record::load::LoadedRecord;

    /// Published rows of a VM reading 35 GB/s (no disk link carries that), an EBS
    /// volume at 400 MiB/s and tmpfs at 19 GB/s (memory, never marked). Only the VM's figure is
    /// marked, in the model, the findings and data/runners.json, and the fastest disk named by
    /// the findings is not the VM.
    #[test]
    fn a_figure_no_disk_can_produce_is_marked_and_kept_out_of_the_disk_findings() {
        const MIB: f64 = 1024.0 * 1024.0;
        let header = "date,label,arch,storage_class,seq-read_mib_s,seq-write_mib_s,qd1-read_iops";
        let rows = [
            format!("2026-10-08,vm-35gb,arm64,vm,{:.1},900,9000", 35e9 / MIB),
            "2026-10-08,ebs-400,arm64,ebs,400,350,3000".to_string(),
            "2026-10-08,slow-ebs,arm64,ebs,120,110,1500".to_string(),
            format!("2026-10-08,ram,arm64,tmpfs,{:.1},9000,300000", 19e9 / MIB),
        ];
        let csv = format!("{header}\n{}\n", rows.join("\n"));
        let records = crate::data::import::csv_records(&csv, "generated.csv").unwrap();
        let ds = Dataset::build(
            records
                .into_iter()
                .map(|record| LoadedRecord {
                    path: "generated.csv".into(),
                    record,
                })
                .collect(),
            None,
        );
        let marked = |label: &str, c: ColumnId| {
            ds.runners
                .iter()
                .find(|r| r.label == label)
                .unwrap()
                .column(c)
                .unwrap()
                .cache_suspect
                .clone()
        };
        let why = marked("vm-35gb", ColumnId::SeqRead).expect("the VM's 35 GB/s is marked");
        assert!(
            why.contains("PCIe 5.0 x4") && why.contains("cache"),
            "{why}"
        );
        assert_eq!(marked("vm-35gb", ColumnId::SeqWrite), None);
        assert_eq!(marked("ebs-400", ColumnId::SeqRead), None);
        assert_eq!(marked("slow-ebs", ColumnId::SeqRead), None);
        // tmpfs is memory by class: 19 GB/s and 300k one-at-a-time reads are not marked.
        assert_eq!(marked("ram", ColumnId::SeqRead), None);
        assert_eq!(marked("ram", ColumnId::Qd1Read), None);

        let findings = crate::analysis::findings::findings(&ds);
        let seq = findings
            .iter()
            .find(|f| f.kind == "extremes" && f.text.starts_with("Sequential read, arm64:"))
            .expect("an extremes finding for sequential reads");
        assert!(
            seq.text.contains("ebs-400") && seq.text.contains("slow-ebs"),
            "{}",
            seq.text
        );
        assert!(!seq.text.contains("vm-35gb"), "{}", seq.text);
        // The sequential writes of the same VM are a disk's and stay in.
        let write = findings
            .iter()
            .find(|f| f.kind == "extremes" && f.text.starts_with("Sequential write, arm64:"))
            .unwrap();
        assert!(
            write.text.starts_with("Sequential write, arm64: vm-35gb"),
            "{}",
            write.text
        );
        let cache: Vec<_> = findings
            .iter()
            .filter(|f| f.kind == "cache-suspect")
            .collect();
        assert_eq!(cache.len(), 1, "{cache:?}");
        assert!(cache[0].text.contains("vm-35gb"));

        let json = serde_json::to_value(runners_json(&ds)).unwrap();
        assert_eq!(json["schema"], SCHEMA);
        let runner = |label: &str| {
            json["runners"]
                .as_array()
                .unwrap()
                .iter()
                .find(|r| r["label"] == label)
                .unwrap()
                .clone()
        };
        assert!(runner("vm-35gb")["columns"]["seq-read"]["cache_suspect"].is_string());
        assert!(runner("ebs-400")["columns"]["seq-read"]["cache_suspect"].is_null());
        assert!(runner("ram")["columns"]["seq-read"]["cache_suspect"].is_null());
        assert_eq!(runner("ram")["class"], "tmpfs");
    }
}

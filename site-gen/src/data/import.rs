//! `cargo diskbench import`: fio JSON output and CSVs of published figures become records.
//!
//! Every file is read and checked before anything is written, so a bad file leaves the results
//! folder as it was. Record ids are derived from the content alone (a CSV row, fio's JSON),
//! never the path: importing the same figures again, by another path or from a copy, finds the
//! records already there (by id) instead of duplicating them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::Result;
use record::*;
use serde_json::Value;

use crate::data::csv_table::{CsvTable, check_csv_date, stable_id};

/// Options beyond the files and the results folder.
#[derive(Clone, Debug, Default)]
pub struct ImportOptions {
    /// Runner label for fio JSON files (which do not name the machine); default: the file stem.
    pub label: Option<String>,
}

/// What an import did, as it goes: the caller says it (a library does not print).
#[derive(Clone, Copy, Debug)]
pub enum Imported<'a> {
    /// A record file was written.
    Written(&'a Path),
    /// `records` of `file`'s records were already in the results folder with the same content
    /// and were not added again. Never silent: a user who imports a corrected file must see
    /// that nothing changed.
    AlreadyThere { file: &'a Path, records: usize },
}

pub fn import_files_with(
    files: &[PathBuf],
    results: &Path,
    opts: &ImportOptions,
) -> Result<Vec<PathBuf>> {
    let mut written = Vec::new();
    import_files_each(files, results, opts, &mut |e| {
        if let Imported::Written(p) = e {
            written.push(p.to_path_buf());
        }
    })?;
    Ok(written)
}

/// Import each file into `results`, telling `on_event` each record file written and each
/// file whose records were there already; returns how many were written.
///
/// Memory does not grow with the rows: every file is checked first (each record built,
/// checked and dropped; one bad row and nothing is written), then read again and each record
/// written as it is built. What is kept per row is its id (to find figures already imported).
pub fn import_files_each(
    files: &[PathBuf],
    results: &Path,
    opts: &ImportOptions,
    on_event: &mut dyn FnMut(Imported<'_>),
) -> Result<usize> {
    if files.is_empty() {
        return Err(record::error::usage(
            "import: no FILE given; pass fio JSON output or a CSV of published figures",
        ));
    }
    // Check everything first: one bad file and nothing is written.
    for f in files {
        record::cancel::check()?;
        each_record(f, opts, &mut |_| Ok(()))?;
    }
    // Ids come from the content alone, so the same figures imported again (by another path, or
    // a copy of the file) are found by id, not by file name.
    let mut present = existing_ids(results)?;
    let mut written = 0;
    for f in files {
        let mut again = 0;
        each_record(f, opts, &mut |rec| {
            record::cancel::check()?;
            if !present.insert(rec.id.clone()) {
                again += 1; // already imported
                return Ok(());
            }
            on_event(Imported::Written(&record::results::write_record(
                results, &rec,
            )?));
            written += 1;
            Ok(())
        })?;
        if again > 0 {
            on_event(Imported::AlreadyThere {
                file: f,
                records: again,
            });
        }
    }
    Ok(written)
}

/// The ids of the records already in `results` (none if the folder does not exist yet).
fn existing_ids(results: &Path) -> Result<std::collections::HashSet<String>> {
    let mut ids = std::collections::HashSet::new();
    if !results.exists() {
        return Ok(ids);
    }
    if !results.is_dir() {
        return Err(record::error::usage(format!(
            "--results {}: not a folder; give the results folder",
            results.display()
        )));
    }
    #[derive(serde::Deserialize)]
    struct IdOnly {
        id: String,
        #[serde(default)]
        source: String,
    }
    for path in record::load::json_files(results)? {
        record::cancel::check()?;
        if let Ok(bytes) = record::input::read(&path)
            && let Ok(r) = serde_json::from_slice::<IdOnly>(&bytes)
        {
            // Imported CSV rows are known by their figures (figures_id), also those imported
            // when the id came from the raw line: the whole record is read for them alone.
            if r.source == "imported:csv"
                && let Ok(full) = serde_json::from_slice::<Record>(&bytes)
            {
                ids.insert(figures_id(&full));
            }
            ids.insert(r.id);
        }
    }
    Ok(ids)
}

/// Read one file and hand each record it holds to `f`, by content: JSON for fio, otherwise
/// CSV (a CSV's rows one at a time, none kept).
fn each_record(
    path: &Path,
    opts: &ImportOptions,
    f: &mut dyn FnMut(Record) -> Result<()>,
) -> Result<()> {
    let text = record::input::read_text(path)
        .map_err(|e| record::error::usage(format!("{}: {e}", path.display())))?;
    let shown = path.display().to_string();
    // The record names the file, not the path typed at import (`../x/fio.json` means nothing
    // on the page or on another machine); messages here keep the typed path.
    let source_name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| shown.clone());
    // A reader stopped by Ctrl-C is an interruption (exit 130), anything else bad input (2).
    let refused = |e: String| {
        if record::cancel::requested() {
            record::error::interrupted()
        } else {
            record::error::usage(format!("{shown}: {e}"))
        }
    };
    if looks_like_json(&text) {
        let label = opts.label.clone().unwrap_or_else(|| {
            path.file_stem()
                .map(|s| s.to_string_lossy().to_string())
                .unwrap_or_else(|| "fio".into())
        });
        f(fio_record(&text, &source_name, &label).map_err(refused)?)
    } else if crate::data::published_timings::is_build_timings(&text) {
        for r in crate::data::published_timings::build_timing_records(&text, &source_name)
            .map_err(refused)?
        {
            f(r)?;
        }
        Ok(())
    } else {
        // An error of `f` (a write that failed) is kept as it is; one of the rows is the
        // file's.
        let mut failed = None;
        let read = csv_each(&text, &source_name, &mut |r| {
            f(r).map_err(|e| {
                failed = Some(e);
                String::new()
            })
        });
        match (read, failed) {
            (_, Some(e)) => Err(e),
            (Err(e), None) => Err(refused(e)),
            (Ok(()), None) => Ok(()),
        }
    }
}

fn looks_like_json(text: &str) -> bool {
    text.lines().any(|l| l.trim_start().starts_with('{'))
}

// ---------------------------------------------------------------- CSV of published figures

fn csv_class(s: &str) -> StorageClass {
    match s.trim().to_ascii_lowercase().as_str() {
        "nvme" | "local-nvme" | "instance-store" => StorageClass::LocalNvme,
        "network" | "network-disk" => StorageClass::NetworkDisk,
        "vm" | "vm-disk" => StorageClass::VmDisk,
        other => StorageClass::parse(other).unwrap_or(StorageClass::Unknown),
    }
}

/// Records from a CSV of published figures (the format is documented on the importing page).
pub fn csv_records(text: &str, source_file: &str) -> std::result::Result<Vec<Record>, String> {
    let mut records = Vec::new();
    csv_each(text, source_file, &mut |r| {
        records.push(r);
        Ok(())
    })?;
    Ok(records)
}

/// Each row of a CSV of published figures as a record, handed to `f` as it is built (none
/// kept here); Err: the first bad row, or `f`'s error.
pub fn csv_each(
    text: &str,
    source_file: &str,
    f: &mut dyn FnMut(Record) -> std::result::Result<(), String>,
) -> std::result::Result<(), String> {
    let table = CsvTable::parse(text)?;
    let header = &table.header;
    for required in ["date", "label"] {
        if !header.iter().any(|h| h == required) {
            return Err(format!(
                "the CSV header has no {required:?} column (the importing page of the report site gives the format)"
            ));
        }
    }
    let has_figure = ColumnId::ALL.iter().any(|c| {
        header
            .iter()
            .any(|h| h == &format!("{}_mib_s", c.as_str()) || h == &format!("{}_iops", c.as_str()))
    });
    if !has_figure {
        return Err("the CSV header names no figure column such as seq-read_mib_s or qd1-read_iops (the importing page of the report site lists them)".into());
    }
    let mut rows = 0usize;
    for row in table.rows() {
        // "interrupted" here: each_record turns it into exit 130.
        let (lineno, _, row) = row?;
        let get = |k: &str| row.get(k).map(|v| v.as_str()).filter(|v| !v.is_empty());
        let num = |k: &str| -> std::result::Result<Option<f64>, String> {
            match get(k) {
                None => Ok(None),
                Some(v) => v
                    .parse::<f64>()
                    .ok()
                    .filter(|x| x.is_finite() && *x >= 0.0)
                    .map(Some)
                    .ok_or_else(|| {
                        format!("line {lineno}, column {k}: {v:?} is not a non-negative number")
                    }),
            }
        };
        let date = get("date").ok_or_else(|| format!("line {lineno}: empty date"))?;
        check_csv_date(lineno, date)?;
        let label = get("label").ok_or_else(|| format!("line {lineno}: empty label"))?;
        let runner = Runner {
            label: label.into(),
            provider: get("provider").map(String::from),
            arch: get("arch").unwrap_or("unknown").into(),
            vcpus: num("vcpus")?.map(|v| v as u32).unwrap_or(0),
            memory_gib: num("ram_gib")?.unwrap_or(0.0),
            cpu_model: get("cpu_model").unwrap_or("").into(),
            kernel: get("kernel").unwrap_or("").into(),
            os: String::new(),
            instance_type: get("instance_type").map(String::from),
            variant: get("variant").map(String::from),
            evidence: vec![format!("published figures, {source_file} line {lineno}")],
            ..Runner::default()
        };
        let started_at = if date.len() == 10 {
            format!("{date}T00:00:00Z")
        } else {
            date.to_string()
        };
        // The id is set from the parsed figures once the record is built (figures_id).
        let mut rec = Record::imported(
            "imported:csv",
            source_file,
            String::new(),
            started_at,
            runner,
        );
        rec.storage.class = get("storage_class").map(csv_class).unwrap_or_default();
        rec.storage.fstype = get("workspace_fstype").unwrap_or("").into();
        rec.storage.class_evidence = vec![format!(
            "storage_class = {} (as published)",
            get("storage_class").unwrap_or("?")
        )];
        rec.storage.devices = get("device_models")
            .map(|m| {
                m.split(';')
                    .filter(|s| !s.trim().is_empty())
                    .map(|s| Device {
                        name: String::new(),
                        model: Some(s.trim().into()),
                        ..Device::default()
                    })
                    .collect()
            })
            .unwrap_or_default();
        for c in ColumnId::ALL {
            let id = c.as_str();
            let mib = num(&format!("{id}_mib_s"))?;
            let iops = num(&format!("{id}_iops"))?;
            let p99_us = num(&format!("{id}_p99_us"))?;
            let job = JobSettings::of_column(c, 0);
            let (iops, mib) = match (iops, mib) {
                (Some(i), Some(m)) => (i, m),
                (Some(i), None) => (i, i * job.bs as f64 / (1 << 20) as f64),
                (None, Some(m)) => (m * (1 << 20) as f64 / job.bs as f64, m),
                (None, None) => continue,
            };
            let stats = DirectionStats {
                ios: 0,
                bytes: 0,
                iops,
                mib_s: mib,
                lat_ns: p99_us.map(|p| Latency {
                    p99: Some((p * 1000.0).round() as u64),
                    ..Latency::default()
                }),
                hist: None,
                ..Default::default()
            };
            let (read, write) = if c.is_read() {
                (Some(stats), None)
            } else {
                (None, Some(stats))
            };
            rec.tests.push(TestResult {
                id: id.into(),
                job,
                engine: EngineUsed {
                    used: "published".into(),
                    fallback: None,
                    direct: true,
                    jobs_as: None,
                },
                elapsed_s: 0.0,
                read,
                write,
                cpu: Cpu::default(),
                notes: vec!["published figure, not measured by cargo-diskbench".into()],
                repeats: None,
                file_preparation: None,
                cache_suspect: None,
                window: None,
            });
        }
        if rec.tests.is_empty() {
            return Err(format!("line {lineno}: no figures in this row"));
        }
        rec.cpu_reference = published_cpu(&num, &get, rec.runner.vcpus, lineno)?;
        rec.notes
            .push(format!("imported from {source_file}, line {lineno}"));
        rec.id = figures_id(&rec);
        record::load::check_record(&rec).map_err(|e| format!("line {lineno}: {e}"))?;
        rows += 1;
        f(rec)?;
    }
    if rows == 0 {
        return Err("no data rows after the header".into());
    }
    Ok(())
}

/// The id of an imported CSV record: from its parsed figures and facts alone, not from the
/// text they were read from, so the same figures with the columns in another order, `100.0`
/// for `100` or other spacing are the same record, and a record imported before this id
/// existed (its id made from the raw line) is recognised by its content too. What says where
/// the figures came from (the id itself, the file name, the line in notes and evidence, the
/// tool's version) is left out.
pub(crate) fn figures_id(rec: &Record) -> String {
    let mut v = serde_json::to_value(rec).unwrap_or_default();
    if let Some(m) = v.as_object_mut() {
        for k in ["id", "source_file", "notes", "tool", "finished_at"] {
            m.remove(k);
        }
        if let Some(r) = m.get_mut("runner").and_then(|r| r.as_object_mut()) {
            r.remove("evidence");
        }
    }
    // serde_json's maps are ordered by key: one text for one content.
    stable_id(&["imported:csv figures", &v.to_string()])
}

/// A row's `cpu_single`, `cpu_multi` and `cpu_benchmark`: the published CPU figures, kept with
/// the benchmark's name so that only figures of the same benchmark are ever ranked together.
fn published_cpu<'a>(
    num: &dyn Fn(&str) -> std::result::Result<Option<f64>, String>,
    get: &dyn Fn(&str) -> Option<&'a str>,
    vcpus: u32,
    lineno: usize,
) -> std::result::Result<Option<CpuReference>, String> {
    let (single, multi) = (num("cpu_single")?, num("cpu_multi")?);
    if single.is_none() && multi.is_none() {
        return Ok(None);
    }
    let Some(benchmark) = get("cpu_benchmark") else {
        return Err(format!(
            "line {lineno}: cpu_single/cpu_multi without cpu_benchmark; name the benchmark that made them (e.g. \"sysbench cpu, events/s\"), since scores of different benchmarks cannot be compared"
        ));
    };
    Ok(Some(CpuReference {
        // A missing figure is 0: the site ranks only positive figures.
        single_thread_ops_s: single.unwrap_or(0.0),
        all_threads_ops_s: multi.unwrap_or(0.0),
        threads: vcpus,
        benchmark: Some(benchmark.into()),
    }))
}

// ---------------------------------------------------------------- fio JSON

/// The standard column a fio job measures: the one whose settings ([`ColumnId::settings`]) it has
/// exactly (access pattern, block size, jobs, depth, sync), else None. A job with other
/// settings (2 jobs x 16 is not `rand-read`'s 4 x 32) is its own job, never ranked in a column.
/// One allowance: `sync-write` also accepts `randwrite` (the public harness's syncWrite job
/// and `fixtures/fio/suite.fio` use it); one write and one fdatasync at a time, it is the
/// flush, not the order of offsets, that the column measures.
pub(crate) fn classify(
    rw: &str,
    bs: u64,
    iodepth: u32,
    numjobs: u32,
    fdatasync: u64,
) -> Option<ColumnId> {
    let sync = if fdatasync > 0 {
        format!("fdatasync:{fdatasync}")
    } else {
        "none".to_string()
    };
    ColumnId::ALL.into_iter().find(|&c| {
        let job = JobSettings::of_column(c, 0);
        let same_pattern = rw == job.rw || (c == ColumnId::SyncWrite && rw == "randwrite");
        same_pattern
            && bs == job.bs
            && iodepth == job.iodepth
            && numjobs == job.numjobs
            && sync == job.sync
    })
}

/// A job's settings as the site shows them: "randread, 4 KiB, 2 jobs x 16 in flight".
pub(crate) fn settings_text(job: &JobSettings) -> String {
    let bs = if job.bs >= 1 << 20 && job.bs.is_multiple_of(1 << 20) {
        format!("{} MiB", job.bs >> 20)
    } else if job.bs >= 1024 && job.bs.is_multiple_of(1024) {
        format!("{} KiB", job.bs >> 10)
    } else {
        format!("{} B", job.bs)
    };
    let mut text = format!(
        "{}, {bs}, {} job{} x {} in flight",
        job.rw,
        job.numjobs,
        if job.numjobs == 1 { "" } else { "s" },
        job.iodepth
    );
    if job.sync != "none" {
        text.push_str(&format!(", {}", job.sync.replace(':', " every ")));
    }
    if !job.direct {
        text.push_str(", buffered");
    }
    text
}

fn opt<'a>(job: &'a Value, global: &'a Value, key: &str) -> Option<&'a str> {
    job.get("job options")
        .and_then(|o| o.get(key))
        .or_else(|| global.get(key))
        .and_then(|v| v.as_str())
}

fn percentile(obj: &Value, key: &str) -> Option<u64> {
    obj.get("percentile")?.get(key)?.as_u64()
}

/// Latency of one direction: fio's total latency (issue to completion) when it has
/// percentiles (`lat_percentiles=1`), else the completion half with a note.
fn fio_latency(dir: &Value, notes: &mut Vec<String>, which: &str) -> Option<Latency> {
    let (obj, name) = match dir.get("lat_ns") {
        Some(l) if l.get("percentile").is_some() => (l, "lat"),
        _ => (dir.get("clat_ns")?, "clat"),
    };
    if name == "clat" {
        notes.push(format!(
            "{which} latency is fio's clat (completion half only); run fio with lat_percentiles=1 for issue-to-completion percentiles"
        ));
    }
    let f = |k: &str| obj.get(k).and_then(|v| v.as_f64()).map(|v| v as u64);
    Some(Latency {
        min: f("min"),
        mean: f("mean"),
        p50: percentile(obj, "50.000000"),
        p90: percentile(obj, "90.000000"),
        p99: percentile(obj, "99.000000"),
        p99_9: percentile(obj, "99.900000"),
        max: f("max"),
    })
}

fn fio_direction(
    d: Option<&Value>,
    notes: &mut Vec<String>,
    which: &str,
) -> Option<DirectionStats> {
    let d = d?;
    let ios = d.get("total_ios").and_then(|v| v.as_u64()).unwrap_or(0);
    let bytes = d.get("io_bytes").and_then(|v| v.as_u64()).unwrap_or(0);
    if ios == 0 && bytes == 0 {
        return None;
    }
    Some(DirectionStats {
        ios,
        bytes,
        iops: d.get("iops").and_then(|v| v.as_f64()).unwrap_or(0.0),
        mib_s: d.get("bw_bytes").and_then(|v| v.as_f64()).unwrap_or(0.0) / (1 << 20) as f64,
        lat_ns: fio_latency(d, notes, which),
        hist: None,
        ..Default::default()
    })
}

/// One record from fio's `--output-format=json` output (fio 3.x). Lines before the JSON
/// (fio's own messages) are skipped.
pub fn fio_record(
    text: &str,
    source_file: &str,
    label: &str,
) -> std::result::Result<Record, String> {
    let start = text
        .lines()
        .scan(0usize, |off, l| {
            let here = *off;
            *off += l.len() + 1;
            Some((here, l))
        })
        .find(|(_, l)| l.trim_start().starts_with('{'))
        .map(|(o, _)| o)
        .ok_or("no JSON object found; expected fio --output-format=json output")?;
    let mut stream = serde_json::Deserializer::from_str(&text[start..]).into_iter::<Value>();
    let v = match stream.next() {
        Some(Ok(v)) => v,
        Some(Err(e)) => return Err(format!("not valid fio JSON: {e}")),
        None => return Err("no JSON object found".into()),
    };
    let version = v
        .get("fio version")
        .and_then(|x| x.as_str())
        .ok_or("no \"fio version\": not fio JSON output")?;
    let jobs = v
        .get("jobs")
        .and_then(|j| j.as_array())
        .ok_or("no \"jobs\" array: not fio JSON output")?;
    let global = v.get("global options").cloned().unwrap_or(Value::Null);
    let ts = match v.get("timestamp").map(|t| t.as_u64()) {
        Some(Some(t)) if (t as i128) <= record::time::latest_plausible_secs() as i128 => t,
        Some(_) => {
            let shown: String = v["timestamp"].to_string().chars().take(30).collect();
            return Err(format!(
                "field timestamp: {shown} is not a time fio could have run at"
            ));
        }
        None => return Err("field timestamp: missing; not fio JSON output".into()),
    };
    let started_at =
        record::time::rfc3339(std::time::UNIX_EPOCH + std::time::Duration::from_secs(ts));
    let runner = Runner {
        label: label.into(),
        arch: "unknown".into(),
        evidence: vec![format!(
            "imported from fio JSON ({version}): the file does not describe the machine"
        )],
        ..Runner::default()
    };
    // From the JSON alone (not the file name, nor messages fio printed before it): the same
    // output imported again, from any path or copy, is a duplicate, and the import says so.
    let json_len = stream.byte_offset();
    let id = stable_id(&[&text[start..start + json_len]]);
    let mut rec = Record::imported("imported:fio", source_file, id, started_at, runner);
    rec.storage.class_evidence = vec!["fio output does not describe the storage".into()];
    rec.storage.path = global
        .get("directory")
        .and_then(|d| d.as_str())
        .unwrap_or("")
        .into();
    // Jobs of the same name (numjobs without group_reporting) are summed.
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    for job in jobs {
        let name = job
            .get("jobname")
            .and_then(|n| n.as_str())
            .unwrap_or("job")
            .to_string();
        let rw = opt(job, &global, "rw")
            .or_else(|| opt(job, &global, "readwrite"))
            .unwrap_or("read")
            .to_string();
        let bs = opt(job, &global, "bs")
            .and_then(|t| record::size::parse_size(t, record::size::SizeDialect::Fio))
            .unwrap_or(4096);
        let iodepth: u32 = count_option(job, &global, "iodepth", &name)?;
        let numjobs: u32 = count_option(job, &global, "numjobs", &name)?;
        let fdatasync: u64 = opt(job, &global, "fdatasync")
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        let fsync: u64 = opt(job, &global, "fsync")
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        let size = opt(job, &global, "size")
            .and_then(|t| record::size::parse_size(t, record::size::SizeDialect::Fio))
            .unwrap_or(0);
        let direct = opt(job, &global, "direct") == Some("1");
        let mut notes = Vec::new();
        if let Some(e) = job
            .get("error")
            .and_then(|e| e.as_i64())
            .filter(|e| *e != 0)
        {
            return Err(format!(
                "job {name:?}, field error: fio reported error {e}; its figures are not a measurement"
            ));
        }
        let read = fio_direction(job.get("read"), &mut notes, "read");
        let write = fio_direction(job.get("write"), &mut notes, "write");
        let sync_p99 = job
            .get("sync")
            .and_then(|s| s.get("lat_ns"))
            .and_then(|l| percentile(l, "99.000000"));
        if let Some(p99) = sync_p99.filter(|_| fdatasync > 0 || fsync > 0) {
            notes.push(format!(
                "fio times the {} separately (its p99: {} µs); the write latency here leaves it out, unlike this project's sync-write",
                if fdatasync > 0 { "fdatasync" } else { "fsync" },
                p99 / 1000
            ));
        }
        // The columns run with O_DIRECT: a buffered job measures the page cache too.
        let column = if fsync > 0 || !direct {
            None
        } else {
            classify(&rw, bs, iodepth, numjobs, fdatasync)
        };
        if let Some(&i) = seen.get(&name) {
            // Another entry of the same job: add its throughput.
            let t: &mut TestResult = &mut rec.tests[i];
            for (acc, add) in [(&mut t.read, read), (&mut t.write, write)] {
                if let (Some(a), Some(b)) = (acc.as_mut(), add) {
                    a.ios += b.ios;
                    a.bytes += b.bytes;
                    a.iops += b.iops;
                    a.mib_s += b.mib_s;
                }
            }
            if !t.notes.iter().any(|n| n.starts_with("summed")) {
                t.notes.push(
                    "summed over fio's per-process entries; latency is the first entry's".into(),
                );
            }
            continue;
        }
        let id = match column {
            Some(c) if !rec.tests.iter().any(|t| t.id == c.as_str()) => c.as_str().to_string(),
            // A job named like a column but run otherwise must not be ranked as that column.
            _ if ColumnId::parse(&name).is_some() => format!("{name} (fio job)"),
            _ => name.clone(),
        };
        // The job as fio ran it: its settings for the notes, and the record's `job`.
        let summary = JobSettings {
            rw: rw.clone(),
            bs,
            iodepth,
            numjobs,
            size,
            direct,
            sync: if fdatasync > 0 {
                format!("fdatasync:{fdatasync}")
            } else if fsync > 0 {
                format!("fsync:{fsync}")
            } else {
                "none".into()
            },
            rwmixread: opt(job, &global, "rwmixread").and_then(|s| s.parse().ok()),
        };
        if column.is_none() {
            let settings = settings_text(&summary);
            notes.push(match ColumnId::parse(&name) {
                Some(c) => format!(
                    "job {name:?} ran {settings}, not the {} column's {}: shown as its own job, not ranked in the column",
                    c.as_str(),
                    settings_text(&JobSettings::of_column(c, 0))
                ),
                None => format!(
                    "job {name:?} ({settings}) has no standard column's settings: shown as its own job"
                ),
            });
        }
        let elapsed_s = job
            .get("job_runtime")
            .and_then(|r| r.as_f64())
            .unwrap_or(0.0)
            / 1000.0;
        let cpu = Cpu {
            user_s: job.get("usr_cpu").and_then(|x| x.as_f64()).unwrap_or(0.0) * elapsed_s / 100.0,
            sys_s: job.get("sys_cpu").and_then(|x| x.as_f64()).unwrap_or(0.0) * elapsed_s / 100.0,
        };
        seen.insert(name.clone(), rec.tests.len());
        rec.tests.push(TestResult {
            id,
            job: summary,
            engine: EngineUsed {
                used: opt(job, &global, "ioengine").unwrap_or("psync").into(),
                fallback: None,
                direct,
                // fio runs each job as a process unless the job file says `thread`.
                jobs_as: Some(
                    if opt(job, &global, "thread").is_some_and(|v| !matches!(v, "0" | "false")) {
                        "threads"
                    } else {
                        "processes"
                    }
                    .into(),
                ),
            },
            elapsed_s,
            read,
            write,
            cpu,
            notes,
            repeats: None,
            file_preparation: None,
            cache_suspect: None,
            window: None,
        });
    }
    if rec.tests.is_empty() {
        return Err("the fio output has no jobs".into());
    }
    rec.settings.command_line = None;
    rec.settings.size = rec.tests.iter().map(|t| t.job.size).max().unwrap_or(0);
    rec.notes
        .push(format!("imported from {source_file} ({version})"));
    record::load::check_record(&rec)?;
    Ok(rec)
}

/// A fio count option (`iodepth`, `numjobs`): absent is 1; present must be 1 to 65536.
fn count_option(
    job: &Value,
    global: &Value,
    key: &str,
    job_name: &str,
) -> std::result::Result<u32, String> {
    match opt(job, global, key) {
        None => Ok(1),
        Some(s) => s
            .trim()
            .parse::<u32>()
            .ok()
            .filter(|n| (1..=65_536).contains(n))
            .ok_or_else(|| {
                let shown: String = s.chars().take(30).collect();
                format!("job {job_name:?}, field {key}: {shown:?} is not a count from 1 to 65536")
            }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(rel: &str) -> String {
        std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../fixtures")
                .join(rel),
        )
        .unwrap()
    }

    #[test]
    fn fio_fixture_becomes_the_six_columns() {
        let text = format!(
            "note: both iodepth >= 1 and synchronous I/O engine are selected\n{}",
            fixture("fio/fio-3.33-suite.json")
        );
        let rec = fio_record(&text, "suite.json", "here").unwrap();
        assert_eq!(rec.source, "imported:fio");
        let ids: Vec<&str> = rec.tests.iter().map(|t| t.id.as_str()).collect();
        assert_eq!(
            ids,
            [
                "seq-read",
                "seq-write",
                "rand-read",
                "rand-write",
                "qd1-read",
                "sync-write"
            ]
        );
        // The figures are fio's own, unit-converted.
        let v: Value = serde_json::from_str(&fixture("fio/fio-3.33-suite.json")).unwrap();
        let qd1 = &v["jobs"][4]["read"];
        let t = rec.test(ColumnId::Qd1Read).unwrap();
        assert_eq!(t.headline().unwrap(), qd1["iops"].as_f64().unwrap());
        assert_eq!(
            t.p99_ns().unwrap(),
            qd1["lat_ns"]["percentile"]["99.000000"].as_u64().unwrap()
        );
        let seq = rec.test(ColumnId::SeqRead).unwrap();
        let bw = v["jobs"][0]["read"]["bw_bytes"].as_f64().unwrap() / 1048576.0;
        assert!((seq.headline().unwrap() - bw).abs() < 1e-9);
        assert!(
            rec.test(ColumnId::SyncWrite)
                .unwrap()
                .notes
                .iter()
                .any(|n| n.contains("fdatasync"))
        );
        assert!(fio_record("fio: nothing here\n", "x", "y").is_err());
    }

    /// A record imported when the id came from the raw line (header + row text) is found by
    /// its figures: importing the same figures again after the change adds nothing.
    #[test]
    fn a_csv_record_imported_under_the_old_line_id_is_not_imported_again() {
        let dir = tempfile::tempdir().unwrap();
        let (header, line) = ("date,label,seq-read_mib_s", "2026-10-01,a,100");
        let mut rec = csv_records(&format!("{header}\n{line}\n"), "p.csv")
            .unwrap()
            .remove(0);
        rec.id = stable_id(&[header, line]);
        record::results::write_record(dir.path(), &rec).unwrap();
        let ids = existing_ids(dir.path()).unwrap();
        assert!(ids.contains(&stable_id(&[header, line])), "{ids:?}");
        let again = csv_records("label,date,seq-read_mib_s\na,2026-10-01,100.0\n", "q.csv")
            .unwrap()
            .remove(0);
        assert!(ids.contains(&again.id), "{ids:?} lacks {}", again.id);
    }

    #[test]
    fn csv_rows_become_records() {
        let recs = csv_records(
            &fixture("published/ec2-storage-2026-09-30_10-01.csv"),
            "p.csv",
        )
        .unwrap();
        assert_eq!(recs.len(), 41);
        let r = recs
            .iter()
            .find(|r| r.runner.label == "runson-m8a-2xlarge-gp3tuned")
            .unwrap();
        assert_eq!(
            r.runner.variant.as_deref(),
            Some("gp3 1000 MiB/s, 16k IOPS")
        );
        assert_eq!(r.storage.class, StorageClass::Ebs);
        assert_eq!(r.test(ColumnId::SeqRead).unwrap().headline(), Some(1001.5));
        assert_eq!(r.test(ColumnId::Qd1Read).unwrap().p99_ns(), Some(831_500));
        assert!(r.is_imported());
        let nvme = recs
            .iter()
            .find(|r| r.runner.label == "runson-i7i-large")
            .unwrap();
        assert_eq!(nvme.storage.class, StorageClass::LocalNvme);
        // Same row, same id: importing twice finds the record already there.
        let again = csv_records(
            &fixture("published/ec2-storage-2026-09-30_10-01.csv"),
            "p.csv",
        )
        .unwrap();
        assert_eq!(recs[0].id, again[0].id);
        assert!(
            csv_records("date,label,seq-read_mib_s\n2026-01-01,a,fast\n", "x")
                .unwrap_err()
                .contains("line 2, column seq-read_mib_s")
        );
        assert!(csv_records("a,b\n1,2\n", "x").is_err());
    }

    #[test]
    fn csv_cpu_figures_keep_their_benchmark() {
        let recs = csv_records(
            &fixture("published/hardware-node-runners-2026-10-08.csv"),
            "hw.csv",
        )
        .unwrap();
        assert_eq!(recs.len(), 7);
        let r = recs
            .iter()
            .find(|r| r.runner.label == "runson-m8a-x64")
            .unwrap();
        let cpu = r.cpu_reference.as_ref().unwrap();
        assert_eq!(
            (cpu.single_thread_ops_s, cpu.all_threads_ops_s, cpu.threads),
            (5061.79, 20251.98, 4)
        );
        assert_eq!(cpu.benchmark.as_deref(), Some("sysbench cpu, events/s"));
        // Figures without the benchmark's name cannot be compared with anything: refused.
        let err = csv_records(
            "date,label,seq-read_mib_s,cpu_single\n2026-01-01,a,100,5000\n",
            "x",
        )
        .unwrap_err();
        assert!(
            err.contains("line 2") && err.contains("cpu_benchmark"),
            "{err}"
        );
        // The older format (no CPU columns) still imports, with no CPU figures.
        let ec2 = csv_records(
            &fixture("published/ec2-storage-2026-09-30_10-01.csv"),
            "p.csv",
        )
        .unwrap();
        assert!(ec2.iter().all(|r| r.cpu_reference.is_none()));
    }

    #[test]
    fn columns_from_fio_settings() {
        assert_eq!(classify("randread", 4096, 1, 1, 0), Some(ColumnId::Qd1Read));
        assert_eq!(
            classify("randread", 4096, 32, 4, 0),
            Some(ColumnId::RandRead)
        );
        assert_eq!(
            classify("randwrite", 4096, 1, 1, 1),
            Some(ColumnId::SyncWrite)
        );
        assert_eq!(classify("write", 4096, 1, 1, 1), Some(ColumnId::SyncWrite));
        assert_eq!(classify("randrw", 4096, 1, 1, 0), None);
        // Only a column's exact settings make a job that column.
        assert_eq!(classify("randread", 4096, 16, 2, 0), None);
        assert_eq!(classify("read", 128 << 10, 32, 1, 0), None);
        assert_eq!(classify("read", 1 << 20, 32, 1, 0), Some(ColumnId::SeqRead));
        assert_eq!(classify("randwrite", 4096, 1, 1, 0), None);
        assert_eq!(classify("write", 4096, 1, 1, 2), None);
    }

    /// A 2 x 16 job named rand-read (rand-read is 4 x 32) is its own job with its settings,
    /// never the column; a local file is named by its file name.
    #[test]
    fn a_job_with_other_settings_is_not_ranked_in_a_column() {
        let text = fixture("fio/fio-3.33-suite.json").replacen(
            "\"numjobs\" : \"4\"",
            "\"numjobs\" : \"2\"",
            1,
        );
        assert!(
            text.contains("\"numjobs\" : \"2\""),
            "fixture changed shape"
        );
        let rec = fio_record(&text, "suite.json", "here").unwrap();
        assert!(rec.test(ColumnId::RandRead).is_none());
        let job = rec
            .tests
            .iter()
            .find(|t| t.id == "rand-read (fio job)")
            .expect("the job is kept under its own name");
        assert_eq!(job.column(), None);
        assert!(
            job.notes.iter().any(|n| n.contains(
                "ran randread, 4 KiB, 2 jobs x 32 in flight, not the rand-read column's \
                 randread, 4 KiB, 4 jobs x 32 in flight"
            )),
            "{:?}",
            job.notes
        );
        // The other five are still columns.
        assert!(rec.test(ColumnId::RandWrite).is_some());
        assert!(rec.test(ColumnId::SyncWrite).is_some());

        let dir = tempfile::tempdir().unwrap();
        let sub = dir.path().join("sub");
        std::fs::create_dir(&sub).unwrap();
        std::fs::write(sub.join("run.json"), fixture("fio/fio-3.33-suite.json")).unwrap();
        let mut records = Vec::new();
        each_record(
            &sub.join("../sub/run.json"),
            &ImportOptions::default(),
            &mut |r| {
                records.push(r);
                Ok(())
            },
        )
        .unwrap();
        assert_eq!(records[0].source_file.as_deref(), Some("run.json"));
    }
}

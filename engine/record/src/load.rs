//! Reading a results folder: every `*.json` below it, each checked and parsed on its own, so
//! one bad file costs only itself. Nothing in the folder is ever written.

use std::fs;
use std::path::{Path, PathBuf};

use crate::{Record, SCHEMA};
use anyhow::{Context, Result};

/// A record and the file it came from.
#[derive(Clone, Debug)]
pub struct LoadedRecord {
    pub path: PathBuf,
    pub record: Record,
}

/// What loading found: the good records, and each bad file with the reason it was left out.
#[derive(Debug, Default)]
pub struct Loaded {
    pub records: Vec<LoadedRecord>,
    pub skipped: Vec<(PathBuf, String)>,
}

/// Every `*.json` file below `dir`, sorted (so the site does not depend on directory order).
/// Hidden files and folders (such as the writer's `.tmp` files) are left out.
pub fn json_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let entries =
            fs::read_dir(&d).with_context(|| format!("cannot read the folder {}", d.display()))?;
        for entry in entries {
            crate::cancel::check()?;
            let entry = entry.with_context(|| format!("cannot read the folder {}", d.display()))?;
            let name = entry.file_name();
            if name.to_string_lossy().starts_with('.') {
                continue;
            }
            let path = entry.path();
            let ty = entry.file_type()?;
            if ty.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "json") {
                out.push(path);
            }
        }
    }
    out.sort();
    Ok(out)
}

/// Parse one record's text; the error is a one-line reason fit to print after the file name.
pub fn parse_record(text: &str) -> std::result::Result<Record, String> {
    match serde_json::from_str::<Record>(text) {
        Ok(record) if record.schema == SCHEMA => Ok(record),
        Ok(record) => Err(unknown_schema(&record.schema)),
        Err(err) => {
            // Tell "a record of another version" apart from "a broken record of this version".
            #[derive(serde::Deserialize)]
            struct SchemaOnly {
                schema: Option<serde_json::Value>,
            }
            match serde_json::from_str::<SchemaOnly>(text) {
                Ok(SchemaOnly {
                    schema: Some(serde_json::Value::String(s)),
                }) if s != SCHEMA => Err(unknown_schema(&s)),
                Ok(SchemaOnly { schema: None }) => {
                    Err("not a diskbench record (no \"schema\" field)".into())
                }
                _ if err.is_eof() => Err(format!("truncated JSON: {err}")),
                _ if err.is_syntax() => Err(format!("not valid JSON: {err}")),
                _ => Err(format!("not a valid {SCHEMA} record: {err}")),
            }
        }
    }
}

fn unknown_schema(schema: &str) -> String {
    let shown: String = schema.chars().take(60).collect();
    format!(
        "unknown schema {shown:?} (this version reads {SCHEMA:?}; a newer cargo-diskbench may read it)"
    )
}

/// Read, parse and check one record file; the error is a one-line reason fit to print after
/// the file name.
pub fn load_file(path: &Path) -> std::result::Result<Record, String> {
    load_one(path)
}

fn load_one(path: &Path) -> std::result::Result<Record, String> {
    let text = crate::input::read_text(path).map_err(|e| e.to_string())?;
    let record = parse_record(&text)?;
    check_record(&record)?;
    Ok(record)
}

/// What serde cannot check: a real start time that is not in the future, and figures that are
/// finite and not negative. A record failing this is left out with the field named, so one
/// hostile or broken file cannot hide real runners (a date of 9999-12-31 would make every
/// other run fall out of `--window-days`) or bend a chart.
pub fn check_record(r: &Record) -> std::result::Result<(), String> {
    let Some(started) = crate::time::parse_utc_secs(&r.started_at) else {
        let shown: String = r.started_at.chars().take(40).collect();
        return Err(format!(
            "field started_at: {shown:?} is not an RFC 3339 UTC time (YYYY-MM-DDTHH:MM:SSZ)"
        ));
    };
    if started > crate::time::latest_plausible_secs() {
        return Err(format!(
            "field started_at: {} is in the future",
            r.started_at
        ));
    }
    if r.id.trim().is_empty() {
        return Err("field id: empty".into());
    }
    let bad = |v: f64| !v.is_finite() || v < 0.0;
    for t in &r.tests {
        for (dir, d) in [("read", &t.read), ("write", &t.write)] {
            if let Some(d) = d {
                for (field, v) in [("iops", d.iops), ("mib_s", d.mib_s)] {
                    if bad(v) {
                        return Err(format!(
                            "field tests[{:?}].{dir}.{field}: {v} is not a non-negative number",
                            t.id
                        ));
                    }
                }
            }
        }
        if bad(t.elapsed_s) {
            return Err(format!(
                "field tests[{:?}].elapsed_s: {} is negative",
                t.id, t.elapsed_s
            ));
        }
    }
    for s in &r.steps {
        for (field, v) in [
            ("wall_s", s.wall_s),
            ("user_s", s.user_s),
            ("sys_s", s.sys_s),
        ] {
            if bad(v) {
                return Err(format!(
                    "field steps[{:?}].{field}: {v} is not a non-negative number",
                    s.id
                ));
            }
        }
    }
    Ok(())
}

/// Load every record below `dir`. A folder that cannot be read is an error; a file that
/// cannot be read or parsed is skipped with its reason.
pub fn load_dir(dir: &Path) -> Result<Loaded> {
    if !dir.is_dir() {
        return Err(crate::error::usage(format!(
            "--results {}: not a folder; give the folder the records were written to",
            dir.display()
        )));
    }
    let files = json_files(dir)?;
    // Reading and parsing is most of a large site's time: spread it over the cores, keeping
    // the file order in the result.
    type Part = Vec<(PathBuf, std::result::Result<Record, String>)>;
    let parts: Vec<Option<Part>> =
        crate::parallel::map_parts(&files, crate::parallel::threads(), |part| {
            part.iter()
                .take_while(|_| !crate::cancel::requested())
                .map(|p| (p.clone(), load_one(p)))
                .collect()
        });
    crate::cancel::check()?;
    let mut loaded = Loaded::default();
    for (path, result) in parts.into_iter().flatten().flatten() {
        match result {
            Ok(record) => loaded.records.push(LoadedRecord { path, record }),
            Err(reason) => loaded.skipped.push((path, reason)),
        }
    }
    Ok(loaded)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasons_name_what_is_wrong() {
        let record = Record::new(
            "measured",
            "2026-11-30T10:00:00Z".into(),
            crate::Runner {
                label: "vm".into(),
                ..Default::default()
            },
            Default::default(),
            Default::default(),
        );
        let good = serde_json::to_string(&record).unwrap();
        assert!(parse_record(&good).is_ok());
        let truncated = &good[..good.len() / 2];
        assert!(parse_record(truncated).unwrap_err().contains("truncated"));
        let other = good.replace(SCHEMA, "diskbench.record/99");
        assert!(parse_record(&other).unwrap_err().contains("unknown schema"));
        let mut v: serde_json::Value = serde_json::from_str(&good).unwrap();
        v["runner"]["label"] = serde_json::json!(42);
        let err = parse_record(&v.to_string()).unwrap_err();
        assert!(err.contains("expected a string"), "{err}");
        v.as_object_mut().unwrap().remove("runner");
        assert!(
            parse_record(&v.to_string())
                .unwrap_err()
                .contains("missing field")
        );
        assert!(parse_record("[1,2]").is_err());
    }
}

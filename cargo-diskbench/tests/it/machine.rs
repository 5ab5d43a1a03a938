//! Integration tests: machine. These run the real detection on this machine through the
//! binary; what the machine should be is taken from an independent source (`df`), so the
//! tests say something on any Linux host, and name the virtio disk where there is one.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::common;

fn machine_json(dir: &Path) -> Value {
    let out = common::run(&["machine", "--dir", dir.to_str().unwrap(), "--json"]);
    assert!(
        out.status.success(),
        "machine --json failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("machine --json prints JSON")
}

/// `(source, fstype)` of the filesystem holding `dir`, as coreutils' df sees it.
fn df(dir: &Path) -> (String, String) {
    let out = Command::new("df")
        .args(["--output=source,fstype"])
        .arg(dir)
        .output()
        .expect("df runs");
    let text = String::from_utf8(out.stdout).unwrap();
    let line = text.lines().nth(1).expect("df prints a row");
    let mut cols = line.split_whitespace();
    (
        cols.next().unwrap().to_string(),
        cols.next().unwrap().to_string(),
    )
}

fn names(storage: &Value) -> Vec<String> {
    storage["devices"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["name"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn work_disk_reports_its_filesystem_device_chain_and_class() {
    // target/tmp sits on the disk the project is built on.
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let (source, fstype) = df(dir.path());
    let doc = machine_json(dir.path());
    let s = &doc["storage"];
    assert_eq!(s["fstype"], fstype.as_str(), "{s:#}");
    assert!(s["total_bytes"].as_u64().unwrap() > 0);
    assert!(s["free_bytes"].as_u64().unwrap() <= s["total_bytes"].as_u64().unwrap());
    let chain = names(s);
    let disk = source.trim_start_matches("/dev/");
    if source.starts_with("/dev/") && !source.starts_with("/dev/mapper") && disk != "root" {
        assert_eq!(
            chain[0], disk,
            "the chain starts at the mounted device: {chain:?}"
        );
    }
    if disk.starts_with("vd") {
        // A virtio disk, as on the machine this project is developed on.
        let leaf = s["devices"].as_array().unwrap().last().unwrap();
        assert_eq!(leaf["transport"], "virtio", "{s:#}");
        assert!(leaf["scheduler"].is_string());
        assert!(leaf["size_bytes"].as_u64().unwrap() > 0);
        assert_eq!(s["class"], "vm-disk", "{s:#}");
        assert!(
            s["class_evidence"][0]
                .as_str()
                .unwrap()
                .contains("transport = virtio")
        );
    }
    let r = &doc["runner"];
    assert!(r["vcpus"].as_u64().unwrap() >= 1);
    assert!(r["memory_gib"].as_f64().unwrap() > 0.0);
    assert!(["x64", "arm64"].contains(&r["arch"].as_str().unwrap()));
    assert!(!r["kernel"].as_str().unwrap().is_empty());
}

#[test]
fn dev_shm_is_tmpfs() {
    let shm = Path::new("/dev/shm");
    if !shm.is_dir() {
        return;
    }
    let doc = machine_json(shm);
    let s = &doc["storage"];
    assert_eq!(s["fstype"], "tmpfs");
    assert_eq!(s["class"], "tmpfs");
    assert!(names(s).is_empty());
    assert!(s["notes"].to_string().contains("fdatasync do nothing"));
}

#[test]
fn table_output_is_aligned_and_names_the_chain() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let out = common::run(&[
        "machine",
        "--dir",
        dir.path().to_str().unwrap(),
        "--label",
        "desk",
    ]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.starts_with("machine\n"), "{text}");
    assert!(text.contains("\nstorage\n"));
    assert!(
        text.lines()
            .any(|l| l.trim_start().starts_with("label:") && l.ends_with(" desk")),
        "{text}"
    );
    // Values in one section start in one column.
    let storage: Vec<&str> = text.split("\nstorage\n").nth(1).unwrap().lines().collect();
    let columns: Vec<usize> = storage
        .iter()
        .filter(|l| l.trim_start().contains(": "))
        .map(|l| value_column(l))
        .collect();
    assert!(columns.len() >= 5, "{text}");
    assert!(columns.windows(2).all(|w| w[0] == w[1]), "{text}");
    let chain = storage
        .iter()
        .find(|l| l.trim_start().starts_with("device chain:"))
        .unwrap();
    if df(dir.path()).0.starts_with("/dev/vd") {
        assert!(
            chain.contains("(virtio, ") && chain.contains("GiB"),
            "{chain}"
        );
    }
}

/// Where the value starts on a `  key:   value` line.
fn value_column(line: &str) -> usize {
    let after = line.find(':').expect("key: value") + 1;
    after + line[after..].len() - line[after..].trim_start().len()
}

#[test]
fn a_missing_dir_is_a_usage_error() {
    let out = common::run(&["machine", "--dir", "/nonexistent/diskbench-dir"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--dir /nonexistent/diskbench-dir"), "{err}");
}

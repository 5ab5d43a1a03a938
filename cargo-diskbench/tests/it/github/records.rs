//! Hand-built records: a GitHub-hosted x64 run and a container run full of fallbacks.
//!
//! Types without Default are built from JSON, so that fields other parts add later (always
//! `#[serde(default)]`) do not break these tests.

use record::*;
use serde_json::{Value, json};

fn column(c: ColumnId, iops: f64, p99_ns: u64, engine: &str) -> TestResult {
    let (rw, bs, iodepth, numjobs, sync) = match c {
        ColumnId::SeqRead => ("read", 1u64 << 20, 32, 1, "none"),
        ColumnId::SeqWrite => ("write", 1 << 20, 32, 1, "none"),
        ColumnId::RandRead => ("randread", 4096, 32, 4, "none"),
        ColumnId::RandWrite => ("randwrite", 4096, 32, 4, "none"),
        ColumnId::Qd1Read => ("randread", 4096, 1, 1, "none"),
        ColumnId::SyncWrite => ("write", 4096, 1, 1, "fdatasync:1"),
    };
    let elapsed_s = 5.0;
    let ios = (iops * elapsed_s) as u64;
    let stats = json!({
        "ios": ios,
        "bytes": ios * bs,
        "iops": iops,
        "mib_s": iops * bs as f64 / 1048576.0,
        "lat_ns": {
            "min": p99_ns / 10, "mean": p99_ns / 3, "p50": p99_ns / 4, "p90": p99_ns / 2,
            "p99": p99_ns, "p99_9": p99_ns * 2, "max": p99_ns * 5,
        },
        "hist": null,
    });
    let (read, write) = if c.is_read() {
        (stats, Value::Null)
    } else {
        (Value::Null, stats)
    };
    serde_json::from_value(json!({
        "id": c.as_str(),
        "job": {
            "rw": rw, "bs": bs, "iodepth": iodepth, "numjobs": numjobs, "size": 1u64 << 30,
            "direct": true, "sync": sync, "rwmixread": null,
        },
        "engine": { "used": engine, "fallback": null, "direct": true },
        "elapsed_s": elapsed_s,
        "read": read,
        "write": write,
        "cpu": { "user_s": 0.2, "sys_s": 1.1 },
    }))
    .expect("a valid test result")
}

fn step(id: &str, name: &str, wall_s: f64, bound: Bound, why: &str) -> StepResult {
    StepResult {
        id: id.into(),
        name: name.into(),
        command: vec!["cargo".into(), "build".into()],
        status: StepStatus::Ok,
        reason: None,
        wall_s,
        user_s: wall_s * 1.5,
        sys_s: wall_s * 0.2,
        io: Some(StepIo {
            read_bytes: 10 << 20,
            write_bytes: 300 << 20,
            syscr: 1000,
            syscw: 2000,
            ..Default::default()
        }),
        io_pressure_s: Some(0.4),
        bound,
        why: why.into(),
        ..Default::default()
    }
}

/// A GitHub-hosted x64 runner: all six columns on io_uring with O_DIRECT, three steps.
pub(crate) fn normal_record(label: &str, id: &str, started_at: &str) -> Record {
    let mut record: Record = serde_json::from_value(json!({
        "schema": SCHEMA,
        "id": id,
        "source": "measured",
        "started_at": started_at,
        "finished_at": started_at.replace("T10:00", "T10:03"),
        "tool": { "name": "cargo-diskbench", "version": "0.1.0" },
        "runner": {
            "label": "", "provider": null, "arch": "", "vcpus": 0, "memory_gib": 0.0,
            "cpu_model": "", "kernel": "", "os": "",
        },
        "storage": {
            "path": "", "fstype": "", "mount_source": "", "mount_options": "", "class": "unknown",
        },
        "settings": {
            "suite": "standard", "runtime_s": 5.0, "ramp_s": 1.0, "size": 1u64 << 30,
            "engine": "auto",
        },
        "tests": [],
    }))
    .expect("a valid record");
    record.runner = Runner {
        label: label.into(),
        provider: Some("github-hosted".into()),
        arch: "x64".into(),
        vcpus: 4,
        memory_gib: 15.6,
        cpu_model: "AMD EPYC 7763 64-Core Processor".into(),
        kernel: "6.8.0-1017-azure".into(),
        os: "Ubuntu 24.04.1 LTS".into(),
        ci: Some(Ci {
            system: "github-actions".into(),
            run_id: Some("12345".into()),
            job: Some("bench".into()),
            image: Some("ubuntu24/20261118.1".into()),
            ..Default::default()
        }),
        ..Default::default()
    };
    record.storage = Storage {
        path: "/home/runner/work/app/app".into(),
        fstype: "ext4".into(),
        mount_source: "/dev/root".into(),
        mount_options: "rw,relatime,discard".into(),
        device: Some(Device {
            name: "sda".into(),
            model: Some("Virtual Disk".into()),
            rotational: Some(true),
            transport: Some("scsi".into()),
            scheduler: Some("mq-deadline".into()),
            ..Default::default()
        }),
        class: StorageClass::VmDisk,
        class_evidence: vec![
            "vendor = Msft, model = Virtual Disk".into(),
            "transport = scsi (Hyper-V storvsc)".into(),
            "DMI sys_vendor = Microsoft Corporation".into(),
            "rotational = 1 (hypervisors report this for remote disks)".into(),
        ],
        ..Default::default()
    };
    record.tests = vec![
        column(ColumnId::SeqRead, 209.6, 158_000_000, "io_uring"),
        column(ColumnId::SeqWrite, 208.1, 161_300_000, "io_uring"),
        column(ColumnId::RandRead, 8_734.2, 29_100_000, "io_uring"),
        column(ColumnId::RandWrite, 8_702.9, 30_400_000, "io_uring"),
        column(ColumnId::Qd1Read, 1_012.4, 2_150_000, "io_uring"),
        column(ColumnId::SyncWrite, 402.7, 4_880_000, "io_uring"),
    ];
    record.steps = vec![
        step(
            "cargo-build",
            "cargo build (ripgrep)",
            48.2,
            Bound::Cpu,
            "1.70 of 4 cores busy over 48.2 s, the machine stalled on I/O (PSI) for 1% of the wall time",
        ),
        step(
            "docker-build",
            "docker build (FROM scratch, 200 MiB of layers)",
            7.9,
            Bound::Bandwidth,
            "wrote 300 MiB at 38 MiB/s, 18% of this disk's sequential write",
        ),
        step(
            "sqlite",
            "SQLite inserts, one transaction each",
            12.6,
            Bound::Latency,
            "5000 commits at 2.5 ms each, close to this disk's synced-write p99 (4.88 ms)",
        ),
    ];
    record
}

/// A container on an arm64 runner: io_uring refused (seccomp), overlayfs over an ext4 mounted
/// nobarrier (cheap fdatasync), buffered I/O on some columns, one column left out, a skipped
/// and a failed step.
pub(super) fn fallback_record() -> Record {
    let mut r = normal_record(
        "ubuntu-24.04-arm",
        "b7e3a1c09d2f4e58",
        "2026-11-30T10:00:00Z",
    );
    r.runner.arch = "arm64".into();
    r.runner.cpu_model = "Neoverse-N2".into();
    r.runner.in_container = true;
    r.storage.fstype = "overlay".into();
    r.storage.mount_source = "overlay".into();
    r.storage.overlay_upper = serde_json::from_value(json!({
        "path": "/var/lib/docker/overlay2/3f2a/diff",
        "fstype": "ext4",
        "mount_source": "/dev/sda1",
        "mount_options": "rw,relatime,nobarrier",
    }))
    .expect("a valid mount");
    r.storage.fsync_flags = vec!["nobarrier".into()];
    r.storage.notes = vec!["/sys/block/sda/device/model: permission denied".into()];
    for t in &mut r.tests {
        t.engine.used = "psync".into();
        t.engine.fallback = Some("io_uring_setup: EPERM (seccomp); used psync".into());
    }
    for t in r.tests.iter_mut().filter(|t| !t.id.starts_with("seq")) {
        t.engine.direct = false;
    }
    r.tests.retain(|t| t.id != "rand-write");
    r.tests[0].notes = vec!["the first second was 3x slower (cloud disk warm-up)".into()];
    r.steps[1].status = StepStatus::Skipped;
    r.steps[1].reason = Some("docker not found on PATH".into());
    r.steps[2].status = StepStatus::Failed;
    r.steps[2].exit_code = Some(101);
    r.steps[2].reason = Some("sqlite3: disk I/O error".into());
    r.notes = vec!["--only: rand-write left out".into()];
    r
}

//! Figures no disk can produce: what the storage a record names can physically deliver, and
//! the check that marks a figure above it as served by a cache.
//!
//! A VM whose host caches its virtual disk can read tens of GB/s "from disk"; no disk link
//! carries that (a PCIe 5.0 x4 NVMe link tops out near 15.75 GB/s). Such a figure says how
//! fast the host's memory is, not the disk, so it must not be called the fastest disk. Each
//! ceiling is the best device of its kind on its fastest link (3.5 M IOPS is near the fastest
//! PCIe 5.0 drives, not a margin above them), times the device count the record shows: a
//! figure above one is most likely a cache's, not certainly (a host striping a virtual disk
//! over several drives, or a parallel filesystem in the network class, can exceed one device);
//! a figure below it may still be cached.
//!
//! One row per storage class, per device; the device count multiplies it (RAID 0 of four
//! NVMe drives carries four links). For our own runs the kernel also tells the PCIe link each
//! NVMe disk really has (`current_link_speed` x `current_link_width`), which replaces the class
//! figure for bandwidth (local NVMe only: an emulated controller in a VM reports whatever link
//! it likes). tmpfs is memory by definition and is never marked; storage of unknown class gets
//! the largest single-device row, times its device count.

use crate::{ColumnId, Record, Storage, StorageClass};

/// 4 KiB: the random and one-at-a-time columns' block size.
const BLOCK_4K: f64 = 4096.0;

/// What one device of a class can deliver at most.
#[derive(Clone, Copy, Debug)]
pub struct ClassCeiling {
    pub class: StorageClass,
    /// Bytes per second per device (either direction).
    pub bytes_s: f64,
    /// 4 KiB operations per second per device.
    pub iops: f64,
    /// What the figures are: the device and link they come from.
    pub basis: &'static str,
}

/// PCIe 5.0: 32 GT/s per lane, 128b/130b encoding, 4 lanes.
const PCIE5_X4_BYTES_S: f64 = 32e9 * 128.0 / 130.0 / 8.0 * 4.0;

/// The table: a new kind of disk is one more row.
pub const CLASS_CEILINGS: &[ClassCeiling] = &[
    ClassCeiling {
        class: StorageClass::LocalNvme,
        bytes_s: PCIE5_X4_BYTES_S,
        iops: 3.5e6,
        basis: "one NVMe drive on a PCIe 5.0 x4 link (15.75 GB/s, 3.5 M 4 KiB IOPS)",
    },
    ClassCeiling {
        class: StorageClass::VmDisk,
        // A virtual disk is backed by the host's storage: at best its fastest single drive.
        bytes_s: PCIE5_X4_BYTES_S,
        iops: 3.5e6,
        basis: "a virtual disk backed by one host NVMe drive on a PCIe 5.0 x4 link (15.75 GB/s, 3.5 M 4 KiB IOPS)",
    },
    ClassCeiling {
        class: StorageClass::Ebs,
        // AWS, "Amazon EBS volume types": io2 Block Express, up to 4,000 MiB/s and 256,000
        // IOPS per volume (the largest EBS volume type).
        bytes_s: 4000.0 * MIB,
        iops: 256e3,
        basis: "one EBS io2 Block Express volume (4,000 MiB/s, 256,000 IOPS)",
    },
    ClassCeiling {
        class: StorageClass::NetworkDisk,
        // Azure, "Azure managed disk types": Ultra Disk, up to 10,000 MB/s and 400,000 IOPS
        // per disk (the largest network-disk offer of the clouds we classify).
        bytes_s: 10e9,
        iops: 400e3,
        basis: "one Azure Ultra Disk, the largest network-disk offer (10,000 MB/s, 400,000 IOPS)",
    },
];

const MIB: f64 = 1024.0 * 1024.0;

/// Storage of unknown class (an imported row that does not say): the most any one device of
/// any class in the table can deliver, so only what no device can produce is marked.
fn unknown_class_row() -> ClassCeiling {
    ClassCeiling {
        class: StorageClass::Unknown,
        bytes_s: CLASS_CEILINGS.iter().map(|r| r.bytes_s).fold(0.0, f64::max),
        iops: CLASS_CEILINGS.iter().map(|r| r.iops).fold(0.0, f64::max),
        basis: "any one device of any class (storage class unknown: the largest row of the table)",
    }
}

/// One 4 KiB read at a time: no device answers in under 5 us (Optane-class latency).
pub const QD1_MAX_IOPS: f64 = 200e3;
/// One 4 KiB write and its fdatasync at a time, through a filesystem: not under 5 us either
/// (generous: an Optane-class drive without a volatile cache, on blocks already converted).
pub const SYNC_MAX_IOPS: f64 = 200e3;

/// What a record's storage can deliver at most.
#[derive(Clone, Debug, PartialEq)]
pub struct Ceiling {
    pub bytes_s: f64,
    pub iops: f64,
    /// "2 x one NVMe drive on ..." or "the PCIe links the kernel reports (2 x 7.88 GB/s)".
    pub basis: String,
}

/// The ceiling of `storage`, or None for memory (tmpfs, ramfs).
pub fn ceiling(storage: &Storage) -> Option<Ceiling> {
    let row = match storage.class {
        StorageClass::Unknown => unknown_class_row(),
        class => *CLASS_CEILINGS.iter().find(|r| r.class == class)?,
    };
    // The disks at the bottom of the chain: devices nothing else sits below.
    let leaves: Vec<_> = storage
        .devices
        .iter()
        .filter(|d| d.members.is_empty() && !matches!(d.transport.as_deref(), Some("md" | "dm")))
        .collect();
    let count = leaves.len().max(1) as f64;
    let links: Vec<u64> = leaves.iter().filter_map(|d| d.pcie_link_bytes_s).collect();
    let prefix = if count > 1.0 {
        format!("{count} x ")
    } else {
        String::new()
    };
    // The kernel's PCIe link counts only for local NVMe: a hypervisor's emulated NVMe can report
    // any link (2.5 GT/s x1 is common), which says nothing about the storage behind it.
    let local_nvme = storage.class == StorageClass::LocalNvme;
    let (bytes_s, basis) = if local_nvme && !links.is_empty() && links.len() == leaves.len() {
        let sum: f64 = links.iter().map(|&b| b as f64).sum();
        (
            sum,
            format!(
                "the PCIe link{} the kernel reports ({}{:.2} GB/s)",
                if links.len() > 1 { "s" } else { "" },
                prefix,
                links[0] as f64 / 1e9
            ),
        )
    } else {
        (row.bytes_s * count, format!("{prefix}{}", row.basis))
    };
    Some(Ceiling {
        bytes_s,
        iops: (row.iops * count).min(bytes_s / BLOCK_4K),
        basis,
    })
}

/// Why `headline` (MiB/s or IOPS, as the column reports it) cannot have come from storage
/// with this ceiling; None when it can.
pub fn exceeds(column: ColumnId, headline: f64, ceiling: &Ceiling) -> Option<String> {
    let mib = |b: f64| b / (1024.0 * 1024.0);
    // An absurd figure (a broken record: 1e308) reads "1.00e308", never as 309 digits.
    let fig = crate::units::format_figure;
    match column {
        ColumnId::SeqRead | ColumnId::SeqWrite => {
            let limit = mib(ceiling.bytes_s);
            (headline > limit).then(|| {
                format!(
                    "{} MiB/s is more than {} can carry ({} MiB/s): served by a cache",
                    fig(headline),
                    ceiling.basis,
                    fig(limit)
                )
            })
        }
        ColumnId::RandRead | ColumnId::RandWrite => (headline > ceiling.iops).then(|| {
            format!(
                "{} IOPS is more than {} can deliver ({} IOPS): served by a cache",
                fig(headline),
                ceiling.basis,
                fig(ceiling.iops)
            )
        }),
        ColumnId::Qd1Read => {
            let limit = QD1_MAX_IOPS.min(ceiling.iops);
            (headline > limit).then(|| {
                format!(
                    "{} IOPS one read at a time is under {:.1} us per read; no disk answers that fast ({} IOPS at most): served by a cache",
                    fig(headline),
                    1e6 / headline,
                    fig(limit)
                )
            })
        }
        ColumnId::SyncWrite => {
            let limit = SYNC_MAX_IOPS.min(ceiling.iops);
            (headline > limit).then(|| {
                format!(
                    "{} durable writes per second is under {:.1} us per write and flush; no disk makes a write durable that fast ({} at most): the flush was absorbed by a cache",
                    fig(headline),
                    1e6 / headline,
                    fig(limit)
                )
            })
        }
    }
}

/// Mark every standard column of `record` whose figure its storage cannot deliver.
pub fn mark_record(record: &mut Record) {
    let Some(ceiling) = ceiling(&record.storage) else {
        return;
    };
    for t in &mut record.tests {
        if let (Some(c), Some(h)) = (t.column(), t.headline()) {
            t.cache_suspect = exceeds(c, h, &ceiling);
        }
    }
}

/// What a PCIe link carries, from sysfs's `current_link_speed` ("16.0 GT/s PCIe") and
/// `current_link_width` ("4"): bytes per second after the line encoding (8b/10b up to
/// 5 GT/s, 128b/130b from 8 GT/s).
pub fn pcie_link_bytes_s(speed: &str, width: &str) -> Option<u64> {
    let gts: f64 = speed.split_whitespace().next()?.parse().ok()?;
    let lanes: f64 = width.trim().parse().ok()?;
    if !(gts > 0.0 && lanes > 0.0) {
        return None;
    }
    let encoding = if gts <= 5.0 { 0.8 } else { 128.0 / 130.0 };
    Some((gts * 1e9 * encoding / 8.0 * lanes) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Device;

    fn storage(class: StorageClass, devices: Vec<Device>) -> Storage {
        Storage {
            class,
            devices,
            ..Default::default()
        }
    }

    const MIB: f64 = 1024.0 * 1024.0;

    #[test]
    fn a_vm_reading_35_gb_s_is_cached_an_ebs_volume_at_400_mib_s_is_not() {
        let vm = ceiling(&storage(StorageClass::VmDisk, vec![])).unwrap();
        let why = exceeds(ColumnId::SeqRead, 35e9 / MIB, &vm).unwrap();
        assert!(
            why.contains("PCIe 5.0 x4") && why.contains("cache"),
            "{why}"
        );
        assert!(exceeds(ColumnId::SeqRead, 2000.0, &vm).is_none());
        let ebs = ceiling(&storage(StorageClass::Ebs, vec![])).unwrap();
        assert!(exceeds(ColumnId::SeqRead, 400.0, &ebs).is_none());
        assert!(exceeds(ColumnId::SeqRead, 5000.0, &ebs).is_some());
        assert!(ceiling(&storage(StorageClass::Tmpfs, vec![])).is_none());
        // Storage that does not say its class still cannot beat every device there is: the
        // issue's 31-38 GB/s runners are marked even without a class; 2 GB/s is not.
        let unknown = ceiling(&storage(StorageClass::Unknown, vec![])).unwrap();
        assert!(exceeds(ColumnId::SeqRead, 35e9 / MIB, &unknown).is_some());
        assert!(exceeds(ColumnId::SeqRead, 2000.0, &unknown).is_none());
        // EBS at io2 Block Express's documented 4,000 MiB/s is a disk, not a cache.
        assert!(exceeds(ColumnId::SeqRead, 4000.0, &ebs).is_none());
    }

    #[test]
    fn device_count_and_the_kernels_link_set_the_ceiling() {
        let nvme = |name: &str, link: Option<u64>| Device {
            name: name.into(),
            transport: Some("nvme".into()),
            pcie_link_bytes_s: link,
            ..Default::default()
        };
        let md = Device {
            name: "md0".into(),
            transport: Some("md".into()),
            members: vec!["nvme0n1".into(), "nvme1n1".into()],
            ..Default::default()
        };
        let two = ceiling(&storage(
            StorageClass::LocalNvme,
            vec![md.clone(), nvme("nvme0n1", None), nvme("nvme1n1", None)],
        ))
        .unwrap();
        assert!((two.bytes_s - 2.0 * PCIE5_X4_BYTES_S).abs() < 1.0);
        assert!(two.basis.starts_with("2 x "), "{}", two.basis);
        // A PCIe 3.0 x4 drive carries 3.94 GB/s: 5,000 MiB/s from it is a cache's.
        let link = pcie_link_bytes_s("8.0 GT/s PCIe", "4").unwrap();
        assert_eq!(link, 3_938_461_538);
        let one = ceiling(&storage(
            StorageClass::LocalNvme,
            vec![nvme("nvme0n1", Some(link))],
        ))
        .unwrap();
        assert!(exceeds(ColumnId::SeqRead, 5000.0, &one).is_some());
        assert!(exceeds(ColumnId::SeqRead, 3500.0, &one).is_none());
        assert_eq!(pcie_link_bytes_s("2.5 GT/s PCIe", "1"), Some(250_000_000));
        assert_eq!(pcie_link_bytes_s("Unknown", "4"), None);
        // In a VM the emulated controller's link says nothing: a vm-disk keeps its class row
        // even when its device reports 2.5 GT/s x1.
        let emulated = ceiling(&storage(
            StorageClass::VmDisk,
            vec![nvme("nvme0n1", Some(250_000_000))],
        ))
        .unwrap();
        assert!(exceeds(ColumnId::SeqRead, 2000.0, &emulated).is_none());
    }

    #[test]
    fn latency_columns_have_a_floor_per_operation() {
        let vm = ceiling(&storage(StorageClass::VmDisk, vec![])).unwrap();
        assert!(exceeds(ColumnId::Qd1Read, 400e3, &vm).is_some());
        assert!(exceeds(ColumnId::Qd1Read, 15e3, &vm).is_none());
        assert!(exceeds(ColumnId::SyncWrite, 250e3, &vm).is_some());
        assert!(exceeds(ColumnId::SyncWrite, 6e3, &vm).is_none());
    }

    #[test]
    fn our_own_records_carry_the_mark_except_on_tmpfs() {
        let record = |class: &str| -> Record {
            let test = |id: &str, rw: &str, mib_s: f64| {
                serde_json::json!({
                    "id": id,
                    "job": { "rw": rw, "bs": 1048576, "iodepth": 32, "numjobs": 1,
                             "size": 1073741824u64, "direct": true, "sync": "none",
                             "rwmixread": null },
                    "engine": { "used": "io_uring", "fallback": null, "direct": true },
                    "elapsed_s": 5.0,
                    "read": if rw == "read" { serde_json::json!({ "ios": 1, "bytes": 1,
                        "iops": mib_s, "mib_s": mib_s, "lat_ns": null, "hist": null }) }
                        else { serde_json::Value::Null },
                    "write": if rw == "write" { serde_json::json!({ "ios": 1, "bytes": 1,
                        "iops": mib_s, "mib_s": mib_s, "lat_ns": null, "hist": null }) }
                        else { serde_json::Value::Null },
                    "cpu": { "user_s": 0.0, "sys_s": 0.0 }
                })
            };
            serde_json::from_value(serde_json::json!({
                "schema": crate::SCHEMA, "id": "x", "source": "measured",
                "started_at": "2026-12-01T00:00:00Z", "finished_at": "2026-12-01T00:00:00Z",
                "tool": { "name": "cargo-diskbench", "version": "0" },
                "runner": { "label": "r", "provider": null, "arch": "x64", "vcpus": 2,
                            "memory_gib": 4.0, "cpu_model": "", "kernel": "", "os": "" },
                "storage": { "path": "/", "fstype": "ext4", "mount_source": "/dev/vda",
                             "mount_options": "", "class": class },
                "settings": { "suite": "standard", "runtime_s": 5.0, "ramp_s": 2.0,
                              "size": 1073741824u64, "engine": "auto" },
                "tests": [test("seq-read", "read", 30_000.0), test("seq-write", "write", 900.0)]
            }))
            .unwrap()
        };
        let mut vm = record("vm-disk");
        mark_record(&mut vm);
        assert!(
            vm.tests[0]
                .cache_suspect
                .as_deref()
                .unwrap()
                .contains("cache")
        );
        assert_eq!(vm.tests[1].cache_suspect, None);
        let json = serde_json::to_string(&vm).unwrap();
        assert!(json.contains("\"cache_suspect\""));
        let mut ram = record("tmpfs");
        mark_record(&mut ram);
        assert!(ram.tests.iter().all(|t| t.cache_suspect.is_none()));
    }
}

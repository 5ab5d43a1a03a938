//! The storage class: decided from what the filesystem and its disks are, never from measured
//! figures. Two ordered rule tables (first match wins), each match recorded as evidence.
//! To teach the tool a new kind of disk, add a row.

use super::blockdev::DiskFacts;
use crate::record::StorageClass;

/// A rule over the filesystem type of the filesystem that takes the writes.
pub struct FsRule {
    pub fstypes: &'static [&'static str],
    pub class: StorageClass,
    pub why: &'static str,
}

pub static FS_RULES: &[FsRule] = &[
    FsRule {
        fstypes: &["tmpfs", "ramfs"],
        class: StorageClass::Tmpfs,
        why: "memory-backed filesystem",
    },
    FsRule {
        fstypes: &[
            "nfs",
            "nfs4",
            "cifs",
            "smb3",
            "ceph",
            "glusterfs",
            "fuse.glusterfs",
            "fuse.sshfs",
            "lustre",
            "gpfs",
            "fuse.s3fs",
            "fuse.mountpoint-s3",
        ],
        class: StorageClass::NetworkDisk,
        why: "network filesystem",
    },
    FsRule {
        fstypes: &["virtiofs", "9p", "vboxsf", "fuse.vmhgfs-fuse"],
        class: StorageClass::VmDisk,
        why: "a host directory shared into the VM",
    },
];

/// A rule over one disk at the bottom of the device chain.
pub struct DiskRule {
    pub name: &'static str,
    pub class: StorageClass,
    /// `Some(what matched)` when the rule applies.
    pub test: fn(&DiskFacts) -> Option<String>,
}

fn model(d: &DiskFacts) -> &str {
    d.device.model.as_deref().unwrap_or("")
}
fn vendor(d: &DiskFacts) -> &str {
    d.device.vendor.as_deref().unwrap_or("")
}
fn transport(d: &DiskFacts) -> &str {
    d.device.transport.as_deref().unwrap_or("")
}
fn model_is(d: &DiskFacts, want: &str) -> Option<String> {
    model(d)
        .eq_ignore_ascii_case(want)
        .then(|| format!("model = {}", model(d)))
}
fn model_starts(d: &DiskFacts, want: &str) -> Option<String> {
    model(d)
        .to_ascii_lowercase()
        .starts_with(&want.to_ascii_lowercase())
        .then(|| format!("model = {}", model(d)))
}
fn transport_in(d: &DiskFacts, set: &[&str]) -> Option<String> {
    set.contains(&transport(d))
        .then(|| format!("transport = {}", transport(d)))
}

pub static DISK_RULES: &[DiskRule] = &[
    DiskRule {
        name: "compressed RAM block device",
        class: StorageClass::Tmpfs,
        test: |d| transport_in(d, &["zram", "brd"]),
    },
    DiskRule {
        name: "block device reached over the network",
        class: StorageClass::NetworkDisk,
        test: |d| {
            transport_in(
                d,
                &["iscsi", "rbd", "nbd", "nvme-tcp", "nvme-rdma", "nvme-fc"],
            )
        },
    },
    DiskRule {
        name: "EC2 instance store",
        class: StorageClass::LocalNvme,
        test: |d| model_is(d, "Amazon EC2 NVMe Instance Storage"),
    },
    DiskRule {
        name: "Amazon EBS volume",
        class: StorageClass::Ebs,
        test: |d| model_is(d, "Amazon Elastic Block Store"),
    },
    DiskRule {
        name: "Azure remote disk over NVMe",
        class: StorageClass::NetworkDisk,
        test: |d| model_starts(d, "MSFT NVMe Accelerator"),
    },
    DiskRule {
        name: "GCP persistent disk over NVMe",
        class: StorageClass::NetworkDisk,
        test: |d| model_is(d, "nvme_card-pd"),
    },
    DiskRule {
        name: "GCP persistent disk",
        class: StorageClass::NetworkDisk,
        test: |d| model_is(d, "PersistentDisk"),
    },
    DiskRule {
        name: "Azure resource (temporary) disk, local to the host",
        class: StorageClass::VmDisk,
        test: |d| {
            let hit = vendor(d).eq_ignore_ascii_case("Msft") && d.azure_role == Some("resource");
            hit.then(|| {
                format!(
                    "vendor = Msft, model = {}, Azure VMBus address of the resource disk",
                    model(d)
                )
            })
        },
    },
    DiskRule {
        name: "Azure managed disk",
        class: StorageClass::NetworkDisk,
        test: |d| {
            let hit = vendor(d).eq_ignore_ascii_case("Msft")
                && model(d).eq_ignore_ascii_case("Virtual Disk");
            hit.then(|| {
                let role = match d.azure_role {
                    Some("os") => ", Azure VMBus address of the OS disk",
                    _ => "",
                };
                format!("vendor = Msft, model = {}{role}", model(d))
            })
        },
    },
    DiskRule {
        name: "disk emulated by a hypervisor",
        class: StorageClass::VmDisk,
        test: |d| {
            let m = model(d).to_ascii_lowercase();
            let v = vendor(d).to_ascii_lowercase();
            let hit = [
                "qemu",
                "vbox",
                "virtual disk",
                "virtual_disk",
                "ephemeraldisk",
            ]
            .iter()
            .any(|k| m.contains(k))
                || ["vmware", "qemu", "vbox"].iter().any(|k| v.contains(k));
            hit.then(|| format!("vendor = {}, model = {}", vendor(d), model(d)))
        },
    },
    DiskRule {
        name: "NVMe on the PCIe bus, not a known network disk",
        class: StorageClass::LocalNvme,
        test: |d| transport_in(d, &["nvme"]),
    },
    DiskRule {
        name: "paravirtual disk of unknown backing",
        class: StorageClass::VmDisk,
        test: |d| transport_in(d, &["virtio", "virtio-scsi", "xen"]),
    },
];

/// The class of one filesystem type, if a rule knows it.
pub fn classify_fs(fstype: &str) -> Option<(StorageClass, String)> {
    FS_RULES
        .iter()
        .find(|r| r.fstypes.contains(&fstype))
        .map(|r| (r.class, format!("fstype = {fstype}: {}", r.why)))
}

/// The class of one disk and the evidence line.
pub fn classify_disk(d: &DiskFacts) -> (StorageClass, String) {
    for rule in DISK_RULES {
        if let Some(what) = (rule.test)(d) {
            return (
                rule.class,
                format!("{}: {what} ({})", d.device.name, rule.name),
            );
        }
    }
    let facts = format!(
        "transport = {}, vendor = {}, model = {}",
        d.device.transport.as_deref().unwrap_or("?"),
        d.device.vendor.as_deref().unwrap_or("?"),
        d.device.model.as_deref().unwrap_or("?"),
    );
    (
        StorageClass::Unknown,
        format!("{}: no rule matches {facts}", d.device.name),
    )
}

/// Slowest first: a volume spread over several kinds of disk is as slow as its slowest.
fn slowness(c: StorageClass) -> u8 {
    match c {
        StorageClass::Unknown => 5,
        StorageClass::NetworkDisk => 4,
        StorageClass::Ebs => 3,
        StorageClass::VmDisk => 2,
        StorageClass::LocalNvme => 1,
        StorageClass::Tmpfs => 0,
    }
}

/// One class for several disks (RAID, LVM across disks): their common class, or the slowest
/// one when they differ, saying so.
pub fn combine(per_disk: &[(StorageClass, String)], via: &str) -> (StorageClass, Vec<String>) {
    let mut evidence: Vec<String> = per_disk.iter().map(|(_, e)| e.clone()).collect();
    let Some(slowest) = per_disk
        .iter()
        .map(|(c, _)| *c)
        .max_by_key(|c| slowness(*c))
    else {
        return (StorageClass::Unknown, evidence);
    };
    if per_disk.len() > 1 {
        let all_same = per_disk.iter().all(|(c, _)| *c == slowest);
        let summary = if all_same {
            format!("{via} over {} disks, all {slowest}", per_disk.len())
        } else {
            let kinds: Vec<&str> = per_disk.iter().map(|(c, _)| c.as_str()).collect();
            format!(
                "{via} over disks of mixed classes ({}): reported as the slowest, {slowest}",
                kinds.join(", ")
            )
        };
        evidence.insert(0, summary);
    }
    (slowest, evidence)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::Device;

    fn disk(transport: &str, vendor: &str, model: &str) -> DiskFacts {
        DiskFacts {
            device: Device {
                name: "x".into(),
                transport: Some(transport.into()),
                vendor: (!vendor.is_empty()).then(|| vendor.into()),
                model: (!model.is_empty()).then(|| model.into()),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    #[test]
    fn known_models_win_over_the_bus() {
        let cases = [
            (
                disk("nvme", "", "Amazon EC2 NVMe Instance Storage"),
                StorageClass::LocalNvme,
            ),
            (
                disk("nvme", "", "Amazon Elastic Block Store"),
                StorageClass::Ebs,
            ),
            (
                disk("nvme", "", "MSFT NVMe Accelerator v1.0"),
                StorageClass::NetworkDisk,
            ),
            (disk("nvme", "", "nvme_card-pd"), StorageClass::NetworkDisk),
            (disk("nvme", "", "nvme_card"), StorageClass::LocalNvme),
            (
                disk("virtio-scsi", "Google", "PersistentDisk"),
                StorageClass::NetworkDisk,
            ),
            (
                disk("scsi", "Msft", "Virtual Disk"),
                StorageClass::NetworkDisk,
            ),
            (disk("scsi", "VMware", "Virtual disk"), StorageClass::VmDisk),
            (disk("nvme", "", "QEMU NVMe Ctrl"), StorageClass::VmDisk),
            (disk("nvme-tcp", "", "Linux"), StorageClass::NetworkDisk),
            (disk("virtio", "0x1af4", ""), StorageClass::VmDisk),
            (disk("zram", "", ""), StorageClass::Tmpfs),
            (disk("ata", "ATA", "Samsung SSD 870"), StorageClass::Unknown),
        ];
        for (d, want) in cases {
            let (got, why) = classify_disk(&d);
            assert_eq!(got, want, "{why}");
        }
    }

    #[test]
    fn mixed_members_report_the_slowest_and_say_so() {
        let per = [
            (StorageClass::LocalNvme, "a".to_string()),
            (StorageClass::Ebs, "b".to_string()),
        ];
        let (c, ev) = combine(&per, "md0 (raid0)");
        assert_eq!(c, StorageClass::Ebs);
        assert!(ev[0].contains("mixed classes (local-nvme, ebs)"), "{ev:?}");
    }
}

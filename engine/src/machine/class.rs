//! The storage class: decided from what the filesystem and its disks are, never from measured
//! figures. The two ordered rule tables (first match wins) are data in the record crate
//! (`record::storage_rules`); this module applies them and records each match as evidence.

use super::blockdev::DiskFacts;
use record::StorageClass;
use record::storage_rules::{DISK_RULES, DiskRule, DiskTest, FS_RULES};

fn model(d: &DiskFacts) -> &str {
    d.device.model.as_deref().unwrap_or("")
}
fn vendor(d: &DiskFacts) -> &str {
    d.device.vendor.as_deref().unwrap_or("")
}
fn transport(d: &DiskFacts) -> &str {
    d.device.transport.as_deref().unwrap_or("")
}

/// `Some(what matched)` when the disk passes the rule's test.
pub(crate) fn check(test: &DiskTest, d: &DiskFacts) -> Option<String> {
    match test {
        DiskTest::TransportIn(set) => set
            .contains(&transport(d))
            .then(|| format!("transport = {}", transport(d))),
        DiskTest::ModelIs(want) => model(d)
            .eq_ignore_ascii_case(want)
            .then(|| format!("model = {}", model(d))),
        DiskTest::ModelStartsWith(want) => model(d)
            .to_ascii_lowercase()
            .starts_with(&want.to_ascii_lowercase())
            .then(|| format!("model = {}", model(d))),
        DiskTest::VendorModelRole {
            vendor: v,
            model: m,
            roles,
        } => {
            let hit = vendor(d).eq_ignore_ascii_case(v)
                && model(d).eq_ignore_ascii_case(m)
                && (roles.is_empty() || d.azure_role.is_some_and(|r| roles.contains(&r)));
            hit.then(|| {
                let role = match d.azure_role {
                    Some("os") => ", Azure VMBus address of the OS disk".to_string(),
                    Some(r) => format!(", Azure VMBus address of the {r} disk"),
                    None => String::new(),
                };
                format!("vendor = {}, model = {}{role}", vendor(d), model(d))
            })
        }
        DiskTest::VendorModelOnAzureWithoutRole {
            vendor: v,
            model: m,
        } => {
            let hit = vendor(d).eq_ignore_ascii_case(v)
                && model(d).eq_ignore_ascii_case(m)
                && d.on_azure
                && d.azure_role.is_none();
            hit.then(|| {
                format!(
                    "vendor = {}, model = {}, DMI says Azure (sys_vendor = Microsoft \
                         Corporation, Azure's chassis asset tag) but its VMBus address is none \
                         of Azure's OS, resource or data disk addresses",
                    vendor(d),
                    model(d)
                )
            })
        }
        DiskTest::NameContains { models, vendors } => {
            let m = model(d).to_ascii_lowercase();
            let v = vendor(d).to_ascii_lowercase();
            let hit = models.iter().any(|k| m.contains(k)) || vendors.iter().any(|k| v.contains(k));
            hit.then(|| format!("vendor = {}, model = {}", vendor(d), model(d)))
        }
    }
}

/// The class of one filesystem type, if a rule knows it.
pub(crate) fn classify_fs(fstype: &str) -> Option<(StorageClass, String)> {
    FS_RULES
        .iter()
        .find(|r| r.fstypes.contains(&fstype))
        .map(|r| (r.class, format!("fstype = {fstype}: {}", r.why)))
}

/// The class of one disk and the evidence line.
pub(crate) fn classify_disk(d: &DiskFacts) -> (StorageClass, String) {
    classify_disk_with(DISK_RULES, d)
}

/// [`classify_disk`] over any rule table (tests vary the table).
pub(crate) fn classify_disk_with(rules: &[DiskRule], d: &DiskFacts) -> (StorageClass, String) {
    for rule in rules {
        if let Some(what) = check(&rule.test, d) {
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
pub(crate) fn combine(
    per_disk: &[(StorageClass, String)],
    via: &str,
) -> (StorageClass, Vec<String>) {
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
    use record::Device;

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
            (disk("scsi", "Msft", "Virtual Disk"), StorageClass::VmDisk),
            (disk("scsi", "VMware", "Virtual disk"), StorageClass::VmDisk),
            (disk("nvme", "", "QEMU NVMe Ctrl"), StorageClass::VmDisk),
            (disk("nvme-tcp", "", "Linux"), StorageClass::NetworkDisk),
            (disk("virtio", "0x1af4", ""), StorageClass::VmDisk),
            (disk("zram", "", ""), StorageClass::Tmpfs),
            (disk("brd", "", ""), StorageClass::Tmpfs),
            (disk("ata", "ATA", "Samsung SSD 870"), StorageClass::Unknown),
        ];
        for (d, want) in cases {
            let (got, why) = classify_disk(&d);
            assert_eq!(got, want, "{why}");
        }
    }

    /// Every Hyper-V SCSI disk is a "Msft Virtual Disk" (WSL2, plain Hyper-V): only Azure's OS
    /// and data disk addresses make it a managed (network) disk.
    #[test]
    fn msft_virtual_disk_is_a_network_disk_only_at_azures_disk_addresses() {
        let mut os = disk("scsi", "Msft", "Virtual Disk");
        os.azure_role = Some("os");
        let (class, why) = classify_disk(&os);
        assert_eq!(class, StorageClass::NetworkDisk, "{why}");
        assert!(why.contains("Azure VMBus address of the OS disk"), "{why}");
        let mut data = disk("scsi", "Msft", "Virtual Disk");
        data.azure_role = Some("data");
        assert_eq!(classify_disk(&data).0, StorageClass::NetworkDisk);
        let mut resource = disk("scsi", "Msft", "Virtual Disk");
        resource.azure_role = Some("resource");
        assert_eq!(classify_disk(&resource).0, StorageClass::VmDisk);
        let (class, why) = classify_disk(&disk("scsi", "Msft", "Virtual Disk"));
        assert_eq!(class, StorageClass::VmDisk, "{why}");
        assert!(why.contains("local VHD"), "{why}");
    }

    /// On Azure (by DMI) a "Msft Virtual Disk" without a role is not a local VHD: unknown,
    /// saying why. Off Azure (WSL2, plain Hyper-V) it stays a vm-disk.
    #[test]
    fn msft_virtual_disk_on_azure_without_a_role_is_unknown() {
        let mut d = disk("scsi", "Msft", "Virtual Disk");
        d.on_azure = true;
        let (class, why) = classify_disk(&d);
        assert_eq!(class, StorageClass::Unknown, "{why}");
        assert!(why.contains("DMI says Azure"), "{why}");
        assert!(
            why.contains("role (OS, resource, data) was not found"),
            "{why}"
        );
        // A role found on Azure still decides.
        d.azure_role = Some("resource");
        assert_eq!(classify_disk(&d).0, StorageClass::VmDisk);
        d.azure_role = Some("data");
        assert_eq!(classify_disk(&d).0, StorageClass::NetworkDisk);
        // Another vendor's disk on Azure is not caught by the rule.
        let mut other = disk("scsi", "QEMU", "QEMU HARDDISK");
        other.on_azure = true;
        assert_eq!(classify_disk(&other).0, StorageClass::VmDisk);
    }

    #[test]
    fn the_nvme_accelerator_rule_says_it_may_be_an_ephemeral_os_disk() {
        let (class, why) = classify_disk(&disk("nvme", "", "MSFT NVMe Accelerator v1.0"));
        assert_eq!(class, StorageClass::NetworkDisk);
        assert!(why.contains("ephemeral OS disk"), "{why}");
    }

    #[test]
    fn a_rule_table_is_data_the_caller_can_vary() {
        let d = disk("nvme", "", "Amazon Elastic Block Store");
        assert_eq!(classify_disk_with(DISK_RULES, &d).0, StorageClass::Ebs);
        let without_ebs: Vec<&DiskRule> = DISK_RULES
            .iter()
            .filter(|r| r.class != StorageClass::Ebs)
            .collect();
        assert!(without_ebs.len() < DISK_RULES.len());
        // Without the EBS row, the disk falls through to the generic NVMe rule.
        let first = without_ebs
            .iter()
            .find_map(|r| check(&r.test, &d).map(|_| r.class));
        assert_eq!(first, Some(StorageClass::LocalNvme));
        for r in DISK_RULES {
            assert!(!r.test.describe().is_empty(), "{}", r.name);
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

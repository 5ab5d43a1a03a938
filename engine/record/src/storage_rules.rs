//! What storage is, from what it shows: the ordered rule tables that decide a storage class
//! (first match wins), and the mount options that change what a sync costs. Data, so the
//! engine applies them and the methodology page prints them from the same rows. To teach the
//! tool a new kind of disk, add a row.

use crate::StorageClass;

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
    /// What the disk must show for the rule to apply; data, so the methodology page can
    /// print it from this table.
    pub test: DiskTest,
}

/// The facts a disk rule looks at. Strings compare case-insensitively.
pub enum DiskTest {
    /// The transport (the bus the device sits on) is one of these.
    TransportIn(&'static [&'static str]),
    /// The model is exactly this.
    ModelIs(&'static str),
    /// The model starts with this.
    ModelStartsWith(&'static str),
    /// Vendor and model are exactly these, and the disk has one of these Azure roles (from
    /// its VMBus address; see `blockdev::azure_role`), or any role when `roles` is empty.
    VendorModelRole {
        vendor: &'static str,
        model: &'static str,
        roles: &'static [&'static str],
    },
    /// Vendor and model are exactly these, DMI says the machine is on Azure, and no Azure
    /// role was found for the disk.
    VendorModelOnAzureWithoutRole {
        vendor: &'static str,
        model: &'static str,
    },
    /// The model contains one of `models`, or the vendor one of `vendors`.
    NameContains {
        models: &'static [&'static str],
        vendors: &'static [&'static str],
    },
}

impl DiskTest {
    /// What the test looks for, in words (Markdown), for the methodology page.
    pub fn describe(&self) -> String {
        fn quoted(items: &[&str]) -> String {
            items
                .iter()
                .map(|i| format!("`{i}`"))
                .collect::<Vec<_>>()
                .join(", ")
        }
        match self {
            DiskTest::TransportIn(set) => format!("transport is {}", quoted(set)),
            DiskTest::ModelIs(m) => format!("model is \"{m}\""),
            DiskTest::ModelStartsWith(m) => format!("model starts with \"{m}\""),
            DiskTest::VendorModelRole {
                vendor,
                model,
                roles,
            } => {
                let mut out = format!("vendor \"{vendor}\", model \"{model}\"");
                if !roles.is_empty() {
                    let names: Vec<&str> = roles
                        .iter()
                        .map(|r| if *r == "os" { "OS" } else { r })
                        .collect();
                    out.push_str(&format!(
                        ", at the VMBus address of an Azure {} disk",
                        names.join(" or ")
                    ));
                }
                out
            }
            DiskTest::VendorModelOnAzureWithoutRole { vendor, model } => format!(
                "vendor \"{vendor}\", model \"{model}\", on a machine whose DMI says Azure, \
                 at none of Azure's OS, resource or data disk addresses"
            ),
            DiskTest::NameContains { models, vendors } => format!(
                "model contains {}, or vendor contains {}",
                quoted(models),
                quoted(vendors)
            ),
        }
    }
}

pub static DISK_RULES: &[DiskRule] = &[
    DiskRule {
        // zram compresses pages in memory, brd keeps them as they are: both are memory.
        name: "RAM-backed block device (zram, brd)",
        class: StorageClass::Tmpfs,
        test: DiskTest::TransportIn(&["zram", "brd"]),
    },
    DiskRule {
        name: "block device reached over the network",
        class: StorageClass::NetworkDisk,
        test: DiskTest::TransportIn(&["iscsi", "rbd", "nbd", "nvme-tcp", "nvme-rdma", "nvme-fc"]),
    },
    DiskRule {
        name: "EC2 instance store",
        class: StorageClass::LocalNvme,
        test: DiskTest::ModelIs("Amazon EC2 NVMe Instance Storage"),
    },
    DiskRule {
        name: "Amazon EBS volume",
        class: StorageClass::Ebs,
        test: DiskTest::ModelIs("Amazon Elastic Block Store"),
    },
    DiskRule {
        // The accelerator carries Azure's remote (managed) disks and also ephemeral OS disks
        // placed on local NVMe; the model does not tell them apart, so the slower is assumed.
        name: "Azure disk behind the NVMe accelerator: a managed disk, or an ephemeral OS disk on local storage (not told apart; taken as the managed disk)",
        class: StorageClass::NetworkDisk,
        test: DiskTest::ModelStartsWith("MSFT NVMe Accelerator"),
    },
    DiskRule {
        name: "GCP persistent disk over NVMe",
        class: StorageClass::NetworkDisk,
        test: DiskTest::ModelIs("nvme_card-pd"),
    },
    DiskRule {
        name: "GCP persistent disk",
        class: StorageClass::NetworkDisk,
        test: DiskTest::ModelIs("PersistentDisk"),
    },
    DiskRule {
        name: "Azure resource (temporary) disk, local to the host",
        class: StorageClass::VmDisk,
        test: DiskTest::VendorModelRole {
            vendor: "Msft",
            model: "Virtual Disk",
            roles: &["resource"],
        },
    },
    DiskRule {
        // Every Hyper-V SCSI disk is a "Msft Virtual Disk" (WSL2 and plain Hyper-V too, where
        // it is a local VHD); only Azure's OS and data disk addresses say it is Azure's. At the
        // OS disk's address an ephemeral OS disk (on the host's local storage) looks the same.
        name: "Azure managed disk, or an ephemeral OS disk on the host's local storage (a Hyper-V SCSI disk at Azure's OS or data disk address; not told apart, taken as the managed disk)",
        class: StorageClass::NetworkDisk,
        test: DiskTest::VendorModelRole {
            vendor: "Msft",
            model: "Virtual Disk",
            roles: &["os", "data"],
        },
    },
    DiskRule {
        // On Azure a Hyper-V SCSI disk is a managed disk, the resource disk or something
        // newer; without its role the class cannot be told, and a local VHD is the one thing
        // it is not.
        name: "Hyper-V SCSI disk on Azure whose role (OS, resource, data) was not found: class not known",
        class: StorageClass::Unknown,
        test: DiskTest::VendorModelOnAzureWithoutRole {
            vendor: "Msft",
            model: "Virtual Disk",
        },
    },
    DiskRule {
        name: "any other Hyper-V SCSI disk: off Azure (no Azure DMI), so a local VHD (WSL2, Hyper-V) as far as can be seen",
        class: StorageClass::VmDisk,
        test: DiskTest::VendorModelRole {
            vendor: "Msft",
            model: "Virtual Disk",
            roles: &[],
        },
    },
    DiskRule {
        name: "disk emulated by a hypervisor",
        class: StorageClass::VmDisk,
        test: DiskTest::NameContains {
            models: &[
                "qemu",
                "vbox",
                "virtual disk",
                "virtual_disk",
                "ephemeraldisk",
            ],
            vendors: &["vmware", "qemu", "vbox"],
        },
    },
    DiskRule {
        name: "NVMe on the PCIe bus, not a known network disk",
        class: StorageClass::LocalNvme,
        test: DiskTest::TransportIn(&["nvme"]),
    },
    DiskRule {
        name: "paravirtual disk of unknown backing",
        class: StorageClass::VmDisk,
        test: DiskTest::TransportIn(&["virtio", "virtio-scsi", "xen"]),
    },
];

/// Mount options that change what an fdatasync costs (or whether it makes data durable):
/// (option, why). The record's `fsync_flags`, the runner pages and the methodology page all
/// come from this table.
pub const FSYNC_OPTIONS: &[(&str, &str)] = &[
    (
        "nobarrier",
        "no cache flush: fdatasync returns before data is on stable media",
    ),
    (
        "barrier=0",
        "no cache flush: fdatasync returns before data is on stable media",
    ),
    (
        "data=writeback",
        "ext4 does not write data before the journal commit: a sync waits for less; the synced file is still durable",
    ),
    (
        "journal_async_commit",
        "ext4 writes the journal's commit block without waiting for its descriptor blocks",
    ),
    ("volatile", "overlayfs ignores sync calls"),
];

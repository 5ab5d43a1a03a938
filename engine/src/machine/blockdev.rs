//! The block devices under a filesystem: from `MAJ:MIN` through partitions, device-mapper,
//! md RAID and loop devices down to the disks, read from sysfs.

use std::path::Path;

use super::sysview::{SysView, join_lexically};
use record::Device;

/// A disk at the bottom of a chain, with the facts the class rules look at.
#[derive(Clone, Debug, Default)]
pub(crate) struct DiskFacts {
    pub device: Device,
    /// On Hyper-V (Azure): "os" or "resource" when the VMBus address says which disk it is.
    pub azure_role: Option<&'static str>,
    /// DMI says this machine is an Azure VM (see [`super::runner::dmi_says_azure`]).
    pub on_azure: bool,
}

/// Everything found below one `MAJ:MIN`.
#[derive(Clone, Debug, Default)]
pub(crate) struct Chain {
    /// Top first, each device once.
    pub devices: Vec<Device>,
    pub disks: Vec<DiskFacts>,
    /// Loop devices and the file behind each (the caller follows the file).
    pub loops: Vec<(String, Option<String>)>,
    pub notes: Vec<String>,
}

/// Walk down from the block device `major:minor`.
pub(crate) fn chain(view: &SysView, major: u32, minor: u32) -> Chain {
    let mut chain = Chain::default();
    let link = format!("/sys/dev/block/{major}:{minor}");
    match view.canonical(&link) {
        Ok(dir) => visit(view, &dir, &mut chain, 0),
        Err(why) => chain
            .notes
            .push(format!("block device {major}:{minor}: {why}")),
    }
    drop_defaults_that_are_not_facts(&mut chain);
    chain
}

/// Transports whose `queue/rotational` is the kernel's default rather than a fact about the
/// disk: virtio-blk never learns from the host whether the backing spins (a 2.5 GB/s virtio
/// disk reads "1"), nor does xen-blkfront.
const ROTATIONAL_UNKNOWN: [&str; 2] = ["virtio", "xen"];

/// Clear what sysfs reports but does not know: rotational on [`ROTATIONAL_UNKNOWN`]
/// transports (and their partitions), and a vendor that is a bare PCI id (virtio-blk's
/// `device/vendor` is `0x1af4`, the PCI vendor id of virtio, not a maker's name).
fn drop_defaults_that_are_not_facts(chain: &mut Chain) {
    let unknown: Vec<String> = chain
        .devices
        .iter()
        .filter(|d| {
            d.transport
                .as_deref()
                .is_some_and(|t| ROTATIONAL_UNKNOWN.contains(&t))
        })
        .map(|d| d.name.clone())
        .collect();
    let devices = chain
        .devices
        .iter_mut()
        .chain(chain.disks.iter_mut().map(|d| &mut d.device));
    for d in devices {
        let partition_of_unknown = d.transport.as_deref() == Some("partition")
            && d.members.iter().any(|m| unknown.contains(m));
        if unknown.contains(&d.name) || partition_of_unknown {
            d.rotational = None;
        }
        if d.vendor.as_deref().is_some_and(is_pci_id) {
            d.vendor = None;
        }
        if d.model.as_deref().is_some_and(is_pci_id) {
            d.model = None;
        }
    }
}

/// "0x1af4": a numeric id, not a name.
fn is_pci_id(s: &str) -> bool {
    s.strip_prefix("0x")
        .is_some_and(|h| !h.is_empty() && h.chars().all(|c| c.is_ascii_hexdigit()))
}

/// The `MAJ:MIN` of a block device by kernel name (for filesystems that report an anonymous
/// device number, like btrfs), from `/sys/class/block/NAME/dev`.
pub(crate) fn dev_of_name(view: &SysView, name: &str) -> Option<(u32, u32)> {
    let dev = view.attr(&format!("/sys/class/block/{name}/dev"))?;
    let (a, b) = dev.split_once(':')?;
    Some((a.parse().ok()?, b.parse().ok()?))
}

/// The kernel name of a device-mapper device by its `/dev/mapper/NAME` name.
pub(crate) fn dm_by_mapper_name(view: &SysView, mapper: &str) -> Option<String> {
    view.list("/sys/block")
        .into_iter()
        .filter(|n| n.starts_with("dm-"))
        .find(|n| view.attr(&format!("/sys/block/{n}/dm/name")).as_deref() == Some(mapper))
}

const MAX_DEPTH: usize = 8;

fn visit(view: &SysView, dir: &str, chain: &mut Chain, depth: usize) {
    let name = dir.rsplit('/').next().unwrap_or(dir).to_string();
    if depth > MAX_DEPTH || chain.devices.iter().any(|d| d.name == name) {
        return;
    }
    let mut device = read_device(view, dir, &name);
    let slaves = slaves(view, dir, chain);
    if view.exists(&format!("{dir}/partition")) {
        let parent = parent_dir(dir);
        let parent_name = parent.rsplit('/').next().unwrap_or("").to_string();
        device.transport = Some("partition".into());
        device.members = vec![parent_name];
        chain.devices.push(device);
        visit(view, &parent, chain, depth + 1);
        return;
    }
    if view.exists(&format!("{dir}/md")) {
        device.transport = Some("md".into());
        device.raid_level = view.attr(&format!("{dir}/md/level"));
    } else if view.exists(&format!("{dir}/dm")) {
        device.transport = Some("dm".into());
        if let Some(dm_name) = view.attr(&format!("{dir}/dm/name")) {
            chain
                .notes
                .push(format!("{name} is device-mapper volume {dm_name}"));
        }
    } else if view.exists(&format!("{dir}/loop")) || name.starts_with("loop") {
        device.transport = Some("loop".into());
        let backing = view.attr(&format!("{dir}/loop/backing_file"));
        if backing.is_none() {
            chain
                .notes
                .push(format!("{name}: cannot read its backing file"));
        }
        chain.loops.push((name.clone(), backing));
        chain.devices.push(device);
        return;
    }
    if slaves.is_empty() {
        if device.transport.is_none() {
            device.transport = transport(view, dir, &name);
        }
        let is_stack = matches!(device.transport.as_deref(), Some("md" | "dm"));
        chain.devices.push(device.clone());
        if is_stack {
            chain
                .notes
                .push(format!("{name}: no member devices listed in {dir}/slaves"));
        } else {
            chain.disks.push(DiskFacts {
                azure_role: azure_role(view, dir),
                on_azure: super::runner::dmi_says_azure(view),
                device,
            });
        }
        return;
    }
    device.members = slaves.iter().map(|(n, _)| n.clone()).collect();
    if device.transport.is_none() {
        device.transport = transport(view, dir, &name);
    }
    chain.devices.push(device);
    for (_, slave_dir) in slaves {
        visit(view, &slave_dir, chain, depth + 1);
    }
}

/// Entries of `DIR/slaves/` with their resolved sysfs directories.
fn slaves(view: &SysView, dir: &str, chain: &mut Chain) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for slave in view.list(&format!("{dir}/slaves")) {
        let link = format!("{dir}/slaves/{slave}");
        match view
            .canonical(&link)
            .or_else(|_| view.canonical(&format!("/sys/class/block/{slave}")))
        {
            Ok(d) => out.push((slave, d)),
            Err(why) => chain.notes.push(format!("member {slave} of {dir}: {why}")),
        }
    }
    out
}

fn parent_dir(dir: &str) -> String {
    join_lexically(dir, Path::new(".."))
}

fn read_device(view: &SysView, dir: &str, name: &str) -> Device {
    let num = |rel: &str| {
        view.attr(&format!("{dir}/{rel}"))
            .and_then(|v| v.parse::<u64>().ok())
    };
    Device {
        name: name.to_string(),
        model: view.attr(&format!("{dir}/device/model")),
        vendor: view.attr(&format!("{dir}/device/vendor")),
        // sysfs counts 512-byte sectors whatever the device's block size.
        size_bytes: num("size").map(|s| s * 512),
        rotational: num("queue/rotational").map(|r| r == 1),
        transport: None,
        scheduler: view
            .attr(&format!("{dir}/queue/scheduler"))
            .map(|s| active_scheduler(&s)),
        nr_requests: num("queue/nr_requests"),
        logical_block_size: num("queue/logical_block_size"),
        physical_block_size: num("queue/physical_block_size"),
        raid_level: None,
        members: Vec::new(),
        pcie_link_bytes_s: pcie_link(view, dir),
    }
}

/// An NVMe disk's PCIe link, from the PCI function its controller sits on.
fn pcie_link(view: &SysView, dir: &str) -> Option<u64> {
    let pci = format!("{dir}/device/device");
    record::ceiling::pcie_link_bytes_s(
        &view.attr(&format!("{pci}/current_link_speed"))?,
        &view.attr(&format!("{pci}/current_link_width"))?,
    )
}

/// `none [mq-deadline] kyber` -> `mq-deadline`.
fn active_scheduler(s: &str) -> String {
    s.split_whitespace()
        .find_map(|w| w.strip_prefix('[')?.strip_suffix(']'))
        .unwrap_or(s.trim())
        .to_string()
}

/// How a whole disk is attached, from its name, the bus its `device` sits on and the
/// sysfs path.
fn transport(view: &SysView, dir: &str, name: &str) -> Option<String> {
    for (prefix, t) in [
        ("zram", "zram"),
        ("ram", "brd"),
        ("rbd", "rbd"),
        ("nbd", "nbd"),
    ] {
        if name.starts_with(prefix) {
            return Some(t.into());
        }
    }
    // NVMe controllers say how they are reached: pcie, tcp, rdma, fc, loop. With native
    // multipath the namespace hangs off an nvme-subsystem that links to its controllers.
    let controller_transport = view.attr(&format!("{dir}/device/transport")).or_else(|| {
        view.list(&format!("{dir}/device"))
            .iter()
            .filter(|n| {
                n.strip_prefix("nvme")
                    .is_some_and(|k| k.parse::<u32>().is_ok())
            })
            .find_map(|c| view.attr(&format!("{dir}/device/{c}/transport")))
    });
    if let Some(t) = controller_transport {
        return Some(match t.as_str() {
            "pcie" => "nvme".into(),
            other => format!("nvme-{other}"),
        });
    }
    let bus = view
        .read_link(&format!("{dir}/device/subsystem"))
        .and_then(|p| Some(p.file_name()?.to_string_lossy().into_owned()));
    let path_has = |s: &str| dir.contains(s);
    let t = match bus.as_deref() {
        Some("nvme") | Some("nvme-subsystem") => "nvme",
        Some("virtio") => "virtio",
        Some("xen") => "xen",
        Some("mmc") => "mmc",
        Some("scsi") => {
            if path_has("/session") {
                "iscsi"
            } else if path_has("/ata") {
                "ata"
            } else if path_has("/usb") {
                "usb"
            } else if path_has("/virtio") {
                "virtio-scsi"
            } else {
                "scsi"
            }
        }
        _ if path_has("/nvme") => "nvme",
        _ if path_has("/virtio") => "virtio",
        _ if path_has("/vbd-") || path_has("/xen/") => "xen",
        _ => return None,
    };
    Some(t.into())
}

/// Azure's disks, told apart the way Azure's own udev rules do: by the VMBus device id
/// (`{00000000-0000-...}` OS disk, `{00000000-0001-...}` resource disk) or, on generation-2
/// VMs, by the LUN on the first SCSI controller (0 = OS, 1 = resource); disks on the data-disk
/// controllers are `data`.
fn azure_role(view: &SysView, dir: &str) -> Option<&'static str> {
    const GEN2_SCSI0: &str = "{f8b3781a-1e82-4818-a1c3-63d806ec15bb}";
    let mut cur = dir.to_string();
    while cur.len() > "/sys/devices".len() {
        if let Some(id) = view.attr(&format!("{cur}/device_id")) {
            let id = id.to_ascii_lowercase();
            let tail = id.get(1..15).unwrap_or("");
            if tail == "00000000-0000-" {
                return Some("os");
            }
            if tail == "00000000-0001-" {
                return Some("resource");
            }
            // The data-disk SCSI controllers of Azure's own udev rules
            // (Azure/azure-vm-utils udev/80-azure-disk.rules).
            const DATA_SCSI: [&str; 3] = [
                "{f8b3781b-1e82-4818-a1c3-63d806ec15bb}",
                "{f8b3781c-1e82-4818-a1c3-63d806ec15bb}",
                "{f8b3781d-1e82-4818-a1c3-63d806ec15bb}",
            ];
            if DATA_SCSI.contains(&id.as_str()) {
                return Some("data");
            }
            if id == GEN2_SCSI0 {
                let lun = dir
                    .split('/')
                    .find(|c| {
                        c.split(':').count() == 4 && c.split(':').all(|n| n.parse::<u32>().is_ok())
                    })
                    .and_then(|c| c.rsplit(':').next());
                return match lun {
                    Some("0") => Some("os"),
                    Some("1") => Some("resource"),
                    _ => None,
                };
            }
            return None;
        }
        cur = parent_dir(&cur);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn multipath_namespace_takes_its_controllers_transport() {
        let root = tempfile::tempdir().unwrap();
        let r = root.path();
        let sub = r.join("sys/devices/virtual/nvme-subsystem/nvme-subsys0");
        let ctrl = r.join("sys/devices/virtual/nvme-fabrics/ctl/nvme0");
        std::fs::create_dir_all(sub.join("nvme0n1")).unwrap();
        std::fs::create_dir_all(&ctrl).unwrap();
        std::fs::create_dir_all(r.join("sys/dev/block")).unwrap();
        std::fs::write(ctrl.join("transport"), "tcp\n").unwrap();
        std::fs::write(sub.join("model"), "Linux\n").unwrap();
        symlink("../../nvme-fabrics/ctl/nvme0", sub.join("nvme0")).unwrap();
        symlink("../../nvme-subsys0", sub.join("nvme0n1/device")).unwrap();
        symlink(
            "../../devices/virtual/nvme-subsystem/nvme-subsys0/nvme0n1",
            r.join("sys/dev/block/259:0"),
        )
        .unwrap();
        let c = chain(&SysView::fixture(r), 259, 0);
        assert_eq!(c.disks.len(), 1, "{:?}", c.notes);
        assert_eq!(c.disks[0].device.transport.as_deref(), Some("nvme-tcp"));
        assert_eq!(c.disks[0].device.model.as_deref(), Some("Linux"));
    }

    /// A virtio-blk disk: `device/vendor` is the PCI id 0x1af4 and `queue/rotational` the
    /// kernel's default 1; neither is a fact about the disk, so neither is recorded.
    #[test]
    fn virtio_vendor_id_and_default_rotational_are_not_recorded() {
        let root = tempfile::tempdir().unwrap();
        let r = root.path();
        let disk = r.join("sys/devices/pci0000:00/0000:00:05.0/virtio2/block/vda");
        std::fs::create_dir_all(disk.join("vda1")).unwrap();
        std::fs::write(disk.join("vda1/partition"), "1\n").unwrap();
        std::fs::create_dir_all(disk.join("queue")).unwrap();
        std::fs::create_dir_all(disk.join("vda1/queue")).unwrap();
        std::fs::write(disk.join("queue/rotational"), "1\n").unwrap();
        std::fs::write(disk.join("vda1/queue/rotational"), "1\n").unwrap();
        let dev = r.join("sys/devices/pci0000:00/0000:00:05.0/virtio2");
        std::fs::write(dev.join("vendor"), "0x1af4\n").unwrap();
        std::fs::create_dir_all(r.join("sys/bus/virtio")).unwrap();
        symlink("../../../../bus/virtio", dev.join("subsystem")).unwrap();
        symlink("../../../virtio2", disk.join("device")).unwrap();
        std::fs::create_dir_all(r.join("sys/dev/block")).unwrap();
        symlink(
            "../../devices/pci0000:00/0000:00:05.0/virtio2/block/vda/vda1",
            r.join("sys/dev/block/253:1"),
        )
        .unwrap();
        let c = chain(&SysView::fixture(r), 253, 1);
        assert_eq!(c.disks.len(), 1, "{:?}", c.notes);
        let vda = &c.disks[0].device;
        assert_eq!(vda.transport.as_deref(), Some("virtio"));
        assert_eq!(vda.vendor, None);
        assert_eq!(vda.rotational, None);
        assert_eq!(c.devices[0].name, "vda1");
        assert_eq!(c.devices[0].rotational, None);
        assert!(is_pci_id("0x1af4") && !is_pci_id("ATA") && !is_pci_id("0x"));
    }

    #[test]
    fn scheduler_in_brackets_is_the_active_one() {
        assert_eq!(
            active_scheduler("none [mq-deadline] kyber bfq"),
            "mq-deadline"
        );
        assert_eq!(active_scheduler("[none] mq-deadline"), "none");
        assert_eq!(active_scheduler("none"), "none");
    }
}

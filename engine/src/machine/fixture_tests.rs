//! Detection over recorded machines (`engine/tests/fixtures/machine/*`): each case checks
//! the class, the device chain and the evidence.

use std::path::PathBuf;

use super::{SysView, detect_in};
use record::{Runner, Storage, StorageClass};

fn fixture(name: &str) -> SysView {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/machine")
        .join(name);
    assert!(dir.is_dir(), "missing fixture {}", dir.display());
    SysView::fixture(&dir)
}

fn detect(name: &str, dir: &str) -> (Runner, Storage) {
    detect_in(&fixture(name), dir, None)
}

fn chain(s: &Storage) -> Vec<&str> {
    s.devices.iter().map(|d| d.name.as_str()).collect()
}

fn has(lines: &[String], needle: &str) -> bool {
    lines.iter().any(|l| l.contains(needle))
}

#[test]
fn overlay_on_md_raid0_of_instance_store_is_local_nvme() {
    let (runner, s) = detect("ec2-raid0-overlay", "/home/runner/_work/app/app");
    assert_eq!(s.fstype, "overlay");
    let upper = s.overlay_upper.as_ref().expect("overlay upper followed");
    assert_eq!(upper.path, "/mnt/raid/overlay/upper");
    assert_eq!(
        (upper.fstype.as_str(), upper.mount_source.as_str()),
        ("ext4", "/dev/md0")
    );
    assert_eq!(chain(&s), ["md0", "nvme1n1", "nvme2n1"]);
    let md0 = s.device.as_ref().unwrap();
    assert_eq!(md0.raid_level.as_deref(), Some("raid0"));
    assert_eq!(md0.members, ["nvme1n1", "nvme2n1"]);
    assert_eq!(
        s.devices[1].model.as_deref(),
        Some("Amazon EC2 NVMe Instance Storage")
    );
    assert_eq!(s.devices[1].transport.as_deref(), Some("nvme"));
    assert_eq!(s.devices[1].rotational, Some(false));
    assert_eq!(s.devices[1].nr_requests, Some(1023));
    assert_eq!(s.class, StorageClass::LocalNvme);
    assert!(
        has(
            &s.class_evidence,
            "md0 (raid0) over 2 disks, all local-nvme"
        ),
        "{:?}",
        s.class_evidence
    );
    assert!(has(
        &s.class_evidence,
        "nvme2n1: model = Amazon EC2 NVMe Instance Storage"
    ));
    assert!(s.fsync_flags.is_empty());

    assert_eq!(runner.label, "raid-runner-7");
    assert_eq!(runner.provider.as_deref(), Some("aws"));
    assert_eq!(runner.instance_type.as_deref(), Some("c6id.4xlarge"));
    assert_eq!((runner.arch.as_str(), runner.vcpus), ("x64", 16));
    let ci = runner.ci.as_ref().unwrap();
    assert_eq!(ci.environment.as_deref(), Some("self-hosted"));
    assert_eq!(ci.run_id.as_deref(), Some("11223344556"));
    assert!(!runner.in_container);
}

#[test]
fn raid_of_mixed_disks_is_the_slowest_class_and_says_so() {
    let (_, s) = detect("ec2-raid0-overlay", "/mnt/mixed/target");
    assert_eq!(s.fstype, "xfs");
    assert_eq!(chain(&s), ["md1", "nvme3n1", "nvme4n1"]);
    assert_eq!(s.class, StorageClass::Ebs);
    assert!(
        has(&s.class_evidence, "mixed classes (local-nvme, ebs)"),
        "{:?}",
        s.class_evidence
    );
}

#[test]
fn ebs_root_mounted_nobarrier_is_flagged() {
    let (runner, s) = detect("ec2-ebs-nobarrier", "/home/ec2-user/work");
    assert_eq!(
        (s.fstype.as_str(), s.mount_source.as_str()),
        ("ext4", "/dev/nvme0n1p1")
    );
    assert_eq!(chain(&s), ["nvme0n1p1", "nvme0n1"]);
    assert_eq!(s.devices[0].transport.as_deref(), Some("partition"));
    assert_eq!(
        s.devices[1].model.as_deref(),
        Some("Amazon Elastic Block Store")
    );
    // Through the nvme-subsystem (native multipath) to the controller's transport.
    assert_eq!(s.devices[1].transport.as_deref(), Some("nvme"));
    assert_eq!(s.class, StorageClass::Ebs);
    assert!(has(
        &s.class_evidence,
        "nvme0n1: model = Amazon Elastic Block Store"
    ));
    assert_eq!(s.fsync_flags.len(), 1);
    assert!(
        s.fsync_flags[0].starts_with("nobarrier"),
        "{:?}",
        s.fsync_flags
    );

    assert_eq!(runner.arch, "arm64");
    assert_eq!(runner.cpu_model, "Arm Neoverse-V1");
    assert_eq!(runner.instance_type.as_deref(), Some("m7g.large"));
    assert_eq!(runner.label, "ip-172-31-5-9");
    assert_eq!(runner.os, "Amazon Linux 2023.6.20241121");
    assert!(runner.ci.is_none());
    assert_eq!(runner.memory_gib, 7.6);
}

#[test]
fn github_hosted_azure_os_disk_is_a_network_disk() {
    let (runner, s) = detect(
        "github-azure",
        "/home/runner/work/cargo-diskbench/cargo-diskbench",
    );
    assert_eq!(
        (s.fstype.as_str(), s.mount_source.as_str()),
        ("ext4", "/dev/root")
    );
    assert_eq!(chain(&s), ["sda1", "sda"]);
    assert_eq!(s.devices[1].vendor.as_deref(), Some("Msft"));
    assert_eq!(s.devices[1].transport.as_deref(), Some("scsi"));
    assert_eq!(s.devices[1].physical_block_size, Some(4096));
    assert_eq!(s.class, StorageClass::NetworkDisk);
    assert!(
        has(
            &s.class_evidence,
            "Azure VMBus address of the OS disk (Azure managed disk"
        ),
        "{:?}",
        s.class_evidence
    );

    assert_eq!(runner.provider.as_deref(), Some("github-hosted"));
    assert_eq!(runner.label, "github-ubuntu24-x64");
    assert!(
        has(&runner.evidence, "running on azure"),
        "{:?}",
        runner.evidence
    );
    let ci = runner.ci.as_ref().unwrap();
    assert_eq!(ci.image.as_deref(), Some("ubuntu24/20261118.1"));
    assert_eq!(ci.job.as_deref(), Some("disk"));
    assert_eq!(
        ci.repository.as_deref(),
        Some("cargo-diskbench/cargo-diskbench")
    );
    assert_eq!(runner.cpu_model, "AMD EPYC 7763 64-Core Processor");
    assert_eq!(runner.vcpus, 4);
}

#[test]
fn github_hosted_azure_temp_disk_is_a_vm_disk() {
    let (_, s) = detect("github-azure", "/mnt/work");
    assert_eq!(
        (s.fstype.as_str(), s.mount_source.as_str()),
        ("ext4", "/dev/sdb1")
    );
    assert_eq!(chain(&s), ["sdb1", "sdb"]);
    assert_eq!(s.class, StorageClass::VmDisk);
    assert!(
        has(
            &s.class_evidence,
            "resource disk (Azure resource (temporary) disk"
        ),
        "{:?}",
        s.class_evidence
    );
}

#[test]
fn memory_backed_filesystems_are_tmpfs() {
    let (_, shm) = detect("tmpfs-zram", "/dev/shm/bench");
    assert_eq!(shm.fstype, "tmpfs");
    assert_eq!(shm.class, StorageClass::Tmpfs);
    assert!(shm.devices.is_empty());
    assert!(has(&shm.class_evidence, "fstype = tmpfs"));
    assert!(has(&shm.notes, "fdatasync do nothing"));

    let (_, ramfs) = detect("tmpfs-zram", "/mnt/ram");
    assert_eq!(ramfs.class, StorageClass::Tmpfs);

    let (_, zram) = detect("tmpfs-zram", "/var/cache/build/x");
    assert_eq!(zram.fstype, "ext4");
    assert_eq!(chain(&zram), ["zram0"]);
    assert_eq!(zram.devices[0].transport.as_deref(), Some("zram"));
    assert_eq!(zram.class, StorageClass::Tmpfs);
    assert!(has(&zram.class_evidence, "zram0: transport = zram"));

    let (_, root) = detect("tmpfs-zram", "/home");
    assert_eq!(
        root.class,
        StorageClass::Unknown,
        "vda1 is not in this fixture's sysfs"
    );
    assert!(
        has(&root.class_evidence, "cannot resolve /sys/dev/block/254:1"),
        "{:?}",
        root.class_evidence
    );
}

#[test]
fn virtio_disk_is_a_vm_disk() {
    let (runner, s) = detect("virtio-vm", "/home/ci/build");
    assert_eq!(chain(&s), ["vda1", "vda"]);
    let vda = &s.devices[1];
    assert_eq!(vda.transport.as_deref(), Some("virtio"));
    assert_eq!(vda.scheduler.as_deref(), Some("mq-deadline"));
    assert_eq!(vda.size_bytes, Some(80 << 30));
    assert_eq!(
        (vda.logical_block_size, vda.physical_block_size),
        (Some(512), Some(4096))
    );
    assert_eq!(s.class, StorageClass::VmDisk);
    assert!(has(&s.class_evidence, "vda: transport = virtio"));

    assert_eq!(runner.vcpus, 2, "{:?}", runner.evidence);
    assert!(has(
        &runner.evidence,
        "capped to 2 by /sys/fs/cgroup/ci.slice/job-42.scope/cpu.max"
    ));
    assert_eq!(runner.memory_gib, 4.0);
    assert!(has(&runner.evidence, "/sys/fs/cgroup/ci.slice/memory.max"));
    assert_eq!(runner.provider, None);
    assert!(runner.ci.is_none());
}

#[test]
fn escaped_mount_point_lvm_and_loop_are_followed() {
    let (_, s) = detect("virtio-vm", "/mnt/build cache/target");
    assert_eq!((s.fstype.as_str(), chain(&s)), ("xfs", vec!["vdb"]));
    assert_eq!(s.class, StorageClass::VmDisk);

    let (_, lvm) = detect("virtio-vm", "/srv/data");
    assert_eq!(chain(&lvm), ["dm-0", "vdc"]);
    assert_eq!(lvm.devices[0].transport.as_deref(), Some("dm"));
    assert!(has(&lvm.notes, "dm-0 is device-mapper volume data-vol"));
    assert_eq!(lvm.class, StorageClass::VmDisk);
    assert_eq!(lvm.fsync_flags.len(), 2, "{:?}", lvm.fsync_flags);

    let (_, lp) = detect("virtio-vm", "/mnt/image");
    assert_eq!(chain(&lp), ["loop0", "vda1", "vda"]);
    assert_eq!(lp.devices[0].members, ["vda1"]);
    assert!(has(
        &lp.notes,
        "loop0 is backed by the file /var/lib/images/build.img"
    ));
    assert_eq!(lp.class, StorageClass::VmDisk);

    let (_, bind) = detect("virtio-vm", "/var/lib/docker/overlay2");
    assert_eq!(bind.mount_root.as_deref(), Some("/var/lib/docker"));
    assert_eq!(chain(&bind), ["vda1", "vda"]);
}

#[test]
fn container_workspace_bind_mount_reaches_the_host_disk() {
    let (runner, s) = detect(
        "container-bind-workspace",
        "/__w/cargo-diskbench/cargo-diskbench",
    );
    assert_eq!(
        (s.fstype.as_str(), s.mount_source.as_str()),
        ("ext4", "/dev/root")
    );
    assert_eq!(s.mount_root.as_deref(), Some("/home/runner/work"));
    assert!(has(&s.notes, "bind mount"));
    assert_eq!(chain(&s), ["sda1", "sda"]);
    assert_eq!(s.class, StorageClass::NetworkDisk);

    assert!(runner.in_container);
    assert!(has(&runner.evidence, "/.dockerenv exists"));
    assert!(has(&runner.evidence, "root filesystem is an overlay"));
    assert_eq!(runner.provider.as_deref(), Some("github-hosted"));
    assert_eq!(runner.label, "github-hosted-x64");
}

#[test]
fn container_overlay_root_is_unknown_with_the_reason() {
    let (_, s) = detect("container-bind-workspace", "/tmp");
    assert_eq!(s.fstype, "overlay");
    assert!(s.overlay_upper.is_none());
    assert!(s.devices.is_empty());
    assert_eq!(s.class, StorageClass::Unknown);
    assert!(
        has(&s.class_evidence, "not visible from this mount namespace"),
        "{:?}",
        s.class_evidence
    );
}

#[test]
fn missing_files_give_unknown_with_reasons() {
    let (runner, s) = detect("missing-files", "/home/u");
    assert_eq!(s.fstype, "ext4");
    assert_eq!(s.class, StorageClass::Unknown);
    assert!(
        has(&s.class_evidence, "cannot resolve /sys/dev/block/8:1"),
        "{:?}",
        s.class_evidence
    );
    assert!(has(&s.notes, "mountinfo line 2 does not parse"));
    assert_eq!(runner.cpu_model, "unknown");
    assert!(has(&runner.evidence, "cannot read /proc/cpuinfo"));
    assert_eq!(runner.os, "unknown");
    assert!(has(&runner.evidence, "cannot read /etc/os-release"));
    assert_eq!(runner.kernel, "5.15.0-1070-generic");
    assert_eq!(runner.provider, None);
}

#[test]
fn an_empty_view_is_unknown_everywhere_and_does_not_panic() {
    let empty = tempfile::tempdir().unwrap();
    // A path that exists but cannot be read as a file (as root, permissions do not stop us).
    std::fs::create_dir_all(empty.path().join("proc/cpuinfo")).unwrap();
    let (runner, s) = detect_in(&SysView::fixture(empty.path()), "/work", Some("given"));
    assert_eq!(runner.cpu_model, "unknown");
    assert!(
        has(
            &runner.evidence,
            "cannot read /proc/cpuinfo: Is a directory"
        ),
        "{:?}",
        runner.evidence
    );
    assert_eq!(runner.label, "given");
    assert_eq!(s.class, StorageClass::Unknown);
    assert!(s.fstype.is_empty());
    assert!(has(&s.notes, "cannot read /proc/self/mountinfo"));
    assert!(has(&runner.evidence, "cannot read /proc/meminfo"));
}

/// An Azure VM (DMI) whose data disk sits at LUN 2 of the first SCSI controller, an address
/// Azure's rules give no role: unknown, saying why, not a local VHD.
#[test]
fn azure_disk_without_a_role_is_unknown_and_says_why() {
    let (runner, s) = detect("azure-disk-without-role", "/mnt/work");
    assert_eq!(chain(&s), ["sdb1", "sdb"]);
    assert_eq!(s.class, StorageClass::Unknown);
    assert!(
        has(&s.class_evidence, "DMI says Azure"),
        "{:?}",
        s.class_evidence
    );
    assert!(
        has(&s.class_evidence, "role (OS, resource, data) was not found"),
        "{:?}",
        s.class_evidence
    );
    assert_eq!(runner.provider.as_deref(), Some("azure"));
    // The OS disk at LUN 0 is still told apart.
    let (_, os) = detect("azure-disk-without-role", "/home");
    assert_eq!(
        os.class,
        StorageClass::NetworkDisk,
        "{:?}",
        os.class_evidence
    );
}

/// The same Hyper-V disks without Azure's chassis asset tag (plain Hyper-V): the disk at an
/// unknown address stays a local VHD.
#[test]
fn hyperv_disk_off_azure_stays_a_vm_disk() {
    let (runner, s) = detect("hyperv-disk-off-azure", "/mnt/work");
    assert_eq!(s.class, StorageClass::VmDisk, "{:?}", s.class_evidence);
    assert!(
        has(&s.class_evidence, "local VHD"),
        "{:?}",
        s.class_evidence
    );
    assert!(runner.provider.is_none());
}

#[test]
fn memory_on_a_vm_that_hands_freed_pages_to_its_host_says_so() {
    // virtio-vm has a balloon with VIRTIO_BALLOON_F_REPORTING (bit 5) as this project's CI VM
    // reports it; tmpfs-zram has no balloon.
    let note = "hands freed memory back to its host (virtio3";
    let (_, shm) = detect("virtio-vm", "/dev/shm/bench");
    assert_eq!(shm.class, StorageClass::Tmpfs);
    assert!(has(&shm.notes, note), "{:?}", shm.notes);
    let (_, disk) = detect("virtio-vm", "/home/ci/build");
    assert!(
        !has(&disk.notes, "hands freed memory"),
        "a disk's writes do not wait on the balloon"
    );
    let (_, no_balloon) = detect("tmpfs-zram", "/dev/shm/bench");
    assert!(!has(&no_balloon.notes, "hands freed memory"));

    // The same balloon without the reporting bit says nothing.
    let copy = tempfile::tempdir().unwrap();
    let root = copy.path();
    for f in ["proc/self/mountinfo", "proc/cpuinfo", "proc/meminfo"] {
        let from = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/machine/virtio-vm")
            .join(f);
        std::fs::create_dir_all(root.join(f).parent().unwrap()).unwrap();
        std::fs::copy(from, root.join(f)).unwrap();
    }
    let balloon = root.join("sys/bus/virtio/drivers/virtio_balloon/virtio3");
    std::fs::create_dir_all(&balloon).unwrap();
    std::fs::write(
        balloon.join("features"),
        "0110000000000000000000000000000010\n",
    )
    .unwrap();
    let (_, s) = detect_in(&SysView::fixture(root), "/dev/shm/bench", None);
    assert_eq!(s.class, StorageClass::Tmpfs);
    assert!(!has(&s.notes, "hands freed memory"), "{:?}", s.notes);
    std::fs::write(
        balloon.join("features"),
        "0110010000000000000000000000000010\n",
    )
    .unwrap();
    let (_, s) = detect_in(&SysView::fixture(root), "/dev/shm/bench", None);
    assert!(has(&s.notes, note), "{:?}", s.notes);
}

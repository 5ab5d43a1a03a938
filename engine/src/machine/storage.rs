//! The storage section: the filesystem under a directory, the filesystem that really takes
//! its writes, the device chain below that, and the class.

use super::blockdev::{self, Chain};
use super::class;
use super::mountinfo::{self, MountEntry};
use super::sysview::SysView;
use record::storage_rules::FSYNC_OPTIONS;
use record::{Device, Mount, Storage, StorageClass};

/// Detect the storage under `dir` (an absolute path with symlinks resolved).
pub(crate) fn detect(view: &SysView, dir: &str) -> Storage {
    let mut storage = Storage {
        path: dir.to_string(),
        ..Default::default()
    };
    let mounts = match view.read("/proc/self/mountinfo") {
        Ok(text) => {
            let (mounts, bad) = mountinfo::parse(&text);
            storage.notes.extend(bad);
            mounts
        }
        Err(why) => {
            storage.class_evidence.push(format!("unknown: {why}"));
            storage.notes.push(why);
            return storage;
        }
    };
    let Some(mount) = mountinfo::find(&mounts, dir) else {
        let why = format!("no mount in /proc/self/mountinfo holds {dir}");
        storage.class_evidence.push(format!("unknown: {why}"));
        storage.notes.push(why);
        return storage;
    };
    storage.fstype = mount.fstype.clone();
    storage.mount_source = mount.source.clone();
    storage.mount_options = mount.all_options();
    if mount.root != "/" {
        storage.mount_root = Some(mount.root.clone());
        storage.notes.push(format!(
            "{} is a bind mount (or subvolume): {} of the {} filesystem on {}",
            mount.mount_point, mount.root, mount.fstype, mount.source
        ));
    }
    push_fsync_flags(&mut storage.fsync_flags, mount, "");

    let writes = if mount.fstype == "overlay" {
        match overlay_upper(&mounts, mount) {
            Ok((upper_dir, upper)) => {
                storage.overlay_upper = Some(Mount {
                    path: upper_dir.clone(),
                    fstype: upper.fstype.clone(),
                    mount_source: upper.source.clone(),
                    mount_options: upper.all_options(),
                });
                storage.notes.push(format!(
                    "overlayfs: writes go to upperdir {upper_dir}, on the {} filesystem mounted at {}",
                    upper.fstype, upper.mount_point
                ));
                push_fsync_flags(&mut storage.fsync_flags, upper, "upper: ");
                Some(upper)
            }
            Err(why) => {
                storage.class_evidence.push(format!("unknown: {why}"));
                storage.notes.push(why);
                None
            }
        }
    } else {
        Some(mount)
    };

    if let Some(fs) = writes {
        let verdict = classify_filesystem(view, &mounts, fs, 0);
        storage.devices = verdict.devices;
        storage.device = storage.devices.first().cloned();
        storage.class = verdict.class;
        storage.class_evidence.extend(verdict.evidence);
        storage.notes.extend(verdict.notes);
        if fs.fstype == "tmpfs" || fs.fstype == "ramfs" {
            storage.notes.push(format!(
                "{}: fsync and fdatasync do nothing here (the data lives only in memory)",
                fs.fstype
            ));
        }
        if storage.class == StorageClass::Tmpfs
            && let Some(balloon) = free_page_reporting(view)
        {
            storage.notes.push(format!(
                "this VM hands freed memory back to its host ({balloon}: virtio-balloon free \
                 page reporting): the first write to each page of a new file can wait for the \
                 host to supply it, so a write column on memory measures those waits as much as \
                 the tool and moves with how recently memory was freed (see the methodology \
                 page); compare memory figures only between runs made the same way"
            ));
        }
    }

    if view.is_live() {
        match statvfs(dir) {
            Ok((free, total)) => {
                storage.free_bytes = Some(free);
                storage.total_bytes = Some(total);
            }
            Err(why) => storage.notes.push(format!("statfs {dir}: {why}")),
        }
    }
    storage
}

/// The virtio-balloon device that reports the guest's free pages to the host, if any.
///
/// With `VIRTIO_BALLOON_F_REPORTING` (feature bit 5) the guest tells the host which pages it
/// freed and the host drops them, so the next write to such a page waits for the host to
/// supply a new one: a write figure on tmpfs then depends on how recently memory was freed
/// (docs/design/memory-backed-filesystems.md), which the storage notes say. sysfs shows the
/// negotiated features as one '0' or '1' per bit, bit 0 first (drivers/virtio/virtio.c,
/// features_show).
fn free_page_reporting(view: &SysView) -> Option<String> {
    const DRIVER: &str = "/sys/bus/virtio/drivers/virtio_balloon";
    const F_REPORTING: usize = 5;
    view.list(DRIVER)
        .into_iter()
        .filter(|name| name.starts_with("virtio"))
        .find(|name| {
            view.attr(&format!("{DRIVER}/{name}/features"))
                .is_some_and(|bits| bits.as_bytes().get(F_REPORTING) == Some(&b'1'))
        })
}

fn push_fsync_flags(flags: &mut Vec<String>, mount: &MountEntry, prefix: &str) {
    let opts = mount.all_options();
    for opt in mountinfo::split_options(&opts) {
        if let Some((o, why)) = FSYNC_OPTIONS.iter().find(|(o, _)| *o == opt) {
            flags.push(format!("{prefix}{o} ({why})"));
        }
    }
}

/// The upper directory of an overlay and the mount that holds it.
fn overlay_upper<'a>(
    mounts: &'a [MountEntry],
    overlay: &MountEntry,
) -> Result<(String, &'a MountEntry), String> {
    let mut current = overlay.clone();
    // An upper dir may itself sit on another overlay; follow a few levels.
    for _ in 0..4 {
        let Some(upper_dir) = current.super_option("upperdir") else {
            return Err(format!(
                "overlay at {} has no upperdir (read-only overlay)",
                current.mount_point
            ));
        };
        match mountinfo::find(mounts, &upper_dir) {
            Some(m) if m.fstype != "overlay" => return Ok((upper_dir, m)),
            // The upper dir is named as the mounting namespace saw it; from inside a
            // container it usually resolves back to the overlay itself.
            Some(m) if m.mount_point != current.mount_point => current = m.clone(),
            _ => {
                return Err(format!(
                    "overlay at {}: its upperdir {upper_dir} is not visible from this mount \
                     namespace (typical inside a container), so the disk that takes the writes \
                     is unknown",
                    current.mount_point
                ));
            }
        }
    }
    Err(format!(
        "overlay at {}: overlays nested too deep to follow",
        overlay.mount_point
    ))
}

struct Verdict {
    class: StorageClass,
    evidence: Vec<String>,
    devices: Vec<Device>,
    notes: Vec<String>,
}

fn classify_filesystem(
    view: &SysView,
    mounts: &[MountEntry],
    fs: &MountEntry,
    depth: usize,
) -> Verdict {
    if let Some((class, why)) = class::classify_fs(&fs.fstype) {
        return Verdict {
            class,
            evidence: vec![why],
            devices: Vec::new(),
            notes: Vec::new(),
        };
    }
    let Some((major, minor)) = block_device_of(view, fs) else {
        let why = format!(
            "{} on {} has no block device (device number {}:{})",
            fs.fstype, fs.source, fs.major, fs.minor
        );
        return Verdict {
            class: StorageClass::Unknown,
            evidence: vec![format!("unknown: {why}")],
            devices: Vec::new(),
            notes: vec![why],
        };
    };
    let chain = blockdev::chain(view, major, minor);
    classify_chain(view, mounts, chain, depth)
}

fn classify_chain(view: &SysView, mounts: &[MountEntry], chain: Chain, depth: usize) -> Verdict {
    let mut devices = chain.devices;
    let mut notes = chain.notes;
    let mut per_disk: Vec<(StorageClass, String)> =
        chain.disks.iter().map(class::classify_disk).collect();
    for (loop_name, backing) in chain.loops {
        let Some(file) = backing else {
            per_disk.push((
                StorageClass::Unknown,
                format!("{loop_name}: backing file unknown"),
            ));
            continue;
        };
        let holder = mountinfo::find(mounts, &file).filter(|_| depth < 3);
        let Some(holder) = holder else {
            per_disk.push((
                StorageClass::Unknown,
                format!("{loop_name}: no mount holds {file}"),
            ));
            continue;
        };
        notes.push(format!(
            "{loop_name} is backed by the file {file} on the {} filesystem at {}",
            holder.fstype, holder.mount_point
        ));
        let below = classify_filesystem(view, mounts, holder, depth + 1);
        if let Some(top) = below.devices.first()
            && let Some(l) = devices.iter_mut().find(|d| d.name == loop_name)
        {
            l.members = vec![top.name.clone()];
        }
        for d in below.devices {
            if !devices.iter().any(|x| x.name == d.name) {
                devices.push(d);
            }
        }
        notes.extend(below.notes);
        let mut ev = below.evidence.join("; ");
        if ev.is_empty() {
            ev = "no evidence".into();
        }
        per_disk.push((below.class, format!("{loop_name} -> {file}: {ev}")));
    }
    if per_disk.is_empty() {
        let why = if notes.is_empty() {
            "no disk found below the filesystem's device".to_string()
        } else {
            notes.join("; ")
        };
        return Verdict {
            class: StorageClass::Unknown,
            evidence: vec![format!("unknown: {why}")],
            devices,
            notes,
        };
    }
    let via = devices
        .iter()
        .find(|d| d.members.len() > 1)
        .map(|d| match &d.raid_level {
            Some(level) => format!("{} ({level})", d.name),
            None => d.name.clone(),
        })
        .unwrap_or_default();
    let (class, evidence) = class::combine(&per_disk, &via);
    Verdict {
        class,
        evidence,
        devices,
        notes,
    }
}

/// The block device a filesystem sits on: its device number, or for filesystems that show an
/// anonymous number (btrfs), the device named as the mount source.
fn block_device_of(view: &SysView, fs: &MountEntry) -> Option<(u32, u32)> {
    if fs.major != 0 {
        return Some((fs.major, fs.minor));
    }
    let source = fs.source.strip_prefix("/dev/")?;
    let name = match source.strip_prefix("mapper/") {
        Some(mapper) => blockdev::dm_by_mapper_name(view, mapper)?,
        None => source.rsplit('/').next()?.to_string(),
    };
    blockdev::dev_of_name(view, &name)
}

/// Free (for unprivileged users) and total bytes of the filesystem holding `dir`.
fn statvfs(dir: &str) -> Result<(u64, u64), String> {
    let c_path = std::ffi::CString::new(dir).map_err(|e| e.to_string())?;
    let mut st = std::mem::MaybeUninit::<libc::statvfs>::uninit();
    // SAFETY: c_path is a valid NUL-terminated string and st points to writable memory of
    // the right size; statvfs fills it completely on success, and we read it only then.
    let rc = unsafe { libc::statvfs(c_path.as_ptr(), st.as_mut_ptr()) };
    if rc != 0 {
        return Err(std::io::Error::last_os_error().to_string());
    }
    // SAFETY: rc == 0, so statvfs initialised the struct.
    let st = unsafe { st.assume_init() };
    // The fields are 32-bit on some targets.
    #[allow(clippy::unnecessary_cast)]
    let (frsize, avail, blocks) = (st.f_frsize as u64, st.f_bavail as u64, st.f_blocks as u64);
    Ok((avail * frsize, blocks * frsize))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nested_overlays_are_followed_to_a_real_filesystem() {
        let (mounts, _) = mountinfo::parse(
            "1 0 8:1 / / rw - ext4 /dev/sda1 rw\n\
             2 1 8:2 / /data rw - xfs /dev/sda2 rw,nobarrier\n\
             3 1 0:40 / /b rw - overlay overlay rw,lowerdir=/l,upperdir=/data/up,workdir=/data/wk\n\
             4 1 0:41 / /a rw - overlay overlay rw,lowerdir=/l2,upperdir=/b/up,workdir=/b/wk\n",
        );
        let a = mountinfo::find(&mounts, "/a/x").unwrap();
        let (dir, upper) = overlay_upper(&mounts, a).unwrap();
        assert_eq!(
            (dir.as_str(), upper.mount_point.as_str()),
            ("/data/up", "/data")
        );
        let mut flags = Vec::new();
        push_fsync_flags(&mut flags, upper, "upper: ");
        assert_eq!(flags.len(), 1);
        assert!(flags[0].starts_with("upper: nobarrier"));
    }

    #[test]
    fn an_overlay_whose_upper_resolves_to_itself_is_not_followed() {
        let (mounts, _) = mountinfo::parse(
            "1 0 0:40 / / rw - overlay overlay rw,lowerdir=/l,upperdir=/var/lib/docker/o/diff,workdir=/w\n",
        );
        let err = overlay_upper(&mounts, &mounts[0]).unwrap_err();
        assert!(
            err.contains("not visible from this mount namespace"),
            "{err}"
        );
    }
}

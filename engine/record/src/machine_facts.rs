//! The facts about a machine and its storage, as one list that every rendering shows: the
//! terminal table (`cargo diskbench machine`), the Markdown job summary and the runner page.
//!
//! The list decides which facts there are, their names, their order and how each value is
//! written; a rendering decides only the layout. One rule for a value a record does not hold:
//! it reads [`UNKNOWN`] (a record holds `0` vCPUs or an empty kernel when the machine was not
//! described, e.g. imported figures), and a fact that is absent by nature (no CI, no overlay)
//! reads [`NONE`]. No rendering drops a fact or prints a placeholder of its own.

use crate::size::format_bytes;
use crate::{Device, Runner, Storage};

/// A value the record does not hold.
pub const UNKNOWN: &str = "unknown";
/// A fact that does not apply: not in CI, no overlay, no flagged mount option.
pub const NONE: &str = "none";

/// Which block of the rendering a fact belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Section {
    Machine,
    Storage,
}

impl Section {
    pub fn title(self) -> &'static str {
        match self {
            Section::Machine => "Machine",
            Section::Storage => "Storage",
        }
    }
}

/// One fact: a stable key (for styling and tests), the name people read, and its value as
/// one or more lines (the device chain and the class evidence have one line per item).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Fact {
    pub key: &'static str,
    pub name: &'static str,
    pub lines: Vec<String>,
}

impl Fact {
    /// The lines joined for a one-line rendering.
    pub fn joined(&self, separator: &str) -> String {
        self.lines.join(separator)
    }
}

fn known(text: &str) -> Vec<String> {
    let text = text.trim();
    vec![if text.is_empty() { UNKNOWN } else { text }.to_string()]
}

fn optional(text: Option<&str>, absent: &str) -> Vec<String> {
    match text.map(str::trim).filter(|t| !t.is_empty()) {
        Some(t) => vec![t.to_string()],
        None => vec![absent.to_string()],
    }
}

fn many(items: &[String], absent: &str) -> Vec<String> {
    let items: Vec<String> = items
        .iter()
        .map(|i| i.trim().to_string())
        .filter(|i| !i.is_empty())
        .collect();
    if items.is_empty() {
        vec![absent.to_string()]
    } else {
        items
    }
}

/// The machine's facts, in the order every rendering shows them.
pub fn machine(r: &Runner) -> Vec<Fact> {
    let fact = |key, name, lines| Fact { key, name, lines };
    let ci = r.ci.as_ref().map(|ci| {
        let mut parts = vec![ci.system.clone()];
        for (k, v) in [
            ("image", &ci.image),
            ("environment", &ci.environment),
            ("run", &ci.run_id),
            ("job", &ci.job),
            ("runner", &ci.runner_name),
            ("repository", &ci.repository),
        ] {
            if let Some(v) = v.as_deref().filter(|v| !v.trim().is_empty()) {
                parts.push(format!("{k} {v}"));
            }
        }
        parts.join(", ")
    });
    vec![
        fact("arch", "Architecture", known(&r.arch)),
        fact("cpu", "CPU", known(&r.cpu_model)),
        fact(
            "vcpus",
            "vCPUs",
            vec![if r.vcpus > 0 {
                r.vcpus.to_string()
            } else {
                UNKNOWN.into()
            }],
        ),
        fact(
            "memory",
            "Memory",
            vec![if r.memory_gib > 0.0 {
                format!("{:.1} GiB", r.memory_gib)
            } else {
                UNKNOWN.into()
            }],
        ),
        fact("kernel", "Kernel", known(&r.kernel)),
        fact("os", "OS", known(&r.os)),
        fact(
            "provider",
            "Provider",
            optional(r.provider.as_deref(), UNKNOWN),
        ),
        fact(
            "instance-type",
            "Instance type",
            optional(r.instance_type.as_deref(), UNKNOWN),
        ),
        fact("ci", "CI", optional(ci.as_deref(), NONE)),
        fact("variant", "Variant", optional(r.variant.as_deref(), NONE)),
        fact(
            "container",
            "Container",
            vec![if r.in_container {
                "yes: the figures are the container's view".into()
            } else {
                "no".into()
            }],
        ),
    ]
}

/// The storage's facts, in the order every rendering shows them.
pub fn storage(s: &Storage) -> Vec<Fact> {
    let fact = |key, name, lines| Fact { key, name, lines };
    let filesystem = match (s.fstype.trim(), s.mount_source.trim()) {
        ("", _) => UNKNOWN.to_string(),
        (fs, "") => fs.to_string(),
        (fs, source) => format!("{fs} on {source}"),
    };
    let options: Vec<String> = s
        .mount_options
        .split(',')
        .filter(|o| !o.trim().is_empty())
        .map(String::from)
        .collect();
    let space = match (s.free_bytes, s.total_bytes) {
        (Some(free), Some(total)) => {
            format!("{} free of {}", format_bytes(free), format_bytes(total))
        }
        _ => UNKNOWN.to_string(),
    };
    let overlay = s.overlay_upper.as_ref().map(|up| {
        format!(
            "{} ({} on {}, {})",
            up.path, up.fstype, up.mount_source, up.mount_options
        )
    });
    vec![
        fact(
            "class",
            "Class",
            vec![format!("{} ({})", s.class.title(), s.class.as_str())],
        ),
        fact(
            "class-evidence",
            "Why this class",
            many(&s.class_evidence, "no evidence recorded"),
        ),
        fact("path", "Test folder", known(&s.path)),
        fact("filesystem", "Filesystem", vec![filesystem]),
        // Set only for a bind mount (a subtree of the filesystem).
        fact(
            "mounted-from",
            "Mounted from",
            optional(s.mount_root.as_deref(), NONE),
        ),
        fact("mount-options", "Mount options", many(&options, UNKNOWN)),
        fact("fsync-flags", "fsync flags", many(&s.fsync_flags, NONE)),
        fact(
            "overlay-upper",
            "Overlay upper",
            optional(overlay.as_deref(), NONE),
        ),
        fact("space", "Space", vec![space]),
        fact("device-chain", "Device chain", {
            let chain = device_chain(s);
            if chain.is_empty() {
                vec![UNKNOWN.to_string()]
            } else {
                chain
            }
        }),
    ]
}

/// Both sections with their facts, machine first.
pub fn sections(r: &Runner, s: &Storage) -> [(Section, Vec<Fact>); 2] {
    [
        (Section::Machine, machine(r)),
        (Section::Storage, storage(s)),
    ]
}

/// The device chain top first, each device indented by two spaces under the one it belongs
/// to; the filesystem's own device when the record has no chain.
pub fn device_chain(s: &Storage) -> Vec<String> {
    fn walk(
        devices: &[Device],
        d: &Device,
        depth: usize,
        seen: &mut Vec<String>,
        out: &mut Vec<String>,
    ) {
        if seen.contains(&d.name) {
            return;
        }
        seen.push(d.name.clone());
        out.push(format!("{}{}", "  ".repeat(depth), describe(d)));
        for m in &d.members {
            if let Some(child) = devices.iter().find(|x| &x.name == m) {
                walk(devices, child, depth + 1, seen, out);
            }
        }
    }
    let devices: Vec<Device> = if s.devices.is_empty() {
        s.device.iter().cloned().collect()
    } else {
        s.devices.clone()
    };
    let mut seen = Vec::new();
    let mut out = Vec::new();
    for d in &devices {
        walk(&devices, d, 0, &mut seen, &mut out);
    }
    out
}

/// `vda (virtio, 256 GiB, mq-deadline)`, `md0 (md raid0 of nvme1n1+nvme2n1, 3.4 TiB)`.
pub fn describe(d: &Device) -> String {
    let mut facts: Vec<String> = Vec::new();
    match (d.transport.as_deref(), &d.raid_level) {
        (Some("partition"), _) => facts.push(format!("partition of {}", d.members.join("+"))),
        (Some(t), Some(level)) => facts.push(format!("{t} {level} of {}", d.members.join("+"))),
        (Some(t), None) if !d.members.is_empty() => {
            facts.push(format!("{t} on {}", d.members.join("+")))
        }
        (Some(t), None) => facts.push(t.to_string()),
        (None, _) => facts.push("unknown transport".into()),
    }
    let model = [d.vendor.as_deref(), d.model.as_deref()]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join(" ");
    if !model.is_empty() {
        facts.push(format!("\"{model}\""));
    }
    if let Some(s) = d.size_bytes {
        facts.push(format_bytes(s));
    }
    match d.rotational {
        Some(true) if d.transport.as_deref() != Some("partition") => {
            facts.push("rotational".into())
        }
        _ => {}
    }
    match d.scheduler.as_deref() {
        Some("none") => facts.push("no scheduler".into()),
        Some(s) => facts.push(s.to_string()),
        None => {}
    }
    format!("{} ({})", d.name, facts.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_machine_not_described_reads_unknown_never_zero_or_empty() {
        let facts: Vec<Fact> = sections(&Runner::default(), &Storage::default())
            .into_iter()
            .flat_map(|(_, facts)| facts)
            .collect();
        for f in &facts {
            assert!(!f.lines.is_empty(), "{}", f.name);
            for line in &f.lines {
                assert!(!line.trim().is_empty(), "{}", f.name);
                assert!(!line.starts_with('0'), "{}: {line}", f.name);
            }
        }
        let value = |key: &str| {
            facts
                .iter()
                .find(|f| f.key == key)
                .map(|f| f.joined("; "))
                .unwrap()
        };
        assert_eq!(value("vcpus"), UNKNOWN);
        assert_eq!(value("memory"), UNKNOWN);
        assert_eq!(value("kernel"), UNKNOWN);
        assert_eq!(value("device-chain"), UNKNOWN);
        assert_eq!(value("ci"), NONE);
    }

    #[test]
    fn device_chains_read_naturally() {
        let vda = Device {
            name: "vda".into(),
            transport: Some("virtio".into()),
            size_bytes: Some(256 << 30),
            scheduler: Some("mq-deadline".into()),
            ..Default::default()
        };
        assert_eq!(describe(&vda), "vda (virtio, 256 GiB, mq-deadline)");
        let md = Device {
            name: "md0".into(),
            transport: Some("md".into()),
            raid_level: Some("raid0".into()),
            members: vec!["nvme1n1".into(), "nvme2n1".into()],
            ..Default::default()
        };
        assert_eq!(describe(&md), "md0 (md raid0 of nvme1n1+nvme2n1)");
        let leaf = |n: &str| Device {
            name: n.into(),
            transport: Some("nvme".into()),
            ..Default::default()
        };
        let s = Storage {
            devices: vec![md, leaf("nvme1n1"), leaf("nvme2n1")],
            ..Default::default()
        };
        assert_eq!(
            device_chain(&s),
            [
                "md0 (md raid0 of nvme1n1+nvme2n1)",
                "  nvme1n1 (nvme)",
                "  nvme2n1 (nvme)"
            ]
        );
        // Only the filesystem's device known: it is the chain.
        let s = Storage {
            device: Some(vda),
            ..Default::default()
        };
        assert_eq!(device_chain(&s), ["vda (virtio, 256 GiB, mq-deadline)"]);
    }
}

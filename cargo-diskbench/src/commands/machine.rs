//! `cargo diskbench machine`: what the tool detects about this machine and the storage under
//! `--dir`, without running a test.

use std::path::PathBuf;

use anyhow::Result;
use record::{Device, Runner, Storage};

#[derive(clap::Args, Debug)]
pub struct MachineArgs {
    /// The directory whose storage to describe (default: $GITHUB_WORKSPACE, else the current dir)
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Print the runner and storage sections as JSON, as a record would hold them
    #[arg(long)]
    pub json: bool,
    /// How this machine is named in the report (default: detected)
    #[arg(long, value_name = "TEXT")]
    pub label: Option<String>,
}

pub fn exec(args: MachineArgs) -> Result<()> {
    let dir = match args.dir {
        Some(d) => d,
        None => std::env::var_os("GITHUB_WORKSPACE")
            .map(PathBuf::from)
            .unwrap_or(std::env::current_dir()?),
    };
    if !dir.is_dir() {
        return Err(record::error::usage(format!(
            "--dir {}: not a directory; give an existing directory on the disk to describe",
            dir.display()
        )));
    }
    let (runner, storage) = engine::machine::detect(&dir, args.label.as_deref());
    if args.json {
        let doc = serde_json::json!({ "runner": runner, "storage": storage });
        println!("{}", serde_json::to_string_pretty(&doc)?);
    } else {
        print!(
            "{}",
            crate::output::terminal_safe(&render(&runner, &storage))
        );
    }
    Ok(())
}

/// Aligned `key: value` lines, one block per section.
fn render(runner: &Runner, storage: &Storage) -> String {
    let mut rows: Vec<(&str, String)> = Vec::new();
    let mut out = String::new();
    let yes_no = |b: bool| if b { "yes" } else { "no" }.to_string();

    rows.push(("label", runner.label.clone()));
    rows.push((
        "provider",
        runner.provider.clone().unwrap_or_else(|| "unknown".into()),
    ));
    if let Some(t) = &runner.instance_type {
        rows.push(("instance type", t.clone()));
    }
    rows.push(("arch", runner.arch.clone()));
    rows.push(("vcpus", runner.vcpus.to_string()));
    rows.push(("memory", format!("{:.1} GiB", runner.memory_gib)));
    rows.push(("cpu", runner.cpu_model.clone()));
    rows.push(("kernel", runner.kernel.clone()));
    rows.push(("os", runner.os.clone()));
    rows.push(("container", yes_no(runner.in_container)));
    match &runner.ci {
        Some(ci) => {
            let mut parts = vec![ci.system.clone()];
            for (k, v) in [
                ("run", &ci.run_id),
                ("job", &ci.job),
                ("image", &ci.image),
                ("runner", &ci.runner_name),
                ("repo", &ci.repository),
                ("env", &ci.environment),
            ] {
                if let Some(v) = v {
                    parts.push(format!("{k} {v}"));
                }
            }
            rows.push(("ci", parts.join(", ")));
        }
        None => rows.push(("ci", "none".into())),
    }
    for e in &runner.evidence {
        rows.push(("evidence", e.clone()));
    }
    section(&mut out, "runner", &rows);

    rows.clear();
    rows.push(("path", storage.path.clone()));
    let fs = if storage.fstype.is_empty() {
        "unknown".to_string()
    } else {
        format!("{} on {}", storage.fstype, storage.mount_source)
    };
    rows.push(("filesystem", fs));
    if let Some(root) = &storage.mount_root {
        rows.push(("mounted from", root.clone()));
    }
    if !storage.mount_options.is_empty() {
        rows.push(("options", storage.mount_options.clone()));
    }
    if let Some(up) = &storage.overlay_upper {
        rows.push((
            "overlay upper",
            format!("{} ({} on {})", up.path, up.fstype, up.mount_source),
        ));
    }
    if let (Some(free), Some(total)) = (storage.free_bytes, storage.total_bytes) {
        rows.push(("space", format!("{} free of {}", size(free), size(total))));
    }
    let tree = device_tree(&storage.devices);
    if tree.is_empty() {
        rows.push(("device chain", "none".into()));
    }
    for (i, line) in tree.into_iter().enumerate() {
        rows.push((if i == 0 { "device chain" } else { "" }, line));
    }
    rows.push(("class", storage.class.to_string()));
    for e in &storage.class_evidence {
        rows.push(("evidence", e.clone()));
    }
    if storage.fsync_flags.is_empty() {
        rows.push(("fsync flags", "none".into()));
    }
    for f in &storage.fsync_flags {
        rows.push(("fsync flags", f.clone()));
    }
    // A reason already given as class evidence is not repeated as a note.
    for n in &storage.notes {
        if !storage
            .class_evidence
            .iter()
            .any(|e| e.contains(n.as_str()))
        {
            rows.push(("note", n.clone()));
        }
    }
    section(&mut out, "storage", &rows);
    out
}

fn section(out: &mut String, title: &str, rows: &[(&str, String)]) {
    let width = rows.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
    out.push_str(title);
    out.push('\n');
    for (k, v) in rows {
        let key = if k.is_empty() {
            String::new()
        } else {
            format!("{k}:")
        };
        out.push_str(&format!("  {key:<width$}  {v}\n", width = width + 1));
    }
}

/// The chain top first, each device indented under the one it belongs to.
fn device_tree(devices: &[Device]) -> Vec<String> {
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
    let mut seen = Vec::new();
    let mut out = Vec::new();
    for d in devices {
        walk(devices, d, 0, &mut seen, &mut out);
    }
    out
}

/// `vda (virtio, 256 GiB, mq-deadline)`, `md0 (md raid0 of nvme1n1+nvme2n1, 3.4 TiB)`.
fn describe(d: &Device) -> String {
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
    if let Some(m) = &d.model {
        facts.push(format!("\"{m}\""));
    }
    if let Some(s) = d.size_bytes {
        facts.push(size(s));
    }
    if d.rotational == Some(true) && d.transport.as_deref() != Some("partition") {
        facts.push("rotational".into());
    }
    match d.scheduler.as_deref() {
        Some("none") => facts.push("no scheduler".into()),
        Some(s) => facts.push(s.to_string()),
        None => {}
    }
    format!("{} ({})", d.name, facts.join(", "))
}

/// Binary units with at most one decimal: "256 GiB", "3.4 TiB".
fn size(bytes: u64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut v = bytes as f64;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    if (v - v.round()).abs() < 0.05 {
        format!("{:.0} {}", v.round(), UNITS[unit])
    } else {
        format!("{v:.1} {}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_summaries_read_naturally() {
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
        let tree = device_tree(&[md, leaf("nvme1n1"), leaf("nvme2n1")]);
        assert_eq!(
            tree,
            [
                "md0 (md raid0 of nvme1n1+nvme2n1)",
                "  nvme1n1 (nvme)",
                "  nvme2n1 (nvme)"
            ]
        );
        assert_eq!(size(1536 << 20), "1.5 GiB");
        assert_eq!(size(512), "512 B");
    }

    #[test]
    fn table_keys_are_aligned() {
        let text = render(&Runner::default(), &Storage::default());
        let cols: Vec<usize> = text
            .lines()
            .filter(|l| l.starts_with("  ") && l.trim_start().starts_with("device chain:"))
            .map(|l| l.find("none").unwrap())
            .collect();
        let class_col = text
            .lines()
            .find(|l| l.trim_start().starts_with("class:"))
            .unwrap();
        assert_eq!(class_col.find("unknown"), cols.first().copied());
    }
}

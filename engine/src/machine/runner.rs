//! The runner section: who this machine is (label, provider, CI run) and what it has (arch,
//! CPUs and memory this process may use, CPU model, kernel, OS, container).

use super::mountinfo;
use super::sysview::SysView;
use record::{Ci, Runner};

pub(crate) fn detect(view: &SysView, label: Option<&str>) -> Runner {
    let mut ev: Vec<String> = Vec::new();
    let hostname = view.attr("/proc/sys/kernel/hostname");
    let arch = arch(view, &mut ev);
    let ci = ci(view);
    let (provider, instance_type) = provider(view, &mut ev);
    let label = label
        .map(str::to_string)
        .or_else(|| ci_label(view, &arch))
        .or_else(|| hostname.clone())
        .unwrap_or_else(|| {
            ev.push("label: no --label, CI runner name or host name; using \"local\"".into());
            "local".to_string()
        });
    let cgroup = Cgroup::find(view, &mut ev);
    let vcpus = vcpus(view, &cgroup, &mut ev);
    let memory_gib = memory_gib(view, &cgroup, &mut ev);
    let cpu_model = cpu_model(view, &mut ev);
    let kernel = view.attr("/proc/sys/kernel/osrelease").unwrap_or_else(|| {
        ev.push("kernel: cannot read /proc/sys/kernel/osrelease".into());
        "unknown".into()
    });
    let os = os_name(view, &mut ev);
    let in_container = in_container(view, &mut ev);
    Runner {
        label,
        provider,
        arch,
        vcpus,
        memory_gib,
        cpu_model,
        kernel,
        os,
        ci,
        instance_type,
        variant: None,
        in_container,
        hostname,
        evidence: ev,
    }
}

/// Rust/kernel architecture names to the ones runner labels use.
fn normalize_arch(machine: &str) -> String {
    match machine {
        "x86_64" | "amd64" => "x64".into(),
        "aarch64" | "arm64" => "arm64".into(),
        other => other.into(),
    }
}

fn arch(view: &SysView, ev: &mut Vec<String>) -> String {
    match view.attr("/proc/sys/kernel/arch") {
        Some(m) => normalize_arch(&m),
        None => {
            ev.push("arch: /proc/sys/kernel/arch unreadable; using the build target".into());
            normalize_arch(std::env::consts::ARCH)
        }
    }
}

fn ci(view: &SysView) -> Option<Ci> {
    if view.env("GITHUB_ACTIONS") != Some("true") {
        return None;
    }
    let image = match (view.env("ImageOS"), view.env("ImageVersion")) {
        (Some(os), Some(v)) => Some(format!("{os}/{v}")),
        (Some(os), None) => Some(os.to_string()),
        _ => None,
    };
    let get = |k: &str| view.env(k).map(str::to_string);
    Some(Ci {
        system: "github-actions".into(),
        run_id: get("GITHUB_RUN_ID"),
        job: get("GITHUB_JOB"),
        image,
        runner_name: get("RUNNER_NAME"),
        repository: get("GITHUB_REPOSITORY"),
        environment: get("RUNNER_ENVIRONMENT"),
    })
}

fn is_github_hosted(view: &SysView) -> bool {
    match view.env("RUNNER_ENVIRONMENT") {
        Some(env) => env == "github-hosted",
        // Older runners do not set RUNNER_ENVIRONMENT; only hosted images set ImageOS.
        None => view.env("ImageOS").is_some(),
    }
}

/// On a GitHub-hosted runner the runner name ("GitHub Actions 12") says nothing; the image
/// and the architecture name the kind of machine. Elsewhere the runner's own name does.
fn ci_label(view: &SysView, arch: &str) -> Option<String> {
    if is_github_hosted(view) {
        // Job containers do not inherit ImageOS.
        return Some(match view.env("ImageOS") {
            Some(image) => format!("github-{image}-{arch}"),
            None => format!("github-hosted-{arch}"),
        });
    }
    view.env("RUNNER_NAME").map(str::to_string)
}

/// Azure's fixed chassis asset tag, which plain Hyper-V machines do not carry.
const AZURE_ASSET_TAG: &str = "7783-7084-3265-9085-8269-3286-77";

/// Whether DMI says this machine is an Azure VM: sys_vendor "Microsoft Corporation" and
/// Azure's fixed chassis asset tag, which plain Hyper-V and WSL2 do not carry.
pub(super) fn dmi_says_azure(view: &SysView) -> bool {
    view.attr("/sys/class/dmi/id/sys_vendor").as_deref() == Some("Microsoft Corporation")
        && view.attr("/sys/class/dmi/id/chassis_asset_tag").as_deref() == Some(AZURE_ASSET_TAG)
}

fn provider(view: &SysView, ev: &mut Vec<String>) -> (Option<String>, Option<String>) {
    let dmi = |f: &str| view.attr(&format!("/sys/class/dmi/id/{f}"));
    let vendor = dmi("sys_vendor");
    let product = dmi("product_name");
    let mut cloud: Option<&str> = None;
    let mut instance_type = None;
    match (&vendor, &product) {
        (None, None) => {
            ev.push("cloud: /sys/class/dmi/id/sys_vendor and product_name unreadable".into())
        }
        _ => {
            let v = vendor.as_deref().unwrap_or("");
            let p = product.as_deref().unwrap_or("");
            ev.push(format!("DMI: sys_vendor = {v}, product_name = {p}"));
            if v == "Amazon EC2" {
                cloud = Some("aws");
                // Nitro instances name their type, e.g. "m7i.large".
                if p.contains('.') {
                    instance_type = Some(p.to_string());
                }
            } else if v == "Microsoft Corporation" && p == "Virtual Machine" {
                if dmi_says_azure(view) {
                    cloud = Some("azure");
                } else {
                    ev.push("Hyper-V virtual machine without Azure's chassis asset tag".into());
                }
            } else if v == "Google" || p == "Google Compute Engine" {
                cloud = Some("gcp");
            }
        }
    }
    if is_github_hosted(view) {
        ev.push(format!(
            "provider: github-hosted (RUNNER_ENVIRONMENT = {}, ImageOS = {}){}",
            view.env("RUNNER_ENVIRONMENT").unwrap_or("unset"),
            view.env("ImageOS").unwrap_or("unset"),
            cloud
                .map(|c| format!(", running on {c}"))
                .unwrap_or_default()
        ));
        return (Some("github-hosted".into()), instance_type);
    }
    (cloud.map(str::to_string), instance_type)
}

/// The process's cgroup directories (v2 unified, v1 cpu and memory), as logical paths.
#[derive(Default)]
struct Cgroup {
    v2: Option<CgroupDir>,
    v1_cpu: Option<CgroupDir>,
    v1_memory: Option<CgroupDir>,
}

/// A cgroup directory and the mount point above which limits stop.
struct CgroupDir {
    dir: String,
    mount_point: String,
}

impl Cgroup {
    fn find(view: &SysView, ev: &mut Vec<String>) -> Cgroup {
        let mut cg = Cgroup::default();
        let text = match view.read("/proc/self/cgroup") {
            Ok(t) => t,
            Err(why) => {
                ev.push(format!("cgroup limits not applied: {why}"));
                return cg;
            }
        };
        let mounts = view
            .read("/proc/self/mountinfo")
            .map(|t| mountinfo::parse(&t).0)
            .unwrap_or_default();
        for line in text.lines() {
            let mut parts = line.splitn(3, ':');
            let (_, controllers, path) = match (parts.next(), parts.next(), parts.next()) {
                (Some(a), Some(b), Some(c)) => (a, b, c),
                _ => continue,
            };
            let mount = |fstype: &str, controller: Option<&str>| {
                mounts
                    .iter()
                    .filter(|m| m.fstype == fstype)
                    .find(|m| {
                        controller
                            .is_none_or(|c| mountinfo::split_options(&m.super_options).contains(&c))
                    })
                    .map(|m| cgroup_dir(view, m, path))
            };
            if controllers.is_empty() {
                cg.v2 = mount("cgroup2", None);
            } else {
                let list: Vec<&str> = controllers.split(',').collect();
                if list.contains(&"cpu") {
                    cg.v1_cpu = mount("cgroup", Some("cpu"));
                }
                if list.contains(&"memory") {
                    cg.v1_memory = mount("cgroup", Some("memory"));
                }
            }
        }
        cg
    }
}

/// The directory of cgroup `path` below a cgroup mount. A cgroup namespace or a mount of a
/// subtree (mount root != "/") shifts the path; fall back to the mount point itself.
fn cgroup_dir(view: &SysView, mount: &mountinfo::MountEntry, path: &str) -> CgroupDir {
    let rel = if mountinfo::is_under(path, &mount.root) {
        &path[mount.root.trim_end_matches('/').len()..]
    } else {
        path
    };
    let candidate = format!(
        "{}{}",
        mount.mount_point.trim_end_matches('/'),
        rel.trim_end_matches('/')
    );
    let dir = if view.exists(&candidate) {
        candidate
    } else {
        mount.mount_point.clone()
    };
    CgroupDir {
        dir,
        mount_point: mount.mount_point.clone(),
    }
}

/// Walk from a cgroup directory up to its mount, reading `file` at each level; the smallest
/// limit applies.
fn smallest_limit(
    view: &SysView,
    cg: &CgroupDir,
    file: &str,
    parse: impl Fn(&str) -> Option<f64>,
) -> Option<(f64, String)> {
    let mut best: Option<(f64, String)> = None;
    let mut cur = cg.dir.clone();
    loop {
        let p = format!("{cur}/{file}");
        if let Some(v) = view.attr(&p).as_deref().and_then(&parse)
            && best.as_ref().is_none_or(|(b, _)| v < *b)
        {
            best = Some((v, p));
        }
        match cur.rfind('/') {
            Some(i) if cur != cg.mount_point && mountinfo::is_under(&cur[..i], &cg.mount_point) => {
                cur.truncate(i)
            }
            _ => break,
        }
    }
    best
}

fn vcpus(view: &SysView, cg: &Cgroup, ev: &mut Vec<String>) -> u32 {
    let affinity = if view.is_live() {
        live_affinity_count()
    } else {
        view.read("/proc/self/status").ok().and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
                .and_then(|list| count_cpu_list(list.trim()))
        })
    };
    let mut vcpus = match affinity {
        Some(n) => n,
        None => {
            // Not crate::job::cpu::available_cpus: this module builds without the `measure` feature.
            let n = std::thread::available_parallelism()
                .map(|n| n.get() as u32)
                .unwrap_or(1);
            ev.push(format!(
                "vcpus: CPU affinity unreadable; using {n} from the runtime"
            ));
            n
        }
    };
    let quota = cg
        .v2
        .as_ref()
        .and_then(|d| smallest_limit(view, d, "cpu.max", parse_cpu_max))
        .or_else(|| {
            let d = cg.v1_cpu.as_ref()?;
            let period: f64 = view
                .attr(&format!("{}/cpu.cfs_period_us", d.dir))?
                .parse()
                .ok()?;
            smallest_limit(view, d, "cpu.cfs_quota_us", |q| {
                let q: f64 = q.parse().ok()?;
                (q > 0.0 && period > 0.0).then(|| q / period)
            })
        });
    if let Some((cpus, file)) = quota {
        let capped = (cpus.ceil() as u32).max(1);
        if capped < vcpus {
            ev.push(format!("vcpus: {vcpus} CPUs in the affinity mask, capped to {capped} by {file} ({cpus:.2} CPUs)"));
            vcpus = capped;
        }
    }
    vcpus
}

/// `"200000 100000"` -> 2.0 CPUs; `"max 100000"` -> no limit.
fn parse_cpu_max(s: &str) -> Option<f64> {
    let mut it = s.split_whitespace();
    let quota: f64 = it.next()?.parse().ok()?;
    let period: f64 = it.next().unwrap_or("100000").parse().ok()?;
    (period > 0.0).then(|| quota / period)
}

/// `"0-3,8,10-11"` -> 7.
fn count_cpu_list(list: &str) -> Option<u32> {
    let mut n = 0;
    for part in list.split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => n += b.parse::<u32>().ok()?.checked_sub(a.parse::<u32>().ok()?)? + 1,
            None => {
                part.parse::<u32>().ok()?;
                n += 1
            }
        }
    }
    (n > 0).then_some(n)
}

fn live_affinity_count() -> Option<u32> {
    // SAFETY: cpu_set_t is plain data; zeroed is a valid empty set, and sched_getaffinity
    // writes at most size_of::<cpu_set_t>() bytes into it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return None;
        }
        let n = libc::CPU_COUNT(&set);
        (n > 0).then_some(n as u32)
    }
}

const GIB: f64 = 1024.0 * 1024.0 * 1024.0;

fn memory_gib(view: &SysView, cg: &Cgroup, ev: &mut Vec<String>) -> f64 {
    let total = match view.read("/proc/meminfo") {
        Ok(text) => text
            .lines()
            .find_map(|l| l.strip_prefix("MemTotal:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
            .map(|kib| kib * 1024.0),
        Err(why) => {
            ev.push(format!("memory: {why}"));
            None
        }
    };
    // cgroup v1 reports "no limit" as a huge page-rounded number.
    let real_limit = |s: &str| s.parse::<f64>().ok().filter(|v| *v < (1u64 << 62) as f64);
    let limit = cg
        .v2
        .as_ref()
        .and_then(|d| smallest_limit(view, d, "memory.max", real_limit))
        .or_else(|| {
            smallest_limit(
                view,
                cg.v1_memory.as_ref()?,
                "memory.limit_in_bytes",
                real_limit,
            )
        });
    let bytes = match (total, limit) {
        (Some(t), Some((l, file))) if l < t => {
            ev.push(format!(
                "memory: {:.1} GiB installed, capped to {:.1} GiB by {file}",
                t / GIB,
                l / GIB
            ));
            l
        }
        (Some(t), _) => t,
        (None, Some((l, _))) => l,
        (None, None) => 0.0,
    };
    (bytes / GIB * 10.0).round() / 10.0
}

/// Arm cores that /proc/cpuinfo names only by number: (implementer, part, name).
const ARM_PARTS: &[(&str, &str, &str)] = &[
    ("0x41", "0xd0c", "Arm Neoverse-N1"),
    ("0x41", "0xd40", "Arm Neoverse-V1"),
    ("0x41", "0xd49", "Arm Neoverse-N2"),
    ("0x41", "0xd4f", "Arm Neoverse-V2"),
    ("0x41", "0xd84", "Arm Neoverse-V3"),
    ("0x41", "0xd8e", "Arm Neoverse-N3"),
    ("0x41", "0xd08", "Arm Cortex-A72"),
    ("0xc0", "0xac3", "AmpereOne"),
];

fn cpu_model(view: &SysView, ev: &mut Vec<String>) -> String {
    let text = match view.read("/proc/cpuinfo") {
        Ok(t) => t,
        Err(why) => {
            ev.push(format!("cpu model: {why}"));
            return "unknown".into();
        }
    };
    let field = |key: &str| {
        text.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            (k.trim() == key).then(|| v.trim().to_string())
        })
    };
    if let Some(name) = field("model name").filter(|n| !n.is_empty()) {
        return name;
    }
    if let (Some(imp), Some(part)) = (field("CPU implementer"), field("CPU part")) {
        return ARM_PARTS
            .iter()
            .find(|(i, p, _)| *i == imp && *p == part)
            .map(|(_, _, n)| n.to_string())
            .unwrap_or_else(|| format!("Arm implementer {imp} part {part}"));
    }
    ev.push("cpu model: /proc/cpuinfo names no model".into());
    "unknown".into()
}

fn os_name(view: &SysView, ev: &mut Vec<String>) -> String {
    let text = match view.read("/etc/os-release") {
        Ok(t) => t,
        Err(why) => match view.read("/usr/lib/os-release") {
            Ok(t) => t,
            Err(_) => {
                ev.push(format!("os: {why} (nor /usr/lib/os-release)"));
                return "unknown".into();
            }
        },
    };
    let value = |key: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(key)?.strip_prefix('='))
            .map(|v| v.trim().trim_matches('"').to_string())
            .filter(|v| !v.is_empty())
    };
    value("PRETTY_NAME")
        .or_else(|| value("NAME"))
        .unwrap_or_else(|| {
            ev.push("os: /etc/os-release has no PRETTY_NAME".into());
            "unknown".into()
        })
}

fn in_container(view: &SysView, ev: &mut Vec<String>) -> bool {
    let mut hints = Vec::new();
    for f in ["/.dockerenv", "/run/.containerenv"] {
        if view.exists(f) {
            hints.push(format!("{f} exists"));
        }
    }
    if let Some(c) = view.env("container") {
        hints.push(format!("container={c} in the environment"));
    }
    if let Ok(cg) = view.read("/proc/self/cgroup")
        && let Some(k) = [
            "/docker",
            "/kubepods",
            "containerd",
            "/libpod",
            "/lxc/",
            "/actions_job",
        ]
        .into_iter()
        .find(|k| cg.contains(k))
    {
        hints.push(format!(
            "/proc/self/cgroup mentions {}",
            k.trim_matches('/')
        ));
    }
    if let Ok(text) = view.read("/proc/self/mountinfo") {
        let (mounts, _) = mountinfo::parse(&text);
        if mountinfo::find(&mounts, "/")
            .is_some_and(|m| m.mount_point == "/" && m.fstype == "overlay")
        {
            hints.push("the root filesystem is an overlay".into());
        }
    }
    if hints.is_empty() {
        return false;
    }
    ev.push(format!("container: {}", hints.join(", ")));
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists_count() {
        assert_eq!(count_cpu_list("0-3,8,10-11"), Some(7));
        assert_eq!(count_cpu_list("0"), Some(1));
        assert_eq!(count_cpu_list("3-1"), None);
        assert_eq!(count_cpu_list(""), None);
    }

    #[test]
    fn cpu_max_quota() {
        assert_eq!(parse_cpu_max("200000 100000"), Some(2.0));
        assert_eq!(parse_cpu_max("150000 100000"), Some(1.5));
        assert_eq!(parse_cpu_max("max 100000"), None);
    }

    #[test]
    fn arch_names() {
        assert_eq!(normalize_arch("x86_64"), "x64");
        assert_eq!(normalize_arch("aarch64"), "arm64");
        assert_eq!(normalize_arch("riscv64"), "riscv64");
    }
}

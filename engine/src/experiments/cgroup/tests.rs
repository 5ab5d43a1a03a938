//! The cgroup room against recorded trees: files laid out as the kernel shows them, in a
//! temporary folder. The live v1 path is exercised by the integration tests (`whatif.rs`).

use super::*;

const VDA: DevNum = DevNum {
    major: 254,
    minor: 0,
};

/// A cgroup-v2 root as a systemd machine shows it: the io controller on, a daemon in
/// `system.slice/docker.service` with a bandwidth limit of its own.
fn v2_tree() -> (tempfile::TempDir, Hierarchy, PathBuf) {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("sys/fs/cgroup");
    let daemon = root.join("system.slice/docker.service");
    fs::create_dir_all(&daemon).unwrap();
    fs::write(
        root.join("cgroup.controllers"),
        "cpuset cpu io memory pids\n",
    )
    .unwrap();
    fs::write(root.join("cgroup.subtree_control"), "cpu memory pids\n").unwrap();
    fs::write(root.join("cgroup.procs"), "1\n").unwrap();
    fs::write(daemon.join("cgroup.procs"), "700\n").unwrap();
    fs::write(
        daemon.join("io.max"),
        "8:0 rbps=1048576 wbps=max riops=max wiops=max\n",
    )
    .unwrap();
    let proc_root = t.path().join("proc");
    for (pid, cg) in [(700, "/system.slice/docker.service"), (42, "/user.slice")] {
        fs::create_dir_all(proc_root.join(pid.to_string())).unwrap();
        fs::write(
            proc_root.join(pid.to_string()).join("cgroup"),
            format!("0::{cg}\n"),
        )
        .unwrap();
    }
    let h = Hierarchy::detect(&root).unwrap();
    (t, h, proc_root)
}

#[test]
fn detects_v2_and_v1_and_says_what_is_missing() {
    let (_t, h, _) = v2_tree();
    assert_eq!(h.version, Version::V2);
    let t = tempfile::tempdir().unwrap();
    fs::create_dir_all(t.path().join("blkio")).unwrap();
    fs::write(t.path().join("blkio/blkio.throttle.read_iops_device"), "").unwrap();
    let v1 = Hierarchy::detect(t.path()).unwrap();
    assert_eq!(
        (v1.version, v1.root.clone()),
        (Version::V1, t.path().join("blkio"))
    );
    let none = tempfile::tempdir().unwrap();
    let err = Hierarchy::detect(none.path()).unwrap_err();
    assert!(err.contains("no block-I/O throttling"), "{err}");
}

#[test]
fn v2_caps_are_written_as_io_max_wants_them_and_removed_with_the_group() {
    let (_t, h, proc_root) = v2_tree();
    let g = CapGroup::create(&h, "cargo-diskbench-1-ab")
        .unwrap()
        .with_proc_root(&proc_root);
    // The io controller was turned on for the root's children.
    assert_eq!(
        fs::read_to_string(h.root.join("cgroup.subtree_control")).unwrap(),
        "+io"
    );
    g.set_caps(
        &[VDA],
        &IoCaps {
            riops: Some(1000),
            wiops: Some(1000),
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(
        fs::read_to_string(g.dir().join("io.max")).unwrap(),
        "254:0 riops=1000 wiops=1000 rbps=max wbps=max"
    );
    // The kernel's io.stat, as read back.
    fs::write(
        g.dir().join("io.stat"),
        "254:0 rbytes=4096 wbytes=8192 rios=1 wios=2 dbytes=0 dios=0\n\
         8:0 rbytes=1 wbytes=1 rios=1 wios=1 dbytes=0 dios=0\n",
    )
    .unwrap();
    assert_eq!(
        g.usage(&[VDA]),
        CgroupIo {
            read_bytes: 4096,
            write_bytes: 8192,
            read_ios: 1,
            write_ios: 2
        }
    );
    let dir = g.dir().to_path_buf();
    assert_eq!(ours(&h), vec!["cargo-diskbench-1-ab".to_string()]);
    g.close().unwrap();
    assert!(!dir.exists());
    assert!(ours(&h).is_empty());
}

#[test]
fn a_daemon_capped_in_place_gets_its_own_limits_back_exactly() {
    let (_t, h, proc_root) = v2_tree();
    let daemon_io_max = h.root.join("system.slice/docker.service/io.max");
    let mut g = CapGroup::create(&h, "cargo-diskbench-1-cd")
        .unwrap()
        .with_proc_root(&proc_root);
    let cg = h.cgroup_of(&proc_root, 700).unwrap();
    assert_eq!(cg, "/system.slice/docker.service");
    let caps = IoCaps {
        rbps: Some(50 << 20),
        wbps: Some(50 << 20),
        ..Default::default()
    };
    g.cap_in_place(&cg, &[VDA, DevNum { major: 8, minor: 0 }], &caps)
        .unwrap();
    // Each write is one device's line (the kernel keeps the others).
    assert_eq!(
        fs::read_to_string(&daemon_io_max).unwrap(),
        "8:0 riops=max wiops=max rbps=52428800 wbps=52428800"
    );
    drop(g);
    // Restored: 254:0 had no limit (all max), 8:0 its own bandwidth limit, as it was.
    assert_eq!(
        fs::read_to_string(&daemon_io_max).unwrap(),
        "8:0 rbps=1048576 wbps=max riops=max wiops=max"
    );
    assert!(ours(&h).is_empty());
}

#[test]
fn adopted_processes_go_back_where_they_came_from() {
    let (_t, h, proc_root) = v2_tree();
    let mut g = CapGroup::create(&h, "cargo-diskbench-1-ef")
        .unwrap()
        .with_proc_root(&proc_root);
    g.adopt(42).unwrap();
    assert_eq!(
        fs::read_to_string(g.dir().join("cgroup.procs")).unwrap(),
        "42"
    );
    fs::create_dir_all(h.root.join("user.slice")).unwrap();
    g.close().unwrap();
    assert_eq!(
        fs::read_to_string(h.root.join("user.slice/cgroup.procs")).unwrap(),
        "42"
    );
}

#[test]
fn stale_groups_are_swept_and_the_live_run_s_kept() {
    let (_t, h, proc_root) = v2_tree();
    // 42 runs (it is in the recorded /proc) but is not the live run: its name is a reused
    // pid, and the group a leftover like the others.
    for name in [
        "cargo-diskbench-999999-aa",
        "cargo-diskbench-42-bb",
        "cargo-diskbench-7-cc",
        "cargo-diskbench-7-dd",
        "other",
    ] {
        fs::create_dir(h.root.join(name)).unwrap();
    }
    let sweep = sweep_stale(&h, &proc_root, |pid| pid == 7);
    let removed: Vec<String> = sweep.removed.into_iter().map(|s| s.name).collect();
    assert_eq!(
        removed,
        vec!["cargo-diskbench-42-bb", "cargo-diskbench-999999-aa"]
    );
    assert_eq!(
        sweep.kept,
        vec!["cargo-diskbench-7-cc", "cargo-diskbench-7-dd"]
    );
    let mut left = ours(&h);
    left.sort();
    assert_eq!(left, vec!["cargo-diskbench-7-cc", "cargo-diskbench-7-dd"]);
    assert!(h.root.join("other").exists());
    assert!(sweep_stale(&h, &proc_root, |_| false).kept.is_empty());
    assert!(ours(&h).is_empty());
}

#[test]
fn v1_files_parse() {
    let text = "254:0 Read 4096\n254:0 Write 8192\n254:0 Sync 0\n254:0 Total 12288\n\
                7:0 Read 5\nTotal 12293\n";
    assert_eq!(parse_v1_service(text, &[VDA]), (4096, 8192));
    let cg = "9:name=systemd:/\n7:blkio:/docker/abc\n0::/\n";
    assert_eq!(
        parse_proc_cgroup(cg, Version::V1).as_deref(),
        Some("/docker/abc")
    );
    assert_eq!(parse_proc_cgroup(cg, Version::V2).as_deref(), Some("/"));
    assert_eq!(
        DevNum::parse("254:16"),
        Some(DevNum {
            major: 254,
            minor: 16
        })
    );
    assert_eq!(DevNum::parse("vda"), None);
}

/// The state files in a run folder.
fn state_files(run_dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(run_dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// A run killed with SIGKILL after capping a daemon's cgroup in place: nothing of it ran
/// after the cap (no Drop), and the next run's sweep writes the old limits back from the
/// state file, exactly, for a device that had a limit and one that had none.
#[test]
fn a_daemon_capped_in_place_by_a_killed_run_gets_its_limits_back_from_the_state_file() {
    let (t, h, proc_root) = v2_tree();
    // /run exists; the tool makes only its own folder in it.
    fs::create_dir(t.path().join("run")).unwrap();
    let run_dir = t.path().join("run/cargo-diskbench");
    let daemon_io_max = h.root.join("system.slice/docker.service/io.max");
    let mut g = CapGroup::create(&h, "cargo-diskbench-1-gh")
        .unwrap()
        .with_proc_root(&proc_root)
        .with_run_dir(&run_dir);
    let caps = IoCaps {
        riops: Some(1000),
        wiops: Some(1000),
        ..Default::default()
    };
    g.cap_in_place(
        "/system.slice/docker.service",
        &[DevNum { major: 8, minor: 0 }, VDA],
        &caps,
    )
    .unwrap();
    let files = state_files(&run_dir);
    assert_eq!(files.len(), 1, "{files:?}");
    let pid = std::process::id();
    assert!(files[0].starts_with(&format!("limits-{pid}-")), "{files:?}");
    let state = fs::read_to_string(run_dir.join(&files[0])).unwrap();
    assert!(
        state.contains("8:0 rbps=1048576 wbps=max riops=max wiops=max"),
        "{state}"
    );
    assert_eq!(
        fs::read_to_string(&daemon_io_max).unwrap(),
        "254:0 riops=1000 wiops=1000 rbps=max wbps=max"
    );
    // SIGKILL: no close, no Drop.
    std::mem::forget(g);
    // The live run's file is left alone.
    let kept = saved_limits::sweep(&h.as_root(), &run_dir, |p| p == pid);
    assert_eq!(kept.kept, files);
    assert_eq!(state_files(&run_dir), files);
    // Lines are written one device at a time; the recorded file keeps the last write, so
    // record what the kernel would hold after each.
    let sweep = saved_limits::sweep(&h.as_root(), &run_dir, |_| false);
    assert!(sweep.refused.is_empty(), "{:?}", sweep.refused);
    assert_eq!(sweep.restored.len(), 1);
    assert!(
        sweep.restored[0]
            .contains("restored the limits of the cgroup /system.slice/docker.service"),
        "{:?}",
        sweep.restored
    );
    assert!(
        sweep.restored[0].contains("8:0 rbps=1048576 wbps=max riops=max wiops=max")
            && sweep.restored[0].contains("254:0 rbps=max wbps=max riops=max wiops=max"),
        "{:?}",
        sweep.restored
    );
    assert_eq!(
        fs::read_to_string(&daemon_io_max).unwrap(),
        "254:0 rbps=max wbps=max riops=max wiops=max"
    );
    assert!(state_files(&run_dir).is_empty());
}

/// A normal end writes the limits back and deletes the state file.
#[test]
fn a_normal_end_restores_and_deletes_the_state_file() {
    let (t, h, proc_root) = v2_tree();
    let run_dir = t.path().join("run");
    let mut g = CapGroup::create(&h, "cargo-diskbench-1-ij")
        .unwrap()
        .with_proc_root(&proc_root)
        .with_run_dir(&run_dir);
    g.cap_in_place(
        "/system.slice/docker.service",
        &[DevNum { major: 8, minor: 0 }],
        &IoCaps {
            wbps: Some(1 << 20),
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(state_files(&run_dir).len(), 1);
    g.close().unwrap();
    assert!(state_files(&run_dir).is_empty());
    assert_eq!(
        fs::read_to_string(h.root.join("system.slice/docker.service/io.max")).unwrap(),
        "8:0 rbps=1048576 wbps=max riops=max wiops=max"
    );
}

/// A run folder that is not ours (a symlink, another user's, writable by others): nothing is
/// capped in place, since the limits could not be kept.
#[test]
fn no_cap_in_place_without_a_run_folder_of_our_own() {
    use std::os::unix::fs::PermissionsExt as _;
    let (t, h, proc_root) = v2_tree();
    let elsewhere = t.path().join("elsewhere");
    fs::create_dir(&elsewhere).unwrap();
    let link = t.path().join("run-link");
    std::os::unix::fs::symlink(&elsewhere, &link).unwrap();
    let open = t.path().join("run-open");
    fs::create_dir(&open).unwrap();
    fs::set_permissions(&open, fs::Permissions::from_mode(0o777)).unwrap();
    let daemon_io_max = h.root.join("system.slice/docker.service/io.max");
    let before = fs::read_to_string(&daemon_io_max).unwrap();
    for (run_dir, says) in [(&link, "symlink"), (&open, "writable by it alone")] {
        let mut g = CapGroup::create(&h, "cargo-diskbench-1-kl")
            .unwrap()
            .with_proc_root(&proc_root)
            .with_run_dir(run_dir);
        let e = g
            .cap_in_place(
                "/system.slice/docker.service",
                &[VDA],
                &IoCaps {
                    riops: Some(10),
                    ..Default::default()
                },
            )
            .unwrap_err();
        // NotFound would mean "no io controller there" to the caller, which then moves the
        // daemon instead.
        assert_ne!(e.kind(), std::io::ErrorKind::NotFound);
        let err = e.to_string();
        assert!(
            err.contains(says) && err.contains("was not capped"),
            "{err}"
        );
        assert_eq!(fs::read_to_string(&daemon_io_max).unwrap(), before);
        g.close().unwrap();
        assert!(state_files(&elsewhere).is_empty());
        assert!(state_files(&open).is_empty());
    }
}

/// State files that are corrupt or hostile are refused with the file named and the reason,
/// nothing of them is written, and they stay for a person to look at; a symlink is not
/// followed.
#[test]
fn hostile_or_corrupt_state_files_are_refused_and_not_followed() {
    let (t, h, _) = v2_tree();
    let run_dir = t.path().join("run");
    fs::create_dir(&run_dir).unwrap();
    // What a hostile file would aim at, outside the hierarchy.
    let target = t.path().join("etc");
    fs::create_dir(&target).unwrap();
    fs::write(target.join("io.max"), "keep").unwrap();
    // A symlink inside the hierarchy to outside it.
    std::os::unix::fs::symlink(&target, h.root.join("system.slice/link")).unwrap();
    let state = |cgroup: &str, file: &str, line: &str| {
        serde_json::json!({
            "schema": "diskbench.saved-limits/1", "pid": 4194400, "version": "v2",
            "cgroup": cgroup, "lines": [[file, line]]
        })
        .to_string()
    };
    let good_line = "8:0 riops=max wiops=max rbps=max wbps=max";
    let cases = [
        (
            "limits-4194400-a.json",
            "{not json".to_string(),
            "not a state file",
        ),
        (
            "limits-4194400-b.json",
            state("/../../etc", "io.max", good_line),
            "not a plain path",
        ),
        (
            "limits-4194400-c.json",
            state("/system.slice/link", "io.max", good_line),
            "is a symlink; not followed",
        ),
        (
            "limits-4194400-d.json",
            state("/system.slice/docker.service", "cgroup.procs", "1"),
            "is not a throttle file of cgroup v2",
        ),
        (
            "limits-4194400-e.json",
            state("/system.slice/docker.service", "io.max", "8:0 rbps=1\n+cpu"),
            "not a throttle rule",
        ),
        (
            "limits-4194400-f.json",
            state("relative", "io.max", good_line),
            "not a path from the root",
        ),
        (
            "limits-4194401-g.json",
            state("/system.slice/docker.service", "io.max", good_line),
            "named for pid 4194401",
        ),
    ];
    for (name, text, _) in &cases {
        fs::write(run_dir.join(name), text).unwrap();
    }
    // A state file that is a symlink (to a good-looking file elsewhere).
    fs::write(
        target.join("state.json"),
        state("/system.slice/docker.service", "io.max", good_line),
    )
    .unwrap();
    std::os::unix::fs::symlink(
        target.join("state.json"),
        run_dir.join("limits-4194400-h.json"),
    )
    .unwrap();
    let daemon_io_max = h.root.join("system.slice/docker.service/io.max");
    let before = fs::read_to_string(&daemon_io_max).unwrap();
    let sweep = saved_limits::sweep(&h.as_root(), &run_dir, |_| false);
    assert!(sweep.restored.is_empty(), "{:?}", sweep.restored);
    assert_eq!(sweep.refused.len(), cases.len() + 1, "{:?}", sweep.refused);
    for (name, _, says) in &cases {
        let refused = sweep
            .refused
            .iter()
            .find(|r| r.contains(&format!("/{name}:")))
            .unwrap_or_else(|| panic!("{name} not refused: {:?}", sweep.refused));
        assert!(
            refused.contains(name)
                && refused.contains(says)
                && refused.contains("nothing was written"),
            "{name}: {refused}"
        );
    }
    assert!(
        sweep
            .refused
            .iter()
            .any(|r| r.contains("limits-4194400-h.json: it is a symlink; not followed")),
        "{:?}",
        sweep.refused
    );
    assert_eq!(fs::read_to_string(&daemon_io_max).unwrap(), before);
    assert_eq!(fs::read_to_string(target.join("io.max")).unwrap(), "keep");
    assert_eq!(state_files(&run_dir).len(), cases.len() + 1);
    // A run folder that is a symlink is not followed either.
    let link = t.path().join("run-link");
    std::os::unix::fs::symlink(&run_dir, &link).unwrap();
    let sweep = saved_limits::sweep(&h.as_root(), &link, |_| false);
    assert_eq!(sweep.refused.len(), 1, "{:?}", sweep.refused);
    assert!(
        sweep.refused[0].contains("not followed"),
        "{:?}",
        sweep.refused
    );
}

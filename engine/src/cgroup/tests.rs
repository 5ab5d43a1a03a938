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

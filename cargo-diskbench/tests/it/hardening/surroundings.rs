//! Class 8: what a run meets around it: option values out of range, a closed stdout or
//! stderr, control characters in a label, a scratch folder a killed run left, ramfs.

use super::*;

#[test]
fn class8_options_name_their_range_and_a_closed_stdout_is_quiet() {
    // Writes records with fsync: a disk-loading test (see common::disk_quiet).
    let _disk = common::disk_load();
    let sb = sandbox();
    // A value out of range names the option, and its range where it has one.
    let bad_values: [(&str, &str, Option<&str>); 10] = [
        ("--runtime", "-1", Some("0.1 to 3600")),
        ("--runtime", "abc", Some("0.1 to 3600")),
        ("--runtime", "0.000001", Some("0.1 to 3600")),
        ("--runtime", "inf", Some("0.1 to 3600")),
        ("--ramp", "-1", None),
        // Beyond u32: clap's own parser answered "not in 0..=4294967295", as if 0 were fine.
        ("--repeat", "99999999999", Some("use 1 to 100 passes")),
        ("--repeat", "4294967296", Some("use 1 to 100 passes")),
        ("--repeat", "0", Some("use 1 to 100 passes")),
        ("--repeat", "101", Some("use 1 to 100 passes")),
        ("--repeat", "-1", Some("use 1 to 100 passes")),
    ];
    for (option, value, range) in bad_values {
        let ran = run_in(sb.path(), &["run", option, value]);
        assert_eq!(ran.code, Some(2), "{option} {value}: {}", ran.context());
        assert!(
            ran.stderr.contains(option),
            "{option} {value}: {}",
            ran.stderr
        );
        if let Some(range) = range {
            assert!(
                ran.stderr.contains(range),
                "{option} {value}: {}",
                ran.stderr
            );
        }
        assert!(
            !ran.stderr.contains("0..="),
            "{option} {value}: a range that suggests 0: {}",
            ran.stderr
        );
    }

    // stdout closed before anything is written, and stdout full.
    type Stdout = fn() -> Stdio;
    let stdouts: [(&str, Stdout); 2] = [
        ("closed stdout", || {
            let (reader, writer) = std::io::pipe().unwrap();
            drop(reader);
            writer.into()
        }),
        ("> /dev/full", || {
            std::fs::OpenOptions::new()
                .write(true)
                .open("/dev/full")
                .unwrap()
                .into()
        }),
    ];
    for args in [&["fio", "--help"][..], &["machine"][..], &["--help"][..]] {
        for (what, stdout) in stdouts {
            let mut c = cmd_in(sb.path(), args);
            c.stdout(stdout()).stderr(Stdio::piped());
            let out = c.output().unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(!err.contains("panicked"), "{args:?} {what}: {err}");
            assert_ne!(out.status.code(), Some(101), "{args:?} {what}");
        }
    }

    // stderr closed in the middle of a run (`2>&1 >/dev/null | head -c 20`): the progress line
    // that fails ends the run as an interruption would, with every guard run on the way out:
    // no test files left in --dir, no record, exit 141 (never a crash).
    let dir = sb.path().join("closed-stderr");
    std::fs::create_dir(&dir).unwrap();
    let res = sb.path().join("closed-stderr-res");
    let mut c = cmd_in(
        sb.path(),
        &common::args(
            "run --dir closed-stderr --results closed-stderr-res --size \
            8M --runtime 0.5 --ramp 0 --no-steps --no-site",
        ),
    );
    c.stderr(Stdio::piped()).stdout(Stdio::null());
    let mut child = c.spawn().unwrap();
    // Read the first progress line, then close the pipe: the next line fails mid-run.
    let mut first = [0u8; 20];
    std::io::Read::read_exact(child.stderr.as_mut().unwrap(), &mut first).unwrap();
    drop(child.stderr.take());
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(141));
    assert_eq!(
        std::fs::read_dir(&dir).unwrap().count(),
        0,
        "test files left"
    );
    assert_eq!(count_entries(&res), 0, "a record behind exit 141");

    // Terminal control characters in a label are shown escaped.
    for label in ["\u{1b}[31mred", "\u{1b}]0;title\u{7}", "a\rb", "\u{9b}2J"] {
        let out = cmd_in(sb.path(), &["machine", "--label", label])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success());
        assert!(
            !text
                .chars()
                .any(|c| c.is_control() && c != '\n' && c != '\t'),
            "{label:?}: {text:?}"
        );
    }
}

#[test]
fn class8_a_scratch_folder_left_by_a_killed_run_is_reported() {
    // Writes records with fsync: a disk-loading test (see common::disk_quiet).
    let _disk = common::disk_load();
    let sb = sandbox();
    let dir = sb.path();
    // A pid that no longer runs: a child that has exited and been waited for.
    let mut child = Command::new("true").spawn().unwrap();
    let dead = child.id();
    child.wait().unwrap();
    let stale = dir.join(".diskbench-00112233aabbccdd");
    std::fs::create_dir(&stale).unwrap();
    std::fs::write(stale.join("owner.pid"), format!("{dead}\n")).unwrap();
    std::fs::write(stale.join("suite.data"), vec![0u8; 4096]).unwrap();
    // And one a running process owns (this test): not reported.
    let live = dir.join(".diskbench-00112233aabbccee");
    std::fs::create_dir(&live).unwrap();
    std::fs::write(live.join("owner.pid"), format!("{}\n", std::process::id())).unwrap();
    let mut args = quick_run(".", "res", "seq-read");
    args.push("--no-site");
    let ran = run_in(dir, &args);
    assert_eq!(ran.code, Some(0), "{}", ran.context());
    assert!(
        ran.stderr.contains(".diskbench-00112233aabbccdd"),
        "{}",
        ran.stderr
    );
    assert!(
        ran.stderr.contains(&format!("pid {dead} no longer runs")),
        "{}",
        ran.stderr
    );
    assert!(ran.stderr.contains("rm -r"), "{}", ran.stderr);
    assert!(!ran.stderr.contains("aabbccee"), "{}", ran.stderr);
    assert!(
        stale.exists() && live.exists(),
        "neither is removed without asking"
    );
}

#[test]
#[ignore = "needs root: .ci/run runs these as root with --ignored"]
fn class8_ramfs_is_measured() {
    common::require_root();
    // Writes records with fsync: a disk-loading test (see common::disk_quiet).
    let _disk = common::disk_load();
    let sb = sandbox();
    let mnt = sb.path().join("ramfs");
    let _mounted = Mounted::new("ramfs", "", &mnt);
    assert_eq!(
        engine::files::testfile::free_bytes(&mnt),
        None,
        "ramfs has no free-space figure"
    );
    let mut args = quick_run(mnt.to_str().unwrap(), "res", "seq-write");
    args.push("--no-site");
    let ran = run_in(sb.path(), &args);
    assert_eq!(ran.code, Some(0), "{}", ran.context());
}

/// A `--dir` on a read-only filesystem (a tmpfs mounted read-only, a read-only bind mount as
/// `docker -v src:dst:ro` makes one) was met only when the run made its scratch folder: an
/// EROFS error naming no option, exit 1. Now `run` and `steps` name `--dir`, say it is
/// read-only and exit 2 before any file is touched: no results folder, nothing written.
#[test]
#[ignore = "needs root: mounts; .ci/run runs these as root with --ignored"]
fn class8_a_read_only_dir_is_named_before_anything_is_touched() {
    common::require_root();
    let sb = sandbox();
    let root = sb.path();
    let ro_tmpfs = root.join("ro-tmpfs");
    let _tmpfs = Mounted::new("tmpfs", "ro,size=8m", &ro_tmpfs);
    let src = root.join("src");
    std::fs::create_dir(&src).unwrap();
    std::fs::write(src.join("kept"), "x").unwrap();
    let ro_bind = root.join("ro-bind");
    let _bind = Mounted::bind_read_only(&src, &ro_bind);
    for dir in [&ro_tmpfs, &ro_bind] {
        let d = dir.to_str().unwrap();
        let mut quick = quick_run(d, "res", "seq-read");
        quick.push("--no-site");
        let commands: [Vec<&str>; 3] = [
            quick,
            vec!["steps", "--only", "sqlite", "--dir", d, "--results", "res"],
            vec!["steps", "--dir", d, "--json", "r.json", "--results", "res"],
        ];
        for args in &commands {
            let before = tree(root, &[]);
            let ran = run_in(root, args);
            assert_eq!(ran.code, Some(2), "{args:?}: {}", ran.context());
            assert!(
                ran.stderr
                    .contains(&format!("--dir {d}: on a read-only filesystem")),
                "{args:?}: {}",
                ran.stderr
            );
            assert_eq!(before, tree(root, &[]), "{args:?} touched files");
        }
    }
}

/// `--json -` with stdout closed (`>&-`) or open for reading only: Rust's stdout takes a write
/// to a closed descriptor as done, so the JSON was lost without a word while the run said
/// `record: ...` and exited 0. Now `run` and `steps` refuse it before anything runs (exit 2,
/// naming `--json -` and what is wrong with stdout): no record, no results folder.
#[test]
fn class8_json_to_a_closed_stdout_is_refused_before_anything_runs() {
    let sb = sandbox();
    let root = sb.path();
    std::fs::write(root.join("input"), "read me").unwrap();
    let mut quick = quick_run(".", "res", "seq-read");
    quick.extend(["--no-site", "--json", "-"]);
    let commands: [Vec<&str>; 2] = [
        quick,
        vec![
            "steps",
            "--only",
            "sqlite",
            "--dir",
            ".",
            "--json",
            "-",
            "--save",
            "--results",
            "res",
        ],
    ];
    for args in &commands {
        for (stdout, says) in [
            ("closed", "--json -: stdout is closed"),
            ("read-only", "--json -: stdout is open for reading only"),
        ] {
            let mut cmd = cmd_in(root, args);
            let input =
                std::ffi::CString::new(root.join("input").as_os_str().as_encoded_bytes()).unwrap();
            let read_only = stdout == "read-only";
            // SAFETY: open/dup2/close in the child before exec (after its stdio is set up);
            // all async-signal-safe, on a path prepared before the fork.
            unsafe {
                cmd.pre_exec(move || {
                    if read_only {
                        let fd = libc::open(input.as_ptr(), libc::O_RDONLY);
                        libc::dup2(fd, 1);
                        libc::close(fd);
                    } else {
                        libc::close(1);
                    }
                    Ok(())
                });
            }
            let before = tree(root, &[]);
            let ran = run_limited(cmd, LIMIT);
            assert_eq!(ran.code, Some(2), "{args:?}, {stdout}: {}", ran.context());
            assert!(
                ran.stderr.contains(says),
                "{args:?}, {stdout}: {}",
                ran.stderr
            );
            assert!(
                !ran.stderr.contains("record:"),
                "{args:?}, {stdout}: claims a record: {}",
                ran.stderr
            );
            assert_eq!(before, tree(root, &[]), "{args:?}, {stdout}: files touched");
        }
    }
}

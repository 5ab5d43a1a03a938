//! Hardening (issue 12): each class of fault a hostile user found, tried in several variants.
//!
//! Every test works in a sandbox folder and snapshots the whole tree around the folder an
//! option names, before and after: nothing may appear, change or vanish outside it. Commands
//! that could hang on old code (a FIFO, /dev/zero, an endless chart loop) run under a time
//! limit and an address-space limit, so a regression fails the test instead of the machine.

use std::collections::BTreeMap;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use record::Record;
use site_gen::testdata::Fleet;

use crate::common;

use common::sandbox;
use common::tree::snapshot as tree;

/// What a command did.
struct Ran {
    code: Option<i32>,
    stderr: String,
    timed_out: bool,
}

impl Ran {
    fn context(&self) -> String {
        format!(
            "exit {:?}, timed out {}\nstderr: {}",
            self.code, self.timed_out, self.stderr
        )
    }
}

/// Run `cmd` with a time limit and a 2 GiB address-space limit (so reading /dev/zero cannot
/// take the machine's memory). Output goes to files, so a full pipe never blocks it.
fn run_limited(mut cmd: Command, limit: Duration) -> Ran {
    let logs = tempfile::tempdir().unwrap();
    let err_path = logs.path().join("stderr");
    cmd.stdin(Stdio::null())
        .stdout(std::fs::File::create(logs.path().join("stdout")).unwrap())
        .stderr(std::fs::File::create(&err_path).unwrap());
    // SAFETY: setrlimit is async-signal-safe and touches only the child's own limits.
    unsafe {
        cmd.pre_exec(|| {
            let lim = libc::rlimit {
                rlim_cur: 2 << 30,
                rlim_max: 2 << 30,
            };
            libc::setrlimit(libc::RLIMIT_AS, &lim);
            Ok(())
        });
    }
    let mut child = cmd.spawn().expect("cannot start cargo-diskbench");
    let start = Instant::now();
    let (code, timed_out) = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break (status.code(), false);
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            break (None, true);
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Ran {
        code,
        stderr: std::fs::read_to_string(&err_path).unwrap_or_default(),
        timed_out,
    }
}

fn cmd_in(dir: &Path, args: &[&str]) -> Command {
    let mut c = common::bin();
    c.current_dir(dir)
        .args(args)
        .env_remove("GITHUB_STEP_SUMMARY");
    c
}

const LIMIT: Duration = Duration::from_secs(120);

fn write_records(dir: &Path, records: &[Record]) {
    std::fs::create_dir_all(dir).unwrap();
    for r in records {
        record::results::write_record(dir, r).unwrap();
    }
}

/// A few good records with steps (so the steps page draws its scatters).
fn some_records() -> Vec<Record> {
    Fleet::small().records().into_iter().take(12).collect()
}

fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

/// Plain `*.json` names directly in `dir` (what the writer may create there).
fn assert_plain_records_only(dir: &Path) {
    for e in std::fs::read_dir(dir).unwrap() {
        let e = e.unwrap();
        let name = e.file_name().to_string_lossy().into_owned();
        assert!(
            e.file_type().unwrap().is_file() && name.ends_with(".json") && !name.starts_with('.'),
            "unexpected entry {name:?} in {}",
            dir.display()
        );
    }
}

// ------------------------------------------------------------------------------- class 1

#[test]
fn class1_paths_built_from_record_content_stay_inside_their_folder() {
    // Writes records with fsync: a disk-loading test (see common::disk_quiet).
    let _disk = common::disk_load();
    let sb = sandbox();
    let root = sb.path().join("deep/er/still");
    std::fs::create_dir_all(&root).unwrap();
    let (src, into, res, out) = (
        root.join("src"),
        root.join("into"),
        root.join("res"),
        root.join("out"),
    );
    std::fs::create_dir_all(&src).unwrap();
    let base = some_records()[0].clone();
    let mut n = 0;
    let mut hostile = |f: &dyn Fn(&mut Record)| {
        let mut r = base.clone();
        r.id = format!("{:08x}{:08x}", 0xbad0 + n, n);
        f(&mut r);
        let text = serde_json::to_string(&r).unwrap();
        std::fs::write(src.join(format!("r{n}.json")), text).unwrap();
        n += 1;
    };
    // Dates that are paths, absolute paths, a real prefix with a path after it.
    hostile(&|r| r.started_at = "../../../x".into());
    hostile(&|r| r.started_at = "/tmp/../escaped".into());
    hostile(&|r| r.started_at = "2026-11-01/../../../../y".into());
    hostile(&|r| r.started_at = "..".into());
    // Labels and ids that are paths: valid records, written under safe names.
    hostile(&|r| r.runner.label = "../../../../label-escape".into());
    hostile(&|r| r.runner.label = "/etc/cron.d/x".into());
    hostile(&|r| r.id = "../../../../id-escape".into());
    hostile(&|r| r.runner.label = ".hidden/..".into());
    let before = tree(sb.path(), &[&into]);
    let ran = run_limited(
        cmd_in(
            &root,
            &[
                "merge",
                "--into",
                into.to_str().unwrap(),
                src.to_str().unwrap(),
            ],
        ),
        LIMIT,
    );
    assert_eq!(ran.code, Some(0), "{}", ran.context());
    assert_eq!(
        before,
        tree(sb.path(), &[&into]),
        "merge wrote outside --into"
    );
    assert_plain_records_only(&into);
    let added = std::fs::read_dir(&into).unwrap().count();
    assert_eq!(
        added,
        4,
        "the four records with valid dates are added: {}",
        ran.context()
    );
    for needle in ["../../../x", "/tmp/../escaped", "2026-11-01/../"] {
        assert!(
            ran.stderr.contains("started_at"),
            "{needle}: {}",
            ran.stderr
        );
    }

    // A CSV whose labels are paths.
    let csv = root.join("hostile.csv");
    std::fs::write(
        &csv,
        "date,label,seq-read_mib_s\n\
         2026-10-01,../../../../csv-escape,100\n\
         2026-10-01,/etc/passwd,100\n\
         2026-10-01,..,100\n",
    )
    .unwrap();
    let before = tree(sb.path(), &[&res]);
    let ran = run_limited(
        cmd_in(
            &root,
            &[
                "import",
                "--results",
                res.to_str().unwrap(),
                csv.to_str().unwrap(),
            ],
        ),
        LIMIT,
    );
    assert_eq!(ran.code, Some(0), "{}", ran.context());
    assert_eq!(
        before,
        tree(sb.path(), &[&res]),
        "import wrote outside --results"
    );
    assert_plain_records_only(&res);
    assert_eq!(std::fs::read_dir(&res).unwrap().count(), 3);

    // The site from records whose labels are paths: pages only inside --out.
    for r in some_records() {
        record::results::write_record(&res, &r).unwrap();
    }
    let before = tree(sb.path(), &[&out]);
    let ran = run_limited(
        cmd_in(
            &root,
            &[
                "site",
                "--results",
                res.to_str().unwrap(),
                "--out",
                out.to_str().unwrap(),
            ],
        ),
        LIMIT,
    );
    assert_eq!(ran.code, Some(0), "{}", ran.context());
    assert_eq!(before, tree(sb.path(), &[&out]), "site wrote outside --out");
    let runners: Vec<String> = std::fs::read_dir(out.join("runners"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        runners
            .iter()
            .all(|n| !n.starts_with('.') && n.ends_with(".html"))
    );
    assert!(
        runners.iter().any(|n| n.contains("csv-escape")),
        "{runners:?}"
    );
}

// ------------------------------------------------------------------------------- class 2

#[test]
fn class2_inputs_are_read_only_if_regular_files_within_the_size_limit() {
    // Writes records with fsync: a disk-loading test (see common::disk_quiet).
    let _disk = common::disk_load();
    let sb = sandbox();
    let res = sb.path().join("res");
    write_records(&res, &some_records()[..3]);
    std::os::unix::fs::symlink("/dev/zero", res.join("zero.json")).unwrap();
    std::os::unix::fs::symlink("/dev/urandom", res.join("urandom.json")).unwrap();
    mkfifo(&res.join("fifo.json"));
    let big = res.join("big.json");
    std::fs::File::create(&big)
        .unwrap()
        .set_len(record::input::MAX_INPUT_BYTES + 1)
        .unwrap();

    // site: the three good records, each bad file left out with why.
    let out = sb.path().join("out");
    let ran = run_limited(
        cmd_in(sb.path(), &["site", "--results", "res", "--out", "out"]),
        LIMIT,
    );
    assert_eq!(ran.code, Some(0), "{}", ran.context());
    for why in ["a character device", "a FIFO", "over the"] {
        assert!(ran.stderr.contains(why), "{why}: {}", ran.stderr);
    }
    assert!(
        ran.stderr
            .contains(&format!("{}", record::input::MAX_INPUT_BYTES + 1))
    );
    assert!(out.join("index.html").is_file());

    // merge: the same files as sources are rejected, not read forever.
    let into = sb.path().join("into");
    let ran = run_limited(
        cmd_in(sb.path(), &["merge", "--into", "into", "res"]),
        LIMIT,
    );
    assert_eq!(ran.code, Some(0), "{}", ran.context());
    assert!(ran.stderr.contains("a FIFO") && ran.stderr.contains("a character device"));
    assert_eq!(std::fs::read_dir(&into).unwrap().count(), 3);

    // import: each refused with its reason, exit 2, nothing written.
    for bad in ["res/zero.json", "res/fifo.json", "res/big.json", "res"] {
        let before = tree(sb.path(), &[]);
        let ran = run_limited(
            cmd_in(sb.path(), &["import", "--results", "imp", bad]),
            LIMIT,
        );
        assert_eq!(ran.code, Some(2), "{bad}: {}", ran.context());
        assert!(ran.stderr.contains(bad), "{bad}: {}", ran.stderr);
        assert_eq!(
            before,
            tree(sb.path(), &[]),
            "{bad}: import wrote something"
        );
    }
}

#[test]
fn class2_test_files_are_never_written_through_a_symlink_or_into_a_special_file() {
    // Writes records with fsync: a disk-loading test (see common::disk_quiet).
    let _disk = common::disk_load();
    let sb = sandbox();
    let victim = sb.path().join("victim.bin");
    std::fs::write(&victim, b"precious data").unwrap();
    let d = sb.path().join("d");
    type Setup = fn(&Path, &Path);
    let setups: [(&str, Setup); 4] = [
        ("symlink to a file outside", |d, v| {
            std::os::unix::fs::symlink(v, d.join("t.0")).unwrap()
        }),
        ("symlink to /dev/null", |d, _| {
            std::os::unix::fs::symlink("/dev/null", d.join("t.0")).unwrap()
        }),
        ("dangling symlink", |d, v| {
            std::os::unix::fs::symlink(v.with_extension("new"), d.join("t.0")).unwrap()
        }),
        ("FIFO", |d, _| mkfifo(&d.join("t.0"))),
    ];
    for (what, setup) in setups {
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir(&d).unwrap();
        setup(&d, &victim);
        let before = tree(sb.path(), &[]);
        let ran = run_limited(
            cmd_in(
                sb.path(),
                &[
                    "fio",
                    "--directory=d",
                    "--name=t",
                    "--rw=write",
                    "--bs=4k",
                    "--size=4M",
                    "--runtime=1",
                ],
            ),
            LIMIT,
        );
        assert_eq!(ran.code, Some(2), "{what}: {}", ran.context());
        assert!(ran.stderr.contains("t.0"), "{what}: {}", ran.stderr);
        assert_eq!(before, tree(sb.path(), &[]), "{what}: something changed");
        assert_eq!(std::fs::read(&victim).unwrap(), b"precious data", "{what}");
    }
}

// ------------------------------------------------------------------------------- class 3

#[test]
fn class3_the_results_are_never_deleted_and_a_failed_render_keeps_the_earlier_site() {
    // Writes records with fsync: a disk-loading test (see common::disk_quiet).
    let _disk = common::disk_load();
    let sb = sandbox();
    let root = sb.path();
    let res = root.join("res");
    write_records(&res, &some_records());
    std::os::unix::fs::symlink(&res, root.join("linkres")).unwrap();
    let nested = root.join("site");
    write_records(&nested.join("records"), &some_records()[..2]);
    // An earlier site holding its own records: `--out site` must not delete them.
    std::fs::write(
        nested.join(".diskbench-site"),
        "written by cargo diskbench site\n",
    )
    .unwrap();

    let cases: [(&str, &str); 7] = [
        ("res", "res"),
        ("res", "res/site"),
        ("res", "other/../res/site"),
        ("res", "linkres/site2"),
        ("res", "."),
        ("linkres", "res/x"),
        ("site/records", "site"),
    ];
    for (results, out) in cases {
        let before = tree(root, &[]);
        let ran = run_limited(
            cmd_in(root, &["site", "--results", results, "--out", out]),
            LIMIT,
        );
        assert_eq!(
            ran.code,
            Some(2),
            "--results {results} --out {out}: {}",
            ran.context()
        );
        assert!(ran.stderr.contains("--out"), "{}", ran.stderr);
        assert_eq!(before, tree(root, &[]), "--results {results} --out {out}");
    }

    // An earlier site, with files it does not own.
    let out = root.join("pub");
    let build = |extra: &[&str]| {
        let mut args = vec!["site", "--results", "res", "--out", "pub"];
        args.extend_from_slice(extra);
        run_limited(cmd_in(root, &args), LIMIT)
    };
    let ran = build(&[]);
    assert_eq!(ran.code, Some(0), "{}", ran.context());
    std::fs::write(out.join("CNAME"), "bench.example.org\n").unwrap();
    std::fs::create_dir_all(out.join(".git/refs")).unwrap();
    std::fs::write(out.join(".git/config"), "[core]\n").unwrap();
    let earlier = tree(&out, &[]);

    // Broken themes: the render fails, the earlier site is untouched, nothing is left beside.
    for (i, template) in [
        "{% if %}",
        "{{ no_such_variable.field }}",
        "{% extends \"nope.html\" %}",
    ]
    .iter()
    .enumerate()
    {
        let theme = root.join(format!("theme{i}"));
        std::fs::create_dir_all(theme.join("templates")).unwrap();
        std::fs::write(theme.join("templates/runner.html"), template).unwrap();
        let around = tree(root, &[&theme]);
        let ran = build(&["--theme", theme.to_str().unwrap()]);
        assert_ne!(ran.code, Some(0), "{template}: {}", ran.context());
        assert_eq!(
            earlier,
            tree(&out, &[]),
            "{template}: the earlier site changed"
        );
        assert_eq!(
            around,
            tree(root, &[&theme]),
            "{template}: left something behind"
        );
    }

    // A good rebuild replaces the site's own files and keeps CNAME and .git.
    let ran = build(&[]);
    assert_eq!(ran.code, Some(0), "{}", ran.context());
    assert_eq!(
        std::fs::read_to_string(out.join("CNAME")).unwrap(),
        "bench.example.org\n"
    );
    assert_eq!(
        std::fs::read_to_string(out.join(".git/config")).unwrap(),
        "[core]\n"
    );
    assert!(out.join("index.html").is_file());
    let leftovers: Vec<String> = std::fs::read_dir(root)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("diskbench-new") || n.ends_with(".aside"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

/// Mounts a file system of `fstype` on `at` for the life of the guard; None when this process
/// cannot mount (not root).
struct Mounted(PathBuf);

impl Mounted {
    fn new(fstype: &str, opts: &str, at: &Path) -> Option<Mounted> {
        std::fs::create_dir_all(at).unwrap();
        let ok = Command::new("mount")
            .args(["-t", fstype, "-o", opts, fstype])
            .arg(at)
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        ok.then(|| Mounted(at.to_path_buf()))
    }
}

impl Drop for Mounted {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

/// Names in `dir` left by an unfinished swap.
fn swap_leftovers(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| {
            n.contains("diskbench-new") || n.contains("diskbench-old") || n.ends_with(".aside")
        })
        .collect()
}

#[test]
fn class3_a_mount_point_is_rendered_in_place_keeping_foreign_files() {
    // Writes records with fsync: a disk-loading test (see common::disk_quiet).
    let _disk = common::disk_load();
    let sb = sandbox();
    let root = sb.path();
    write_records(&root.join("res"), &some_records());
    // As in Docker with `-v host:/site` on a read-only root: the site folder is a mount point
    // and its parent cannot be written.
    let parent = root.join("ro");
    let mnt = parent.join("mnt");
    let Some(_parent_mounted) = Mounted::new("tmpfs", "size=1m", &parent) else {
        eprintln!(
            "class3_a_mount_point_is_rendered_in_place: cannot mount tmpfs here (needs root); not tried"
        );
        return;
    };
    let _mounted = Mounted::new("tmpfs", "size=64m", &mnt).expect("cannot mount the second tmpfs");
    let remounted = Command::new("mount")
        .args(["-o", "remount,ro"])
        .arg(&parent)
        .status()
        .is_ok_and(|s| s.success());
    assert!(remounted, "cannot make {} read-only", parent.display());
    let build = |extra: &[&str]| {
        let mut args = vec!["site", "--results", "res", "--out", "ro/mnt"];
        args.extend_from_slice(extra);
        run_limited(cmd_in(root, &args), LIMIT)
    };
    // A first site into the empty mount point, then a rebuild over it.
    let ran = build(&[]);
    assert_eq!(ran.code, Some(0), "first site: {}", ran.context());
    assert!(mnt.join("index.html").is_file());
    std::fs::write(mnt.join("CNAME"), "bench.example.org\n").unwrap();
    std::fs::write(mnt.join("runners/mine.txt"), "mine\n").unwrap();
    std::fs::create_dir_all(mnt.join("data/custom")).unwrap();
    std::fs::write(mnt.join("data/custom/x.json"), "{}\n").unwrap();
    std::fs::write(mnt.join("index.html"), "stale\n").unwrap();
    let ran = build(&[]);
    assert_eq!(ran.code, Some(0), "rebuild: {}", ran.context());
    assert_ne!(
        std::fs::read_to_string(mnt.join("index.html")).unwrap(),
        "stale\n"
    );
    for (path, text) in [
        ("CNAME", "bench.example.org\n"),
        ("runners/mine.txt", "mine\n"),
        ("data/custom/x.json", "{}\n"),
    ] {
        assert_eq!(
            std::fs::read_to_string(mnt.join(path)).unwrap(),
            text,
            "{path}"
        );
    }
    assert!(
        swap_leftovers(&mnt).is_empty(),
        "{:?}",
        swap_leftovers(&mnt)
    );
    assert!(
        swap_leftovers(root).is_empty(),
        "{:?}",
        swap_leftovers(root)
    );

    // A broken theme leaves the mounted site whole and nothing inside it.
    let earlier = tree(&mnt, &[]);
    let theme = root.join("theme");
    std::fs::create_dir_all(theme.join("templates")).unwrap();
    std::fs::write(theme.join("templates/runner.html"), "{% if %}").unwrap();
    let ran = build(&["--theme", theme.to_str().unwrap()]);
    assert_ne!(ran.code, Some(0), "{}", ran.context());
    assert_eq!(
        earlier,
        tree(&mnt, &[]),
        "a failed render changed the mounted site"
    );

    // `run --site-out` on a mount point measures, keeps its record and renders the site.
    let ran = run_limited(
        cmd_in(
            root,
            &[
                "run",
                "--dir",
                root.to_str().unwrap(),
                "--results",
                "res",
                "--size",
                "4M",
                "--runtime",
                "0.2",
                "--ramp",
                "0",
                "--only",
                "seq-write",
                "--no-steps",
                "--site-out",
                "ro/mnt",
                "--quiet",
            ],
        ),
        LIMIT,
    );
    assert_eq!(ran.code, Some(0), "run --site-out: {}", ran.context());
    assert_eq!(
        std::fs::read_dir(root.join("res")).unwrap().count(),
        some_records().len() + 1,
        "run kept its record"
    );
    assert_eq!(
        std::fs::read_to_string(mnt.join("runners/mine.txt")).unwrap(),
        "mine\n"
    );
    assert!(
        swap_leftovers(&mnt).is_empty(),
        "{:?}",
        swap_leftovers(&mnt)
    );
}

#[test]
fn class3_a_rebuild_keeps_user_files_inside_the_site_s_own_folders() {
    // Writes records with fsync: a disk-loading test (see common::disk_quiet).
    let _disk = common::disk_load();
    let sb = sandbox();
    let root = sb.path();
    write_records(&root.join("res"), &some_records());
    let out = root.join("pub");
    let build = || {
        run_limited(
            cmd_in(root, &["site", "--results", "res", "--out", "pub"]),
            LIMIT,
        )
    };
    let ran = build();
    assert_eq!(ran.code, Some(0), "{}", ran.context());
    let user_files = [
        ("CNAME", "bench.example.org\n"),
        (".git/config", "[core]\n"),
        ("runners/mine.txt", "depth 1\n"),
        ("data/custom.json", "{\"mine\": 1}\n"),
        ("data/custom/deeper.json", "{\"depth\": 2}\n"),
        ("assets/extra/logo.svg", "<svg/>\n"),
    ];
    let place = || {
        for (path, text) in user_files {
            let p = out.join(path);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
    };
    let check = |when: &str| {
        for (path, text) in user_files {
            assert_eq!(
                std::fs::read_to_string(out.join(path)).ok().as_deref(),
                Some(text),
                "{when}: {path} was not kept"
            );
        }
        assert!(out.join("index.html").is_file(), "{when}");
        assert!(
            swap_leftovers(root).is_empty(),
            "{when}: {:?}",
            swap_leftovers(root)
        );
    };
    place();
    let ran = build();
    assert_eq!(ran.code, Some(0), "{}", ran.context());
    check("first rebuild");
    // Kept again: carried-over files are still not the site's own.
    let ran = build();
    assert_eq!(ran.code, Some(0), "{}", ran.context());
    check("second rebuild");

    // A file the site did not write where the new site writes one: refused, nothing changed.
    let marker = std::fs::read_to_string(out.join(".diskbench-site")).unwrap();
    let page = marker
        .lines()
        .filter_map(|l| l.strip_prefix("file: "))
        .find(|p| p.starts_with("runners/") && p.ends_with(".html"))
        .expect("the marker lists the runner pages")
        .to_string();
    std::fs::write(
        out.join(".diskbench-site"),
        marker.replace(&format!("file: {page}\n"), ""),
    )
    .unwrap();
    std::fs::write(out.join(&page), "the user's own page\n").unwrap();
    let before = tree(root, &[]);
    let ran = build();
    assert_eq!(ran.code, Some(2), "{}", ran.context());
    assert!(
        ran.stderr.contains(&page) && ran.stderr.contains("--out"),
        "{}",
        ran.stderr
    );
    assert_eq!(
        before,
        tree(root, &[]),
        "a refused rebuild changed something"
    );

    // A marker from before it listed files (top-level names only) is read as before.
    let old_style: String = marker
        .lines()
        .filter(|l| !l.starts_with("file: ") && !l.starts_with("dir: "))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(out.join(".diskbench-site"), old_style).unwrap();
    let ran = build();
    assert_eq!(ran.code, Some(0), "{}", ran.context());
    assert_eq!(
        std::fs::read_to_string(out.join("CNAME")).unwrap(),
        "bench.example.org\n"
    );
    assert_eq!(
        std::fs::read_to_string(out.join(".git/config")).unwrap(),
        "[core]\n"
    );
    assert!(
        std::fs::read_to_string(out.join(".diskbench-site"))
            .unwrap()
            .contains("\nfile: index.html\n")
    );
}

// ------------------------------------------------------------------------------- class 4

/// Send `sig` to a running command after `delay`; returns what it did and how long it took to
/// exit after the signal, or None if it had already finished.
fn interrupt_after(mut cmd: Command, delay: Duration, sig: i32) -> Option<(Ran, Duration)> {
    let logs = tempfile::tempdir().unwrap();
    let err_path = logs.path().join("stderr");
    cmd.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&err_path).unwrap());
    let mut child = cmd.spawn().unwrap();
    std::thread::sleep(delay);
    if child.try_wait().unwrap().is_some() {
        return None;
    }
    // SAFETY: signalling our own child by its pid.
    unsafe { libc::kill(child.id() as i32, sig) };
    let sent = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let ran = Ran {
                code: status.code(),
                stderr: std::fs::read_to_string(&err_path).unwrap_or_default(),
                timed_out: false,
            };
            return Some((ran, sent.elapsed()));
        }
        if sent.elapsed() > Duration::from_secs(30) {
            let _ = child.kill();
            let _ = child.wait();
            return Some((
                Ran {
                    code: None,
                    stderr: String::new(),
                    timed_out: true,
                },
                sent.elapsed(),
            ));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn class4_site_import_and_merge_stop_on_sigint_and_sigterm() {
    // Writes records with fsync: a disk-loading test (see common::disk_quiet).
    let _disk = common::disk_load();
    let sb = sandbox();
    let root = sb.path();
    let many = Fleet::large(150, 8).records();
    write_records(&root.join("res"), &many);
    let mut csv = String::from("date,label,seq-read_mib_s\n");
    for i in 0..4000 {
        csv.push_str(&format!("2026-10-01,csv-{i},{}\n", 100 + i));
    }
    std::fs::write(root.join("many.csv"), csv).unwrap();

    let commands: [(&str, &[&str], &str); 3] = [
        ("site", &["site", "--results", "res", "--out", "out"], "out"),
        ("merge", &["merge", "--into", "merged", "res"], "merged"),
        (
            "import",
            &["import", "--results", "imported", "many.csv"],
            "imported",
        ),
    ];
    for (name, args, writes) in commands {
        let mut hits = 0;
        for (i, delay_ms) in [150u64, 300, 600, 1000].into_iter().enumerate() {
            let sig = if i % 2 == 0 {
                libc::SIGINT
            } else {
                libc::SIGTERM
            };
            let target = root.join(writes);
            let _ = std::fs::remove_dir_all(&target);
            let before = tree(root, &[&target]);
            let Some((ran, after)) =
                interrupt_after(cmd_in(root, args), Duration::from_millis(delay_ms), sig)
            else {
                continue; // finished before the signal
            };
            if ran.code.is_none() {
                // The signal came before main installed its handler (a very busy machine):
                // the default action ended it before it did anything, which the tree check
                // below confirms.
                assert_eq!(before, tree(root, &[&target]), "{name}");
                continue;
            }
            hits += 1;
            assert_eq!(
                ran.code,
                Some(130),
                "{name} after {delay_ms} ms, signal {sig}: {}",
                ran.context()
            );
            // A hang detector, not a speed claim (bench/interrupt.sh measures the latency).
            assert!(after < Duration::from_secs(10), "{name}: {after:?}");
            assert_eq!(
                before,
                tree(root, &[&target]),
                "{name}: wrote outside {writes}"
            );
            if name == "site" {
                assert!(
                    !root.join("out").exists(),
                    "an interrupted first site is not left half made"
                );
            }
        }
        assert!(
            hits >= 1,
            "{name} finished before every signal: make the input larger"
        );
    }
}

#[test]
fn class4_absurd_figures_do_not_hang_the_site() {
    // Writes records with fsync: a disk-loading test (see common::disk_quiet).
    let _disk = common::disk_load();
    let sb = sandbox();
    let res = sb.path().join("res");
    // Enough runners for the steps page to draw its scatter plots (it needs 5 or more).
    let mut records = Fleet::large(8, 1).records();
    let variants: [(f64, f64); 3] = [
        (1e308, 5e-324),
        (f64::MAX, f64::MIN_POSITIVE),
        (1e300, 1e-300),
    ];
    for (k, (hi, lo)) in variants.iter().enumerate() {
        for (j, v) in [hi, lo].iter().enumerate() {
            let r = &mut records[k * 2 + j];
            for t in &mut r.tests {
                for d in t.read.iter_mut().chain(t.write.iter_mut()) {
                    d.mib_s = **v;
                    d.iops = **v;
                }
            }
        }
    }
    assert!(records.iter().all(|r| !r.steps.is_empty()));
    write_records(&res, &records);
    let ran = run_limited(
        cmd_in(sb.path(), &["site", "--results", "res", "--out", "out"]),
        LIMIT,
    );
    assert!(!ran.timed_out, "the site hung on absurd figures");
    assert_eq!(ran.code, Some(0), "{}", ran.context());
    let steps = std::fs::read_to_string(sb.path().join("out/steps.html")).unwrap();
    assert!(
        steps.contains("left out"),
        "the chart says it left points out"
    );
}

#[test]
fn class4_a_record_exists_exactly_when_the_exit_is_zero() {
    // Writes records with fsync: a disk-loading test (see common::disk_quiet).
    let _disk = common::disk_load();
    // Ctrl-C at any moment, including just after the last column: either exit 0 and a record,
    // or exit 130 and none, never a record behind a non-zero exit.
    let sb = sandbox();
    let root = sb.path();
    let mut seen = BTreeMap::<Option<i32>, usize>::new();
    for delay_ms in [100u64, 500, 900, 1050, 1150, 1250, 1400, 1700] {
        let res = root.join(format!("res{delay_ms}"));
        let cmd = cmd_in(
            root,
            &[
                "fio",
                "--name=t",
                "--directory=.",
                "--rw=randread",
                "--bs=4k",
                "--size=4M",
                "--time_based",
                "--runtime=1",
                &format!("--results={}", res.display()),
            ],
        );
        let (code, stderr) =
            match interrupt_after(cmd, Duration::from_millis(delay_ms), libc::SIGINT) {
                Some((ran, _)) => (ran.code, ran.stderr),
                None => (Some(0), String::new()),
            };
        let records = std::fs::read_dir(&res).map(|d| d.count()).unwrap_or(0);
        *seen.entry(code).or_default() += 1;
        match code {
            Some(0) => assert_eq!(records, 1, "{delay_ms} ms: exit 0 without a record"),
            Some(130) => assert_eq!(
                records, 0,
                "{delay_ms} ms: exit 130 left a record\n{stderr}"
            ),
            other => panic!("{delay_ms} ms: exit {other:?}\n{stderr}"),
        }
        // fio keeps its files once the job has finished (as fio does), also when the signal
        // then stops the record being written; remove them for the next try.
        let leftovers: Vec<PathBuf> = std::fs::read_dir(root)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with("t."))
            .collect();
        for p in leftovers {
            std::fs::remove_file(p).unwrap();
        }
    }
    assert!(
        seen.contains_key(&Some(130)),
        "no try was interrupted: {seen:?}"
    );

    // `run`: a signal that arrives while it runs, at any point up to writing the record (the
    // CPU probe after the last column is a window of a few hundred ms), means exit 130 and no
    // record. A run takes about 1.1 s here with these settings (debug build); the delays
    // cover its second half, where the columns are done.
    let mut interrupted = 0;
    for (i, delay_ms) in [350u64, 450, 550, 650, 750, 850, 950, 1050, 1200]
        .into_iter()
        .enumerate()
    {
        let res = root.join(format!("run{delay_ms}"));
        let cmd = cmd_in(
            root,
            &[
                "run",
                "--dir",
                ".",
                "--results",
                res.to_str().unwrap(),
                "--size",
                "4M",
                "--runtime",
                "0.3",
                "--ramp",
                "0",
                "--only",
                "seq-read",
                "--no-steps",
                "--no-site",
                "--quiet",
            ],
        );
        let sig = if i % 2 == 0 {
            libc::SIGINT
        } else {
            libc::SIGTERM
        };
        let records = || std::fs::read_dir(&res).map(|d| d.count()).unwrap_or(0);
        match interrupt_after(cmd, Duration::from_millis(delay_ms), sig) {
            Some((ran, _)) => {
                interrupted += 1;
                assert_eq!(ran.code, Some(130), "{delay_ms} ms: {}", ran.context());
                assert_eq!(records(), 0, "{delay_ms} ms: a record after exit 130");
            }
            None => assert_eq!(records(), 1, "{delay_ms} ms: finished without a record"),
        }
        let left: Vec<_> = std::fs::read_dir(root)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .filter(|n| n.to_string_lossy().starts_with(".diskbench-"))
            .collect();
        assert!(left.is_empty(), "{delay_ms} ms: test folder left: {left:?}");
    }
    assert!(interrupted > 0, "every run finished before its signal");
}

// ------------------------------------------------------------------------------- class 5

/// `fio` whose report cannot be written after the job ran (`--output /dev/full` passes the
/// up-front check: it is not a regular file, but it is writable): the exit is non-zero and no
/// record is left, as for `run`.
#[test]
fn class5_fio_whose_report_fails_leaves_no_record() {
    let _disk = common::disk_load();
    let sb = sandbox();
    let res = sb.path().join("res");
    let results = format!("--results={}", res.display());
    let out = cmd_in(
        sb.path(),
        &[
            "fio",
            "--name=t",
            "--directory=.",
            "--rw=randread",
            "--bs=4k",
            "--size=4M",
            "--runtime=200ms",
            "--time_based",
            &results,
            "--output=/dev/full",
        ],
    )
    .output()
    .unwrap();
    assert_ne!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let left = std::fs::read_dir(&res).map(|d| d.count()).unwrap_or(0);
    assert_eq!(left, 0, "a record behind a failed exit");
}

#[test]
fn class5_every_destination_is_checked_before_the_first_test_file() {
    // Writes records with fsync: a disk-loading test (see common::disk_quiet).
    let _disk = common::disk_load();
    let sb = sandbox();
    let root = sb.path();
    std::fs::write(root.join("a-file"), "not a folder").unwrap();
    std::fs::create_dir(root.join("a-folder")).unwrap();
    std::fs::create_dir(root.join("res")).unwrap();
    let quick = [
        "run",
        "--dir",
        ".",
        "--size",
        "4M",
        "--runtime",
        "0.2",
        "--ramp",
        "0",
        "--only",
        "seq-read",
        "--no-steps",
        "--quiet",
    ];
    let cases: Vec<(Vec<&str>, Option<&str>, &str)> = vec![
        (vec!["--results", "a-file", "--no-site"], None, "--results"),
        (
            vec!["--results", "res", "--json", "a-folder", "--no-site"],
            None,
            "--json",
        ),
        (
            vec!["--results", "res", "--json", "missing/x.json", "--no-site"],
            None,
            "--json",
        ),
        (
            vec!["--results", "res", "--markdown", "a-folder", "--no-site"],
            None,
            "--markdown",
        ),
        (
            vec!["--results", "res", "--markdown", "a-file/x.md", "--no-site"],
            None,
            "--markdown",
        ),
        (
            vec!["--results", "res", "--no-site"],
            Some("a-folder"),
            "$GITHUB_STEP_SUMMARY",
        ),
        (
            vec!["--results", "res", "--site-out", "res/site"],
            None,
            "--site-out",
        ),
        (
            vec!["--results", "res", "--site-out", "."],
            None,
            "--site-out",
        ),
        (
            vec!["--results", "res", "--site-out", "a-file"],
            None,
            "--site-out",
        ),
    ];
    for (extra, summary, option) in cases {
        let before = tree(root, &[]);
        let mut cmd = cmd_in(root, &quick);
        cmd.args(&extra);
        if let Some(s) = summary {
            cmd.env("GITHUB_STEP_SUMMARY", s);
        }
        let ran = run_limited(cmd, LIMIT);
        assert_eq!(ran.code, Some(2), "{extra:?}: {}", ran.context());
        assert!(ran.stderr.contains(option), "{extra:?}: {}", ran.stderr);
        assert!(
            !ran.stderr.contains("seq-read"),
            "{extra:?} measured first: {}",
            ran.stderr
        );
        assert_eq!(before, tree(root, &[]), "{extra:?}: something was written");
    }
    let others: [(&[&str], &str); 5] = [
        (
            &[
                "fio",
                "--name=t",
                "--size=4M",
                "--runtime=1",
                "--output=a-folder",
            ],
            "--output",
        ),
        (
            &[
                "fio",
                "--name=t",
                "--size=4M",
                "--runtime=1",
                "--results=a-file",
            ],
            "--results",
        ),
        (&["merge", "--into", "a-file", "res"], "--into"),
        (&["import", "--results", "a-file", "x.csv"], "--results"),
        (&["site", "--results", "res", "--out", "a-file"], "--out"),
    ];
    std::fs::write(
        root.join("x.csv"),
        "date,label,seq-read_mib_s\n2026-10-01,a,1\n",
    )
    .unwrap();
    for (args, option) in others {
        let before = tree(root, &[]);
        let ran = run_limited(cmd_in(root, args), LIMIT);
        assert_eq!(ran.code, Some(2), "{args:?}: {}", ran.context());
        assert!(ran.stderr.contains(option), "{args:?}: {}", ran.stderr);
        assert_eq!(before, tree(root, &[]), "{args:?}: something was written");
    }
}

// ------------------------------------------------------------------------------- class 6

fn import_err(dir: &Path, name: &str, text: &str) -> Ran {
    std::fs::write(dir.join(name), text).unwrap();
    let before = tree(dir, &[]);
    let ran = run_limited(cmd_in(dir, &["import", "--results", "res", name]), LIMIT);
    assert_eq!(before, tree(dir, &[]), "{name}: import wrote something");
    ran
}

#[test]
fn class6_bad_input_is_refused_at_the_boundary_naming_file_line_and_field() {
    // Writes records with fsync: a disk-loading test (see common::disk_quiet).
    let _disk = common::disk_load();
    let sb = sandbox();
    let dir = sb.path();
    let header = "date,label,seq-read_mib_s\n";
    let csv_cases = [
        ("2026-02-31,a,1", "column date"),
        ("2026-01-01<script>alert(1)</script>,a,1", "column date"),
        ("2026-13-01,a,1", "column date"),
        ("9999-12-31,a,1", "future"),
        ("2026-01-01T00:00:00Zjunk,a,1", "column date"),
        ("2026-01-01,a,-5", "column seq-read_mib_s"),
        ("2026-01-01,a,1e999", "column seq-read_mib_s"),
    ];
    for (i, (row, needle)) in csv_cases.iter().enumerate() {
        let name = format!("bad{i}.csv");
        let ran = import_err(dir, &name, &format!("{header}2026-01-01,ok,1\n{row}\n"));
        assert_eq!(ran.code, Some(2), "{row}: {}", ran.context());
        for want in [name.as_str(), "line 3", needle] {
            assert!(
                ran.stderr.contains(want),
                "{row}: wants {want:?}: {}",
                ran.stderr
            );
        }
    }

    let fixture =
        std::fs::read_to_string(common::repo_root().join("fixtures/fio/fio-3.33-suite.json"))
            .unwrap();
    let good: serde_json::Value = serde_json::from_str(&fixture).unwrap();
    type Mutate = fn(&mut serde_json::Value);
    let fio_cases: [(&str, Mutate, &str); 7] = [
        (
            "timestamp 2^63",
            |v| v["timestamp"] = serde_json::json!(1u64 << 63),
            "timestamp",
        ),
        (
            "timestamp u64::MAX",
            |v| v["timestamp"] = serde_json::json!(u64::MAX),
            "timestamp",
        ),
        (
            "future timestamp",
            |v| v["timestamp"] = serde_json::json!(253_402_214_400u64),
            "timestamp",
        ),
        (
            "iodepth x numjobs overflows u32",
            |v| {
                v["jobs"][4]["job options"]["iodepth"] = "4294967295".into();
                v["jobs"][4]["job options"]["numjobs"] = "2".into();
            },
            "iodepth",
        ),
        (
            "negative IOPS",
            |v| v["jobs"][0]["read"]["iops"] = serde_json::json!(-5.0),
            "iops",
        ),
        (
            "a failed job",
            |v| v["jobs"][1]["error"] = serde_json::json!(5),
            "error",
        ),
        (
            "numjobs 0",
            |v| v["jobs"][2]["job options"]["numjobs"] = "0".into(),
            "numjobs",
        ),
    ];
    for (i, (what, mutate, field)) in fio_cases.iter().enumerate() {
        let mut v = good.clone();
        mutate(&mut v);
        let name = format!("bad{i}.json");
        let ran = import_err(dir, &name, &serde_json::to_string_pretty(&v).unwrap());
        assert_eq!(ran.code, Some(2), "{what}: {}", ran.context());
        assert!(!ran.stderr.contains("panicked"), "{what}: {}", ran.stderr);
        for want in [name.as_str(), field] {
            assert!(
                ran.stderr.contains(want),
                "{what}: wants {want:?}: {}",
                ran.stderr
            );
        }
    }

    // A record dated in the future is left out, so --window-days still shows the real runners.
    let res = dir.join("sres");
    let mut records = some_records();
    records[0].started_at = "9999-12-31T00:00:00Z".into();
    records[0].runner.label = "from-the-future".into();
    records[1].started_at = "2026-02-31T00:00:00Z".into();
    write_records(&res, &records);
    let ran = run_limited(
        cmd_in(
            dir,
            &[
                "site",
                "--results",
                "sres",
                "--out",
                "sout",
                "--window-days",
                "30",
            ],
        ),
        LIMIT,
    );
    assert_eq!(ran.code, Some(0), "{}", ran.context());
    assert!(ran.stderr.contains("in the future"), "{}", ran.stderr);
    assert!(ran.stderr.contains("started_at"), "{}", ran.stderr);
    let index = std::fs::read_to_string(dir.join("sout/index.html")).unwrap();
    assert!(
        !index.contains("runners/from-the-future"),
        "the future record has no runner"
    );
    assert!(
        index.contains(&records[2].runner.label),
        "real runners still shown"
    );
}

/// A small deterministic generator (xorshift64*), so a failure names a seed to replay.
struct Mutator(u64);

impl Mutator {
    /// Set one field to a hostile value: half the time a field readers interpret (dates,
    /// figures, counts), else any field at all.
    fn mutate_field(&mut self, v: &mut serde_json::Value) {
        use serde_json::json;
        const INTERESTING: [&str; 14] = [
            "timestamp",
            "started_at",
            "iops",
            "bw_bytes",
            "mib_s",
            "iodepth",
            "numjobs",
            "error",
            "job_runtime",
            "wall_s",
            "label",
            "id",
            "total_ios",
            "bs",
        ];
        let values = [
            json!(1e308),
            json!(5e-324),
            json!(-1),
            json!(u64::MAX),
            json!(1u64 << 63),
            json!(i64::MIN),
            json!("4294967295"),
            json!("-1"),
            json!("../../../x"),
            json!("9999-12-31T00:00:00Z"),
            json!("2026-02-31"),
            json!(null),
            json!([]),
            json!({}),
            json!(""),
            json!("\u{1b}[2J"),
        ];
        let mut keys = Vec::new();
        fn walk(v: &serde_json::Value, path: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
            match v {
                serde_json::Value::Object(m) => {
                    for (k, child) in m {
                        path.push(k.clone());
                        out.push(path.clone());
                        walk(child, path, out);
                        path.pop();
                    }
                }
                serde_json::Value::Array(a) => {
                    for (i, child) in a.iter().enumerate() {
                        path.push(format!("#{i}"));
                        walk(child, path, out);
                        path.pop();
                    }
                }
                _ => {}
            }
        }
        walk(v, &mut Vec::new(), &mut keys);
        let wanted: Vec<&Vec<String>> = keys
            .iter()
            .filter(|k| INTERESTING.contains(&k.last().unwrap().as_str()))
            .collect();
        let key = if !wanted.is_empty() && self.below(2) == 0 {
            wanted[self.below(wanted.len())].clone()
        } else if keys.is_empty() {
            return;
        } else {
            keys[self.below(keys.len())].clone()
        };
        let mut at = v;
        for part in &key {
            at = match part.strip_prefix('#') {
                Some(i) => &mut at[i.parse::<usize>().unwrap()],
                None => &mut at[part.as_str()],
            };
        }
        *at = values[self.below(values.len())].clone();
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    /// One mutation of `text`: a byte flipped, a slice cut or doubled, or a hostile token put
    /// where a number, date or name was.
    fn mutate(&mut self, text: &str) -> String {
        const TOKENS: [&str; 16] = [
            "1e308",
            "5e-324",
            "-1",
            "18446744073709551616",
            "9223372036854775808",
            "NaN",
            "\"\"",
            "null",
            "[]",
            "{}",
            "\"../../../x\"",
            "\"9999-12-31T00:00:00Z\"",
            "\"2026-02-31\"",
            "\"\u{1b}[31m\"",
            "4294967295",
            ",",
        ];
        if self.below(2) == 0
            && let Ok(mut v) = serde_json::from_str::<serde_json::Value>(text)
        {
            self.mutate_field(&mut v);
            return v.to_string();
        }
        let mut b = text.as_bytes().to_vec();
        if b.is_empty() {
            return TOKENS[self.below(TOKENS.len())].to_string();
        }
        let at = self.below(b.len());
        match self.below(5) {
            0 => b[at] ^= 1 << self.below(8),
            1 => b.truncate(at),
            2 => {
                let end = (at + self.below(64)).min(b.len());
                let copy = b[at..end].to_vec();
                b.splice(at..at, copy);
            }
            _ => {
                let end = (at + 1 + self.below(12)).min(b.len());
                let t = TOKENS[self.below(TOKENS.len())].as_bytes();
                b.splice(at..end, t.iter().copied());
            }
        }
        String::from_utf8_lossy(&b).into_owned()
    }
}

#[test]
fn class6_readers_never_panic_or_hang_on_thousands_of_mutated_inputs() {
    // Writes records with fsync: a disk-loading test (see common::disk_quiet).
    let _disk = common::disk_load();
    let record = serde_json::to_string_pretty(&some_records()[0]).unwrap();
    let csv = std::fs::read_to_string(
        common::repo_root().join("fixtures/published/ec2-storage-2026-09-30_10-01.csv"),
    )
    .unwrap();
    let csv: String = csv.lines().take(6).map(|l| format!("{l}\n")).collect();
    let fio = std::fs::read_to_string(common::repo_root().join("fixtures/fio/fio-3.33-suite.json"))
        .unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut m = Mutator(0x5eed_1234_abcd_0001);
        let mut outcomes = [0usize; 2];
        for i in 0..3000 {
            // Up to three mutations stacked, so damage compounds.
            let (kind, base) = match i % 3 {
                0 => ("record", &record),
                1 => ("csv", &csv),
                _ => ("fio", &fio),
            };
            let mut input = base.clone();
            for _ in 0..=m.below(3) {
                input = m.mutate(&input);
            }
            let result = std::panic::catch_unwind(|| match kind {
                "record" => record::load::parse_record(&input)
                    .and_then(|r| record::load::check_record(&r).map(|_| r))
                    .map(|r| {
                        // A record that passes must also render a chart without trouble
                        // (the steps page's scatter, with its figures on a log axis).
                        let pts: Vec<site_gen::correlation::Point> = r
                            .tests
                            .iter()
                            .filter_map(|t| t.headline())
                            .map(|x| site_gen::correlation::Point {
                                label: r.runner.label.clone(),
                                class: r.storage.class,
                                imported: false,
                                x,
                                time_s: 1.0,
                            })
                            .collect();
                        let _ = site_gen::correlation::plot::scatter_svg(
                            &pts, "figure", "MiB/s", "step",
                        );
                        let _ = record::results::file_name(&r);
                    })
                    .is_ok(),
                "csv" => site_gen::import::csv_records(&input, "x.csv").is_ok(),
                _ => site_gen::import::fio_record(&input, "x.json", "x").is_ok(),
            });
            match result {
                Ok(accepted) => outcomes[accepted as usize] += 1,
                Err(_) => {
                    let _ = tx.send(Err(format!("input {i} ({kind}) panicked:\n{input}")));
                    return;
                }
            }
        }
        let _ = tx.send(Ok(outcomes));
    });
    match rx.recv_timeout(Duration::from_secs(300)) {
        Ok(Ok([refused, accepted])) => {
            assert_eq!(refused + accepted, 3000);
            assert!(
                refused > 300,
                "mutations should mostly be refused: {refused}"
            );
        }
        Ok(Err(e)) => panic!("{e}"),
        Err(_) => panic!("the readers hung on a mutated input"),
    }
}

// ------------------------------------------------------------------------------- class 7

#[test]
fn class7_importing_the_same_figures_again_adds_nothing_whatever_the_path() {
    // Writes records with fsync: a disk-loading test (see common::disk_quiet).
    let _disk = common::disk_load();
    let sb = sandbox();
    let root = sb.path();
    std::fs::create_dir(root.join("sub")).unwrap();
    let csv = "date,label,seq-read_mib_s\n2026-10-01,a,100\n2026-10-01,b,200\n";
    std::fs::write(root.join("good.csv"), csv).unwrap();
    std::fs::write(root.join("sub/copy.csv"), csv).unwrap();
    let fio = std::fs::read_to_string(common::repo_root().join("fixtures/fio/fio-3.33-suite.json"))
        .unwrap();
    std::fs::write(root.join("run.json"), &fio).unwrap();
    std::fs::write(
        root.join("sub/run-copy.json"),
        format!("fio: a note first\n{fio}"),
    )
    .unwrap();
    let abs = root.join("good.csv");
    let count = || {
        std::fs::read_dir(root.join("res"))
            .map(|d| d.count())
            .unwrap_or(0)
    };
    let mut counts = Vec::new();
    for path in [
        "good.csv",
        "./good.csv",
        abs.to_str().unwrap(),
        "sub/../good.csv",
        "sub/copy.csv",
        "run.json",
        "./run.json",
        "sub/run-copy.json",
    ] {
        let ran = run_limited(cmd_in(root, &["import", "--results", "res", path]), LIMIT);
        assert_eq!(ran.code, Some(0), "{path}: {}", ran.context());
        counts.push(count());
    }
    assert_eq!(counts, [2, 2, 2, 2, 2, 3, 3, 3]);
    // Importing again is never silent about what it skipped.
    let ran = run_limited(
        cmd_in(root, &["import", "--results", "res", "sub/copy.csv"]),
        LIMIT,
    );
    assert!(
        ran.stderr
            .contains("2 record(s) already in res with the same content"),
        "{}",
        ran.context()
    );
    // The same row under another header is other figures: not a duplicate.
    std::fs::write(
        root.join("other-column.csv"),
        "date,label,seq-write_mib_s\n2026-10-01,a,100\n",
    )
    .unwrap();
    let ran = run_limited(
        cmd_in(root, &["import", "--results", "res", "other-column.csv"]),
        LIMIT,
    );
    assert_eq!(ran.code, Some(0), "{}", ran.context());
    assert_eq!(
        count(),
        4,
        "the seq-write figure was dropped as a duplicate"
    );
}

// ------------------------------------------------------------------------------- class 8

#[test]
fn class8_options_name_their_range_and_a_closed_stdout_is_quiet() {
    // Writes records with fsync: a disk-loading test (see common::disk_quiet).
    let _disk = common::disk_load();
    let sb = sandbox();
    for (value, option) in [
        ("-1", "--runtime"),
        ("abc", "--runtime"),
        ("0.000001", "--runtime"),
        ("inf", "--runtime"),
    ] {
        let ran = run_limited(cmd_in(sb.path(), &["run", "--runtime", value]), LIMIT);
        assert_eq!(ran.code, Some(2), "{value}: {}", ran.context());
        assert!(
            ran.stderr.contains(option) && ran.stderr.contains("0.1 to 3600"),
            "{}",
            ran.stderr
        );
    }
    let ran = run_limited(cmd_in(sb.path(), &["run", "--ramp", "-1"]), LIMIT);
    assert!(
        ran.code == Some(2) && ran.stderr.contains("--ramp"),
        "{}",
        ran.context()
    );

    // stdout closed before anything is written, and stdout full.
    for args in [&["fio", "--help"][..], &["machine"][..], &["--help"][..]] {
        let mut c = cmd_in(sb.path(), args);
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        c.stdout(writer).stderr(Stdio::piped());
        let out = c.output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert_ne!(out.status.code(), Some(101), "{args:?}");
        let mut c = cmd_in(sb.path(), args);
        c.stdout(
            std::fs::OpenOptions::new()
                .write(true)
                .open("/dev/full")
                .unwrap(),
        );
        let out = c.output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!err.contains("panicked"), "{args:?} > /dev/full: {err}");
        assert_ne!(out.status.code(), Some(101), "{args:?}");
    }

    // stderr closed in the middle of a run (`2>&1 >/dev/null | head -c 20`): the progress line
    // that fails ends the run as an interruption would, with every guard run on the way out:
    // no test files left in --dir, no record, exit 141 (never a crash).
    let dir = sb.path().join("closed-stderr");
    std::fs::create_dir(&dir).unwrap();
    let res = sb.path().join("closed-stderr-res");
    let mut c = cmd_in(
        sb.path(),
        &[
            "run",
            "--dir",
            "closed-stderr",
            "--results",
            "closed-stderr-res",
            "--size",
            "8M",
            "--runtime",
            "0.5",
            "--ramp",
            "0",
            "--no-steps",
            "--no-site",
        ],
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
    assert!(
        std::fs::read_dir(&res).map(|d| d.count()).unwrap_or(0) == 0,
        "a record behind exit 141"
    );

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
    let ran = run_limited(
        cmd_in(
            dir,
            &[
                "run",
                "--dir",
                ".",
                "--results",
                "res",
                "--size",
                "4M",
                "--runtime",
                "0.2",
                "--ramp",
                "0",
                "--only",
                "seq-read",
                "--no-steps",
                "--no-site",
                "--quiet",
            ],
        ),
        LIMIT,
    );
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
fn class8_ramfs_is_measured() {
    // Writes records with fsync: a disk-loading test (see common::disk_quiet).
    let _disk = common::disk_load();
    let sb = sandbox();
    let mnt = sb.path().join("ramfs");
    std::fs::create_dir(&mnt).unwrap();
    let mounted = Command::new("mount")
        .args(["-t", "ramfs", "ramfs"])
        .arg(&mnt)
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !mounted {
        eprintln!("class8_ramfs_is_measured: cannot mount ramfs here (needs root); not tried");
        return;
    }
    struct Unmount(PathBuf);
    impl Drop for Unmount {
        fn drop(&mut self) {
            let _ = Command::new("umount").arg(&self.0).status();
        }
    }
    let _guard = Unmount(mnt.clone());
    assert_eq!(
        engine::testfile::free_bytes(&mnt),
        None,
        "ramfs has no free-space figure"
    );
    let ran = run_limited(
        cmd_in(
            sb.path(),
            &[
                "run",
                "--dir",
                mnt.to_str().unwrap(),
                "--results",
                "res",
                "--size",
                "4M",
                "--runtime",
                "0.2",
                "--ramp",
                "0",
                "--only",
                "seq-write",
                "--no-steps",
                "--no-site",
                "--quiet",
            ],
        ),
        LIMIT,
    );
    assert_eq!(ran.code, Some(0), "{}", ran.context());
}

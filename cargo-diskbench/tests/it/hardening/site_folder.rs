//! Class 3: the results are never deleted, a failed render keeps the earlier site, and a
//! rebuild (also on a mount point) keeps every file the site did not write.

use super::*;

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
        let ran = run_in(root, &["site", "--results", results, "--out", out]);
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
        run_in(root, &args)
    };
    let ran = build(&[]);
    assert_eq!(ran.code, Some(0), "{}", ran.context());
    place_files(&out, &CNAME_AND_GIT);
    std::fs::create_dir_all(out.join(".git/refs")).unwrap();
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
    assert_kept(&out, &CNAME_AND_GIT, "a good rebuild");
    assert!(out.join("index.html").is_file());
    assert_no_swap_leftovers(root, "after a good rebuild");
}

/// Files of the user's in a site folder (path, text): a custom domain and a git checkout.
const CNAME_AND_GIT: [(&str, &str); 2] = [
    ("CNAME", "bench.example.org\n"),
    (".git/config", "[core]\n"),
];

/// Write each of `files` (path, text) below `dir`, making the folders it needs.
fn place_files(dir: &Path, files: &[(&str, &str)]) {
    for (path, text) in files {
        let p = dir.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
}

/// Each of `files` (path, text) is still below `dir` with its text.
fn assert_kept(dir: &Path, files: &[(&str, &str)], when: &str) {
    for (path, text) in files {
        assert_eq!(
            std::fs::read_to_string(dir.join(path)).ok().as_deref(),
            Some(*text),
            "{when}: {path} was not kept"
        );
    }
}

/// No names in `dir` left by an unfinished swap.
fn assert_no_swap_leftovers(dir: &Path, when: &str) {
    let left: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| {
            n.contains("diskbench-new") || n.contains("diskbench-old") || n.ends_with(".aside")
        })
        .collect();
    assert!(
        left.is_empty(),
        "{when}: left in {}: {left:?}",
        dir.display()
    );
}

#[test]
#[ignore = "needs root: .ci/run runs these as root with --ignored"]
fn class3_a_mount_point_is_rendered_in_place_keeping_foreign_files() {
    common::require_root();
    // Writes records with fsync: a disk-loading test (see common::disk_quiet).
    let _disk = common::disk_load();
    let sb = sandbox();
    let root = sb.path();
    write_records(&root.join("res"), &some_records());
    // As in Docker with `-v host:/site` on a read-only root: the site folder is a mount point
    // and its parent cannot be written.
    let parent = root.join("ro");
    let mnt = parent.join("mnt");
    let _parent_mounted = Mounted::new("tmpfs", "size=1m", &parent);
    let _mounted = Mounted::new("tmpfs", "size=64m", &mnt);
    let remounted = Command::new("mount")
        .args(["-o", "remount,ro"])
        .arg(&parent)
        .status()
        .is_ok_and(|s| s.success());
    assert!(remounted, "cannot make {} read-only", parent.display());
    let build = |extra: &[&str]| {
        let mut args = vec!["site", "--results", "res", "--out", "ro/mnt"];
        args.extend_from_slice(extra);
        run_in(root, &args)
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
    assert_kept(
        &mnt,
        &[
            ("CNAME", "bench.example.org\n"),
            ("runners/mine.txt", "mine\n"),
            ("data/custom/x.json", "{}\n"),
        ],
        "rebuild",
    );
    assert_no_swap_leftovers(&mnt, "rebuild");
    assert_no_swap_leftovers(root, "rebuild");

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
    let mut args = quick_run(root.to_str().unwrap(), "res", "seq-write");
    args.extend(["--site-out", "ro/mnt"]);
    let ran = run_in(root, &args);
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
    assert_no_swap_leftovers(&mnt, "run --site-out");
}

#[test]
fn class3_a_rebuild_keeps_user_files_inside_the_site_s_own_folders() {
    // Writes records with fsync: a disk-loading test (see common::disk_quiet).
    let _disk = common::disk_load();
    let sb = sandbox();
    let root = sb.path();
    write_records(&root.join("res"), &some_records());
    let out = root.join("pub");
    let build = || run_in(root, &["site", "--results", "res", "--out", "pub"]);
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
    let check = |when: &str| {
        assert_kept(&out, &user_files, when);
        assert!(out.join("index.html").is_file(), "{when}");
        assert_no_swap_leftovers(root, when);
    };
    place_files(&out, &user_files);
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
    assert_kept(&out, &CNAME_AND_GIT, "an old-style marker");
    assert!(
        std::fs::read_to_string(out.join(".diskbench-site"))
            .unwrap()
            .contains("\nfile: index.html\n")
    );
}

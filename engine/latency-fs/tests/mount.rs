//! The passthrough mounted for real (root and /dev/fuse needed; said and skipped without).

// In a test a panic is the failure report, helpers included.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs;
use std::io::{Read, Write};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::time::Instant;

use diskbench_latency_fs::{Delays, Latency, Mount};

/// A test that cannot run here: skipped with the reason, or failed under
/// `DISKBENCH_TEST_STRICT` (as `.ci/run` sets it), so CI cannot pass by skipping.
fn skip(why: &str) {
    let strict =
        std::env::var_os("DISKBENCH_TEST_STRICT").is_some_and(|v| !v.is_empty() && v != "0");
    assert!(!strict, "{why}, and DISKBENCH_TEST_STRICT is set");
    eprintln!("SKIPPED: {why}");
}

fn mount(delays: Delays) -> Option<(tempfile::TempDir, Mount)> {
    if let Err(why) = diskbench_latency_fs::available() {
        skip(&why);
        return None;
    }
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        skip("mounting needs root");
        return None;
    }
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    fs::create_dir(dir.path().join("backing")).unwrap();
    fs::create_dir(dir.path().join("mnt")).unwrap();
    let m = Mount::new(
        &dir.path().join("backing"),
        &dir.path().join("mnt"),
        delays,
        1,
    )
    .unwrap();
    Some((dir, m))
}

#[test]
fn files_made_through_the_mount_are_the_backing_folders_files() {
    let Some((dir, m)) = mount(Delays::default()) else {
        return;
    };
    let mnt = m.path().to_path_buf();
    fs::create_dir(mnt.join("sub")).unwrap();
    fs::write(mnt.join("sub/a.txt"), b"hello").unwrap();
    assert_eq!(
        fs::read(dir.path().join("backing/sub/a.txt")).unwrap(),
        b"hello"
    );
    let mut f = fs::OpenOptions::new()
        .append(true)
        .open(mnt.join("sub/a.txt"))
        .unwrap();
    f.write_all(b" world").unwrap();
    f.sync_data().unwrap();
    drop(f);
    let mut s = String::new();
    fs::File::open(mnt.join("sub/a.txt"))
        .unwrap()
        .read_to_string(&mut s)
        .unwrap();
    assert_eq!(s, "hello world");
    // A file renamed over another (a lock file made the real one, as git and cargo do),
    // then a folder renamed with it inside.
    fs::write(mnt.join("sub/a.txt.lock"), b"hello world").unwrap();
    fs::rename(mnt.join("sub/a.txt.lock"), mnt.join("sub/a.txt")).unwrap();
    assert_eq!(fs::read(mnt.join("sub/a.txt")).unwrap(), b"hello world");
    assert!(
        fs::symlink_metadata(mnt.join("sub/a.txt"))
            .unwrap()
            .is_file()
    );
    fs::rename(mnt.join("sub"), mnt.join("moved")).unwrap();
    assert_eq!(fs::read(mnt.join("moved/a.txt")).unwrap(), b"hello world");
    std::os::unix::fs::symlink("a.txt", mnt.join("moved/link")).unwrap();
    assert_eq!(
        fs::read_link(mnt.join("moved/link")).unwrap().to_str(),
        Some("a.txt")
    );
    let mut names: Vec<String> = fs::read_dir(mnt.join("moved"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["a.txt", "link"]);
    fs::OpenOptions::new()
        .write(true)
        .open(mnt.join("moved/a.txt"))
        .unwrap()
        .set_len(2)
        .unwrap();
    assert_eq!(fs::metadata(mnt.join("moved/a.txt")).unwrap().len(), 2);
    fs::remove_dir_all(mnt.join("moved")).unwrap();
    assert!(
        fs::read_dir(dir.path().join("backing"))
            .unwrap()
            .next()
            .is_none()
    );
    let held = m.unmount().unwrap();
    assert_eq!(held.reads + held.syncs + held.direct_writes, 0, "{held:?}");
}

#[test]
fn each_direct_read_and_each_flush_takes_at_least_its_latency() {
    const READ_NS: f64 = 300_000.0;
    const SYNC_NS: f64 = 700_000.0;
    let delays = Delays {
        read: Some(Latency::constant(READ_NS)),
        direct_write: None,
        sync: Some(Latency::constant(SYNC_NS)),
    };
    let Some((_dir, m)) = mount(delays) else {
        return;
    };
    let path = m.path().join("data");
    let f = fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .custom_flags(libc::O_DIRECT)
        .open(&path)
        .unwrap();
    // A 4 KiB-aligned buffer for O_DIRECT.
    let mut raw = vec![7u8; 3 * 4096];
    let off = raw.as_ptr().align_offset(4096);
    let block = &mut raw[off..off + 4096];
    for i in 0..64u64 {
        f.write_all_at(block, i * 4096).unwrap();
    }
    let t = Instant::now();
    for i in 0..50u64 {
        f.read_exact_at(block, (i * 13 % 64) * 4096).unwrap();
        let started = Instant::now();
        f.sync_data().unwrap();
        assert!(started.elapsed().as_nanos() as f64 >= SYNC_NS);
    }
    let per_pair = t.elapsed().as_nanos() as f64 / 50.0;
    assert!(
        per_pair >= READ_NS + SYNC_NS,
        "{per_pair} ns per read and flush"
    );
    drop(f);
    let held = m.unmount().unwrap();
    assert_eq!(
        (held.reads, held.syncs, held.direct_writes),
        (50, 50, 0),
        "{held:?}"
    );
    assert!(
        held.held_ns as f64 >= 50.0 * (READ_NS + SYNC_NS) * 0.999,
        "{held:?}"
    );
}

//! The emulated volume, for real: a FUSE server process, a loop device, ext4. Root only: these
//! cases run with `cargo test -- --ignored` (as `.ci/run` does), and are listed as skipped
//! otherwise. This binary is also the volume's server (its `main` serves when asked), as the
//! tool's own binary is.

// In a test a panic is the failure report, helpers included.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use diskbench_latency_fs::Latency;
use diskbench_latency_fs::volume::{self, Volume, VolumeModel};

const MIB: u64 = 1024 * 1024;
/// Set in a child of this binary that makes a volume, starts a held read and waits to be
/// killed.
const HOLDER_ENV: &str = "VOLUME_TEST_HOLDER_DIR";

/// A case: its name and what it runs in its own temporary folder.
type Case = (&'static str, fn(&Path));

fn main() {
    if let Some(outcome) = volume::serve_if_asked() {
        std::process::exit(i32::from(outcome.is_err()));
    }
    if let Some(dir) = std::env::var_os(HOLDER_ENV) {
        hold_a_read_until_killed(Path::new(&dir));
    }
    let cases: [Case; 4] = [
        (
            "direct_reads_and_synced_writes_take_at_least_the_models_latency",
            latency_cases,
        ),
        (
            "a_rename_exchange_and_a_hard_link_keep_their_data",
            file_semantics,
        ),
        (
            "an_iops_limit_paces_deep_reads_and_a_bound_refuses_one_iops",
            limits,
        ),
        (
            "a_run_killed_at_a_held_request_leaves_nothing_that_blocks_the_next",
            killed_run,
        ),
    ];
    let args: Vec<String> = std::env::args().collect();
    let ignored = args
        .iter()
        .any(|a| a == "--ignored" || a == "--include-ignored");
    let filter = args.iter().skip(1).find(|a| !a.starts_with("--"));
    let chosen: Vec<_> = cases
        .iter()
        .filter(|(name, _)| filter.is_none_or(|f| name.contains(f.as_str())))
        .collect();
    if !ignored {
        println!(
            "test result: ok. 0 passed; 0 failed; {} ignored (root only: run with --ignored)",
            chosen.len()
        );
        return;
    }
    if let Some(reason) = cannot_run_here() {
        assert!(
            std::env::var_os("DISKBENCH_TEST_STRICT").is_none(),
            "volume tests cannot run here: {reason}"
        );
        println!(
            "test result: ok. 0 passed; 0 failed; {} ignored ({reason})",
            chosen.len()
        );
        return;
    }
    for (name, case) in &chosen {
        let dir = tempfile::Builder::new()
            .prefix("volume-test-")
            .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
            .expect("a temporary folder");
        println!("test {name} ...");
        case(dir.path());
        println!("test {name} ... ok");
    }
    println!(
        "test result: ok. {} passed; 0 failed; 0 ignored",
        chosen.len()
    );
}

fn cannot_run_here() -> Option<String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some("not root".into());
    }
    if File::open("/dev/fuse").is_err() {
        return Some("/dev/fuse does not open".into());
    }
    if !Path::new("/dev/loop-control").exists() {
        return Some("no loop devices".into());
    }
    None
}

fn model(read_us: f64, write_us: f64, flush_us: f64) -> VolumeModel {
    VolumeModel {
        read: Latency::constant(read_us * 1e3),
        write: Latency::constant(write_us * 1e3),
        flush: Latency::constant(flush_us * 1e3),
        iops_limit: None,
        bytes_per_s_limit: None,
    }
}

/// A 4 KiB-aligned buffer inside `v`.
fn aligned(v: &mut [u8]) -> &mut [u8] {
    let at = v.as_ptr().align_offset(4096);
    &mut v[at..at + 4096]
}

/// Mean seconds per direct 4 KiB read of `file`, `n` reads at offsets spread over it.
fn direct_reads(file: &Path, n: u64) -> f64 {
    let f = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECT)
        .open(file)
        .expect("open for direct reads");
    let blocks = f.metadata().expect("metadata").len() / 4096;
    let mut v = vec![0u8; 8192];
    let buf = aligned(&mut v);
    let start = Instant::now();
    for i in 0..n {
        let block = (i * 7919) % blocks;
        f.read_exact_at(buf, block * 4096).expect("direct read");
    }
    start.elapsed().as_secs_f64() / n as f64
}

/// Mean seconds per 4 KiB overwrite + fdatasync of `file`.
fn synced_writes(file: &Path, n: u64) -> f64 {
    let f = OpenOptions::new()
        .write(true)
        .open(file)
        .expect("open for writes");
    let start = Instant::now();
    for i in 0..n {
        f.write_all_at(&[i as u8; 4096], (i % 64) * 4096)
            .expect("write");
        f.sync_data().expect("fdatasync");
    }
    start.elapsed().as_secs_f64() / n as f64
}

fn write_file(path: &Path, bytes: u64) {
    let mut f = File::create(path).expect("create");
    let chunk = vec![0x5a_u8; MIB as usize];
    for _ in 0..bytes / MIB {
        f.write_all(&chunk).expect("write");
    }
    f.sync_all().expect("fsync");
}

fn latency_cases(dir: &Path) {
    let mut v = Volume::create(dir, 256 * MIB, VolumeModel::floor()).expect("a volume");
    assert!(
        v.device()
            .is_some_and(|d| d.to_string_lossy().starts_with("/dev/loop"))
    );
    let file = v.path().join("data");
    write_file(&file, 16 * MIB);
    let floor_read = direct_reads(&file, 300);
    let floor_sync = synced_writes(&file, 100);
    v.set_model(model(800.0, 300.0, 600.0)).expect("the model");
    let read = direct_reads(&file, 200);
    let sync = synced_writes(&file, 50);
    let realtime = v.realtime();
    let stats = v.close().expect("released");
    println!(
        "  server real-time: {realtime}; timer late {:.0} us per reply; floor: read {:.0} us, synced write {:.0} us; at 800/300/600 us: read {:.0} us, synced write {:.0} us; {} reads, {} writes, {} flushes reached the server",
        stats.late_ns as f64 / 1e3 / (stats.reads + stats.writes + stats.flushes).max(1) as f64,
        floor_read * 1e6,
        floor_sync * 1e6,
        read * 1e6,
        sync * 1e6,
        stats.reads,
        stats.writes,
        stats.flushes
    );
    // Never faster than the model (the server holds from the request's arrival, so only a
    // clock error could make it so); how much slower depends on how busy the machine is.
    assert!(
        read >= 0.8e-3 * 0.98,
        "a direct read took {read} s, below the model's 800 us"
    );
    // A synced overwrite is at least a write and a flush round trip.
    assert!(
        sync >= 0.9e-3 * 0.98,
        "a synced write took {sync} s, below 300 + 600 us"
    );
    assert!(stats.reads >= 500 && stats.flushes >= 150, "{stats:?}");
    assert!(!dir.join("fs").exists() && std::fs::read_dir(dir).expect("dir").next().is_none());
}

fn file_semantics(dir: &Path) {
    let v = Volume::create(dir, 64 * MIB, model(100.0, 100.0, 100.0)).expect("a volume");
    let (a, b) = (v.path().join("a"), v.path().join("b"));
    std::fs::write(&a, "first").expect("a");
    std::fs::write(&b, "second").expect("b");
    let (ca, cb) = (
        std::ffi::CString::new(a.to_str().expect("utf-8")).expect("c"),
        std::ffi::CString::new(b.to_str().expect("utf-8")).expect("c"),
    );
    // SAFETY: two NUL-terminated paths; renameat2 with RENAME_EXCHANGE swaps them.
    let rc = unsafe {
        libc::renameat2(
            libc::AT_FDCWD,
            ca.as_ptr(),
            libc::AT_FDCWD,
            cb.as_ptr(),
            libc::RENAME_EXCHANGE,
        )
    };
    assert_eq!(rc, 0, "{}", std::io::Error::last_os_error());
    std::fs::write(&a, "written after the exchange").expect("write a");
    std::fs::hard_link(&a, v.path().join("a-link")).expect("link");
    std::fs::write(v.path().join("a-link"), "through the link").expect("write link");
    assert_eq!(std::fs::read_to_string(&a).expect("a"), "through the link");
    assert_eq!(std::fs::read_to_string(&b).expect("b"), "first");
    drop(v);
}

fn limits(dir: &Path) {
    let refused = Volume::create(
        dir,
        64 * MIB,
        VolumeModel {
            iops_limit: Some(1.0),
            ..VolumeModel::floor()
        },
    );
    let err = refused.err().expect("1 IOPS is refused").to_string();
    assert!(err.contains("IOPS limit of 1 "), "{err}");
    assert!(
        std::fs::read_dir(dir).expect("dir").next().is_none(),
        "nothing made"
    );

    let mut v = Volume::create(dir, 256 * MIB, VolumeModel::floor()).expect("a volume");
    let file = v.path().join("data");
    write_file(&file, 32 * MIB);
    v.set_model(VolumeModel {
        iops_limit: Some(500.0),
        ..VolumeModel::floor()
    })
    .expect("the model");
    // Four readers at once: without the limit this disk serves thousands a second.
    let start = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| direct_reads(&file, 150));
        }
    });
    let iops = 600.0 / start.elapsed().as_secs_f64();
    println!("  600 direct reads at a 500 IOPS limit: {iops:.0} IOPS");
    // The gate's burst lets about 5 ms of requests through at once; after that it paces.
    assert!(iops <= 500.0 * 1.1, "{iops} IOPS under a 500 IOPS limit");
    drop(v);
}

/// A child process: a volume holding each read 900 ms, one direct read in flight, then wait
/// to be killed (the parent kills it while the read is held).
fn hold_a_read_until_killed(dir: &Path) -> ! {
    let mut v = Volume::create(dir, 64 * MIB, VolumeModel::floor()).expect("a volume");
    let file = v.path().join("data");
    write_file(&file, 4 * MIB);
    v.set_model(model(900.0 * 1e3, 1.0, 1.0))
        .expect("the model");
    println!("holding");
    let _ = std::io::stdout().flush();
    let _ = direct_reads(&file, 1000);
    std::process::exit(0);
}

fn killed_run(dir: &Path) {
    let exe = std::env::current_exe().expect("this test binary");
    let mut child = Command::new(exe)
        .env(HOLDER_ENV, dir)
        .stdout(Stdio::piped())
        .spawn()
        .expect("the holder");
    let mut out = std::io::BufReader::new(child.stdout.take().expect("stdout"));
    let mut line = String::new();
    std::io::BufRead::read_line(&mut out, &mut line).expect("holder's line");
    assert_eq!(line.trim(), "holding");
    std::thread::sleep(Duration::from_millis(300));
    let pid = child.id();
    child.kill().expect("SIGKILL");
    let start = Instant::now();
    child.wait().expect("the holder is reaped");
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "the killed run took {:?} to die",
        start.elapsed()
    );
    let released = volume::sweep_stale();
    assert!(
        released.iter().any(|d| d.starts_with(dir)),
        "sweep released {released:?}, not the killed run's volume under {} (pid {pid})",
        dir.display()
    );
    let info = std::fs::read_to_string("/proc/self/mountinfo").expect("mountinfo");
    assert!(
        !info.contains(dir.to_str().expect("utf-8")),
        "left mounted:\n{info}"
    );
    // The next volume starts at once.
    let start = Instant::now();
    let v = Volume::create(dir, 64 * MIB, VolumeModel::floor()).expect("the next volume");
    assert!(start.elapsed() < Duration::from_secs(5));
    drop(v);
}

//! Integration tests: `cargo diskbench device`, on a loop device over a file on the work disk
//! (a block device whose bytes the test can check): both passes reported, the bytes unchanged,
//! no write system call on the device's descriptor (strace), and what is not a block device
//! refused with exit 2. Not the work disk's own device: a mounted filesystem changes its bytes
//! under the test, so a checksum of a region could not show that the tool wrote nothing (and on
//! the development VM `open("/dev/vda")` is refused even to root). A loop device over a file on
//! the work disk goes through the same block layer and nothing else writes to it.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common;

/// A loop device over a file of random bytes; detached when dropped.
struct Loop {
    dev: PathBuf,
    _dir: tempfile::TempDir,
}

impl Loop {
    fn new(mib: u64) -> Option<Loop> {
        let dir = common::sandbox();
        let img = dir.path().join("disk.img");
        let mut rng = record::random::FastRng::new(27);
        let mut data = vec![0u8; (mib << 20) as usize];
        rng.fill(&mut data);
        std::fs::write(&img, &data).unwrap();
        let out = Command::new("losetup")
            .args(["-f", "--show"])
            .arg(&img)
            .output();
        let Ok(out) = out else {
            common::skip("losetup is not installed (util-linux)");
            return None;
        };
        if !out.status.success() {
            common::skip(&format!(
                "no loop device here ({})",
                String::from_utf8_lossy(&out.stderr).trim()
            ));
            return None;
        }
        let dev = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
        Some(Loop { dev, _dir: dir })
    }
}

impl Drop for Loop {
    fn drop(&mut self) {
        let _ = Command::new("losetup").arg("-d").arg(&self.dev).status();
    }
}

/// The system call a line of `strace -f` names: "123 pread64(3</dev/loop0>, ..." is pread64.
fn syscall(line: &str) -> &str {
    let rest = line.split_once(' ').map(|(_, r)| r).unwrap_or(line);
    rest.split('(').next().unwrap_or("").trim()
}

fn checksum(dev: &Path) -> u64 {
    use std::hash::{Hash, Hasher};
    let bytes = std::fs::read(dev).expect("read the loop device");
    let mut h = std::collections::hash_map::DefaultHasher::new();
    bytes.hash(&mut h);
    h.finish()
}

#[test]
fn reads_both_passes_and_leaves_the_bytes_and_makes_no_write_call() {
    let Some(lp) = Loop::new(32) else { return };
    let dev = lp.dev.display().to_string();
    let before = checksum(&lp.dev);
    let dir = common::sandbox();
    let trace = dir.path().join("trace");
    let bin = env!("CARGO_BIN_EXE_cargo-diskbench");
    let have_strace = Command::new("strace").arg("-V").output().is_ok();
    if !have_strace {
        // The bytes are still checked; only the no-write-call check needs strace.
        common::skip("strace is not installed: no check that no write call reaches the device");
    }
    let out = if have_strace {
        // -y names each descriptor's file, so a write to the device would show its path.
        Command::new("strace")
            .args(["-f", "-y", "-qq", "-o"])
            .arg(&trace)
            .args([
                "-e",
                "trace=open,openat,pread64,preadv,preadv2,read,write,pwrite64,writev,pwritev,\
                 pwritev2,io_uring_enter,io_submit,sendfile,copy_file_range,splice,fallocate,\
                 ftruncate,ioctl",
            ])
            .args([bin, "device", &dev, "--size", "16M", "--runtime", "1"])
            .args(["--provisioned", "3000,125M"])
            .output()
            .unwrap()
    } else {
        eprintln!("strace is not installed: the system calls are not checked");
        common::bin()
            .args(["device", &dev, "--size", "16M", "--runtime", "1"])
            .output()
            .unwrap()
    };
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}\n{stdout}",
        String::from_utf8_lossy(&out.stderr)
    );
    for test in [
        "seq 1 MiB QD1",
        "seq 1 MiB QD32",
        "rand 4 KiB QD1",
        "rand 4 KiB QD32",
    ] {
        let line = stdout
            .lines()
            .find(|l| l.starts_with(test))
            .unwrap_or_else(|| panic!("no {test} line:\n{stdout}"));
        assert!(line.contains('x'), "first, second and ratio: {line}");
    }
    assert!(stdout.contains("first pass") && stdout.contains("second/first"));
    assert!(stdout.contains("of the provisioned"), "{stdout}");
    assert_eq!(checksum(&lp.dev), before, "the device's bytes changed");
    if have_strace {
        let trace = std::fs::read_to_string(&trace).unwrap();
        let on_dev: Vec<&str> = trace
            .lines()
            .filter(|l| l.contains(&format!("<{dev}>")))
            .collect();
        assert!(
            on_dev.iter().any(|l| l.contains("pread64(")),
            "the trace shows no read of {dev}: the check would prove nothing\n{trace}"
        );
        let writes: Vec<&&str> = on_dev
            .iter()
            .filter(|l| {
                let call = syscall(l);
                call.contains("write")
                    || [
                        "io_uring_enter",
                        "io_submit",
                        "fallocate",
                        "ftruncate",
                        "copy_file_range",
                        "splice",
                        "sendfile",
                    ]
                    .contains(&call)
            })
            .collect();
        assert!(writes.is_empty(), "write calls on the device: {writes:#?}");
        let opens: Vec<&str> = trace
            .lines()
            .filter(|l| l.contains("openat(") && l.contains(&format!("\"{dev}\"")))
            .collect();
        assert!(!opens.is_empty(), "no open of {dev} traced\n{trace}");
        for o in opens {
            assert!(
                o.contains("O_RDONLY") && o.contains("O_DIRECT"),
                "opened otherwise than O_RDONLY|O_DIRECT: {o}"
            );
        }
    }
}

#[test]
fn what_is_not_a_block_device_is_refused_with_exit_2() {
    let dir = common::sandbox();
    let file = dir.path().join("regular");
    std::fs::write(&file, vec![0u8; 1 << 20]).unwrap();
    for (path, says) in [
        (file.display().to_string(), "a regular file"),
        ("/dev/null".to_string(), "a character device"),
        (
            dir.path().join("missing").display().to_string(),
            "cannot be read",
        ),
    ] {
        let out = common::run(&["device", &path]);
        assert_eq!(out.status.code(), Some(2), "{path}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(says), "{path}: {err}");
    }
    assert_eq!(
        std::fs::read(&file).unwrap(),
        vec![0u8; 1 << 20],
        "the file is untouched"
    );
}

#[test]
fn a_region_past_the_end_is_refused_before_anything_is_read() {
    let Some(lp) = Loop::new(8) else { return };
    let dev = lp.dev.display().to_string();
    let out = common::run(&["device", &dev, "--size", "64M"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("past the end"));
}

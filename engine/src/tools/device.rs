//! Reading a block device, and nothing else: `cargo diskbench device DEVICE`.
//!
//! Why: a file test measures new blocks of a filesystem. Two things a runner's volume does
//! are only seen on the device: an EBS volume restored from a snapshot (every AMI-based
//! runner) fetches each block on its first read, so first reads are slower than later ones;
//! and the instance's own EBS bandwidth cap, which `dd if=/dev/nvme0n1p1 of=/dev/null bs=1M`
//! shows as the same MB/s on gp2 and gp3 alike.
//!
//! Read-only by construction: [`ReadOnlyDevice`] holds the one descriptor, opened
//! `O_RDONLY | O_DIRECT`, and its only I/O method is [`ReadOnlyDevice::read_at`] (`pread`).
//! Nothing else in the crate can reach the descriptor, so no code path can write to it (and a
//! write on an `O_RDONLY` descriptor would fail with `EBADF` anyway). Anything that is not a
//! block device is refused before it is opened; reading a mounted partition is fine.
//!
//! What it reads: a stated region (`offset`, `size`) cut into four equal parts, one per test,
//! so every test's first pass reads blocks no earlier test read: sequential 1 MiB one at a time
//! (as dd does) and 32 in flight, random 4 KiB one at a time and 32 in flight. Each test reads
//! its part twice: the first pass is first reads of those blocks, the second what the volume
//! gives once they are warm. O_DIRECT keeps the page cache out of both; a host cache below the
//! VM may still serve the second pass, which the second/first ratio then shows.
//! 32 in flight is 32 threads, each with one `pread` outstanding.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::Result;
use record::error::usage;
use record::random::FastRng;

use crate::files::testfile::AlignedBuf;
use crate::job::prng::OffsetGen;

/// A block device open for reading. It has no method that writes.
pub struct ReadOnlyDevice {
    fd: OwnedFd,
    path: PathBuf,
    size_bytes: u64,
    logical_block: u64,
}

/// Why a path is not a block device, in words ("a regular file", "missing").
fn refuse(path: &Path) -> Result<()> {
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) => {
            return Err(usage(format!(
                "device {}: cannot be read ({e}); give a block device such as /dev/nvme0n1p1 \
                 (lsblk lists them)",
                path.display()
            )));
        }
    };
    let ft = meta.file_type();
    if ft.is_block_device() {
        return Ok(());
    }
    let kind = if ft.is_file() {
        "a regular file (test files are measured by cargo diskbench run or fio)"
    } else if ft.is_char_device() {
        "a character device"
    } else if ft.is_dir() {
        "a folder"
    } else {
        "not a block device"
    };
    Err(usage(format!(
        "device {}: {kind}; give a block device such as /dev/nvme0n1p1 (lsblk lists them)",
        path.display()
    )))
}

impl ReadOnlyDevice {
    /// Open `path` `O_RDONLY | O_DIRECT`: only a block device, only as root.
    pub fn open(path: &Path) -> Result<ReadOnlyDevice> {
        refuse(path)?;
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            return Err(usage(format!(
                "device {}: reading a block device needs root; run it as root (sudo cargo \
                 diskbench device {})",
                path.display(),
                path.display()
            )));
        }
        let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes())
            .map_err(|_| usage(format!("device {}: a NUL in the path", path.display())))?;
        // SAFETY: a NUL-terminated path; the flags open for reading only.
        let raw = unsafe {
            libc::open(
                c.as_ptr(),
                libc::O_RDONLY | libc::O_DIRECT | libc::O_CLOEXEC | libc::O_NOCTTY,
            )
        };
        if raw < 0 {
            let e = std::io::Error::last_os_error();
            let hint = if e.raw_os_error() == Some(libc::EPERM) {
                ": the system refuses it even to root (a container's device policy, an LSM); \
                 run where the device may be read"
            } else {
                ""
            };
            return Err(usage(format!(
                "device {}: cannot open it read-only with O_DIRECT ({e}){hint}",
                path.display()
            )));
        }
        // SAFETY: `raw` is a descriptor we just opened and own alone.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        // The descriptor may not be a block device if the name was swapped since the check.
        // SAFETY: fstat writes only into `st`, which we own.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: `fd` is open and `st` is ours to write.
        if unsafe { libc::fstat(fd.as_raw_fd(), &mut st) } != 0
            || st.st_mode & libc::S_IFMT != libc::S_IFBLK
        {
            return Err(usage(format!(
                "device {}: not a block device once opened; give a block device",
                path.display()
            )));
        }
        let mut size_bytes: u64 = 0;
        let mut logical: libc::c_int = 0;
        // SAFETY: BLKGETSIZE64 writes a u64 and BLKSSZGET an int into the given pointers.
        let ok = unsafe {
            libc::ioctl(fd.as_raw_fd(), BLKGETSIZE64, &mut size_bytes) == 0
                && libc::ioctl(fd.as_raw_fd(), libc::BLKSSZGET, &mut logical) == 0
        };
        if !ok {
            return Err(anyhow::anyhow!(
                "device {}: cannot read its size ({})",
                path.display(),
                std::io::Error::last_os_error()
            ));
        }
        Ok(ReadOnlyDevice {
            fd,
            path: path.to_path_buf(),
            size_bytes,
            logical_block: (logical.max(512)) as u64,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn size_bytes(&self) -> u64 {
        self.size_bytes
    }

    pub fn logical_block(&self) -> u64 {
        self.logical_block
    }

    /// Read `buf.len()` bytes at `offset` (`pread`, retried on EINTR and short reads).
    pub(crate) fn read_at(&self, buf: &mut AlignedBuf, offset: u64) -> std::io::Result<()> {
        let len = buf.as_slice().len();
        let mut done = 0usize;
        while done < len {
            // SAFETY: the buffer holds buf.len() bytes we own; pread writes at most the count.
            let n = unsafe {
                libc::pread(
                    self.fd.as_raw_fd(),
                    buf.as_ptr().add(done).cast(),
                    len - done,
                    (offset + done as u64) as libc::off_t,
                )
            };
            if n < 0 {
                let e = std::io::Error::last_os_error();
                if e.kind() == std::io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(e);
            }
            if n == 0 {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::UnexpectedEof,
                    "end of the device",
                ));
            }
            done += n as usize;
        }
        Ok(())
    }
}

/// `BLKGETSIZE64` = `_IOR(0x12, 114, size_t)` (linux/fs.h); libc does not export it.
const BLKGETSIZE64: libc::c_ulong = 0x8008_1272;

/// One of the four tests.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeviceTest {
    pub name: &'static str,
    pub block_bytes: u64,
    pub depth: usize,
    pub random: bool,
}

/// The four tests, in the order they run.
pub const TESTS: [DeviceTest; 4] = [
    DeviceTest {
        name: "seq 1 MiB QD1",
        block_bytes: 1 << 20,
        depth: 1,
        random: false,
    },
    DeviceTest {
        name: "seq 1 MiB QD32",
        block_bytes: 1 << 20,
        depth: 32,
        random: false,
    },
    DeviceTest {
        name: "rand 4 KiB QD1",
        block_bytes: 4096,
        depth: 1,
        random: true,
    },
    DeviceTest {
        name: "rand 4 KiB QD32",
        block_bytes: 4096,
        depth: 32,
        random: true,
    },
];

/// What to read.
#[derive(Clone, Debug)]
pub struct DevicePlan {
    /// Start of the region, bytes (a multiple of 1 MiB).
    pub offset: u64,
    /// Length of the region, bytes; each test gets a quarter.
    pub size: u64,
    /// The most a first pass may take; the second pass reads what the first did.
    pub runtime_cap: Duration,
}

/// One pass of one test.
#[derive(Clone, Copy, Debug)]
pub struct PassResult {
    pub bytes: u64,
    pub ios: u64,
    pub elapsed_s: f64,
}

impl PassResult {
    pub fn iops(&self) -> f64 {
        if self.elapsed_s > 0.0 {
            self.ios as f64 / self.elapsed_s
        } else {
            0.0
        }
    }

    pub fn bytes_s(&self) -> f64 {
        if self.elapsed_s > 0.0 {
            self.bytes as f64 / self.elapsed_s
        } else {
            0.0
        }
    }
}

/// Both passes of one test, over `part_offset .. part_offset + part_bytes`.
#[derive(Clone, Debug)]
pub struct TestOutcome {
    pub test: DeviceTest,
    pub part_offset: u64,
    pub part_bytes: u64,
    pub first: PassResult,
    pub second: PassResult,
}

impl TestOutcome {
    /// The test's figure: bytes/s for sequential, IOPS for random.
    pub fn figure(&self, pass: &PassResult) -> f64 {
        if self.test.random {
            pass.iops()
        } else {
            pass.bytes_s()
        }
    }

    /// Second pass over first.
    pub fn ratio(&self) -> f64 {
        let f = self.figure(&self.first);
        if f > 0.0 {
            self.figure(&self.second) / f
        } else {
            0.0
        }
    }
}

/// What [`run`] tells as it goes.
pub enum DeviceProgress<'a> {
    Pass {
        test: &'a DeviceTest,
        pass: u32,
        result: &'a PassResult,
    },
}

impl DevicePlan {
    /// Check the region against the device (usage errors name the option).
    pub fn check(&self, dev: &ReadOnlyDevice) -> Result<()> {
        const MIB: u64 = 1 << 20;
        if !self.offset.is_multiple_of(MIB) {
            return Err(usage(format!(
                "--offset {}: give a multiple of 1 MiB (the sequential tests read 1 MiB blocks)",
                self.offset
            )));
        }
        if self.size < 4 * MIB || !self.size.is_multiple_of(4 * MIB) {
            return Err(usage(format!(
                "--size {}: give at least 4 MiB, a multiple of 4 MiB (four tests, a quarter each, \
                 in whole MiB)",
                self.size
            )));
        }
        if self.offset.saturating_add(self.size) > dev.size_bytes() {
            return Err(usage(format!(
                "--offset {} --size {}: past the end of {} ({} bytes); give a smaller region",
                self.offset,
                self.size,
                dev.path().display(),
                dev.size_bytes()
            )));
        }
        Ok(())
    }
}

/// Run the four tests, both passes each.
pub fn run(
    dev: &ReadOnlyDevice,
    plan: &DevicePlan,
    progress: &mut dyn FnMut(DeviceProgress<'_>),
) -> Result<Vec<TestOutcome>> {
    plan.check(dev)?;
    let part = plan.size / 4;
    let mut out = Vec::new();
    for (i, test) in TESTS.iter().enumerate() {
        let part_offset = plan.offset + i as u64 * part;
        let offsets: Vec<u64> = if test.random {
            let mut g = OffsetGen::new(
                FastRng::for_stream(Some(0x89), i as u64),
                part_offset,
                part,
                test.block_bytes,
            );
            (0..part / test.block_bytes)
                .map(|_| g.next_offset())
                .collect()
        } else {
            (0..part / test.block_bytes)
                .map(|k| part_offset + k * test.block_bytes)
                .collect()
        };
        let first = pass(dev, test, &offsets, Some(plan.runtime_cap))?;
        progress(DeviceProgress::Pass {
            test,
            pass: 1,
            result: &first,
        });
        let done = first.ios as usize;
        let second = pass(dev, test, &offsets[..done], None)?;
        progress(DeviceProgress::Pass {
            test,
            pass: 2,
            result: &second,
        });
        out.push(TestOutcome {
            test: *test,
            part_offset,
            part_bytes: part,
            first,
            second,
        });
    }
    Ok(out)
}

/// Read `offsets` with `test.depth` readers, stopping after `cap` (the list's prefix read is
/// what the result counts, in order: reader k takes the next index).
fn pass(
    dev: &ReadOnlyDevice,
    test: &DeviceTest,
    offsets: &[u64],
    cap: Option<Duration>,
) -> Result<PassResult> {
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let ios = AtomicU64::new(0);
    let start = Instant::now();
    let errors: Vec<std::io::Error> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..test.depth)
            .map(|_| {
                s.spawn(|| -> std::io::Result<()> {
                    let mut rng = FastRng::new(1);
                    let mut buf = AlignedBuf::new(
                        test.block_bytes as usize,
                        dev.logical_block().max(4096) as usize,
                        &mut rng,
                    );
                    loop {
                        if stop.load(Ordering::Relaxed) || record::cancel::requested() {
                            return Ok(());
                        }
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(&off) = offsets.get(i) else {
                            return Ok(());
                        };
                        if let Err(e) = dev.read_at(&mut buf, off) {
                            stop.store(true, Ordering::Relaxed);
                            return Err(e);
                        }
                        ios.fetch_add(1, Ordering::Relaxed);
                        if cap.is_some_and(|c| start.elapsed() >= c) {
                            stop.store(true, Ordering::Relaxed);
                        }
                    }
                })
            })
            .collect();
        handles
            .into_iter()
            .filter_map(|h| match h.join() {
                Ok(Ok(())) => None,
                Ok(Err(e)) => Some(e),
                Err(_) => Some(std::io::Error::other("a reader thread panicked")),
            })
            .collect()
    });
    let elapsed_s = start.elapsed().as_secs_f64();
    if record::cancel::requested() {
        return Err(record::error::interrupted());
    }
    if let Some(e) = errors.into_iter().next() {
        return Err(anyhow::anyhow!(
            "device {}: a read failed during {}: {e}",
            dev.path().display(),
            test.name
        ));
    }
    let ios = ios.load(Ordering::Relaxed);
    Ok(PassResult {
        bytes: ios * test.block_bytes,
        ios,
        elapsed_s,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_what_is_not_a_block_device() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("file");
        std::fs::write(&f, b"x").unwrap();
        for (p, what) in [
            (f.as_path(), "a regular file"),
            (Path::new("/dev/null"), "a character device"),
            (d.path(), "a folder"),
            (Path::new("/nonexistent-i27"), "cannot be read"),
        ] {
            let e = ReadOnlyDevice::open(p).err().expect("refused");
            assert_eq!(record::error::exit_code(&e), 2);
            assert!(format!("{e:#}").contains(what), "{e:#}");
        }
    }
}

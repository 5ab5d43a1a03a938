//! ioping's latency probe (koct9i/ioping, `ioping.c`), its defaults and its output.
//!
//! One request at a time, one a second by default, on an otherwise idle disk: unlike the
//! back-to-back QD1 column this shows what a request costs after the disk had time to go
//! idle (wake-up, power states), and it is the quick probe people run before a job.
//!
//! ioping's defaults, kept: 4 KiB requests (`-s`), one a second (`-i`), forever unless `-c`
//! or `-w`; random offsets in the working set (`-S`; 1 MiB in a temporary file for a
//! directory, the whole file for a file); buffered I/O with the request's pages dropped from
//! the page cache before each request (`posix_fadvise(DONTNEED)`): not direct I/O, `-D` asks
//! for that, `-C` keeps the cache; reads unless `-W`, a write followed by `fsync` unless
//! `-C`; the first request is a warm-up and not counted (`-a 1`). `-R` is the rate test: no
//! pause, 3 s, a 64 MiB working set, quiet. A directory gets an unnamed temporary file
//! (`O_TMPFILE`, as ioping), written through once before the first request; a file is only
//! read (writing it is refused here: ioping asks for `-WWW` to shred one).

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Result;
use record::error::usage;
use record::random::FastRng;
use record::size::{self, SizeDialect};

use crate::files::testfile::AlignedBuf;
use crate::job::cpu::mono_ns;
use crate::job::hist::LatencyHist;

const NSEC_PER_SEC: u64 = 1_000_000_000;

/// The options, as ioping takes them.
#[derive(Clone, Debug, PartialEq)]
pub struct IopingOptions {
    pub target: PathBuf,
    /// `-c`: stop after this many requests; 0 = never.
    pub count: u64,
    /// `-i`: the pause between requests' starts.
    pub interval_ns: u64,
    /// `-s`: request size.
    pub size: u64,
    /// `-S`: working set; None = ioping's default for the target.
    pub work_size: Option<u64>,
    /// `-w`: stop after this long; None = never.
    pub deadline_ns: Option<u64>,
    /// `-D`: O_DIRECT.
    pub direct: bool,
    /// `-C`: keep the page cache (no DONTNEED before each request, no fsync after a write).
    pub cached: bool,
    /// `-W`: write requests.
    pub write: bool,
    /// `-q`: no per-request lines.
    pub quiet: bool,
}

/// `-s`, `-S`: ioping's `size_suffix` (`k`, `m`, `KiB`, ... all powers of 1024; `sector`,
/// `page`), case-insensitive, a decimal figure allowed: [`SizeDialect::Ioping`].
pub fn parse_size(option: &str, text: &str) -> Result<u64> {
    size::parse_size(text, SizeDialect::Ioping)
        .ok_or_else(|| not_a(option, text, "a size such as 4k, 1m, 64KiB"))
}

/// `-i`, `-w`: ioping's `time_suffix` (seconds by default; `us`, `ms`, `s`, `min`, `hour`, ...),
/// in nanoseconds.
pub fn parse_time(option: &str, text: &str) -> Result<u64> {
    const SFX: &[(&str, u64)] = &[
        ("hour", NSEC_PER_SEC * 3600),
        ("min", NSEC_PER_SEC * 60),
        ("s", NSEC_PER_SEC),
        ("ms", 1_000_000),
        ("us", 1000),
        ("ns", 1),
        ("nsec", 1),
        ("usec", 1000),
        ("msec", 1_000_000),
        ("", NSEC_PER_SEC),
        ("sec", NSEC_PER_SEC),
        ("m", NSEC_PER_SEC * 60),
        ("h", NSEC_PER_SEC * 3600),
    ];
    suffixed(option, text, SFX, "a time such as 1, 0.5, 200ms, 10s")
}

/// `-c`: ioping's `int_suffix` (`k` = 1000, ...).
pub fn parse_count(option: &str, text: &str) -> Result<u64> {
    const SFX: &[(&str, u64)] = &[
        ("t", 1_000_000_000_000),
        ("g", 1_000_000_000),
        ("m", 1_000_000),
        ("k", 1000),
        ("", 1),
    ];
    suffixed(option, text, SFX, "a whole number such as 20")
}

/// ioping's `parse_suffix` over `sfx`, or the usage error naming the option.
fn suffixed(option: &str, text: &str, sfx: &[(&str, u64)], what: &str) -> Result<u64> {
    size::parse_suffixed(text, sfx).ok_or_else(|| not_a(option, text, what))
}

fn not_a(option: &str, text: &str, what: &str) -> anyhow::Error {
    usage(format!("{option} {text}: not {what}"))
}

/// ioping's `print_suffix`: the largest unit the value reaches, 0, 1 or 2 decimals.
fn print_suffix(val: u64, sfx: &[(&str, u64)]) -> String {
    let (txt, mul) = sfx
        .iter()
        .find(|(_, m)| val >= *m || *m == 1)
        .copied()
        .unwrap_or(("", 1));
    let precision = if val.is_multiple_of(mul) {
        0
    } else if val >= mul * 10 {
        1
    } else {
        2
    };
    let v = val as f64 / mul as f64;
    if txt.is_empty() {
        format!("{v:.precision$}")
    } else {
        format!("{v:.precision$} {txt}")
    }
}

/// Sizes as ioping prints them ("4 KiB", "252.0 GiB").
pub fn print_size(val: u64) -> String {
    // ioping prints in the units its table starts with: the first whose multiplier the
    // value reaches, down to bytes.
    print_suffix(val, size::IOPING_SIZE_SUFFIXES)
}

/// Times as ioping prints them ("235.7 us", "1.02 s").
pub fn print_time(ns: u64) -> String {
    print_suffix(
        ns,
        &[
            ("hour", NSEC_PER_SEC * 3600),
            ("min", NSEC_PER_SEC * 60),
            ("s", NSEC_PER_SEC),
            ("ms", 1_000_000),
            ("us", 1000),
            ("ns", 1),
        ],
    )
}

/// Counts as ioping prints them ("2.58 k").
pub fn print_int(val: u64) -> String {
    print_suffix(
        val,
        &[
            ("T", 1_000_000_000_000),
            ("G", 1_000_000_000),
            ("M", 1_000_000),
            ("k", 1000),
            ("", 1),
        ],
    )
}

/// The target as ioping names it in every line: "(ext4 /dev/vda 252.0 GiB)".
#[derive(Clone, Debug)]
pub struct TargetInfo {
    pub fstype: String,
    pub device: String,
    pub fs_bytes: u64,
}

/// ioping's `parse_device`: the mount whose st_dev is the file's, from /proc/self/mountinfo,
/// and the filesystem's size from fstatvfs.
fn target_info(fd: &OwnedFd, dev: u64) -> TargetInfo {
    // SAFETY: fstatvfs writes only into `vfs`, which we own.
    let mut vfs: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: `fd` is open and `vfs` is ours to write.
    let fs_bytes = if unsafe { libc::fstatvfs(fd.as_raw_fd(), &mut vfs) } == 0 {
        vfs.f_frsize * vfs.f_blocks
    } else {
        0
    };
    let (major, minor) = (libc::major(dev), libc::minor(dev));
    let mut info = TargetInfo {
        fstype: "unknown".into(),
        device: "unknown".into(),
        fs_bytes,
    };
    if let Ok(text) = std::fs::read_to_string("/proc/self/mountinfo") {
        for line in text.lines() {
            let mut f = line.split(' ');
            let devno = f.nth(2).unwrap_or("");
            if devno != format!("{major}:{minor}") {
                continue;
            }
            if let Some((_, rest)) = line.split_once(" - ") {
                let mut r = rest.split(' ');
                info.fstype = r.next().unwrap_or("").to_string();
                info.device = r.next().unwrap_or("").to_string();
            }
            break;
        }
    }
    info
}

/// One request's result.
#[derive(Clone, Copy, Debug)]
pub struct Request {
    /// 1-based.
    pub number: u64,
    pub bytes: u64,
    pub time_ns: u64,
    /// "warmup", "fast", "slow" or none, as ioping marks it.
    pub notice: Option<&'static str>,
}

/// ioping's totals (`struct statistics` after `finish_statistics`).
#[derive(Clone, Debug, Default)]
pub struct Totals {
    /// Every request, warm-up included (`count`).
    pub count: u64,
    /// Requests counted (`valid`).
    pub valid: u64,
    pub sum_ns: f64,
    pub sum2: f64,
    pub min_ns: u64,
    pub max_ns: u64,
    /// From the first request's start to the end (`load_time`).
    pub load_time_ns: u64,
}

impl Totals {
    pub fn avg_ns(&self) -> f64 {
        if self.valid > 0 {
            self.sum_ns / self.valid as f64
        } else {
            0.0
        }
    }
    pub fn mdev_ns(&self) -> f64 {
        if self.valid == 0 {
            return 0.0;
        }
        let avg = self.avg_ns();
        (self.sum2 / self.valid as f64 - avg * avg).max(0.0).sqrt()
    }
    /// Requests per second of I/O time (ioping's `iops`).
    pub fn iops(&self) -> f64 {
        if self.sum_ns > 0.0 {
            NSEC_PER_SEC as f64 * self.valid as f64 / self.sum_ns
        } else {
            0.0
        }
    }
    /// Requests per second of wall time (ioping's `load_iops`).
    pub fn load_iops(&self) -> f64 {
        if self.load_time_ns > 0 {
            NSEC_PER_SEC as f64 * self.count as f64 / self.load_time_ns as f64
        } else {
            0.0
        }
    }
}

/// A probe ready to run: the file open, the working set known.
pub struct Probe {
    opts: IopingOptions,
    fd: OwnedFd,
    /// Start of the working set in the file (always 0 here) and its length.
    work_size: u64,
    pub info: TargetInfo,
    /// The per-line label: "(ext4 /dev/vda 252.0 GiB)".
    pub label: String,
}

impl Probe {
    /// Check the options and open the target (exit 2 for anything wrong, before any I/O).
    pub fn open(opts: IopingOptions) -> Result<Probe> {
        let t = &opts.target;
        let meta = std::fs::metadata(t).map_err(|e| {
            usage(format!(
                "ioping {}: cannot be read ({e}); give a folder or a file",
                t.display()
            ))
        })?;
        if opts.size == 0 {
            return Err(usage("-s 0: a request needs at least one byte; e.g. -s 4k"));
        }
        if opts.direct && !opts.size.is_multiple_of(512) {
            return Err(usage(format!(
                "-s {}: with -D a request is whole 512-byte sectors; e.g. -s 4k",
                opts.size
            )));
        }
        let is_dir = meta.is_dir();
        if !is_dir && !meta.is_file() {
            return Err(usage(format!(
                "ioping {}: not a folder or a regular file (devices: cargo diskbench device)",
                t.display()
            )));
        }
        if !is_dir && opts.write {
            return Err(usage(format!(
                "ioping -W {}: would overwrite the file (ioping asks for -WWW); give a folder, \
                 where a temporary file is written",
                t.display()
            )));
        }
        let file_len = if is_dir { 1 << 20 } else { meta.len() };
        let work_size = opts.work_size.unwrap_or(file_len);
        if work_size > file_len && !is_dir || work_size == 0 {
            return Err(usage(format!(
                "ioping {}: the working set ({} bytes) does not fit the target ({} bytes); \
                 give a smaller -S",
                t.display(),
                work_size,
                file_len
            )));
        }
        if opts.size > work_size {
            return Err(usage(format!(
                "-s {}: the request is bigger than the working set ({work_size} bytes)",
                opts.size
            )));
        }
        let fd = if is_dir {
            open_tmpfile(t)?
        } else {
            open_path(t, libc::O_RDONLY)?
        };
        if opts.direct {
            // SAFETY: fcntl on a descriptor we own; sets the status flags only.
            if unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_SETFL, libc::O_DIRECT) } != 0 {
                return Err(usage(format!(
                    "ioping -D {}: O_DIRECT refused here ({}); drop -D",
                    t.display(),
                    std::io::Error::last_os_error()
                )));
            }
        }
        if is_dir {
            prepare(&fd, work_size, opts.size, t)?;
        }
        // SAFETY: fstat writes only into `st`.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: `fd` is open and `st` is ours to write.
        unsafe { libc::fstat(fd.as_raw_fd(), &mut st) };
        let info = target_info(&fd, st.st_dev);
        // SAFETY: fadvise only changes readahead behaviour.
        unsafe {
            libc::posix_fadvise(fd.as_raw_fd(), 0, work_size as i64, libc::POSIX_FADV_RANDOM)
        };
        let label = format!(
            "({} {} {})",
            info.fstype,
            info.device,
            print_size(info.fs_bytes)
        );
        Ok(Probe {
            opts,
            fd,
            work_size,
            info,
            label,
        })
    }

    pub fn options(&self) -> &IopingOptions {
        &self.opts
    }

    /// The request line ioping prints.
    pub fn line(&self, r: &Request) -> String {
        let mut s = format!(
            "{} {} {} {}: request={} time={}",
            print_size(r.bytes),
            if self.opts.write { ">>>" } else { "<<<" },
            self.opts.target.display(),
            self.label,
            r.number,
            print_time(r.time_ns)
        );
        if let Some(n) = r.notice {
            s.push_str(&format!(" ({n})"));
        }
        s
    }

    /// Run the requests, calling `each` after every one. Returns the totals, the histogram
    /// of the counted requests and the CPU time the process used meanwhile.
    pub fn run(
        &self,
        each: &mut dyn FnMut(&Request),
    ) -> Result<(Totals, LatencyHist, record::Cpu)> {
        let cpu0 = crate::job::cpu::CpuTime::process();
        let o = &self.opts;
        let mut rng = FastRng::for_stream(None, 0);
        let mut buf = AlignedBuf::new(o.size as usize, 4096, &mut rng);
        let blocks = (self.work_size / o.size).max(1);
        let mut totals = Totals {
            min_ns: u64::MAX,
            ..Totals::default()
        };
        let mut hist = LatencyHist::new();
        let start = mono_ns();
        let deadline = o.deadline_ns.map(|d| start + d);
        let mut time_next = start;
        let mut request = 0u64;
        loop {
            if record::cancel::requested() {
                break;
            }
            request += 1;
            let offset = rng.next_u64() % blocks * o.size;
            let fd = self.fd.as_raw_fd();
            if !o.cached {
                // SAFETY: fadvise on our descriptor; drops clean cached pages only.
                unsafe {
                    libc::posix_fadvise(fd, offset as i64, o.size as i64, libc::POSIX_FADV_DONTNEED)
                };
            }
            if o.write {
                buf.refresh(&mut rng);
            }
            let t0 = mono_ns();
            // SAFETY: the buffer holds o.size bytes we own.
            let n = unsafe {
                if o.write {
                    libc::pwrite(fd, buf.as_ptr().cast(), o.size as usize, offset as i64)
                } else {
                    libc::pread(fd, buf.as_ptr().cast(), o.size as usize, offset as i64)
                }
            };
            if n < 0 {
                let e = std::io::Error::last_os_error();
                if e.kind() != std::io::ErrorKind::Interrupted {
                    return Err(anyhow::anyhow!(
                        "ioping {}: request {request} failed: {e}",
                        o.target.display()
                    ));
                }
            }
            // SAFETY: fsync on our descriptor.
            if o.write && !o.cached && unsafe { libc::fsync(fd) } != 0 {
                return Err(anyhow::anyhow!(
                    "ioping {}: fsync failed: {}",
                    o.target.display(),
                    std::io::Error::last_os_error()
                ));
            }
            let now = mono_ns();
            time_next += o.interval_ns;
            if now > time_next {
                time_next = now;
            }
            let took = now - t0;
            let bytes = n.max(0) as u64;
            totals.count += 1;
            let notice = if bytes == 0 {
                None
            } else if request <= 1 {
                Some("warmup")
            } else {
                totals.valid += 1;
                totals.sum_ns += took as f64;
                totals.sum2 += took as f64 * took as f64;
                totals.min_ns = totals.min_ns.min(took);
                totals.max_ns = totals.max_ns.max(took);
                hist.record(took);
                let avg = totals.sum_ns / totals.valid as f64;
                if totals.valid > 5 && (took as f64) * 2.0 < avg {
                    Some("fast")
                } else if totals.valid > 5 && took as f64 > avg * 2.0 {
                    Some("slow")
                } else {
                    None
                }
            };
            each(&Request {
                number: request,
                bytes,
                time_ns: took,
                notice,
            });
            if o.count > 0 && request >= o.count {
                break;
            }
            if deadline.is_some_and(|d| time_next >= d) {
                break;
            }
            if time_next > now {
                sleep_until(time_next);
            }
        }
        totals.load_time_ns = mono_ns() - start;
        if totals.valid == 0 {
            totals.min_ns = 0;
        }
        let used = crate::job::cpu::CpuTime::process().since(cpu0);
        let cpu = record::Cpu {
            user_s: used.user.as_secs_f64(),
            sys_s: used.sys.as_secs_f64(),
        };
        Ok((totals, hist, cpu))
    }

    /// ioping's closing lines.
    pub fn summary(&self, t: &Totals) -> String {
        let size = self.opts.size;
        let iops = t.iops();
        let load_iops = t.load_iops();
        let mut s = format!(
            "\n--- {} {} ioping statistics ---\n",
            self.opts.target.display(),
            self.label
        );
        s.push_str(&format!(
            "{} requests completed in {}, {} {}, {} iops, {}/s\n",
            print_int(t.valid),
            print_time(t.sum_ns as u64),
            print_size(t.valid * size),
            if self.opts.write { "written" } else { "read" },
            print_int(iops as u64),
            print_size((iops * size as f64) as u64)
        ));
        s.push_str(&format!(
            "generated {} requests in {}, {}, {} iops, {}/s\n",
            print_int(t.count),
            print_time(t.load_time_ns),
            print_size(t.count * size),
            print_int(load_iops as u64),
            print_size((load_iops * size as f64) as u64)
        ));
        s.push_str(&format!(
            "min/avg/max/mdev = {} / {} / {} / {}\n",
            print_time(t.min_ns),
            print_time(t.avg_ns() as u64),
            print_time(t.max_ns),
            print_time(t.mdev_ns() as u64)
        ));
        s
    }

    /// The record's test: id "ioping", the counted requests' figures.
    pub fn test_result(
        &self,
        t: &Totals,
        hist: &LatencyHist,
        cpu: record::Cpu,
    ) -> record::TestResult {
        let o = &self.opts;
        let mut lat = hist.latency();
        lat.mean = Some(t.avg_ns() as u64);
        let d = record::DirectionStats {
            ios: t.valid,
            bytes: t.valid * o.size,
            iops: t.iops(),
            mib_s: t.iops() * o.size as f64 / 1_048_576.0,
            lat_ns: Some(lat),
            hist: Some(hist.encode()),
            sync_lat_ns: None,
            sync_hist: None,
        };
        let mut notes = vec![format!(
            "ioping: one {} request every {} ({} over a {} working set{}); iops is requests \
             per second of I/O time, as ioping's; {} of wall time",
            print_size(o.size),
            print_time(o.interval_ns),
            if o.write { "writes" } else { "reads" },
            print_size(self.work_size),
            if o.cached {
                ", page cache kept (-C)"
            } else {
                ", each request's pages dropped from the page cache first"
            },
            format!("{:.1} requests per second", t.load_iops())
        )];
        if o.write && !o.cached {
            notes.push("each write is followed by fsync, as ioping does".into());
        }
        record::TestResult {
            id: "ioping".into(),
            job: record::JobSettings {
                rw: if o.write { "randwrite" } else { "randread" }.into(),
                bs: o.size,
                iodepth: 1,
                numjobs: 1,
                size: self.work_size,
                direct: o.direct,
                sync: if o.write && !o.cached {
                    "fsync:1"
                } else {
                    "none"
                }
                .into(),
                rwmixread: None,
            },
            engine: record::EngineUsed {
                used: "psync".into(),
                fallback: None,
                direct: o.direct,
                jobs_as: None,
            },
            elapsed_s: t.load_time_ns as f64 / 1e9,
            read: (!o.write).then(|| d.clone()),
            write: o.write.then_some(d),
            cpu,
            notes,
            repeats: None,
            file_preparation: None,
            cache_suspect: None,
            window: None,
        }
    }
}

fn sleep_until(t_ns: u64) {
    let now = mono_ns();
    if t_ns > now {
        std::thread::sleep(Duration::from_nanos(t_ns - now));
    }
}

fn open_path(path: &Path, flags: libc::c_int) -> Result<OwnedFd> {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes())
        .map_err(|_| usage(format!("ioping {}: a NUL in the path", path.display())))?;
    // SAFETY: a NUL-terminated path.
    let raw = unsafe { libc::open(c.as_ptr(), flags | libc::O_CLOEXEC | libc::O_NOCTTY, 0o600) };
    if raw < 0 {
        return Err(usage(format!(
            "ioping {}: cannot open ({})",
            path.display(),
            std::io::Error::last_os_error()
        )));
    }
    // SAFETY: a descriptor we just opened and own alone.
    Ok(unsafe { OwnedFd::from_raw_fd(raw) })
}

/// An unnamed file in `dir` (O_TMPFILE): nothing is left behind, whatever happens.
fn open_tmpfile(dir: &Path) -> Result<OwnedFd> {
    open_path(dir, libc::O_RDWR | libc::O_TMPFILE).map_err(|e| {
        usage(format!(
            "{e:#}: the folder cannot hold an unnamed temporary file (O_TMPFILE); give a \
             folder on a local filesystem"
        ))
    })
}

/// Write the working set once, as ioping does, and sync it.
fn prepare(fd: &OwnedFd, work_size: u64, size: u64, dir: &Path) -> Result<()> {
    let mut rng = FastRng::for_stream(None, 1);
    let chunk = size.clamp(4096, 1 << 20);
    let mut buf = AlignedBuf::new(chunk as usize, 4096, &mut rng);
    let mut off = 0u64;
    while off < work_size {
        let n = chunk.min(work_size - off);
        buf.refresh(&mut rng);
        // SAFETY: the buffer holds at least n bytes.
        let w =
            unsafe { libc::pwrite(fd.as_raw_fd(), buf.as_ptr().cast(), n as usize, off as i64) };
        if w <= 0 {
            return Err(anyhow::anyhow!(
                "ioping {}: preparing the temporary file failed: {}",
                dir.display(),
                std::io::Error::last_os_error()
            ));
        }
        off += w as u64;
    }
    // SAFETY: fsync on our descriptor.
    if unsafe { libc::fsync(fd.as_raw_fd()) } != 0 {
        return Err(anyhow::anyhow!(
            "ioping {}: fsync failed: {}",
            dir.display(),
            std::io::Error::last_os_error()
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_print_as_ioping_prints_them() {
        assert_eq!(print_size(4096), "4 KiB");
        assert_eq!(print_size(252 << 30), "252 GiB");
        assert_eq!(print_size(270_600_000_000), "252.0 GiB");
        assert_eq!(print_size(10_590_617), "10.1 MiB");
        assert_eq!(print_time(235_700), "235.7 us");
        assert_eq!(print_time(410_800_000), "410.8 ms");
        assert_eq!(print_time(1_020_000_000), "1.02 s");
        assert_eq!(print_int(2584), "2.58 k");
        assert_eq!(print_int(7), "7");
        assert_eq!(print_int(2), "2");
    }

    #[test]
    fn options_parse_with_iopings_suffixes() {
        assert_eq!(parse_size("-s", "4k").unwrap(), 4096);
        assert_eq!(parse_size("-s", "64KiB").unwrap(), 65536);
        assert_eq!(parse_size("-s", "1page").unwrap(), 4096);
        assert_eq!(parse_time("-i", "1").unwrap(), NSEC_PER_SEC);
        assert_eq!(parse_time("-i", "200ms").unwrap(), 200_000_000);
        assert_eq!(parse_time("-i", "0.5").unwrap(), 500_000_000);
        assert_eq!(parse_count("-c", "20").unwrap(), 20);
        assert_eq!(parse_count("-c", "1k").unwrap(), 1000);
        assert!(parse_size("-s", "4x").is_err());
        assert!(parse_time("-w", "soon").is_err());
    }
}

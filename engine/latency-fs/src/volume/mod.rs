//! An emulated volume at the block layer: a real ext4 on a loop device whose every request
//! is held per another disk's model (latency per read, write and flush; IOPS and bandwidth
//! limits). The kernel's page cache, write-back, read-ahead and journal sit in front of it as
//! on a runner's disk; only what reaches the device pays.
//!
//! The layers, bottom up: a sparse backing file on the local disk; a server process (this
//! crate's [`server`], started from the caller's own executable, see [`serve_if_asked`])
//! that exposes it as one file on a FUSE mount and holds each reply; a loop device with
//! direct I/O over that file; ext4 on the loop device, mounted in a private folder.
//!
//! Safe by construction: the server is a child process that the kernel kills when the
//! thread that started it dies (`PR_SET_PDEATHSIG`), and a dead server's connection is
//! aborted by the kernel, so a killed run leaves I/O errors, never a process stuck in D
//! state; what such a run leaves mounted is found and released by [`sweep_stale`].

mod model;
mod server;

use std::ffi::CString;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::DirBuilderExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

pub use model::{IO_UNIT_BYTES, MAX_HOLD, ModelError, VolumeModel};
pub use server::VolumeStats;

/// The name of the server's mounts (their source reads `diskbench-volume:PID`).
pub(crate) const SUBTYPE: &str = "diskbench-volume";
/// Set in the server process's environment: its mount point, the backing file, the size.
const SERVE_ENV: &str = "DISKBENCH_VOLUME_SERVE";
const BACKING_ENV: &str = "DISKBENCH_VOLUME_BACKING";
const SIZE_ENV: &str = "DISKBENCH_VOLUME_SIZE_BYTES";
/// The volume's folders are named with this prefix and the run's pid.
const DIR_PREFIX: &str = ".diskbench-volume-";

/// The server mount's source: the server's pid and the run's, whose death makes the
/// volume stale.
pub(crate) fn source_for(server_pid: u32, run_pid: u32) -> String {
    format!("{SUBTYPE}:{server_pid}:{run_pid}")
}

/// Why a volume could not be made or used.
#[derive(Debug, thiserror::Error)]
pub enum VolumeError {
    #[error(transparent)]
    Model(#[from] ModelError),
    #[error(
        "{tool} is needed to make the emulated volume and was not found ({source}); install {package}"
    )]
    ToolMissing {
        tool: &'static str,
        package: &'static str,
        source: io::Error,
    },
    #[error("{what}: {source}")]
    Io { what: String, source: io::Error },
    #[error("{what} failed: {detail}")]
    Failed { what: String, detail: String },
}

fn io_err(what: impl Into<String>) -> impl FnOnce(io::Error) -> VolumeError {
    let what = what.into();
    move |source| VolumeError::Io { what, source }
}

/// If this process was started as a volume's server, serve it and return its outcome (the
/// caller exits with it); None otherwise. Call it first thing in `main`.
pub fn serve_if_asked() -> Option<io::Result<()>> {
    let mountpoint = std::env::var_os(SERVE_ENV)?;
    let backing = std::env::var_os(BACKING_ENV);
    let size = std::env::var(SIZE_ENV).ok().and_then(|s| s.parse().ok());
    let (Some(backing), Some(size_bytes)) = (backing, size) else {
        return Some(Err(io::Error::other(format!(
            "{SERVE_ENV} is set without {BACKING_ENV} and {SIZE_ENV}"
        ))));
    };
    // SAFETY: getppid has no preconditions.
    let run_pid = unsafe { libc::getppid() } as u32;
    Some(server::serve(
        Path::new(&mountpoint),
        Path::new(&backing),
        size_bytes,
        run_pid,
    ))
}

/// A mounted emulated volume. Dropping it unmounts everything and removes its files.
pub struct Volume {
    dir: PathBuf,
    loop_device: Option<PathBuf>,
    fs_mounted: bool,
    server: Child,
    control: Option<ChildStdin>,
    replies: BufReader<ChildStdout>,
    realtime: bool,
    model: VolumeModel,
}

impl Volume {
    /// Make a volume of `size_bytes` in a private folder under `parent` (the backing file
    /// lives there, sparse: it takes the space the step writes), shaped by `model`. Needs
    /// root, /dev/fuse, loop devices, `losetup` and `mkfs.ext4`.
    pub fn create(
        parent: &Path,
        size_bytes: u64,
        model: VolumeModel,
    ) -> Result<Volume, VolumeError> {
        model.check()?;
        for (tool, package) in [("losetup", "util-linux"), ("mkfs.ext4", "e2fsprogs")] {
            Command::new(tool)
                .arg("--version")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .map_err(|source| VolumeError::ToolMissing {
                    tool,
                    package,
                    source,
                })?;
        }
        let exe = std::env::current_exe().map_err(io_err("finding this program's executable"))?;
        let dir = unique_dir(parent)?;
        let (server_dir, fs_dir, backing) =
            (dir.join("server"), dir.join("fs"), dir.join("backing.img"));
        let made = (|| -> Result<Volume, VolumeError> {
            for d in [&server_dir, &fs_dir] {
                std::fs::DirBuilder::new()
                    .mode(0o700)
                    .create(d)
                    .map_err(io_err(format!("creating {}", d.display())))?;
            }
            let file = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&backing)
                .map_err(io_err(format!("creating {}", backing.display())))?;
            file.set_len(size_bytes)
                .map_err(io_err(format!("sizing {}", backing.display())))?;
            drop(file);
            let mut command = Command::new(exe);
            command
                .env(SERVE_ENV, &server_dir)
                .env(BACKING_ENV, &backing)
                .env(SIZE_ENV, size_bytes.to_string())
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped());
            let parent_pid = std::process::id();
            // SAFETY: prctl and getppid are async-signal-safe; nothing is allocated.
            unsafe {
                command.pre_exec(move || {
                    // The server dies with the thread that started it, so a killed run
                    // cannot leave it serving (or not serving) a mount.
                    if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                        return Err(io::Error::last_os_error());
                    }
                    if libc::getppid() as u32 != parent_pid {
                        return Err(io::Error::other("the run ended before its volume started"));
                    }
                    Ok(())
                })
            };
            let mut server = command
                .spawn()
                .map_err(io_err("starting the volume's server"))?;
            let control = server.stdin.take();
            let replies = server.stdout.take().map(BufReader::new);
            let (Some(control), Some(replies)) = (control, replies) else {
                let _ = server.kill();
                return Err(VolumeError::Failed {
                    what: "starting the volume's server".into(),
                    detail: "no pipes".into(),
                });
            };
            let mut volume = Volume {
                dir: dir.clone(),
                loop_device: None,
                fs_mounted: false,
                server,
                control: Some(control),
                replies,
                realtime: false,
                model: VolumeModel::floor(),
            };
            // Made at the floor: laying out the filesystem is not part of what is timed.
            volume.send(&VolumeModel::floor().to_line())?;
            let ready = volume.reply("starting the volume's server")?;
            volume.realtime = ready == "ready 1";
            let disk = server_dir.join(server::DISK_NAME);
            let device = run(
                Command::new("losetup")
                    .args([
                        "--find",
                        "--show",
                        "--direct-io=on",
                        "--sector-size",
                        "4096",
                    ])
                    .arg(&disk),
                "losetup",
            )?;
            volume.loop_device = Some(PathBuf::from(device.trim()));
            let device = volume.loop_device.clone().unwrap_or_default();
            run(
                Command::new("mkfs.ext4")
                    .args([
                        "-q",
                        "-F",
                        "-E",
                        "nodiscard,lazy_itable_init=0,lazy_journal_init=0",
                    ])
                    .arg(&device),
                "mkfs.ext4",
            )?;
            mount_ext4(&device, &fs_dir)?;
            volume.fs_mounted = true;
            volume.set_model(model)?;
            Ok(volume)
        })();
        if made.is_err() {
            // What was made is released by the Volume's drop, or here if none was built.
            let _ = std::fs::remove_file(&backing);
            let _ = std::fs::remove_dir(&server_dir);
            let _ = std::fs::remove_dir(&fs_dir);
            let _ = std::fs::remove_dir(&dir);
        }
        made
    }

    /// The volume's filesystem: put the step's folders here.
    pub fn path(&self) -> PathBuf {
        self.dir.join("fs")
    }

    /// The loop device under the filesystem (its I/O counters are in /sys/block).
    pub fn device(&self) -> Option<&Path> {
        self.loop_device.as_deref()
    }

    /// Whether the server runs with real-time priority (its replies then go out on time on
    /// a busy machine).
    pub fn realtime(&self) -> bool {
        self.realtime
    }

    /// The model in force.
    pub fn model(&self) -> VolumeModel {
        self.model
    }

    /// Shape the requests from now on by `model`.
    pub fn set_model(&mut self, model: VolumeModel) -> Result<(), VolumeError> {
        model.check()?;
        self.send(&model.to_line())?;
        let answer = self.reply("setting the volume's model")?;
        if answer != "ok" {
            return Err(VolumeError::Failed {
                what: "setting the volume's model".into(),
                detail: answer,
            });
        }
        self.model = model;
        Ok(())
    }

    /// What the server counted since it started.
    pub fn stats(&mut self) -> Result<VolumeStats, VolumeError> {
        self.send("stats")?;
        let line = self.reply("reading the volume's counters")?;
        VolumeStats::from_line(&line).ok_or(VolumeError::Failed {
            what: "reading the volume's counters".into(),
            detail: line,
        })
    }

    fn send(&mut self, line: &str) -> Result<(), VolumeError> {
        let control = self.control.as_mut().ok_or(VolumeError::Failed {
            what: "talking to the volume's server".into(),
            detail: "closed".into(),
        })?;
        writeln!(control, "{line}")
            .and_then(|()| control.flush())
            .map_err(io_err("talking to the volume's server"))
    }

    fn reply(&mut self, what: &str) -> Result<String, VolumeError> {
        let mut line = String::new();
        let n = self
            .replies
            .read_line(&mut line)
            .map_err(io_err(what.to_string()))?;
        if n == 0 {
            let mut detail = String::new();
            if let Some(mut e) = self.server.stderr.take() {
                let _ = e.read_to_string(&mut detail);
            }
            return Err(VolumeError::Failed {
                what: what.into(),
                detail: format!("the server ended: {}", detail.trim()),
            });
        }
        Ok(line.trim_end().to_string())
    }

    /// Unmount, detach and remove everything; Err says what could not be released (a
    /// process still using the filesystem keeps it until it exits; it was detached).
    pub fn close(mut self) -> Result<VolumeStats, VolumeError> {
        let stats = self.stats();
        self.release()?;
        stats
    }

    fn release(&mut self) -> Result<(), VolumeError> {
        let mut problems = Vec::new();
        if self.fs_mounted {
            if let Err(e) = unmount(&self.path()) {
                problems.push(format!("unmounting {}: {e}", self.path().display()));
            }
            self.fs_mounted = false;
        }
        if let Some(device) = self.loop_device.take()
            && let Err(e) = run(Command::new("losetup").arg("-d").arg(&device), "losetup -d")
        {
            problems.push(e.to_string());
        }
        // End of input tells the server to unmount its mount and exit.
        self.control = None;
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            match self.server.try_wait() {
                Ok(Some(_)) | Err(_) => break,
                Ok(None) if Instant::now() > deadline => {
                    let _ = self.server.kill();
                    let _ = self.server.wait();
                    break;
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(10)),
            }
        }
        // A server killed before it unmounted leaves a dead mount: release it lazily.
        let _ = unmount(&self.dir.join("server"));
        let _ = std::fs::remove_file(self.dir.join("backing.img"));
        for d in ["server", "fs", ""] {
            let _ = std::fs::remove_dir(self.dir.join(d));
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(VolumeError::Failed {
                what: "releasing the emulated volume".into(),
                detail: problems.join("; "),
            })
        }
    }
}

impl Drop for Volume {
    fn drop(&mut self) {
        let _ = self.release();
    }
}

/// A new private folder under `parent`, named for this process.
fn unique_dir(parent: &Path) -> Result<PathBuf, VolumeError> {
    for n in 0..1000 {
        let dir = parent.join(format!("{DIR_PREFIX}{}-{n}", std::process::id()));
        match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(io_err(format!("creating a folder in {}", parent.display()))(e)),
        }
    }
    Err(VolumeError::Failed {
        what: format!("creating a folder in {}", parent.display()),
        detail: "1000 names taken".into(),
    })
}

fn run(command: &mut Command, what: &str) -> Result<String, VolumeError> {
    let out = command
        .stdin(Stdio::null())
        .output()
        .map_err(io_err(what.to_string()))?;
    if !out.status.success() {
        return Err(VolumeError::Failed {
            what: what.into(),
            detail: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

fn cstring(p: &Path) -> Result<CString, VolumeError> {
    CString::new(p.as_os_str().as_bytes()).map_err(|_| VolumeError::Failed {
        what: format!("{}", p.display()),
        detail: "a NUL byte in the path".into(),
    })
}

fn mount_ext4(device: &Path, at: &Path) -> Result<(), VolumeError> {
    let (dev, dir) = (cstring(device)?, cstring(at)?);
    // SAFETY: NUL-terminated strings that outlive the call; no data argument.
    let rc = unsafe {
        libc::mount(
            dev.as_ptr(),
            dir.as_ptr(),
            c"ext4".as_ptr(),
            libc::MS_NOATIME,
            std::ptr::null(),
        )
    };
    if rc != 0 {
        return Err(io_err(format!(
            "mounting ext4 from {} at {}",
            device.display(),
            at.display()
        ))(io::Error::last_os_error()));
    }
    Ok(())
}

/// Unmount `at`; lazily when it is busy (a process still inside keeps it until it leaves).
fn unmount(at: &Path) -> io::Result<()> {
    let c = CString::new(at.as_os_str().as_bytes()).map_err(io::Error::other)?;
    // SAFETY: `c` is NUL-terminated.
    if unsafe { libc::umount2(c.as_ptr(), 0) } == 0 {
        return Ok(());
    }
    let first = io::Error::last_os_error();
    if first.raw_os_error() == Some(libc::EINVAL) {
        return Err(first); // not a mount point
    }
    // SAFETY: as above.
    if unsafe { libc::umount2(c.as_ptr(), libc::MNT_DETACH) } == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// One mount line of /proc/self/mountinfo: mount point, filesystem type, source.
fn mounts(mountinfo: &str) -> Vec<(PathBuf, String, String)> {
    mountinfo
        .lines()
        .filter_map(|line| {
            let (left, right) = line.split_once(" - ")?;
            let mut r = right.split(' ');
            let (fstype, source) = (r.next()?, r.next()?);
            let point = left.split(' ').nth(4)?;
            Some((
                PathBuf::from(crate::mount_table::unescape(point)),
                fstype.to_string(),
                crate::mount_table::unescape(source),
            ))
        })
        .collect()
}

/// The volumes a killed run left: server mounts whose process is gone. Returns the folders
/// released. The filesystem on each (and anything still using it) gets I/O errors from the
/// moment its server died; this unmounts it lazily, detaches its loop device and removes its
/// files.
pub fn sweep_stale() -> Vec<PathBuf> {
    let Ok(info) = std::fs::read_to_string("/proc/self/mountinfo") else {
        return Vec::new();
    };
    let all = mounts(&info);
    let mut released = Vec::new();
    for (point, fstype, source) in &all {
        // mount(2) gives the type "fuse" (a subtype needs a helper to set it): the source
        // names the volume's server.
        if !(fstype == "fuse" || fstype == &format!("fuse.{SUBTYPE}")) {
            continue;
        }
        let Some((server_pid, run_pid)) = source
            .strip_prefix(&format!("{SUBTYPE}:"))
            .and_then(|p| p.split_once(':'))
            .and_then(|(s, r)| Some((s.parse::<u32>().ok()?, r.parse::<u32>().ok()?)))
        else {
            continue;
        };
        if Path::new(&format!("/proc/{run_pid}")).exists() {
            continue;
        }
        end_server(server_pid, point);
        let disk = point.join(server::DISK_NAME);
        for device in loop_devices_over(&disk) {
            for (fs_point, _, fs_source) in &all {
                if Path::new(fs_source) == device {
                    let _ = unmount(fs_point);
                }
            }
            let _ = Command::new("losetup")
                .arg("-d")
                .arg(&device)
                .stderr(Stdio::null())
                .status();
        }
        let _ = unmount(point);
        if let Some(dir) = point.parent()
            && dir
                .file_name()
                .is_some_and(|n| n.as_bytes().starts_with(DIR_PREFIX.as_bytes()))
        {
            let _ = std::fs::remove_file(dir.join("backing.img"));
            for d in ["server", "fs", ""] {
                let _ = std::fs::remove_dir(dir.join(d));
            }
            released.push(dir.to_path_buf());
        }
    }
    released
}

/// Kill a dead run's server if it still runs (the kernel sends it SIGKILL when the run
/// dies, but its exit can lag), making sure the pid is that server's: its environment names
/// this mount point. Waits up to 2 s for it to go.
fn end_server(pid: u32, mountpoint: &Path) {
    let mut expected = format!("{SERVE_ENV}=").into_bytes();
    expected.extend_from_slice(mountpoint.as_os_str().as_bytes());
    let ours = std::fs::read(format!("/proc/{pid}/environ"))
        .is_ok_and(|env| env.split(|&b| b == 0).any(|v| v == expected.as_slice()));
    if !ours {
        return;
    }
    // SAFETY: kill has no memory-safety preconditions; the pid was checked above.
    unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
    let deadline = Instant::now() + Duration::from_secs(2);
    while Path::new(&format!("/proc/{pid}")).exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Loop devices whose backing file is `file`.
fn loop_devices_over(file: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir("/sys/block") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter(|e| e.file_name().as_bytes().starts_with(b"loop"))
        .filter(|e| {
            std::fs::read_to_string(e.path().join("loop/backing_file"))
                .is_ok_and(|b| Path::new(b.trim_end()) == file)
        })
        .map(|e| Path::new("/dev").join(e.file_name()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mountinfo_lines_give_point_type_and_source() {
        let info = "\
36 25 0:32 / /work/.diskbench-volume-7-0/server rw - fuse diskbench-volume:8:7 rw
37 25 7:0 / /work/a\\040b/fs rw,noatime - ext4 /dev/loop0 rw
";
        let m = mounts(info);
        assert_eq!(m[0].1, "fuse");
        assert_eq!(m[0].2, "diskbench-volume:8:7");
        assert_eq!(m[1].0, PathBuf::from("/work/a b/fs"));
        assert_eq!(m[1].2, "/dev/loop0");
    }
}

//! The limits of a cgroup the tool did not make (a docker daemon's own cgroup), kept on disk
//! before the tool caps that cgroup in place, so that they come back even after SIGKILL.
//!
//! A cap written into someone else's cgroup outlives the run that wrote it: the kernel keeps
//! it until it is written over. Keeping the old limits in memory restores them after an
//! error, Ctrl-C or a panic, but not after SIGKILL, which left the host's Docker engine
//! throttled for every later build. So before the first cap is written, the old lines are
//! written to a state file (temporary name, fsync, rename, fsync of the folder) in the
//! tool's run folder ([`RUN_DIR`]); the cap follows only once that file is durable. A normal
//! end writes the lines back and deletes the file; the sweep at the start of every `run`,
//! `steps` and `--what-if` run ([`sweep`]) writes back what a dead run's file holds.
//!
//! The state file is data the next run acts on as root, so it is checked before anything is
//! written: the run folder must be a real folder (not a symlink) that only this user can
//! write; the file is opened with `O_NOFOLLOW` and must be a small regular file; the cgroup
//! must be a plain path under the hierarchy's root (no `..`, no symlink on the way); only the
//! throttle files of the hierarchy's version are written, and only lines of the form the
//! kernel itself prints. Anything else is refused with the file's name, and nothing is written.
//!
//! The run folder is per mount namespace (a container with its own `/run` has its own): a
//! run in another container does not see the file, the next run in the same one does.

use std::ffi::CString;
use std::fs;
use std::io::{self, Read as _, Write as _};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::kernel_files::{DevNum, V1_FILES, Version, write_line};

/// Where the state files go: root's run-time folder (a tmpfs on most systems, which is right:
/// a reboot resets every cgroup, and the saved limits with them).
pub const RUN_DIR: &str = "/run/cargo-diskbench";
/// Tests point the run folder elsewhere, so a test's killed run is swept by that test alone.
const RUN_DIR_ENV: &str = "DISKBENCH_TEST_RUN_DIR";
/// Tests stop the run (SIGSTOP) at a named point of capping in place, to SIGKILL it there:
/// `limits-recorded` (state file durable, nothing capped) or `limits-capped` (cap written).
const STOP_AT_ENV: &str = "DISKBENCH_TEST_STOP_AT";

const SCHEMA: &str = "diskbench.saved-limits/1";
/// `limits-<pid>-<id>.json`: the pid tells the sweep whose run it was.
const PREFIX: &str = "limits-";
/// A state file holds a few lines; anything bigger is not one.
const MAX_STATE_BYTES: u64 = 64 << 10;

/// The run folder this process uses.
pub(crate) fn run_dir() -> PathBuf {
    crate::faults::asked(RUN_DIR_ENV)
        .filter(|v| !v.is_empty())
        .map_or_else(|| PathBuf::from(RUN_DIR), PathBuf::from)
}

/// Stop here if a test asked to (see [`STOP_AT_ENV`]).
pub(crate) fn test_stop_point(at: &str) {
    if crate::faults::asked(STOP_AT_ENV).is_some_and(|v| v == at) {
        crate::session::said::tell(crate::session::said::Said::Status(format!(
            "stopping at {at} ({STOP_AT_ENV})"
        )));
        // SAFETY: raise has no memory effects; the process stops until SIGCONT or SIGKILL.
        unsafe { libc::raise(libc::SIGSTOP) };
    }
}

/// One cgroup's limits as they were before it was capped in place, to write back exactly.
#[derive(Debug)]
pub(crate) struct SavedLimits {
    /// The cgroup as `/proc/<pid>/cgroup` names it, e.g. `/system.slice/docker.service`.
    pub cgroup: String,
    pub dir: PathBuf,
    /// (throttle file, the line to write back)
    pub lines: Vec<(PathBuf, String)>,
    /// The state file that holds them, once written.
    state: Option<(PathBuf, String)>,
}

/// The state file's content.
#[derive(Debug, Serialize, Deserialize)]
struct StateFile {
    schema: String,
    pid: u32,
    version: String,
    cgroup: String,
    /// (file name in the cgroup's folder, the line to write back)
    lines: Vec<(String, String)>,
}

impl SavedLimits {
    pub(crate) fn new(cgroup: &str, dir: PathBuf) -> SavedLimits {
        SavedLimits {
            cgroup: cgroup.to_string(),
            dir,
            lines: Vec::new(),
            state: None,
        }
    }

    /// Write the lines to a state file in `run_dir`, durably, before anything is capped.
    pub(crate) fn record(&mut self, run_dir: &Path, version: Version) -> io::Result<()> {
        let state = StateFile {
            schema: SCHEMA.into(),
            pid: std::process::id(),
            version: version_name(version).into(),
            cgroup: self.cgroup.clone(),
            lines: self
                .lines
                .iter()
                .map(|(file, line)| {
                    let name = file
                        .file_name()
                        .map(|n| n.to_string_lossy().into_owned())
                        .unwrap_or_default();
                    (name, line.clone())
                })
                .collect(),
        };
        let text = serde_json::to_string_pretty(&state).map_err(io::Error::other)?;
        // Our own pid and a random id: nothing from data is in the name.
        let name = format!(
            "{PREFIX}{}-{}.json",
            std::process::id(),
            record::random::new_id()
        );
        let written = open_run_dir(run_dir, true).and_then(|folder| {
            let tmp = format!(".{name}.tmp");
            let result = write_durably(&folder, &tmp, &name, &text);
            if result.is_err() {
                let _ = unlinkat(&folder, &tmp);
            }
            result
        });
        if let Err(e) = written {
            // Not NotFound, whatever the cause: to the caller that means "no io controller".
            return Err(io::Error::other(format!(
                "cannot keep the limits of the cgroup {} in {} before capping it: {e}; it was \
                 not capped",
                self.cgroup,
                run_dir.display()
            )));
        }
        self.state = Some((run_dir.to_path_buf(), name));
        Ok(())
    }

    /// The lines are back: the state file goes. Err says why it could not.
    pub(crate) fn forget(&mut self) -> Result<(), String> {
        let Some((run_dir, name)) = self.state.take() else {
            return Ok(());
        };
        let folder = open_run_dir(&run_dir, false).map_err(|e| e.to_string())?;
        unlinkat(&folder, &name)
            .and_then(|_| fs::File::from(folder).sync_all())
            .map_err(|e| {
                format!(
                    "could not remove the state file {}: {e}",
                    run_dir.join(&name).display()
                )
            })
    }
}

/// `text` as `name` in `folder`: a new temporary file (never through a symlink, never over
/// an existing file), fsynced, renamed into place, the folder fsynced.
fn write_durably(folder: &OwnedFd, tmp: &str, name: &str, text: &str) -> io::Result<()> {
    let fd = openat(
        folder,
        tmp,
        libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW,
    )?;
    let mut f = fs::File::from(fd);
    f.write_all(text.as_bytes())?;
    f.sync_all()?;
    renameat(folder, tmp, name)?;
    fs::File::from(folder.try_clone()?).sync_all()
}

fn version_name(v: Version) -> &'static str {
    match v {
        Version::V1 => "v1",
        Version::V2 => "v2",
    }
}

/// The block-I/O hierarchy a sweep writes back into: its mount point and version.
#[derive(Clone, Copy, Debug)]
pub struct HierarchyRoot<'a> {
    pub root: &'a Path,
    pub version: Version,
}

/// What [`sweep`] did with the state files of dead runs.
#[derive(Debug, Default)]
pub struct SavedSweep {
    /// One sentence per cgroup whose limits were written back (or that is gone).
    pub restored: Vec<String>,
    /// One sentence per state file refused (corrupt, hostile, not a regular file).
    pub refused: Vec<String>,
    /// State files of the live run, left alone.
    pub kept: Vec<String>,
}

/// Write back what the state files of dead runs in `run_dir` hold: every one not named for a
/// pid for which `is_live` holds (as [`super::sweep_stale`] judges cgroups). A file that
/// fails a check is refused and left in place for a person to look at; nothing of it is
/// written.
pub(crate) fn sweep(
    hierarchy: &HierarchyRoot<'_>,
    run_dir: &Path,
    is_live: impl Fn(u32) -> bool,
) -> SavedSweep {
    let mut out = SavedSweep::default();
    let folder = match open_run_dir(run_dir, false) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return out,
        Err(e) => {
            out.refused.push(e.to_string());
            return out;
        }
    };
    let Ok(entries) = fs::read_dir(run_dir) else {
        return out;
    };
    let mut names: Vec<String> = entries
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    for name in names {
        // A temporary file of a run killed while writing: nothing was capped after it.
        if let Some(tmp) = name.strip_prefix('.').and_then(|n| n.strip_suffix(".tmp")) {
            if pid_of(tmp).is_some_and(|pid| !is_live(pid)) {
                let _ = unlinkat(&folder, &name);
            }
            continue;
        }
        let Some(pid) = pid_of(&name) else {
            continue;
        };
        if is_live(pid) {
            out.kept.push(name);
            continue;
        }
        let path = run_dir.join(&name);
        match restore_one(hierarchy, &folder, &name, pid) {
            Ok(said) => {
                let _ = unlinkat(&folder, &name);
                out.restored.push(said);
            }
            Err(why) => out.refused.push(format!(
                "refused the saved limits {}: {why}; nothing was written from it (check the \
                 cgroup's throttle limits yourself, then remove the file)",
                path.display()
            )),
        }
    }
    let _ = fs::File::from(folder).sync_all();
    out
}

/// The pid a state file is named for (`limits-<pid>-<id>.json`).
fn pid_of(name: &str) -> Option<u32> {
    name.strip_prefix(PREFIX)?
        .strip_suffix(".json")?
        .split('-')
        .next()?
        .parse()
        .ok()
}

/// Check one state file and write its lines back; Ok says what was done.
fn restore_one(
    hierarchy: &HierarchyRoot<'_>,
    folder: &OwnedFd,
    name: &str,
    pid: u32,
) -> Result<String, String> {
    let text = read_state(folder, name)?;
    let state: StateFile =
        serde_json::from_str(&text).map_err(|e| format!("not a state file ({e})"))?;
    if state.schema != SCHEMA {
        return Err(format!("unknown schema {:?}", state.schema));
    }
    if state.pid != pid {
        return Err(format!(
            "it says pid {} but is named for pid {pid}",
            state.pid
        ));
    }
    if state.version != version_name(hierarchy.version) {
        return Err(format!(
            "it was written for cgroup {} but this machine's block-I/O hierarchy is {}",
            state.version,
            version_name(hierarchy.version)
        ));
    }
    let dir = checked_cgroup_dir(hierarchy, &state.cgroup)?;
    let mut lines = Vec::new();
    for (file, line) in &state.lines {
        check_line(hierarchy.version, file, line)?;
        lines.push((dir.join(file), line.clone()));
    }
    if !dir.exists() {
        return Ok(format!(
            "the cgroup {} a killed run (pid {pid}) had capped in place is gone: nothing to \
             restore",
            state.cgroup
        ));
    }
    let mut failed = Vec::new();
    for (file, line) in &lines {
        if let Err(e) = write_line(file, line) {
            failed.push(e.to_string());
        }
    }
    if !failed.is_empty() {
        return Err(format!("could not write it back: {}", failed.join("; ")));
    }
    let said: Vec<String> = state
        .lines
        .iter()
        .map(|(f, l)| format!("{f} \"{l}\""))
        .collect();
    Ok(format!(
        "restored the limits of the cgroup {} that a killed run (pid {pid}) had capped in \
         place: {}",
        state.cgroup,
        said.join(", ")
    ))
}

/// The cgroup's folder under the hierarchy's root, if `cgroup` is a plain path there: it
/// starts with `/`, has only normal components, is not the root itself, and no component on
/// the way is a symlink.
fn checked_cgroup_dir(hierarchy: &HierarchyRoot<'_>, cgroup: &str) -> Result<PathBuf, String> {
    let rel = cgroup
        .strip_prefix('/')
        .ok_or_else(|| format!("the cgroup {cgroup:?} is not a path from the root"))?;
    let plain = !rel.is_empty()
        && cgroup.len() < 4096
        && !cgroup.contains(['\0', '\n'])
        && Path::new(rel)
            .components()
            .all(|c| matches!(c, Component::Normal(_)))
        && !rel
            .split('/')
            .any(|c| c.is_empty() || c == "." || c == "..");
    if !plain {
        return Err(format!(
            "the cgroup {cgroup:?} is not a plain path under {}",
            hierarchy.root.display()
        ));
    }
    let dir = hierarchy.root.join(rel);
    let mut at = hierarchy.root.to_path_buf();
    for c in rel.split('/') {
        at.push(c);
        match fs::symlink_metadata(&at) {
            Ok(m) if m.file_type().is_symlink() => {
                return Err(format!("{} is a symlink; not followed", at.display()));
            }
            Ok(m) if !m.is_dir() => {
                return Err(format!("{} is not a cgroup folder", at.display()));
            }
            Ok(_) => {}
            // Gone on the way (the daemon's service stopped): nothing to restore.
            Err(_) => break,
        }
    }
    Ok(dir)
}

/// `file` must be a throttle file of `version` and `line` a rule as the kernel prints it.
fn check_line(version: Version, file: &str, line: &str) -> Result<(), String> {
    let known = match version {
        Version::V1 => V1_FILES.iter().any(|(f, _)| *f == file),
        Version::V2 => file == "io.max",
    };
    if !known {
        return Err(format!(
            "{file:?} is not a throttle file of cgroup {} (only {})",
            version_name(version),
            match version {
                Version::V1 => "blkio.throttle.*_device",
                Version::V2 => "io.max",
            }
        ));
    }
    let bad = || format!("the line {line:?} for {file:?} is not a throttle rule");
    let mut words = line.split_whitespace();
    words.next().and_then(DevNum::parse).ok_or_else(bad)?;
    let rest: Vec<&str> = words.collect();
    let ok = match version {
        Version::V1 => rest.len() == 1 && rest[0].parse::<u64>().is_ok(),
        Version::V2 => {
            !rest.is_empty()
                && rest.iter().all(|kv| {
                    kv.split_once('=').is_some_and(|(k, v)| {
                        ["riops", "wiops", "rbps", "wbps"].contains(&k)
                            && (v == "max" || v.parse::<u64>().is_ok())
                    })
                })
        }
    };
    if !ok {
        return Err(bad());
    }
    Ok(())
}

/// The run folder, opened without following a symlink, and refused unless it is a folder that
/// only this user can write (so nobody else can put a state file in it or swap one).
fn open_run_dir(path: &Path, create: bool) -> io::Result<OwnedFd> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt};
    if create {
        match fs::DirBuilder::new().mode(0o700).create(path) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => {
                return Err(io::Error::new(
                    e.kind(),
                    format!("cannot create the run folder {}: {e}", path.display()),
                ));
            }
        }
    }
    let c = cstr(path.as_os_str().as_bytes())?;
    // SAFETY: a NUL-terminated path; the descriptor returned is owned below.
    let fd = unsafe {
        libc::open(
            c.as_ptr(),
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        let e = io::Error::last_os_error();
        let why =
            if e.raw_os_error() == Some(libc::ELOOP) || e.raw_os_error() == Some(libc::ENOTDIR) {
                "it is a symlink or not a folder; not followed".to_string()
            } else {
                e.to_string()
            };
        return Err(io::Error::new(
            e.kind(),
            format!("cannot open the run folder {}: {why}", path.display()),
        ));
    }
    // SAFETY: fd is a descriptor just opened and owned by nobody else.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let meta = fs::File::from(fd.try_clone()?).metadata()?;
    // SAFETY: geteuid has no preconditions and no side effects.
    let me = unsafe { libc::geteuid() };
    if meta.uid() != me || meta.mode() & 0o022 != 0 {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "refused the run folder {}: owned by uid {} with mode {:o}, but it must be \
                 this user's (uid {me}) and writable by it alone; remove it",
                path.display(),
                meta.uid(),
                meta.mode() & 0o7777
            ),
        ));
    }
    Ok(fd)
}

/// Read a state file in the run folder: not through a symlink, a regular file, small.
fn read_state(folder: &OwnedFd, name: &str) -> Result<String, String> {
    let fd = openat(
        folder,
        name,
        libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK,
    )
    .map_err(|e| {
        if e.raw_os_error() == Some(libc::ELOOP) {
            "it is a symlink; not followed".to_string()
        } else {
            format!("cannot open it: {e}")
        }
    })?;
    let f = fs::File::from(fd);
    let meta = f.metadata().map_err(|e| e.to_string())?;
    if !meta.is_file() {
        return Err("not a regular file".into());
    }
    if meta.len() > MAX_STATE_BYTES {
        return Err(format!(
            "{} bytes, more than a state file's {MAX_STATE_BYTES}",
            meta.len()
        ));
    }
    let mut text = String::new();
    f.take(MAX_STATE_BYTES)
        .read_to_string(&mut text)
        .map_err(|e| format!("cannot read it: {e}"))?;
    Ok(text)
}

fn cstr(bytes: &[u8]) -> io::Result<CString> {
    CString::new(bytes).map_err(|_| io::Error::other("a path with a NUL byte"))
}

fn openat(folder: &OwnedFd, name: &str, flags: i32) -> io::Result<OwnedFd> {
    let c = cstr(name.as_bytes())?;
    // SAFETY: a NUL-terminated name relative to a directory descriptor we own.
    let fd = unsafe {
        libc::openat(
            folder.as_raw_fd(),
            c.as_ptr(),
            flags | libc::O_CLOEXEC,
            0o600,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fd is a descriptor just opened and owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn renameat(folder: &OwnedFd, from: &str, to: &str) -> io::Result<()> {
    let (a, b) = (cstr(from.as_bytes())?, cstr(to.as_bytes())?);
    // SAFETY: NUL-terminated names relative to a directory descriptor we own.
    let rc = unsafe {
        libc::renameat(
            folder.as_raw_fd(),
            a.as_ptr(),
            folder.as_raw_fd(),
            b.as_ptr(),
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

fn unlinkat(folder: &OwnedFd, name: &str) -> io::Result<()> {
    let c = cstr(name.as_bytes())?;
    // SAFETY: a NUL-terminated name relative to a directory descriptor we own.
    if unsafe { libc::unlinkat(folder.as_raw_fd(), c.as_ptr(), 0) } == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

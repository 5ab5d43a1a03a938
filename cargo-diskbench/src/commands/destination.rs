//! Every place a command will write, checked before the first test file is made.
//!
//! A destination found broken only after a five-minute suite costs the whole run, and used to
//! leave a record behind a non-zero exit. Each check here looks without writing anything
//! outside the named place: type checks on what exists, `access(2)` on the folder a new file
//! or folder will be made in (it sees read-only mounts as well as permissions). Errors are
//! usage errors (exit 2) that name the option.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use anyhow::Result;
use record::error::usage;

/// Whether this process may create entries in `dir` (write and search permission, file
/// system not read-only).
fn writable_dir(dir: &Path) -> bool {
    let Ok(c) = CString::new(dir.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: a valid NUL-terminated path; access only reads it.
    unsafe { libc::access(c.as_ptr(), libc::W_OK | libc::X_OK) == 0 }
}

/// The closest folder of `path` that exists (`.` for a bare relative name).
fn existing_ancestor(path: &Path) -> PathBuf {
    let mut p = path.to_path_buf();
    loop {
        if p.as_os_str().is_empty() {
            return PathBuf::from(".");
        }
        if std::fs::symlink_metadata(&p).is_ok() {
            return p;
        }
        if !p.pop() {
            return PathBuf::from(".");
        }
    }
}

/// What kind of special file `m` is, when writing to it could block or misbehave: a FIFO
/// (opening it for writing waits for a reader, and a half-written record cannot be taken
/// back), a socket or a block device. Character devices (/dev/null, a terminal) are written
/// in place.
fn blocking_kind(m: &std::fs::Metadata) -> Option<&'static str> {
    use std::os::unix::fs::FileTypeExt as _;
    let t = m.file_type();
    if t.is_fifo() {
        Some("a FIFO (named pipe)")
    } else if t.is_socket() {
        Some("a socket")
    } else if t.is_block_device() {
        Some("a block device")
    } else {
        None
    }
}

/// Open $GITHUB_STEP_SUMMARY (`path`) for append without ever blocking: O_NONBLOCK, so a
/// FIFO put there after the up-front check fails at once (ENXIO without a reader) instead of
/// waiting with signals unanswered; on a regular file the flag changes nothing.
pub fn open_step_summary(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt as _;
    let f = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)?;
    let m = f.metadata()?;
    if let Some(kind) = blocking_kind(&m) {
        return Err(std::io::Error::other(format!(
            "is {kind}, not a regular file"
        )));
    }
    Ok(f)
}

/// A folder records are written into (created if missing): it must be, or become, a folder
/// this process can add files to.
pub fn folder(option: &str, path: &Path) -> Result<()> {
    let shown = path.display();
    match std::fs::metadata(path) {
        Ok(m) if !m.is_dir() => Err(usage(format!(
            "{option} {shown}: exists and is not a folder; give a folder"
        ))),
        Ok(_) if !writable_dir(path) => Err(usage(format!(
            "{option} {shown}: cannot add files to this folder (permissions or a read-only mount)"
        ))),
        Ok(_) => Ok(()),
        Err(_) => {
            let base = existing_ancestor(path);
            if !base.is_dir() {
                return Err(usage(format!(
                    "{option} {shown}: {} is not a folder, so the folder cannot be made",
                    base.display()
                )));
            }
            if !writable_dir(&base) {
                return Err(usage(format!(
                    "{option} {shown}: cannot create it in {} (permissions or a read-only mount)",
                    base.display()
                )));
            }
            Ok(())
        }
    }
}

/// A file that will be written (replaced if it exists): not a folder, its folder exists and is
/// writable; an existing file must be writable.
pub fn file(option: &str, path: &Path) -> Result<()> {
    let shown = path.display();
    if let Ok(m) = std::fs::metadata(path) {
        if m.is_dir() {
            return Err(usage(format!(
                "{option} {shown}: is a folder; give a file name"
            )));
        }
        let c = CString::new(path.as_os_str().as_bytes())
            .map_err(|_| usage(format!("{option}: the path holds a NUL byte")))?;
        // SAFETY: a valid NUL-terminated path; access only reads it.
        if unsafe { libc::access(c.as_ptr(), libc::W_OK) } != 0 {
            return Err(usage(format!(
                "{option} {shown}: not writable (permissions or a read-only mount)"
            )));
        }
        if let Some(kind) = blocking_kind(&m) {
            return Err(usage(format!(
                "{option} {shown}: is {kind}; writing there could wait for a reader forever \
                 and leave half a file; give a regular file{}",
                if option == "--json" {
                    " (or `-` for stdout)"
                } else {
                    ""
                }
            )));
        }
        if m.is_file() {
            // The file is replaced through a new file in its folder.
        } else {
            return Ok(()); // /dev/null, a terminal: written in place
        }
    }
    let parent = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    if !parent.is_dir() {
        return Err(usage(format!(
            "{option} {shown}: the folder {} does not exist; create it or choose another file",
            parent.display()
        )));
    }
    if !writable_dir(parent) {
        return Err(usage(format!(
            "{option} {shown}: cannot write in {} (permissions or a read-only mount)",
            parent.display()
        )));
    }
    Ok(())
}

/// `OPTION -` (the record to stdout): stdout must be open for writing. Rust's stdout takes a
/// write to a closed descriptor (EBADF) as done, so with stdout closed (`>&-`) or open for
/// reading only the JSON was lost without a word; worse, the first file the run opened would
/// have become descriptor 1.
pub fn stdout(option: &str) -> Result<()> {
    // SAFETY: F_GETFL reads descriptor 1's flags and changes nothing.
    let flags = unsafe { libc::fcntl(libc::STDOUT_FILENO, libc::F_GETFL) };
    let why = if flags < 0 || closed_at_start(flags) {
        "stdout is closed"
    } else if flags & libc::O_ACCMODE == libc::O_RDONLY {
        "stdout is open for reading only"
    } else {
        return Ok(());
    };
    Err(usage(format!(
        "{option} -: {why}, so the record would be lost; give a file ({option} record.json) \
         or run it with stdout open"
    )))
}

/// Whether descriptor 1 (with these flags) is what Rust's start-up put in place of a closed
/// stdout: it opens `/dev/null` read-write on a closed 0, 1 or 2. A stdout sent to /dev/null
/// by a shell (`>/dev/null`) or by `Stdio::null()` is write-only, so it is not taken for one.
fn closed_at_start(flags: i32) -> bool {
    let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: fstat fills `st` when it returns 0; it is read only then.
    if unsafe { libc::fstat(libc::STDOUT_FILENO, st.as_mut_ptr()) } != 0 {
        return false;
    }
    // SAFETY: fstat returned 0.
    let st = unsafe { st.assume_init() };
    st.st_mode & libc::S_IFMT == libc::S_IFCHR
        && st.st_rdev == libc::makedev(1, 3)
        && flags & libc::O_ACCMODE == libc::O_RDWR
}

/// $GITHUB_STEP_SUMMARY, when set: opened for append (and created, as Actions expects), which
/// is the check and changes nothing in the file.
pub fn step_summary() -> Result<()> {
    let Some(path) = std::env::var_os("GITHUB_STEP_SUMMARY").filter(|p| !p.is_empty()) else {
        return Ok(());
    };
    let path = PathBuf::from(path);
    if path.is_dir() {
        return Err(usage(format!(
            "$GITHUB_STEP_SUMMARY {}: is a folder; unset it or point it at a file",
            path.display()
        )));
    }
    if let Some(kind) = std::fs::metadata(&path)
        .ok()
        .as_ref()
        .and_then(blocking_kind)
    {
        return Err(usage(format!(
            "$GITHUB_STEP_SUMMARY {}: is {kind}; writing there could wait forever; unset it or \
             point it at a regular file",
            path.display()
        )));
    }
    open_step_summary(&path).map(drop).map_err(|e| {
        usage(format!(
            "$GITHUB_STEP_SUMMARY {}: cannot open for append ({e}); unset it or fix the path",
            path.display()
        ))
    })
}

/// `--site-out` (`site --out`) against `--results`: the site is replaced on every build, so neither may
/// hold the other (compared as real paths, so `..` and symlinks cannot hide it).
pub fn site_out(option: &str, results: &Path, out: &Path) -> Result<()> {
    let (res, site) = (
        site_gen::site_folder::resolve(results)?,
        site_gen::site_folder::resolve(out)?,
    );
    if site.starts_with(&res) || res.starts_with(&site) {
        return Err(usage(format!(
            "{option} {}: {} the results folder {}; the site is replaced on every build, choose another folder",
            out.display(),
            if site.starts_with(&res) {
                "is inside"
            } else {
                "holds"
            },
            results.display()
        )));
    }
    if site.is_dir() && site_gen::site_folder::not_a_site(&site)? {
        return Err(usage(format!(
            "{option} {}: a non-empty folder that is not a diskbench site; give an empty or new folder",
            out.display()
        )));
    }
    let base = existing_ancestor(out);
    if base.exists() && !base.is_dir() {
        return Err(usage(format!(
            "{option} {}: {} is not a folder",
            out.display(),
            base.display()
        )));
    }
    // A mount point (Docker `-v host:/site`) is rendered inside, not beside: its parent may
    // well be read-only.
    let base = if base == out && base.is_dir() && site_gen::site_folder::is_mount_point(&site) {
        site.clone()
    } else if base == out && base.is_dir() {
        base.parent()
            .filter(|p| !p.as_os_str().is_empty())
            .map(Path::to_path_buf)
            .unwrap_or_else(|| PathBuf::from("."))
    } else {
        base
    };
    if !writable_dir(&base) {
        return Err(usage(format!(
            "{option} {}: cannot write in {} (permissions or a read-only mount)",
            out.display(),
            base.display()
        )));
    }
    Ok(())
}

//! Opening a file the tool reads as input (a record, a CSV, fio JSON): regular files only,
//! with a size limit, never blocking.
//!
//! The check is made on the opened descriptor (`fstat`), not on the name, so a name that is
//! swapped for a FIFO, a device or `/dev/zero` between a check and the open cannot get past
//! it. `O_NONBLOCK` makes opening a FIFO return at once instead of waiting for a writer;
//! symlinks are followed (a user may link a record in) but what they lead to must be a
//! regular file like any other.

use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// The largest input read: records with histograms are well under 1 MiB, the largest
/// published CSV is a few kB and fio JSON of a hundred jobs a few MiB.
pub const MAX_INPUT_BYTES: u64 = 64 << 20;

/// Why an input was not read. The text is fit to print after the file name.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum InputError {
    #[error("cannot open: {0}")]
    Open(String),
    #[error("not a regular file ({0}); only regular files are read")]
    NotRegular(&'static str),
    #[error("{size} bytes, over the {limit}-byte limit for an input; left out")]
    TooLarge { size: u64, limit: u64 },
    #[error("cannot read: {0}")]
    Read(String),
    #[error("not UTF-8 text")]
    NotText,
}

/// Read all of `path` if it is a regular file of at most `limit` bytes.
pub fn read_limited(path: &Path, limit: u64) -> Result<Vec<u8>, InputError> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC | libc::O_NOCTTY)
        .open(path)
        .map_err(|e| InputError::Open(e.to_string()))?;
    let meta = file
        .metadata()
        .map_err(|e| InputError::Open(e.to_string()))?;
    let ft = meta.file_type();
    if !ft.is_file() {
        use std::os::unix::fs::FileTypeExt;
        let kind = if ft.is_dir() {
            "a folder"
        } else if ft.is_fifo() {
            "a FIFO"
        } else if ft.is_char_device() {
            "a character device"
        } else if ft.is_block_device() {
            "a block device"
        } else if ft.is_socket() {
            "a socket"
        } else {
            "a special file"
        };
        return Err(InputError::NotRegular(kind));
    }
    if meta.len() > limit {
        return Err(InputError::TooLarge {
            size: meta.len(),
            limit,
        });
    }
    // The file may grow after fstat: never read more than the limit (plus one byte to notice).
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    (&file)
        .take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| InputError::Read(e.to_string()))?;
    if bytes.len() as u64 > limit {
        return Err(InputError::TooLarge {
            size: bytes.len() as u64,
            limit,
        });
    }
    Ok(bytes)
}

/// [`read_limited`] with [`MAX_INPUT_BYTES`].
pub fn read(path: &Path) -> Result<Vec<u8>, InputError> {
    read_limited(path, MAX_INPUT_BYTES)
}

/// [`read`], as UTF-8 text.
pub fn read_text(path: &Path) -> Result<String, InputError> {
    String::from_utf8(read(path)?).map_err(|_| InputError::NotText)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_regular_files_within_the_limit() {
        let dir = tempfile::tempdir().unwrap();
        let good = dir.path().join("good.json");
        std::fs::write(&good, b"{}").unwrap();
        assert_eq!(read(&good).unwrap(), b"{}");
        // A symlink to a regular file is read; one to a device is not.
        let link = dir.path().join("link.json");
        std::os::unix::fs::symlink(&good, &link).unwrap();
        assert_eq!(read(&link).unwrap(), b"{}");
        let zero = dir.path().join("zero.json");
        std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
        assert_eq!(
            read(&zero).unwrap_err(),
            InputError::NotRegular("a character device")
        );
        // A FIFO is refused at once (O_NONBLOCK), not waited on.
        let fifo = dir.path().join("fifo.json");
        let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        assert_eq!(read(&fifo).unwrap_err(), InputError::NotRegular("a FIFO"));
        assert_eq!(
            read(dir.path()).unwrap_err(),
            InputError::NotRegular("a folder")
        );
        // Sparse: large by size, no disk used.
        let big = dir.path().join("big.json");
        std::fs::File::create(&big).unwrap().set_len(100).unwrap();
        assert_eq!(
            read_limited(&big, 99).unwrap_err(),
            InputError::TooLarge {
                size: 100,
                limit: 99
            }
        );
        assert!(matches!(
            read(&dir.path().join("missing")),
            Err(InputError::Open(_))
        ));
    }
}

//! errno values: the one table of their names, and the groups the engine tells apart.
//!
//! Notes and errors name an errno symbolically ("EPERM"), the test-only switches read one by
//! name, and two groups decide what the engine does: a refused setup falls back to psync, a
//! full disk is told as "no room" with the free space. All of it reads [`NAMES`].

use std::io;

/// Every errno the engine names, with its symbol. An errno not listed is named "errno".
pub(crate) const NAMES: &[(i32, &str)] = &[
    (libc::EPERM, "EPERM"),
    (libc::ENOSYS, "ENOSYS"),
    (libc::EACCES, "EACCES"),
    (libc::EINVAL, "EINVAL"),
    (libc::ENOMEM, "ENOMEM"),
    (libc::EOPNOTSUPP, "EOPNOTSUPP"),
    (libc::ENOSPC, "ENOSPC"),
    (libc::EFBIG, "EFBIG"),
    (libc::EDQUOT, "EDQUOT"),
    (libc::EIO, "EIO"),
    (libc::EINTR, "EINTR"),
    (libc::EAGAIN, "EAGAIN"),
    (libc::ECANCELED, "ECANCELED"),
];

/// A setup (io_uring_setup, io_setup) refused by policy rather than broken: seccomp, a
/// disabled sysctl, a kernel built without it.
pub(crate) const REFUSALS: &[i32] = &[libc::EPERM, libc::ENOSYS, libc::EACCES, libc::EOPNOTSUPP];

/// A write that found no room: the disk full, a quota, the file-size limit.
pub(crate) const NO_SPACE: &[i32] = &[libc::ENOSPC, libc::EFBIG, libc::EDQUOT];

/// `errno` as its symbolic name, for notes and errors.
pub(crate) fn name(errno: i32) -> &'static str {
    NAMES
        .iter()
        .find(|(n, _)| *n == errno)
        .map(|(_, s)| *s)
        .unwrap_or("errno")
}

/// A symbolic name from [`NAMES`] or a number (for the test-only switches).
pub(crate) fn parse(text: &str) -> Option<i32> {
    let text = text.trim();
    NAMES
        .iter()
        .find(|(_, s)| *s == text)
        .map(|(n, _)| *n)
        .or_else(|| text.parse().ok())
}

/// The system's text for an errno, without Rust's " (os error N)" suffix.
pub(crate) fn text(errno: i32) -> String {
    let text = io::Error::from_raw_os_error(errno).to_string();
    match text.find(" (os error") {
        Some(i) => text[..i].to_string(),
        None => text,
    }
}

/// Whether io_uring or libaio could not be used at all (the setup was refused).
pub(crate) fn is_refusal(err: &io::Error) -> bool {
    err.raw_os_error().is_some_and(|e| REFUSALS.contains(&e))
}

/// Whether an I/O error means "no room": disk full, a quota or the file-size limit.
pub(crate) fn is_no_space(errno: i32) -> bool {
    NO_SPACE.contains(&errno)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_reads_back_to_its_errno() {
        for (errno, symbol) in NAMES {
            assert_eq!(name(*errno), *symbol);
            assert_eq!(parse(symbol), Some(*errno), "{symbol}");
        }
        assert_eq!(parse(" 28 "), Some(28));
        assert_eq!(parse("ENOTANERRNO"), None);
        assert_eq!(name(-1), "errno");
    }

    #[test]
    fn groups_are_named_in_the_table() {
        for errno in REFUSALS.iter().chain(NO_SPACE) {
            assert_ne!(name(*errno), "errno", "{errno}");
        }
        assert!(is_no_space(libc::EDQUOT) && !is_no_space(libc::EIO));
        assert!(is_refusal(&io::Error::from_raw_os_error(libc::ENOSYS)));
        assert!(!is_refusal(&io::Error::from_raw_os_error(libc::EINVAL)));
        assert_eq!(text(libc::ENOSPC), "No space left on device");
    }
}

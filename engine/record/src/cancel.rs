//! Ctrl-C: a flag that every loop polls, set from a signal handler.
//!
//! The handler only stores to an atomic (async-signal-safe); the code that notices the flag
//! removes test files, ends child process groups and returns [`crate::error::interrupted`].

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

static REQUESTED: AtomicBool = AtomicBool::new(false);
/// SIGINT/SIGTERM received so far: cleanup that waits after the first watches for another.
static SIGNALS: AtomicUsize = AtomicUsize::new(0);

extern "C" fn on_signal(_sig: libc::c_int) {
    REQUESTED.store(true, Ordering::SeqCst);
    SIGNALS.fetch_add(1, Ordering::SeqCst);
}

/// How many SIGINT/SIGTERM signals have arrived. Cleanup that may wait (on a docker daemon)
/// notes this when it starts and gives up when it grows: a second Ctrl-C means "stop now".
pub fn signals() -> usize {
    SIGNALS.load(Ordering::SeqCst)
}

/// Install the SIGINT/SIGTERM handler, and put SIGCHLD back to its default: a parent that
/// started us with SIGCHLD ignored would have the kernel reap our job processes and commands
/// before we can wait for them (and count their CPU time). Safe to call more than once.
pub fn install_handler() {
    // SAFETY: SIG_DFL for SIGCHLD installs no handler; nothing runs on the signal.
    unsafe { libc::signal(libc::SIGCHLD, libc::SIG_DFL) };
    for sig in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: a zeroed sigaction is a valid value; the handler only touches an atomic,
        // which is async-signal-safe. No SA_RESTART, so blocking syscalls return EINTR
        // and the interrupted loop gets to check the flag promptly.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_signal as *const () as usize;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(sig, &action, std::ptr::null_mut());
        }
    }
}

/// Whether Ctrl-C (or SIGTERM) has arrived.
pub fn requested() -> bool {
    REQUESTED.load(Ordering::Relaxed)
}

/// For tests and for code that wants to stop the run as if interrupted.
pub fn request() {
    REQUESTED.store(true, Ordering::SeqCst);
}

/// The one interrupt check every long loop makes: `Err(interrupted)` once Ctrl-C or SIGTERM
/// has arrived. Cheap (one relaxed load): call it per file, per record, per page.
pub fn check() -> anyhow::Result<()> {
    if requested() {
        Err(crate::error::interrupted())
    } else {
        Ok(())
    }
}

//! CPU time (getrusage), read at the edges of the measured window. The whole process counts,
//! because io_uring may run I/O on its own worker threads (iou-wrk), which are ours too.

use std::time::Duration;

/// The CPUs the runtime says this process can use (affinity, cgroup quota); 1 if it cannot tell.
pub(crate) fn available_cpus() -> u32 {
    std::thread::available_parallelism()
        .map(|n| n.get() as u32)
        .unwrap_or(1)
}

/// CLOCK_MONOTONIC in nanoseconds: what `Instant::now` reads (the vDSO, no syscall), without
/// the conversions, as the job loop reads it twice per I/O.
#[inline]
pub(crate) fn mono_ns() -> u64 {
    // SAFETY: a zeroed timespec is valid; clock_gettime only writes into it.
    let mut ts: libc::timespec = unsafe { std::mem::zeroed() };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_MONOTONIC always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// User and system CPU time.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct CpuTime {
    pub user: Duration,
    pub sys: Duration,
}

impl CpuTime {
    /// The calling thread's CPU time so far.
    #[cfg(test)]
    pub(crate) fn thread() -> CpuTime {
        rusage(libc::RUSAGE_THREAD)
    }

    /// The whole process's CPU time so far.
    pub(crate) fn process() -> CpuTime {
        rusage(libc::RUSAGE_SELF)
    }

    /// CPU time of the child processes that ended and were waited for, so far.
    pub(crate) fn children() -> CpuTime {
        rusage(libc::RUSAGE_CHILDREN)
    }

    pub(crate) fn since(self, earlier: CpuTime) -> CpuTime {
        CpuTime {
            user: self.user.saturating_sub(earlier.user),
            sys: self.sys.saturating_sub(earlier.sys),
        }
    }

    pub(crate) fn plus(self, other: CpuTime) -> CpuTime {
        CpuTime {
            user: self.user + other.user,
            sys: self.sys + other.sys,
        }
    }
}

fn rusage(who: libc::c_int) -> CpuTime {
    // SAFETY: getrusage fills the struct we own; a zeroed rusage is a valid value.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `ru` is a valid, writable rusage.
    if unsafe { libc::getrusage(who, &mut ru) } != 0 {
        return CpuTime::default();
    }
    let tv = |t: libc::timeval| {
        Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64)
    };
    CpuTime {
        user: tv(ru.ru_utime),
        sys: tv(ru.ru_stime),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn busy_thread_gains_cpu_time() {
        let before = CpuTime::thread();
        let t = std::time::Instant::now();
        let mut x = 0u64;
        while t.elapsed() < Duration::from_millis(30) {
            x = std::hint::black_box(x.wrapping_add(1));
        }
        let used = CpuTime::thread().since(before);
        assert!(used.user + used.sys > Duration::ZERO);
    }
}

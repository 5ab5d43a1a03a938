//! A short fixed compute probe: the same integer work on one thread and on all threads.
//!
//! The work is a dependent chain of 64-bit multiply/xor/shift rounds (a SplitMix64-style
//! mixer): no memory traffic, no allocation, no floating point, so it tracks the core's
//! integer speed and how many cores really run at once (SMT siblings, CPU quotas and other
//! tenants show up in the all-threads figure). A "unit" is one round; each phase runs whole
//! chunks for a fixed time and counts the rounds done, so the probe takes the same ~0.3 s on
//! a fast and a slow machine.

use std::hint::black_box;
use std::time::{Duration, Instant};

use record::CpuReference;

/// Rounds per chunk: about 1-2 ms on a current core in an optimised build.
const ROUNDS_PER_CHUNK: u64 = 1 << 20;
/// How long each phase (one thread, all threads) runs.
const PHASE: Duration = Duration::from_millis(150);

fn chunk(seed: u64) -> u64 {
    let mut x = seed;
    let mut acc = 0u64;
    for _ in 0..ROUNDS_PER_CHUNK {
        x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = x;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        acc ^= z ^ (z >> 31);
    }
    acc
}

/// Run whole chunks until `until` (at least one); returns the rounds done.
fn run_until(seed: u64, until: Instant) -> u64 {
    let mut chunks = 0;
    let mut acc = 0;
    while chunks == 0 || Instant::now() < until {
        acc ^= chunk(black_box(seed + chunks));
        chunks += 1;
    }
    black_box(acc);
    chunks * ROUNDS_PER_CHUNK
}

/// Units per second on one thread, and in total with `threads` threads.
pub(crate) fn measure(threads: u32) -> CpuReference {
    let threads = threads.max(1);
    // Warm up (frequency ramp, page faults of the code).
    black_box(chunk(1));

    let t = Instant::now();
    let rounds = run_until(7, t + PHASE);
    let single = rounds as f64 / t.elapsed().as_secs_f64();

    let t = Instant::now();
    // A thread limit (pids.max) may start fewer: the total is over the threads that ran.
    let (rounds, threads): (u64, u32) = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map_while(|i| {
                std::thread::Builder::new()
                    .spawn_scoped(s, move || run_until(1000 * u64::from(i), t + PHASE))
                    .ok()
            })
            .collect();
        let n = handles.len() as u32;
        if n == 0 {
            return (run_until(1000, t + PHASE), 1);
        }
        (handles.into_iter().map(|h| h.join().unwrap_or(0)).sum(), n)
    });
    let all = rounds as f64 / t.elapsed().as_secs_f64();
    CpuReference {
        single_thread_ops_s: single,
        all_threads_ops_s: all,
        threads,
        benchmark: None,
    }
}

/// The probe with as many threads as this process may use: the record's `cpu_reference`.
pub fn cpu_reference() -> CpuReference {
    measure(crate::job::cpu::available_cpus())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn work_is_deterministic() {
        assert_eq!(chunk(42), chunk(42));
        assert_ne!(chunk(42), chunk(43));
    }

    #[test]
    fn probe_is_short_and_counts_work() {
        let t = Instant::now();
        let r = measure(2);
        assert!(r.single_thread_ops_s > 0.0 && r.all_threads_ops_s > 0.0);
        assert_eq!(r.threads, 2);
        assert!(t.elapsed() < Duration::from_secs(5));
    }
}

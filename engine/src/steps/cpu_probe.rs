//! A short fixed compute probe: the same integer work on one thread and on all threads.
//!
//! The work is a dependent chain of 64-bit multiply/xor/shift rounds (a SplitMix64-style
//! mixer): no memory traffic, no allocation, no floating point, so it tracks the core's
//! integer speed and how many cores really run at once (SMT siblings and CPU quotas show up
//! in the all-threads figure). A "unit" is one round.

use std::hint::black_box;
use std::time::Instant;

use crate::record::CpuReference;

/// Rounds per chunk: about 10 ms on a current core in an optimised build.
const ROUNDS_PER_CHUNK: u64 = 1 << 23;
/// Chunks per thread: about 100-200 ms per phase.
const CHUNKS_PER_THREAD: u64 = 12;

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

fn run_chunks(seed: u64, chunks: u64) -> u64 {
    (0..chunks).fold(0, |acc, i| acc ^ chunk(black_box(seed + i)))
}

/// Units per second on one thread, and in total with `threads` threads.
pub fn measure(threads: u32) -> CpuReference {
    let threads = threads.max(1);
    // Warm up (frequency ramp, page faults of the code).
    black_box(run_chunks(1, 1));

    let t = Instant::now();
    black_box(run_chunks(7, CHUNKS_PER_THREAD));
    let single = (CHUNKS_PER_THREAD * ROUNDS_PER_CHUNK) as f64 / t.elapsed().as_secs_f64();

    let t = Instant::now();
    std::thread::scope(|s| {
        for i in 0..threads {
            s.spawn(move || black_box(run_chunks(100 * i as u64, CHUNKS_PER_THREAD)));
        }
    });
    let all =
        (threads as u64 * CHUNKS_PER_THREAD * ROUNDS_PER_CHUNK) as f64 / t.elapsed().as_secs_f64();
    CpuReference {
        single_thread_ops_s: single,
        all_threads_ops_s: all,
        threads,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn work_is_deterministic() {
        assert_eq!(chunk(42), chunk(42));
        assert_ne!(chunk(42), chunk(43));
    }
}

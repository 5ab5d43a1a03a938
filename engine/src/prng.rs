//! A fast, small PRNG for offsets and buffer contents (wyrand: one u64 of state, one multiply
//! per number). Not cryptographic; it only has to be fast and well spread, so that offsets
//! cover the file evenly and written data cannot be compressed or deduplicated.

/// wyrand (Wang Yi), as used by many hash tables and benchmarks.
#[derive(Clone, Debug)]
pub struct FastRng {
    state: u64,
}

impl FastRng {
    pub fn new(seed: u64) -> FastRng {
        FastRng { state: seed }
    }

    /// A generator for stream `stream` of a run: with `Some(seed)` the same every time, with
    /// `None` fresh from the kernel's CSPRNG, so offsets differ from run to run.
    pub fn for_stream(seed: Option<u64>, stream: u64) -> FastRng {
        let base = seed.unwrap_or_else(random_seed);
        FastRng::new(splitmix64(
            base ^ splitmix64(stream.wrapping_add(0x5851_f42d_4c95_7f2d)),
        ))
    }

    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0xa076_1d64_78bd_642f);
        let t = (self.state as u128).wrapping_mul((self.state ^ 0xe703_7ed1_a0b4_28db) as u128);
        ((t >> 64) as u64) ^ (t as u64)
    }

    /// Uniform in `0..n` (Lemire's multiply-shift; the tiny bias is irrelevant here). `n > 0`.
    #[inline]
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }

    /// Fill `buf` with random bytes.
    pub fn fill(&mut self, buf: &mut [u8]) {
        let mut chunks = buf.chunks_exact_mut(8);
        for c in &mut chunks {
            c.copy_from_slice(&self.next_u64().to_le_bytes());
        }
        let rest = chunks.into_remainder();
        let last = self.next_u64().to_le_bytes();
        rest.copy_from_slice(&last[..rest.len()]);
    }
}

/// SplitMix64: turns related seeds (0, 1, 2, ...) into unrelated ones.
pub fn splitmix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// 64 bits from the kernel's CSPRNG (time and pid if that fails).
pub fn random_seed() -> u64 {
    let mut bytes = [0u8; 8];
    // SAFETY: getrandom writes at most `bytes.len()` bytes into the buffer we own.
    let n = unsafe { libc::getrandom(bytes.as_mut_ptr().cast(), bytes.len(), 0) };
    if n == bytes.len() as isize {
        return u64::from_le_bytes(bytes);
    }
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    splitmix64(t ^ ((std::process::id() as u64) << 32))
}

/// Random block-aligned offsets inside a region of a file: every block once per pass over
/// the region, in a new random order each pass. This is fio's default (its random map,
/// `norandommap=0`), and it matters for writes into a new file: every write of the first pass
/// meets a block never written, as fio's do, where draws with replacement would hit blocks
/// already converted more and more often and read faster than fio on the same disk.
#[derive(Clone, Debug)]
pub struct OffsetGen {
    rng: FastRng,
    region_start: u64,
    block_size: u64,
    blocks: u64,
    /// The permutation walks `0 .. 1 << bits` and skips values >= `blocks`.
    bits: u32,
    counter: u64,
    /// This pass's bijection on `bits`-bit numbers: odd multipliers and an offset.
    mul1: u64,
    mul2: u64,
    add: u64,
}

impl OffsetGen {
    /// Offsets of whole blocks in `region_start .. region_start + region_len`.
    pub fn new(rng: FastRng, region_start: u64, region_len: u64, block_size: u64) -> OffsetGen {
        let blocks = (region_len / block_size).max(1);
        let bits = 64 - (blocks - 1).leading_zeros();
        let mut g = OffsetGen {
            rng,
            region_start,
            block_size,
            blocks,
            bits,
            counter: 0,
            mul1: 1,
            mul2: 1,
            add: 0,
        };
        g.new_pass();
        g
    }

    fn new_pass(&mut self) {
        self.mul1 = self.rng.next_u64() | 1;
        self.mul2 = self.rng.next_u64() | 1;
        self.add = self.rng.next_u64();
        self.counter = 0;
    }

    /// A bijection on `0 .. 1 << bits`: multiply by an odd number, add, xorshift, multiply,
    /// xorshift (each step is invertible modulo 2^bits).
    #[inline]
    fn permute(&self, i: u64) -> u64 {
        if self.bits == 0 {
            return 0;
        }
        let mask = u64::MAX >> (64 - self.bits);
        let shift = self.bits.div_ceil(2);
        let mut x = i.wrapping_mul(self.mul1).wrapping_add(self.add) & mask;
        x ^= x >> shift;
        x = x.wrapping_mul(self.mul2) & mask;
        x ^ (x >> shift)
    }

    #[inline]
    pub fn next_offset(&mut self) -> u64 {
        loop {
            let v = self.permute(self.counter);
            self.counter += 1;
            if self.counter >> self.bits != 0 {
                self.new_pass();
            }
            // At most half the values are skipped: two tries per offset on average at worst.
            if v < self.blocks {
                return self.region_start + v * self.block_size;
            }
        }
    }

    pub fn rng(&mut self) -> &mut FastRng {
        &mut self.rng
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn offsets(seed: Option<u64>, n: usize) -> Vec<u64> {
        let mut g = OffsetGen::new(FastRng::for_stream(seed, 0), 1 << 20, 64 << 20, 4096);
        (0..n).map(|_| g.next_offset()).collect()
    }

    #[test]
    fn offsets_are_in_range_and_aligned() {
        let offs = offsets(None, 100_000);
        for &o in &offs {
            assert!(
                (1 << 20..(65 << 20) - 4096 + 1).contains(&o),
                "{o} out of range"
            );
            assert_eq!(o % 4096, 0);
        }
        // Well spread: every 1/16 of the region gets hit.
        let mut buckets = [0u32; 16];
        for &o in &offs {
            buckets[((o - (1 << 20)) / (4 << 20)) as usize] += 1;
        }
        assert!(buckets.iter().all(|&b| b > 5_000), "{buckets:?}");
    }

    #[test]
    fn every_block_once_per_pass_like_fios_random_map() {
        for blocks in [1u64, 2, 3, 1000, 4096, 5000] {
            let mut g = OffsetGen::new(FastRng::new(blocks), 0, blocks * 4096, 4096);
            for _pass in 0..3 {
                let mut seen = vec![false; blocks as usize];
                for _ in 0..blocks {
                    let b = (g.next_offset() / 4096) as usize;
                    assert!(!seen[b], "block {b} twice in one pass of {blocks}");
                    seen[b] = true;
                }
            }
        }
        // The order is not sequential: neighbours in the sequence are rarely neighbours on disk.
        let mut g = OffsetGen::new(FastRng::new(9), 0, 4096 * 4096, 4096);
        let v: Vec<u64> = (0..4096).map(|_| g.next_offset() / 4096).collect();
        let adjacent = v.windows(2).filter(|w| w[0].abs_diff(w[1]) == 1).count();
        assert!(adjacent < 20, "{adjacent} adjacent pairs");
    }

    #[test]
    fn offsets_differ_per_run_unless_seeded() {
        assert_ne!(offsets(None, 64), offsets(None, 64));
        assert_eq!(offsets(Some(42), 64), offsets(Some(42), 64));
        assert_ne!(offsets(Some(42), 64), offsets(Some(43), 64));
        // Streams of one seed (the jobs of one run) differ from each other.
        let mut a = FastRng::for_stream(Some(7), 0);
        let mut b = FastRng::for_stream(Some(7), 1);
        assert_ne!(a.next_u64(), b.next_u64());
    }

    #[test]
    fn filled_buffers_do_not_compress() {
        let mut buf = vec![0u8; 1 << 16];
        FastRng::new(1).fill(&mut buf);
        // A crude entropy check: every byte value appears, none dominates.
        let mut counts = [0u32; 256];
        for &b in &buf {
            counts[b as usize] += 1;
        }
        assert!(counts.iter().all(|&c| c > 128 && c < 400), "{counts:?}");
    }
}

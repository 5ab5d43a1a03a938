//! A fast, small PRNG (wyrand: one u64 of state, one multiply per number). Not cryptographic;
//! it only has to be fast and well spread, so that offsets cover a file evenly, written data
//! cannot be compressed or deduplicated, and the site's bootstrap draws are repeatable.

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

/// A fresh random id: 16 hex digits from the kernel's CSPRNG (time and pid where it fails).
pub fn new_id() -> String {
    format!("{:016x}", random_seed())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_hex_and_distinct() {
        let a = new_id();
        let b = new_id();
        assert_eq!(a.len(), 16);
        assert!(a.chars().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, b);
    }
}

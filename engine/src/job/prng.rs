//! Random offsets in fio's order, from the record crate's small generator
//! ([`record::random::FastRng`]).

use record::random::FastRng;

/// Random block-aligned offsets inside a region of a file, in fio's default order (its random
/// map, `norandommap=0`, `io_u.c: __get_next_rand_offset`): draw a block uniformly; if it was
/// already used in this pass, take the next free block after it (wrapping to the first free
/// one); when every block has been used, start a new pass. So every block is used once per
/// pass, and late in a pass the picks fill the gaps next to used blocks, as fio's do.
///
/// Both halves matter for writes into a new file. Drawing with replacement would hit blocks
/// already converted from unwritten more and more often and read faster than fio on the same
/// disk. A uniformly random permutation converts blocks that are rarely neighbours, so ext4
/// splits the file into far more extents than fio's order does after the same seconds, and
/// each write pays for a larger extent tree: random writes into a new file read below fio
/// (docs/design/fio-parity.md).
#[derive(Clone, Debug)]
pub(crate) struct OffsetGen {
    rng: FastRng,
    region_start: u64,
    block_size: u64,
    blocks: u64,
    /// Made on the first random offset: a sequential job never needs it (1 GiB of 4 KiB
    /// blocks is a 32 KiB map; 4 TiB of 512-byte blocks would be 1 GiB).
    used: Option<BlockMap>,
}

impl OffsetGen {
    /// Offsets of whole blocks in `region_start .. region_start + region_len`.
    pub(crate) fn new(
        rng: FastRng,
        region_start: u64,
        region_len: u64,
        block_size: u64,
    ) -> OffsetGen {
        let blocks = (region_len / block_size).max(1);
        OffsetGen {
            rng,
            region_start,
            block_size,
            blocks,
            used: None,
        }
    }

    #[inline]
    pub(crate) fn next_offset(&mut self) -> u64 {
        let blocks = self.blocks;
        let used = self.used.get_or_insert_with(|| BlockMap::new(blocks));
        if used.count == blocks {
            used.clear();
        }
        let drawn = self.rng.below(blocks);
        #[expect(
            clippy::expect_used,
            reason = "the map is not full (checked above), so some bit is clear"
        )]
        let block = if !used.is_set(drawn) {
            drawn
        } else {
            // Not full, so some block is free: after the drawn one, or from the start.
            used.next_free(drawn + 1)
                .or_else(|| used.next_free(0))
                .expect("a map that is not full has a free block")
        };
        used.set(block);
        self.region_start + block * self.block_size
    }

    pub(crate) fn rng(&mut self) -> &mut FastRng {
        &mut self.rng
    }
}

/// A bitmap of used blocks with summary levels above it (a bit per word below that is full),
/// so the next free block is found in a few word reads however full the map is (fio's axmap).
#[derive(Clone, Debug)]
struct BlockMap {
    /// `levels[0]`: a bit per block; `levels[k]`: a bit per word of `levels[k - 1]`, set when
    /// that word is full. Bits past the end of a level are set, so they are never free.
    levels: Vec<Vec<u64>>,
    /// Valid bits per level.
    lens: Vec<u64>,
    /// Blocks set in this pass.
    count: u64,
}

impl BlockMap {
    fn new(blocks: u64) -> BlockMap {
        let mut lens = vec![blocks];
        while let Some(&below) = lens.last().filter(|&&n| n > 64) {
            lens.push(below.div_ceil(64));
        }
        let mut map = BlockMap {
            levels: lens
                .iter()
                .map(|&n| vec![0; n.div_ceil(64) as usize])
                .collect(),
            lens,
            count: 0,
        };
        map.clear();
        map
    }

    /// Every block free again (a new pass).
    fn clear(&mut self) {
        for (level, len) in self.levels.iter_mut().zip(&self.lens) {
            level.fill(0);
            let tail = len % 64;
            // A level of `len` bits has ceil(len / 64) words: with a tail there is a last one.
            if tail != 0
                && let Some(last) = level.last_mut()
            {
                *last = u64::MAX << tail;
            }
        }
        self.count = 0;
    }

    #[inline]
    fn is_set(&self, block: u64) -> bool {
        self.levels[0][(block / 64) as usize] & (1 << (block % 64)) != 0
    }

    #[inline]
    fn set(&mut self, block: u64) {
        let mut bit = block;
        for level in &mut self.levels {
            let word = &mut level[(bit / 64) as usize];
            *word |= 1 << (bit % 64);
            if *word != u64::MAX {
                break;
            }
            bit /= 64; // this word is now full: mark it in the level above
        }
        self.count += 1;
    }

    /// The first free block at or after `from`, if any.
    fn next_free(&self, from: u64) -> Option<u64> {
        self.next_zero(0, from)
    }

    fn next_zero(&self, level: usize, from: u64) -> Option<u64> {
        if from >= self.lens[level] {
            return None;
        }
        let bits = &self.levels[level];
        let first = (from / 64) as usize;
        // In the first word, bits below `from` count as taken.
        let word = |w: usize| {
            if w == first {
                bits[w] | ((1u64 << (from % 64)) - 1)
            } else {
                bits[w]
            }
        };
        let w = if word(first) != u64::MAX {
            first
        } else if level + 1 < self.levels.len() {
            // The next word of this level that is not full, from the level above.
            self.next_zero(level + 1, first as u64 + 1)? as usize
        } else {
            // The top level is one word: nothing after it.
            return None;
        };
        let i = w as u64 * 64 + (!word(w)).trailing_zeros() as u64;
        (i < self.lens[level]).then_some(i)
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
        // Early in a pass the order is random: neighbours in the sequence are rarely
        // neighbours on disk.
        let mut g = OffsetGen::new(FastRng::new(9), 0, 4096 * 4096, 4096);
        let v: Vec<u64> = (0..1024).map(|_| g.next_offset() / 4096).collect();
        let adjacent = v.windows(2).filter(|w| w[0].abs_diff(w[1]) == 1).count();
        assert!(adjacent < 10, "{adjacent} adjacent pairs");
    }

    /// fio's rule, checked against a plain linear scan: a used draw takes the next free block
    /// after it, wrapping to the first free one. Sizes cross the map's level boundaries.
    #[test]
    fn a_used_draw_takes_the_next_free_block_as_fio_does() {
        for blocks in [1u64, 63, 64, 65, 4095, 4096, 4097, 300_000] {
            let mut rng = FastRng::new(blocks);
            let mut map = BlockMap::new(blocks);
            let mut plain = vec![false; blocks as usize];
            let draws = (blocks * 2).min(50_000);
            for _ in 0..draws {
                if map.count == blocks {
                    map.clear();
                    plain.iter_mut().for_each(|b| *b = false);
                }
                let d = rng.below(blocks);
                let expected = (d..blocks)
                    .chain(0..d)
                    .find(|&b| !plain[b as usize])
                    .unwrap();
                let got = if map.is_set(d) {
                    map.next_free(d + 1).or_else(|| map.next_free(0)).unwrap()
                } else {
                    d
                };
                assert_eq!(got, expected, "{blocks} blocks, drawn {d}");
                map.set(got);
                plain[got as usize] = true;
            }
        }
    }

    /// Why the rule matters: late in a pass, fio's order fills gaps next to used blocks, so a
    /// new file ends up in far fewer written runs (extents) than a uniform permutation leaves.
    #[test]
    fn a_pass_leaves_fewer_written_runs_than_a_uniform_permutation() {
        let blocks = 1u64 << 16;
        let k = blocks * 3 / 4;
        let mut g = OffsetGen::new(FastRng::new(3), 0, blocks * 4096, 4096);
        let mut written = vec![false; blocks as usize];
        for _ in 0..k {
            written[(g.next_offset() / 4096) as usize] = true;
        }
        let runs = written.windows(2).filter(|w| w[1] && !w[0]).count() as f64;
        // A uniform order leaves about k (1 - k/N) runs: 12,288 here.
        let uniform = k as f64 * (1.0 - k as f64 / blocks as f64);
        assert!(
            runs < 0.8 * uniform,
            "{runs} runs against {uniform} for a uniform order"
        );
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

//! Reading stored histograms without inflating them into full arrays.
//!
//! A record's histogram (HDR V2 + deflate, base64) decodes with hdrhistogram's `Deserializer`
//! into a histogram whose counts array covers 1 ns..60 s (about 220 KiB), and merging two walks
//! that whole array. A runner page merges every run's histograms, so for 500 runners x 20 runs
//! that is 60,000 arrays. Here the compressed payload is walked directly: it lists only the
//! buckets that hold counts, and each is recorded into one accumulating histogram per column.
//! The result is identical (tested against the library's own decoder below).

use base64::Engine as _;
use flate2::{Decompress, FlushDecompress, Status};
use hdrhistogram::Histogram as HdrHistogram;

const V2_COOKIE: u32 = 0x1c84_9303 | 0x10;
const V2_COMPRESSED_COOKIE: u32 = 0x1c84_9304 | 0x10;

/// The layout a histogram's counts array was written with.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Layout {
    pub low: u64,
    pub high: u64,
    pub sigfig: u8,
    unit_magnitude: u32,
    sub_bucket_half_count_magnitude: u32,
    sub_bucket_half_count: u64,
}

impl Layout {
    fn new(low: u64, high: u64, sigfig: u8) -> Option<Layout> {
        if low == 0 || high < 2 * low || sigfig > 5 {
            return None;
        }
        let unit_magnitude = (low as f64).log2().floor() as u32;
        let largest = 2 * 10u64.pow(sigfig as u32);
        let sub_bucket_count_magnitude = (largest as f64).log2().ceil() as u32;
        let half_mag = sub_bucket_count_magnitude.max(1) - 1;
        Some(Layout {
            low,
            high,
            sigfig,
            unit_magnitude,
            sub_bucket_half_count_magnitude: half_mag,
            sub_bucket_half_count: 1 << half_mag,
        })
    }

    /// The lowest value counted at `index` of the counts array (HDR's `value_for`).
    fn value_at(&self, index: u64) -> Option<u64> {
        let mut bucket = (index >> self.sub_bucket_half_count_magnitude) as i64 - 1;
        let mut sub = (index & (self.sub_bucket_half_count - 1)) + self.sub_bucket_half_count;
        if bucket < 0 {
            sub -= self.sub_bucket_half_count;
            bucket = 0;
        }
        let shift = bucket as u32 + self.unit_magnitude;
        if shift >= 64 || sub.leading_zeros() < shift {
            return None;
        }
        Some(sub << shift)
    }
}

fn be_u32(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_be_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn be_u64(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_be_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

/// Reusable buffers: one inflater per thread instead of one per histogram (setting up an
/// inflater costs more than inflating a small histogram).
pub(crate) struct Scratch {
    inflater: Decompress,
    raw: Vec<u8>,
    body: Vec<u8>,
}

impl Default for Scratch {
    fn default() -> Self {
        Scratch {
            inflater: Decompress::new(true),
            raw: Vec::new(),
            body: Vec::new(),
        }
    }
}

fn inflate(z: &mut Decompress, input: &[u8], out: &mut Vec<u8>) -> Option<()> {
    z.reset(true);
    out.clear();
    out.reserve(input.len() * 4 + 64);
    loop {
        let consumed = z.total_in() as usize;
        match z
            .decompress_vec(input.get(consumed..)?, out, FlushDecompress::Finish)
            .ok()?
        {
            Status::StreamEnd => return Some(()),
            _ if out.len() == out.capacity() => {
                if out.len() > 64 << 20 {
                    return None; // not a histogram of any sane size
                }
                out.reserve(out.len());
            }
            _ if z.total_in() as usize >= input.len() => return None, // truncated
            _ => {}
        }
    }
}

/// The (value, count) pairs of a stored histogram, and its layout. None if it is not a valid
/// V2 (optionally deflated) histogram.
pub(crate) fn sparse_counts(b64: &str, scratch: &mut Scratch) -> Option<(Layout, Vec<(u64, u64)>)> {
    scratch.raw.clear();
    base64::engine::general_purpose::STANDARD
        .decode_vec(b64.trim(), &mut scratch.raw)
        .ok()?;
    let raw = &scratch.raw;
    let body: &[u8] = match be_u32(raw, 0)? {
        V2_COMPRESSED_COOKIE => {
            let len = be_u32(raw, 4)? as usize;
            let compressed = raw.get(8..8 + len)?;
            inflate(&mut scratch.inflater, compressed, &mut scratch.body)?;
            &scratch.body
        }
        V2_COOKIE => raw,
        _ => return None,
    };
    if be_u32(body, 0)? != V2_COOKIE {
        return None;
    }
    let payload_len = be_u32(body, 4)? as usize;
    let normalizing_offset = be_u32(body, 8)?;
    let sigfig = u8::try_from(be_u32(body, 12)?).ok()?;
    let low = be_u64(body, 16)?;
    let high = be_u64(body, 24)?;
    let ratio = f64::from_bits(be_u64(body, 32)?);
    if normalizing_offset != 0 || ratio != 1.0 {
        return None;
    }
    let layout = Layout::new(low, high, sigfig)?;
    let payload = body.get(40..40 + payload_len)?;
    let mut pairs = Vec::new();
    let (mut i, mut index) = (0usize, 0u64);
    while i < payload.len() {
        // LEB128 (HDR's variant: the 9th byte carries a full 8 bits), then zig-zag; a
        // negative number is a run of empty buckets.
        let mut v = 0u64;
        let mut k = 0;
        loop {
            let b = *payload.get(i)?;
            i += 1;
            if k == 8 {
                v |= (b as u64) << 56;
                break;
            }
            v |= ((b & 0x7f) as u64) << (7 * k);
            if b & 0x80 == 0 {
                break;
            }
            k += 1;
        }
        let n = ((v >> 1) as i64) ^ -((v & 1) as i64);
        if n < 0 {
            index = index.checked_add(n.unsigned_abs())?;
        } else {
            if n > 0 {
                pairs.push((layout.value_at(index)?, n as u64));
            }
            index += 1;
        }
    }
    Some((layout, pairs))
}

/// The sum of a histogram's counts, or None when it does not fit in u64: the library keeps a
/// u64 total, saturates it, and then panics walking counts that never reach it.
pub fn total_count(pairs: &[(u64, u64)]) -> Option<u64> {
    pairs
        .iter()
        .try_fold(0u64, |sum, (_, n)| sum.checked_add(*n))
}

/// Whether a stored histogram is one the site can draw: a valid HDR V2 histogram (optionally
/// deflated) whose counts sum within u64. Err says why not, for `merge` to refuse the record.
pub fn check_stored(b64: &str) -> Result<(), String> {
    let mut scratch = Scratch::default();
    let (_, pairs) = sparse_counts(b64, &mut scratch)
        .ok_or_else(|| "not a valid HDR V2 histogram (base64 of V2 or V2 + deflate)".to_string())?;
    total_count(&pairs)
        .map(drop)
        .ok_or_else(|| "its counts sum past 2^64, more than a histogram can hold".to_string())
}

/// Accumulates stored histograms of one column into one histogram.
#[derive(Default)]
pub(crate) struct Merger {
    pub merged: Option<HdrHistogram<u64>>,
    /// How many histograms were merged.
    pub runs: usize,
    /// How many could not be: unreadable, or counts that would sum past u64 (alone or with
    /// those merged before).
    pub skipped: usize,
}

impl Merger {
    /// Add one stored histogram; false (nothing added, counted in `skipped`) if it cannot be
    /// read or its counts would take the merged total past u64.
    pub(crate) fn add(&mut self, b64: &str, scratch: &mut Scratch) -> bool {
        let added = self.try_add(b64, scratch);
        if !added {
            self.skipped += 1;
        }
        added
    }

    fn try_add(&mut self, b64: &str, scratch: &mut Scratch) -> bool {
        let Some((layout, pairs)) = sparse_counts(b64, scratch) else {
            return false;
        };
        let so_far = self.merged.as_ref().map_or(0, |h| h.len());
        if total_count(&pairs)
            .and_then(|t| t.checked_add(so_far))
            .is_none()
        {
            return false;
        }
        if self.merged.is_none() {
            match HdrHistogram::new_with_bounds(layout.low, layout.high, layout.sigfig) {
                Ok(h) => self.merged = Some(h),
                Err(_) => return false,
            }
        }
        let Some(h) = self.merged.as_mut() else {
            return false;
        };
        for (value, count) in pairs {
            h.saturating_record_n(value, count);
        }
        self.runs += 1;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hdrhistogram::serialization::{
        Deserializer, Serializer as _, V2DeflateSerializer, V2Serializer,
    };

    fn stored(h: &HdrHistogram<u64>, deflate: bool) -> String {
        let mut buf = Vec::new();
        if deflate {
            V2DeflateSerializer::new().serialize(h, &mut buf).unwrap();
        } else {
            V2Serializer::new().serialize(h, &mut buf).unwrap();
        }
        base64::engine::general_purpose::STANDARD.encode(buf)
    }

    #[test]
    fn sparse_decoding_matches_the_library() {
        let mut rng = crate::data::testdata::Rng::new(3);
        let mut a = HdrHistogram::<u64>::new_with_bounds(1, 60_000_000_000, 3).unwrap();
        let mut b = a.clone();
        for _ in 0..20_000 {
            a.saturating_record((80_000.0 * (0.5 * rng.normal()).exp()) as u64);
            b.saturating_record((2_000_000.0 * (1.5 * rng.normal()).exp()) as u64 + 1);
        }
        // Extremes: the smallest and a huge value, and a big count (multi-byte varints).
        a.saturating_record_n(1, 1 << 40);
        a.saturating_record(59_000_000_000);
        for deflate in [true, false] {
            let mut m = Merger::default();
            let mut scratch = Scratch::default();
            assert!(m.add(&stored(&a, deflate), &mut scratch));
            assert!(m.add(&stored(&b, deflate), &mut scratch));
            let merged = m.merged.unwrap();
            let mut expect = Deserializer::new()
                .deserialize::<u64, _>(
                    &mut base64::engine::general_purpose::STANDARD
                        .decode(stored(&a, deflate))
                        .unwrap()
                        .as_slice(),
                )
                .unwrap();
            expect.add(&b).unwrap();
            assert_eq!(merged.len(), expect.len());
            for q in [0.0, 0.1, 0.5, 0.9, 0.99, 0.999, 1.0] {
                assert_eq!(
                    merged.value_at_quantile(q),
                    expect.value_at_quantile(q),
                    "q {q}"
                );
            }
            assert_eq!(merged.max(), expect.max());
            assert_eq!(merged.min(), expect.min());
        }
        let mut m = Merger::default();
        let mut scratch = Scratch::default();
        assert!(!m.add("AAAA", &mut scratch));
        assert!(!m.add("not base64", &mut scratch));
        // A truncated deflate stream is refused, not half-read.
        let whole = base64::engine::general_purpose::STANDARD
            .decode(stored(&a, true))
            .unwrap();
        let cut = base64::engine::general_purpose::STANDARD.encode(&whole[..whole.len() - 20]);
        assert!(!m.add(&cut, &mut scratch));
        assert_eq!(m.runs, 0);
    }
}

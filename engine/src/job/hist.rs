//! Latency histograms: HDR, nanoseconds, 1 ns .. 60 s at 3 significant figures. One per job and
//! direction while running (no sharing, no locks), merged at the end, stored V2 + deflate,
//! base64, so runs can be merged and percentiles recomputed later.

use anyhow::{Context, Result};
use base64::Engine as _;
use hdrhistogram::Histogram;
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};

use record::Latency;

/// Highest latency kept exactly; slower I/Os count as 60 s.
pub(crate) const MAX_LAT_NS: u64 = 60_000_000_000;

/// One latency histogram in nanoseconds.
#[derive(Clone, Debug)]
pub struct LatencyHist {
    inner: Histogram<u64>,
}

impl Default for LatencyHist {
    fn default() -> Self {
        LatencyHist::new()
    }
}

impl LatencyHist {
    #[expect(
        clippy::expect_used,
        reason = "constant bounds, 1 < MAX_LAT_NS and 3 significant figures"
    )]
    pub(crate) fn new() -> LatencyHist {
        LatencyHist {
            inner: Histogram::new_with_bounds(1, MAX_LAT_NS, 3).expect("fixed bounds are valid"),
        }
    }

    #[inline]
    pub(crate) fn record(&mut self, lat_ns: u64) {
        self.inner.saturating_record(lat_ns.max(1));
    }

    #[expect(
        clippy::expect_used,
        reason = "every LatencyHist has the same bounds, so adding cannot fail"
    )]
    pub(crate) fn merge(&mut self, other: &LatencyHist) {
        self.inner
            .add(&other.inner)
            .expect("histograms share their bounds");
    }

    pub fn count(&self) -> u64 {
        self.inner.len()
    }

    pub(crate) fn histogram(&self) -> &Histogram<u64> {
        &self.inner
    }

    /// min/mean/p50/p90/p99/p99.9/max; all None for an empty histogram.
    pub(crate) fn latency(&self) -> Latency {
        let h = &self.inner;
        if h.is_empty() {
            return Latency::default();
        }
        Latency {
            min: Some(h.min()),
            mean: Some(h.mean().round() as u64),
            p50: Some(h.value_at_quantile(0.50)),
            p90: Some(h.value_at_quantile(0.90)),
            p99: Some(h.value_at_quantile(0.99)),
            p99_9: Some(h.value_at_quantile(0.999)),
            max: Some(h.max()),
        }
    }

    /// V2 + deflate, base64 (standard alphabet, padded).
    #[expect(
        clippy::expect_used,
        reason = "a Vec takes every write, and the counts (I/Os of one run) are far below \
                  i64::MAX, the one limit of the format"
    )]
    pub(crate) fn encode(&self) -> String {
        let mut bytes = Vec::new();
        V2DeflateSerializer::new()
            .serialize(&self.inner, &mut bytes)
            .expect("serialising into memory cannot fail");
        base64::engine::general_purpose::STANDARD.encode(bytes)
    }

    pub fn decode(text: &str) -> Result<LatencyHist> {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(text.trim())
            .context("latency histogram: not base64")?;
        let inner: Histogram<u64> = Deserializer::new()
            .deserialize(&mut bytes.as_slice())
            .map_err(|e| anyhow::anyhow!("latency histogram: cannot decode: {e:?}"))?;
        let mut h = LatencyHist::new();
        h.inner
            .add(&inner)
            .map_err(|e| anyhow::anyhow!("latency histogram: out of range: {e:?}"))?;
        Ok(h)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merging_adds_counts_and_keeps_extremes() {
        let mut a = LatencyHist::new();
        let mut b = LatencyHist::new();
        for v in 1..=1000u64 {
            a.record(v * 1000);
        }
        for v in 1..=1000u64 {
            b.record(v * 1_000_000);
        }
        a.merge(&b);
        assert_eq!(a.count(), 2000);
        let lat = a.latency();
        assert_eq!(lat.min, Some(1000));
        assert!(lat.max.unwrap() >= 999_000_000 && lat.max.unwrap() <= 1_001_000_000);
        // The median sits between the two populations.
        let p50 = lat.p50.unwrap();
        assert!((990_000..=1_001_000).contains(&p50), "{p50}");
        assert!(lat.p99.unwrap() >= lat.p90.unwrap());
    }

    #[test]
    fn encoding_round_trips() {
        let mut a = LatencyHist::new();
        for v in [1u64, 50, 4_000, 90_000, 2_000_000, MAX_LAT_NS * 2] {
            a.record(v);
        }
        let text = a.encode();
        let b = LatencyHist::decode(&text).unwrap();
        assert_eq!(b.count(), 6);
        assert_eq!(a.latency(), b.latency());
        assert!(LatencyHist::decode("not base64!").is_err());
    }

    #[test]
    fn empty_histogram_has_no_percentiles() {
        assert_eq!(LatencyHist::new().latency(), Latency::default());
    }
}

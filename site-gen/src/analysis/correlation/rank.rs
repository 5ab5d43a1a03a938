//! Rank statistics over runners: Spearman's rho, the partial rank correlation (one figure held
//! fixed) and a bootstrap interval over runners. Nothing here knows what a figure means.
//!
//! A bootstrap resample is kept as a count per runner (how often it was drawn), so ranks are
//! one pass over a pre-sorted order instead of a sort per resample: 10,000 records and a
//! thousand resamples per figure stay well inside the render budget.

use record::random::FastRng;

/// Figures closer than this (relative to the smallest of a group) are tied: runs of one runner
/// spread about that much, so a finer order between two runners is noise, not a ranking.
pub(crate) const TIE_TOLERANCE: f64 = 0.10;
/// Resamples per bootstrap interval.
pub(crate) const RESAMPLES: usize = 1000;
/// How many links of one step can make a call: the six columns and the two CPU figures.
pub(crate) const FIGURES_TESTED: usize = 8;
/// The confidence that no call at all is a false one, across a step's figures together.
pub(crate) const FAMILY_COVERAGE: f64 = 0.95;
/// Each interval's coverage: the call takes the best of up to [`FIGURES_TESTED`] links, so
/// each interval is widened as Bonferroni says (1 - 0.05 / 8 = 99.375%), or noise would be
/// called a link in about one step in five (measured on independent generated figures: 20% at
/// 6 runners, 10% at 14, with 95% intervals).
pub(crate) const COVERAGE: f64 = 1.0 - (1.0 - FAMILY_COVERAGE) / FIGURES_TESTED as f64;
/// Below this share of resamples where the statistic is defined (a resample can draw runners
/// whose figure and CPU rank alike, or whose times all rank as the CPU does), no interval is
/// given: the defined ones would be a selected subset.
pub(crate) const MIN_DEFINED_SHARE: f64 = 0.8;
/// The fixed seed: the same data always gives the same intervals.
pub(crate) const SEED: u64 = 0x5eed_d15c_be9c_0010;

/// Each value replaced by its group on the tie grid: sorted, a new group starts where a value
/// is more than `tol` above the first value of the current group.
pub(crate) fn tie_levels(values: &[f64], tol: f64) -> Vec<f64> {
    let mut idx: Vec<usize> = (0..values.len()).collect();
    idx.sort_by(|&a, &b| values[a].total_cmp(&values[b]));
    let mut out = vec![0.0; values.len()];
    let mut level = 0.0;
    let mut first: Option<f64> = None;
    for i in idx {
        let v = values[i];
        match first {
            Some(f) if v <= f * (1.0 + tol) => {}
            _ => {
                level += 1.0;
                first = Some(v);
            }
        }
        out[i] = level;
    }
    out
}

/// How many distinct groups the tie grid makes of `values`.
pub(crate) fn distinct_levels(values: &[f64], tol: f64) -> usize {
    tie_levels(values, tol)
        .into_iter()
        .fold(0.0f64, f64::max)
        .round() as usize
}

/// One variable, sorted once; ranks of any resample (given as counts) in one pass.
struct Ranker {
    order: Vec<usize>,
    values: Vec<f64>,
}

impl Ranker {
    fn new(values: &[f64]) -> Ranker {
        let mut order: Vec<usize> = (0..values.len()).collect();
        order.sort_by(|&a, &b| values[a].total_cmp(&values[b]));
        Ranker {
            order,
            values: values.to_vec(),
        }
    }

    /// Tie-averaged ranks (from 1) of every drawn runner, as if each were repeated `counts[i]`
    /// times.
    fn ranks(&self, counts: &[u32], out: &mut [f64]) {
        let mut pos = 0u64;
        let mut i = 0;
        while i < self.order.len() {
            let v = self.values[self.order[i]];
            let mut j = i;
            let mut drawn = 0u64;
            while j < self.order.len() && self.values[self.order[j]] == v {
                drawn += u64::from(counts[self.order[j]]);
                j += 1;
            }
            let rank = pos as f64 + (drawn as f64 + 1.0) / 2.0;
            for &k in &self.order[i..j] {
                out[k] = rank;
            }
            pos += drawn;
            i = j;
        }
    }
}

/// Pearson's r of `a` and `b`, each runner weighted by its count; None if either is constant.
fn weighted_pearson(a: &[f64], b: &[f64], counts: &[u32]) -> Option<f64> {
    let (mut w, mut sa, mut sb) = (0.0, 0.0, 0.0);
    for ((x, y), &c) in a.iter().zip(b).zip(counts) {
        let c = f64::from(c);
        w += c;
        sa += c * x;
        sb += c * y;
    }
    if w < 3.0 {
        return None;
    }
    let (ma, mb) = (sa / w, sb / w);
    let (mut sab, mut saa, mut sbb) = (0.0, 0.0, 0.0);
    for ((x, y), &c) in a.iter().zip(b).zip(counts) {
        let c = f64::from(c);
        sab += c * (x - ma) * (y - mb);
        saa += c * (x - ma) * (x - ma);
        sbb += c * (y - mb) * (y - mb);
    }
    // Ranks are whole or half numbers: a variance this small is a constant.
    if saa < 1e-9 || sbb < 1e-9 {
        return None;
    }
    Some((sab / (saa * sbb).sqrt()).clamp(-1.0, 1.0))
}

/// The partial correlation of t and x with z held fixed, from the three pairwise ones. None
/// where it is not defined: z ranks exactly as t or as x (nothing is left to relate).
pub(crate) fn partial_from(r_tx: f64, r_tz: f64, r_xz: f64) -> Option<f64> {
    let d = (1.0 - r_tz * r_tz) * (1.0 - r_xz * r_xz);
    if d < 1e-9 {
        return None;
    }
    Some(((r_tx - r_tz * r_xz) / d.sqrt()).clamp(-1.0, 1.0))
}

/// Runners' values for a rank analysis: the step time and one or two figures.
pub(crate) struct RankSample {
    t: Ranker,
    x: Ranker,
    z: Option<Ranker>,
    n: usize,
}

/// A bootstrap interval and how much of the resampling it rests on.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Interval {
    pub lo: f64,
    pub hi: f64,
}

/// What the bootstrap gave: the interval (None when too few resamples were defined) and the
/// share of resamples in which the statistic was defined.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Bootstrap {
    pub interval: Option<Interval>,
    pub defined_share: f64,
}

impl RankSample {
    /// `t`, `x` and (optionally) `z` must have the same length, one entry per runner.
    pub(crate) fn new(t: &[f64], x: &[f64], z: Option<&[f64]>) -> RankSample {
        RankSample {
            t: Ranker::new(t),
            x: Ranker::new(x),
            z: z.map(Ranker::new),
            n: t.len(),
        }
    }

    /// Spearman's rho of t and x (z ignored).
    pub(crate) fn rho(&self) -> Option<f64> {
        let counts = vec![1; self.n];
        let mut buf = Buffers::new(self.n);
        self.stat(&counts, &mut buf, false)
    }

    /// The partial rank correlation of t and x with z held fixed (rho if there is no z).
    pub(crate) fn rho_controlled(&self) -> Option<f64> {
        let counts = vec![1; self.n];
        let mut buf = Buffers::new(self.n);
        self.stat(&counts, &mut buf, true)
    }

    fn stat(&self, counts: &[u32], buf: &mut Buffers, controlled: bool) -> Option<f64> {
        self.t.ranks(counts, &mut buf.t);
        self.x.ranks(counts, &mut buf.x);
        let r_tx = weighted_pearson(&buf.t, &buf.x, counts)?;
        match (&self.z, controlled) {
            (Some(z), true) => {
                z.ranks(counts, &mut buf.z);
                let r_tz = weighted_pearson(&buf.t, &buf.z, counts)?;
                let r_xz = weighted_pearson(&buf.x, &buf.z, counts)?;
                partial_from(r_tx, r_tz, r_xz)
            }
            _ => Some(r_tx),
        }
    }

    /// Percentile bootstrap over runners of the controlled rho: `resamples` draws of n runners
    /// with replacement from a fixed seed.
    pub(crate) fn bootstrap(&self, resamples: usize, seed: u64) -> Bootstrap {
        let mut rng = FastRng::new(seed);
        let mut counts = vec![0u32; self.n];
        let mut buf = Buffers::new(self.n);
        let mut values = Vec::with_capacity(resamples);
        for _ in 0..resamples {
            counts.iter_mut().for_each(|c| *c = 0);
            for _ in 0..self.n {
                counts[rng.below(self.n as u64) as usize] += 1;
            }
            if let Some(v) = self.stat(&counts, &mut buf, true) {
                values.push(v);
            }
        }
        let defined_share = if resamples == 0 {
            0.0
        } else {
            values.len() as f64 / resamples as f64
        };
        if values.is_empty() || defined_share < MIN_DEFINED_SHARE {
            return Bootstrap {
                interval: None,
                defined_share,
            };
        }
        values.sort_by(f64::total_cmp);
        let tail = (1.0 - COVERAGE) / 2.0;
        let at = |q: f64| {
            let i = ((values.len() as f64 * q).ceil() as usize).clamp(1, values.len()) - 1;
            values[i]
        };
        Bootstrap {
            interval: Some(Interval {
                lo: at(tail),
                hi: at(1.0 - tail),
            }),
            defined_share,
        }
    }
}

struct Buffers {
    t: Vec<f64>,
    x: Vec<f64>,
    z: Vec<f64>,
}

impl Buffers {
    fn new(n: usize) -> Buffers {
        Buffers {
            t: vec![0.0; n],
            x: vec![0.0; n],
            z: vec![0.0; n],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::stats::spearman;

    #[test]
    fn tie_grid_groups_close_figures() {
        let v = [401.1, 401.8, 199.3, 199.4, 784.3, 16_435.8, 392.5];
        assert_eq!(
            tie_levels(&v, TIE_TOLERANCE),
            [2.0, 2.0, 1.0, 1.0, 3.0, 4.0, 2.0]
        );
        assert_eq!(distinct_levels(&v, TIE_TOLERANCE), 4);
        assert_eq!(distinct_levels(&[5.0, 5.2, 5.4], TIE_TOLERANCE), 1);
    }

    #[test]
    fn rho_matches_the_plain_spearman() {
        let t = [3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0, 6.0];
        let x = [2.0, 7.0, 1.0, 8.0, 2.0, 8.0, 1.0, 8.0];
        let s = RankSample::new(&t, &x, None);
        assert!((s.rho().unwrap() - spearman(&t, &x).unwrap()).abs() < 1e-12);
    }

    #[test]
    fn partial_removes_a_shared_cause() {
        // t and x both follow z and nothing else: rho(t, x) is high, the partial is zero.
        let z: Vec<f64> = (0..12).map(|i| i as f64).collect();
        let t: Vec<f64> = z
            .iter()
            .map(|&v| v * 2.0 + [2.5, -2.5][v as usize % 2])
            .collect();
        let x: Vec<f64> = z
            .iter()
            .map(|&v| v * 3.0 + [0.0, 4.0, -4.0][v as usize % 3])
            .collect();
        let s = RankSample::new(&t, &x, Some(&z));
        assert!(s.rho().unwrap() > 0.8, "{:?}", s.rho());
        assert!(
            s.rho_controlled().unwrap().abs() < 0.3,
            "{:?}",
            s.rho_controlled()
        );
        // Textbook formula: r_tx = 0.5, r_tz = 0.5, r_xz = 0.5 -> (0.25) / 0.75 = 1/3.
        assert!((partial_from(0.5, 0.5, 0.5).unwrap() - 1.0 / 3.0).abs() < 1e-12);
        assert_eq!(partial_from(0.9, 1.0, 0.9), None);
    }

    #[test]
    fn bootstrap_is_deterministic_and_brackets_the_estimate() {
        let z: Vec<f64> = (0..15).map(|i| ((i * 7) % 15) as f64).collect();
        let x: Vec<f64> = (0..15).map(|i| i as f64).collect();
        let t: Vec<f64> = x
            .iter()
            .map(|v| 100.0 - v * 5.0 + (v * 1.7).sin())
            .collect();
        let s = RankSample::new(&t, &x, Some(&z));
        let a = s.bootstrap(RESAMPLES, SEED);
        assert_eq!(a, s.bootstrap(RESAMPLES, SEED));
        let i = a.interval.unwrap();
        let r = s.rho_controlled().unwrap();
        assert!(i.lo <= r && r <= i.hi && i.hi < 0.0, "{i:?} {r}");
        // No link at all: the interval holds zero.
        let noise: Vec<f64> = (0..15).map(|i| ((i * 11) % 15) as f64).collect();
        let s = RankSample::new(&noise, &x, Some(&z));
        let i = s.bootstrap(RESAMPLES, SEED).interval.unwrap();
        assert!(i.lo < 0.0 && 0.0 < i.hi, "{i:?}");
    }
}

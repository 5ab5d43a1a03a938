//! The latency an emulated I/O is held for: a log-normal distribution set by a mean and a
//! 99th percentile, the two figures a published row gives per one-at-a-time column.

/// z of the 99th percentile of the standard normal distribution.
const Z_P99: f64 = 2.326_347_874;

/// One kind of I/O's latency on the emulated disk. Log-normal: network block storage's
/// latency is a floor (the round trip) with a right tail, and the log-normal is the
/// two-parameter shape that a mean and a p99 pin down.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Latency {
    /// ln of the median, ns.
    mu: f64,
    /// Standard deviation of ln(latency); 0 holds every I/O for the mean.
    sigma: f64,
}

impl Latency {
    /// Every I/O held for `mean_ns`.
    pub fn constant(mean_ns: f64) -> Latency {
        Latency {
            mu: mean_ns.max(1.0).ln(),
            sigma: 0.0,
        }
    }

    /// The log-normal with this mean and 99th percentile. With p99 at or below the mean
    /// (no tail, or figures that cannot both hold) every I/O is held for the mean; a p99 more
    /// than e^(Z²/2) times the mean (≈15x), which no log-normal reaches, gets the widest one
    /// that does.
    pub fn from_mean_p99(mean_ns: f64, p99_ns: f64) -> Latency {
        if !(mean_ns.is_finite() && mean_ns > 0.0) {
            return Latency::constant(1.0);
        }
        if !(p99_ns.is_finite() && p99_ns > mean_ns) {
            return Latency::constant(mean_ns);
        }
        // ln(p99 / mean) = Z sigma - sigma^2 / 2: the smaller root; the right side peaks at
        // sigma = Z with Z^2 / 2.
        let k = (p99_ns / mean_ns).ln().min(Z_P99 * Z_P99 / 2.0);
        let sigma = Z_P99 - (Z_P99 * Z_P99 - 2.0 * k).max(0.0).sqrt();
        Latency {
            mu: mean_ns.ln() - sigma * sigma / 2.0,
            sigma,
        }
    }

    /// Mean, ns.
    pub fn mean_ns(&self) -> f64 {
        (self.mu + self.sigma * self.sigma / 2.0).exp()
    }

    /// 99th percentile, ns.
    pub fn p99_ns(&self) -> f64 {
        (self.mu + Z_P99 * self.sigma).exp()
    }

    /// The same shape scaled to a new mean.
    pub fn with_mean(&self, mean_ns: f64) -> Latency {
        Latency {
            mu: mean_ns.max(1.0).ln() - self.sigma * self.sigma / 2.0,
            sigma: self.sigma,
        }
    }

    /// One I/O's latency, ns, from two uniform draws in (0, 1] (Box-Muller).
    pub(crate) fn sample_ns(&self, u1: f64, u2: f64) -> u64 {
        if self.sigma == 0.0 {
            return self.mu.exp() as u64;
        }
        let z = (-2.0 * u1.max(f64::MIN_POSITIVE).ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
        (self.mu + self.sigma * z).exp().min(60e9) as u64
    }
}

/// What the emulated disk adds per kind of I/O that reaches it. None passes that kind
/// through untouched.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Delays {
    /// A read that reaches storage (a direct read, or a page-cache miss of a buffered one).
    pub read: Option<Latency>,
    /// A direct write (O_DIRECT): its own round trip. A buffered write lands in the page
    /// cache, as on any disk, and is counted in the next flush instead.
    pub direct_write: Option<Latency>,
    /// fsync/fdatasync: the flush. After buffered writes, a direct write's latency is added
    /// too (their data goes out first).
    pub sync: Option<Latency>,
}

/// A small generator for the draws (splitmix64): quality enough for latencies, no state
/// shared between threads.
#[derive(Clone, Debug)]
pub(crate) struct Draws(u64);

impl Draws {
    pub(crate) fn new(seed: u64) -> Draws {
        Draws(seed)
    }

    /// Uniform in (0, 1].
    pub(crate) fn unit(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        ((z >> 11) as f64 + 1.0) / (1u64 << 53) as f64
    }

    pub(crate) fn sample_ns(&mut self, l: &Latency) -> u64 {
        let (a, b) = (self.unit(), self.unit());
        l.sample_ns(a, b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mean_and_p99_are_what_was_asked() {
        // A published EBS gp3 row's QD1 read: 1,843 reads/s, p99 856.1 us.
        let l = Latency::from_mean_p99(1e9 / 1843.0, 856_100.0);
        assert!((l.mean_ns() / (1e9 / 1843.0) - 1.0).abs() < 1e-9);
        assert!((l.p99_ns() / 856_100.0 - 1.0).abs() < 1e-9);
        let mut d = Draws::new(7);
        let mut s: Vec<u64> = (0..200_000).map(|_| d.sample_ns(&l)).collect();
        s.sort_unstable();
        let mean = s.iter().sum::<u64>() as f64 / s.len() as f64;
        let p99 = s[s.len() * 99 / 100] as f64;
        assert!((mean / l.mean_ns() - 1.0).abs() < 0.01, "{mean}");
        assert!((p99 / l.p99_ns() - 1.0).abs() < 0.02, "{p99}");
    }

    #[test]
    fn figures_no_log_normal_fits_still_give_one() {
        let flat = Latency::from_mean_p99(1000.0, 900.0);
        assert_eq!(flat.p99_ns().round(), 1000.0);
        let wide = Latency::from_mean_p99(1000.0, 1e9);
        assert!(wide.p99_ns() > 10_000.0 && wide.mean_ns().round() == 1000.0);
        assert_eq!(Latency::from_mean_p99(f64::NAN, 5.0).mean_ns().round(), 1.0);
        let scaled = Latency::from_mean_p99(500.0, 800.0).with_mean(1000.0);
        assert!((scaled.p99_ns() - 1600.0).abs() < 1e-6);
    }
}

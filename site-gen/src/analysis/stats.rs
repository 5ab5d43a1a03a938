//! The few statistics the site needs: medians, spreads and rank correlation.

/// Median of `values` (the mean of the middle two for an even count); None when empty.
pub fn median(values: &[f64]) -> Option<f64> {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

/// Ranks starting at 1, ties given the mean of the ranks they span.
#[cfg(test)]
pub(crate) fn ranks(values: &[f64]) -> Vec<f64> {
    let mut idx: Vec<usize> = (0..values.len()).collect();
    idx.sort_by(|&a, &b| values[a].total_cmp(&values[b]));
    let mut out = vec![0.0; values.len()];
    let mut i = 0;
    while i < idx.len() {
        let mut j = i;
        while j + 1 < idx.len() && values[idx[j + 1]] == values[idx[i]] {
            j += 1;
        }
        let rank = (i + j) as f64 / 2.0 + 1.0;
        for &k in &idx[i..=j] {
            out[k] = rank;
        }
        i = j + 1;
    }
    out
}

/// Pearson correlation; None when fewer than 3 pairs or either side is constant.
#[cfg(test)]
pub(crate) fn pearson(x: &[f64], y: &[f64]) -> Option<f64> {
    let n = x.len();
    if n < 3 || n != y.len() {
        return None;
    }
    let mx = x.iter().sum::<f64>() / n as f64;
    let my = y.iter().sum::<f64>() / n as f64;
    let (mut sxy, mut sxx, mut syy) = (0.0, 0.0, 0.0);
    for (a, b) in x.iter().zip(y) {
        sxy += (a - mx) * (b - my);
        sxx += (a - mx) * (a - mx);
        syy += (b - my) * (b - my);
    }
    if sxx == 0.0 || syy == 0.0 {
        return None;
    }
    Some(sxy / (sxx * syy).sqrt())
}

/// Spearman's rank correlation (Pearson on tie-averaged ranks).
#[cfg(test)]
pub(crate) fn spearman(x: &[f64], y: &[f64]) -> Option<f64> {
    pearson(&ranks(x), &ranks(y))
}

/// A figure with three significant digits and thousands separators: 12,120 / 401 / 2.35 / 0.31
/// (the one formatter of the terminal, the summary and the site: `record::units`).
pub fn fmt_sig(v: f64) -> String {
    record::units::format_figure(v)
}

fn group_thousands(n: i64) -> String {
    let out = record::units::group_thousands(n.unsigned_abs());
    if n < 0 { format!("-{out}") } else { out }
}

/// A latency in nanoseconds as people read it: 310 ns, 78.1 µs, 1.84 ms, 2.1 s.
pub fn fmt_ns(ns: f64) -> String {
    if !ns.is_finite() || ns < 0.0 {
        return "n/a".into();
    }
    record::units::format_ns(ns.round() as u64)
}

/// A ratio as "7.0 x" (one decimal below 100, none above).
pub fn fmt_ratio(r: f64) -> String {
    if r >= 100.0 {
        format!("{} x", group_thousands(r.round() as i64))
    } else {
        format!("{r:.1} x")
    }
}

/// A ratio of times as "7.49x" (two decimals); an absurd one (a broken record) with
/// [`fmt_sig`]'s digits, never 300 of them.
pub fn fmt_times(r: f64) -> String {
    if r.is_finite() && r.abs() < 1e4 {
        format!("{r:.2}x")
    } else {
        format!("{}x", fmt_sig(r))
    }
}

/// Seconds as "95.2 s" / "1.3 s" / "0.21 s".
pub fn fmt_s(s: f64) -> String {
    format!("{} s", fmt_sig(s))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians() {
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), Some(2.5));
    }

    #[test]
    fn spearman_known_values() {
        let x = [1.0, 2.0, 3.0, 4.0, 5.0];
        assert!((spearman(&x, &[10.0, 20.0, 30.0, 40.0, 50.0]).unwrap() - 1.0).abs() < 1e-12);
        assert!((spearman(&x, &[5.0, 4.0, 3.0, 2.0, 1.0]).unwrap() + 1.0).abs() < 1e-12);
        // Monotone but not linear: still 1.
        assert!((spearman(&x, &[1.0, 8.0, 27.0, 64.0, 1e6]).unwrap() - 1.0).abs() < 1e-12);
        // Textbook example with d^2 = 4 (n = 5): rho = 1 - 6*4/(5*24) = 0.8.
        let r = spearman(&x, &[2.0, 1.0, 4.0, 3.0, 5.0]).unwrap();
        assert!((r - 0.8).abs() < 1e-12, "{r}");
        assert_eq!(ranks(&[1.0, 2.0, 2.0, 3.0]), vec![1.0, 2.5, 2.5, 4.0]);
        assert_eq!(spearman(&[1.0, 1.0, 1.0], &[1.0, 2.0, 3.0]), None);
    }

    #[test]
    fn formats() {
        assert_eq!(fmt_sig(12120.4), "12,120");
        assert_eq!(fmt_sig(401.2), "401");
        assert_eq!(fmt_sig(2.345), "2.35");
        assert_eq!(fmt_sig(1234567.0), "1,234,567");
        assert_eq!(fmt_ns(313_300.0), "313 µs");
        assert_eq!(fmt_ns(500.0), "500 ns");
        assert_eq!(fmt_ns(1_840_000.0), "1.84 ms");
        assert_eq!(fmt_ratio(6.96), "7.0 x");
    }
}

//! How figures are written for people, the same in the terminal, the job summary and the site.

/// Nanoseconds to three significant figures in the largest unit that keeps the figure under
/// 1000: "850 ns", "85.3 µs", "1.23 ms", "2.50 s" (999_960 ns is "1.00 ms", not "1000 µs").
pub fn format_ns(ns: u64) -> String {
    if ns < 1_000 {
        return format!("{ns} ns");
    }
    const UNITS: [(f64, &str); 3] = [(1e3, "µs"), (1e6, "ms"), (1e9, "s")];
    for (i, (scale, unit)) in UNITS.iter().enumerate() {
        let value = ns as f64 / scale;
        if three_figures(value).parse::<f64>().unwrap_or(0.0) < 1000.0 || i == UNITS.len() - 1 {
            return format!("{} {unit}", three_figures(value));
        }
    }
    unreachable!("the last unit always returns")
}

/// A value to three significant figures (for values from 1 to 999.5).
pub fn three_figures(value: f64) -> String {
    // Decide the decimals on the rounded value, so 9.996 is "10.0", not "10.00".
    if format!("{value:.1}").parse::<f64>().unwrap_or(0.0) >= 100.0 {
        format!("{value:.0}")
    } else if format!("{value:.2}").parse::<f64>().unwrap_or(0.0) >= 10.0 {
        format!("{value:.1}")
    } else {
        format!("{value:.2}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latencies_read_well() {
        assert_eq!(format_ns(850), "850 ns");
        assert_eq!(format_ns(12_340), "12.3 µs");
        assert_eq!(format_ns(85_300), "85.3 µs");
        assert_eq!(format_ns(1_234_567), "1.23 ms");
        assert_eq!(format_ns(2_500_000_000), "2.50 s");
        assert_eq!(format_ns(999_960), "1.00 ms");
        assert_eq!(format_ns(9_996), "10.0 µs");
        assert_eq!(format_ns(99_960), "100 µs");
    }
}

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

/// A figure (MiB/s, IOPS, ops/s, GiB) as the terminal, the Markdown summary and the site all
/// write it: whole with thousands separators from 1000 up ("22,228"), three significant
/// figures from 1 ("401", "54.3", "2.35"), two below ("0.31", "0.050", "0.0052").
pub fn format_figure(value: f64) -> String {
    if !value.is_finite() {
        return "n/a".into();
    }
    let a = value.abs();
    let sign = if value < 0.0 { "-" } else { "" };
    // Beyond any disk's figure either way (a hostile or broken record): three significant
    // figures in scientific notation, never a 300-digit number or one cut at u64.
    if a >= 1e15 || (a > 0.0 && a < 1e-4) {
        return format!("{sign}{a:.2e}");
    }
    if format!("{a:.0}").parse::<f64>().unwrap_or(0.0) >= 1000.0 {
        format!("{sign}{}", group_thousands(a.round() as u64))
    } else if a >= 0.9995 {
        format!("{sign}{}", three_figures(a))
    } else if a == 0.0 {
        "0".into()
    } else {
        let decimals = (1 - a.log10().floor() as i32).max(2) as usize;
        format!("{sign}{a:.decimals$}")
    }
}

/// A whole number with thousands separators: 1234567 -> "1,234,567".
pub fn group_thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

/// A duration in seconds, with [`format_figure`]'s digits: "154 s", "2.35 s", "0.050 s".
pub fn format_s(seconds: f64) -> String {
    format!("{} s", format_figure(seconds))
}

/// A step's CPU figure, defined once and written the same in the terminal, the verdict, the
/// Markdown summary and the site: "cores busy" = CPU time (user + system) / wall time, e.g.
/// "1.82 of 2" (of the machine's vCPUs, when known). Not a percentage: a parallel build keeps
/// more than one core busy, and "111%" read as more than the machine.
pub fn format_cores_busy(cpu_s: f64, wall_s: f64, vcpus: Option<u32>) -> String {
    if wall_s.is_nan() || wall_s <= 0.0 || !cpu_s.is_finite() {
        return "n/a".into();
    }
    let cores = cpu_s / wall_s;
    match vcpus.filter(|v| *v > 0) {
        Some(v) => format!("{cores:.2} of {v}"),
        None => format!("{cores:.2}"),
    }
}

/// The name of [`format_cores_busy`]'s figure, for headers and sentences.
pub const CORES_BUSY: &str = "cores busy";
/// How [`CORES_BUSY`] is computed, for a tooltip or a footnote.
pub const CORES_BUSY_MEANS: &str = "CPU time / wall time";

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

    #[test]
    fn figures_read_the_same_everywhere() {
        assert_eq!(format_figure(22228.4), "22,228");
        assert_eq!(format_figure(1_234_567.0), "1,234,567");
        assert_eq!(format_figure(999.6), "1,000");
        assert_eq!(format_figure(401.2), "401");
        assert_eq!(format_figure(54.321), "54.3");
        assert_eq!(format_figure(2.345), "2.35");
        assert_eq!(format_figure(0.31), "0.31");
        assert_eq!(format_figure(0.05), "0.050");
        assert_eq!(format_figure(0.0052), "0.0052");
        assert_eq!(format_figure(0.0), "0");
        assert_eq!(format_figure(-1500.0), "-1,500");
        assert_eq!(format_figure(f64::NAN), "n/a");
        assert_eq!(format_figure(1e308), "1.00e308");
        assert_eq!(format_figure(f64::MAX), "1.80e308");
        assert_eq!(format_figure(5e-324), "4.94e-324");
        assert_eq!(format_figure(-1e300), "-1.00e300");
        assert!(format_figure(1e-300).len() < 12);
        assert_eq!(format_s(0.05), "0.050 s");
        assert_eq!(format_s(154.2), "154 s");
        assert_eq!(format_cores_busy(2.22, 2.0, Some(2)), "1.11 of 2");
        assert_eq!(format_cores_busy(0.9, 2.0, None), "0.45");
        assert_eq!(format_cores_busy(1.0, 0.0, Some(2)), "n/a");
    }
}

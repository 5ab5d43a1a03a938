//! A runner's latency distribution: one CDF line per column on a log latency axis.

use std::fmt::Write as _;

use hdrhistogram::Histogram as HdrHistogram;
use record::ColumnId;

use super::{Axis, in_range, open};

/// One colour per column, readable on light and dark backgrounds.
const COLUMN_COLOURS: [&str; 6] = [
    "#2563eb", // seq-read: blue
    "#7c3aed", // seq-write: violet
    "#059669", // rand-read: green
    "#d97706", // rand-write: amber
    "#dc2626", // qd1-read: red
    "#db2777", // sync-write: pink
];

pub(crate) fn column_colour_css(c: ColumnId) -> &'static str {
    COLUMN_COLOURS[crate::data::model::col_index(c)]
}

/// The quantiles a CDF is drawn through: dense in the body, and out into the tail.
fn cdf_quantiles() -> Vec<f64> {
    let mut q: Vec<f64> = (0..=50).map(|i| i as f64 / 50.0 * 0.98).collect();
    q.extend([
        0.985, 0.99, 0.992, 0.994, 0.996, 0.998, 0.999, 0.9995, 0.9999, 1.0,
    ]);
    q
}

/// CDF points (latency ns, percent) of a histogram.
pub(crate) fn cdf_points(h: &HdrHistogram<u64>) -> Vec<(f64, f64)> {
    let qs = cdf_quantiles();
    // One pass over the counts for all quantiles (they are ascending).
    h.value_at_quantiles(qs.iter().copied())
        .zip(&qs)
        .map(|(v, q)| (v.max(1) as f64, q * 100.0))
        .collect()
}

const W: f64 = 960.0;
const H: f64 = 400.0;
/// The plot area inside the labels.
const LEFT: f64 = 76.0;
const RIGHT: f64 = 947.0;
const TOP: f64 = 12.0;
const BOTTOM: f64 = 339.0;
const GREY: &str = "#808080";
const FONT: &str = "font-family=\"sans-serif\" font-size=\"14\"";

/// Axis labels: "10 µs", "1 ms", "100 ns" (no trailing zeros).
fn axis_ns(ns: f64) -> String {
    let (v, unit) = if ns >= 1e9 {
        (ns / 1e9, "s")
    } else if ns >= 1e6 {
        (ns / 1e6, "ms")
    } else if ns >= 1e3 {
        (ns / 1e3, "µs")
    } else {
        (ns, "ns")
    };
    let s = format!("{v:.2}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    format!("{s} {unit}")
}

/// A log range padded to whole-ish decades around [lo, hi].
fn nice_log_range(lo: f64, hi: f64) -> (f64, f64) {
    let lo = lo.clamp(super::PLOT_MIN, super::PLOT_MAX);
    let hi = hi.clamp(lo, super::PLOT_MAX);
    let hi = hi.max(lo * 1.01);
    let l = 10f64.powf((lo.log10() - 0.05).floor().min(lo.log10() - 0.1));
    let h = 10f64.powf(hi.log10() + 0.1);
    (l, h)
}

/// Latency CDFs on a log axis, one line per column (None: no latency to draw).
pub(crate) fn cdf_svg(series: &[(ColumnId, Vec<(f64, f64)>)]) -> Option<String> {
    // Only latency (x) is on a log axis; the percent (y) may be 0.
    let series: Vec<(ColumnId, Vec<(f64, f64)>)> = series
        .iter()
        .map(|(c, p)| {
            let pts = p
                .iter()
                .copied()
                .filter(|&(x, y)| in_range(x) && y.is_finite())
                .collect();
            (*c, pts)
        })
        .collect();
    let xs = || series.iter().flat_map(|(_, p)| p.iter().map(|x| x.0));
    let lo = xs().fold(f64::INFINITY, f64::min);
    let hi = xs().fold(0.0, f64::max);
    if !(lo.is_finite() && hi > 0.0) {
        return None;
    }
    let (lo, hi) = nice_log_range(lo, hi);
    let x = Axis {
        lo,
        hi,
        log: true,
        from: LEFT,
        to: RIGHT,
    };
    let y = Axis {
        lo: 0.0,
        hi: 100.0,
        log: false,
        from: BOTTOM,
        to: TOP,
    };
    let mut svg = open("chart", "Latency distribution", W, H);
    let line = |svg: &mut String, opacity: f64, (x1, y1, x2, y2): (f64, f64, f64, f64)| {
        let _ = write!(
            svg,
            "<line opacity=\"{opacity}\" stroke=\"{GREY}\" x1=\"{x1:.0}\" y1=\"{y1:.0}\" x2=\"{x2:.0}\" y2=\"{y2:.0}\"/>"
        );
    };
    // The grid: every 1..9 x 10^k faint, each decade and each 10% stronger and labelled. A
    // range inside one decade also labels 2x and 5x, so the axis never has a single label.
    let decades = (lo.log10().ceil() as i32..=hi.log10().floor() as i32).count();
    for k in lo.log10().floor() as i32..=hi.log10().ceil() as i32 {
        for m in 1..10 {
            let v = f64::from(m) * 10f64.powi(k);
            if !(lo..=hi).contains(&v) {
                continue;
            }
            let px = x.at(v);
            line(
                &mut svg,
                if m == 1 { 0.25 } else { 0.08 },
                (px, BOTTOM, px, TOP),
            );
            if m == 1 || (decades < 2 && (m == 2 || m == 5)) {
                let _ = write!(
                    svg,
                    "<text x=\"{px:.0}\" y=\"{:.0}\" text-anchor=\"middle\" {FONT} fill=\"{GREY}\">{}</text>",
                    BOTTOM + 26.0,
                    axis_ns(v)
                );
            }
        }
    }
    for pct in (0..=100).step_by(10) {
        let py = y.at(f64::from(pct));
        line(&mut svg, 0.25, (LEFT, py, RIGHT, py));
        let _ = write!(
            svg,
            "<text x=\"{:.0}\" y=\"{:.0}\" text-anchor=\"end\" {FONT} fill=\"{GREY}\">{pct}%</text>",
            LEFT - 10.0,
            py + 5.0
        );
    }
    line(&mut svg, 1.0, (LEFT, BOTTOM, LEFT, TOP));
    line(&mut svg, 1.0, (LEFT, BOTTOM, RIGHT, BOTTOM));
    let _ = write!(
        svg,
        "<text x=\"{:.0}\" y=\"{:.0}\" text-anchor=\"middle\" {FONT} fill=\"{GREY}\">latency, issue to completion (log scale)</text>\
         <text x=\"22\" y=\"{mid:.0}\" text-anchor=\"middle\" {FONT} fill=\"{GREY}\" transform=\"rotate(270, 22, {mid:.0})\">% of operations at or below</text>",
        (LEFT + RIGHT) / 2.0,
        H - 8.0,
        mid = (TOP + BOTTOM) / 2.0
    );
    for (c, pts) in &series {
        let points: Vec<String> = pts
            .iter()
            .map(|&(ns, pct)| format!("{:.0},{:.0}", x.at(ns), y.at(pct)))
            .collect();
        let _ = write!(
            svg,
            "<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"2\" points=\"{}\"><title>{}</title></polyline>",
            column_colour_css(*c),
            points.join(" "),
            c.as_str()
        );
    }
    svg.push_str("</svg>");
    Some(svg)
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine as _;
    use hdrhistogram::serialization::{Deserializer, Serializer as _, V2DeflateSerializer};

    #[test]
    fn cdf_from_a_recorded_histogram() {
        let mut h = HdrHistogram::<u64>::new_with_bounds(1, 60_000_000_000, 3).unwrap();
        for v in 1..=1000u64 {
            h.record(v * 1000).unwrap();
        }
        let mut buf = Vec::new();
        V2DeflateSerializer::new().serialize(&h, &mut buf).unwrap();
        let b64 = base64::engine::general_purpose::STANDARD.encode(buf);
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(&b64)
            .unwrap();
        let back: HdrHistogram<u64> = Deserializer::new()
            .deserialize(&mut bytes.as_slice())
            .unwrap();
        assert_eq!(back.len(), 1000);
        let pts = cdf_points(&back);
        assert!(pts.windows(2).all(|w| w[0].0 <= w[1].0 && w[0].1 <= w[1].1));
        let p50 = pts.iter().find(|p| (p.1 - 49.0).abs() < 0.5).unwrap().0;
        assert!((480_000.0..=510_000.0).contains(&p50), "{p50}");
        let svg = cdf_svg(&[(ColumnId::Qd1Read, pts)]).unwrap();
        assert!(svg.starts_with("<svg role=\"img\" aria-label=\"Latency distribution\""));
        assert!(svg.contains("viewBox"));
        assert!(!svg[..svg.find('>').unwrap()].contains(" width=\""));
        // Decades labelled where the data is (1 µs to 1 ms here), the line named.
        assert!(
            svg.contains(">10 µs</text>") && svg.contains(">100 µs</text>"),
            "{svg}"
        );
        assert!(svg.contains(">50%</text>") && svg.contains("<title>qd1-read</title>"));
    }

    #[test]
    fn absurd_figures_are_left_out_not_drawn() {
        // The pair that sent a log-scale axis into an endless loop, and its cousins.
        let absurd = [
            (1e308, 10.0),
            (5e-324, 12.0),
            (f64::MAX, 50.0),
            (0.0, 60.0),
            (-1.0, 70.0),
            (f64::NAN, 80.0),
            (f64::INFINITY, 90.0),
        ];
        assert!(cdf_svg(&[(ColumnId::Qd1Read, absurd.to_vec())]).is_none());
        let mut mixed = absurd.to_vec();
        mixed.extend([(300.0, 11.0), (3000.0, 14.0)]);
        let svg = cdf_svg(&[(ColumnId::Qd1Read, mixed)]).unwrap();
        let line = &svg[svg.find("<polyline").unwrap()..];
        let points = &line[line.find("points=\"").unwrap() + 8..];
        assert_eq!(
            points[..points.find('"').unwrap()].split(' ').count(),
            2,
            "{svg}"
        );
    }
}

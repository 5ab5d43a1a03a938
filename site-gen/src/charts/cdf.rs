//! Charts drawn with plotters into SVG strings that the pages inline (so CSS can restyle text
//! and grid for dark mode). No fonts are loaded: text is SVG `<text>`, laid out by the browser.

use anyhow::{Result, anyhow};
#[cfg(test)]
use base64::Engine as _;
use hdrhistogram::Histogram as HdrHistogram;
#[cfg(test)]
use hdrhistogram::serialization::Deserializer;
use plotters::prelude::*;
use record::ColumnId;

/// One colour per column, readable on light and dark backgrounds.
pub(crate) const COLUMN_COLOURS: [(u8, u8, u8); 6] = [
    (37, 99, 235),  // seq-read: blue
    (124, 58, 237), // seq-write: violet
    (5, 150, 105),  // rand-read: green
    (217, 119, 6),  // rand-write: amber
    (220, 38, 38),  // qd1-read: red
    (219, 39, 119), // sync-write: pink
];

pub(crate) fn column_colour_css(c: ColumnId) -> String {
    let (r, g, b) = COLUMN_COLOURS[crate::data::model::col_index(c)];
    format!("#{r:02x}{g:02x}{b:02x}")
}

/// Decode a stored histogram (base64 of HDR V2 + deflate).
#[cfg(test)]
pub(crate) fn decode_hist(b64: &str, de: &mut Deserializer) -> Option<HdrHistogram<u64>> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(b64.trim())
        .ok()?;
    de.deserialize(&mut bytes.as_slice()).ok()
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

fn err(e: impl std::fmt::Display) -> anyhow::Error {
    anyhow!("drawing a chart: {e}")
}

const AXIS_GREY: RGBColor = RGBColor(128, 128, 128);

/// Latency CDFs on a log axis, one line per column.
pub(crate) fn cdf_svg(series: &[(ColumnId, Vec<(f64, f64)>)]) -> Result<String> {
    let series: Vec<(ColumnId, Vec<(f64, f64)>)> = series
        .iter()
        .map(|(c, p)| {
            // Only latency (x) is on a log axis; the percent (y) may be 0.
            let pts = p
                .iter()
                .copied()
                .filter(|&(x, y)| plottable(&[(x, 1.0)]).1 == 0 && y.is_finite())
                .collect();
            (*c, pts)
        })
        .collect();
    let series = series.as_slice();
    let lo = series
        .iter()
        .flat_map(|(_, p)| p.iter().map(|x| x.0))
        .fold(f64::INFINITY, f64::min);
    let hi = series
        .iter()
        .flat_map(|(_, p)| p.iter().map(|x| x.0))
        .fold(0.0, f64::max);
    if !(lo.is_finite() && hi > 0.0) {
        return Err(anyhow!("no latency data"));
    }
    let (lo, hi) = nice_log_range(lo, hi);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (960, 400)).into_drawing_area();
        let mut chart = ChartBuilder::on(&root)
            .margin(12)
            .x_label_area_size(48)
            .y_label_area_size(64)
            .build_cartesian_2d((lo..hi).log_scale(), 0f64..100f64)
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc("latency, issue to completion (log scale)")
            .y_desc("% of operations at or below")
            .x_label_formatter(&|v| axis_ns(*v))
            .y_label_formatter(&|v| format!("{v:.0}%"))
            .label_style(("sans-serif", 17).into_font().color(&AXIS_GREY))
            .axis_desc_style(("sans-serif", 17).into_font().color(&AXIS_GREY))
            .axis_style(AXIS_GREY)
            .bold_line_style(AXIS_GREY.mix(0.25))
            .light_line_style(AXIS_GREY.mix(0.08))
            .draw()
            .map_err(err)?;
        for (c, pts) in series {
            let (r, g, b) = COLUMN_COLOURS[crate::data::model::col_index(*c)];
            chart
                .draw_series(LineSeries::new(
                    pts.iter().copied(),
                    RGBColor(r, g, b).stroke_width(2),
                ))
                .map_err(err)?;
        }
        root.present().map_err(err)?;
    }
    Ok(responsive(svg, "Latency distribution"))
}

/// The smallest and largest figure a chart axis takes. Records are checked for negative and
/// non-finite figures when loaded, but a finite figure can still be absurd (1e308, 5e-324):
/// plotters' log axis then walks hundreds of decades (or never ends), so every chart gets only
/// points inside this range and says how many it left out.
pub(crate) const PLOT_MIN: f64 = 1e-6;
pub(crate) const PLOT_MAX: f64 = 1e12;

/// The points with both coordinates finite and inside [`PLOT_MIN`]..=[`PLOT_MAX`], and how
/// many were left out.
pub(crate) fn plottable(points: &[(f64, f64)]) -> (Vec<(f64, f64)>, usize) {
    let ok = |v: f64| v.is_finite() && (PLOT_MIN..=PLOT_MAX).contains(&v);
    let kept: Vec<(f64, f64)> = points
        .iter()
        .copied()
        .filter(|&(x, y)| ok(x) && ok(y))
        .collect();
    let left_out = points.len() - kept.len();
    (kept, left_out)
}

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
    let lo = lo.clamp(PLOT_MIN, PLOT_MAX);
    let hi = hi.clamp(lo, PLOT_MAX);
    let hi = hi.max(lo * 1.01);
    let l = 10f64.powf((lo.log10() - 0.05).floor().min(lo.log10() - 0.1));
    let h = 10f64.powf(hi.log10() + 0.1);
    (l, h)
}

/// Make the fixed-size SVG scale with its container and give it an accessible name.
fn responsive(svg: String, title: &str) -> String {
    let svg = svg.replacen(
        "<svg ",
        &format!(
            "<svg role=\"img\" aria-label=\"{}\" preserveAspectRatio=\"xMidYMid meet\" class=\"chart\" ",
            crate::pages::html::esc(title)
        ),
        1,
    );
    // Plotters writes width/height attributes; keep the viewBox and let CSS size it.
    strip_size_attrs(&svg)
}

fn strip_size_attrs(svg: &str) -> String {
    let end = svg.find('>').unwrap_or(0);
    let (head, rest) = svg.split_at(end);
    let mut head = head.to_string();
    for attr in ["width", "height"] {
        let pat = format!(" {attr}=\"");
        if let Some(start) = head.find(&pat) {
            let value_start = start + pat.len();
            if let Some(len) = head[value_start..].find('"') {
                head.replace_range(start..value_start + len + 1, "");
            }
        }
    }
    head + rest
}

#[cfg(test)]
mod tests {
    use super::*;
    use hdrhistogram::serialization::{Serializer as _, V2DeflateSerializer};

    #[test]
    fn cdf_from_a_recorded_histogram() {
        let mut h = HdrHistogram::<u64>::new_with_bounds(1, 60_000_000_000, 3).unwrap();
        for v in 1..=1000u64 {
            h.record(v * 1000).unwrap();
        }
        let mut buf = Vec::new();
        V2DeflateSerializer::new().serialize(&h, &mut buf).unwrap();
        let b64 = base64::engine::general_purpose::STANDARD.encode(buf);
        let back = decode_hist(&b64, &mut Deserializer::new()).unwrap();
        assert_eq!(back.len(), 1000);
        let pts = cdf_points(&back);
        assert!(pts.windows(2).all(|w| w[0].0 <= w[1].0 && w[0].1 <= w[1].1));
        let p50 = pts.iter().find(|p| (p.1 - 49.0).abs() < 0.5).unwrap().0;
        assert!((480_000.0..=510_000.0).contains(&p50), "{p50}");
        let svg = cdf_svg(&[(ColumnId::Qd1Read, pts)]).unwrap();
        assert!(svg.starts_with("<svg role=\"img\""));
        assert!(svg.contains("viewBox"));
        assert!(!svg[..svg.find('>').unwrap()].contains(" width=\""));
        assert!(decode_hist("not base64!", &mut Deserializer::new()).is_none());
    }

    #[test]
    fn absurd_figures_are_left_out_not_drawn() {
        // The pair that sent the log-scale scatter into an endless loop, and its cousins.
        for pts in [
            vec![(1e308, 10.0), (5e-324, 12.0)],
            vec![(1e308, 10.0), (5e-324, 12.0), (300.0, 11.0), (3000.0, 14.0)],
            vec![
                (f64::MAX, f64::MAX),
                (f64::MIN_POSITIVE, 1.0),
                (100.0, 1e300),
            ],
            vec![
                (0.0, 0.0),
                (-1.0, 5.0),
                (f64::NAN, 1.0),
                (f64::INFINITY, 1.0),
            ],
        ] {
            let (kept, left_out) = plottable(&pts);
            assert_eq!(kept.len() + left_out, pts.len());
            assert!(
                kept.iter().all(|&(x, y)| (PLOT_MIN..=PLOT_MAX).contains(&x)
                    && (PLOT_MIN..=PLOT_MAX).contains(&y)),
                "{kept:?}"
            );
        }
        assert!(cdf_svg(&[(ColumnId::Qd1Read, vec![(1e308, 50.0), (5e-324, 99.0)])]).is_err());
    }
}

//! Scatter plots of a step's time against a figure, one point per runner, drawn as plain SVG:
//! each point is marked by its storage class (shape and colour) and carries a `<title>` with
//! the runner, its class and both values, so it can be read without hovering or scripts.

use std::fmt::Write as _;

use record::StorageClass;

use super::{Axis, in_range, open};
use crate::analysis::correlation::Point;
use crate::analysis::stats::fmt_sig;
use crate::pages::html::esc;

const W: f64 = 360.0;
const H: f64 = 250.0;
const LEFT: f64 = 52.0;
const RIGHT: f64 = 10.0;
const TOP: f64 = 10.0;
const BOTTOM: f64 = 62.0;

/// Colour and shape of a storage class's points.
fn marker(class: StorageClass) -> (&'static str, &'static str) {
    match class {
        StorageClass::Tmpfs => ("#7c3aed", "diamond"),
        StorageClass::LocalNvme => ("#059669", "circle"),
        StorageClass::Ebs => ("#d97706", "square"),
        StorageClass::NetworkDisk => ("#2563eb", "triangle"),
        StorageClass::VmDisk => ("#0891b2", "down"),
        StorageClass::Unknown => ("#6b7280", "cross"),
    }
}

fn shape(out: &mut String, kind: &str, x: f64, y: f64, colour: &str) {
    let r = 5.0;
    let _ = match kind {
        "circle" => write!(
            out,
            "<circle cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"{r}\" fill=\"{colour}\"/>"
        ),
        "square" => write!(
            out,
            "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"{}\" height=\"{}\" fill=\"{colour}\"/>",
            x - r + 0.5,
            y - r + 0.5,
            2.0 * r - 1.0,
            2.0 * r - 1.0
        ),
        "diamond" => write!(
            out,
            "<path d=\"M{x:.1} {:.1}L{:.1} {y:.1}L{x:.1} {:.1}L{:.1} {y:.1}Z\" fill=\"{colour}\"/>",
            y - r - 1.0,
            x + r + 1.0,
            y + r + 1.0,
            x - r - 1.0
        ),
        "triangle" => write!(
            out,
            "<path d=\"M{x:.1} {:.1}L{:.1} {:.1}L{:.1} {:.1}Z\" fill=\"{colour}\"/>",
            y - r - 1.0,
            x + r + 1.0,
            y + r,
            x - r - 1.0,
            y + r
        ),
        "down" => write!(
            out,
            "<path d=\"M{x:.1} {:.1}L{:.1} {:.1}L{:.1} {:.1}Z\" fill=\"{colour}\"/>",
            y + r + 1.0,
            x + r + 1.0,
            y - r,
            x - r - 1.0,
            y - r
        ),
        _ => write!(
            out,
            "<path d=\"M{:.1} {:.1}L{:.1} {:.1}M{:.1} {:.1}L{:.1} {:.1}\" stroke=\"{colour}\" stroke-width=\"2.5\"/>",
            x - r,
            y - r,
            x + r,
            y + r,
            x - r,
            y + r,
            x + r,
            y - r
        ),
    };
}

/// How many of `points` a scatter leaves out (absurd figures or times).
pub(crate) fn left_out(points: &[Point]) -> usize {
    points
        .iter()
        .filter(|p| !(in_range(p.x) && p.time_s.is_finite() && p.time_s >= 0.0 && p.time_s < 1e9))
        .count()
}

/// A scatter of `points` (figure on x, step time on y). `x_title` names the figure, `x_unit` its
/// unit. None when fewer than two points have finite, positive figures.
pub fn scatter_svg(points: &[Point], x_title: &str, x_unit: &str, step: &str) -> Option<String> {
    // Only finite, positive, bounded figures are drawn: an absurd figure must not blow up the
    // axis (it is still in the table).
    let pts: Vec<&Point> = points
        .iter()
        .filter(|p| in_range(p.x))
        .filter(|p| p.time_s.is_finite() && p.time_s >= 0.0 && p.time_s < 1e9)
        .collect();
    if pts.len() < 2 {
        return None;
    }
    let x_lo = pts.iter().map(|p| p.x).fold(f64::INFINITY, f64::min);
    let x_hi = pts.iter().map(|p| p.x).fold(0.0, f64::max);
    let t_hi = pts.iter().map(|p| p.time_s).fold(0.0, f64::max).max(1e-3);
    let log_x = x_hi > 10.0 * x_lo;
    let (xl, xh) = if log_x {
        (x_lo / 1.4, x_hi * 1.4)
    } else {
        let pad = ((x_hi - x_lo) * 0.1).max(x_hi * 0.05);
        ((x_lo - pad).max(0.0), x_hi + pad)
    };
    let (yl, yh) = (0.0, t_hi * 1.1);
    let pw = W - LEFT - RIGHT;
    let ph = H - TOP - BOTTOM;
    let x_axis = Axis {
        lo: xl,
        hi: xh,
        log: log_x,
        from: LEFT,
        to: LEFT + pw,
    };
    let y_axis = Axis {
        lo: yl,
        hi: yh,
        log: false,
        from: TOP + ph,
        to: TOP,
    };
    let (sx, sy) = (|v| x_axis.at(v), |v| y_axis.at(v));
    let mut s = open(
        "chart scatter",
        &format!("{step}: time against {x_title}"),
        W,
        H,
    );
    let _ = write!(
        s,
        "<rect x=\"{LEFT}\" y=\"{TOP}\" width=\"{pw}\" height=\"{ph}\" fill=\"none\" stroke=\"#8888\"/>"
    );
    // Axis ticks: decades on a log axis, four steps otherwise.
    let mut xticks = Vec::new();
    if log_x {
        let mut d = xl.log10().ceil() as i32;
        while (d as f64) <= xh.log10() && xticks.len() < 12 {
            xticks.push(10f64.powi(d));
            d += 1;
        }
    } else {
        // Three labels: wider figures (CPU scores) would run into each other with more.
        xticks = (0..=2)
            .map(|i| xl + (xh - xl) * (0.1 + 0.4 * i as f64))
            .collect();
    }
    for v in xticks {
        let x = sx(v);
        let _ = write!(
            s,
            "<line x1=\"{x:.1}\" y1=\"{TOP}\" x2=\"{x:.1}\" y2=\"{:.1}\" stroke=\"#8882\"/><text x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"middle\" font-size=\"11\" fill=\"currentColor\">{}</text>",
            TOP + ph,
            TOP + ph + 14.0,
            fmt_sig(v)
        );
    }
    for i in 0..=4 {
        let v = yl + (yh - yl) * i as f64 / 4.0;
        let y = sy(v);
        let _ = write!(
            s,
            "<line x1=\"{LEFT}\" y1=\"{y:.1}\" x2=\"{:.1}\" y2=\"{y:.1}\" stroke=\"#8882\"/><text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\" font-size=\"11\" fill=\"currentColor\">{}</text>",
            LEFT + pw,
            LEFT - 4.0,
            y + 4.0,
            fmt_sig(v)
        );
    }
    let _ = write!(
        s,
        "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" font-size=\"12\" fill=\"currentColor\">{}</text>",
        LEFT + pw / 2.0,
        TOP + ph + 30.0,
        esc(&format!(
            "{x_title} ({x_unit}{})",
            if log_x { ", log" } else { "" }
        ))
    );
    let _ = write!(
        s,
        "<text transform=\"translate(13 {:.1}) rotate(-90)\" text-anchor=\"middle\" font-size=\"12\" fill=\"currentColor\">step time (s)</text>",
        TOP + ph / 2.0
    );
    for p in &pts {
        let (colour, kind) = marker(p.class);
        let _ = write!(
            s,
            "<g class=\"pt c-{}\"><title>{}</title>",
            p.class.as_str(),
            esc(&format!(
                "{} ({}{}): {} {x_unit}, {} s",
                p.label,
                p.class.as_str(),
                if p.imported { ", imported" } else { "" },
                fmt_sig(p.x),
                fmt_sig(p.time_s)
            ))
        );
        shape(&mut s, kind, sx(p.x), sy(p.time_s), colour);
        s.push_str("</g>");
    }
    // Legend: the classes on this plot, in the site's class order.
    let mut x = LEFT;
    for class in StorageClass::ALL {
        if !pts.iter().any(|p| p.class == class) {
            continue;
        }
        let (colour, kind) = marker(class);
        shape(&mut s, kind, x + 5.0, H - 10.0, colour);
        let _ = write!(
            s,
            "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"11\" fill=\"currentColor\">{}</text>",
            x + 13.0,
            H - 6.0,
            class.as_str()
        );
        x += 22.0 + 6.5 * class.as_str().len() as f64;
    }
    s.push_str("</svg>");
    Some(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pt(label: &str, class: StorageClass, x: f64, t: f64) -> Point {
        Point {
            label: label.into(),
            class,
            imported: true,
            x,
            time_s: t,
        }
    }

    #[test]
    fn points_carry_titles_and_class_markers_and_absurd_figures_are_left_out() {
        let pts = [
            pt("<b>a</b>", StorageClass::Tmpfs, 16_000.0, 8.0),
            pt("b", StorageClass::Ebs, 401.0, 21.0),
            pt("c", StorageClass::NetworkDisk, 199.0, 55.0),
            pt("absurd", StorageClass::Unknown, 1e308, 1.0),
            pt("nan", StorageClass::Unknown, f64::NAN, 1.0),
        ];
        let svg = scatter_svg(&pts, "Sequential read", "MiB/s", "bun install").unwrap();
        assert_eq!(svg.matches("<title>").count(), 3);
        assert!(svg.contains(
            "<title>&lt;b&gt;a&lt;/b&gt; (tmpfs, imported): 16,000 MiB/s, 8.00 s</title>"
        ));
        assert!(svg.contains("class=\"pt c-ebs\"") && svg.contains("<rect x="));
        assert!(svg.contains("MiB/s, log"));
        assert!(!svg.contains("absurd") && !svg.contains("NaN"));
        assert!(scatter_svg(&pts[..1], "x", "u", "s").is_none());
    }
}

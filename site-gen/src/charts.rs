//! Every chart of the site, drawn as SVG strings the pages inline (so CSS can restyle text and
//! grid for dark mode): a runner's latency CDF, its History charts and the steps page's
//! scatter plots. No fonts are loaded: text is SVG `<text>`, laid out by the browser. Every
//! chart is named for screen readers (`role="img"`, `aria-label`), and every point that
//! carries figures says them in a `<title>`.

mod cdf;
pub mod history;
pub mod scatter;

pub(crate) use cdf::{cdf_points, cdf_svg, column_colour_css};

use crate::pages::html::esc;

/// The smallest and largest figure a chart axis takes. Records are checked for negative and
/// non-finite figures when loaded, but a finite figure can still be absurd (1e308, 5e-324): a
/// log axis would then walk hundreds of decades, so every chart gets only points inside this
/// range and says how many it left out.
pub(crate) const PLOT_MIN: f64 = 1e-6;
pub(crate) const PLOT_MAX: f64 = 1e12;

/// Whether a figure can go on an axis: finite and inside [`PLOT_MIN`]..=[`PLOT_MAX`].
pub(crate) fn in_range(v: f64) -> bool {
    v.is_finite() && (PLOT_MIN..=PLOT_MAX).contains(&v)
}

/// A chart's opening tag: its accessible name, its CSS class and a viewBox (no width or
/// height: the page's CSS sizes it).
fn open(class: &str, label: &str, w: f64, h: f64) -> String {
    format!(
        "<svg role=\"img\" aria-label=\"{}\" class=\"{class}\" viewBox=\"0 0 {w} {h}\" xmlns=\"http://www.w3.org/2000/svg\">",
        esc(label)
    )
}

/// A linear or logarithmic axis: figures `lo..hi` onto pixels `from..to`.
#[derive(Clone, Copy, Debug)]
struct Axis {
    lo: f64,
    hi: f64,
    log: bool,
    from: f64,
    to: f64,
}

impl Axis {
    fn at(&self, v: f64) -> f64 {
        let f = if self.log {
            (v.ln() - self.lo.ln()) / (self.hi.ln() - self.lo.ln())
        } else {
            (v - self.lo) / (self.hi - self.lo)
        };
        self.from + f * (self.to - self.from)
    }
}

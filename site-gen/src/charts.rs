//! Every chart of the site, drawn as SVG strings the pages inline (so CSS can restyle text and
//! grid for dark mode). No fonts are loaded: text is SVG `<text>`, laid out by the browser.

mod cdf;
pub mod scatter;

pub(crate) use cdf::*;

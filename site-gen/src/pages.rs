//! What the site writes: pages rendered with tera from the theme, the content pages, the
//! `data/*.json` files, the Markdown summaries the CLI prints, and the output folder swapped in
//! whole.

pub mod compare_report;
pub(crate) mod content;
pub(crate) mod facts;
pub(crate) mod html;
pub mod job_summary;
pub(crate) mod render;
pub(crate) mod runner_steps;
pub(crate) mod runners_json;
pub mod site_folder;
pub(crate) mod steps_json;
pub(crate) mod steps_view;
pub(crate) mod theme;
#[cfg(test)]
mod weak_cases;

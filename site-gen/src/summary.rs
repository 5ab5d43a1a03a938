//! The Markdown summary of one run (GitHub's job summary, `--markdown FILE`).

use engine::record::Record;

/// Placeholder until the GitHub issue lands.
pub fn markdown(record: &Record) -> String {
    format!("## cargo-diskbench: {}\n", record.runner.label)
}

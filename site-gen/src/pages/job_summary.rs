//! The Markdown summary of one run: GitHub's job summary (`$GITHUB_STEP_SUMMARY`) and
//! `--markdown FILE`.
//!
//! Every string that comes from the record goes through [`escape`]: a runner label such as
//! `a|b` or `<script>` must neither break a table nor reach the page as HTML. GitHub sanitises
//! job summaries too, but a summary is also a file people paste elsewhere.

use std::fmt::Write as _;

use record::{ColumnId, Headline, Record, StepResult, StepStatus, TestResult};

/// The whole summary of `record`, ending in a newline.
pub fn markdown(record: &Record) -> String {
    let mut out = String::new();
    // A `--like` run is named as the emulation it is, never as the real disk.
    let label = escape(&record.runner_name());
    let _ = writeln!(out, "## cargo-diskbench: {label}\n");
    machine_section(&mut out, record);
    columns_section(&mut out, record);
    steps_section(&mut out, record);
    like_section(&mut out, record);
    what_if_section(&mut out, record);
    warnings_section(&mut out, record);
    footer(&mut out, record);
    out
}

/// Make `text` literal inside Markdown, table cells included: HTML is neutralised, the
/// characters that start emphasis, links, code or cells are backslash-escaped, and line
/// breaks become spaces (a newline would end the table row).
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for ch in text.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '\\' | '`' | '*' | '_' | '[' | ']' | '|' | '~' | '#' | '!' => {
                out.push('\\');
                out.push(ch);
            }
            '\r' | '\n' | '\t' => out.push(' '),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
}

/// The facts of [`record::machine_facts`]: a table per section, a row per fact (its items on
/// lines of their own where it has several).
fn machine_section(out: &mut String, record: &Record) {
    for (section, facts) in record::machine_facts::sections(&record.runner, &record.storage) {
        let _ = writeln!(out, "| {} | |\n|---|---|", section.title());
        for fact in facts {
            let value = fact
                .lines
                .iter()
                .map(|l| escape(l.trim()))
                .collect::<Vec<_>>()
                .join("<br>");
            let _ = writeln!(out, "| {} | {value} |", fact.name);
        }
        out.push('\n');
    }
}

fn columns_section(out: &mut String, record: &Record) {
    out.push_str("### Disk\n\n");
    if record.tests.is_empty() {
        out.push_str("No disk test ran.\n\n");
        return;
    }
    let limit = record::Provisioned::for_record(record);
    match &limit {
        Some(_) => out.push_str(
            "| Column | Result | p99 latency | Engine | Share of the provisioned limit |\n\
             |---|---:|---:|---|---|\n",
        ),
        None => out.push_str("| Column | Result | p99 latency | Engine |\n|---|---:|---:|---|\n"),
    }
    // The six columns in the site's order, then anything else (fio-syntax jobs) as recorded.
    let columns = ColumnId::ALL
        .into_iter()
        .filter_map(|c| record.test(c).map(|t| (Some(c), t)));
    let others = record
        .tests
        .iter()
        .filter(|t| t.column().is_none())
        .map(|t| (None, t));
    for (column, test) in columns.chain(others) {
        let name = match column {
            Some(c) => format!("{} (`{}`)", c.title(), c.as_str()),
            None => escape(&test.id),
        };
        let share = limit.as_ref().map(|l| {
            record::provisioned::share(l, test)
                .map(|s| format!(" {} |", escape(&s.describe())))
                .unwrap_or_else(|| " – |".into())
        });
        let _ = writeln!(
            out,
            "| {name} | {} | {} | {} |{}",
            result_cell(column, test),
            test.p99_ns().map(format_ns).unwrap_or_else(|| "–".into()),
            engine_cell(test),
            share.unwrap_or_default()
        );
    }
    out.push('\n');
    if let Some(l) = &limit {
        let _ = writeln!(
            out,
            "Provisioned limit: {:.0} IOPS, {:.1} MiB/s ({}). Within 5% of it is at the limit; \
             the same figure on volumes with different limits is a cap above the volume (the \
             instance's).\n",
            l.iops,
            l.bytes_s / 1_048_576.0,
            escape(&l.source)
        );
    }
}

fn result_cell(column: Option<ColumnId>, test: &TestResult) -> String {
    let Some(stats) = test.main_direction() else {
        return "no figures".into();
    };
    match column.map(ColumnId::headline) {
        Some(Headline::MibPerSecond) => format!("{} MiB/s", format_figure(stats.mib_s)),
        Some(Headline::Iops) => format!("{} IOPS", format_figure(stats.iops)),
        None => format!(
            "{} IOPS, {} MiB/s",
            format_figure(stats.iops),
            format_figure(stats.mib_s)
        ),
    }
}

fn engine_cell(test: &TestResult) -> String {
    let mut cell = escape(&test.engine.used);
    cell.push_str(if test.engine.direct {
        ", O_DIRECT"
    } else {
        ", buffered"
    });
    if test.engine.fallback.is_some() {
        cell.push_str(" (fallback)");
    }
    cell
}

fn steps_section(out: &mut String, record: &Record) {
    out.push_str("### Build steps\n\n");
    if record.steps.is_empty() {
        out.push_str("No build step ran.\n\n");
        return;
    }
    out.push_str(
        "| Step | Status | Wall time | Cores busy | Bound by | Why |\n|---|---|---:|---:|---|---|\n",
    );
    for step in &record.steps {
        let (status, wall, bound, why) = match step.status {
            // The experiment's verdict is the headline, on the time it stands on (its normal
            // runs' median); the one inferred from the step's waits is said beside it.
            StepStatus::Ok => match &step.what_if {
                Some(w) => (
                    "ok".to_string(),
                    format_s(w.baseline.as_ref().map_or(step.wall_s, |b| b.wall_s)),
                    format!(
                        "{} by experiment (inferred from waits: {})",
                        w.bound.as_str(),
                        step.bound.as_str()
                    ),
                    escape(&w.why),
                ),
                None => (
                    "ok".to_string(),
                    format_s(step.wall_s),
                    step.bound.as_str().to_string(),
                    escape(&step.why),
                ),
            },
            StepStatus::Failed => (
                match step.exit_code {
                    Some(code) => format!("failed (exit {code})"),
                    None => "failed".into(),
                },
                format_s(step.wall_s),
                "–".into(),
                escape(step.reason.as_deref().unwrap_or(&step.why)),
            ),
            StepStatus::Skipped => (
                "skipped".into(),
                "–".into(),
                "–".into(),
                escape(step.reason.as_deref().unwrap_or("no reason recorded")),
            ),
        };
        let cores = if step.status == StepStatus::Ok {
            record::units::format_cores_busy(
                step.user_s + step.sys_s,
                step.wall_s,
                Some(record.runner.vcpus),
            )
        } else {
            "–".into()
        };
        let _ = writeln!(
            out,
            "| {} | {status} | {wall} | {cores} | {bound} | {why} |",
            step_name(step)
        );
    }
    let _ = writeln!(
        out,
        "\n<sub>{}: {}, of the machine's vCPUs.</sub>",
        capitalised(record::units::CORES_BUSY),
        record::units::CORES_BUSY_MEANS
    );
    out.push('\n');
}

fn capitalised(text: &str) -> String {
    let mut chars = text.chars();
    chars
        .next()
        .map(|c| c.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}

/// `run --like LABEL`: per column, LABEL's figure beside the one measured under its caps.
fn like_section(out: &mut String, record: &Record) {
    let Some(like) = &record.settings.like else {
        return;
    };
    let _ = writeln!(
        out,
        "### Capped like {}\n\nThis disk under caps taken from {}'s figures ({}); caps only \
         slow a disk down.\n\n| Column | Target | Measured | Off |\n|---|---:|---:|---|",
        escape(&like.label),
        escape(&like.label),
        escape(&like.from)
    );
    for c in &like.columns {
        let f = |v: Option<f64>| v.map_or("–".to_string(), |v| format!("{v:.1}"));
        let off = if c.reproducible {
            c.off_pct.map_or("–".into(), |o| format!("{o:+.0}%"))
        } else {
            // The note of a one-at-a-time column says so itself, with the latency left out.
            if c.note.starts_with("not reproducible") {
                escape(&c.note)
            } else {
                format!("not reproducible: {}", escape(&c.note))
            }
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {off} |",
            escape(&c.id),
            f(c.target),
            f(c.measured)
        );
    }
    out.push('\n');
}

/// The what-if experiments: each condition's time against the normal run, and the verdict
/// by experiment beside the inferred one when they differ (the experiment outranks it).
fn what_if_section(out: &mut String, record: &Record) {
    let with: Vec<&StepResult> = record
        .steps
        .iter()
        .filter(|s| s.what_if.is_some())
        .collect();
    if with.is_empty() {
        return;
    }
    out.push_str("### What-if experiments\n\n| Step | Condition | Wall time | vs normal |\n|---|---|---:|---:|\n");
    for s in &with {
        let Some(w) = &s.what_if else { continue };
        if let Some(b) = &w.baseline {
            let _ = writeln!(
                out,
                "| {} | normal | {} | 1.00x |",
                step_name(s),
                format_s(b.wall_s)
            );
        }
        for c in &w.conditions {
            let vs = match c.ratio {
                // Slower than its caps can explain: never read as a prediction.
                Some(r) if c.disturbed => {
                    format!(
                        "{} (disturbed: not the caps)",
                        crate::analysis::stats::fmt_times(r)
                    )
                }
                Some(r) => crate::analysis::stats::fmt_times(r),
                None => "failed".to_string(),
            };
            let _ = writeln!(
                out,
                "| {} | {} | {} | {vs} |",
                step_name(s),
                escape(&c.id),
                format_s(c.wall_s)
            );
        }
    }
    out.push('\n');
    for s in &with {
        let Some(w) = &s.what_if else { continue };
        // The experiment's sentence is in the steps table; here, the secondary verdict's.
        let why = if s.why.trim().is_empty() {
            String::new()
        } else {
            format!(": {}", escape(&s.why))
        };
        let _ = writeln!(
            out,
            "- **{}**: {} by experiment, {} as inferred from waits{why}",
            step_name(s),
            w.bound.as_str(),
            s.bound.as_str(),
        );
    }
    // Notes every experiment of the run carries are said once, each step's own under it.
    let notes = record::what_if_notes::split(&record.steps);
    for (s, own) in record.steps.iter().zip(&notes.own) {
        for n in own {
            let _ = writeln!(
                out,
                "  - {}: {}",
                step_name(s),
                escape(&record::what_if_notes::sentences(n).join(" "))
            );
        }
    }
    if !notes.shared.is_empty() {
        out.push_str("\nEvery experiment of this run:\n\n");
        for n in &notes.shared {
            let _ = writeln!(
                out,
                "- {}",
                escape(&record::what_if_notes::sentences(n).join(" "))
            );
        }
    }
    out.push('\n');
}

/// The step's human name; its id when it has none.
fn step_name(step: &StepResult) -> String {
    if step.name.trim().is_empty() {
        escape(&step.id)
    } else {
        escape(&step.name)
    }
}

/// Everything that makes a figure mean less than it seems, one line each. Identical notes
/// of several columns (say, buffered I/O on tmpfs) are said once, naming the columns.
fn warnings(record: &Record) -> Vec<String> {
    let mut grouped: Vec<(String, Vec<String>)> = Vec::new();
    let mut add =
        |message: String, test_id: &str| match grouped.iter_mut().find(|(m, _)| *m == message) {
            Some((_, ids)) => ids.push(escape(test_id)),
            None => grouped.push((message, vec![escape(test_id)])),
        };
    for test in &record.tests {
        if let Some(fallback) = &test.engine.fallback {
            add(format!("engine fallback: {}", escape(fallback)), &test.id);
        }
        if !test.engine.direct {
            add(
                "buffered I/O (O_DIRECT was not in effect): reads may have been served \
                 from the page cache and writes absorbed by it"
                    .into(),
                &test.id,
            );
        }
        for note in &test.notes {
            add(escape(note), &test.id);
        }
    }
    let mut lines: Vec<String> = grouped
        .into_iter()
        .map(|(message, ids)| format!("{}: {message}", ids.join(", ")))
        .collect();

    let s = &record.storage;
    if !s.fsync_flags.is_empty() {
        let flags: Vec<String> = s.fsync_flags.iter().map(|f| escape(f)).collect();
        lines.push(format!(
            "mount options change what fdatasync costs: {} (the synced-write figures are \
             not comparable with a default mount)",
            flags.join(", ")
        ));
    }
    for note in &s.notes {
        lines.push(format!("storage: {}", escape(note)));
    }
    for step in &record.steps {
        let reason = step
            .reason
            .as_deref()
            .map(|r| format!(": {}", escape(r)))
            .unwrap_or_default();
        match step.status {
            StepStatus::Skipped => lines.push(format!("step {} skipped{reason}", step_name(step))),
            StepStatus::Failed => lines.push(format!("step {} failed{reason}", step_name(step))),
            StepStatus::Ok => {}
        }
        for gap in &step.unavailable {
            lines.push(format!("step {}: {}", step_name(step), escape(gap)));
        }
    }
    lines.extend(record.notes.iter().map(|n| escape(n)));
    lines
}

fn warnings_section(out: &mut String, record: &Record) {
    out.push_str("### Fallbacks and warnings\n\n");
    let lines = warnings(record);
    if lines.is_empty() {
        out.push_str("None: every column ran as asked, with O_DIRECT.\n\n");
        return;
    }
    for line in lines {
        let _ = writeln!(out, "- {line}");
    }
    out.push('\n');
}

fn footer(out: &mut String, record: &Record) {
    let s = &record.settings;
    let method = match (&s.preset, s.method()) {
        (Some(_), Some(m)) => m,
        _ => format!(
            "{} s per column after {} s warm-up · {} test file",
            format_plain(s.runtime_s),
            format_plain(s.ramp_s),
            format_bytes(s.size)
        ),
    };
    let _ = writeln!(
        out,
        "<sub>record {} · {} {} · {} · engine asked: {} · started {}</sub>",
        escape(&record.id),
        escape(&record.tool.name),
        escape(&record.tool.version),
        escape(&method),
        escape(&s.engine),
        escape(&record.started_at),
    );
}

/// A latency with three significant figures in the unit that suits it.
pub(crate) use record::units::format_ns;

/// MiB/s and IOPS as the terminal and the site write them.
use record::units::{format_figure, format_s};

/// 5.0 -> "5", 0.5 -> "0.5".
fn format_plain(value: f64) -> String {
    let text = format!("{value:.3}");
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

fn format_bytes(bytes: u64) -> String {
    const UNITS: [(u64, &str); 3] = [(1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")];
    for (size, unit) in UNITS {
        if bytes >= size {
            return format!("{} {unit}", format_plain(bytes as f64 / size as f64));
        }
    }
    format!("{bytes} B")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_gp3_default_record_shows_the_share_and_at_the_provisioned_limit() {
        let fleet = crate::data::testdata::Fleet::small();
        let mut record = fleet.record(0, 0);
        record.runner.variant = Some("gp3 default".into());
        record.settings.provisioned = None;
        let t = record
            .tests
            .iter_mut()
            .find(|t| t.id == "rand-read")
            .expect("a rand-read column");
        t.read.as_mut().unwrap().iops = 2990.0;
        let md = markdown(&record);
        assert!(md.contains("Share of the provisioned limit"), "{md}");
        let row = md.lines().find(|l| l.contains("`rand-read`")).unwrap();
        assert!(
            row.contains("99.7% of the provisioned 3000 IOPS: at the provisioned limit"),
            "{row}"
        );
        assert!(
            md.contains("EBS gp3 default (3,000 IOPS, 125 MiB/s)"),
            "{md}"
        );
        // Without a known default or --provisioned there is no share column.
        record.runner.variant = None;
        assert!(!markdown(&record).contains("provisioned"));
    }

    #[test]
    fn what_if_experiments_show_both_verdicts_when_they_disagree() {
        use record::{Bound, WhatIf, WhatIfCondition};
        let cond = |id: &str, wall_s: f64, ratio: Option<f64>| WhatIfCondition {
            id: id.into(),
            wall_s,
            ratio,
            runs: 1,
            ..Default::default()
        };
        let step = StepResult {
            id: "sqlite".into(),
            bound: Bound::Cpu,
            what_if: Some(WhatIf {
                baseline: Some(cond("baseline", 0.37, None)),
                conditions: vec![
                    cond("iops-capped", 5.78, Some(15.6)),
                    cond("bandwidth-capped", 0.4, Some(1.08)),
                ],
                bound: Bound::Latency,
                why: "only the I/O-rate cap slowed it".into(),
                ..Default::default()
            }),
            ..Default::default()
        };
        let record = Record {
            schema: record::SCHEMA.into(),
            id: "x".into(),
            source: "measured".into(),
            source_file: None,
            started_at: String::new(),
            finished_at: String::new(),
            tool: Default::default(),
            runner: Default::default(),
            storage: Default::default(),
            settings: Default::default(),
            tests: Vec::new(),
            steps: vec![step],
            cpu_reference: None,
            notes: Vec::new(),
        };
        let md = markdown(&record);
        assert!(md.contains("### What-if experiments"), "{md}");
        assert!(md.contains("| iops-capped | 5.78 s | 15.60x |"), "{md}");
        // The steps table's row: the experiment's verdict first, on its normal runs' median.
        let row = md
            .lines()
            .find(|l| l.starts_with("| sqlite | ok |"))
            .expect("the step's row");
        assert!(
            row.contains("| 0.37 s |")
                && row.contains("| latency by experiment (inferred from waits: cpu) |"),
            "{row}"
        );
        assert!(
            row.find("latency").unwrap() < row.find("cpu").unwrap(),
            "{row}"
        );
    }

    #[test]
    fn notes_every_experiment_carries_are_said_once_in_the_summary() {
        use record::WhatIf;
        let cache = "every run started with the step's own files dropped from the page cache; \
                     the toolchain stays warm";
        let step = |id: &str, notes: &[&str]| StepResult {
            id: id.into(),
            name: id.into(),
            what_if: Some(WhatIf {
                notes: notes.iter().map(|n| n.to_string()).collect(),
                ..Default::default()
            }),
            ..Default::default()
        };
        let mut record = crate::data::testdata::Fleet::small().record(0, 0);
        record.steps = vec![
            step("a", &[cache, "a's own note"]),
            step("b", &[cache]),
            step("c", &[cache]),
        ];
        let md = markdown(&record);
        let said = "Every run started with the step's own files dropped from the page cache. \
                    The toolchain stays warm.";
        assert_eq!(md.matches(said).count(), 1, "{md}");
        assert!(!md.contains(cache), "{md}");
        assert!(md.contains("  - a: a's own note."), "{md}");
    }

    #[test]
    fn escape_keeps_tables_and_html_intact() {
        assert_eq!(escape("a|b"), "a\\|b");
        assert_eq!(
            escape("<script>alert(1)</script>"),
            "&lt;script&gt;alert(1)&lt;/script&gt;"
        );
        assert_eq!(escape("[x](javascript:y)"), "\\[x\\](javascript:y)");
        assert_eq!(escape("line\nbreak"), "line break");
        assert_eq!(escape("io_uring"), "io\\_uring");
    }

    /// Rendered as GitHub does (GFM tables), an escaped cell stays one cell and stays text.
    #[test]
    fn escaped_text_renders_as_one_literal_cell() {
        use pulldown_cmark::{Options, Parser, html};
        let evil = "a|b <script>x</script> [l](javascript:y) *e* `c`\n| row |";
        let table = format!("| A | B |\n|---|---|\n| {} | end |\n", escape(evil));
        let mut out = String::new();
        html::push_html(&mut out, Parser::new_ext(&table, Options::ENABLE_TABLES));
        assert_eq!(out.matches("<td>").count(), 2, "{out}");
        assert!(out.contains("<td>end</td>"), "{out}");
        assert!(!out.contains("<script"), "{out}");
        assert!(!out.contains("<a "), "{out}");
        assert!(!out.contains("<em>"), "{out}");
        assert!(!out.contains("<code>"), "{out}");
    }

    #[test]
    fn numbers_read_well() {
        // Latencies and figures: record::units::{format_ns, format_figure}, tested there.
        assert_eq!(format_bytes(1 << 30), "1 GiB");
        assert_eq!(format_bytes(512 << 20), "512 MiB");
        assert_eq!(format_plain(0.5), "0.5");
    }
}

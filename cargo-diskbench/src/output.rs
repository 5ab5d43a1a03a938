//! What a run shows while it works and when it is done: a progress bar with ETA on a terminal,
//! one plain line per column elsewhere (CI logs), and the table of the columns at the end.

use std::io::{IsTerminal, Write};
use std::time::Duration;

use engine::record::{ColumnId, Headline, StepResult, StepStatus, TestResult};
use engine::runner::Progress;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// Progress of a suite run on stderr.
pub struct SuiteProgress {
    bar: Option<ProgressBar>,
    quiet: bool,
    /// Columns in one pass, and passes.
    columns: usize,
    repeats: u32,
    /// Jobs started so far (all passes).
    started: usize,
    /// Expected seconds of the finished jobs, and of the current one.
    done_s: f64,
    current_s: f64,
    current: String,
}

impl SuiteProgress {
    /// A bar when stderr is a terminal (and not `quiet`), plain lines otherwise.
    pub fn new(quiet: bool) -> SuiteProgress {
        let bar = (!quiet && std::io::stderr().is_terminal()).then(|| {
            let bar = ProgressBar::with_draw_target(Some(1000), ProgressDrawTarget::stderr());
            bar.set_style(
                ProgressStyle::with_template(
                    "{spinner} {elapsed_precise} {bar:20} {percent:>3}% ETA {eta:>3} {msg}",
                )
                .expect("valid template"),
            );
            bar.enable_steady_tick(Duration::from_millis(200));
            bar
        });
        SuiteProgress {
            bar,
            quiet,
            columns: 0,
            repeats: 1,
            started: 0,
            done_s: 0.0,
            current_s: 0.0,
            current: String::new(),
        }
    }

    fn total(&self) -> String {
        format!("{}/{}", self.started, self.columns * self.repeats as usize)
    }

    /// A line that is not part of the suite (build steps, notes).
    pub fn line(&mut self, text: &str) {
        if self.quiet {
            return;
        }
        match &self.bar {
            Some(bar) => bar.println(text),
            None => eprintln!("{text}"),
        }
    }

    pub fn event(&mut self, event: &Progress<'_>) {
        match event {
            Progress::SuiteStart {
                columns,
                repeats,
                expected_s,
            } => {
                self.columns = *columns;
                self.repeats = *repeats;
                if let Some(bar) = &self.bar {
                    bar.set_length((expected_s * 1000.0).max(1.0) as u64);
                }
                self.line(&format!(
                    "running {columns} column(s){}, about {:.0} s",
                    if *repeats > 1 {
                        format!(" x {repeats} passes")
                    } else {
                        String::new()
                    },
                    expected_s
                ));
            }
            Progress::Pass { index, of } => self.line(&format!("pass {index} of {of}")),
            Progress::JobStart { name, expected_s } => {
                self.done_s += self.current_s;
                self.current_s = expected_s.unwrap_or(0.0);
                self.started += 1;
                self.current = name.to_string();
                if let Some(bar) = &self.bar {
                    bar.set_message(format!("{name} ({})", self.total()));
                    bar.set_position((self.done_s * 1000.0) as u64);
                } else if !self.quiet {
                    eprintln!("[{}] {name}: running", self.total());
                }
            }
            Progress::Layout {
                name,
                done_bytes,
                total_bytes,
            } => {
                if let Some(bar) = &self.bar {
                    bar.set_message(format!(
                        "{name}: layout {}%",
                        done_bytes * 100 / (*total_bytes).max(1)
                    ));
                }
            }
            Progress::Tick {
                name, elapsed_s, ..
            } => {
                if let Some(bar) = &self.bar {
                    let within = elapsed_s.min(self.current_s);
                    bar.set_position(((self.done_s + within) * 1000.0) as u64);
                    bar.set_message(format!("{name} ({})", self.total()));
                }
            }
            Progress::JobDone { name, result } => {
                let text = format!("[{}] {name}: {}", self.total(), one_line(result));
                self.line(&text);
            }
            _ => {}
        }
    }

    pub fn finish(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }
}

impl Drop for SuiteProgress {
    fn drop(&mut self) {
        self.finish();
    }
}

/// "1234.5 MiB/s, p99 2.31 ms (io_uring)".
pub fn one_line(r: &TestResult) -> String {
    let mut s = format!(
        "{}, p99 {}",
        headline(r),
        r.p99_ns().map(latency).unwrap_or("-".into())
    );
    s.push_str(&format!(" ({})", r.engine.used));
    if r.engine.fallback.is_some() {
        s.push_str(" fallback");
    }
    s
}

/// The column's headline figure with its unit.
pub fn headline(r: &TestResult) -> String {
    let Some(d) = r.main_direction() else {
        return "-".into();
    };
    match r.column().map(|c| c.headline()) {
        Some(Headline::MibPerSecond) => format!("{:.1} MiB/s", d.mib_s),
        Some(Headline::Iops) => format!("{:.0} IOPS", d.iops),
        None => format!("{:.0} IOPS, {:.1} MiB/s", d.iops, d.mib_s),
    }
}

/// Nanoseconds for people: "850 ns", "12.3 µs", "2.31 ms", "1.20 s".
pub fn latency(ns: u64) -> String {
    engine::units::format_ns(ns)
}

/// What to do when a column's passes disagree by more than 5 % (also on the methodology page).
pub const SPREAD_ADVICE: &str = "a spread above 5% means this machine does not repeat that \
figure yet: run more passes (--repeat 5), measure longer (--runtime 20), and run on a quiet \
machine (no other jobs, no builds); report the median with its spread";

/// The end-of-run table: one row per column, then the fallbacks and notes.
pub fn table(tests: &[TestResult]) -> String {
    let mut rows: Vec<[String; 5]> = vec![[
        "column".into(),
        "headline".into(),
        "p99".into(),
        "engine".into(),
        "spread".into(),
    ]];
    let mut sorted: Vec<&TestResult> = tests.iter().collect();
    sorted.sort_by_key(|t| t.column().unwrap_or(ColumnId::SyncWrite));
    for t in &sorted {
        let engine = if t.engine.direct {
            t.engine.used.clone()
        } else {
            format!("{} (buffered)", t.engine.used)
        };
        let spread = t
            .repeats
            .as_ref()
            .map(|r| {
                let verdict = if r.spread_pct <= engine::suite::REPEATABLE_SPREAD_PCT {
                    "within 5%"
                } else {
                    "NOT within 5%"
                };
                format!("{:.1}% over {} ({verdict})", r.spread_pct, r.runs)
            })
            .unwrap_or_else(|| "-".into());
        rows.push([
            t.id.clone(),
            headline(t),
            t.p99_ns().map(latency).unwrap_or_else(|| "-".into()),
            engine,
            spread,
        ]);
    }
    let mut widths = [0usize; 5];
    for r in &rows {
        for (w, c) in widths.iter_mut().zip(r) {
            *w = (*w).max(c.chars().count());
        }
    }
    let mut out = String::new();
    for r in &rows {
        let line: Vec<String> = r
            .iter()
            .zip(widths)
            .enumerate()
            .map(|(i, (c, w))| {
                if i == 1 || i == 2 {
                    format!("{c:>w$}")
                } else {
                    format!("{c:<w$}")
                }
            })
            .collect();
        out.push_str(line.join("  ").trim_end());
        out.push('\n');
    }
    if sorted.iter().any(|t| {
        t.repeats
            .as_ref()
            .is_some_and(|r| r.spread_pct > engine::suite::REPEATABLE_SPREAD_PCT)
    }) {
        out.push_str(SPREAD_ADVICE);
        out.push('\n');
    }
    for t in &sorted {
        if let Some(c) = &t.cache_suspect {
            out.push_str(&format!("{}: cache-served: {c}\n", t.id));
        }
    }
    for t in &sorted {
        if let Some(f) = &t.engine.fallback {
            out.push_str(&format!("{}: fallback: {f}\n", t.id));
        }
        for n in &t.notes {
            out.push_str(&format!("{}: {n}\n", t.id));
        }
    }
    out
}

/// Write `text` to stdout, or to stderr when stdout carries the JSON record.
/// The build steps after the columns: status, wall time, verdict and why (or the reason a
/// step failed or was skipped). Empty when no step ran.
pub fn steps_table(steps: &[StepResult]) -> String {
    let mut out = String::new();
    for s in steps {
        let (state, detail) = match s.status {
            StepStatus::Ok => (s.bound.as_str().to_string(), s.why.clone()),
            StepStatus::Failed => (
                "failed".to_string(),
                s.reason.clone().unwrap_or_else(|| s.why.clone()),
            ),
            StepStatus::Skipped => ("skipped".to_string(), s.reason.clone().unwrap_or_default()),
        };
        out.push_str(&format!(
            "{:<14} {:>8.1} s  {:<9} {}\n",
            s.id, s.wall_s, state, detail
        ));
    }
    if !out.is_empty() {
        out.insert_str(
            0,
            &format!("{:<14} {:>10}  {:<9} why\n", "step", "wall", "bound"),
        );
    }
    out
}

pub fn print(text: &str, to_stderr: bool) {
    if to_stderr {
        let _ = std::io::stderr().write_all(text.as_bytes());
    } else {
        let _ = std::io::stdout().write_all(text.as_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latencies_read_well() {
        assert_eq!(latency(850), "850 ns");
        assert_eq!(latency(12_340), "12.3 µs");
        assert_eq!(latency(2_310_000), "2.31 ms");
        assert_eq!(latency(83_620_000), "83.6 ms");
        assert_eq!(latency(1_200_000_000), "1.20 s");
    }
}

#[cfg(test)]
mod steps_table_tests {
    use super::*;
    use engine::record::Bound;

    #[test]
    fn steps_show_their_verdict_or_why_they_did_not_run() {
        let ok = StepResult {
            id: "sqlite".into(),
            wall_s: 2.5,
            bound: Bound::Latency,
            why: "2000 fdatasync calls".into(),
            ..Default::default()
        };
        let failed = StepResult {
            id: "cargo-build".into(),
            status: StepStatus::Failed,
            reason: Some("exited with code 101".into()),
            ..Default::default()
        };
        let text = steps_table(&[ok, failed]);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3, "{text}");
        assert!(
            lines[1].starts_with("sqlite") && lines[1].contains("latency"),
            "{text}"
        );
        assert!(lines[1].contains("2.5 s") && lines[1].ends_with("2000 fdatasync calls"));
        assert!(lines[2].contains("failed") && lines[2].ends_with("exited with code 101"));
        assert_eq!(steps_table(&[]), "");
    }
}

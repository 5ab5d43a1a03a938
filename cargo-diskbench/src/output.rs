//! What a run shows while it works and when it is done: a progress bar with ETA on a terminal,
//! one plain line per column elsewhere (CI logs), and the table of the columns at the end.

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

use engine::run::Progress;
use engine::steps::{StepEvent, WhatIfEvent, WhatIfPlan};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use record::units::{format_cores_busy, format_figure, format_s};
use record::{ColumnId, Headline, Record, StepResult, StepStatus, TestResult};

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
    /// Earlier times of the build steps on this machine, for estimates.
    step_estimates: StepEstimates,
    /// Whether build steps follow the columns (for the expected time up front).
    steps_follow: bool,
    /// The phase the current column is in, and since when: each phase's ETA is its own.
    phase: Option<(Phase, Instant)>,
}

/// What a column is doing: laying out its files, measuring, removing its files.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Layout,
    Measure,
    Remove,
}

/// Longest ETA shown as a figure: beyond it the rate seen so far says only "very long".
pub const MAX_ETA_S: f64 = 24.0 * 3600.0;

/// An estimate of the time left in a phase.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Eta {
    /// No rate yet (nothing done, no time passed, figures that are not numbers): no ETA.
    Unknown,
    /// Seconds left, whole, at most [`MAX_ETA_S`].
    Left(u64),
    /// More than [`MAX_ETA_S`] at the rate seen so far.
    Over,
}

impl Eta {
    /// At the rate so far (`done` of `total` units in `elapsed_s`), what is left. The rate is
    /// never divided by: the time left is `(total - done) * elapsed / done`, computed only
    /// when `done` is above 0, and anything past [`MAX_ETA_S`] (a tiny rate, an overflow to
    /// infinity) is [`Eta::Over`], so an ETA cannot run away to years.
    pub fn at_rate(done: f64, total: f64, elapsed_s: f64) -> Eta {
        if !(done.is_finite() && total.is_finite() && elapsed_s.is_finite()) {
            return Eta::Unknown;
        }
        if done >= total {
            return Eta::Left(0);
        }
        if done <= 0.0 || elapsed_s <= 0.0 {
            return Eta::Unknown;
        }
        let left = (total - done) * (elapsed_s / done);
        if left.is_finite() && left <= MAX_ETA_S {
            Eta::Left(left.ceil() as u64)
        } else {
            Eta::Over
        }
    }

    /// A timed phase: `length_s` long, `elapsed_s` into it. Left 0 once it has run its length.
    pub fn timed(length_s: f64, elapsed_s: f64) -> Eta {
        if !(length_s.is_finite() && elapsed_s.is_finite()) || length_s < 0.0 {
            return Eta::Unknown;
        }
        let left = (length_s - elapsed_s.max(0.0)).max(0.0);
        if left <= MAX_ETA_S {
            Eta::Left(left.ceil() as u64)
        } else {
            Eta::Over
        }
    }

    /// ", ETA 12 s", ", ETA 4 min 05 s", ", ETA over 24 h", or nothing when unknown.
    fn suffix(self) -> String {
        match self {
            Eta::Unknown => String::new(),
            Eta::Over => format!(", ETA over {:.0} h", MAX_ETA_S / 3600.0),
            Eta::Left(s) if s < 60 => format!(", ETA {s} s"),
            Eta::Left(s) if s < 3600 => format!(", ETA {} min {:02} s", s / 60, s % 60),
            Eta::Left(s) => format!(", ETA {} h {:02} min", s / 3600, s % 3600 / 60),
        }
    }
}

impl SuiteProgress {
    /// A bar when stderr is a terminal (and not `quiet`), plain lines otherwise.
    pub fn new(quiet: bool) -> SuiteProgress {
        let bar = (!quiet && std::io::stderr().is_terminal()).then(|| {
            let bar = ProgressBar::with_draw_target(Some(1000), ProgressDrawTarget::stderr());
            #[expect(
                clippy::expect_used,
                reason = "a constant template, shown by every run"
            )]
            bar.set_style(
                // No {eta}: indicatif's comes from the bar's rate, which falls to nearly 0 while
                // files are laid out or removed and the ETA runs away; each phase says its own.
                ProgressStyle::with_template(
                    "{spinner} {elapsed_precise} {bar:20} {percent:>3}% {msg}",
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
            step_estimates: StepEstimates::default(),
            steps_follow: false,
            phase: None,
        }
    }

    /// Seconds since `phase` started, starting it now if the column was in another one.
    fn in_phase(&mut self, phase: Phase) -> f64 {
        match self.phase {
            Some((p, since)) if p == phase => since.elapsed().as_secs_f64(),
            _ => {
                self.phase = Some((phase, Instant::now()));
                0.0
            }
        }
    }

    /// Build steps follow the columns; `estimates` are their earlier times on this machine.
    pub fn with_steps(mut self, estimates: StepEstimates) -> SuiteProgress {
        self.steps_follow = true;
        self.step_estimates = estimates;
        self
    }

    /// Only build steps run (`cargo diskbench steps`): no column bar, a spinner from the start.
    pub fn steps_only(self) -> SuiteProgress {
        if let Some(bar) = &self.bar {
            #[expect(
                clippy::expect_used,
                reason = "a constant template, shown by every run"
            )]
            bar.set_style(
                ProgressStyle::with_template("{spinner} {elapsed_precise} {msg}")
                    .expect("valid template"),
            );
            bar.set_message("reading the project");
        }
        self
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
                // `run --like` runs the one-at-a-time columns as a second suite, on its latency
                // emulation: they count on from the first.
                let more = self.started > 0;
                let earlier_ms = if more {
                    self.bar.as_ref().and_then(|b| b.length()).unwrap_or(0)
                } else {
                    0
                };
                self.columns = if more {
                    self.columns + columns
                } else {
                    *columns
                };
                self.repeats = *repeats;
                if let Some(bar) = &self.bar {
                    bar.set_length(earlier_ms + (expected_s * 1000.0).max(1.0) as u64);
                }
                let passes = if *repeats > 1 {
                    format!(" x {repeats} passes")
                } else {
                    String::new()
                };
                let mut text = format!(
                    "running {}{columns} column(s){passes}: about {:.0} s of measuring plus laying \
                     out the test file",
                    if more { "then " } else { "" },
                    expected_s
                );
                if self.steps_follow {
                    text.push_str(&format!("; then {}", self.step_estimates.up_front()));
                }
                self.line(&text);
            }
            Progress::Pass { index, of } => self.line(&format!("pass {index} of {of}")),
            Progress::JobStart { name, expected_s } => {
                self.done_s += self.current_s;
                self.current_s = expected_s.unwrap_or(0.0);
                self.started += 1;
                self.current = name.to_string();
                self.in_phase(Phase::Measure);
                if let Some(bar) = &self.bar {
                    let eta = expected_s.map_or(Eta::Unknown, |e| Eta::timed(e, 0.0));
                    bar.set_message(format!(
                        "{name} ({}): measuring{}",
                        self.total(),
                        eta.suffix()
                    ));
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
                let elapsed = self.in_phase(Phase::Layout);
                if let Some(bar) = &self.bar {
                    let eta = Eta::at_rate(*done_bytes as f64, *total_bytes as f64, elapsed);
                    bar.set_message(format!(
                        "{name}: laying out test files {}%{}",
                        layout_pct(*done_bytes, *total_bytes),
                        eta.suffix()
                    ));
                }
            }
            Progress::Tick {
                name, elapsed_s, ..
            } => {
                self.in_phase(Phase::Measure);
                if let Some(bar) = &self.bar {
                    let within = elapsed_s.min(self.current_s);
                    bar.set_position(((self.done_s + within) * 1000.0) as u64);
                    let eta = if self.current_s > 0.0 {
                        Eta::timed(self.current_s, *elapsed_s)
                    } else {
                        Eta::Unknown
                    };
                    bar.set_message(format!(
                        "{name} ({}): measuring{}",
                        self.total(),
                        eta.suffix()
                    ));
                }
            }
            Progress::Remove {
                name,
                done_files,
                total_files,
            } => {
                let elapsed = self.in_phase(Phase::Remove);
                if let Some(bar) = &self.bar {
                    // The measuring is over: the bar shows the column whole while files go.
                    bar.set_position(((self.done_s + self.current_s) * 1000.0) as u64);
                    let eta = Eta::at_rate(*done_files as f64, *total_files as f64, elapsed);
                    bar.set_message(format!(
                        "{name} ({}): {}{}",
                        self.total(),
                        removing_text(*done_files, *total_files),
                        eta.suffix()
                    ));
                } else if done_files == total_files && elapsed >= SLOW_REMOVAL_S && !self.quiet {
                    eprintln!(
                        "[{}] {name}: {} took {}",
                        self.total(),
                        removing_text(*total_files, *total_files),
                        format_s(elapsed)
                    );
                }
            }
            Progress::JobDone { name, result } => {
                self.phase = None;
                let text = format!("[{}] {name}: {}", self.total(), one_line(result));
                self.line(&text);
            }
            _ => {}
        }
    }

    /// A build step starts or ends: on a terminal a spinner with the step's name, elapsed
    /// time and estimate; elsewhere one line as it starts and one with its time and verdict.
    pub fn step(&mut self, event: &StepEvent<'_>) {
        if self.quiet {
            return;
        }
        match event {
            StepEvent::Planned { ids, what_if } => {
                let total: Option<f64> = ids.iter().map(|id| self.step_estimates.get(id)).sum();
                let about = match total {
                    Some(t) if !ids.is_empty() => {
                        format!(", about {} (the last run here)", format_s(t))
                    }
                    _ => String::new(),
                };
                self.line(&format!(
                    "build steps: {}{about}",
                    if ids.is_empty() {
                        "none".to_string()
                    } else {
                        ids.join(", ")
                    }
                ));
                if let Some(plan) = what_if
                    && !ids.is_empty()
                {
                    self.line(&what_if_plan_line(plan, total));
                }
            }
            StepEvent::WhatIf { event, index, of } => match event {
                WhatIfEvent::Planned {
                    id,
                    normal_s,
                    runs,
                    conditions,
                    estimate_s,
                } => self.line(&format!(
                    "[step {index}/{of}] {id}: what-if next, about {} ({} runs at the normal \
                     run's {})",
                    format_s(*estimate_s),
                    runs * (*conditions as u32 + 1) - 1,
                    format_s(*normal_s)
                )),
                WhatIfEvent::Done { label, walls_s } => {
                    self.line(&format!(
                        "[step {index}/{of}] {label}: {}",
                        runs_text(walls_s)
                    ));
                }
                // Shown as a step starting (plan.rs).
                WhatIfEvent::Started { .. } => {}
            },
            StepEvent::Started { id, index, of } => {
                let estimate = self
                    .step_estimates
                    .get(id)
                    .map(|t| format!(" (last run here: {})", format_s(t)))
                    .unwrap_or_default();
                if let Some(bar) = &self.bar {
                    #[expect(
                        clippy::expect_used,
                        reason = "a constant template, shown by every run"
                    )]
                    bar.set_style(
                        ProgressStyle::with_template("{spinner} {elapsed_precise} {msg}")
                            .expect("valid template"),
                    );
                    bar.reset_elapsed();
                    bar.set_message(format!("step {id} ({index}/{of}){estimate}"));
                } else {
                    eprintln!("[step {index}/{of}] {id}: running{estimate}");
                }
            }
            StepEvent::Finished { result, index, of } => {
                self.line(&format!(
                    "[step {index}/{of}] {}: {}, {}",
                    result.id,
                    format_s(result.wall_s),
                    result.verdict_word()
                ));
            }
        }
    }

    pub fn finish(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }
}

/// "what-if: 3 runs of the normal run and each of 4 conditions (up to 7 while they spread
/// wide, within 600 s a step), about 12 min in all from the last times here".
fn what_if_plan_line(plan: &WhatIfPlan, last_total_s: Option<f64>) -> String {
    let more = if plan.max_runs > plan.runs {
        format!(
            " (up to {} while they spread wide, within {} s a step)",
            plan.max_runs, plan.budget_s
        )
    } else {
        String::new()
    };
    let about = match last_total_s {
        Some(t) => format!(
            ", about {} in all from the last times here",
            format_s(t * f64::from(plan.runs) * (plan.conditions as f64 + 1.0))
        ),
        None => ", an estimate after each step's normal run".into(),
    };
    format!(
        "what-if: {} run{} of the normal run and of each of {} condition{}{more}{about}",
        plan.runs,
        if plan.runs == 1 { "" } else { "s" },
        plan.conditions,
        if plan.conditions == 1 { "" } else { "s" },
    )
}

/// "3 runs, median 21.4 s, spread 12%", or "1 run, 21.4 s, no spread": one run has none.
pub fn runs_text(walls_s: &[f64]) -> String {
    let median = {
        let mut w = walls_s.to_vec();
        w.sort_by(f64::total_cmp);
        w.get(w.len() / 2).copied().unwrap_or(0.0)
    };
    match walls_s.len() {
        0 => "no run".into(),
        1 => format!("1 run, {}, no spread", format_s(median)),
        n => {
            let (lo, hi) = walls_s.iter().fold((f64::INFINITY, 0.0f64), |(lo, hi), w| {
                (lo.min(*w), hi.max(*w))
            });
            let spread = if median > 0.0 {
                (hi - lo) / median * 100.0
            } else {
                0.0
            };
            format!("{n} runs, median {}, spread {spread:.0}%", format_s(median))
        }
    }
}

/// Without a terminal, a removal of the test files that took this long gets a line of its own
/// (a CI log otherwise shows a silence after the column's measuring).
const SLOW_REMOVAL_S: f64 = 2.0;

/// Layout progress in whole percent, 100 only when done.
fn layout_pct(done_bytes: u64, total_bytes: u64) -> u64 {
    if total_bytes == 0 || done_bytes >= total_bytes {
        return 100;
    }
    (done_bytes as u128 * 100 / total_bytes as u128).min(99) as u64
}

/// "removing test files (2 of 4)", or "removing the test file" for one.
fn removing_text(done_files: usize, total_files: usize) -> String {
    if total_files == 1 {
        "removing the test file".into()
    } else {
        format!(
            "removing test files ({} of {total_files})",
            (done_files + 1).min(total_files)
        )
    }
}

/// The build steps' times of the newest earlier record of this machine that has them.
#[derive(Clone, Debug, Default)]
pub struct StepEstimates {
    wall_s: Vec<(String, f64)>,
    /// The record they come from.
    source: Option<String>,
}

impl StepEstimates {
    /// From the newest measured record in `results_dir` for the runner `label` with at least
    /// one step that ran; empty when there is none (a first run).
    pub fn from_results(results_dir: &std::path::Path, label: &str) -> StepEstimates {
        let Ok(entries) = std::fs::read_dir(results_dir) else {
            return StepEstimates::default();
        };
        let mut best: Option<(String, Record, String)> = None;
        for entry in entries.flatten() {
            let path = entry.path();
            if path.extension().and_then(|e| e.to_str()) != Some("json") {
                continue;
            }
            let Ok(meta) = std::fs::symlink_metadata(&path) else {
                continue;
            };
            // Estimates are a courtesy: a file that is not a plain, sane-sized record is skipped.
            if !meta.is_file() || meta.len() > 64 << 20 {
                continue;
            }
            let Some(rec) = record::input::read_text(&path)
                .ok()
                .and_then(|t| serde_json::from_str::<Record>(&t).ok())
            else {
                continue;
            };
            if rec.is_imported()
                || rec.runner.label != label
                || !rec.steps.iter().any(|s| s.status == StepStatus::Ok)
            {
                continue;
            }
            if best.as_ref().is_none_or(|(at, _, _)| rec.finished_at > *at) {
                let name = path
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                best = Some((rec.finished_at.clone(), rec, name));
            }
        }
        let Some((_, rec, name)) = best else {
            return StepEstimates::default();
        };
        StepEstimates {
            wall_s: rec
                .steps
                .iter()
                .filter(|s| s.status == StepStatus::Ok)
                .map(|s| (s.id.clone(), s.wall_s))
                .collect(),
            source: Some(name),
        }
    }

    pub fn get(&self, id: &str) -> Option<f64> {
        self.wall_s.iter().find(|(i, _)| i == id).map(|(_, t)| *t)
    }

    /// What the build steps will take, said before the run starts.
    fn up_front(&self) -> String {
        match &self.source {
            Some(source) => format!(
                "the build steps, about {} going by the last run here ({source})",
                format_s(self.wall_s.iter().map(|(_, t)| t).sum())
            ),
            None => "the build steps, which usually take longer than the columns: the first is \
                     a cold cargo build of this project (minutes for a project with many \
                     dependencies; --no-steps skips them)"
                .to_string(),
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
        Some(h @ Headline::MibPerSecond) => format!("{} {}", format_figure(d.mib_s), h.unit()),
        Some(h @ Headline::Iops) => format!("{} {}", format_figure(d.iops), h.unit()),
        None => format!(
            "{} IOPS, {} MiB/s",
            format_figure(d.iops),
            format_figure(d.mib_s)
        ),
    }
}

/// Nanoseconds for people: "850 ns", "12.3 µs", "2.31 ms", "1.20 s".
pub fn latency(ns: u64) -> String {
    record::units::format_ns(ns)
}

/// What to do when a column's passes disagree by more than 5 % (also on the methodology page).
pub const SPREAD_ADVICE: &str = "a spread above 5% means this machine does not repeat that \
figure yet: run more passes (--repeat 5), measure longer (--runtime 20), and run on a quiet \
machine (no other jobs, no builds); report the median with its spread";

/// Each column's figure as a share of the volume's provisioned limit (`--provisioned`, or the
/// known default of the runner's variant); empty when there is no limit.
pub fn provisioned_shares(record: &record::Record) -> String {
    let Some(limit) = record::Provisioned::for_record(record) else {
        return String::new();
    };
    let mut out = format!(
        "provisioned limit: {:.0} IOPS, {:.1} MiB/s ({})\n",
        limit.iops,
        limit.bytes_s / 1_048_576.0,
        limit.source
    );
    for t in &record.tests {
        if let Some(share) = record::provisioned::share(&limit, t) {
            out.push_str(&format!("  {:<12} {}\n", t.id, share.describe()));
        }
    }
    out
}

/// The end-of-run table: one row per column, then the fallbacks and notes.
pub fn table(tests: &[TestResult]) -> String {
    let mut rows: Vec<[String; 6]> = vec![[
        "column".into(),
        "headline".into(),
        "p99".into(),
        "measured".into(),
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
        // The time measured, and how a rule ended it (steady / max-time).
        let measured = match &t.window {
            Some(w) => format!("{} {}", record::units::format_s(t.elapsed_s), w.ended),
            None => record::units::format_s(t.elapsed_s),
        };
        rows.push([
            t.id.clone(),
            headline(t),
            t.p99_ns().map(latency).unwrap_or_else(|| "-".into()),
            measured,
            engine,
            spread,
        ]);
    }
    let mut widths = [0usize; 6];
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
            out.push_str(&wrap(&format!("{}: fallback: {f}", t.id), "", "    "));
        }
        for n in &t.notes {
            out.push_str(&wrap(&format!("{}: {n}", t.id), "", "    "));
        }
    }
    out
}

/// Terminal width the tables are laid out for.
pub const WIDTH: usize = 80;

/// `text` broken at spaces into lines of at most [`WIDTH`] characters (a longer word stays
/// whole), the first starting with `first`, the rest with `rest`; each ends in a newline.
pub fn wrap(text: &str, first: &str, rest: &str) -> String {
    // Any run of whitespace (a newline too) is one space, as in a paragraph.
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if text.is_empty() {
        return String::new();
    }
    let options = textwrap::Options::new(WIDTH)
        .initial_indent(first)
        .subsequent_indent(rest)
        .break_words(false)
        .word_separator(textwrap::WordSeparator::AsciiSpace)
        .word_splitter(textwrap::WordSplitter::NoHyphenation)
        .wrap_algorithm(textwrap::WrapAlgorithm::FirstFit);
    let mut out = String::new();
    for line in textwrap::wrap(&text, options) {
        out.push_str(&line);
        out.push('\n');
    }
    out
}

/// The build steps, the same in `run` and `steps`: one row per step (id, verdict or status,
/// wall time, cores busy), then its verdict sentence (or why it failed or was skipped) wrapped
/// under the row, then a failed step's last lines of output. Empty when no step ran.
pub fn steps_table(steps: &[StepResult], vcpus: Option<u32>) -> String {
    if steps.is_empty() {
        return String::new();
    }
    let id_w = steps
        .iter()
        .map(|s| s.id.chars().count())
        .max()
        .unwrap_or(0)
        .max(4);
    let mut out = format!(
        "{:<id_w$}  {:<9}  {:>8}  {}\n",
        "step",
        "verdict",
        "wall",
        record::units::CORES_BUSY
    );
    let notes = record::what_if_notes::split(steps);
    for (s, own_notes) in steps.iter().zip(&notes.own) {
        // An experiment's verdict is the headline, on the time it stands on (its normal
        // runs' median); the inferred one is said under the row.
        let (verdict, wall_s, cpu_s) = match (&s.what_if, s.status) {
            (Some(w), StepStatus::Ok) => match &w.baseline {
                Some(b) => (w.bound.as_str(), b.wall_s, b.user_s + b.sys_s),
                None => (w.bound.as_str(), s.wall_s, s.user_s + s.sys_s),
            },
            _ => (s.verdict_word(), s.wall_s, s.user_s + s.sys_s),
        };
        let cores = if s.status == StepStatus::Ok {
            format_cores_busy(cpu_s, wall_s, vcpus)
        } else {
            "-".into()
        };
        out.push_str(&format!(
            "{:<id_w$}  {:<9}  {:>8}  {cores}\n",
            s.id,
            verdict,
            format_s(wall_s),
        ));
        let detail = match s.status {
            StepStatus::Ok => s.why.clone(),
            StepStatus::Failed | StepStatus::Skipped => {
                s.reason.clone().unwrap_or_else(|| s.why.clone())
            }
        };
        out.push_str(&wrap(&detail, "    ", "    "));
        out.push_str(&what_if_lines(s));
        for n in own_notes {
            out.push_str(&wrap(
                &format!("note: {n}"),
                "    what-if  ",
                "               ",
            ));
        }
        if let Some(tail) = s.output_tail.as_deref().filter(|t| !t.is_empty()) {
            for line in tail.lines() {
                out.push_str(&format!("    | {line}\n"));
            }
        }
    }
    // Said once for the run, not under every step.
    for n in &notes.shared {
        out.push_str(&wrap(&format!("what-if, every step: {n}"), "", "    "));
    }
    out.push_str(&format!(
        "{}: {} ({}).\n",
        record::units::CORES_BUSY,
        record::units::CORES_BUSY_MEANS,
        if vcpus.is_some_and(|v| v > 0) {
            "of the machine's vCPUs"
        } else {
            "vCPUs unknown"
        }
    ));
    out
}

/// What a run leaves in the project, said once at the end: the records folder (kept, runs
/// accumulate there) and the site (replaced on every run), and, inside a git work tree whose
/// `.gitignore` does not name them, the lines that keep them out of git.
pub fn left_in_project(
    results: &std::path::Path,
    site: Option<&std::path::Path>,
    cwd: &std::path::Path,
) -> String {
    let mut out = format!(
        "left here: {}/ (the records; every run adds one, the site is rendered from all of \
         them)",
        results.display()
    );
    if let Some(site) = site {
        out.push_str(&format!(
            " and {}/ (the report, replaced on every run; open {})",
            site.display(),
            site.join("index.html").display()
        ));
    }
    let mut text = wrap(&out, "", "  ");
    let in_git = cwd.ancestors().any(|d| d.join(".git").exists());
    let ignored = record::input::read_text(&cwd.join(".gitignore")).unwrap_or_default();
    let missing: Vec<String> = std::iter::once(results)
        .chain(site)
        .filter(|p| p.is_relative())
        .map(|p| format!("/{}/", p.display().to_string().trim_end_matches('/')))
        .filter(|line| {
            let bare = line.trim_matches('/');
            !ignored
                .lines()
                .map(|l| l.trim().trim_matches('/'))
                .any(|l| l == bare)
        })
        .collect();
    if in_git && !missing.is_empty() {
        text.push_str(&format!(
            "to keep them out of git (or commit the records to keep a history):\n  printf '{}' >> .gitignore\n",
            missing.iter().map(|m| format!("{m}\\n")).collect::<String>()
        ));
    }
    text
}

/// Write `text` to stdout, or to stderr when stdout carries the JSON record.
/// `run --like LABEL`: per column, LABEL's figure beside the one measured under its caps.
pub fn like_table(like: &record::LikeSettings) -> String {
    let mut out = format!(
        "like {} (caps from {} on {}):\n{:<11} {:>12} {:>12} {:>8}  note\n",
        like.label,
        like.from,
        like.devices.join(", "),
        "column",
        "target",
        "measured",
        "off"
    );
    for c in &like.columns {
        let f = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.1}"));
        let off = if c.reproducible {
            c.off_pct.map_or("-".into(), |o| format!("{o:+.0}%"))
        } else {
            "n/a".into()
        };
        out.push_str(&format!(
            "{:<11} {:>12} {:>12} {:>8}  {}\n",
            c.id,
            f(c.target),
            f(c.measured),
            off,
            c.note
        ));
    }
    out
}

/// A step's what-if experiment under its row: each condition's time against the normal run,
/// then the verdict by experiment (and the inferred one where they disagree). Empty without.
pub fn what_if_lines(s: &StepResult) -> String {
    let Some(w) = &s.what_if else {
        return String::new();
    };
    let mut out = String::new();
    if let Some(b) = &w.baseline {
        // One run has no spread: "1 run, no spread", never "spread 0%".
        let spread = match b.spread_pct {
            Some(p) if b.runs > 1 => format!("{} runs, spread {p:.0}%", b.runs),
            _ => "1 run, no spread".into(),
        };
        out.push_str(&format!(
            "    what-if  {:<22} {:>8.2} s  ({spread})\n",
            "normal", b.wall_s,
        ));
    }
    for c in &w.conditions {
        let vs = match (c.status, c.ratio) {
            // Slower than its caps can explain: the machine's time, not the caps'.
            (StepStatus::Ok, Some(r)) if c.disturbed && c.id.starts_with("like:") => {
                format!("{r:.2}x disturbed, no prediction")
            }
            (StepStatus::Ok, Some(r)) if c.disturbed => format!("{r:.2}x disturbed"),
            (StepStatus::Ok, Some(r)) => format!("{r:.2}x"),
            _ => "failed".into(),
        };
        out.push_str(&format!(
            "    what-if  {:<22} {:>8.2} s  {vs}\n",
            c.id, c.wall_s
        ));
    }
    // "cannot tell" where the spread swallowed the effect; the inferred verdict under it.
    let by = format!(
        "{} by experiment (inferred from waits: {})",
        w.verdict_word(),
        s.bound.as_str()
    );
    out.push_str(&wrap(
        &format!("what-if  => {by}: {}", w.why),
        "    ",
        "             ",
    ));
    // The notes follow in steps_table: those every experiment of the run carries once.
    out
}

pub fn print(text: &str, to_stderr: bool) {
    let text = &terminal_safe(text);
    if to_stderr {
        let _ = std::io::stderr().write_all(text.as_bytes());
    } else {
        let _ = std::io::stdout().write_all(text.as_bytes());
    }
}

/// Text from data (labels, CPU models, device names) made safe for a terminal: control
/// characters other than newline and tab are shown as `\u{1b}`-style escapes, so a label
/// cannot move the cursor, recolour the screen or set the window title.
pub fn terminal_safe(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for ch in text.chars() {
        if ch.is_control() && ch != '\n' && ch != '\t' {
            out.extend(ch.escape_unicode());
        } else {
            out.push(ch);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_never_reach_the_terminal() {
        for bad in [
            "\u{1b}[31mred",
            "a\rb",
            "\u{9b}2J",
            "\u{7}bell",
            "x\u{1b}]0;title\u{7}",
        ] {
            let safe = terminal_safe(bad);
            assert!(!safe.chars().any(|c| c.is_control()), "{safe:?}");
        }
        assert_eq!(terminal_safe("a\tb\nc µs"), "a\tb\nc µs");
    }

    #[test]
    fn eta_has_no_figure_without_a_rate_and_never_runs_away() {
        // Zero progress, no time yet, or figures that are not numbers: no ETA at all.
        assert_eq!(Eta::at_rate(0.0, 100.0, 30.0), Eta::Unknown);
        assert_eq!(Eta::at_rate(10.0, 100.0, 0.0), Eta::Unknown);
        assert_eq!(Eta::at_rate(f64::NAN, 100.0, 1.0), Eta::Unknown);
        assert_eq!(Eta::at_rate(1.0, f64::INFINITY, 1.0), Eta::Unknown);
        assert_eq!(Eta::suffix(Eta::Unknown), "");
        // A steady rate: a quarter done in 10 s leaves 30 s.
        assert_eq!(Eta::at_rate(25.0, 100.0, 10.0), Eta::Left(30));
        assert_eq!(Eta::at_rate(1.0, 4.0, 60.0), Eta::Left(180));
        // Done, or past the total: nothing left.
        assert_eq!(Eta::at_rate(100.0, 100.0, 10.0), Eta::Left(0));
        assert_eq!(Eta::at_rate(101.0, 100.0, 10.0), Eta::Left(0));
        assert_eq!(Eta::at_rate(0.0, 0.0, 10.0), Eta::Left(0));
        // A tiny rate (one byte of a GiB in five minutes) and figures whose product overflows
        // to infinity are "over", never 8761061607 years.
        assert_eq!(Eta::at_rate(1.0, (1u64 << 30) as f64, 300.0), Eta::Over);
        assert_eq!(Eta::at_rate(f64::MIN_POSITIVE, 1.0, 1.0), Eta::Over);
        assert_eq!(Eta::at_rate(1.0, f64::MAX, f64::MAX), Eta::Over);
        assert_eq!(Eta::at_rate(1.0, 2.0, MAX_ETA_S + 1.0), Eta::Over);
        assert_eq!(Eta::suffix(Eta::Over), ", ETA over 24 h");
        // The timed phase: what is left of its length, 0 past it.
        assert_eq!(Eta::timed(7.0, 2.5), Eta::Left(5));
        assert_eq!(Eta::timed(7.0, 9.0), Eta::Left(0));
        assert_eq!(Eta::timed(7.0, -1.0), Eta::Left(7));
        assert_eq!(Eta::timed(f64::INFINITY, 1.0), Eta::Unknown);
        assert_eq!(Eta::timed(1e300, 0.0), Eta::Over);
        assert_eq!(Eta::suffix(Eta::Left(45)), ", ETA 45 s");
        assert_eq!(Eta::suffix(Eta::Left(245)), ", ETA 4 min 05 s");
        assert_eq!(Eta::suffix(Eta::Left(7500)), ", ETA 2 h 05 min");
    }

    #[test]
    fn each_phase_reads_as_itself() {
        assert_eq!(removing_text(0, 4), "removing test files (1 of 4)");
        assert_eq!(removing_text(3, 4), "removing test files (4 of 4)");
        assert_eq!(removing_text(4, 4), "removing test files (4 of 4)");
        assert_eq!(removing_text(0, 1), "removing the test file");
        assert_eq!(layout_pct(0, 0), 100);
        assert_eq!(layout_pct(1, 3), 33);
        assert_eq!(layout_pct(999, 1000), 99);
        assert_eq!(layout_pct(u64::MAX - 1, u64::MAX), 99);
        assert_eq!(layout_pct(5, 5), 100);
    }

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
    use record::Bound;

    #[test]
    fn steps_show_their_verdict_or_why_they_did_not_run() {
        let ok = StepResult {
            id: "sqlite".into(),
            wall_s: 2.5,
            user_s: 0.5,
            sys_s: 0.4,
            bound: Bound::Latency,
            why: "2000 fdatasync calls".into(),
            ..Default::default()
        };
        let failed = StepResult {
            id: "cargo-build".into(),
            status: StepStatus::Failed,
            reason: Some("exited with code 101".into()),
            output_tail: Some("error[E0425]: x".into()),
            ..Default::default()
        };
        let text = steps_table(&[ok, failed], Some(2));
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 7, "{text}");
        assert!(lines[0].starts_with("step") && lines[0].ends_with("cores busy"));
        assert!(
            lines[1].starts_with("sqlite") && lines[1].contains("latency"),
            "{text}"
        );
        assert!(
            lines[1].contains("2.50 s") && lines[1].ends_with("0.36 of 2"),
            "{text}"
        );
        assert_eq!(lines[2], "    2000 fdatasync calls");
        assert!(
            lines[3].contains("failed") && lines[3].ends_with("-"),
            "{text}"
        );
        assert_eq!(lines[4], "    exited with code 101");
        assert_eq!(lines[5], "    | error[E0425]: x");
        assert_eq!(steps_table(&[], Some(2)), "");
    }

    #[test]
    fn wrap_breaks_at_spaces_keeps_long_words_and_indents() {
        let text = format!("{} {}  a-b\nc", "x".repeat(70), "y".repeat(90));
        assert_eq!(
            wrap(&text, "> ", "  "),
            format!("> {}\n  {}\n  a-b c\n", "x".repeat(70), "y".repeat(90))
        );
        let words = "word ".repeat(40);
        let wrapped = wrap(&words, "", "    ");
        assert!(wrapped.lines().all(|l| l.chars().count() <= WIDTH));
        assert_eq!(wrapped.split_whitespace().count(), 40);
        assert!(wrapped.lines().skip(1).all(|l| l.starts_with("    word")));
        assert_eq!(wrap(" \n ", "a", "b"), "");
    }

    #[test]
    fn a_long_verdict_wraps_under_its_row_within_80_columns() {
        let why = "The machine stalled on I/O (PSI) for 45% of the wall time; storage traffic \
                   120.3 MiB/s would take 60% of the time at this disk's sequential speed, \
                   512.0 KiB per read/write call, 0.45 of 2 cores busy over 19.4 s (CPU time \
                   / wall time): it waits on moving bytes.";
        let step = StepResult {
            id: "docker-build".into(),
            wall_s: 19.4,
            user_s: 5.0,
            sys_s: 3.73,
            bound: Bound::Bandwidth,
            why: why.into(),
            ..Default::default()
        };
        let text = steps_table(&[step], Some(2));
        for line in text.lines() {
            assert!(line.chars().count() <= WIDTH, "{line:?} in\n{text}");
        }
        let words: Vec<&str> = text
            .lines()
            .skip(2)
            .take_while(|l| l.starts_with("    "))
            .flat_map(|l| l.split_whitespace())
            .collect();
        assert_eq!(
            words.join(" "),
            why.split_whitespace().collect::<Vec<_>>().join(" ")
        );
        assert!(
            text.lines().nth(1).unwrap().ends_with("0.45 of 2"),
            "{text}"
        );
    }

    #[test]
    fn what_if_notes_are_said_once_per_run_wrapped_and_the_experiment_leads() {
        // The engine's real notes: 171 and 278 characters.
        let cache = "every run started with the step's own files (its work folder) synced and \
                     dropped from the page cache; the toolchain and the rest of the machine stay \
                     warm";
        let v1 = "cgroup v1: the caps reach reads, O_DIRECT writes and the write-back an fsync \
                  forces; write-back of buffered writes by the kernel's flusher is not \
                  attributed to the cgroup, so a step that writes much without syncing is \
                  slowed less here than on a disk that slow";
        let step = |id: &str, notes: &[&str]| StepResult {
            id: id.into(),
            wall_s: 0.49,
            bound: Bound::Mixed,
            why: "It waits on both.".into(),
            what_if: Some(record::WhatIf {
                baseline: Some(record::WhatIfCondition {
                    id: "baseline".into(),
                    wall_s: 0.46,
                    runs: 3,
                    ..Default::default()
                }),
                bound: Bound::Latency,
                why: "Only the IOPS cap slowed it.".into(),
                notes: notes.iter().map(|n| n.to_string()).collect(),
                ..Default::default()
            }),
            ..Default::default()
        };
        let steps = [
            step("sqlite", &[cache, v1, "sqlite's own note"]),
            step("npm-ci", &[cache, v1]),
            step("cargo-build", &[v1, cache]),
        ];
        let text = steps_table(&steps, Some(2));
        for line in text.lines() {
            assert!(line.chars().count() <= WIDTH, "{line:?} in\n{text}");
        }
        let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
        let flat_note = |n: &str| n.split_whitespace().collect::<Vec<_>>().join(" ");
        for n in [cache, v1] {
            assert_eq!(flat.matches(&flat_note(n)).count(), 1, "{text}");
        }
        assert_eq!(flat.matches("sqlite's own note").count(), 1, "{text}");
        // Each row: the experiment's verdict and its normal runs' median; the inferred
        // verdict under it.
        let row = text.lines().find(|l| l.starts_with("sqlite ")).unwrap();
        assert!(row.contains("latency") && row.contains("0.46 s"), "{row}");
        assert!(!row.contains("mixed") && !row.contains("0.49 s"), "{row}");
        assert!(
            flat.contains("latency by experiment (inferred from waits: mixed)"),
            "{text}"
        );
    }

    #[test]
    fn short_steps_keep_their_digits_and_figures_have_separators() {
        let step = StepResult {
            id: "tiny".into(),
            wall_s: 0.05,
            ..Default::default()
        };
        assert!(steps_table(&[step], None).contains("0.050 s"));
        // TestResult has no Default: built from JSON, as the integration tests do.
        let t: TestResult = serde_json::from_value(serde_json::json!({
            "id": "rand-read",
            "job": { "rw": "randread", "bs": 4096, "iodepth": 32, "numjobs": 4,
                     "size": 1u64 << 30, "direct": true, "sync": "none", "rwmixread": null },
            "engine": { "used": "io_uring", "fallback": null, "direct": true },
            "elapsed_s": 5.0,
            "read": { "ios": 111142, "bytes": 455237632u64, "iops": 22228.4, "mib_s": 86.8,
                      "lat_ns": null, "hist": null },
            "write": null,
            "cpu": { "user_s": 0.2, "sys_s": 1.1 },
        }))
        .expect("a valid test result");
        assert_eq!(headline(&t), "22,228 IOPS");
    }
}

#[cfg(test)]
mod left_in_project_tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn offers_the_gitignore_lines_only_in_git_and_only_for_what_is_not_ignored() {
        let d = tempfile::tempdir().unwrap();
        let (results, site) = (Path::new("diskbench-results"), Path::new("diskbench-site"));
        let text = left_in_project(results, Some(site), d.path());
        assert!(text.contains("diskbench-results/ (the records"), "{text}");
        assert!(text.contains("diskbench-site/index.html"), "{text}");
        assert!(!text.contains(".gitignore"), "not a git work tree: {text}");

        std::fs::create_dir(d.path().join(".git")).unwrap();
        let text = left_in_project(results, Some(site), d.path());
        assert!(
            text.contains("printf '/diskbench-results/\\n/diskbench-site/\\n' >> .gitignore"),
            "{text}"
        );
        std::fs::write(d.path().join(".gitignore"), "target\ndiskbench-site/\n").unwrap();
        let text = left_in_project(results, Some(site), d.path());
        assert!(
            text.contains("printf '/diskbench-results/\\n' >> .gitignore"),
            "{text}"
        );
        std::fs::write(
            d.path().join(".gitignore"),
            "/diskbench-results\ndiskbench-site\n",
        )
        .unwrap();
        assert!(!left_in_project(results, Some(site), d.path()).contains(".gitignore"));
        // An absolute --results is not the project's business.
        let text = left_in_project(Path::new("/tmp/r"), None, d.path());
        assert!(!text.contains(".gitignore"), "{text}");
        for line in text.lines() {
            assert!(line.chars().count() <= WIDTH, "{line}");
        }
    }
}

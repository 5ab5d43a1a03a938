//! The progress of a run on stderr: a bar with ETA on a terminal, one plain line per column
//! and step elsewhere (CI logs).
#![expect(
    clippy::expect_used,
    reason = "the progress templates are constants, shown by every run"
)]

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use engine::session::{Event, Progress, Said, StepEvent, WhatIfEvent, WhatIfPlan};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use record::units::format_s;
use record::{Record, StepStatus};

use super::table::one_line;

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
            bar.set_style(
                // No {eta}: indicatif's comes from the bar's rate, which falls to nearly 0 while
                // files are laid out or removed and the ETA runs away; each phase says its own.
                ProgressStyle::with_template(
                    "{spinner} {elapsed_precise} {bar:20} {percent:>3}% {msg}",
                )
                // infallible: a constant template, shown by every run.
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
            bar.set_style(
                ProgressStyle::with_template("{spinner} {elapsed_precise} {msg}")
                    // infallible: a constant template, shown by every run.
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
                    bar.set_style(
                        ProgressStyle::with_template("{spinner} {elapsed_precise} {msg}")
                            // infallible: a constant template, shown by every run.
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

    /// A line the engine said: shown even with `--quiet`, above the bar when there is one.
    fn said(&self, said: &Said) {
        match &self.bar {
            Some(bar) => bar.println(super::said_text(said)),
            None => super::say(said),
        }
    }
}

/// What a session shows while it works (`run`, `steps`): lines until the machine is
/// detected, then the progress, with the steps' earlier times on this machine when steps run.
pub struct RunView<'a> {
    quiet: bool,
    /// The results folder the steps' estimates come from, when steps run.
    step_results: Option<&'a std::path::Path>,
    steps_only: bool,
    progress: Option<SuiteProgress>,
}

impl<'a> RunView<'a> {
    pub fn new(quiet: bool, step_results: Option<&'a std::path::Path>, steps_only: bool) -> Self {
        RunView {
            quiet,
            step_results,
            steps_only,
            progress: None,
        }
    }

    /// Show one event of the session.
    pub fn on(&mut self, event: Event<'_>) {
        match (event, &mut self.progress) {
            (Event::Detected { runner }, _) => {
                let mut p = SuiteProgress::new(self.quiet);
                if let Some(results) = self.step_results {
                    p = p.with_steps(StepEstimates::from_results(results, &runner.label));
                }
                if self.steps_only {
                    p = p.steps_only();
                }
                self.progress = Some(p);
            }
            (Event::Suite(e), Some(p)) => p.event(e),
            (Event::Step(e), Some(p)) => p.step(&e),
            (Event::Said(said), Some(p)) => p.said(&said),
            (Event::Said(said), None) => super::say(&said),
            _ => {}
        }
    }

    pub fn finish(&mut self) {
        if let Some(p) = &mut self.progress {
            p.finish();
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

#[cfg(test)]
mod tests {
    use super::*;

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
}

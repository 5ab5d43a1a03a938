//! The default suite's measured window: each column warms up until its rate settles and
//! measures until its figure is known well enough by a stated rule ([`SteadyRule`]), or until
//! the published harness's 20 s, instead of for a fixed time. `--runtime`, `--ramp` and
//! `--preset published` keep a fixed window for exact reproduction.
//!
//! Why: the harness spends about 150 s on its six columns, most of it measuring figures that
//! were settled after a few seconds. fio's steady-state options (`ss=iops_slope`, `ss_dur`,
//! `ss_ramp`) are the anchor: a window ends when its figure stops moving. Three choices, all
//! on purpose:
//!
//! - The rule judges precision and drift together, on 0.5 s intervals of the whole measured
//!   window: the mean's 95 % confidence half-width within `ci_pct` of the mean, and the two
//!   halves' means within `drift_pct` of each other. A figure still moving fails the second
//!   test; a noisy one the first, and measures on. 5 % each: the same column on the same disk
//!   moves by 16-56 % between runs a minute apart (docs/benchmarks/2026-12-03-dev-vm), so
//!   a tighter bound inside one window buys time, not repeatability.
//! - The ramp ends once two 0.5 s intervals in a row agree within [`RAMP_SETTLE_PCT`], after
//!   at least `min_ramp`, at most the harness's 2 s; never sooner than 2 s on a write column
//!   whose file would be in a different state when its window starts than the harness's is.
//! - A write column on a new file drifts for a reason its intervals do not show in time: the
//!   engine writes every block of the file once per pass (fio's random map, `prng.rs`), so
//!   the first pass is all first writes into unwritten (fallocated) blocks and every later
//!   pass all overwrites. Where a first pass would end inside the longest window, the column
//!   is never cut short: it measures the whole window, as the harness does ([`Drift`]).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::job::shared_page::{PAGE, SharedPage};

/// The length of one interval the rule judges.
pub const INTERVAL: Duration = Duration::from_millis(500);

/// Two ramp intervals in a row within this percentage of each other: the rate has settled.
pub const RAMP_SETTLE_PCT: f64 = 10.0;

/// Right after the ramp, an interval this far (percent) from the window's mean so far means
/// the rate was still moving: the window starts again from there ([`SteadyWatch::observe`]).
pub const RESTART_PCT: f64 = 25.0;

/// The most times a window starts again, and only before `ramp + min_window` from the start.
const MAX_RESTARTS: u32 = 3;

/// A rate estimate's allowance when predicting where a first pass ends: the pass counts as
/// ending inside the window up to this factor past the window's end, and as already over
/// only at this many passes (the jobs of a four-job column do not run in step).
const PASS_MARGIN: f64 = 1.25;

/// When a column's figure counts as known.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SteadyRule {
    /// Never stop before this much measured time.
    pub min_window: Duration,
    /// Always stop here (the harness's 20 s).
    pub max_window: Duration,
    /// The mean's 95 % confidence half-width, percent of the mean, at most.
    pub ci_pct: u32,
    /// The two halves' means apart by at most this percentage of the mean.
    pub drift_pct: u32,
    /// The ramp may end this soon once the rate has settled; the column's ramp is the
    /// longest. At or above the column's ramp: a fixed ramp (`--ramp` given).
    pub min_ramp: Duration,
}

impl SteadyRule {
    /// The default suite's rule.
    pub const DEFAULT: SteadyRule = SteadyRule {
        min_window: Duration::from_secs(3),
        max_window: Duration::from_secs(20),
        ci_pct: 5,
        drift_pct: 5,
        min_ramp: Duration::from_secs(1),
    };

    /// The rule in one line, as the record keeps it, for a column whose longest ramp is
    /// `ramp`.
    pub fn describe(&self, ramp: Duration) -> String {
        let ramp_text = if self.min_ramp < ramp {
            format!(
                "the ramp ends once two intervals in a row agree within {RAMP_SETTLE_PCT}%, \
                 after {} to {} s, and starts again (up to {MAX_RESTARTS} times, in the first \
                 {} s) at an interval {RESTART_PCT}% off the window so far (neither on a \
                 write column whose new file would start the window in another state than \
                 after the whole {} s)",
                self.min_ramp.as_secs_f64(),
                ramp.as_secs_f64(),
                (ramp + self.min_window).as_secs_f64(),
                ramp.as_secs_f64(),
            )
        } else {
            format!("after a {} s ramp", ramp.as_secs_f64())
        };
        format!(
            "0.5 s intervals; {ramp_text}; steady when the mean's 95% confidence half-width \
             (over the intervals' effective number, for their lag-1 autocorrelation) is \
             within {}% and the two halves' means within {}% of it, after at least {} s; \
             at most {} s; a write column whose first pass over its new file would end \
             inside the {} s runs all of it",
            self.ci_pct,
            self.drift_pct,
            self.min_window.as_secs_f64(),
            self.max_window.as_secs_f64(),
            self.max_window.as_secs_f64(),
        )
    }
}

/// How a column's figure can drift for a reason its intervals do not show in time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Drift {
    /// Reads, or writes into blocks written before: nothing changes underneath.
    None,
    /// Writes into a new file of `file_bytes` per job, each block once per pass (in order, or
    /// in fio's random order): first writes until the pass ends, overwrites after.
    NewFile { file_bytes: u64 },
}

impl Drift {
    /// Passes over each job's file after `done` I/Os of `block_bytes` by `numjobs` jobs.
    fn passes(self, done: f64, block_bytes: f64, numjobs: f64) -> f64 {
        match self {
            Drift::None => f64::INFINITY,
            Drift::NewFile { file_bytes } => {
                done * block_bytes / numjobs / file_bytes.max(1) as f64
            }
        }
    }
}

/// How a column's window ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ended {
    /// The rule was met.
    Steady,
    /// The longest window passed first (or the column may drift).
    MaxTime,
}

impl Ended {
    pub fn as_str(self) -> &'static str {
        match self {
            Ended::Steady => "steady",
            Ended::MaxTime => "max-time",
        }
    }
}

/// What the watch decided at a look.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Decision {
    /// The ramp is over: measure from now.
    MeasureFrom,
    /// The window is over, so.
    End(Ended),
}

/// Watches one column's completions and says when its ramp and its window end.
pub(crate) struct SteadyWatch {
    rule: SteadyRule,
    drift: Drift,
    /// The longest ramp, and the shortest.
    ramp_ns: u64,
    min_ramp_ns: u64,
    block_bytes: f64,
    numjobs: f64,
    /// Since the start, when measuring began, and the I/Os done by then.
    measure_from: Option<(u64, u64)>,
    /// Times the window started again.
    restarts: u32,
    /// (time since the start, I/Os done) at the last interval boundary.
    last: Option<(u64, u64)>,
    /// I/Os per second of each whole interval of the ramp.
    ramp_rates: Vec<f64>,
    /// I/Os per second of each whole interval since the ramp.
    rates: Vec<f64>,
    /// Why the drift check kept the column going, said once.
    pub(crate) drift_note: Option<String>,
    /// The last judgement's figures: the 95 % half-width and the halves' difference, percent
    /// of the mean.
    last_figures: Option<(f64, f64)>,
}

impl SteadyWatch {
    pub(crate) fn new(
        rule: SteadyRule,
        drift: Drift,
        ramp: Duration,
        block_bytes: u64,
        numjobs: u32,
    ) -> SteadyWatch {
        let ramp_ns = ramp.as_nanos() as u64;
        // No ramp: measuring starts with the jobs.
        let measure_from = (ramp_ns == 0).then_some((0, 0));
        SteadyWatch {
            rule,
            drift,
            ramp_ns,
            min_ramp_ns: (rule.min_ramp.as_nanos() as u64).min(ramp_ns),
            block_bytes: block_bytes as f64,
            numjobs: numjobs.max(1) as f64,
            measure_from,
            restarts: 0,
            last: measure_from,
            ramp_rates: Vec::new(),
            rates: Vec::new(),
            drift_note: None,
            last_figures: None,
        }
    }

    /// `since_start_ns` after the jobs started, they had completed `done` I/Os between them
    /// (the ramp's included). Some when the ramp or the window ends now.
    pub(crate) fn observe(&mut self, since_start_ns: u64, done: u64) -> Option<Decision> {
        let Some((from_ns, done_at_from)) = self.measure_from else {
            return self.observe_ramp(since_start_ns, done);
        };
        let measured_ns = since_start_ns.saturating_sub(from_ns);
        if measured_ns >= self.rule.max_window.as_nanos() as u64 {
            return Some(Decision::End(Ended::MaxTime));
        }
        let start = self.last.unwrap_or((from_ns, done_at_from));
        let rate = interval_rate(start, since_start_ns, done)?;
        if self.moved_after_the_ramp(since_start_ns, done, rate) {
            // The ramp settled too soon (a level the disk left right after, as reads just
            // after the files were written can): what was measured was ramp after all.
            self.restarts += 1;
            self.ramp_rates.push(rate);
            self.measure_from = Some((since_start_ns, done));
            self.last = Some((since_start_ns, done));
            self.rates.clear();
            return Some(Decision::MeasureFrom);
        }
        self.rates.push(rate);
        self.last = Some((since_start_ns, done));
        if measured_ns < self.rule.min_window.as_nanos() as u64 {
            return None;
        }
        self.judge().then_some(Decision::End(Ended::Steady))
    }

    /// Whether an interval of `rate`, just after the ramp, says the rate was still moving
    /// and the window may start again now.
    fn moved_after_the_ramp(&self, since_start_ns: u64, done: u64, rate: f64) -> bool {
        let early = since_start_ns < self.ramp_ns + self.rule.min_window.as_nanos() as u64;
        // A ramp given (`--ramp`) is kept as given.
        let fixed = self.min_ramp_ns >= self.ramp_ns;
        if !early || fixed || self.restarts >= MAX_RESTARTS {
            return false;
        }
        // Compared with the window so far, or with the ramp's last interval (the one that
        // started the window again, after a new start).
        let before = if self.rates.is_empty() {
            match self.ramp_rates.last() {
                Some(&r) => r,
                None => return false,
            }
        } else {
            self.rates.iter().sum::<f64>() / self.rates.len() as f64
        };
        before > 0.0
            && (rate - before).abs() > before * RESTART_PCT / 100.0
            && self.start_may_move(since_start_ns, done, rate)
    }

    /// During the ramp: whether it ends now.
    fn observe_ramp(&mut self, since_start_ns: u64, done: u64) -> Option<Decision> {
        if let Some(rate) = interval_rate(self.last.unwrap_or((0, 0)), since_start_ns, done) {
            self.ramp_rates.push(rate);
            self.last = Some((since_start_ns, done));
        }
        let over = since_start_ns >= self.ramp_ns
            || (since_start_ns >= self.min_ramp_ns && self.settled(since_start_ns, done));
        if !over {
            return None;
        }
        // At the longest ramp the jobs start by themselves, whenever the parent looks.
        let from_ns = since_start_ns.min(self.ramp_ns);
        self.measure_from = Some((from_ns, done));
        self.last = Some((from_ns, done));
        Some(Decision::MeasureFrom)
    }

    /// Whether the ramp's rate has settled and the window can start now without the file
    /// being in another state than at the harness's ramp end.
    fn settled(&self, since_start_ns: u64, done: u64) -> bool {
        let [.., a, b] = self.ramp_rates[..] else {
            return false;
        };
        if a <= 0.0 || b <= 0.0 || (a - b).abs() > a.max(b) * RAMP_SETTLE_PCT / 100.0 {
            return false;
        }
        self.start_may_move(since_start_ns, done, b)
    }

    /// Whether the window may start at `since_start_ns` rather than at the harness's ramp
    /// end, `done` I/Os in, at `rate`: the file is in the state it would be in there.
    fn start_may_move(&self, since_start_ns: u64, done: u64, rate: f64) -> bool {
        // Past the first pass (or nothing drifts): overwrites from here on, as after the
        // harness's ramp.
        let Some(pass_ends_in_s) = self.first_pass_ends_in_s(done, rate) else {
            return true;
        };
        // First writes now; the same at the harness's window start only if the first pass
        // outlasts its whole window.
        let harness_end_s = (self.ramp_ns as f64 / 1e9) + self.rule.max_window.as_secs_f64();
        since_start_ns as f64 / 1e9 + pass_ends_in_s > harness_end_s * PASS_MARGIN
    }

    /// Seconds from when `done` I/Os were done until every job's first pass over its new file
    /// ends, at `rate`; None when nothing drifts or every job is past its first pass already.
    fn first_pass_ends_in_s(&self, done: u64, rate: f64) -> Option<f64> {
        let passes = self
            .drift
            .passes(done as f64, self.block_bytes, self.numjobs);
        if passes >= PASS_MARGIN {
            return None;
        }
        let per_s = self.drift.passes(rate, self.block_bytes, self.numjobs);
        Some((1.0 - passes) / per_s.max(1e-12))
    }

    /// Since the start, when measuring began (None while the ramp runs).
    pub(crate) fn measure_from_ns(&self) -> Option<u64> {
        self.measure_from.map(|(t, _)| t)
    }

    /// Whether the intervals so far meet the rule.
    fn judge(&mut self) -> bool {
        let n = self.rates.len();
        if n < 4 {
            return false;
        }
        let mean = self.rates.iter().sum::<f64>() / n as f64;
        if mean <= 0.0 || !mean.is_finite() {
            return false;
        }
        let var = self.rates.iter().map(|r| (r - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
        // Intervals of a disk that wanders for seconds at a time are not independent: the
        // mean is known only as well as the intervals' effective number says.
        let n_eff = effective_count(&self.rates, mean, var);
        let half_width = t_975((n_eff as usize).max(2) - 1) * var.sqrt() / n_eff.sqrt();
        let (first, second) = self.rates.split_at(n / 2);
        let avg = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
        let drift = (avg(second) - avg(first)).abs();
        self.last_figures = Some((100.0 * half_width / mean, 100.0 * drift / mean));
        if half_width > mean * self.rule.ci_pct as f64 / 100.0
            || drift > mean * self.rule.drift_pct as f64 / 100.0
        {
            return false;
        }
        let done_at_start = self.measure_from.map_or(0, |(_, d)| d);
        let (Drift::NewFile { file_bytes }, Some(pass_ends_s)) =
            (self.drift, self.first_pass_ends_in_s(done_at_start, mean))
        else {
            return true;
        };
        let window_s = self.rule.max_window.as_secs_f64();
        if pass_ends_s > window_s * PASS_MARGIN {
            // First writes all through the longest window: nothing changes underneath.
            return true;
        }
        if self.drift_note.is_none() {
            self.drift_note = Some(format!(
                "measured the whole {window_s} s: at {:.0} MiB/s per job, the first pass over \
                 each new {} file (first writes into unwritten blocks) ends about {:.0} s into \
                 the window and overwrites follow, so a shorter window would read another mix \
                 of the two than the harness's {window_s} s",
                mean * self.block_bytes / self.numjobs / (1 << 20) as f64,
                record::size::format_bytes(file_bytes),
                pass_ends_s.max(0.0),
            ));
        }
        false
    }
}

/// Jobs a [`WindowShared`] counts apart (the suite's columns have at most four).
pub(crate) const MAX_JOBS: usize = 32;

/// One counter on a cache line of its own: jobs on different cores never share a line.
#[repr(C, align(64))]
struct Padded(AtomicU64);

/// What the parent and every job of a steady column share: the window's start and end, which
/// the parent sets when the ramp settles and when the rule is met, and each job's
/// completions, which the parent reads to judge. In one page of shared anonymous memory, so
/// job processes forked after it see the same page.
#[repr(C)]
struct WindowPage {
    /// CLOCK_MONOTONIC ns at which measuring starts; `u64::MAX` until decided.
    start_ns: Padded,
    /// CLOCK_MONOTONIC ns at which measuring ends; `u64::MAX` until decided.
    end_ns: Padded,
    done: [Padded; MAX_JOBS],
}

const _: () = assert!(std::mem::size_of::<WindowPage>() <= PAGE);

pub(crate) struct WindowShared {
    page: SharedPage,
}

// SAFETY: the page holds only atomics, and lives as long as the value.
unsafe impl Sync for WindowShared {}
// SAFETY: as above.
unsafe impl Send for WindowShared {}

impl WindowShared {
    pub(crate) fn new() -> std::io::Result<WindowShared> {
        let w = WindowShared {
            page: SharedPage::new()?,
        };
        w.page().start_ns.0.store(u64::MAX, Ordering::Relaxed);
        w.page().end_ns.0.store(u64::MAX, Ordering::Relaxed);
        Ok(w)
    }

    fn page(&self) -> &WindowPage {
        // SAFETY: the page is mapped, writable, zero-filled (every counter 0), page-aligned
        // (so 64-byte aligned) and lives as long as `self`; WindowPage is only atomics.
        unsafe { &*(self.page.as_ptr() as *const WindowPage) }
    }

    /// When measuring starts (`u64::MAX` while the ramp runs).
    pub(crate) fn start_ns(&self) -> u64 {
        self.page().start_ns.0.load(Ordering::Relaxed)
    }

    /// Start measuring at `at_ns`; a later call starts the window again there (the jobs
    /// drop what they counted before it). The parent is the only writer.
    pub(crate) fn start_at(&self, at_ns: u64) {
        self.page().start_ns.0.store(at_ns, Ordering::Relaxed);
    }

    /// When measuring ends (`u64::MAX` while the rule has not decided).
    pub(crate) fn end_ns(&self) -> u64 {
        self.page().end_ns.0.load(Ordering::Relaxed)
    }

    /// End the window at `at_ns` (the first call wins).
    pub(crate) fn end_at(&self, at_ns: u64) {
        let _ = self.page().end_ns.0.compare_exchange(
            u64::MAX,
            at_ns,
            Ordering::Relaxed,
            Ordering::Relaxed,
        );
    }

    /// Job `index` completed `n` more I/Os.
    pub(crate) fn add_done(&self, index: u32, n: u64) {
        if let Some(c) = self.page().done.get(index as usize) {
            c.0.fetch_add(n, Ordering::Relaxed);
        }
    }

    /// Every job's completions so far.
    pub(crate) fn done_total(&self) -> u64 {
        self.page()
            .done
            .iter()
            .map(|c| c.0.load(Ordering::Relaxed))
            .sum()
    }
}

impl SteadyWatch {
    /// I/Os per second of each whole 0.5 s interval measured, in order.
    pub(crate) fn interval_rates(&self) -> &[f64] {
        &self.rates
    }

    /// Why a window that ran to its longest did: the drift check's reason, else the rule's
    /// last figures.
    pub(crate) fn max_time_note(&mut self) -> String {
        if let Some(n) = self.drift_note.take() {
            return n;
        }
        match self.last_figures {
            Some((ci, halves)) => format!(
                "measured the whole {} s: the figure was not steady by the rule (95% \
                 half-width {ci:.1}% of the mean against {}%, halves {halves:.1}% apart \
                 against {}%): a busy machine or a disk that varies",
                self.rule.max_window.as_secs_f64(),
                self.rule.ci_pct,
                self.rule.drift_pct
            ),
            None => format!(
                "measured the whole {} s: too few I/Os completed to judge the figure",
                self.rule.max_window.as_secs_f64()
            ),
        }
    }
}

/// I/Os per second since `(t0, n0)` (time since the start, I/Os done), once a whole
/// [`INTERVAL`] has passed by `since_start_ns`.
fn interval_rate((t0, n0): (u64, u64), since_start_ns: u64, done: u64) -> Option<f64> {
    let elapsed_ns = since_start_ns.saturating_sub(t0);
    (elapsed_ns >= INTERVAL.as_nanos() as u64)
        .then(|| done.saturating_sub(n0) as f64 / (elapsed_ns as f64 / 1e9))
}

/// How many independent intervals `rates` are worth: n (1 - r) / (1 + r) for their lag-1
/// autocorrelation r, taken in 0..=0.9 (a negative r, alternating intervals, counts as none),
/// at least 2.
fn effective_count(rates: &[f64], mean: f64, var: f64) -> f64 {
    let n = rates.len() as f64;
    if var <= 0.0 || rates.len() < 3 {
        return n;
    }
    let lag1 = rates
        .windows(2)
        .map(|w| (w[0] - mean) * (w[1] - mean))
        .sum::<f64>()
        / ((n - 1.0) * var);
    let r = lag1.clamp(0.0, 0.9);
    (n * (1.0 - r) / (1.0 + r)).max(2.0)
}

/// Student's t, two-sided 95 %, for `df` degrees of freedom.
fn t_975(df: usize) -> f64 {
    const T: [f64; 10] = [12.71, 4.30, 3.18, 2.78, 2.57, 2.45, 2.36, 2.31, 2.26, 2.23];
    match df {
        0 => f64::INFINITY,
        1..=10 => T[df - 1],
        11..=20 => 2.09,
        21..=30 => 2.04,
        _ => 1.96,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;
    const GIB: u64 = 1 << 30;

    /// How a watched column went: the ramp's seconds (to the window's last start), how the
    /// window ended, the seconds measured and the times it started again.
    #[derive(Debug, PartialEq)]
    struct Watched {
        ramp_s: f64,
        ended: Ended,
        measured_s: f64,
        restarts: u32,
    }

    /// Feed `rate(seconds since the start)` I/Os per second, looking every 50 ms, until the
    /// watch ends the window.
    fn watch(w: &mut SteadyWatch, rate: impl Fn(f64) -> f64) -> Watched {
        let mut done = 0.0;
        let mut t = 0u64;
        let mut starts = 0;
        loop {
            t += 50 * MS;
            done += rate(t as f64 / 1e9) * 0.05;
            match w.observe(t, done as u64) {
                Some(Decision::MeasureFrom) => starts += 1,
                Some(Decision::End(ended)) => {
                    let from = w.measure_from_ns().expect("a window ends after its start");
                    return Watched {
                        ramp_s: from as f64 / 1e9,
                        ended,
                        measured_s: (t - from) as f64 / 1e9,
                        restarts: starts.max(1) - 1,
                    };
                }
                None => {}
            }
            assert!(t < 60_000 * MS, "the watch never ended the window");
        }
    }

    fn new_watch(rule: SteadyRule, drift: Drift, block_bytes: u64, numjobs: u32) -> SteadyWatch {
        SteadyWatch::new(rule, drift, Duration::from_secs(2), block_bytes, numjobs)
    }

    fn read_watch() -> SteadyWatch {
        new_watch(SteadyRule::DEFAULT, Drift::None, 4096, 1)
    }

    /// +-`pct` % around 10,000 IOPS, alternating every 0.5 s interval.
    fn alternating(pct: f64) -> impl Fn(f64) -> f64 {
        move |t: f64| {
            let i = (t / 0.5) as u64;
            10_000.0 * (1.0 + pct / 100.0 * if i.is_multiple_of(2) { 1.0 } else { -1.0 })
        }
    }

    #[test]
    fn a_steady_figure_ends_its_ramp_and_its_window_soonest() {
        // 1 % noise around 10,000 IOPS.
        let w = watch(&mut read_watch(), |t| {
            10_000.0 * (1.0 + 0.01 * (((t / 0.5) as u64 * 7 % 5) as f64 - 2.0) / 2.0)
        });
        assert_eq!(w.ended, Ended::Steady);
        assert!((1.0..1.2).contains(&w.ramp_s), "{w:?}");
        assert!((3.0..3.6).contains(&w.measured_s), "{w:?}");
    }

    #[test]
    fn a_ramp_that_does_not_settle_runs_its_longest_and_a_fixed_one_never_ends_sooner() {
        // Climbing 20 % per interval for the first 2.5 s, flat after.
        let climbing = |t: f64| 10_000.0 * 1.2f64.powf((t / 0.5).floor().min(5.0));
        let w = watch(&mut read_watch(), climbing);
        assert!((2.0..2.1).contains(&w.ramp_s), "{w:?}");
        // --ramp given: a fixed ramp even when the rate settled at once.
        let fixed = SteadyRule {
            min_ramp: Duration::from_secs(2),
            ..SteadyRule::DEFAULT
        };
        let w = watch(&mut new_watch(fixed, Drift::None, 4096, 1), |_| 10_000.0);
        assert!((2.0..2.1).contains(&w.ramp_s), "{w:?}");
        // ... and is not started again when the rate moves right after it.
        let jump = |t: f64| if t < 2.5 { 2_500.0 } else { 13_000.0 };
        let w = watch(&mut new_watch(fixed, Drift::None, 4096, 1), jump);
        assert_eq!(w.restarts, 0, "{w:?}");
        assert!((2.0..2.1).contains(&w.ramp_s), "{w:?}");
        // No ramp at all: measuring starts with the jobs.
        let mut none = SteadyWatch::new(SteadyRule::DEFAULT, Drift::None, Duration::ZERO, 4096, 1);
        assert_eq!(none.measure_from_ns(), Some(0));
        assert_eq!(watch(&mut none, |_| 10_000.0).ended, Ended::Steady);
    }

    #[test]
    fn a_disk_that_wanders_for_seconds_measures_longer_than_one_that_jitters() {
        // The same +-10 % around 10,000 IOPS, once alternating every interval, once in runs
        // of 4 intervals (2 s up, 2 s down): the second's intervals are worth fewer, so its
        // window runs longer.
        let jitter = watch(&mut read_watch(), alternating(10.0));
        let wander = watch(&mut read_watch(), |t: f64| {
            let run = (t / 2.0) as u64;
            10_000.0 * if run.is_multiple_of(2) { 1.1 } else { 0.9 }
        });
        assert_eq!(jitter.ended, Ended::Steady, "{jitter:?}");
        assert!(
            wander.measured_s > jitter.measured_s + 2.0,
            "wander {wander:?}, jitter {jitter:?}"
        );
        // Independent intervals count in full; alternating ones too (r < 0 counts as 0);
        // a slow wave counts as few.
        let flat: Vec<f64> = (0..20).map(|i| [9.0, 11.0][i % 2]).collect();
        assert_eq!(effective_count(&flat, 10.0, 1.0526), 20.0);
        let wave: Vec<f64> = (0..20).map(|i| if i < 10 { 9.0 } else { 11.0 }).collect();
        let n = effective_count(&wave, 10.0, 20.0 / 19.0);
        assert!((2.0..4.0).contains(&n), "{n}");
    }

    #[test]
    fn a_level_the_disk_leaves_right_after_the_ramp_starts_the_window_again() {
        // 2,500 IOPS for the first 2.5 s (reads just after the files were written), then
        // 13,000: the ramp settles at 1 s on the low level, the window starts again when
        // the rate leaves it and then ends as soon as a steady figure can.
        let w = watch(
            &mut read_watch(),
            |t| if t < 2.5 { 2_500.0 } else { 13_000.0 },
        );
        assert_eq!(w.ended, Ended::Steady, "{w:?}");
        assert!(w.restarts >= 1 && (2.5..3.2).contains(&w.ramp_s), "{w:?}");
        assert!(w.measured_s < 3.6, "{w:?}");
        // Not on a write column whose first pass ends inside the harness's window: its
        // window starts where the harness's does, whatever the rate does.
        let mut write = new_watch(
            SteadyRule::DEFAULT,
            Drift::NewFile { file_bytes: GIB },
            4096,
            4,
        );
        let w = watch(&mut write, |t| if t < 2.5 { 50_000.0 } else { 100_000.0 });
        assert_eq!((w.restarts, w.ended), (0, Ended::MaxTime), "{w:?}");
        assert!((2.0..2.1).contains(&w.ramp_s), "{w:?}");
    }

    #[test]
    fn a_noisy_figure_measures_longer_and_a_drifting_one_runs_to_the_end() {
        // +-10 % noise: the half-width falls below 5 % only after about 16 intervals.
        let w = watch(&mut read_watch(), alternating(10.0));
        assert_eq!(w.ended, Ended::Steady);
        assert!((6.0..20.0).contains(&w.measured_s), "{w:?}");
        // +-25 % noise would need about 100 intervals: the longest window ends it, after
        // at most 3 new starts, all in the first 5 s.
        let w = watch(&mut read_watch(), alternating(25.0));
        assert_eq!((w.ended, w.measured_s), (Ended::MaxTime, 20.0), "{w:?}");
        assert!(w.restarts <= 3 && w.ramp_s < 5.0, "{w:?}");
        // Falling 3 % per interval from the start: the ramp settles (3 % < 10 %), but the
        // halves of 6 or more intervals are 9 % or more apart and never agree within 5 %.
        let falling = |t: f64| 10_000.0 * 0.97f64.powi((t / 0.5) as i32);
        let w = watch(&mut read_watch(), falling);
        assert_eq!((w.ended, w.measured_s), (Ended::MaxTime, 20.0), "{w:?}");
    }

    #[test]
    fn a_write_column_whose_first_pass_ends_inside_the_window_is_not_cut_short() {
        let random = |iops: f64, file_bytes: u64| {
            let mut w = new_watch(SteadyRule::DEFAULT, Drift::NewFile { file_bytes }, 4096, 4);
            let out = watch(&mut w, move |_| iops);
            (out, w.drift_note)
        };
        // 100,000 IOPS of 4 KiB over four jobs into 1 GiB each: a pass takes 10.7 s, so the
        // harness's window holds both first writes and overwrites; the ramp stays 2 s.
        let (w, note) = random(100_000.0, GIB);
        assert_eq!((w.ended, w.measured_s), (Ended::MaxTime, 20.0), "{w:?}");
        assert!((2.0..2.1).contains(&w.ramp_s), "{w:?}");
        let note = note.unwrap();
        assert!(
            note.contains("first pass") && note.contains("1 GiB"),
            "{note}"
        );
        // 3,000 IOPS (a gp3 volume): a pass would take about 350 s; first writes all through
        // any window: the ramp and the window end soonest.
        let (w, _) = random(3_000.0, GIB);
        assert_eq!(w.ended, Ended::Steady, "{w:?}");
        assert!(w.ramp_s < 1.2 && w.measured_s < 3.6, "{w:?}");
        // 20,000 IOPS: a pass ends at about 53 s; a harness window of 22 s never reaches it.
        assert_eq!(random(20_000.0, GIB).0.ended, Ended::Steady);
        // 2,000,000 IOPS into 256 MiB each: passes end every 0.13 s; overwrites from the
        // first settled ramp interval on, as after the harness's ramp.
        let (w, _) = random(2_000_000.0, 256 << 20);
        assert_eq!(w.ended, Ended::Steady, "{w:?}");
        assert!(w.ramp_s < 1.2, "{w:?}");
        // Sequential: a synced 4 KiB writer at 4,000/s takes 65 s over 1 GiB; a 100 MiB/s
        // one wraps at ~10 s, inside the window; 3,000 MiB/s wrapped during the ramp.
        let seq = |rate: f64, bs: u64| {
            watch(
                &mut new_watch(
                    SteadyRule::DEFAULT,
                    Drift::NewFile { file_bytes: GIB },
                    bs,
                    1,
                ),
                move |_| rate,
            )
            .ended
        };
        assert_eq!(seq(4_000.0, 4096), Ended::Steady);
        assert_eq!(seq(100.0, 1 << 20), Ended::MaxTime);
        assert_eq!(seq(3_000.0, 1 << 20), Ended::Steady);
    }

    #[test]
    fn nothing_ends_during_the_ramp_or_without_completions() {
        let mut w = read_watch();
        for t in (1..20).map(|i| i * 50 * MS) {
            assert_eq!(w.observe(t, 0), None, "during the ramp at {t}");
        }
        // No I/O at all: the ramp never settles, the window is never steady.
        let w = watch(&mut read_watch(), |_| 0.0);
        assert_eq!((w.ended, w.measured_s), (Ended::MaxTime, 20.0), "{w:?}");
        assert!((2.0..2.1).contains(&w.ramp_s), "{w:?}");
    }

    #[test]
    fn the_rule_is_stated_with_its_figures() {
        let d = SteadyRule::DEFAULT.describe(Duration::from_secs(2));
        for needle in [
            "0.5 s",
            "agree within 10%",
            "after 1 to 2 s",
            "within 5%",
            "within 5% of it",
            "at least 3 s",
            "at most 20 s",
            "first pass",
        ] {
            assert!(d.contains(needle), "{needle}: {d}");
        }
        let fixed = SteadyRule {
            min_ramp: Duration::from_secs(5),
            ..SteadyRule::DEFAULT
        };
        assert!(
            fixed
                .describe(Duration::from_secs(5))
                .contains("after a 5 s ramp")
        );
    }
}

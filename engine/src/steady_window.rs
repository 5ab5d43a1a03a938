//! The default suite's measured window: each column measures until its figure is known well
//! enough by a stated rule ([`SteadyRule`]), or until the published harness's 20 s, instead of
//! for a fixed time. `--runtime`, `--ramp` and `--preset published` keep a fixed window for
//! exact reproduction.
//!
//! Why: the harness spends about 150 s on its six columns, most of it measuring figures that
//! were settled after a few seconds. fio's steady-state options (`ss=iops_slope`, `ss_dur`)
//! are the anchor: a window ends when its figure stops moving. Two differences, both on
//! purpose:
//!
//! - The rule judges precision and drift together, on 0.5 s intervals of the whole measured
//!   window: the mean's 95 % confidence half-width within `ci_pct` of the mean, and the two
//!   halves' means within `drift_pct` of each other. A figure still moving fails the second
//!   test; a noisy one the first, and measures on.
//! - A write column on new files can drift for a reason the intervals do not show in time:
//!   first writes into unwritten (fallocated) blocks turn into overwrites as the window goes
//!   on. Where the share of first writes would change by more than
//!   [`FIRST_WRITE_SHARE_POINTS`] over the longest window, the column is never cut short: it
//!   measures the whole window, as the harness does ([`Drift`]).
//!
//! The ramp stays the harness's 2 s: on a write column it also decides how much of the new
//! file is converted when measuring starts.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// The length of one interval the rule judges.
pub const INTERVAL: Duration = Duration::from_millis(500);

/// The most a write column's share of first writes may change over the longest window
/// (percentage points) for the column to stop early. At a first write costing up to twice an
/// overwrite, 10 points move the whole window's figure by at most 5 %, and a window cut
/// short at most about half that from the whole window's.
pub const FIRST_WRITE_SHARE_POINTS: f64 = 10.0;

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
}

impl SteadyRule {
    /// The default suite's rule.
    pub const DEFAULT: SteadyRule = SteadyRule {
        min_window: Duration::from_secs(3),
        max_window: Duration::from_secs(20),
        ci_pct: 3,
        drift_pct: 3,
    };

    /// The rule in one line, as the record keeps it.
    pub fn describe(&self) -> String {
        format!(
            "0.5 s intervals; steady when the mean's 95% confidence half-width is within \
             {}% and the two halves' means within {}% of it, after at least {} s; at most {} \
             s; a write column whose share of first writes could change by more than {} \
             points runs the whole {} s",
            self.ci_pct,
            self.drift_pct,
            self.min_window.as_secs_f64(),
            self.max_window.as_secs_f64(),
            FIRST_WRITE_SHARE_POINTS,
            self.max_window.as_secs_f64(),
        )
    }
}

/// How a column's figure can drift for a reason its intervals do not show in time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Drift {
    /// Reads, or writes into blocks written before: nothing changes underneath.
    None,
    /// Sequential writes into a new file of `file_bytes` per job: first writes until the
    /// writer wraps around, overwrites after.
    FreshSequential { file_bytes: u64 },
    /// Random writes into a new file of `file_bytes` per job: the share of blocks never
    /// written falls as e^(-writes per block).
    FreshRandom { file_bytes: u64 },
}

impl Drift {
    /// Percentage points the share of first writes changes between `from_s` and `to_s` after
    /// the start, at `bytes_s_per_job`.
    fn first_write_share_change(self, bytes_s_per_job: f64, from_s: f64, to_s: f64) -> f64 {
        match self {
            Drift::None => 0.0,
            Drift::FreshSequential { file_bytes } => {
                let passes = |t: f64| bytes_s_per_job * t / file_bytes.max(1) as f64;
                // All first writes before the first wrap, all overwrites after: a wrap inside
                // the window changes the share completely.
                if passes(from_s) < 1.0 && passes(to_s) > 1.0 {
                    100.0
                } else {
                    0.0
                }
            }
            Drift::FreshRandom { file_bytes } => {
                let never_written =
                    |t: f64| (-bytes_s_per_job * t / file_bytes.max(1) as f64).exp();
                100.0 * (never_written(from_s) - never_written(to_s))
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

/// Watches one column's completions and says when its window ends.
pub(crate) struct SteadyWatch {
    rule: SteadyRule,
    drift: Drift,
    ramp_ns: u64,
    block_bytes: f64,
    numjobs: f64,
    /// (time since the start, I/Os done) at the last interval boundary.
    last: Option<(u64, u64)>,
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
        SteadyWatch {
            rule,
            drift,
            ramp_ns: ramp.as_nanos() as u64,
            block_bytes: block_bytes as f64,
            numjobs: numjobs.max(1) as f64,
            last: None,
            rates: Vec::new(),
            drift_note: None,
            last_figures: None,
        }
    }

    /// `since_start_ns` after the jobs started, they had completed `done` I/Os between them
    /// (the ramp's included). Some when the window ends now.
    pub(crate) fn observe(&mut self, since_start_ns: u64, done: u64) -> Option<Ended> {
        if since_start_ns < self.ramp_ns {
            return None;
        }
        let interval_ns = INTERVAL.as_nanos() as u64;
        let Some((t0, n0)) = self.last else {
            // The first look after the ramp starts the first interval.
            self.last = Some((since_start_ns, done));
            return None;
        };
        let measured_ns = since_start_ns - self.ramp_ns;
        if measured_ns >= self.rule.max_window.as_nanos() as u64 {
            return Some(Ended::MaxTime);
        }
        if since_start_ns - t0 < interval_ns {
            return None;
        }
        let rate = done.saturating_sub(n0) as f64 / ((since_start_ns - t0) as f64 / 1e9);
        self.rates.push(rate);
        self.last = Some((since_start_ns, done));
        if measured_ns < self.rule.min_window.as_nanos() as u64 {
            return None;
        }
        self.judge().then_some(Ended::Steady)
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
        let half_width = t_975(n - 1) * var.sqrt() / (n as f64).sqrt();
        let (first, second) = self.rates.split_at(n / 2);
        let avg = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
        let drift = (avg(second) - avg(first)).abs();
        self.last_figures = Some((100.0 * half_width / mean, 100.0 * drift / mean));
        if half_width > mean * self.rule.ci_pct as f64 / 100.0
            || drift > mean * self.rule.drift_pct as f64 / 100.0
        {
            return false;
        }
        let ramp_s = self.ramp_ns as f64 / 1e9;
        let bytes_s_per_job = mean * self.block_bytes / self.numjobs;
        let change = self.drift.first_write_share_change(
            bytes_s_per_job,
            ramp_s,
            ramp_s + self.rule.max_window.as_secs_f64(),
        );
        if change > FIRST_WRITE_SHARE_POINTS {
            if self.drift_note.is_none() {
                self.drift_note = Some(format!(
                    "measured the whole {} s: at {:.0} MiB/s per job into a new file, the \
                     share of first writes (into unwritten blocks) would change by {:.0} \
                     points over the window, so a shorter one would read a different figure",
                    self.rule.max_window.as_secs_f64(),
                    bytes_s_per_job / (1 << 20) as f64,
                    change
                ));
            }
            return false;
        }
        true
    }
}

/// Jobs a [`WindowShared`] counts apart (the suite's columns have at most four).
pub(crate) const MAX_JOBS: usize = 32;

/// One counter on a cache line of its own: jobs on different cores never share a line.
#[repr(C, align(64))]
struct Padded(AtomicU64);

/// What the parent and every job of a steady column share: the window's end, which the
/// parent sets when the rule is met, and each job's completions, which the parent reads to
/// judge. In one page of shared anonymous memory, so job processes forked after it see the
/// same page.
#[repr(C)]
struct WindowPage {
    /// CLOCK_MONOTONIC ns at which measuring ends; `u64::MAX` until decided.
    end_ns: Padded,
    done: [Padded; MAX_JOBS],
}

const PAGE: usize = 4096;
const _: () = assert!(std::mem::size_of::<WindowPage>() <= PAGE);

pub(crate) struct WindowShared {
    page: *mut libc::c_void,
}

// SAFETY: the page holds only atomics, and lives as long as the value.
unsafe impl Sync for WindowShared {}
// SAFETY: as above.
unsafe impl Send for WindowShared {}

impl WindowShared {
    pub(crate) fn new() -> std::io::Result<WindowShared> {
        // SAFETY: an anonymous mapping touches no file; the result is checked for MAP_FAILED.
        let page = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                PAGE,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if page == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        let w = WindowShared { page };
        w.page().end_ns.0.store(u64::MAX, Ordering::Relaxed);
        Ok(w)
    }

    fn page(&self) -> &WindowPage {
        // SAFETY: the page is mapped, writable, zero-filled (every counter 0), page-aligned
        // (so 64-byte aligned) and lives as long as `self`; WindowPage is only atomics.
        unsafe { &*(self.page as *const WindowPage) }
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

impl Drop for WindowShared {
    fn drop(&mut self) {
        // SAFETY: the page was mapped by `new` with this length and is unmapped once.
        unsafe { libc::munmap(self.page, PAGE) };
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

    /// Feed `rate(interval index)` I/Os per second, looking every 50 ms, until the watch ends
    /// the window; (how, measured seconds).
    fn watch(w: &mut SteadyWatch, rate: impl Fn(usize) -> f64) -> (Ended, f64) {
        let mut done = 0.0;
        let mut t = 0u64;
        loop {
            t += 50 * MS;
            let since_ramp = t.saturating_sub(w.ramp_ns);
            done += rate((since_ramp / (500 * MS)) as usize) * 0.05;
            if let Some(e) = w.observe(t, done as u64) {
                return (e, (t - w.ramp_ns) as f64 / 1e9);
            }
            assert!(t < 60_000 * MS, "the watch never ended the window");
        }
    }

    fn read_watch() -> SteadyWatch {
        SteadyWatch::new(
            SteadyRule::DEFAULT,
            Drift::None,
            Duration::from_secs(2),
            4096,
            1,
        )
    }

    #[test]
    fn a_steady_figure_ends_after_the_shortest_window() {
        // 1 % noise around 10,000 IOPS.
        let (how, secs) = watch(&mut read_watch(), |i| {
            10_000.0 * (1.0 + 0.01 * ((i * 7 % 5) as f64 - 2.0) / 2.0)
        });
        assert_eq!(how, Ended::Steady);
        assert!((3.0..4.0).contains(&secs), "{secs}");
    }

    #[test]
    fn a_noisy_figure_measures_longer_and_a_drifting_one_runs_to_the_end() {
        // +-8 % noise (+-6.4 % once sampled): the half-width falls below 3 % only after about
        // 20 intervals.
        let noisy =
            |i: usize| 10_000.0 * (1.0 + 0.08 * if i.is_multiple_of(2) { 1.0 } else { -1.0 });
        let (how, secs) = watch(&mut read_watch(), noisy);
        assert_eq!(how, Ended::Steady);
        assert!((6.0..20.0).contains(&secs), "{secs}");
        // +-15 % noise would need about 60 intervals: the longest window ends it.
        let noisier =
            |i: usize| 10_000.0 * (1.0 + 0.15 * if i.is_multiple_of(2) { 1.0 } else { -1.0 });
        assert_eq!(watch(&mut read_watch(), noisier), (Ended::MaxTime, 20.0));
        // Falling 2 % per interval: the halves never agree within 3 %.
        let (how, secs) = watch(&mut read_watch(), |i| 10_000.0 * 0.98f64.powi(i as i32));
        assert_eq!((how, secs), (Ended::MaxTime, 20.0));
    }

    #[test]
    fn a_write_column_that_would_turn_first_writes_into_overwrites_is_not_cut_short() {
        let gib = 1u64 << 30;
        // 25,000 IOPS of 4 KiB per job into 1 GiB: ~0.1 writes per block per second, the
        // never-written share falls from 82 % to 11 % over the window.
        let mut fast = SteadyWatch::new(
            SteadyRule::DEFAULT,
            Drift::FreshRandom { file_bytes: gib },
            Duration::from_secs(2),
            4096,
            4,
        );
        assert_eq!(watch(&mut fast, |_| 100_000.0), (Ended::MaxTime, 20.0));
        assert!(fast.drift_note.as_deref().unwrap().contains("first writes"));
        // 750 IOPS per job (a 3,000 IOPS volume): the share moves by about 6 points: stops.
        let mut slow = SteadyWatch::new(
            SteadyRule::DEFAULT,
            Drift::FreshRandom { file_bytes: gib },
            Duration::from_secs(2),
            4096,
            4,
        );
        assert_eq!(watch(&mut slow, |_| 3_000.0).0, Ended::Steady);
        // Sequential: a synced 4 KiB writer at 4,000/s never wraps 1 GiB in the window; a
        // 100 MiB/s one wraps at ~10 s, inside it.
        let seq = |rate: f64, bs: u64| {
            watch(
                &mut SteadyWatch::new(
                    SteadyRule::DEFAULT,
                    Drift::FreshSequential { file_bytes: gib },
                    Duration::from_secs(2),
                    bs,
                    1,
                ),
                move |_| rate,
            )
            .0
        };
        assert_eq!(seq(4_000.0, 4096), Ended::Steady);
        assert_eq!(seq(100.0, 1 << 20), Ended::MaxTime);
        // 3,000 MiB/s wrapped during the ramp: every measured write is an overwrite.
        assert_eq!(seq(3_000.0, 1 << 20), Ended::Steady);
    }

    #[test]
    fn nothing_ends_during_the_ramp_or_without_completions() {
        let mut w = read_watch();
        for t in (1..40).map(|i| i * 50 * MS) {
            assert_eq!(w.observe(t, 0), None, "during the ramp at {t}");
        }
        // No I/O at all after the ramp: never steady, ends at the longest window.
        assert_eq!(watch(&mut read_watch(), |_| 0.0), (Ended::MaxTime, 20.0));
    }

    #[test]
    fn the_rule_is_stated_with_its_figures() {
        let d = SteadyRule::DEFAULT.describe();
        for needle in [
            "0.5 s",
            "within 3%",
            "within 3% of it",
            "at least 3 s",
            "at most 20 s",
            "10 points",
        ] {
            assert!(d.contains(needle), "{needle}: {d}");
        }
    }
}

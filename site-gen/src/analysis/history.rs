//! A runner over time: how far each figure moves on its own (the noise band), and whether a
//! newer record moved further than that (a verdict). `cargo diskbench compare`,
//! `run --baseline` and the site's History sections all judge through [`compare`], so a
//! change the site marks is the change the job summary names.
//!
//! The noise band of a figure is the larger of
//! - [`HISTORY_MARGIN`] times the largest run-to-run change among the runner's earlier
//!   records (its newest [`HISTORY_WINDOW`], oldest first; at least [`MIN_HISTORY`] of them,
//!   else there is too little history to say what a run-to-run change is), and
//! - the `--repeat` spread ((max - min) / median) of either side, where the records have one:
//!   each side's figure is a median that can sit anywhere in its passes' range.
//!
//! A change beyond the band, the worse way, is `slower`; the better way, `faster`; inside it,
//! `within noise`. With neither history nor repeats there is no band and no verdict but
//! `too little history`. Nothing here reads a file except [`Side::load`].

use std::path::Path;

use record::{ColumnId, Record, StepStatus};
use serde::Serialize;

/// Earlier records a band from history needs (two run-to-run changes).
pub const MIN_HISTORY: usize = 3;
/// The largest of a few run-to-run changes understates how far noise alone can move a figure:
/// runs being alike, the next change exceeds all k earlier ones with probability 1/(k+1) (one
/// time in five after five records). Twice the largest is what noise alone rarely reaches.
pub const HISTORY_MARGIN: f64 = 2.0;
/// The newest earlier records a band looks at: an old step change leaves the band after this
/// many runs instead of widening it for ever.
pub const HISTORY_WINDOW: usize = 10;

/// What a change is judged to be.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    Faster,
    Slower,
    WithinNoise,
    TooLittleHistory,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Faster => "faster",
            Verdict::Slower => "slower",
            Verdict::WithinNoise => "within noise",
            Verdict::TooLittleHistory => "too little history",
        }
    }
}

/// Where a band came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum BandSource {
    /// The runner's earlier records.
    History,
    /// The records' `--repeat` spreads.
    Repeat,
    /// Both; the wider one counts.
    HistoryAndRepeat,
}

/// How far a figure moves on its own, in per cent either way.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct NoiseBand {
    /// Half-width: a change of at most this many per cent either way is within noise.
    pub pct: f64,
    pub source: BandSource,
    /// The largest run-to-run change among the earlier records, in per cent (None: fewer
    /// than MIN_HISTORY); the band's history part is HISTORY_MARGIN times it.
    pub history_pct: Option<f64>,
    /// Earlier records the history part looked at.
    pub history_records: usize,
    /// The widest `--repeat` spread of the two sides (None: no repeats).
    pub repeat_pct: Option<f64>,
}

impl NoiseBand {
    /// "history of 5 records", "--repeat spread", "history of 5 records and --repeat spread".
    pub fn reason(&self) -> String {
        match self.source {
            BandSource::History => format!("history of {} records", self.history_records),
            BandSource::Repeat => "--repeat spread".into(),
            BandSource::HistoryAndRepeat => format!(
                "history of {} records and --repeat spread",
                self.history_records
            ),
        }
    }
}

/// What a figure is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FigureKind {
    /// A column's headline (MiB/s or IOPS): higher is better.
    Column,
    /// A latency column's p99 in ns: lower is better.
    P99,
    /// A build step's wall time in s: lower is better.
    Step,
}

/// One figure both sides have, and what became of it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Change {
    /// The column id, or the step id.
    pub id: String,
    pub kind: FigureKind,
    /// "MiB/s", "IOPS", "ns" or "s".
    pub unit: &'static str,
    pub base: f64,
    pub new: f64,
    /// (new - base) / base, in per cent.
    pub change_pct: f64,
    /// None: too little history and no repeats.
    pub band: Option<NoiseBand>,
    pub verdict: Verdict,
}

impl Change {
    /// "seq-read", "qd1-read p99", "step cargo-build".
    pub fn name(&self) -> String {
        match self.kind {
            FigureKind::Column => self.id.clone(),
            FigureKind::P99 => format!("{} p99", self.id),
            FigureKind::Step => format!("step {}", self.id),
        }
    }
}

/// One record set against the runner's earlier ones.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Comparison {
    pub label: String,
    pub base_id: String,
    pub base_started_at: String,
    pub new_id: String,
    pub new_started_at: String,
    /// Earlier records the bands could look at (the base record included).
    pub history_records: usize,
    pub changes: Vec<Change>,
}

impl Comparison {
    pub fn any(&self, verdict: Verdict) -> bool {
        self.changes.iter().any(|c| c.verdict == verdict)
    }
}

/// The latency columns, whose p99 is compared too.
pub fn is_latency_column(c: ColumnId) -> bool {
    matches!(c, ColumnId::Qd1Read | ColumnId::SyncWrite)
}

/// The band of one figure: `history` oldest first (the base last), `repeat_spreads` each
/// side's `--repeat` spread in per cent.
pub fn noise_band(history: &[f64], repeat_spreads: &[f64]) -> Option<NoiseBand> {
    let window = &history[history.len().saturating_sub(HISTORY_WINDOW)..];
    let history_pct = (window.len() >= MIN_HISTORY)
        .then(|| {
            window
                .windows(2)
                .filter(|w| w[0] > 0.0)
                .map(|w| ((w[1] - w[0]) / w[0]).abs() * 100.0)
                .fold(None, |m: Option<f64>, x| Some(m.map_or(x, |m| m.max(x))))
        })
        .flatten();
    let repeat_pct = repeat_spreads
        .iter()
        .copied()
        .filter(|s| s.is_finite() && *s >= 0.0)
        .fold(None, |m: Option<f64>, x| Some(m.map_or(x, |m| m.max(x))));
    let (pct, source) = match (history_pct, repeat_pct) {
        (Some(h), Some(r)) => ((h * HISTORY_MARGIN).max(r), BandSource::HistoryAndRepeat),
        (Some(h), None) => (h * HISTORY_MARGIN, BandSource::History),
        (None, Some(r)) => (r, BandSource::Repeat),
        (None, None) => return None,
    };
    Some(NoiseBand {
        pct,
        source,
        history_pct,
        history_records: if history_pct.is_some() {
            window.len()
        } else {
            0
        },
        repeat_pct,
    })
}

/// The verdict on a change of `change_pct` given its band; `higher_is_better` for throughput.
pub fn verdict(change_pct: f64, band: Option<&NoiseBand>, higher_is_better: bool) -> Verdict {
    let Some(band) = band else {
        return Verdict::TooLittleHistory;
    };
    if change_pct.abs() <= band.pct {
        return Verdict::WithinNoise;
    }
    if (change_pct > 0.0) == higher_is_better {
        Verdict::Faster
    } else {
        Verdict::Slower
    }
}

fn change(
    id: &str,
    kind: FigureKind,
    unit: &'static str,
    history: &[f64],
    repeat_spreads: &[f64],
    new: f64,
) -> Option<Change> {
    let base = *history.last()?;
    if !(base > 0.0 && base.is_finite() && new.is_finite()) {
        return None;
    }
    let change_pct = (new - base) / base * 100.0;
    let band = noise_band(history, repeat_spreads);
    let verdict = verdict(change_pct, band.as_ref(), kind == FigureKind::Column);
    Some(Change {
        id: id.into(),
        kind,
        unit,
        base,
        new,
        change_pct,
        band,
        verdict,
    })
}

/// `new` set against `history`: the runner's earlier records, in any order (the newest is the
/// base; a record with `new`'s id is left out). None when `history` holds no other record.
pub fn compare(history: &[&Record], new: &Record) -> Option<Comparison> {
    let mut earlier: Vec<&Record> = history.iter().copied().filter(|r| r.id != new.id).collect();
    earlier.sort_by(|a, b| {
        a.started_at
            .cmp(&b.started_at)
            .then_with(|| a.id.cmp(&b.id))
    });
    let base = *earlier.last()?;
    let earlier = &earlier[earlier.len().saturating_sub(HISTORY_WINDOW)..];
    let mut changes = Vec::new();
    for c in ColumnId::ALL {
        let (Some(b), Some(n)) = (base.test(c), new.test(c)) else {
            continue;
        };
        let spreads: Vec<f64> = [b, n]
            .iter()
            .filter_map(|t| t.repeats.as_ref().map(|r| r.spread_pct))
            .collect();
        // The base's figure is the last in the history, so a base with the column always
        // contributes; earlier records without it are passed over.
        let values: Vec<f64> = earlier
            .iter()
            .filter_map(|r| r.test(c)?.headline())
            .collect();
        if let (Some(_), Some(nv)) = (b.headline(), n.headline())
            && let Some(ch) = change(
                c.as_str(),
                FigureKind::Column,
                c.headline().unit(),
                &values,
                &spreads,
                nv,
            )
        {
            changes.push(ch);
        }
        if is_latency_column(c)
            && let (Some(_), Some(np)) = (b.p99_ns(), n.p99_ns())
        {
            let p99s: Vec<f64> = earlier
                .iter()
                .filter_map(|r| Some(r.test(c)?.p99_ns()? as f64))
                .collect();
            // Repeats record the headline only: a p99's band comes from history alone.
            if let Some(ch) = change(c.as_str(), FigureKind::P99, "ns", &p99s, &[], np as f64) {
                changes.push(ch);
            }
        }
    }
    for step in new.steps.iter().filter(|s| s.status == StepStatus::Ok) {
        let ok_wall = |r: &Record| {
            r.steps
                .iter()
                .find(|s| s.id == step.id && s.status == StepStatus::Ok)
                .map(|s| s.wall_s)
        };
        if ok_wall(base).is_none() {
            continue;
        }
        let walls: Vec<f64> = earlier.iter().filter_map(|r| ok_wall(r)).collect();
        if let Some(ch) = change(&step.id, FigureKind::Step, "s", &walls, &[], step.wall_s) {
            changes.push(ch);
        }
    }
    Some(Comparison {
        label: new.runner_name().into_owned(),
        base_id: base.id.clone(),
        base_started_at: base.started_at.clone(),
        new_id: new.id.clone(),
        new_started_at: new.started_at.clone(),
        history_records: earlier.len(),
        changes,
    })
}

/// One side of `compare`: a record file, or a results folder.
#[derive(Clone, Debug)]
pub enum Side {
    File(Box<Record>),
    Folder(Vec<Record>),
}

impl Side {
    /// Read `path` (`what` is "BASE" or "NEW", for the messages). A file must be a record; a
    /// folder's bad files are skipped and returned with their reason.
    pub fn load(
        what: &str,
        path: &Path,
    ) -> anyhow::Result<(Side, Vec<(std::path::PathBuf, String)>)> {
        if path.is_dir() {
            let loaded = record::load::load_dir(path)
                .map_err(|e| record::error::usage(format!("{what} {}: {e:#}", path.display())))?;
            Ok((
                Side::Folder(loaded.records.into_iter().map(|l| l.record).collect()),
                loaded.skipped,
            ))
        } else {
            let record = record::load::load_file(path).map_err(|why| {
                record::error::usage(format!(
                    "{what} {}: {why}; give a record file (results/*.json) or a results folder",
                    path.display()
                ))
            })?;
            Ok((Side::File(Box::new(record)), Vec::new()))
        }
    }

    fn of_label(&self, label: &str) -> Vec<&Record> {
        match self {
            Side::File(r) => vec![r],
            // By `runner_name`: a `--like` run is compared only with other runs like it.
            Side::Folder(rs) => rs.iter().filter(|r| r.runner_name() == label).collect(),
        }
    }

    fn labels(&self) -> Vec<String> {
        let mut labels: Vec<String> = match self {
            Side::File(r) => vec![r.runner_name().into_owned()],
            Side::Folder(rs) => rs.iter().map(|r| r.runner_name().into_owned()).collect(),
        };
        labels.sort();
        labels.dedup();
        labels
    }

    fn newest_of(&self, label: &str) -> Option<&Record> {
        self.of_label(label).into_iter().max_by(|a, b| {
            a.started_at
                .cmp(&b.started_at)
                .then_with(|| a.id.cmp(&b.id))
        })
    }
}

/// A fresh record against a baseline (`run --baseline`): the baseline's records of its label
/// that started before it (a record file: that record). None when the baseline holds none:
/// the runner's first run there.
pub fn against_baseline(base: &Side, new: &Record) -> Option<Comparison> {
    let history: Vec<&Record> = base
        .of_label(&new.runner_name())
        .into_iter()
        .filter(|r| matches!(base, Side::File(_)) || r.started_at <= new.started_at)
        .collect();
    compare(&history, new)
}

/// Every runner both sides have: NEW's newest record of each label against BASE's records of
/// it (BASE's history: those that started before the NEW record). A record file on either
/// side stands for its own label; two files are compared whatever their labels. `label`
/// keeps one runner. The error is a usage message: what is wrong and what to do.
pub fn compare_sides(
    base: &Side,
    new: &Side,
    label: Option<&str>,
) -> std::result::Result<Vec<Comparison>, String> {
    let pairs: Vec<(Vec<&Record>, &Record)> = match (base, new) {
        (Side::File(b), Side::File(n)) => vec![(vec![b], n)],
        _ => {
            let labels: Vec<String> = match (base, new, label) {
                (_, _, Some(l)) => vec![l.to_string()],
                (Side::File(b), _, None) => vec![b.runner_name().into_owned()],
                (_, Side::File(n), None) => vec![n.runner_name().into_owned()],
                _ => {
                    let b = base.labels();
                    new.labels().into_iter().filter(|l| b.contains(l)).collect()
                }
            };
            let mut pairs = Vec::new();
            for l in &labels {
                let Some(n) = new.newest_of(l) else { continue };
                let history: Vec<&Record> = base
                    .of_label(l)
                    .into_iter()
                    .filter(|r| {
                        r.id != n.id
                            && (matches!(base, Side::File(_)) || r.started_at <= n.started_at)
                    })
                    .collect();
                if !history.is_empty() {
                    pairs.push((history, n));
                }
            }
            if pairs.is_empty() {
                let b = base.labels().join(", ");
                let n = new.labels().join(", ");
                return Err(match label {
                    Some(l) => format!(
                        "no runner labelled {l:?} on both sides (BASE has: {b}; NEW has: {n}); \
                         give a --label both have"
                    ),
                    None => format!(
                        "BASE and NEW have no runner label in common (BASE has: {b}; NEW has: \
                         {n}); compare records of the same runner, or pick one with --label"
                    ),
                });
            }
            pairs
        }
    };
    let mut out = Vec::new();
    for (history, n) in pairs {
        if let Some(c) = compare(&history, n) {
            if c.changes.is_empty() {
                return Err(format!(
                    "{}: BASE and NEW share no column or build step ({}: {}; {}: {}); compare \
                     records of the same suite (e.g. the same --only)",
                    c.label,
                    c.base_id,
                    figure_ids(history.iter().copied().find(|r| r.id == c.base_id)),
                    c.new_id,
                    figure_ids(Some(n)),
                ));
            }
            out.push(c);
        }
    }
    Ok(out)
}

fn figure_ids(r: Option<&Record>) -> String {
    let Some(r) = r else { return "nothing".into() };
    let ids: Vec<&str> = r
        .tests
        .iter()
        .map(|t| t.id.as_str())
        .chain(r.steps.iter().map(|s| s.id.as_str()))
        .collect();
    if ids.is_empty() {
        "nothing".into()
    } else {
        ids.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_band_is_twice_the_largest_run_to_run_change_or_the_repeat_spread() {
        let b = noise_band(&[100.0, 104.0, 101.0], &[]).unwrap();
        assert_eq!(b.source, BandSource::History);
        assert!((b.history_pct.unwrap() - 4.0).abs() < 1e-9);
        assert!((b.pct - 8.0).abs() < 1e-9);
        // Too few records: only the repeat spread, else nothing.
        assert_eq!(noise_band(&[100.0, 104.0], &[]), None);
        let r = noise_band(&[100.0], &[3.0, 6.0]).unwrap();
        assert_eq!((r.source, r.pct), (BandSource::Repeat, 6.0));
        let both = noise_band(&[100.0, 101.0, 100.0], &[5.0]).unwrap();
        assert_eq!((both.source, both.pct), (BandSource::HistoryAndRepeat, 5.0));
        // Only the newest HISTORY_WINDOW records count: an old jump leaves the band.
        let mut h = vec![100.0, 50.0];
        h.extend(std::iter::repeat_n(50.0, HISTORY_WINDOW));
        assert_eq!(noise_band(&h, &[]).unwrap().pct, 0.0);
    }

    #[test]
    fn verdicts_follow_which_way_is_better() {
        let band = noise_band(&[100.0, 105.0, 100.0], &[]);
        let band = band.as_ref();
        assert_eq!(verdict(-20.0, band, true), Verdict::Slower);
        assert_eq!(verdict(20.0, band, true), Verdict::Faster);
        assert_eq!(verdict(20.0, band, false), Verdict::Slower);
        assert_eq!(verdict(-9.0, band, true), Verdict::WithinNoise);
        assert_eq!(verdict(-90.0, None, true), Verdict::TooLittleHistory);
    }
}

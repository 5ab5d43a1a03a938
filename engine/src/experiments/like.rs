//! `--like LABEL`: another runner's figures, from its newest record in the results folder, as
//! block-I/O caps on this disk; and, per column, the target's figure beside the one measured
//! under the caps, with whether a cap can reproduce it at all.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use latency_fs::{Delays, Latency};
use record::error::usage;
use record::{
    ColumnId, IoCaps, LatencyEmulation, LatencyShape, LikeColumn, LikeLatency, LikeSettings,
    Record, TestResult,
};

use crate::experiments::what_if::caps::CapTarget;
use crate::experiments::what_if::like_latency::{ns, per_io_ns};
use crate::session::event::Event;
use crate::session::said::Said;

/// The newest record labelled `label` in `results` and the caps that make this disk look
/// like it. A usage error (exit 2) names the option when there is none.
pub fn newest_record(results: &Path, label: &str) -> Result<(Record, String, IoCaps)> {
    let loaded =
        record::load::load_dir(results).map_err(|e| usage(format!("--like {label}: {e:#}")))?;
    let mut labels: Vec<String> = Vec::new();
    let mut best: Option<(Record, String)> = None;
    for l in loaded.records {
        // A record of another `--like` run is no figure of its runner's own.
        if l.record.emulates().is_some() {
            continue;
        }
        if !labels.contains(&l.record.runner.label) {
            labels.push(l.record.runner.label.clone());
        }
        if l.record.runner.label != label
            || !crate::experiments::what_if::options::has_like_figures(&l.record)
        {
            continue;
        }
        if best
            .as_ref()
            .is_none_or(|(b, _)| l.record.finished_at > b.finished_at)
        {
            let name = l
                .path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            best = Some((l.record, name));
        }
    }
    let Some((record, name)) = best else {
        labels.sort();
        return Err(usage(format!(
            "--like {label}: no record labelled \"{label}\" with sequential or random figures in \
             --results {} (labels there: {}); import published figures with `cargo diskbench \
             import FILE --results {}`",
            results.display(),
            if labels.is_empty() {
                "none".to_string()
            } else {
                labels.join(", ")
            },
            results.display()
        )));
    };
    let caps = crate::experiments::what_if::options::caps_like(&record)
        .map_err(|why| usage(format!("--like {label}: {why} (the record {name})")))?;
    Ok((record, name, caps))
}

/// `--like LABEL` resolved: the runner's record, the caps and where they go.
pub struct LikeTarget {
    pub label: String,
    /// The record's file name and its source, e.g. `2026-10-01-x-0a1b.json (imported:csv)`.
    pub from: String,
    pub record: Record,
    pub caps: IoCaps,
    pub target: CapTarget,
}

/// How close (in %) a figure measured under `--like` caps must land on the target's to count
/// as reproduced.
const LIKE_TOLERANCE_PCT: f64 = 25.0;

/// The record's `settings.like`: per column, LABEL's figure beside the one measured under its
/// caps (and, for the one-at-a-time columns, on the latency emulation when it ran).
pub fn settings(
    l: LikeTarget,
    tests: &[TestResult],
    emulation: Option<LatencyEmulation>,
) -> LikeSettings {
    let columns = ColumnId::ALL
        .into_iter()
        .filter_map(|c| {
            let measured = tests.iter().find(|t| t.id == c.as_str())?.headline();
            let target = l.record.test(c).and_then(|t| t.headline());
            let off_pct = match (measured, target) {
                (Some(m), Some(t)) if t > 0.0 => Some((m / t - 1.0) * 100.0),
                _ => None,
            };
            // A rate cap reproduces a figure only when this disk can go at least that fast:
            // judged from what the capped run measured, within LIKE_TOLERANCE_PCT of the target.
            let landed = off_pct.is_some_and(|o| o.abs() <= LIKE_TOLERANCE_PCT);
            let missed = |how: &str| {
                format!(
                    "{how}, but the run measured {} the target: this disk (or this machine now) does not \
                     reach it, and a cap only slows a disk down",
                    off_pct.map_or("no figure against".to_string(), |o| format!("{o:+.0}% off"))
                )
            };
            let (reproducible, note) = match c {
                ColumnId::SeqRead | ColumnId::SeqWrite => {
                    let how = "capped in bytes per second at the target's MiB/s";
                    (landed, if landed { how.to_string() } else { missed(how) })
                }
                ColumnId::RandRead | ColumnId::RandWrite => {
                    let how = "capped in I/Os per second at the target's IOPS";
                    (landed, if landed { how.to_string() } else { missed(how) })
                }
                ColumnId::Qd1Read | ColumnId::SyncWrite => (false, String::new()),
            };
            let latency = matches!(c, ColumnId::Qd1Read | ColumnId::SyncWrite).then(|| {
                let here = tests.iter().find(|t| t.id == c.as_str());
                latency(l.record.test(c), here)
            });
            let emulated = emulation
                .as_ref()
                .is_some_and(|e| e.columns.iter().any(|id| id == c.as_str()));
            let (reproducible, note) = match &latency {
                Some(lat) if emulated => emulated_note(&l.label, c, lat, off_pct),
                Some(lat) => (false, latency_note(&l.label, lat)),
                None => (reproducible, note),
            };
            Some(LikeColumn {
                id: c.as_str().into(),
                target,
                measured,
                off_pct,
                reproducible,
                note,
                latency,
            })
        })
        .collect();
    LikeSettings {
        label: l.label,
        from: l.from,
        caps: l.caps,
        devices: l.target.devices.iter().map(|d| d.to_string()).collect(),
        columns,
        latency_emulation: emulation,
    }
}

/// A one-at-a-time column measured on the latency emulation: reproduced when its IOPS and
/// its p99 land within LIKE_TOLERANCE_PCT of LABEL's. A p99 below LABEL's own time per I/O
/// cannot be the whole I/O's (the published harness times a synced write's write alone and
/// the fdatasync apart), so it is shown, not judged.
fn emulated_note(
    label: &str,
    c: ColumnId,
    lat: &LikeLatency,
    off_pct: Option<f64>,
) -> (bool, String) {
    let iops_ok = off_pct.is_some_and(|o| o.abs() <= LIKE_TOLERANCE_PCT);
    let p99_comparable = match (lat.target_p99_ns, lat.target_per_io_ns) {
        (Some(p), Some(t)) => p >= t,
        _ => false,
    };
    let p99_off = match (lat.measured_p99_ns, lat.target_p99_ns) {
        (Some(m), Some(t)) if t > 0.0 => Some((m / t - 1.0) * 100.0),
        _ => None,
    };
    let p99_ok = !p99_comparable || p99_off.is_some_and(|o| o.abs() <= LIKE_TOLERANCE_PCT);
    let what = match c {
        ColumnId::SyncWrite => "each write and each fdatasync",
        _ => "each read",
    };
    let p99 = if p99_comparable {
        format!(
            "p99 {} against {} ({})",
            ns(lat.measured_p99_ns),
            ns(lat.target_p99_ns),
            p99_off.map_or("no figure".into(), |o| format!("{o:+.0}%"))
        )
    } else {
        format!(
            "p99 {} here, not judged: {label}'s p99 ({}) is below its own time per I/O, so it \
             times part of the I/O (the write without its fdatasync)",
            ns(lat.measured_p99_ns),
            ns(lat.target_p99_ns)
        )
    };
    let verdict = if iops_ok && p99_ok {
        "reproduced".to_string()
    } else {
        format!("not reproduced within {LIKE_TOLERANCE_PCT:.0}%")
    };
    (
        iops_ok && p99_ok,
        format!(
            "latency emulated: a FUSE passthrough held {what} for {label}'s time; one I/O took \
             {} here against {} on {label} ({}), {p99}: {verdict}",
            ns(lat.measured_per_io_ns),
            ns(lat.target_per_io_ns),
            off_pct.map_or("no figure".into(), |o| format!("{o:+.0}%")),
        ),
    )
}

/// A private folder under `dir` with the emulation's backing folder and, beside it, the
/// passthrough mounted over an empty one (its path last).
fn mount_emulation(
    dir: &Path,
    delays: Delays,
    seed: u64,
) -> Result<(
    crate::files::testfile::ScratchDir,
    latency_fs::Mount,
    PathBuf,
)> {
    let folder = crate::files::testfile::ScratchDir::create(dir)?;
    let (backing, mnt) = (folder.path().join("backing"), folder.path().join("mnt"));
    for d in [&backing, &mnt] {
        std::fs::create_dir(d).with_context(|| format!("cannot create {}", d.display()))?;
    }
    let mount = latency_fs::Mount::new(&backing, &mnt, delays, seed)
        .with_context(|| format!("cannot mount the latency emulation on {}", mnt.display()))?;
    Ok((folder, mount, mnt))
}

/// The columns one I/O at a time: what a rate cap cannot make like another disk.
const ONE_AT_A_TIME: [ColumnId; 2] = [ColumnId::Qd1Read, ColumnId::SyncWrite];

/// What LABEL's one-at-a-time figures say each I/O takes, for the passthrough: a read is
/// held for its QD1 read latency (log-normal by its mean, 1/IOPS, and its p99); a direct
/// write for one round trip of that shape, and the fdatasync for the rest of LABEL's time
/// per synced write. The write's round trip has LABEL's sync-write p99 where that p99 times
/// the write alone (below the time per synced write: the published harness's), else the
/// read's; at most half the synced write's time. None without either figure.
pub fn emulated_delays(target: &Record) -> Option<Delays> {
    let read = target.test(ColumnId::Qd1Read).and_then(|t| {
        let mean = per_io_ns(Some(t))?;
        Some(Latency::from_mean_p99(
            mean,
            t.p99_ns().map_or(mean, |p| p as f64),
        ))
    });
    let synced_test = target.test(ColumnId::SyncWrite);
    let synced = per_io_ns(synced_test);
    let (direct_write, sync) = match (synced, read) {
        (Some(t), Some(r)) => {
            let write_p99 = synced_test
                .and_then(|s| s.p99_ns())
                .map(|p| p as f64)
                .filter(|p| *p < t);
            let write_mean = write_p99.map_or(r.mean_ns(), |p| p * r.mean_ns() / r.p99_ns());
            let w = r.with_mean(write_mean.min(t / 2.0));
            (Some(w), Some(r.with_mean(t - w.mean_ns())))
        }
        (Some(t), None) => (None, Some(Latency::constant(t))),
        (None, _) => (None, None),
    };
    (read.is_some() || sync.is_some()).then_some(Delays {
        read,
        direct_write,
        sync,
    })
}

fn shape(l: Option<Latency>) -> Option<LatencyShape> {
    l.map(|l| LatencyShape {
        mean_ns: l.mean_ns(),
        p99_ns: l.p99_ns(),
    })
}

/// The suite under `--like`: the rate columns on `opts.dir` (the caller has capped this
/// process), the one-at-a-time columns on a FUSE passthrough over a folder of the same disk
/// that holds each I/O for LABEL's latency. Where FUSE cannot be used here, or LABEL has no
/// one-at-a-time figures, every column runs on the disk and the like table says what the
/// caps leave out. The emulation's record, when it ran.
pub(crate) fn run_suite(
    opts: &crate::suite::SuiteOptions,
    l: &LikeTarget,
    on: &mut dyn FnMut(Event<'_>),
) -> Result<(Vec<TestResult>, Option<LatencyEmulation>)> {
    // This process (all its threads: the I/O is submitted from them, and the latency
    // emulation's server does its I/O from them) runs the columns inside the capped cgroup,
    // and goes back when the group closes, also on error.
    let mut group = crate::experiments::what_if::caps::capped_group(&l.target, &l.caps)?;
    group.adopt(std::process::id())?;
    let measured = capped_suite(opts, l, on);
    group.close().map_err(anyhow::Error::msg)?;
    measured
}

/// [`run_suite`] inside the capped cgroup.
fn capped_suite(
    opts: &crate::suite::SuiteOptions,
    l: &LikeTarget,
    on: &mut dyn FnMut(Event<'_>),
) -> Result<(Vec<TestResult>, Option<LatencyEmulation>)> {
    let columns = opts.columns();
    let delays = emulated_delays(&l.record);
    let mut emulate: Vec<ColumnId> = match (&delays, latency_fs::available()) {
        (Some(_), Ok(())) => columns
            .iter()
            .copied()
            .filter(|c| ONE_AT_A_TIME.contains(c))
            .collect(),
        _ => Vec::new(),
    };
    // Mounted before anything is measured: where the mount is refused (a container may open
    // /dev/fuse without being allowed to mount), those columns run on the disk instead.
    let mut mounted = None;
    if let Some(delays) = delays.filter(|_| !emulate.is_empty()) {
        let seed = opts.seed.unwrap_or_else(record::random::random_seed);
        match mount_emulation(&opts.dir, delays, seed) {
            Ok(m) => mounted = Some((m, delays)),
            Err(e) => {
                on(Event::Said(Said::Warning(format!(
                    "--like {}: {e:#}; qd1-read and sync-write run on this disk under the \
                         caps, and the like table says what latency that leaves out",
                    l.label
                ))));
                emulate.clear();
            }
        }
    }
    let mut progress = |p: &crate::job::run::Progress<'_>| on(Event::Suite(p));
    let on_disk: Vec<ColumnId> = columns
        .iter()
        .copied()
        .filter(|c| !emulate.contains(c))
        .collect();
    let mut tests = Vec::new();
    if !on_disk.is_empty() {
        let o = crate::suite::SuiteOptions {
            only: Some(on_disk),
            ..opts.clone()
        };
        tests = crate::suite::run_suite(&o, &mut progress)?;
    }
    let mut emulation = None;
    if let Some(((folder, mount, mnt), delays)) = mounted {
        let o = crate::suite::SuiteOptions {
            dir: mnt.clone(),
            only: Some(emulate.clone()),
            ..opts.clone()
        };
        let measured = crate::suite::run_suite(&o, &mut progress);
        let held = mount.unmount();
        drop(folder);
        let held = held.with_context(|| format!("cannot unmount {}", mnt.display()))?;
        tests.extend(measured?);
        let n = held.reads + held.direct_writes + held.syncs;
        let per = |total: u64, n: u64| if n > 0 { total as f64 / n as f64 } else { 0.0 };
        emulation = Some(LatencyEmulation {
            how: "fuse-passthrough".into(),
            columns: emulate.iter().map(|c| c.as_str().to_string()).collect(),
            read: shape(delays.read),
            direct_write: shape(delays.direct_write),
            sync: shape(delays.sync),
            held_reads: held.reads,
            held_direct_writes: held.direct_writes,
            held_syncs: held.syncs,
            late_per_io_ns: per(held.late_ns, n.saturating_sub(held.slower_here)),
            slower_here: held.slower_here,
            slower_here_per_io_ns: per(held.slower_here_ns, held.slower_here),
        });
    }
    tests.sort_by_key(|t| {
        ColumnId::ALL
            .iter()
            .position(|c| c.as_str() == t.id)
            .unwrap_or(usize::MAX)
    });
    Ok((tests, emulation))
}

/// LABEL's one-at-a-time latency (`target`) beside this run's under the caps (`here`).
fn latency(target: Option<&TestResult>, here: Option<&TestResult>) -> LikeLatency {
    let p99 = |t: Option<&TestResult>| t.and_then(|t| t.p99_ns()).map(|p| p as f64);
    let diff = |a: Option<f64>, b: Option<f64>| Some(a? - b?);
    let (tp, mp) = (per_io_ns(target), per_io_ns(here));
    let (t99, m99) = (p99(target), p99(here));
    LikeLatency {
        target_per_io_ns: tp,
        target_p99_ns: t99,
        measured_per_io_ns: mp,
        measured_p99_ns: m99,
        left_out_per_io_ns: diff(tp, mp),
        left_out_p99_ns: diff(t99, m99),
    }
}

/// What a one-at-a-time column under `--like` caps leaves out, in words.
fn latency_note(label: &str, lat: &LikeLatency) -> String {
    let left = match lat.left_out_per_io_ns {
        Some(d) if d > 0.0 => format!(
            "the emulation leaves out the difference, {} per I/O (p99: {})",
            ns(Some(d)),
            match lat.left_out_p99_ns {
                Some(p) if p > 0.0 => ns(Some(p)),
                Some(_) => "none".into(),
                None => "no figure".into(),
            }
        ),
        Some(_) => "this disk is no faster per I/O, so nothing is left out".into(),
        None => "the difference cannot be given without both figures".into(),
    };
    format!(
        "not reproducible by a cap, latency is not emulated: a cap limits the rate and adds no \
         round trip; one I/O takes {} \
         on {label} (1/IOPS, p99 {}) and {} here under the caps (p99 {}): {left}",
        ns(lat.target_per_io_ns),
        ns(lat.target_p99_ns),
        ns(lat.measured_per_io_ns),
        ns(lat.measured_p99_ns),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The runner of the issue: EBS at 1,843 QD1 read IOPS (p99 856 us) and 537 synced writes
    /// per second; this disk capped like it read at 2,988 IOPS, p99 62 us.
    #[test]
    fn the_latency_left_out_is_the_difference_per_io() {
        let lat = LikeLatency {
            target_per_io_ns: Some(1e9 / 1843.0),
            target_p99_ns: Some(856_100.0),
            measured_per_io_ns: Some(1e9 / 2988.0),
            measured_p99_ns: Some(62_000.0),
            left_out_per_io_ns: Some(1e9 / 1843.0 - 1e9 / 2988.0),
            left_out_p99_ns: Some(856_100.0 - 62_000.0),
        };
        let note = latency_note("ebs", &lat);
        assert!(note.contains("543 µs on ebs"), "{note}");
        assert!(note.contains("335 µs here"), "{note}");
        assert!(note.contains("208 µs per I/O (p99: 794 µs)"), "{note}");
    }
}

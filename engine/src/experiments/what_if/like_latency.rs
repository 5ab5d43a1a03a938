//! `--like LABEL` in a step's prediction: the one-at-a-time latency a rate cap leaves out,
//! and an estimate, labelled as one, of what it would add. A cap limits the rate
//! and adds no round trip; where FUSE can be used the `like:` condition adds one to the
//! step's folder (`setup.rs`), and the note then says only what is left out elsewhere.

use record::{ColumnId, TestResult};

/// A latency in nanoseconds as people read it, or "no figure".
pub(crate) fn ns(v: Option<f64>) -> String {
    v.map_or("no figure".into(), |v| {
        record::units::format_ns(v.max(0.0).round() as u64)
    })
}

/// Time per I/O at one I/O in flight, ns: 1 / the column's IOPS.
pub fn per_io_ns(test: Option<&TestResult>) -> Option<f64> {
    test.and_then(|t| t.headline())
        .filter(|iops| iops.is_finite() && *iops > 0.0)
        .map(|iops| 1e9 / iops)
}

/// LABEL's and this disk's time per one-at-a-time I/O, for the step predictions.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct OneAtATime {
    /// 1 / QD1 read IOPS, ns.
    pub read_ns: Option<f64>,
    /// 1 / sync-write IOPS (a 4 KiB write and its fdatasync), ns.
    pub sync_write_ns: Option<f64>,
}

impl OneAtATime {
    pub fn of(tests: &[TestResult]) -> OneAtATime {
        let find = |c: ColumnId| tests.iter().find(|t| t.id == c.as_str());
        OneAtATime {
            read_ns: per_io_ns(find(ColumnId::Qd1Read)),
            sync_write_ns: per_io_ns(find(ColumnId::SyncWrite)),
        }
    }
}

/// The latency note for a step's `like:` condition (`conditions`), when it ran and is a
/// prediction (not disturbed); `columns` are this disk's own.
pub(crate) fn step_prediction_note(
    like: Option<(&str, &OneAtATime)>,
    conditions: &[record::WhatIfCondition],
    columns: &[TestResult],
) -> Option<String> {
    let (label, target) = like?;
    let c = conditions.iter().find(|c| c.id.starts_with("like:"))?;
    if c.status != record::StepStatus::Ok || c.disturbed {
        return None;
    }
    if let Some(held_s) = c.latency_held_s {
        return Some(emulated_prediction_note(label, target, held_s));
    }
    prediction_latency_note(
        label,
        target,
        &OneAtATime::of(columns),
        c.cgroup_io.as_ref(),
    )
}

/// The note on a `like:` prediction: the latency its caps leave out and an estimate of what
/// it would add, from the I/Os the capped run's cgroup counted. None without LABEL's
/// one-at-a-time figures or the cgroup's counts.
pub(crate) fn prediction_latency_note(
    label: &str,
    target: &OneAtATime,
    here: &OneAtATime,
    io: Option<&record::CgroupIo>,
) -> Option<String> {
    if target.read_ns.is_none() && target.sync_write_ns.is_none() {
        return None;
    }
    let io = io?;
    // This disk's figure unknown: count LABEL's whole latency (an upper bound).
    let extra = |t: Option<f64>, h: Option<f64>| t.map(|t| (t - h.unwrap_or(0.0)).max(0.0));
    let read_extra = extra(target.read_ns, here.read_ns);
    let write_extra = extra(target.sync_write_ns, here.sync_write_ns);
    let add_s = (io.read_ios as f64 * read_extra.unwrap_or(0.0)
        + io.write_ios as f64 * write_extra.unwrap_or(0.0))
        / 1e9;
    let known = if here.read_ns.is_some() || here.sync_write_ns.is_some() {
        "this disk's own from its qd1-read and sync-write columns"
    } else {
        "this disk's own unknown (no qd1-read or sync-write column here), so all of it"
    };
    Some(format!(
        "latency left out of this prediction: the caps limit the rate but add no round trip; one \
         I/O at a time takes {} per read and {} per synced write on {label} against {} and {} \
         here. Estimate, not measured: the run under the caps did {} reads and {} writes (its \
         cgroup's count); if each waited for the one before it and every write was synced (an \
         upper bound: I/Os in flight together, or writes left to the page cache, pay less), \
         {label}'s latency would add up to {:.2} s ({} x {} more per read + {} x {} more per \
         write; {known})",
        ns(target.read_ns),
        ns(target.sync_write_ns),
        ns(here.read_ns),
        ns(here.sync_write_ns),
        io.read_ios,
        io.write_ios,
        add_s,
        io.read_ios,
        ns(read_extra),
        io.write_ios,
        ns(write_extra),
    ))
}

/// The note on a `like:` prediction whose step folder ran on the latency emulation.
fn emulated_prediction_note(label: &str, target: &OneAtATime, held_s: f64) -> String {
    format!(
        "latency in this prediction: {label}'s one-at-a-time latency ({} per read, {} per \
         synced write) was added on the step's folder by the latency emulation, which held its \
         I/O for {held_s:.2} s in all (the median run; held I/Os in flight together cost less); \
         the step's I/O outside that folder and $TMPDIR (target/, the project, a daemon's \
         storage) ran at this disk's latency and is left out",
        ns(target.read_ns),
        ns(target.sync_write_ns),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// EBS at 1,843 QD1 read IOPS and 537 synced writes per second against a disk at 100 us and
    /// 1 ms; the capped run's cgroup counted 1,000 reads and 500 writes.
    #[test]
    fn the_estimate_multiplies_the_counted_ios_by_the_difference_per_io() {
        let target = OneAtATime {
            read_ns: Some(1e9 / 1843.0),
            sync_write_ns: Some(1e9 / 537.0),
        };
        let here = OneAtATime {
            read_ns: Some(100_000.0),
            sync_write_ns: Some(1_000_000.0),
        };
        let io = record::CgroupIo {
            read_ios: 1000,
            write_ios: 500,
            ..Default::default()
        };
        let n = prediction_latency_note("ebs", &target, &here, Some(&io)).unwrap();
        // 1000 x (542.6 - 100) us + 500 x (1862.2 - 1000) us = 0.443 + 0.431 s.
        assert!(n.contains("up to 0.87 s"), "{n}");
        assert!(n.starts_with("latency left out"), "{n}");
        assert!(n.contains("Estimate, not measured"), "{n}");
        assert_eq!(
            prediction_latency_note("ebs", &OneAtATime::default(), &here, Some(&io)),
            None
        );
        // This disk's own figure unknown: all of the target's latency, and it says so.
        let n = prediction_latency_note("ebs", &target, &OneAtATime::default(), Some(&io)).unwrap();
        assert!(n.contains("unknown"), "{n}");
    }
}

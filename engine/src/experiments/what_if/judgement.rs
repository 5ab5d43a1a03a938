//! The judgement of an experiment: from the runs' figures (each condition's median run) to
//! the verdict by experiment and the sentence that explains it. Pure functions over figures,
//! tested with made-up ones; `content/what-if.md` states the same rule for readers.

use record::{Bound, IoCaps, StepStatus, WhatIfCondition};

use super::options::MIB;
use super::spread::middle_spread_pct;

/// A cap has slowed a step when its time grew by more than this share or the normal runs'
/// own spread, whichever is larger: a shared machine's noise is not an effect.
pub(crate) const NOISE_FLOOR: f64 = 0.25;
/// ...and by at least this many seconds (a 10 ms step doubling is start-up noise).
pub(crate) const MIN_EFFECT_S: f64 = 0.05;
/// When both caps slowed a step, one explains it alone when its extra time is this many
/// times the other's.
pub(crate) const DOMINANCE: f64 = 3.0;
/// A capped run's extra time counts as the cap's only when the I/O the cap saw could have
/// cost at least this share of it (see [`cap_cost_s`]); the rest is a shared machine's noise.
pub(crate) const MIN_CAP_COST_SHARE: f64 = 0.25;
/// A capped run is *paced* by its cap when the I/O its cgroup passed, at the capped rate,
/// takes at least this share of its median time: the throttle set that time, whatever the
/// normal runs' spread (a throttle cannot pass I/O faster than its rate, beyond a short burst).
pub(crate) const PACED_SHARE: f64 = 0.75;
/// With neither cap mattering, a step busy on a CPU for this share of its time is cpu-bound.
pub(crate) const CPU_SHARE: f64 = 0.5;

/// How busy the machine was over an experiment's runs, for the sentence when the runs spread
/// too wide to tell.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct Busy {
    /// The 1-minute load average, averaged over the ends of the runs.
    pub load_avg_1m: Option<f64>,
    /// The CPUs the steps can use.
    pub cpus: u32,
}

/// The verdict by experiment.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Judged {
    pub bound: Bound,
    pub why: String,
    /// The runs spread too wide to tell an effect from the noise (`bound` is unknown).
    pub cannot_tell: bool,
}

/// The median of `runs` by wall time (the upper one of an even count), with the spread.
pub(crate) fn summarise(id: &str, caps: Option<IoCaps>, runs: &[Run]) -> WhatIfCondition {
    let mut order: Vec<usize> = (0..runs.len()).collect();
    order.sort_by(|a, b| runs[*a].wall_s.total_cmp(&runs[*b].wall_s));
    let Some(&mid) = order.get(runs.len() / 2) else {
        return WhatIfCondition {
            id: id.into(),
            caps,
            status: StepStatus::Skipped,
            ..Default::default()
        };
    };
    let m = &runs[mid];
    let walls: Vec<f64> = runs.iter().map(|r| r.wall_s).collect();
    let (lo, hi) = walls.iter().fold((f64::INFINITY, 0.0f64), |(lo, hi), w| {
        (lo.min(*w), hi.max(*w))
    });
    let mut notes: Vec<String> = Vec::new();
    for r in runs {
        for n in &r.notes {
            if !notes.contains(n) {
                notes.push(n.clone());
            }
        }
    }
    WhatIfCondition {
        id: id.into(),
        caps,
        wall_s: m.wall_s,
        user_s: m.user_s,
        sys_s: m.sys_s,
        cpu_wait_s: m.cpu_wait_s,
        runs: runs.len() as u32,
        wall_runs_s: walls.clone(),
        spread_pct: (runs.len() > 1).then(|| {
            if m.wall_s > 0.0 {
                (hi - lo) / m.wall_s * 100.0
            } else {
                0.0
            }
        }),
        middle_spread_pct: middle_spread_pct(&walls),
        io: m.io.clone(),
        cgroup_io: m.cgroup_io,
        status: if runs.iter().all(|r| r.ok) {
            StepStatus::Ok
        } else {
            StepStatus::Failed
        },
        ratio: None,
        disturbed: false,
        latency_held_s: m.latency_held_s,
        notes,
    }
}

/// One run of a step under one condition.
#[derive(Clone, Debug, Default)]
pub(crate) struct Run {
    pub wall_s: f64,
    pub user_s: f64,
    pub sys_s: f64,
    pub cpu_wait_s: Option<f64>,
    pub ok: bool,
    pub io: Option<record::StepIo>,
    pub cgroup_io: Option<record::CgroupIo>,
    /// What the latency emulation held this run's I/O for in all, s (a `like:` run on it).
    pub latency_held_s: Option<f64>,
    pub notes: Vec<String>,
}

fn caps_text(caps: &IoCaps) -> String {
    let mut parts = Vec::new();
    match (caps.riops, caps.wiops) {
        (Some(r), Some(w)) if r == w => parts.push(format!("{r} I/Os per second")),
        (r, w) => {
            if let Some(r) = r {
                parts.push(format!("{r} read I/Os per second"));
            }
            if let Some(w) = w {
                parts.push(format!("{w} write I/Os per second"));
            }
        }
    }
    let mib = |b: u64| b as f64 / MIB as f64;
    match (caps.rbps, caps.wbps) {
        (Some(r), Some(w)) if r == w => parts.push(format!("{:.0} MiB/s", mib(r))),
        (r, w) => {
            if let Some(r) = r {
                parts.push(format!("{:.0} MiB/s reads", mib(r)));
            }
            if let Some(w) = w {
                parts.push(format!("{:.0} MiB/s writes", mib(w)));
            }
        }
    }
    parts.join(" and ")
}

/// The most time a cap can have added to a run: the I/Os and bytes the capped cgroup passed,
/// each at the capped rate, one after the other. A cap that let 26 reads through at 1000 per
/// second cost at most 26 ms, however much slower the run happened to be. None without the
/// cgroup's counters.
pub(crate) fn cap_cost_s(c: &WhatIfCondition) -> Option<f64> {
    let (caps, io) = (c.caps.as_ref()?, c.cgroup_io.as_ref()?);
    let part =
        |n: u64, rate: Option<u64>| rate.filter(|r| *r > 0).map_or(0.0, |r| n as f64 / r as f64);
    // The latency emulation's holds add to what the caps can cost (each at most once: holds
    // that overlap cost less).
    Some(
        part(io.read_ios, caps.riops)
            + part(io.write_ios, caps.wiops)
            + part(io.read_bytes, caps.rbps)
            + part(io.write_bytes, caps.wbps)
            + c.latency_held_s.unwrap_or(0.0),
    )
}

/// The spread a condition's median is judged by, as a share: its middle spread (the whole
/// spread in records without one); 0 with one run.
fn own_spread(c: &WhatIfCondition) -> f64 {
    c.middle_spread_pct.or(c.spread_pct).unwrap_or(0.0) / 100.0
}

/// The share by which `c`'s median must differ from the normal runs' to be an effect: the
/// wider of the two medians' spreads, at least [`NOISE_FLOOR`].
pub(crate) fn noise_between(baseline: &WhatIfCondition, c: &WhatIfCondition) -> f64 {
    own_spread(baseline).max(own_spread(c)).max(NOISE_FLOOR)
}

/// Whether a condition that took `ratio` of the normal time was faster beyond `noise` (a
/// share of the normal time): saved more than [`NOISE_FLOOR`], and the normal time is more
/// than `1 + noise` times its own, as a slowdown would be judged the other way round (a
/// saving, at most 100%, can never exceed a spread of more than 100%).
fn faster_beyond(ratio: f64, noise: f64) -> bool {
    ratio > 0.0 && 1.0 - ratio > NOISE_FLOOR && 1.0 / ratio - 1.0 > noise
}

/// The verdict by experiment: which cap slowed the step beyond the noise, and by how much.
/// Sets each condition's `ratio` against the baseline. Medians against the spread of the runs
/// on both sides: an effect a quiet machine would show that the spread swallows is "cannot
/// tell", said with how busy the machine was (`busy`).
pub(crate) fn judge(
    baseline: &WhatIfCondition,
    conditions: &mut [WhatIfCondition],
    busy: &Busy,
) -> Judged {
    if baseline.status != StepStatus::Ok || baseline.wall_s <= 0.0 {
        return Judged {
            bound: Bound::Unknown,
            why: "The normal run failed, so there is nothing to compare with.".into(),
            cannot_tell: false,
        };
    }
    for c in conditions.iter_mut() {
        c.ratio = (c.status == StepStatus::Ok && c.runs > 0).then(|| c.wall_s / baseline.wall_s);
        c.disturbed = disturbed(baseline, noise_between(baseline, c), c);
    }
    let find = |id: &str| conditions.iter().find(|c| c.id == id);
    let mut cmp = Comparison {
        baseline,
        noise: own_spread(baseline).max(NOISE_FLOOR),
        iops: find("iops-capped"),
        bandwidth: find("bandwidth-capped"),
        memory: find("memory"),
        missed: None,
        busy: *busy,
    };
    cmp.missed = cmp.caps_missed();
    let (bound, tail, cannot_tell) = match cmp.swallowed() {
        Some(tail) => (Bound::Unknown, tail, true),
        None => {
            let (bound, tail) = cmp.kind();
            (bound, tail, false)
        }
    };
    Judged {
        bound,
        why: format!("{}: {tail}.", cmp.figures()),
        cannot_tell,
    }
}

/// Whether a capped condition took longer than the normal run beyond the noise while the I/O
/// its cgroup let through could cost, at its caps, less than [`MIN_CAP_COST_SHARE`] of the
/// extra time: something else (a busy machine) slowed that run, not the caps.
fn disturbed(baseline: &WhatIfCondition, noise: f64, c: &WhatIfCondition) -> bool {
    let extra_s = c.wall_s - baseline.wall_s;
    c.ratio.is_some_and(|r| r > 1.0 + noise)
        && extra_s > MIN_EFFECT_S
        && cap_cost_s(c).is_some_and(|cost| cost < MIN_CAP_COST_SHARE * extra_s)
}

/// A step writing less than this to storage is not told that the caps missed its writes.
pub(crate) const MIN_WRITES_MISSED: u64 = 1 << 20;

/// The caps missed the step's I/O, as the capped cgroups' counters show.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct CapsMissed {
    /// None of its I/O at all (no cap can have slowed it), not only its writes.
    pub nothing: bool,
    /// The note: what the cgroup saw against what the step moved.
    pub why: String,
}

/// Whether the caps missed the step's I/O, from the capped runs that ran:
/// - nothing: every one let through less I/O than [`MIN_EFFECT_S`] could cost at its caps,
///   while the step moved data to or from storage in its normal run (or ran faster on
///   memory), so no cap can have slowed it;
/// - its writes: the step wrote at least [`MIN_WRITES_MISSED`] and no capped run's cgroup saw
///   a single write I/O.
///
/// Both happen on a loop device (on cgroup v1 its writes, synced or not, reach the disk below
/// through the backing file's write-back, beside the caps), on FUSE and network filesystems,
/// and on cgroup v1 for write-back the kernel's flusher does. None when the caps saw the
/// step's I/O, or no capped run ran or has counters.
pub(crate) fn caps_missed(
    baseline: &WhatIfCondition,
    conditions: &[WhatIfCondition],
) -> Option<CapsMissed> {
    let memory_saved = conditions
        .iter()
        .find(|c| c.id == "memory")
        .and_then(|m| m.ratio.map(|r| (r, noise_between(baseline, m))))
        .is_some_and(|(r, noise)| faster_beyond(r, noise));
    let ran: Vec<&WhatIfCondition> = conditions
        .iter()
        .filter(|c| c.caps.is_some() && c.status == StepStatus::Ok && c.runs > 0)
        .collect();
    if ran.is_empty() {
        return None;
    }
    let mut seen = record::CgroupIo::default();
    let mut worst_cost_s = 0.0f64;
    for c in &ran {
        let (Some(io), Some(cost)) = (c.cgroup_io, cap_cost_s(c)) else {
            return None;
        };
        worst_cost_s = worst_cost_s.max(cost);
        seen.read_ios = seen.read_ios.max(io.read_ios);
        seen.write_ios = seen.write_ios.max(io.write_ios);
        seen.read_bytes = seen.read_bytes.max(io.read_bytes);
        seen.write_bytes = seen.write_bytes.max(io.write_bytes);
    }
    let io = baseline.io.clone().unwrap_or_default();
    let moved = io.read_bytes.saturating_add(io.write_bytes);
    let nothing = worst_cost_s < MIN_EFFECT_S && (moved > 0 || memory_saved);
    let writes = io.write_bytes >= MIN_WRITES_MISSED && seen.write_ios == 0;
    if !nothing && !writes {
        return None;
    }
    let step = if moved > 0 {
        format!(
            "the step itself read {} from and wrote {} to storage in its normal run",
            record::size::format_bytes(io.read_bytes),
            record::size::format_bytes(io.write_bytes)
        )
    } else {
        "the step ran faster on memory".to_string()
    };
    let what = if nothing {
        "the disk"
    } else {
        "the step's writes"
    };
    Some(CapsMissed {
        nothing,
        why: format!(
            "the caps did not reach {what}: the capped cgroup saw at most {} read and {} write \
             I/Os ({}) per run, at most {worst_cost_s:.3} s at the caps, while {step} (a loop \
             device, a FUSE or network filesystem, or the kernel's write-back on cgroup v1 pass \
             beside the caps)",
            seen.read_ios,
            seen.write_ios,
            record::size::format_bytes(seen.read_bytes.saturating_add(seen.write_bytes)),
        ),
    })
}

/// The conditions that decide the verdict, set against the normal runs.
struct Comparison<'a> {
    baseline: &'a WhatIfCondition,
    /// The normal runs' own noise: their spread, at least [`NOISE_FLOOR`] (a condition's
    /// effect is judged against [`noise_between`]).
    noise: f64,
    iops: Option<&'a WhatIfCondition>,
    bandwidth: Option<&'a WhatIfCondition>,
    memory: Option<&'a WhatIfCondition>,
    /// Set when the caps missed the step's I/O (all of it, or its writes).
    missed: Option<CapsMissed>,
    busy: Busy,
}

impl Comparison<'_> {
    fn caps_missed(&self) -> Option<CapsMissed> {
        let conditions: Vec<WhatIfCondition> = [self.iops, self.bandwidth, self.memory]
            .into_iter()
            .flatten()
            .cloned()
            .collect();
        caps_missed(self.baseline, &conditions)
    }

    /// What the caps missed, for the sentence.
    fn missed_why(&self) -> &str {
        self.missed.as_ref().map_or("", |m| m.why.as_str())
    }

    /// Whether the I/O the cap let through could have cost a fair share of the extra time.
    fn cap_explains(&self, c: &WhatIfCondition) -> bool {
        cap_cost_s(c)
            .is_none_or(|cost| cost >= MIN_CAP_COST_SHARE * (c.wall_s - self.baseline.wall_s))
    }

    /// Whether the condition slowed the step by its cap: beyond the noise, or paced by it.
    fn slowed(&self, c: &WhatIfCondition) -> bool {
        // Caps that reached none of its I/O cannot have slowed it, whatever the clock says.
        !self.missed.as_ref().is_some_and(|m| m.nothing)
            && ((c.ratio.is_some_and(|r| {
                r > 1.0 + noise_between(self.baseline, c)
                    && c.wall_s - self.baseline.wall_s > MIN_EFFECT_S
            }) && self.cap_explains(c))
                || self.paced(c).is_some())
    }

    /// The least time the cap forced on its runs, when it paced them (see [`PACED_SHARE`])
    /// and that time alone is beyond the normal median by more than [`NOISE_FLOOR`]. Counters,
    /// not clocks: on a machine whose normal runs spread wider than the effect (a shared disk,
    /// starved CPUs), a throttle that passed 5,000 writes at 1000 a second still took 5 s.
    fn paced(&self, c: &WhatIfCondition) -> Option<f64> {
        let b = self.baseline;
        cap_cost_s(c).filter(|cost| {
            c.status == StepStatus::Ok
                && *cost >= PACED_SHARE * c.wall_s
                && *cost > b.wall_s * (1.0 + NOISE_FLOOR)
                && *cost - b.wall_s > MIN_EFFECT_S
        })
    }

    /// The ratio of a capped condition that slowed the step.
    fn slowed_ratio(&self, c: Option<&WhatIfCondition>) -> Option<f64> {
        c.filter(|c| self.slowed(c)).and_then(|c| c.ratio)
    }

    /// The share of its time memory saved (negative: it took longer).
    fn memory_saved(&self) -> Option<f64> {
        self.memory.and_then(|m| m.ratio).map(|r| 1.0 - r)
    }

    /// Whether memory saved time beyond the noise of its runs and the normal ones.
    fn memory_saved_beyond_noise(&self) -> bool {
        self.memory.is_some_and(|m| {
            m.ratio
                .is_some_and(|r| faster_beyond(r, noise_between(self.baseline, m)))
        })
    }

    /// When neither cap slowed the step beyond the noise: the effects a quiet machine would
    /// count (beyond [`NOISE_FLOOR`]) that the runs' spread swallowed, as the "cannot tell"
    /// sentence. None when nothing lies between the floor and the spread: the verdict stands.
    fn swallowed(&self) -> Option<String> {
        if self.slowed_ratio(self.iops).is_some()
            || self.slowed_ratio(self.bandwidth).is_some()
            || (self.iops.is_none() && self.bandwidth.is_none())
            || self.memory_saved_beyond_noise()
        {
            return None;
        }
        let b = self.baseline;
        let mut effects = Vec::new();
        let mut widest = 0.0f64;
        let reached = !self.missed.as_ref().is_some_and(|m| m.nothing);
        for c in [self.iops, self.bandwidth].into_iter().flatten() {
            let noise = noise_between(b, c);
            if let Some(r) = c.ratio
                && reached
                && r > 1.0 + NOISE_FLOOR
                && r <= 1.0 + noise
                && c.wall_s - b.wall_s > MIN_EFFECT_S
                && self.cap_explains(c)
            {
                effects.push(format!("{} {:.0}% slower", c.id, (r - 1.0) * 100.0));
                widest = widest.max(noise);
            }
        }
        if let (Some(m), Some(saved)) = (self.memory, self.memory_saved()) {
            let noise = noise_between(b, m);
            if saved > NOISE_FLOOR && !faster_beyond(1.0 - saved, noise) {
                effects.push(format!("memory {:.0}% faster", saved * 100.0));
                widest = widest.max(noise);
            }
        }
        if effects.is_empty() {
            return None;
        }
        Some(format!(
            "cannot tell on this busy machine: {} would count on a quiet one, but the runs \
             spread by up to {:.0}%{}; rerun on a quieter machine, or give it more runs with a \
             larger --what-if-budget-s",
            effects.join(" and "),
            widest * 100.0,
            self.how_busy()
        ))
    }

    /// " (load average 5.3 over the runs, on 2 CPUs; the normal run waited for a CPU 41% of
    /// its time)", or as much of it as is known.
    fn how_busy(&self) -> String {
        let b = self.baseline;
        let mut parts = Vec::new();
        if let Some(load) = self.busy.load_avg_1m {
            parts.push(format!(
                "load average {load:.1} over the runs, on {} CPU{}",
                self.busy.cpus,
                if self.busy.cpus == 1 { "" } else { "s" }
            ));
        }
        if let Some(wait) = b.cpu_wait_s.filter(|w| *w > 0.0 && b.wall_s > 0.0) {
            parts.push(format!(
                "the normal run waited for a CPU {:.0}% of its time",
                (wait / b.wall_s).min(1.0) * 100.0
            ));
        }
        if parts.is_empty() {
            String::new()
        } else {
            format!(" ({})", parts.join("; "))
        }
    }

    /// What a capped condition did: "at 1000 I/Os per second it took 5.78 s (15.6x)".
    fn describe(&self, c: &WhatIfCondition) -> String {
        let beyond_noise = c
            .ratio
            .is_some_and(|r| r > 1.0 + noise_between(self.baseline, c));
        let cost = match (cap_cost_s(c), self.paced(c)) {
            (Some(cost), _) if !self.cap_explains(c) => format!(
                ", but the I/O it let through could cost at most {cost:.2} s, so the rest is \
                 the machine's noise"
            ),
            (_, Some(paced)) if !beyond_noise => format!(
                ", within the runs' spread, but its I/O alone takes {paced:.2} s at the cap: \
                 the cap set its pace"
            ),
            _ => String::new(),
        };
        match c.ratio {
            Some(r) => format!(
                "at {} it took {:.2} s ({r:.1}x{cost})",
                c.caps.as_ref().map(caps_text).unwrap_or_default(),
                c.wall_s
            ),
            None => format!("{} failed", c.id),
        }
    }

    /// The sentence's figures: the normal run, each cap, memory.
    fn figures(&self) -> String {
        let mut parts: Vec<String> = [self.iops, self.bandwidth]
            .into_iter()
            .flatten()
            .map(|c| self.describe(c))
            .collect();
        if let (Some(m), Some(saved)) = (self.memory, self.memory_saved()) {
            parts.push(format!(
                "on memory {:.2} s ({:.0}% {})",
                m.wall_s,
                saved.abs() * 100.0,
                if saved >= 0.0 { "less" } else { "more" }
            ));
        }
        let b = self.baseline;
        let median = match b.spread_pct {
            Some(spread) if b.runs > 1 => format!(" (median of {}, spread {spread:.0}%)", b.runs),
            _ => " (1 run, no spread)".to_string(),
        };
        format!("Normal run {:.2} s{median}; {}", b.wall_s, parts.join("; "))
    }

    /// The kind of wait, and why: which cap slowed the step, else what the rest says.
    fn kind(&self) -> (Bound, String) {
        let b = self.baseline;
        let noise_pct = self.noise * 100.0;
        // On a shared machine a compile waits for a CPU as much as it runs on one: both are
        // the CPU setting the pace (the run-queue wait is capped at the wall time).
        let cpu_wait_s = b.cpu_wait_s.unwrap_or(0.0).min(b.wall_s);
        let cpu_share = (b.user_s + b.sys_s + cpu_wait_s) / b.wall_s;
        // Each cap's extra time, as a share of the normal run, counted at most as what its
        // I/O can have cost at the cap: a bandwidth cap that let 53 MB through at 50 MiB/s
        // added at most 1 s, however much longer its runs took (a throttle delays small
        // synced writes by its time slices, or the machine slowed them).
        let extra = |c: Option<&WhatIfCondition>| {
            c.filter(|c| self.slowed(c)).map(|c| {
                let extra_s = c.wall_s - b.wall_s;
                extra_s.min(cap_cost_s(c).unwrap_or(extra_s)) / b.wall_s
            })
        };
        match (extra(self.iops), extra(self.bandwidth)) {
            (Some(ei), Some(eb)) if ei >= DOMINANCE * eb => (
                Bound::Latency,
                "both caps slowed it, the I/O-rate cap far more: small operations set its pace \
                 (latency, or throughput at depth)"
                    .to_string(),
            ),
            (Some(ei), Some(eb)) if eb >= DOMINANCE * ei => (
                Bound::Bandwidth,
                "both caps slowed it, the bandwidth cap far more: it waits on big transfers (bandwidth)".into(),
            ),
            (Some(_), Some(_)) => (
                Bound::Mixed,
                "both caps slowed it comparably: it waits on operations and on bytes".into(),
            ),
            (Some(_), None) => (
                Bound::Latency,
                "only the I/O-rate cap slowed it: small operations set its pace (latency, or \
                 throughput at depth)"
                    .into(),
            ),
            (None, Some(_)) => (
                Bound::Bandwidth,
                "only the bandwidth cap slowed it: it waits on big transfers (bandwidth)".into(),
            ),
            (None, None) if self.iops.is_none() && self.bandwidth.is_none() => (
                Bound::Unknown,
                "no capped run, so the experiment cannot say what kind of disk wait it is".into(),
            ),
            (None, None) if self.missed.is_some() && self.memory_saved_beyond_noise() => {
                (
                    Bound::Unknown,
                    format!(
                        "{}; memory saved time, so the disk matters, but the experiment cannot \
                         judge how",
                        self.missed_why()
                    ),
                )
            }
            (None, None) if self.memory_saved_beyond_noise() => (
                Bound::Unknown,
                format!(
                    "neither cap slowed it beyond the noise ({noise_pct:.0}%), yet memory saved \
                     time: the disk matters but the caps are looser than what this disk \
                     already does"
                ),
            ),
            (None, None) if cpu_share >= CPU_SHARE => (
                Bound::Cpu,
                format!(
                    "neither cap slowed it beyond the noise ({noise_pct:.0}%) and it kept \
                     {cpu_share:.1} cores busy or waited for one: the disk does not set its pace"
                ),
            ),
            (None, None) if self.missed.is_some() => (
                Bound::Unknown,
                format!("{}; the experiment cannot judge", self.missed_why()),
            ),
            (None, None) => (
                Bound::Unknown,
                format!(
                    "neither cap slowed it beyond the noise ({noise_pct:.0}%) and it ran on or \
                     waited for a CPU only {:.0}% of the time: it waits on something else",
                    cpu_share * 100.0
                ),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The verdict and its sentence, on a machine whose load is not known.
    fn judge(b: &WhatIfCondition, c: &mut [WhatIfCondition]) -> (Bound, String) {
        let j = super::judge(b, c, &Busy::default());
        (j.bound, j.why)
    }

    fn cond(id: &str, wall_s: f64) -> WhatIfCondition {
        WhatIfCondition {
            id: id.into(),
            caps: Some(IoCaps {
                riops: Some(1000),
                wiops: Some(1000),
                ..Default::default()
            }),
            wall_s,
            runs: 1,
            ..Default::default()
        }
    }

    fn base(wall_s: f64, cpu_s: f64, spread_pct: f64) -> WhatIfCondition {
        WhatIfCondition {
            id: "baseline".into(),
            wall_s,
            user_s: cpu_s,
            runs: 3,
            spread_pct: Some(spread_pct),
            ..Default::default()
        }
    }

    #[test]
    fn the_cap_that_slows_the_step_names_its_bound() {
        let b = base(0.37, 0.2, 5.0);
        let mut c = vec![
            cond("memory", 0.12),
            cond("iops-capped", 5.78),
            cond("bandwidth-capped", 0.41),
        ];
        let (bound, why) = judge(&b, &mut c);
        assert_eq!(bound, Bound::Latency, "{why}");
        assert!(why.contains("15.6x"), "{why}");
        assert!(why.contains("only the I/O-rate cap"), "{why}");
        let mut c = vec![cond("iops-capped", 0.5), cond("bandwidth-capped", 4.0)];
        assert_eq!(judge(&b, &mut c).0, Bound::Bandwidth);
        let mut c = vec![cond("iops-capped", 2.0), cond("bandwidth-capped", 2.2)];
        assert_eq!(judge(&b, &mut c).0, Bound::Mixed);
        let mut c = vec![cond("iops-capped", 10.0), cond("bandwidth-capped", 1.0)];
        assert_eq!(judge(&b, &mut c).0, Bound::Latency);
    }

    #[test]
    fn changes_within_the_noise_are_no_effect() {
        // A compile: 10 s, 18 s of CPU, runs spread 30%: a 1.28x capped run whose cgroup let
        // through 200 reads (0.2 s at the cap) is noise.
        let b = base(10.0, 18.0, 30.0);
        let few_reads = |mut c: WhatIfCondition| {
            c.cgroup_io = Some(record::CgroupIo {
                read_ios: 200,
                ..Default::default()
            });
            c
        };
        let mut c = vec![
            few_reads(cond("iops-capped", 12.8)),
            cond("bandwidth-capped", 9.5),
        ];
        let (bound, why) = judge(&b, &mut c);
        assert_eq!(bound, Bound::Cpu, "{why}");
        assert!(why.contains("noise (30%)"), "{why}");
        // The same figures for an idle step: something else.
        let mut c = vec![
            few_reads(cond("iops-capped", 12.8)),
            cond("bandwidth-capped", 9.5),
        ];
        let (bound, why) = judge(&base(10.0, 0.5, 30.0), &mut c);
        assert_eq!(bound, Bound::Unknown, "{why}");
        assert!(why.contains("something else"), "{why}");
        // Regression: a compile on a crowded machine, 1 s on a CPU and 3 s waiting for one
        // in 4.3 s, was judged "something else".
        let mut crowded = base(4.26, 1.0, 15.0);
        crowded.cpu_wait_s = Some(3.0);
        let mut c = vec![cond("iops-capped", 4.0), cond("bandwidth-capped", 5.0)];
        assert_eq!(judge(&crowded, &mut c).0, Bound::Cpu);
        // A build 40% slower under the caps on a busy machine, whose cgroup let 26 reads
        // through (26 ms at 1000 per second): noise, not the cap.
        let b = base(1.6, 1.4, 5.0);
        let mut slow = cond("iops-capped", 2.3);
        slow.cgroup_io = Some(record::CgroupIo {
            read_ios: 26,
            read_bytes: 184_320,
            ..Default::default()
        });
        let mut c = vec![slow.clone()];
        let (bound, why) = judge(&b, &mut c);
        assert_eq!(bound, Bound::Cpu, "{why}");
        assert!(why.contains("at most 0.03 s"), "{why}");
        // The same slowdown with 1700 writes through the cap is the cap's.
        slow.cgroup_io = Some(record::CgroupIo {
            write_ios: 1700,
            ..Default::default()
        });
        assert_eq!(judge(&b, &mut [slow]).0, Bound::Latency);
        // A tiny step doubling by 20 ms is no effect either.
        let mut c = vec![cond("iops-capped", 0.04)];
        assert_eq!(judge(&base(0.02, 0.02, 0.0), &mut c).0, Bound::Cpu);
    }

    /// A step on a loop device: its synced writes land in the backing file's page cache, so
    /// the caps on the disk below see two reads; memory is far faster.
    #[test]
    fn caps_that_reach_nothing_cannot_judge() {
        let mut b = base(1.6, 0.1, 5.0);
        b.io = Some(record::StepIo {
            write_bytes: 2 << 20,
            ..Default::default()
        });
        let saw = |mut c: WhatIfCondition, read_ios: u64| {
            c.cgroup_io = Some(record::CgroupIo {
                read_ios,
                read_bytes: read_ios * 4096,
                ..Default::default()
            });
            c
        };
        let mut bw = saw(cond("bandwidth-capped", 1.7), 0);
        bw.caps = Some(IoCaps {
            rbps: Some(50 * MIB),
            wbps: Some(50 * MIB),
            ..Default::default()
        });
        let memory = |wall_s: f64| WhatIfCondition {
            caps: None,
            ..cond("memory", wall_s)
        };
        let mut c = vec![memory(0.05), saw(cond("iops-capped", 1.5), 2), bw];
        let (bound, why) = judge(&b, &mut c);
        assert_eq!(bound, Bound::Unknown, "{why}");
        assert!(why.contains("did not reach the disk"), "{why}");
        assert!(why.contains("cannot judge"), "{why}");
        assert!(!why.contains("looser"), "{why}");
        let missed = caps_missed(&b, &c).expect("missed");
        assert!(missed.nothing, "{missed:?}");
        assert!(missed.why.contains("2 read and 0 write I/Os"), "{missed:?}");
        // The same step without the memory run, slower under the cap by the clock: still no
        // verdict, the caps cannot have done it.
        let mut c = vec![saw(cond("iops-capped", 3.0), 2)];
        let (bound, why) = judge(&b, &mut c);
        assert_eq!(bound, Bound::Unknown, "{why}");
        assert!(why.contains("did not reach"), "{why}");
        // A compile whose caps saw nothing is still cpu-bound: it is busy on the CPUs.
        let mut busy = base(10.0, 18.0, 5.0);
        busy.io = b.io.clone();
        let mut c = vec![saw(cond("iops-capped", 10.2), 3)];
        assert_eq!(judge(&busy, &mut c).0, Bound::Cpu);
        // Caps that saw the step's I/O (its writes among it) judge as before.
        let mut through = saw(cond("iops-capped", 6.0), 1500);
        through.cgroup_io.as_mut().unwrap().write_ios = 500;
        let mut c = vec![through];
        assert_eq!(judge(&b, &mut c).0, Bound::Latency);
        assert_eq!(caps_missed(&b, &c), None);
        // Reads through the cap (a loop device's backing file read back), its 2 MiB of synced
        // writes never: the caps missed its writes, and the verdict cannot judge.
        let mut c = vec![memory(0.01), saw(cond("iops-capped", 1.9), 54)];
        let (bound, why) = judge(&b, &mut c);
        assert_eq!(bound, Bound::Unknown, "{why}");
        assert!(why.contains("did not reach the step's writes"), "{why}");
        assert!(!why.contains("looser"), "{why}");
        assert!(!caps_missed(&b, &c).unwrap().nothing);
        // A step that moved nothing to storage and gained nothing on memory: "something else".
        let idle = base(1.6, 0.1, 5.0);
        let mut c = vec![memory(1.6), saw(cond("iops-capped", 1.6), 0)];
        let (bound, why) = judge(&idle, &mut c);
        assert_eq!(bound, Bound::Unknown, "{why}");
        assert!(why.contains("something else"), "{why}");
    }

    /// A capped run slowed by something its caps cannot have cost (a sleep, a busy machine) is
    /// marked disturbed; one the caps explain is not.
    #[test]
    fn a_run_slower_than_its_caps_can_explain_is_disturbed() {
        let b = base(0.4, 0.1, 5.0);
        let with = |id: &str, wall_s: f64, write_ios: u64| {
            let mut c = cond(id, wall_s);
            c.caps = Some(IoCaps {
                riops: Some(2995),
                wiops: Some(2995),
                rbps: Some(401 * MIB),
                wbps: Some(401 * MIB),
            });
            c.cgroup_io = Some(record::CgroupIo {
                write_ios,
                write_bytes: write_ios * 4096,
                ..Default::default()
            });
            c
        };
        // 300 writes at 2995/s: at most 0.1 s, against 2.6 s extra.
        let mut c = vec![with("like:ebs", 3.0, 300), with("iops-capped", 3.0, 300)];
        judge(&b, &mut c);
        assert!(c.iter().all(|c| c.disturbed), "{c:#?}");
        // 6000 writes could cost 2 s of the 2.6 s: the caps' doing.
        let mut c = vec![with("like:ebs", 3.0, 6000)];
        judge(&b, &mut c);
        assert!(!c[0].disturbed, "{c:#?}");
        // Within the noise, or faster: nothing to explain.
        let mut c = vec![with("like:ebs", 0.45, 0), with("iops-capped", 0.3, 0)];
        judge(&b, &mut c);
        assert!(c.iter().all(|c| !c.disturbed), "{c:#?}");
        // No counters: nothing to judge the time by, so not marked.
        let mut bare = with("like:ebs", 3.0, 0);
        bare.cgroup_io = None;
        let mut c = vec![bare];
        judge(&b, &mut c);
        assert!(!c[0].disturbed);
    }

    #[test]
    fn failed_runs_and_missing_caps_give_no_kind() {
        let mut failed = base(1.0, 0.1, 0.0);
        failed.status = StepStatus::Failed;
        assert_eq!(judge(&failed, &mut []).0, Bound::Unknown);
        let mut c = vec![cond("memory", 0.2)];
        let (bound, why) = judge(&base(1.0, 0.1, 0.0), &mut c);
        assert_eq!(bound, Bound::Unknown);
        assert!(why.contains("no capped run"), "{why}");
        let mut f = cond("iops-capped", 3.0);
        f.status = StepStatus::Failed;
        let mut c = vec![f];
        let (_, why) = judge(&base(1.0, 0.1, 0.0), &mut c);
        assert!(why.contains("iops-capped failed"), "{why}");
        assert_eq!(c[0].ratio, None);
    }

    #[test]
    fn summary_takes_the_median_run_and_the_spread() {
        let run = |w: f64| Run {
            wall_s: w,
            ok: true,
            ..Default::default()
        };
        let s = summarise("baseline", None, &[run(2.0), run(1.0), run(1.5)]);
        assert_eq!(s.wall_s, 1.5);
        assert!((s.spread_pct.unwrap() - 100.0 / 1.5).abs() < 1e-9);
        assert_eq!(s.runs, 3);
        assert_eq!(s.status, StepStatus::Ok);
        // One run has no spread: none is recorded, and the sentence says so.
        let one = summarise("x", None, &[run(1.0)]);
        assert_eq!((one.spread_pct, one.middle_spread_pct), (None, None));
    }

    fn runs(walls: &[f64], cpu_s: f64) -> Vec<Run> {
        walls
            .iter()
            .map(|w| Run {
                wall_s: *w,
                user_s: cpu_s,
                ok: true,
                ..Default::default()
            })
            .collect()
    }

    /// Regression: on a busy 2-vCPU machine one CPU-starved normal run made a
    /// compile "unknown ... the disk matters" against a memory run of the usual time. With
    /// three normal runs the median is the usual time and the verdict is cpu.
    #[test]
    fn one_starved_normal_run_does_not_decide_against_the_medians() {
        let memory = summarise("memory", None, &runs(&[20.1, 19.8, 20.3], 36.0));
        let iops = summarise(
            "iops-capped",
            Some(IoCaps {
                riops: Some(1000),
                wiops: Some(1000),
                ..Default::default()
            }),
            &runs(&[20.6, 20.4, 21.0], 36.0),
        );
        // One run, the starved one: memory "saved" a third.
        let one = summarise("baseline", None, &runs(&[30.0], 36.0));
        let mut c = vec![memory.clone(), iops.clone()];
        let (bound, why) = judge(&one, &mut c);
        assert_eq!(bound, Bound::Unknown, "{why}");
        assert!(why.contains("1 run, no spread"), "{why}");
        assert!(!why.contains("spread 0%"), "{why}");
        // Three: the starved one is not the median.
        let three = summarise("baseline", None, &runs(&[30.0, 20.0, 20.5], 36.0));
        assert_eq!(three.wall_s, 20.5);
        let mut c = vec![memory, iops];
        let (bound, why) = judge(&three, &mut c);
        assert_eq!(bound, Bound::Cpu, "{why}");
        assert!(why.contains("median of 3"), "{why}");
    }

    #[test]
    fn the_middle_spread_leaves_out_the_outer_runs_of_more_than_four() {
        assert_eq!(middle_spread_pct(&[1.0]), None);
        assert_eq!(middle_spread_pct(&[]), None);
        // Up to 4 runs: all of them.
        let three = middle_spread_pct(&[10.0, 10.0, 15.0]).unwrap();
        assert!((three - 50.0).abs() < 1e-9, "{three}");
        // 5 runs: without the fastest and the slowest, one starved run no longer widens it.
        let five = middle_spread_pct(&[10.0, 10.1, 10.2, 10.1, 30.0]).unwrap();
        assert!((five - 0.1 / 10.1 * 100.0).abs() < 1e-9, "{five}");
        let s = summarise("x", None, &runs(&[10.0, 10.1, 10.2, 10.1, 30.0], 1.0));
        assert!(s.spread_pct.unwrap() > 190.0, "{s:?}");
        assert_eq!(s.middle_spread_pct, Some(five));
    }

    #[test]
    fn more_runs_while_the_spread_is_wide_up_to_the_most_and_the_budget() {
        use super::super::options::{MAX_RUNS, MIN_RUNS, NextRun, RunPlan};
        let plan = RunPlan {
            fixed: None,
            budget_s: 600.0,
        };
        assert_eq!(plan.min_runs(), MIN_RUNS);
        // At least 3, however alike.
        assert_eq!(plan.next(&[], 0.0), NextRun::Run);
        assert_eq!(plan.next(&[1.0, 1.0], 0.0), NextRun::Run);
        assert_eq!(plan.next(&[1.0, 1.0, 1.05], 0.0), NextRun::Enough);
        // Spread 50%: another, until the spread narrows.
        assert_eq!(plan.next(&[1.0, 1.5, 1.0], 0.0), NextRun::Run);
        assert_eq!(
            plan.next(&[1.0, 1.5, 1.0, 1.02, 1.01], 0.0),
            NextRun::Enough
        );
        // Still wide at the most: stop.
        let wide: Vec<f64> = (0..MAX_RUNS).map(|i| 1.0 + f64::from(i % 2)).collect();
        assert_eq!(plan.next(&wide, 0.0), NextRun::AtMost);
        // Another 20 s run after 590 s would pass the 600 s budget; the first 3 never stop.
        assert_eq!(plan.next(&[20.0, 40.0, 20.0], 590.0), NextRun::Budget);
        assert_eq!(plan.next(&[20.0, 40.0], 5000.0), NextRun::Run);
        // --what-if-repeat N is N, wide or not.
        let fixed = |n| RunPlan {
            fixed: Some(n),
            budget_s: 600.0,
        };
        assert_eq!(fixed(1).next(&[1.0], 0.0), NextRun::Enough);
        assert_eq!(fixed(5).next(&[1.0, 1.0, 1.0], 0.0), NextRun::Run);
        assert_eq!(fixed(2).next(&[1.0, 3.0], 0.0), NextRun::Enough);
    }

    #[test]
    fn an_effect_the_spread_swallows_cannot_be_told_and_says_how_busy() {
        // Normal runs spread 60%; memory 30% faster: beyond the 25% a quiet machine allows,
        // within the spread.
        let mut b = summarise("baseline", None, &runs(&[10.0, 14.0, 8.0], 9.0));
        b.cpu_wait_s = Some(4.0);
        assert_eq!(b.wall_s, 10.0);
        let memory = summarise("memory", None, &runs(&[7.0, 7.1, 6.9], 9.0));
        let iops = WhatIfCondition {
            cgroup_io: Some(record::CgroupIo::default()),
            ..cond("iops-capped", 10.5)
        };
        let busy = Busy {
            load_avg_1m: Some(6.24),
            cpus: 2,
        };
        let mut c = vec![memory.clone(), iops.clone()];
        let j = super::judge(&b, &mut c, &busy);
        assert!(j.cannot_tell, "{j:?}");
        assert_eq!(j.bound, Bound::Unknown, "{j:?}");
        assert!(
            j.why.contains("cannot tell on this busy machine"),
            "{}",
            j.why
        );
        assert!(j.why.contains("memory 30% faster"), "{}", j.why);
        assert!(j.why.contains("spread by up to 60%"), "{}", j.why);
        assert!(
            j.why.contains("load average 6.2 over the runs, on 2 CPUs"),
            "{}",
            j.why
        );
        assert!(
            j.why.contains("waited for a CPU 40% of its time"),
            "{}",
            j.why
        );
        // The same memory run against normal runs that agree: the disk matters, told.
        let quiet = summarise("baseline", None, &runs(&[10.0, 10.2, 9.9], 9.0));
        let mut c = vec![memory, iops.clone()];
        let j = super::judge(&quiet, &mut c, &busy);
        assert!(!j.cannot_tell, "{j:?}");
        assert!(j.why.contains("the disk matters"), "{}", j.why);
        // Nothing beyond 25% on either side: the verdict stands (cpu), wide or not.
        let same = summarise("memory", None, &runs(&[9.5, 9.6, 9.4], 9.0));
        let mut c = vec![same, iops];
        let j = super::judge(&b, &mut c, &busy);
        assert!(!j.cannot_tell, "{j:?}");
        assert_eq!(j.bound, Bound::Cpu, "{j:?}");
        // A cap that clearly slowed it is told whatever the spread of the rest.
        let mut slow = cond("iops-capped", 60.0);
        slow.cgroup_io = Some(record::CgroupIo {
            write_ios: 50_000,
            ..Default::default()
        });
        let mut c = vec![slow];
        let j = super::judge(&b, &mut c, &busy);
        assert_eq!((j.bound, j.cannot_tell), (Bound::Latency, false), "{j:?}");
    }

    /// Measured (a what-if campaign, run 2): sqlite's normal runs on a shared disk spread 0.9-7.5 s, wider
    /// than the 2.4x of the capped runs, whose cgroup passed 5176 writes (5.2 s at 1000 a
    /// second): the cap set their pace, so it slowed the step, spread or not.
    #[test]
    fn a_cap_that_paced_its_runs_slowed_the_step_whatever_the_spread() {
        let b = summarise(
            "baseline",
            None,
            &runs(&[1.14, 2.81, 7.48, 6.79, 2.22, 1.34, 0.91], 0.2),
        );
        let capped = |id: &str, caps: IoCaps, walls: &[f64], io: record::CgroupIo| {
            let mut c = summarise(id, Some(caps), &runs(walls, 0.2));
            c.cgroup_io = Some(io);
            c
        };
        let writes = |write_ios: u64, write_bytes: u64| record::CgroupIo {
            write_ios,
            write_bytes,
            ..Default::default()
        };
        let iops = capped(
            "iops-capped",
            IoCaps {
                riops: Some(1000),
                wiops: Some(1000),
                ..Default::default()
            },
            &[5.74, 5.37, 5.02],
            writes(5176, 53_620_736),
        );
        let bandwidth = capped(
            "bandwidth-capped",
            IoCaps {
                rbps: Some(50 * MIB),
                wbps: Some(50 * MIB),
                ..Default::default()
            },
            &[1.10, 1.11, 1.07],
            writes(5130, 53_362_688),
        );
        let memory = summarise("memory", None, &runs(&[0.2, 0.31, 0.34, 0.3, 0.68], 0.1));
        let mut c = vec![memory, iops.clone(), bandwidth];
        let j = super::judge(&b, &mut c, &Busy::default());
        assert_eq!(
            (j.bound, j.cannot_tell),
            (Bound::Latency, false),
            "{}",
            j.why
        );
        assert!(j.why.contains("the cap set its pace"), "{}", j.why);
        // The same capped times with a cgroup that passed a tenth of the writes: the cap did
        // not pace them, and the spread swallows the 2.4x.
        let mut few = iops;
        few.cgroup_io = Some(writes(517, 5_362_073));
        let mut c = vec![few];
        let j = super::judge(&b, &mut c, &Busy::default());
        assert_ne!(j.bound, Bound::Latency, "{}", j.why);
    }

    /// Measured (a what-if campaign, run 4): both caps slowed sqlite, the bandwidth cap's runs 2.25 s
    /// longer though its 53 MB at 50 MiB/s cost at most 1.07 s; counted at that, the I/O-rate
    /// cap's 4.9 s is far more: latency, not mixed.
    #[test]
    fn a_caps_extra_time_counts_at_most_what_its_io_can_cost() {
        let b = summarise("baseline", None, &runs(&[0.62, 0.70, 0.95, 0.66, 0.9], 0.2));
        let mut iops = cond("iops-capped", 5.64);
        iops.cgroup_io = Some(record::CgroupIo {
            write_ios: 5200,
            write_bytes: 56_000_000,
            ..Default::default()
        });
        let mut bw = iops.clone();
        bw.id = "bandwidth-capped".into();
        bw.wall_s = 2.95;
        bw.caps = Some(IoCaps {
            rbps: Some(50 * MIB),
            wbps: Some(50 * MIB),
            ..Default::default()
        });
        let mut c = vec![iops, bw];
        let (bound, why) = judge(&b, &mut c);
        assert_eq!(bound, Bound::Latency, "{why}");
        assert!(why.contains("the I/O-rate cap far more"), "{why}");
        // Without counters the clock is all there is: comparable extra times, mixed.
        for c in &mut c {
            c.cgroup_io = None;
        }
        assert_eq!(judge(&b, &mut c).0, Bound::Mixed);
    }
}

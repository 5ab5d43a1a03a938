//! What an experiment runs: the options resolved before any step runs, the conditions in
//! order with their caps, and the caps that make this disk look like another runner's.

use record::{IoCaps, Record};

use super::caps::CapTarget;

/// Default cap of the `iops-capped` condition, I/Os per second per direction.
pub const DEFAULT_CAP_IOPS: u64 = 1000;
/// Default cap of the `bandwidth-capped` condition, MiB/s per direction.
pub const DEFAULT_CAP_MIB_S: u64 = 50;

/// Bytes in a MiB, for caps given in MiB/s.
pub(crate) const MIB: u64 = 1024 * 1024;

/// What the what-if runs need, resolved once before any step runs.
#[derive(Clone, Debug)]
pub struct WhatIfOptions {
    /// Runs per condition (and of the normal run); medians when more than one.
    pub repeat: u32,
    pub cap_iops: u64,
    pub cap_mib_s: u64,
    /// `--like LABEL`: the label and the caps from its figures.
    pub like: Option<(String, IoCaps)>,
    /// The block-I/O hierarchy, or why the capped conditions cannot run (only memory runs).
    pub caps_target: Result<CapTarget, String>,
    /// Only these conditions (ids of [`CONDITION_IDS`]); None: all.
    pub only: Option<Vec<String>>,
}

/// The condition names `--what-if-only` takes (`like` is `like:<label>`).
pub const CONDITION_IDS: [&str; 4] = ["memory", "iops-capped", "bandwidth-capped", "like"];

/// One condition to run.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Condition {
    Normal,
    Memory,
    Capped { id: String, caps: IoCaps },
}

impl Condition {
    pub(crate) fn id(&self) -> &str {
        match self {
            Condition::Normal => "baseline",
            Condition::Memory => "memory",
            Condition::Capped { id, .. } => id,
        }
    }
}

impl WhatIfOptions {
    /// The conditions after the normal run, in order.
    pub(crate) fn conditions(&self) -> Vec<Condition> {
        let mut c = vec![Condition::Memory];
        if self.caps_target.is_ok() {
            c.push(Condition::Capped {
                id: "iops-capped".into(),
                caps: IoCaps {
                    riops: Some(self.cap_iops),
                    wiops: Some(self.cap_iops),
                    ..Default::default()
                },
            });
            c.push(Condition::Capped {
                id: "bandwidth-capped".into(),
                caps: IoCaps {
                    rbps: Some(self.cap_mib_s * MIB),
                    wbps: Some(self.cap_mib_s * MIB),
                    ..Default::default()
                },
            });
            if let Some((label, caps)) = &self.like {
                c.push(Condition::Capped {
                    id: format!("like:{label}"),
                    caps: *caps,
                });
            }
        }
        if let Some(only) = &self.only {
            c.retain(|c| {
                let id = c.id().split(':').next().unwrap_or_default();
                only.iter().any(|o| o == id)
            });
        }
        c
    }
}

/// The caps that make this disk look like `record`'s: reads and writes per second from its
/// rand-read/rand-write IOPS, bytes per second from its seq-read/seq-write MiB/s.
pub(crate) fn caps_like(record: &Record) -> Result<IoCaps, String> {
    use record::ColumnId;
    let fig = |c: ColumnId| {
        record
            .test(c)
            .and_then(|t| t.headline())
            .filter(|v| *v > 0.0)
    };
    let caps = IoCaps {
        riops: fig(ColumnId::RandRead).map(|v| v.round() as u64),
        wiops: fig(ColumnId::RandWrite).map(|v| v.round() as u64),
        rbps: fig(ColumnId::SeqRead).map(|v| (v * MIB as f64).round() as u64),
        wbps: fig(ColumnId::SeqWrite).map(|v| (v * MIB as f64).round() as u64),
    };
    if caps.is_empty() {
        return Err(format!(
            "the record of {} has none of seq-read, seq-write, rand-read, rand-write",
            record.runner.label
        ));
    }
    Ok(caps)
}

//! What the emulated volume does to each request: a latency per read, write and flush, and
//! the provisioned limits (operations per second, bytes per second) a request waits for.

use std::fmt;
use std::time::Duration;

use crate::Latency;

/// The longest any one request may be held. A model that would hold requests longer (a
/// target whose figures say one I/O takes seconds) is refused instead of run: a step on it
/// would take hours, and a held request delays every process that waits on the volume.
pub const MAX_HOLD: Duration = Duration::from_secs(1);

/// The largest request the kernel sends the server, bytes. EBS counts an I/O of up to
/// 256 KiB as one operation against a volume's IOPS limit, so each request is one.
pub const IO_UNIT_BYTES: u32 = 256 * 1024;

/// How far ahead of its rate a limit lets requests run: the queue a volume absorbs before
/// requests wait (a token bucket's depth), as time at the limit's rate.
const BURST_WINDOW: Duration = Duration::from_millis(10);

/// The volume's behaviour, the same for every request of a kind.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct VolumeModel {
    /// A read request's round trip.
    pub read: Latency,
    /// A write request's round trip.
    pub write: Latency,
    /// A cache flush (fsync, fdatasync, a journal commit's flush)'s round trip.
    pub flush: Latency,
    /// Operations per second the volume allows (each request up to 256 KiB is one); None: no
    /// limit.
    pub iops_limit: Option<f64>,
    /// Bytes per second the volume allows; None: no limit.
    pub bytes_per_s_limit: Option<f64>,
}

/// A model this tool will not run, with the figure that makes it so.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ModelError {
    #[error(
        "the {what} latency would hold an I/O {ms:.0} ms (p99), as long as or past the {max_ms} ms any \
         request may be held; check the runner's figures"
    )]
    LatencyTooLong {
        what: &'static str,
        ms: f64,
        max_ms: u128,
    },
    #[error(
        "an IOPS limit of {iops} would hold each I/O {ms:.0} ms, as long as or past the {max_ms} ms any \
         request may be held; use a limit of at least {min} IOPS"
    )]
    IopsTooLow {
        iops: f64,
        ms: f64,
        max_ms: u128,
        min: f64,
    },
    #[error(
        "a bandwidth limit of {bytes_per_s} B/s would hold a 256 KiB request {ms:.0} ms, past \
         the {max_ms} ms any request may be held; use at least 256 KiB/s"
    )]
    BandwidthTooLow {
        bytes_per_s: f64,
        ms: f64,
        max_ms: u128,
    },
    #[error("the model's text could not be read: {0}")]
    Unreadable(String),
}

impl VolumeModel {
    /// A volume that adds nothing: what the stack itself costs (the floor).
    pub fn floor() -> VolumeModel {
        VolumeModel {
            read: Latency::constant(1.0),
            write: Latency::constant(1.0),
            flush: Latency::constant(1.0),
            iops_limit: None,
            bytes_per_s_limit: None,
        }
    }

    /// Err names the figure that would hold a request longer than [`MAX_HOLD`].
    pub fn check(&self) -> Result<(), ModelError> {
        let max_ms = MAX_HOLD.as_millis();
        for (what, l) in [
            ("read", self.read),
            ("write", self.write),
            ("flush", self.flush),
        ] {
            let p99_ms = l.p99_ns().max(l.mean_ns()) / 1e6;
            if !(p99_ms.is_finite() && p99_ms < max_ms as f64) {
                return Err(ModelError::LatencyTooLong {
                    what,
                    ms: p99_ms,
                    max_ms,
                });
            }
        }
        if let Some(iops) = self.iops_limit {
            let ms = 1e3 / iops;
            if !(iops.is_finite() && ms < max_ms as f64) {
                return Err(ModelError::IopsTooLow {
                    iops,
                    ms,
                    max_ms,
                    min: 1e3 / max_ms as f64,
                });
            }
        }
        if let Some(bytes_per_s) = self.bytes_per_s_limit {
            let ms = 1e3 * f64::from(IO_UNIT_BYTES) / bytes_per_s;
            if !(bytes_per_s.is_finite() && ms < max_ms as f64) {
                return Err(ModelError::BandwidthTooLow {
                    bytes_per_s,
                    ms,
                    max_ms,
                });
            }
        }
        Ok(())
    }

    /// The model as one line of text, for the server process.
    pub(crate) fn to_line(self) -> String {
        let l = |l: Latency| format!("{} {}", l.mean_ns(), l.p99_ns());
        format!(
            "{} {} {} {} {}",
            l(self.read),
            l(self.write),
            l(self.flush),
            self.iops_limit.unwrap_or(0.0),
            self.bytes_per_s_limit.unwrap_or(0.0)
        )
    }

    /// Reads [`to_line`](Self::to_line)'s text back.
    pub(crate) fn from_line(line: &str) -> Result<VolumeModel, ModelError> {
        let v: Vec<f64> = line
            .split_whitespace()
            .map(str::parse)
            .collect::<Result<_, _>>()
            .map_err(|e| ModelError::Unreadable(format!("{line:?}: {e}")))?;
        let [rm, rp, wm, wp, fm, fp, iops, bw] = v[..] else {
            return Err(ModelError::Unreadable(format!(
                "{line:?}: 8 numbers expected"
            )));
        };
        let limit = |x: f64| (x > 0.0).then_some(x);
        let model = VolumeModel {
            read: Latency::from_mean_p99(rm, rp),
            write: Latency::from_mean_p99(wm, wp),
            flush: Latency::from_mean_p99(fm, fp),
            iops_limit: limit(iops),
            bytes_per_s_limit: limit(bw),
        };
        model.check()?;
        Ok(model)
    }
}

impl fmt::Display for VolumeModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let us = |l: Latency| {
            format!(
                "{:.0} us (p99 {:.0} us)",
                l.mean_ns() / 1e3,
                l.p99_ns() / 1e3
            )
        };
        write!(
            f,
            "read {}, write {}, flush {}",
            us(self.read),
            us(self.write),
            us(self.flush)
        )?;
        if let Some(iops) = self.iops_limit {
            write!(f, ", {iops:.0} IOPS")?;
        }
        if let Some(b) = self.bytes_per_s_limit {
            write!(f, ", {:.0} MiB/s", b / (1024.0 * 1024.0))?;
        }
        Ok(())
    }
}

/// A rate limit as a virtual clock (GCRA, the token bucket's equivalent): each request
/// advances the clock by its cost; a request may start once the clock is within the burst
/// window of now.
#[derive(Debug, Default)]
pub(crate) struct Gate {
    /// Theoretical arrival time of the next request, ns on the monotonic clock.
    tat_ns: u64,
}

impl Gate {
    /// When a request arriving at `now_ns` that costs `cost_ns` of the limit may start.
    pub(crate) fn admit(&mut self, now_ns: u64, cost_ns: u64) -> u64 {
        let burst = BURST_WINDOW.as_nanos() as u64;
        let tat = self.tat_ns.max(now_ns);
        let start = now_ns.max(tat.saturating_sub(burst));
        self.tat_ns = tat + cost_ns;
        start
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(read_us: f64) -> VolumeModel {
        VolumeModel {
            read: Latency::from_mean_p99(read_us * 1e3, read_us * 2e3),
            ..VolumeModel::floor()
        }
    }

    #[test]
    fn a_model_round_trips_through_its_line() {
        let mut m = model(500.0);
        m.iops_limit = Some(3000.0);
        m.bytes_per_s_limit = Some(125.0 * 1024.0 * 1024.0);
        let back = VolumeModel::from_line(&m.to_line()).unwrap();
        assert!((back.read.p99_ns() / m.read.p99_ns() - 1.0).abs() < 1e-9);
        assert_eq!(back.iops_limit, Some(3000.0));
        assert_eq!(back.bytes_per_s_limit, m.bytes_per_s_limit);
        assert!(VolumeModel::from_line("1 2 3").is_err());
    }

    #[test]
    fn a_model_that_would_hold_an_io_past_the_bound_is_refused_with_its_figure() {
        let err = VolumeModel {
            iops_limit: Some(1.0),
            ..VolumeModel::floor()
        }
        .check()
        .unwrap_err();
        assert!(err.to_string().contains("IOPS limit of 1 "), "{err}");
        let err = model(2_000_000.0).check().unwrap_err();
        assert!(err.to_string().contains("read latency"), "{err}");
        let err = VolumeModel {
            bytes_per_s_limit: Some(1000.0),
            ..VolumeModel::floor()
        }
        .check()
        .unwrap_err();
        assert!(err.to_string().contains("1000 B/s"), "{err}");
        assert!(model(900.0).check().is_ok());
    }

    #[test]
    fn the_gate_lets_a_burst_through_then_paces_at_the_rate() {
        let mut g = Gate::default();
        let cost = 1_000_000; // 1,000 per second
        let starts: Vec<u64> = (0..30).map(|_| g.admit(0, cost)).collect();
        // The first 10 ms worth (11 requests) start at once, the rest 1 ms apart.
        assert_eq!(starts.iter().filter(|&&s| s == 0).count(), 11);
        assert_eq!(starts[29] - starts[28], cost);
        // After an idle second the clock does not hand out a second's worth of credit.
        let later = 10_000_000_000;
        let again: Vec<u64> = (0..30).map(|_| g.admit(later, cost)).collect();
        assert_eq!(again.iter().filter(|&&s| s == later).count(), 11);
    }
}

//! A volume's provisioned limit and each figure's share of it.
//!
//! Cloud volumes are sold by IOPS and bandwidth: an EBS gp3 volume gets 3,000 IOPS and
//! 125 MiB/s unless more is bought, an OCI block volume so many per GB. A figure means more set
//! beside the limit it runs into ("46.9 MiB/s of 47.0 provisioned: at the limit") than alone.
//! The user gives the limit (`--provisioned IOPS,BANDWIDTH`), or a record names a volume whose
//! defaults are known ([`KNOWN_DEFAULTS`]); a figure within [`AT_LIMIT_SHARE`] of it is "at
//! the provisioned limit". Throughput limits are per volume; a figure that stays the same
//! across volume types with different limits is another cap (the instance's), which the
//! methodology page describes.

use crate::{ColumnId, Provisioned, Record, TestResult};

const MIB: f64 = 1_048_576.0;

/// A figure within this share of its limit, either way, is "at the provisioned limit": clouds
/// enforce limits with token buckets that let a few per cent through either way. Further above
/// it, something else served the figure (a cache, burst credits, a wrong limit).
pub const AT_LIMIT_SHARE: f64 = 0.05;

/// A volume type's defaults, known from its provider's documentation.
#[derive(Clone, Copy, Debug)]
pub struct KnownDefault {
    /// Matched (case-insensitive) against the record's runner variant, e.g. "gp3 default".
    pub variant_contains: &'static str,
    pub iops: f64,
    pub bytes_s: f64,
    pub basis: &'static str,
}

/// The defaults a record's runner variant can name.
pub const KNOWN_DEFAULTS: &[KnownDefault] = &[KnownDefault {
    // Only the default: "gp3 provisioned 1000 MiB/s, 16k IOPS" is a gp3 too, with other limits.
    variant_contains: "gp3 default",
    // AWS, "Amazon EBS General Purpose SSD volumes": gp3 baseline 3,000 IOPS and 125 MiB/s
    // at any size, more only when bought.
    iops: 3000.0,
    bytes_s: 125.0 * MIB,
    basis: "EBS gp3 default (3,000 IOPS, 125 MiB/s)",
}];

impl Provisioned {
    /// `IOPS,BANDWIDTH` as given to `--provisioned`: `3000,125M` (bandwidth per second, with
    /// K/M/G as powers of 1024, `/s` optional). `option` names the flag in errors.
    pub fn parse(option: &str, text: &str) -> Result<Provisioned, String> {
        let bad = |why: &str| {
            format!(
                "{option} {text}: {why}; give IOPS,BANDWIDTH, e.g. {option} 3000,125M \
                 (3,000 IOPS and 125 MiB/s, an EBS gp3 volume's default)"
            )
        };
        let Some((iops, bw)) = text.split_once(',') else {
            return Err(bad("needs two figures separated by a comma"));
        };
        let iops: f64 = iops
            .trim()
            .replace('_', "")
            .parse()
            .map_err(|_| bad("the IOPS figure is not a number"))?;
        if !(iops.is_finite() && iops > 0.0) {
            return Err(bad("the IOPS figure must be above 0"));
        }
        let bw = bw.trim();
        let bw = bw.strip_suffix("/s").unwrap_or(bw);
        let bytes_s = crate::size::parse_size(bw, crate::size::SizeDialect::Tool)
            .filter(|b| *b > 0)
            .ok_or_else(|| bad("the bandwidth is not a size per second above 0"))?;
        Ok(Provisioned {
            iops,
            bytes_s: bytes_s as f64,
            source: option.to_string(),
        })
    }

    /// The known default a runner variant names, if any.
    pub fn known_default(variant: Option<&str>) -> Option<Provisioned> {
        let v = variant?.to_ascii_lowercase();
        KNOWN_DEFAULTS
            .iter()
            .find(|d| v.contains(d.variant_contains))
            .map(|d| Provisioned {
                iops: d.iops,
                bytes_s: d.bytes_s,
                source: d.basis.to_string(),
            })
    }

    /// The limit for a record: the one it was run with, else a known default of its variant.
    pub fn for_record(record: &Record) -> Option<Provisioned> {
        record
            .settings
            .provisioned
            .clone()
            .or_else(|| Provisioned::known_default(record.runner.variant.as_deref()))
    }
}

/// One figure set beside its limit.
#[derive(Clone, Debug, PartialEq)]
pub struct Share {
    /// The figure and its limit, in the same unit (IOPS, or bytes/s).
    pub figure: f64,
    pub limit: f64,
    /// "IOPS" or "bandwidth".
    pub what: &'static str,
}

impl Share {
    pub fn fraction(&self) -> f64 {
        self.figure / self.limit
    }

    pub fn at_limit(&self) -> bool {
        (self.fraction() - 1.0).abs() <= AT_LIMIT_SHARE
    }

    pub fn above_limit(&self) -> bool {
        self.fraction() > 1.0 + AT_LIMIT_SHARE
    }

    /// "99.8% of the provisioned 125.0 MiB/s: at the provisioned limit".
    pub fn describe(&self) -> String {
        let limit = if self.what == "IOPS" {
            format!("{:.0} IOPS", self.limit)
        } else {
            format!("{:.1} MiB/s", self.limit / MIB)
        };
        let pct = self.fraction() * 100.0;
        if self.at_limit() {
            format!("{pct:.1}% of the provisioned {limit}: at the provisioned limit")
        } else if self.above_limit() {
            format!(
                "{pct:.1}% of the provisioned {limit}: above it (a cache, burst credits, or \
                 a higher limit than given)"
            )
        } else {
            format!("{pct:.1}% of the provisioned {limit}")
        }
    }
}

/// The share of the limit a test's figures take: IOPS for a random or one-at-a-time test,
/// bandwidth for a sequential one (a column's headline); for other tests whichever share is
/// the larger, since that is the limit the test runs into.
pub fn share(limit: &Provisioned, test: &TestResult) -> Option<Share> {
    let d = test.main_direction()?;
    let iops = Share {
        figure: d.iops,
        limit: limit.iops,
        what: "IOPS",
    };
    let bw = Share {
        figure: d.mib_s * MIB,
        limit: limit.bytes_s,
        what: "bandwidth",
    };
    match test.column() {
        Some(ColumnId::SeqRead | ColumnId::SeqWrite) => Some(bw),
        Some(_) => Some(iops),
        None => Some(if bw.fraction() > iops.fraction() {
            bw
        } else {
            iops
        }),
    }
}

/// Bandwidth set beside the limit (for reads that report bytes per second only).
pub fn bandwidth_share(limit: &Provisioned, bytes_s: f64) -> Share {
    Share {
        figure: bytes_s,
        limit: limit.bytes_s,
        what: "bandwidth",
    }
}

/// IOPS set beside the limit.
pub fn iops_share(limit: &Provisioned, iops: f64) -> Share {
    Share {
        figure: iops,
        limit: limit.iops,
        what: "IOPS",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_iops_and_bandwidth() {
        let p = Provisioned::parse("--provisioned", "3000,125M").unwrap();
        assert_eq!(p.iops, 3000.0);
        assert_eq!(p.bytes_s, 125.0 * MIB);
        let p = Provisioned::parse("--provisioned", "16_000, 1G/s").unwrap();
        assert_eq!(p.iops, 16000.0);
        assert_eq!(p.bytes_s, 1024.0 * MIB);
        for bad in ["3000", "x,125M", "3000,fast", "0,125M", "3000,0", ""] {
            let e = Provisioned::parse("--provisioned", bad).unwrap_err();
            assert!(e.starts_with("--provisioned"), "{bad}: {e}");
        }
    }

    #[test]
    fn gp3_is_a_known_default_and_shares_are_judged() {
        let p = Provisioned::known_default(Some("gp3 default")).unwrap();
        assert_eq!((p.iops, p.bytes_s), (3000.0, 125.0 * MIB));
        assert!(Provisioned::known_default(Some("io2 16k")).is_none());
        assert!(Provisioned::known_default(Some("gp3 provisioned 1000 MiB/s")).is_none());
        assert!(Provisioned::known_default(None).is_none());
        let s = iops_share(&p, 2990.0);
        assert!(s.at_limit());
        assert!(s.describe().contains("at the provisioned limit"), "{s:?}");
        assert!(
            iops_share(&p, 3140.0).at_limit(),
            "a few per cent over is at it"
        );
        let s = iops_share(&p, 6000.0);
        assert!(!s.at_limit() && s.above_limit());
        assert!(s.describe().contains("above it"), "{s:?}");
        let s = bandwidth_share(&p, 60.0 * MIB);
        assert!(!s.at_limit());
        assert_eq!(s.describe(), "48.0% of the provisioned 125.0 MiB/s");
    }
}

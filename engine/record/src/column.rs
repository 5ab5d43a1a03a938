//! The six columns of the standard suite: their ids, and the settings each runs with.
//!
//! The settings are data ([`ColumnId::settings`]): the engine builds each column's job from
//! them, and the site's methodology page prints its table from them, so the two cannot drift.

use serde::{Deserialize, Serialize};

/// The six columns of the standard suite, in the order the site shows them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "kebab-case")]
pub enum ColumnId {
    SeqRead,
    SeqWrite,
    RandRead,
    RandWrite,
    Qd1Read,
    SyncWrite,
}

/// Which figure of a column is its headline.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Headline {
    MibPerSecond,
    Iops,
}

impl Headline {
    /// The headline's unit: "MiB/s" or "IOPS".
    pub fn unit(self) -> &'static str {
        match self {
            Headline::MibPerSecond => "MiB/s",
            Headline::Iops => "IOPS",
        }
    }
}

impl ColumnId {
    pub const ALL: [ColumnId; 6] = [
        ColumnId::SeqRead,
        ColumnId::SeqWrite,
        ColumnId::RandRead,
        ColumnId::RandWrite,
        ColumnId::Qd1Read,
        ColumnId::SyncWrite,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ColumnId::SeqRead => "seq-read",
            ColumnId::SeqWrite => "seq-write",
            ColumnId::RandRead => "rand-read",
            ColumnId::RandWrite => "rand-write",
            ColumnId::Qd1Read => "qd1-read",
            ColumnId::SyncWrite => "sync-write",
        }
    }

    pub fn parse(s: &str) -> Option<ColumnId> {
        ColumnId::ALL.into_iter().find(|c| c.as_str() == s)
    }

    /// Human title, e.g. "Sequential read".
    pub fn title(self) -> &'static str {
        match self {
            ColumnId::SeqRead => "Sequential read",
            ColumnId::SeqWrite => "Sequential write",
            ColumnId::RandRead => "Random read",
            ColumnId::RandWrite => "Random write",
            ColumnId::Qd1Read => "QD1 read",
            ColumnId::SyncWrite => "Synced write",
        }
    }

    pub fn headline(self) -> Headline {
        match self {
            ColumnId::SeqRead | ColumnId::SeqWrite => Headline::MibPerSecond,
            _ => Headline::Iops,
        }
    }

    /// Whether the column reads (else it writes).
    pub fn is_read(self) -> bool {
        matches!(
            self,
            ColumnId::SeqRead | ColumnId::RandRead | ColumnId::Qd1Read
        )
    }
}

impl std::fmt::Display for ColumnId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How one column runs: fio's names and figures, as the public runner-benchmark pages use them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ColumnSettings {
    /// fio's `rw`: `read`, `write`, `randread` or `randwrite`.
    pub rw: &'static str,
    pub block_bytes: u64,
    /// I/Os in flight per job.
    pub iodepth: u32,
    /// Jobs, each with a file of its own.
    pub numjobs: u32,
    /// `fdatasync` after every this many writes (the synced-write column: after each one).
    pub fdatasync_every: Option<u32>,
}

const KIB4: u64 = 4096;
const MIB: u64 = 1 << 20;

impl ColumnId {
    /// The column's settings (CONTRACT section 1).
    pub fn settings(self) -> ColumnSettings {
        let (rw, block_bytes, iodepth, numjobs, fdatasync_every) = match self {
            ColumnId::SeqRead => ("read", MIB, 32, 1, None),
            ColumnId::SeqWrite => ("write", MIB, 32, 1, None),
            ColumnId::RandRead => ("randread", KIB4, 32, 4, None),
            ColumnId::RandWrite => ("randwrite", KIB4, 32, 4, None),
            ColumnId::Qd1Read => ("randread", KIB4, 1, 1, None),
            ColumnId::SyncWrite => ("write", KIB4, 1, 1, Some(1)),
        };
        ColumnSettings {
            rw,
            block_bytes,
            iodepth,
            numjobs,
            fdatasync_every,
        }
    }
}

impl ColumnSettings {
    /// The record's `sync` spelling of these settings: "none" or "fdatasync:N".
    pub fn sync_name(&self) -> String {
        match self.fdatasync_every {
            None => "none".into(),
            Some(n) => format!("fdatasync:{n}"),
        }
    }
}

/// The I/O backends a job can run on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BackendKind {
    Psync,
    IoUring,
    Libaio,
}

/// What a job's file lives on, as far as `--engine auto` tells the cases apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Medium {
    /// Anything that is not memory: a device answers the I/Os.
    Disk,
    /// tmpfs or ramfs with the file opened O_DIRECT (tmpfs accepts it since Linux 6.6): the
    /// case the published harness measures (`fio --direct=1 --ioengine=libaio`).
    MemoryDirect,
    /// tmpfs or ramfs without O_DIRECT (ramfs always, tmpfs before 6.6, or `--direct 0`):
    /// buffered I/O on memory, where the published harness (always O_DIRECT) made no row.
    MemoryBuffered,
}

impl BackendKind {
    /// The record's `engine.used`.
    pub fn as_str(self) -> &'static str {
        match self {
            BackendKind::Psync => "psync",
            BackendKind::IoUring => "io_uring",
            BackendKind::Libaio => "libaio",
        }
    }

    /// The backend `--engine auto` picks for a job at this depth on this medium, `synced`
    /// when each write is followed by an fsync/fdatasync.
    ///
    /// On a disk, psync at depth 1 (one system call per I/O is the cheapest) and io_uring
    /// deeper; a synced write at depth 1 takes libaio, the published harness's path, which
    /// spent less CPU per synced write than psync here (87.7 us against 95.5 us and fio's
    /// 91.1 us: docs/benchmarks/2026-12-03-dev-vm/sync-write-cpu.md). On memory every I/O completes inside the system call, so a figure there is the
    /// cost of the I/O path itself, not of a device. With O_DIRECT, libaio at every depth:
    /// the published harness's path (fio `--ioengine=libaio`), which keeps the figure
    /// comparable with published tmpfs rows. Without O_DIRECT there is no published row to
    /// compare with, and libaio's queue only hurts: each `io_submit` copies its I/O before it
    /// returns, so a job at depth 32 does 32 whole I/Os before it reaps the first, each I/O's
    /// latency holds the copies queued ahead of it, and on a starved CPU a short window can end
    /// before one completion is counted. psync times each I/O on its own. Where the chosen
    /// backend is refused, psync.
    pub fn auto(iodepth: u32, medium: Medium, synced: bool) -> BackendKind {
        match medium {
            Medium::MemoryDirect => BackendKind::Libaio,
            Medium::MemoryBuffered => BackendKind::Psync,
            Medium::Disk if iodepth > 1 => BackendKind::IoUring,
            Medium::Disk if synced => BackendKind::Libaio,
            Medium::Disk => BackendKind::Psync,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn column_ids_round_trip() {
        for c in ColumnId::ALL {
            assert_eq!(ColumnId::parse(c.as_str()), Some(c));
            let json = serde_json::to_string(&c).unwrap();
            assert_eq!(json, format!("\"{}\"", c.as_str()));
        }
        assert_eq!(ColumnId::parse("seq_read"), None);
    }

    #[test]
    fn auto_takes_the_published_path_only_on_memory_with_o_direct() {
        for depth in [1, 32] {
            for synced in [false, true] {
                assert_eq!(
                    BackendKind::auto(depth, Medium::MemoryDirect, synced),
                    BackendKind::Libaio
                );
                assert_eq!(
                    BackendKind::auto(depth, Medium::MemoryBuffered, synced),
                    BackendKind::Psync
                );
                assert_eq!(
                    BackendKind::auto(32, Medium::Disk, synced),
                    BackendKind::IoUring
                );
            }
        }
        assert_eq!(
            BackendKind::auto(1, Medium::Disk, false),
            BackendKind::Psync
        );
        assert_eq!(
            BackendKind::auto(1, Medium::Disk, true),
            BackendKind::Libaio
        );
    }

    #[test]
    fn settings_follow_the_contract() {
        let s = ColumnId::RandWrite.settings();
        assert_eq!(
            (s.rw, s.block_bytes, s.iodepth, s.numjobs),
            ("randwrite", 4096, 32, 4)
        );
        assert_eq!(ColumnId::SyncWrite.settings().fdatasync_every, Some(1));
        for c in ColumnId::ALL {
            assert_eq!(c.is_read(), c.settings().rw.contains("read"), "{c}");
        }
    }
}

//! What the analysis of a step across runners found: the figures a time is ranked against,
//! each link, the call and why no call was made. The data the deciding code writes and the
//! wording, the plots and the export read.

use record::{Bound, ColumnId, StorageClass};

/// Fewer runners than this and no call is made.
pub(crate) const MIN_RUNNERS: usize = 5;
/// Whole-second timings are too coarse when one second is more than this share of the step's
/// median time: the ranks would mostly order rounding.
pub(crate) const MAX_RESOLUTION_SHARE: f64 = 0.10;

/// What a step's time is ranked against.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Figure {
    Column(ColumnId),
    CpuSingle,
    CpuMulti,
}

/// What a figure stands for, in the site's one vocabulary: latency (one operation at a time,
/// or synced: QD1 read, sync-write), throughput at depth (many small operations in flight:
/// random read and write), bandwidth (big sequential transfers) and the CPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Family {
    Latency,
    Throughput,
    Bandwidth,
    Cpu,
}

pub(crate) fn is_throughput_column(c: ColumnId) -> bool {
    matches!(c, ColumnId::RandRead | ColumnId::RandWrite)
}

pub(crate) fn is_latency_column(c: ColumnId) -> bool {
    matches!(c, ColumnId::Qd1Read | ColumnId::SyncWrite)
}

impl Figure {
    pub(crate) const ALL: [Figure; 8] = [
        Figure::Column(ColumnId::SeqRead),
        Figure::Column(ColumnId::SeqWrite),
        Figure::Column(ColumnId::RandRead),
        Figure::Column(ColumnId::RandWrite),
        Figure::Column(ColumnId::Qd1Read),
        Figure::Column(ColumnId::SyncWrite),
        Figure::CpuSingle,
        Figure::CpuMulti,
    ];

    /// The id used in `data/steps.json`: a column id, `cpu-single` or `cpu-multi`.
    pub(crate) fn id(self) -> &'static str {
        match self {
            Figure::Column(c) => c.as_str(),
            Figure::CpuSingle => "cpu-single",
            Figure::CpuMulti => "cpu-multi",
        }
    }

    pub(crate) fn title(self) -> &'static str {
        match self {
            Figure::Column(c) => c.title(),
            Figure::CpuSingle => "CPU, one thread",
            Figure::CpuMulti => "CPU, all threads",
        }
    }

    pub(crate) fn family(self) -> Family {
        match self {
            Figure::Column(c) if is_latency_column(c) => Family::Latency,
            Figure::Column(c) if is_throughput_column(c) => Family::Throughput,
            Figure::Column(_) => Family::Bandwidth,
            _ => Family::Cpu,
        }
    }

    pub(crate) fn is_cpu(self) -> bool {
        self.family() == Family::Cpu
    }
}

/// What a step follows across runners (the `follows` of `data/steps.json`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Follows {
    Latency,
    Throughput,
    Bandwidth,
    Cpu,
    /// Two runners with the same CPU and disks at least [`DECIDING_PAIR_RATIO`] apart in every
    /// disk figure took the same time (within its resolution): whatever sets its pace, it is
    /// not the disk.
    NotTheDisk,
    /// Enough runners, but no controlled link is clear: the data cannot tell.
    Neither,
    /// Too few runners, or too little variety among them, to try.
    TooFew,
}

impl Follows {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Follows::Latency => "latency",
            Follows::Throughput => "throughput",
            Follows::Bandwidth => "bandwidth",
            Follows::Cpu => "cpu",
            Follows::NotTheDisk => "not-disk",
            Follows::Neither => "neither",
            Follows::TooFew => "too-few",
        }
    }

    pub(super) fn of(f: Family) -> Follows {
        match f {
            Family::Latency => Follows::Latency,
            Family::Throughput => Follows::Throughput,
            Family::Bandwidth => Follows::Bandwidth,
            Family::Cpu => Follows::Cpu,
        }
    }
}

/// How the call was made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum By {
    Experiment,
    /// A pair of runners that differ in disk only ([`DiskOnlyPair`]).
    DiskOnlyPair,
    Correlation,
}

impl By {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            By::Experiment => "experiment",
            By::DiskOnlyPair => "disk-only-pair",
            By::Correlation => "correlation",
        }
    }
}

/// Why no call was made from the correlations.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum NoCall {
    /// Fewer than [`MIN_RUNNERS`] runners have the step's time and figures.
    TooFewRunners { n: usize },
    /// Every column's figure is about the same on every runner (within the tie tolerance).
    OneDiskFigure,
    /// The step took the same time everywhere.
    TimeDoesNotVary,
    /// Published whole-second times, and one second is a large share of the step.
    CoarseTimes { median_s: f64 },
    /// No CPU figures (of one benchmark) on enough runners to hold the CPU fixed.
    NoCpuFigures,
    /// Controlled figures computed, but no interval lies clear of zero.
    Undecided,
}

/// A runner's point on a scatter plot.
#[derive(Clone, Debug, PartialEq)]
pub struct Point {
    pub label: String,
    pub class: StorageClass,
    pub imported: bool,
    /// The figure (MiB/s, IOPS or CPU score).
    pub x: f64,
    pub time_s: f64,
}

/// One step against one figure across runners.
#[derive(Clone, Debug)]
pub(crate) struct Link {
    pub figure: Figure,
    /// Runners with both the figure and the step's time.
    pub points: Vec<Point>,
    /// Spearman's rho of figure and time over `points` (negative: a better figure, a faster step).
    pub rho: Option<f64>,
    /// What was held fixed for `rho_controlled`: the CPU for a disk figure, the deciding disk
    /// figure for a CPU figure.
    pub held: Option<Figure>,
    pub rho_controlled: Option<f64>,
    /// Runners with the figure, the time and the held figure.
    pub n_controlled: usize,
    /// Percentile bootstrap interval of `rho_controlled` ([`rank::COVERAGE`]).
    pub interval: Option<super::rank::Interval>,
    /// Share of resamples where `rho_controlled` was defined.
    pub defined_share: f64,
}

impl Link {
    /// Whether the controlled link is clear: the interval lies entirely below zero.
    pub(crate) fn clear(&self) -> bool {
        self.interval.is_some_and(|i| i.hi < 0.0) && self.rho_controlled.is_some_and(|r| r < 0.0)
    }
}

/// Two runners on the same CPU level (both CPU figures within the tie tolerance, the same
/// number of vCPUs) whose disks differ, one better in every disk figure both have: a natural
/// experiment in the data.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct DiskOnlyPair {
    /// The disk figure quoted (the deciding or best disk figure where the pair has it).
    pub disk: ColumnId,
    /// (label, class, disk figure, step time) of the runner with the better disk first.
    pub better: (String, StorageClass, f64, f64),
    pub worse: (String, StorageClass, f64, f64),
    /// The smallest ratio, better over worse, across the disk figures both runners have.
    pub min_ratio: f64,
    /// Memory of the better-disk runner and of the other, GiB: the pair holds the CPU fixed,
    /// not the memory (a bigger page cache can hide a slow disk).
    pub memory_gib: (f64, f64),
    /// The timings' resolution: 1 s for whole-second (published) times.
    pub resolution_s: f64,
    /// The largest difference between the two times still read as "the same".
    pub allowance_s: f64,
    pub reading: PairReading,
}

/// What a disk-only pair says about a step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PairReading {
    /// Disks at least [`DECIDING_PAIR_RATIO`] apart in every figure, the times within the
    /// allowance: the step does not follow the disk. This decides the call (below an experiment).
    NotTheDisk,
    /// The better disk's time is shorter by more than the allowance: the disk matters.
    TheDisk,
    /// Neither: the disks are closer than [`DECIDING_PAIR_RATIO`], the step is too short for its
    /// resolution, or the better disk was the slower run (something else differs).
    Unclear,
}

impl PairReading {
    pub fn as_str(self) -> &'static str {
        match self {
            PairReading::NotTheDisk => "not-disk",
            PairReading::TheDisk => "disk",
            PairReading::Unclear => "unclear",
        }
    }
}

/// At least this ratio between two runners' disk figures makes them a pair "differing in disk".
pub(crate) const PAIR_DISK_RATIO: f64 = 2.0;
/// At least this ratio in every disk figure, and equal times, make a pair decide "not the disk".
pub(crate) const DECIDING_PAIR_RATIO: f64 = 10.0;

/// A verdict by experiment on one runner, which outranks the correlations.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Experiment {
    pub runner: String,
    pub bound: Bound,
    pub why: String,
}

#[derive(Clone, Debug)]
pub(crate) struct StepAnalysis {
    pub id: String,
    pub name: String,
    /// The job the step belongs to: `cargo-diskbench` for this tool's steps, else the
    /// published suite.
    pub suite: String,
    /// Runners with a time for the step.
    pub n: usize,
    /// Runners whose times are all imported (published), never shown as measured.
    pub imported_runners: usize,
    /// Every link: six columns, then both CPU figures.
    pub links: Vec<Link>,
    /// The CPU benchmark whose figures were used, and runners left out because their CPU
    /// figures come from another benchmark.
    pub cpu_benchmark: Option<String>,
    pub cpu_other_benchmark: usize,
    /// The CPU figure held fixed for the disk figures.
    pub cpu_held: Option<Figure>,
    /// The disk figure with the strongest link with the CPU held fixed (held fixed for the CPU).
    pub best_disk: Option<ColumnId>,
    /// The figure that decided the call, when one did.
    pub deciding: Option<Figure>,
    pub follows: Follows,
    pub by: By,
    pub no_call: Option<NoCall>,
    /// What the correlations alone would say when an experiment decided.
    pub follows_by_correlation: Follows,
    pub experiment: Option<Experiment>,
    /// Runners where the step failed at least once (in the window).
    pub failed_runners: usize,
    /// Two runners with about the same CPU whose disks differ most: the closest thing to an
    /// experiment the data holds. Its reading decides "not the disk" when the disks are at
    /// least [`DECIDING_PAIR_RATIO`] apart in every figure and the times agree (an experiment
    /// outranks it); otherwise it is shown beside the call.
    pub disk_only_pair: Option<DiskOnlyPair>,
    /// The conclusion in words (plain text).
    pub conclusion: String,
}

impl StepAnalysis {
    pub(crate) fn link(&self, f: Figure) -> Option<&Link> {
        self.links.iter().find(|l| l.figure == f)
    }
}

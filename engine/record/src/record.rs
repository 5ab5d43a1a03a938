//! The result record: one JSON file per run, the only thing the engine and the site share.
//!
//! The shape follows `CONTRACT.md` section 4. Fields may be added in a compatible way
//! (`#[serde(default)]`); nothing here is removed or renamed without a new schema version.

use serde::{Deserialize, Serialize};

use crate::column::{ColumnId, Headline};

/// The schema string this version writes and reads.
pub const SCHEMA: &str = "diskbench.record/1";

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Record {
    /// Always [`SCHEMA`]; readers refuse a schema they do not know.
    pub schema: String,
    /// Unique id of this run (hex).
    pub id: String,
    /// "measured", "imported:fio" or "imported:csv".
    pub source: String,
    /// For imported records: the file the figures came from (as given on the command line).
    #[serde(default)]
    pub source_file: Option<String>,
    /// RFC 3339, UTC.
    pub started_at: String,
    /// RFC 3339, UTC.
    pub finished_at: String,
    pub tool: Tool,
    pub runner: Runner,
    pub storage: Storage,
    pub settings: Settings,
    /// One entry per column run (or per fio job for `cargo diskbench fio`).
    pub tests: Vec<TestResult>,
    #[serde(default)]
    pub steps: Vec<StepResult>,
    /// A short fixed compute probe, so the site can tell CPU-bound from disk-bound across runners.
    #[serde(default)]
    pub cpu_reference: Option<CpuReference>,
    /// Run-wide notes and warnings (fallbacks, skipped parts).
    #[serde(default)]
    pub notes: Vec<String>,
}

impl Record {
    /// A new record, the one way one is made: the schema this version writes, a fresh id,
    /// this tool's name and version, `finished_at` = `started_at` until the run says
    /// otherwise, and no tests, steps or notes yet.
    pub fn new(
        source: impl Into<String>,
        started_at: String,
        runner: Runner,
        storage: Storage,
        settings: Settings,
    ) -> Record {
        Record {
            schema: SCHEMA.into(),
            id: crate::random::new_id(),
            source: source.into(),
            source_file: None,
            finished_at: started_at.clone(),
            started_at,
            tool: Tool::default(),
            runner,
            storage,
            settings,
            tests: Vec::new(),
            steps: Vec::new(),
            cpu_reference: None,
            notes: Vec::new(),
        }
    }

    /// A record of imported figures (`source` "imported:csv" or "imported:fio") read from
    /// `source_file`, with the id the importer derived from its content (re-importing the same
    /// figures gives the same id) and no storage or settings of its own.
    pub fn imported(
        source: &str,
        source_file: &str,
        id: String,
        started_at: String,
        runner: Runner,
    ) -> Record {
        let mut record = Record::new(
            source,
            started_at,
            runner,
            Storage::default(),
            Settings {
                suite: "imported".into(),
                engine: "imported".into(),
                repeat: 1,
                ..Settings::default()
            },
        );
        record.id = id;
        record.source_file = Some(source_file.into());
        record
    }

    pub fn is_imported(&self) -> bool {
        self.source.starts_with("imported")
    }

    pub fn test(&self, column: ColumnId) -> Option<&TestResult> {
        self.tests.iter().find(|t| t.id == column.as_str())
    }

    /// The runner this record emulates (`run --like LABEL`): its columns are this disk under
    /// caps taken from LABEL's figures, not this disk's own.
    pub fn emulates(&self) -> Option<&str> {
        self.settings.like.as_ref().map(|l| l.label.as_str())
    }

    /// The runner the record's figures belong to, the one key every reader groups records by:
    /// the runner's label, or for a `--like` record `<label> like <LABEL> (capped)`, so an
    /// emulation is never merged into the real disk's figures (nor into LABEL's).
    pub fn runner_name(&self) -> std::borrow::Cow<'_, str> {
        match self.emulates() {
            None => std::borrow::Cow::Borrowed(self.runner.label.as_str()),
            Some(like) => {
                std::borrow::Cow::Owned(format!("{} like {like} (capped)", self.runner.label))
            }
        }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Tool {
    pub name: String,
    pub version: String,
}

impl Default for Tool {
    fn default() -> Self {
        Tool {
            name: "cargo-diskbench".into(),
            version: env!("CARGO_PKG_VERSION").into(),
        }
    }
}

#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Runner {
    /// How this machine is named in the report.
    pub label: String,
    /// e.g. "github-hosted", "aws", "azure", "gcp", "RunsOn"; null when unknown.
    pub provider: Option<String>,
    /// "x64" or "arm64" (other architectures by their Rust name).
    pub arch: String,
    /// CPUs this process may use (affinity and cgroup quota included).
    pub vcpus: u32,
    /// Memory available to this process in GiB (cgroup limit included).
    pub memory_gib: f64,
    pub cpu_model: String,
    pub kernel: String,
    pub os: String,
    #[serde(default)]
    pub ci: Option<Ci>,
    /// e.g. "m7i.large" where DMI or the import says so.
    #[serde(default)]
    pub instance_type: Option<String>,
    /// Free text that distinguishes otherwise equal runners, e.g. "provisioned 16000 IOPS".
    #[serde(default)]
    pub variant: Option<String>,
    #[serde(default)]
    pub in_container: bool,
    #[serde(default)]
    pub hostname: Option<String>,
    /// Evidence and gaps: what was read to fill this section, what could not be read and why.
    #[serde(default)]
    pub evidence: Vec<String>,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Ci {
    /// "github-actions" or another system's name.
    pub system: String,
    pub run_id: Option<String>,
    pub job: Option<String>,
    /// Runner image, e.g. "ubuntu24/20261118.1".
    pub image: Option<String>,
    #[serde(default)]
    pub runner_name: Option<String>,
    #[serde(default)]
    pub repository: Option<String>,
    /// "github-hosted" or "self-hosted" (RUNNER_ENVIRONMENT).
    #[serde(default)]
    pub environment: Option<String>,
}

/// What the figures were measured on, detected rather than configured.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "kebab-case")]
pub enum StorageClass {
    Tmpfs,
    LocalNvme,
    Ebs,
    NetworkDisk,
    VmDisk,
    #[default]
    Unknown,
}

impl StorageClass {
    pub const ALL: [StorageClass; 6] = [
        StorageClass::Tmpfs,
        StorageClass::LocalNvme,
        StorageClass::Ebs,
        StorageClass::NetworkDisk,
        StorageClass::VmDisk,
        StorageClass::Unknown,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            StorageClass::Tmpfs => "tmpfs",
            StorageClass::LocalNvme => "local-nvme",
            StorageClass::Ebs => "ebs",
            StorageClass::NetworkDisk => "network-disk",
            StorageClass::VmDisk => "vm-disk",
            StorageClass::Unknown => "unknown",
        }
    }

    pub fn parse(s: &str) -> Option<StorageClass> {
        StorageClass::ALL.into_iter().find(|c| c.as_str() == s)
    }

    pub fn title(self) -> &'static str {
        match self {
            StorageClass::Tmpfs => "tmpfs (memory)",
            StorageClass::LocalNvme => "Local NVMe",
            StorageClass::Ebs => "Amazon EBS",
            StorageClass::NetworkDisk => "Network disk",
            StorageClass::VmDisk => "VM disk",
            StorageClass::Unknown => "Unknown",
        }
    }
}

impl std::fmt::Display for StorageClass {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Storage {
    /// The directory the test files went into.
    pub path: String,
    pub fstype: String,
    pub mount_source: String,
    pub mount_options: String,
    /// The directory of the source filesystem mounted at the mount point, when it is not its
    /// root: a bind mount (e.g. a container's workspace) or a btrfs subvolume.
    #[serde(default)]
    pub mount_root: Option<String>,
    /// For overlayfs: the filesystem that really takes the writes.
    #[serde(default)]
    pub overlay_upper: Option<Mount>,
    /// The top of the device chain (the device the filesystem sits on).
    #[serde(default)]
    pub device: Option<Device>,
    /// The whole chain from the filesystem's device down to the disks, top first.
    #[serde(default)]
    pub devices: Vec<Device>,
    pub class: StorageClass,
    /// Which rule decided the class and what it matched, e.g. "model = Amazon Elastic Block Store".
    #[serde(default)]
    pub class_evidence: Vec<String>,
    /// Mount options that change what fdatasync costs (nobarrier, data=writeback, ...).
    #[serde(default)]
    pub fsync_flags: Vec<String>,
    #[serde(default)]
    pub free_bytes: Option<u64>,
    #[serde(default)]
    pub total_bytes: Option<u64>,
    /// Anything that could not be read, with the reason.
    #[serde(default)]
    pub notes: Vec<String>,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Mount {
    pub path: String,
    pub fstype: String,
    pub mount_source: String,
    pub mount_options: String,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Device {
    /// Kernel name, e.g. "vda", "nvme0n1", "md0", "dm-0".
    pub name: String,
    pub model: Option<String>,
    #[serde(default)]
    pub vendor: Option<String>,
    #[serde(default)]
    pub size_bytes: Option<u64>,
    pub rotational: Option<bool>,
    /// "nvme", "virtio", "scsi", "ata", "md", "dm", "loop", ...
    pub transport: Option<String>,
    pub scheduler: Option<String>,
    #[serde(default)]
    pub nr_requests: Option<u64>,
    #[serde(default)]
    pub logical_block_size: Option<u64>,
    #[serde(default)]
    pub physical_block_size: Option<u64>,
    /// For md RAID: e.g. "raid0".
    #[serde(default)]
    pub raid_level: Option<String>,
    /// Names of the devices below this one (partition parent, dm/md slaves).
    #[serde(default)]
    pub members: Vec<String>,
    /// For a PCIe (NVMe) disk: what its link carries, bytes per second, from the kernel's
    /// `current_link_speed` x `current_link_width` less the line encoding.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pcie_link_bytes_s: Option<u64>,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Settings {
    /// "standard" for the six columns, "fio" for a fio-syntax job, "imported".
    pub suite: String,
    pub runtime_s: f64,
    pub ramp_s: f64,
    pub size: u64,
    /// What was asked for: "auto", "io_uring", "libaio" or "psync".
    pub engine: String,
    #[serde(default)]
    pub seed: Option<u64>,
    #[serde(default = "one")]
    pub repeat: u32,
    /// For `cargo diskbench fio`: the command line as given.
    #[serde(default)]
    pub command_line: Option<Vec<String>>,
    /// `run --like LABEL`: the columns ran under caps taken from LABEL's figures.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub like: Option<LikeSettings>,
    /// `--provisioned IOPS,BANDWIDTH`: the volume's limit the figures are set beside.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provisioned: Option<Provisioned>,
    /// `run --preset NAME`: the named settings the suite ran with ("published": the published
    /// harness's 20 s + 2 s ramp, 2 GiB files, 1 GiB per job for four-job columns; each
    /// test's `job.size` says its own file size).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preset: Option<String>,
    /// "steady": each column measured until its figure was steady by a rule, at most
    /// `runtime_s` (each test's `window` says how it ended); absent: a fixed `runtime_s`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window: Option<String>,
}

impl Settings {
    /// How the six columns ran, in a few words for a table: the preset by name with its
    /// settings, else the time and file size (None for other suites: fio jobs, imports).
    pub fn method(&self) -> Option<String> {
        if self.suite != "standard" {
            return None;
        }
        // 20 -> "20", 0.5 -> "0.50".
        let secs = |s: f64| {
            if s.fract() == 0.0 && s.abs() < 1e15 {
                format!("{s:.0}")
            } else {
                crate::units::format_figure(s)
            }
        };
        let timing = match self.window.as_deref() {
            Some("steady") => format!(
                "until steady (at most {} s) after a {} s ramp",
                secs(self.runtime_s),
                secs(self.ramp_s)
            ),
            _ => format!(
                "{} s after a {} s ramp",
                secs(self.runtime_s),
                secs(self.ramp_s)
            ),
        };
        Some(match self.preset.as_deref() {
            Some("published") => format!(
                "published preset: {timing}, {} files (1 GiB per job in four-job columns)",
                crate::size::format_bytes(self.size)
            ),
            Some(other) => format!("preset {other}: {timing}"),
            None => format!(
                "{timing}, {} files per job",
                crate::size::format_bytes(self.size)
            ),
        })
    }
}

/// What the volume is provisioned for.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Provisioned {
    /// I/O operations per second (any size up to the cloud's counting unit).
    pub iops: f64,
    /// Bytes per second.
    pub bytes_s: f64,
    /// Where the figures come from: "--provisioned" or the known default they are.
    pub source: String,
}

fn one() -> u32 {
    1
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct TestResult {
    /// A column id for the standard suite, the fio job name otherwise.
    pub id: String,
    pub job: JobSettings,
    pub engine: EngineUsed,
    /// Length of the measured window (ramp excluded).
    pub elapsed_s: f64,
    pub read: Option<DirectionStats>,
    pub write: Option<DirectionStats>,
    pub cpu: Cpu,
    #[serde(default)]
    pub notes: Vec<String>,
    /// With `--repeat N`: each run's headline figure; the stats above are the median run's.
    #[serde(default)]
    pub repeats: Option<Repeats>,
    /// How the test's file was made ready before it was measured (absent in older records and
    /// imported ones).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_preparation: Option<FilePreparation>,
    /// Set when the headline figure is more than the storage the record names can physically
    /// deliver, so a cache served it: the reason, with the figures (see `engine::ceiling`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_suspect: Option<String>,
    /// A window that ended by a rule rather than after a fixed `--runtime` (the standard
    /// suite's default); absent for a fixed window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window: Option<MeasuredWindow>,
}

/// How a column's measured window ended, when a rule ended it.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct MeasuredWindow {
    /// "steady": the rule was met; "max-time": the longest window passed first, or the
    /// column's figure could drift underneath (first writes into a new file turning into
    /// overwrites) and it measured the whole window.
    pub ended: String,
    /// The rule, in one sentence with its figures.
    pub rule: String,
    /// I/Os per second of each whole 0.5 s interval the rule judged, in order (all jobs
    /// together): what any other rule would have seen.
    #[serde(default)]
    pub interval_iops: Vec<f64>,
    /// Seconds of unmeasured ramp before the window, as the rule ended it (absent in records
    /// made before the ramp could end early: the settings' `ramp_s`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ramp_s: Option<f64>,
}

impl TestResult {
    pub fn column(&self) -> Option<ColumnId> {
        ColumnId::parse(&self.id)
    }

    /// The stats of the direction the column measures.
    pub fn main_direction(&self) -> Option<&DirectionStats> {
        match self.column() {
            Some(c) if c.is_read() => self.read.as_ref(),
            Some(_) => self.write.as_ref(),
            None => self.read.as_ref().or(self.write.as_ref()),
        }
    }

    /// MiB/s for sequential columns, IOPS for the others.
    pub fn headline(&self) -> Option<f64> {
        let d = self.main_direction()?;
        match self.column()?.headline() {
            Headline::MibPerSecond => Some(d.mib_s),
            Headline::Iops => Some(d.iops),
        }
    }

    pub fn p99_ns(&self) -> Option<u64> {
        self.main_direction()?.lat_ns.as_ref()?.p99
    }
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct JobSettings {
    /// fio's names: read, write, randread, randwrite, randrw, rw.
    pub rw: String,
    pub bs: u64,
    pub iodepth: u32,
    pub numjobs: u32,
    pub size: u64,
    pub direct: bool,
    /// "none", "fdatasync:N", "fsync:N", "o_sync", "o_dsync".
    pub sync: String,
    pub rwmixread: Option<u32>,
}

impl JobSettings {
    /// The job a record names for `column`, with `size_bytes` per job: what the suite runs
    /// (direct I/O), for records that carry only the figures (imports).
    pub fn of_column(column: ColumnId, size_bytes: u64) -> JobSettings {
        let s = column.settings();
        JobSettings {
            rw: s.rw.into(),
            bs: s.block_bytes,
            iodepth: s.iodepth,
            numjobs: s.numjobs,
            size: size_bytes,
            direct: true,
            sync: s.sync_name(),
            rwmixread: None,
        }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct EngineUsed {
    /// "io_uring", "libaio" or "psync" (imported rows: what fio used, e.g. "libaio").
    pub used: String,
    /// Why the engine asked for did not run, e.g. "io_uring_setup: EPERM; used psync".
    pub fallback: Option<String>,
    /// Whether O_DIRECT was really in effect.
    pub direct: bool,
    /// How the jobs ran: "processes" (fio's default, the published harness's) or "threads"
    /// (fio's `--thread`). Absent in older records and imported rows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jobs_as: Option<String>,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct DirectionStats {
    pub ios: u64,
    pub bytes: u64,
    pub iops: f64,
    pub mib_s: f64,
    /// Absent when the source had no latency figures.
    pub lat_ns: Option<Latency>,
    /// HDR histogram (V2 + deflate), base64; absent for imported figures.
    pub hist: Option<String>,
    /// Writes with a sync (`--fdatasync`/`--fsync`): the sync call alone, fio's `sync`
    /// latency, where the backend times it apart from the write (psync, libaio). `lat_ns` above
    /// stays write + sync. Absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sync_lat_ns: Option<Latency>,
    /// The histogram of `sync_lat_ns`, encoded as `hist`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sync_hist: Option<String>,
}

/// Latency in nanoseconds. Imported figures often carry only some percentiles.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Latency {
    #[serde(default)]
    pub min: Option<u64>,
    #[serde(default)]
    pub mean: Option<u64>,
    #[serde(default)]
    pub p50: Option<u64>,
    #[serde(default)]
    pub p90: Option<u64>,
    #[serde(default)]
    pub p99: Option<u64>,
    #[serde(default)]
    pub p99_9: Option<u64>,
    #[serde(default)]
    pub max: Option<u64>,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Cpu {
    pub user_s: f64,
    pub sys_s: f64,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Repeats {
    pub runs: u32,
    /// Each run's headline figure (MiB/s or IOPS), in run order.
    pub headline: Vec<f64>,
    /// (max - min) / median, in percent.
    pub spread_pct: f64,
    /// Whether the passes agree within 5 % (`spread_pct` <= 5): when not, the figure is not yet
    /// repeatable on this machine (more `--repeat`, a longer `--runtime`, a quieter machine).
    #[serde(default)]
    pub within_5pct: Option<bool>,
}

/// How a test file was made ready before the test, as fio makes it (filesetup.c).
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct FilePreparation {
    /// "written": real data laid down before the test (reads; writes with fio's
    /// `overwrite=1`); "fallocate": a new file allocated with fallocate(2) mode 0, so its
    /// blocks are reserved but unwritten (fio's default `fallocate=native` for writes);
    /// "posix-fallocate", "fallocate-keep-size", "truncate" (a new sparse file), "none" (a
    /// new empty file the writes extend), "existing" (a file already there at full size, used
    /// as it was), "create-on-open" (created empty when the job opened it).
    pub method: String,
    /// The file was created (or emptied) for this test.
    pub fresh: bool,
    /// One sentence: what was done, and anything the filesystem refused.
    pub detail: String,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum StepStatus {
    #[default]
    Ok,
    Failed,
    Skipped,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum Bound {
    Latency,
    Bandwidth,
    Cpu,
    Mixed,
    #[default]
    Unknown,
}

impl Bound {
    pub fn as_str(self) -> &'static str {
        match self {
            Bound::Latency => "latency",
            Bound::Bandwidth => "bandwidth",
            Bound::Cpu => "cpu",
            Bound::Mixed => "mixed",
            Bound::Unknown => "unknown",
        }
    }
}

#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct StepResult {
    /// "cargo-build", "docker-build", "sqlite" or a user step's id.
    pub id: String,
    pub name: String,
    pub command: Vec<String>,
    pub status: StepStatus,
    /// Why a step was skipped or failed.
    pub reason: Option<String>,
    #[serde(default)]
    pub exit_code: Option<i32>,
    /// Last lines of output of a failed step.
    #[serde(default)]
    pub output_tail: Option<String>,
    pub wall_s: f64,
    pub user_s: f64,
    pub sys_s: f64,
    #[serde(default)]
    pub max_rss_kib: Option<u64>,
    pub io: Option<StepIo>,
    /// Machine-wide /proc/pressure/io "some" stall during the step, seconds.
    pub io_pressure_s: Option<f64>,
    #[serde(default)]
    pub io_pressure_full_s: Option<f64>,
    /// Block-I/O delay of the step's tasks (delay accounting), seconds.
    #[serde(default)]
    pub blkio_delay_s: Option<f64>,
    /// Time the step's tasks were runnable but waiting for a CPU (run-queue delay from
    /// /proc/<pid>/task/<tid>/schedstat, summed over the tasks), seconds. High on a shared
    /// or oversubscribed machine; the verdict judges the rest of the wall time.
    #[serde(default)]
    pub cpu_wait_s: Option<f64>,
    /// Context switches of the reaped tree (`wait4` rusage): voluntary ones are blocks on
    /// I/O, locks or children; involuntary ones are preemptions.
    #[serde(default)]
    pub voluntary_switches: Option<u64>,
    #[serde(default)]
    pub involuntary_switches: Option<u64>,
    /// Signals that could not be collected, with the reason.
    #[serde(default)]
    pub unavailable: Vec<String>,
    pub bound: Bound,
    /// One sentence with the figures behind the verdict.
    pub why: String,
    /// How the figures were gathered where it matters to read them, e.g. what a generated
    /// input held or that a daemon's processes are counted.
    #[serde(default)]
    pub notes: Vec<String>,
    /// `--what-if`: the step rerun with the disk capped and on memory, and the verdict by
    /// experiment (it outranks `bound` where both exist).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub what_if: Option<WhatIf>,
    /// The compiler a `cargo-build` step built with (`rustc --version` as the build ran it,
    /// e.g. "rustc 1.95.0 (59807616e 2026-04-14)"): the same workload with another compiler is
    /// another measurement. None for other steps, or when rustc did not answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub toolchain: Option<String>,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct StepIo {
    pub read_bytes: u64,
    pub write_bytes: u64,
    pub syscr: u64,
    pub syscw: u64,
    #[serde(default)]
    pub rchar: u64,
    #[serde(default)]
    pub wchar: u64,
    #[serde(default)]
    pub cancelled_write_bytes: u64,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct CpuReference {
    /// Fixed work units per second on one thread.
    pub single_thread_ops_s: f64,
    /// The same work spread over `threads` threads, units per second in total.
    pub all_threads_ops_s: f64,
    pub threads: u32,
    /// Which benchmark made the two figures: None for this tool's own probe, else the name a
    /// published source gives (e.g. "sysbench cpu, events/s"). Figures of different benchmarks
    /// are never ranked together.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub benchmark: Option<String>,
}

impl StepResult {
    /// One word for the step's outcome: its verdict when it ran, else "failed" or "skipped".
    pub fn verdict_word(&self) -> &'static str {
        match self.status {
            StepStatus::Ok => self.bound.as_str(),
            StepStatus::Failed => "failed",
            StepStatus::Skipped => "skipped",
        }
    }
}

/// Block-I/O caps on a device: I/Os per second and bytes per second, per direction. `None`
/// is "no cap" (`max` in cgroup v2's `io.max`).
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct IoCaps {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub riops: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wiops: Option<u64>,
    /// Bytes per second.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rbps: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wbps: Option<u64>,
}

impl IoCaps {
    pub fn is_empty(&self) -> bool {
        *self == IoCaps::default()
    }
}

/// What a step's what-if experiments found (CONTRACT section 4).
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct WhatIf {
    /// The normal run as the experiments compare with it: median of its runs and their spread.
    #[serde(default)]
    pub baseline: Option<WhatIfCondition>,
    /// Each condition (the normal run is not repeated here): `memory`, `iops-capped`,
    /// `bandwidth-capped`, `like:<label>`.
    pub conditions: Vec<WhatIfCondition>,
    /// The devices that were capped, `MAJ:MIN`.
    pub devices: Vec<String>,
    /// The verdict by experiment.
    pub bound: Bound,
    /// One sentence with the figures.
    pub why: String,
    #[serde(default)]
    pub notes: Vec<String>,
    /// The runs spread too wide on a busy machine to tell an effect from the noise: `bound`
    /// is `unknown` and `why` says how busy it was. Absent when false (older records too).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cannot_tell: bool,
    /// The 1-minute load average (`/proc/loadavg`), averaged over the ends of the
    /// experiment's runs: how busy the machine was. Absent where it could not be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load_avg_1m: Option<f64>,
}

impl WhatIf {
    /// The verdict by experiment in a word or two: the bound, or "cannot tell".
    pub fn verdict_word(&self) -> &'static str {
        if self.cannot_tell {
            "cannot tell (busy machine)"
        } else {
            self.bound.as_str()
        }
    }
}

/// One condition of a what-if experiment: the step's figures under it (medians over `runs`).
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct WhatIfCondition {
    /// `baseline`, `memory`, `iops-capped`, `bandwidth-capped` or `like:<label>`.
    pub id: String,
    /// The caps in force (null: no cap, e.g. the memory condition).
    pub caps: Option<IoCaps>,
    /// Median wall time over the runs, seconds.
    pub wall_s: f64,
    pub user_s: f64,
    pub sys_s: f64,
    /// Time the step's tasks were runnable but waiting for a CPU (median run), seconds.
    #[serde(default)]
    pub cpu_wait_s: Option<f64>,
    pub runs: u32,
    /// Every run's wall time, in run order.
    #[serde(default)]
    pub wall_runs_s: Vec<f64>,
    /// (max - min) / median of the runs' wall times, percent; absent with one run (one run
    /// has no spread; older records wrote 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spread_pct: Option<f64>,
    /// The same over the middle runs (all of up to 4; without the fastest and slowest
    /// quarter of more): the spread the verdict judges this condition's median by, so one
    /// run a busy machine starved does not decide. Absent with one run and in older records.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub middle_spread_pct: Option<f64>,
    /// The step's own I/O counters (median run).
    #[serde(default)]
    pub io: Option<StepIo>,
    /// I/O the capped cgroup saw on the capped devices (the step's and any daemon's).
    #[serde(default)]
    pub cgroup_io: Option<CgroupIo>,
    /// "ok" or "failed" (any run failed).
    #[serde(default)]
    pub status: StepStatus,
    /// Wall time against the normal run's median (e.g. 15.6 = 15.6x slower).
    #[serde(default)]
    pub ratio: Option<f64>,
    /// A capped condition slower than its caps can explain (the I/O the cgroup let through,
    /// at the caps, could cost less than a quarter of the extra time): a busy machine, not the
    /// caps. Kept out of the verdict, and a `like:` condition's time is then no prediction.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub disturbed: bool,
    /// A `like:` condition whose step folder ran on the latency emulation (a FUSE passthrough
    /// adding LABEL's per-I/O latency): the time the emulation held the step's I/O for in
    /// all, s (median run). At most what the added latency can have cost; absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_held_s: Option<f64>,
    #[serde(default)]
    pub notes: Vec<String>,
}

/// Bytes and I/Os a cgroup moved on the capped devices (v1 `blkio.throttle.io_service_*`,
/// v2 `io.stat`).
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct CgroupIo {
    pub read_bytes: u64,
    pub write_bytes: u64,
    pub read_ios: u64,
    pub write_ios: u64,
}

/// `run --like LABEL`: the caps taken from LABEL's figures and, per column, the target
/// figure beside the one measured under the caps.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct LikeSettings {
    pub label: String,
    /// The record the figures came from (file name) and its source ("imported:csv", ...).
    pub from: String,
    pub caps: IoCaps,
    pub devices: Vec<String>,
    pub columns: Vec<LikeColumn>,
    /// The one-at-a-time columns ran on a passthrough that held each I/O for LABEL's
    /// latency (absent: not emulated, and the columns say what the caps leave out).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_emulation: Option<LatencyEmulation>,
}

/// How `run --like` added LABEL's per-I/O latency, which a rate cap cannot.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct LatencyEmulation {
    /// "fuse-passthrough": the columns' files on a FUSE mount over a folder of this disk.
    pub how: String,
    /// The columns that ran on it.
    pub columns: Vec<String>,
    /// What each read reaching storage was held for (log-normal).
    pub read: Option<LatencyShape>,
    /// What each direct (O_DIRECT) write was held for.
    pub direct_write: Option<LatencyShape>,
    /// What each fsync/fdatasync was held for (plus a direct write's after buffered writes).
    pub sync: Option<LatencyShape>,
    /// I/Os held, by kind, over the whole emulation (file preparation included).
    pub held_reads: u64,
    pub held_direct_writes: u64,
    pub held_syncs: u64,
    /// Mean time a held reply left after its time (timer wake-up), ns, over the replies
    /// that were held.
    pub late_per_io_ns: f64,
    /// I/Os this disk itself took longer for than the latency drawn (not held; the
    /// emulated disk cannot be faster than this one), and their mean excess, ns.
    pub slower_here: u64,
    pub slower_here_per_io_ns: f64,
}

/// A latency distribution by its mean and 99th percentile, ns.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct LatencyShape {
    pub mean_ns: f64,
    pub p99_ns: f64,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct LikeColumn {
    /// Column id.
    pub id: String,
    /// LABEL's figure (MiB/s or IOPS, as the column's headline).
    pub target: Option<f64>,
    /// This run's figure under the caps.
    pub measured: Option<f64>,
    /// measured / target - 1, percent.
    pub off_pct: Option<f64>,
    /// Whether a cap can reproduce this figure at all (false: e.g. QD1 latency is bounded
    /// below by the real disk; caps only slow a disk down).
    pub reproducible: bool,
    pub note: String,
    /// The one-at-a-time columns (qd1-read, sync-write): the latency a rate cap leaves out.
    /// Absent for the other columns and in older records.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency: Option<LikeLatency>,
}

/// One I/O at a time, LABEL's latency beside this disk's under the caps. A cap limits the
/// rate and adds no round trip, so the emulation leaves out the difference. Nanoseconds;
/// `None` where a side has no figure.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct LikeLatency {
    /// LABEL's time per I/O: 1 / its IOPS at one I/O in flight.
    pub target_per_io_ns: Option<f64>,
    /// LABEL's p99 latency.
    pub target_p99_ns: Option<f64>,
    /// This run's time per I/O under the caps: 1 / its IOPS.
    pub measured_per_io_ns: Option<f64>,
    pub measured_p99_ns: Option<f64>,
    /// target - measured per I/O: what each one-at-a-time I/O would take longer on LABEL's
    /// disk, left out of the emulation (negative: this disk is slower, nothing left out).
    pub left_out_per_io_ns: Option<f64>,
    /// target - measured p99.
    pub left_out_p99_ns: Option<f64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn storage_classes_round_trip() {
        for c in StorageClass::ALL {
            assert_eq!(StorageClass::parse(c.as_str()), Some(c));
            let json = serde_json::to_string(&c).unwrap();
            assert_eq!(json, format!("\"{}\"", c.as_str()));
        }
    }
}

//! Realistic generated records, for tests, demos and the render benchmark.
//!
//! Each runner has a storage profile (bandwidth, IOPS at depth, QD1 and synced-write latency)
//! loosely following published runner figures; every run draws fresh latencies from it and
//! records them into real HDR histograms, so percentiles, CDFs and merged histograms on the
//! site are computed exactly as they are for measured records. Deterministic for a given seed.

use base64::Engine as _;
use hdrhistogram::Histogram as HdrHistogram;
use hdrhistogram::serialization::{Serializer as _, V2DeflateSerializer};
use record::*;

/// A small deterministic PRNG (splitmix64): the generator must not depend on the clock.
#[derive(Clone, Debug)]
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Rng {
        Rng(seed)
    }
    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in [0, 1).
    pub(crate) fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
    /// Standard normal (Box-Muller).
    pub(crate) fn normal(&mut self) -> f64 {
        let u1 = self.unit().max(1e-12);
        let u2 = self.unit();
        (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
    }
    /// A factor around 1 with the given relative spread.
    pub(crate) fn jitter(&mut self, spread: f64) -> f64 {
        (1.0 + spread * self.normal()).max(0.2)
    }
}

/// How one kind of runner's storage behaves; figures are medians, runs jitter around them.
#[derive(Clone, Debug)]
pub struct StorageProfile {
    pub class: StorageClass,
    pub seq_read_mib_s: f64,
    pub seq_write_mib_s: f64,
    pub rand_read_iops: f64,
    pub rand_write_iops: f64,
    /// Median QD1 4 KiB read latency, issue to completion.
    pub qd1_read_lat_us: f64,
    /// Median write + fdatasync latency.
    pub sync_write_lat_us: f64,
    /// How heavy the latency tail is (log-normal sigma).
    pub tail_sigma: f64,
}

/// One generated runner.
#[derive(Clone, Debug)]
pub struct RunnerProfile {
    pub label: String,
    pub provider: Option<String>,
    pub arch: String,
    pub vcpus: u32,
    pub memory_gib: f64,
    pub cpu_model: String,
    /// Fixed compute units per second on one thread.
    pub cpu_ops_s: f64,
    pub instance_type: Option<String>,
    pub variant: Option<String>,
    pub storage: StorageProfile,
    pub mount_options: String,
    pub fstype: String,
    /// Rows that stand for published figures: no histograms, p99 only, `imported:csv`.
    pub imported: bool,
    /// The docker-build step fails on this runner (to show a failed step).
    pub docker_fails: bool,
}

pub(crate) fn profile(class: StorageClass) -> StorageProfile {
    let (sr, sw, rr, rw, q1, sy, tail) = match class {
        StorageClass::Tmpfs => (15_000.0, 8_000.0, 2_500_000.0, 2_300_000.0, 2.2, 3.0, 0.25),
        StorageClass::LocalNvme => (2_000.0, 1_500.0, 300_000.0, 160_000.0, 78.0, 70.0, 0.3),
        StorageClass::Ebs => (400.0, 400.0, 3_000.0, 3_000.0, 540.0, 1_800.0, 0.35),
        // Provisioned for IOPS (premium SSD v2 style): fast at depth, every flush still a round trip.
        StorageClass::NetworkDisk => (210.0, 190.0, 40_000.0, 30_000.0, 980.0, 2_600.0, 0.45),
        StorageClass::VmDisk => (230.0, 180.0, 21_000.0, 12_000.0, 310.0, 650.0, 0.5),
        // A self-hosted box on spinning disks: fine for streaming, slow for anything small.
        StorageClass::Unknown => (900.0, 800.0, 450.0, 380.0, 6_500.0, 11_000.0, 0.6),
    };
    StorageProfile {
        class,
        seq_read_mib_s: sr,
        seq_write_mib_s: sw,
        rand_read_iops: rr,
        rand_write_iops: rw,
        qd1_read_lat_us: q1,
        sync_write_lat_us: sy,
        tail_sigma: tail,
    }
}

/// A set of runners and how many runs each has.
#[derive(Clone, Debug)]
pub struct Fleet {
    pub runners: Vec<RunnerProfile>,
    pub runs_per_runner: usize,
    pub seed: u64,
    /// Latency samples recorded per histogram (more is slower to generate, not to render).
    pub samples_per_hist: usize,
}

/// Days since 1970-01-01 of 2026-11-30, the newest generated run.
const NEWEST_DAY: i64 = 20_787;

fn runner(label: &str, arch: &str, cpu: &str, class: StorageClass) -> RunnerProfile {
    let cpu_ops_s = if cpu.contains("Neoverse") {
        1.05e6
    } else if cpu.contains("EPYC") {
        1.2e6
    } else {
        0.95e6
    };
    RunnerProfile {
        label: label.into(),
        provider: Some("github-hosted".into()),
        arch: arch.into(),
        vcpus: 4,
        memory_gib: 16.0,
        cpu_model: cpu.into(),
        cpu_ops_s,
        instance_type: None,
        variant: None,
        storage: profile(class),
        mount_options: if class == StorageClass::Tmpfs {
            "rw,nosuid,nodev,size=8g".into()
        } else {
            "rw,relatime,discard,errors=remount-ro".into()
        },
        fstype: if class == StorageClass::Tmpfs {
            "tmpfs".into()
        } else {
            "ext4".into()
        },
        imported: false,
        docker_fails: false,
    }
}

impl Fleet {
    /// Every storage class on both architectures, a provisioned/default pair, the same CPU on
    /// different storage, an imported row, a failed step, and two runners with hostile names.
    pub fn small() -> Fleet {
        use StorageClass::*;
        let mut runners = vec![
            runner(
                "ubuntu-24.04",
                "x64",
                "AMD EPYC 7763 64-Core Processor",
                VmDisk,
            ),
            runner("ubuntu-24.04-arm", "arm64", "Neoverse-N2", VmDisk),
            runner(
                "ubuntu-24.04-tmpfs",
                "x64",
                "AMD EPYC 7763 64-Core Processor",
                Tmpfs,
            ),
            runner("arm-tmpfs", "arm64", "Neoverse-N2", Tmpfs),
            runner(
                "i7i-large-nvme",
                "x64",
                "Intel(R) Xeon(R) Platinum 8559C",
                LocalNvme,
            ),
            runner("m9gd-large-nvme", "arm64", "Neoverse-V3", LocalNvme),
            runner("m8a-large-gp3", "x64", "AMD EPYC 9R45", Ebs),
            runner("m8a-large-gp3-16k", "x64", "AMD EPYC 9R45", Ebs),
            runner(
                "azure-d4s-premium",
                "x64",
                "Intel(R) Xeon(R) Platinum 8370C",
                NetworkDisk,
            ),
            runner(
                "self-hosted-box",
                "x64",
                "Intel(R) Core(TM) i7-9700",
                Unknown,
            ),
            runner(
                "<script>alert(\"label\")</script> & co",
                "x64",
                "AMD EPYC 7763 64-Core Processor",
                VmDisk,
            ),
            runner("../../escape/../x", "arm64", "Neoverse-N2", VmDisk),
            runner("published-m8a-gp3", "x64", "AMD EPYC 9R45", Ebs),
        ];
        runners[6].instance_type = Some("m8a.large".into());
        runners[6].variant = Some("gp3 default".into());
        runners[7].instance_type = Some("m8a.large".into());
        runners[7].variant = Some("gp3 provisioned 1000 MiB/s, 16k IOPS".into());
        let gp3 = &mut runners[7].storage;
        gp3.seq_read_mib_s = 1_000.0;
        gp3.seq_write_mib_s = 1_000.0;
        gp3.rand_read_iops = 16_000.0;
        gp3.rand_write_iops = 16_000.0;
        runners[0].docker_fails = true;
        runners[10].mount_options = "rw,nobarrier,data=writeback,<b>x</b>".into();
        runners[12].imported = true;
        runners[12].provider = Some("RunsOn".into());
        Fleet {
            runners,
            runs_per_runner: 3,
            seed: 42,
            samples_per_hist: 2_000,
        }
    }

    /// `n` runners cycling through the classes and CPUs, for the render benchmark.
    pub fn large(n: usize, runs_per_runner: usize) -> Fleet {
        let small = Fleet::small();
        let base: Vec<RunnerProfile> = small.runners.into_iter().filter(|r| !r.imported).collect();
        let runners = (0..n)
            .map(|i| {
                let mut r = base[i % base.len()].clone();
                r.label = format!("{}-{i:04}", r.label);
                r.vcpus = [2, 4, 8, 16][i % 4];
                let scale = 0.6 + (i % 7) as f64 * 0.15;
                r.storage.seq_read_mib_s *= scale;
                r.storage.rand_read_iops *= scale;
                r.storage.qd1_read_lat_us /= 0.8 + (i % 5) as f64 * 0.1;
                r
            })
            .collect();
        Fleet {
            runners,
            runs_per_runner,
            seed: 7,
            samples_per_hist: 300,
        }
    }

    pub fn records(&self) -> Vec<Record> {
        let mut out = Vec::new();
        for r in 0..self.runners.len() {
            for run in 0..self.runs_per_runner {
                out.push(self.record(r, run));
            }
        }
        out
    }

    /// Run `run` (0 = oldest) of runner `index`.
    pub fn record(&self, index: usize, run: usize) -> Record {
        let p = &self.runners[index];
        let mut rng = Rng::new(self.seed ^ ((index as u64) << 20) ^ run as u64);
        let day = NEWEST_DAY - (self.runs_per_runner - 1 - run) as i64;
        let (y, m, d) = record::time::civil_from_days(day);
        let hour = 6 + (index % 12);
        let started_at = format!("{y:04}-{m:02}-{d:02}T{hour:02}:{:02}:00Z", run % 60);
        let finished_at = format!("{y:04}-{m:02}-{d:02}T{hour:02}:{:02}:40Z", run % 60);
        let tests: Vec<TestResult> = ColumnId::ALL
            .into_iter()
            .map(|c| self.test(p, c, &mut rng))
            .collect();
        let sync_lat_s = p.storage.sync_write_lat_us * 1e-6;
        let write_bw = p.storage.seq_write_mib_s;
        let steps = if p.imported {
            Vec::new()
        } else {
            self.steps(p, sync_lat_s, write_bw, &mut rng)
        };
        let device = Device {
            name: match p.storage.class {
                StorageClass::LocalNvme | StorageClass::Ebs => "nvme1n1".into(),
                StorageClass::Tmpfs => "tmpfs".into(),
                StorageClass::NetworkDisk => "sdb".into(),
                _ => "vda".into(),
            },
            model: match p.storage.class {
                StorageClass::LocalNvme => Some("Amazon EC2 NVMe Instance Storage".into()),
                StorageClass::Ebs => Some("Amazon Elastic Block Store".into()),
                StorageClass::NetworkDisk => Some("Virtual Disk".into()),
                _ => None,
            },
            rotational: Some(p.storage.class == StorageClass::VmDisk),
            transport: Some(
                match p.storage.class {
                    StorageClass::LocalNvme | StorageClass::Ebs => "nvme",
                    StorageClass::NetworkDisk => "scsi",
                    _ => "virtio",
                }
                .into(),
            ),
            scheduler: Some("none".into()),
            ..Device::default()
        };
        let fsync_flags = p
            .mount_options
            .split(',')
            .filter(|o| matches!(*o, "nobarrier" | "barrier=0" | "data=writeback"))
            .map(String::from)
            .collect();
        let class_evidence = vec![match p.storage.class {
            StorageClass::Tmpfs => format!("fstype = {}", p.fstype),
            StorageClass::Ebs => "model = Amazon Elastic Block Store".into(),
            StorageClass::LocalNvme => "model = Amazon EC2 NVMe Instance Storage".into(),
            StorageClass::NetworkDisk => "vendor = Msft, model = Virtual Disk".into(),
            StorageClass::VmDisk => "transport = virtio".into(),
            StorageClass::Unknown => "no rule matched".into(),
        }];
        let id = format!("{:016x}", rng.next_u64());
        let source = if p.imported {
            "imported:csv"
        } else {
            "measured"
        };
        let runner = Runner {
            label: p.label.clone(),
            provider: p.provider.clone(),
            arch: p.arch.clone(),
            vcpus: p.vcpus,
            memory_gib: p.memory_gib,
            cpu_model: p.cpu_model.clone(),
            kernel: "6.11.0-1018-azure".into(),
            os: "Ubuntu 24.04.3 LTS".into(),
            ci: Some(Ci {
                system: "github-actions".into(),
                run_id: Some(format!("{}", 19_000_000_000u64 + run as u64)),
                job: Some("bench".into()),
                image: Some("ubuntu24/20261118.1".into()),
                ..Ci::default()
            }),
            instance_type: p.instance_type.clone(),
            variant: p.variant.clone(),
            in_container: false,
            hostname: None,
            evidence: vec!["/proc/cpuinfo: model name".into()],
        };
        let storage = Storage {
            path: "/home/runner/work".into(),
            fstype: p.fstype.clone(),
            mount_source: if p.storage.class == StorageClass::Tmpfs {
                "tmpfs".into()
            } else {
                format!("/dev/{}", device.name)
            },
            mount_options: p.mount_options.clone(),
            overlay_upper: None,
            mount_root: None,
            device: Some(device.clone()),
            devices: vec![device],
            class: p.storage.class,
            class_evidence,
            fsync_flags,
            free_bytes: Some(70 << 30),
            total_bytes: Some(145 << 30),
            notes: Vec::new(),
        };
        let settings = Settings {
            suite: if p.imported { "imported" } else { "standard" }.into(),
            runtime_s: 5.0,
            ramp_s: 1.0,
            size: 1 << 30,
            engine: "auto".into(),
            seed: None,
            repeat: 1,
            command_line: None,
            like: None,
            preset: None,
            window: None,
            provisioned: None,
        };
        let mut record = Record::new(source, started_at, runner, storage, settings);
        record.id = id;
        record.source_file = p.imported.then(|| "published/generated.csv".into());
        record.finished_at = finished_at;
        record.tests = tests;
        record.steps = steps;
        record.cpu_reference = (!p.imported).then(|| CpuReference {
            single_thread_ops_s: p.cpu_ops_s * rng.jitter(0.02),
            all_threads_ops_s: p.cpu_ops_s * p.vcpus as f64 * 0.9,
            threads: p.vcpus,
            benchmark: None,
        });
        record
    }

    fn test(&self, p: &RunnerProfile, column: ColumnId, rng: &mut Rng) -> TestResult {
        let s = &p.storage;
        let elapsed_s = 5.0;
        let (bs, iodepth, numjobs, rw, sync) = match column {
            ColumnId::SeqRead => (1 << 20, 32, 1, "read", "none"),
            ColumnId::SeqWrite => (1 << 20, 32, 1, "write", "none"),
            ColumnId::RandRead => (4096, 32, 4, "randread", "none"),
            ColumnId::RandWrite => (4096, 32, 4, "randwrite", "none"),
            ColumnId::Qd1Read => (4096, 1, 1, "randread", "none"),
            ColumnId::SyncWrite => (4096, 1, 1, "write", "fdatasync:1"),
        };
        let in_flight = (iodepth * numjobs) as f64;
        let run_factor = rng.jitter(0.04);
        // Throughput figure first, then the latency that goes with it (Little's law).
        let (iops, median_lat_us) = match column {
            ColumnId::SeqRead | ColumnId::SeqWrite => {
                let mib = if column == ColumnId::SeqRead {
                    s.seq_read_mib_s
                } else {
                    s.seq_write_mib_s
                } * run_factor;
                (mib, in_flight / mib * 1e6)
            }
            ColumnId::RandRead | ColumnId::RandWrite => {
                let iops = if column == ColumnId::RandRead {
                    s.rand_read_iops
                } else {
                    s.rand_write_iops
                } * run_factor;
                (iops, in_flight / iops * 1e6)
            }
            ColumnId::Qd1Read | ColumnId::SyncWrite => {
                let lat = if column == ColumnId::Qd1Read {
                    s.qd1_read_lat_us
                } else {
                    s.sync_write_lat_us
                } / run_factor;
                (1e6 / lat, lat)
            }
        };
        let ios = (iops * elapsed_s) as u64;
        let (lat, hist) = self.latency(median_lat_us, s.tail_sigma, rng, !p.imported);
        let stats = DirectionStats {
            ios,
            bytes: ios * bs,
            iops,
            mib_s: iops * bs as f64 / (1 << 20) as f64,
            lat_ns: Some(if p.imported {
                Latency {
                    p99: lat.p99,
                    ..Latency::default()
                }
            } else {
                lat
            }),
            hist,
            ..Default::default()
        };
        let (read, write) = if column.is_read() {
            (Some(stats), None)
        } else {
            (None, Some(stats))
        };
        TestResult {
            id: column.as_str().into(),
            job: JobSettings {
                rw: rw.into(),
                bs,
                iodepth,
                numjobs,
                size: 1 << 30,
                direct: true,
                sync: sync.into(),
                rwmixread: None,
            },
            engine: EngineUsed {
                used: if p.imported { "libaio" } else { "io_uring" }.into(),
                fallback: None,
                direct: p.storage.class != StorageClass::Tmpfs || !p.imported,
                jobs_as: None,
            },
            elapsed_s,
            read,
            write,
            cpu: Cpu {
                user_s: 0.3,
                sys_s: 1.1,
            },
            notes: Vec::new(),
            repeats: None,
            file_preparation: None,
            cache_suspect: None,
            window: None,
        }
    }

    /// Draw log-normal latencies around `median_us`, record them, and report the percentiles.
    #[expect(
        clippy::expect_used,
        reason = "constant, valid bounds; a Vec takes every write and the counts are \
                  samples_per_hist, far below i64::MAX"
    )]
    fn latency(
        &self,
        median_us: f64,
        sigma: f64,
        rng: &mut Rng,
        keep_hist: bool,
    ) -> (Latency, Option<String>) {
        let mut h = HdrHistogram::<u64>::new_with_bounds(1, 60_000_000_000, 3).expect("bounds");
        for _ in 0..self.samples_per_hist {
            let mut v = median_us * 1000.0 * (sigma * rng.normal()).exp();
            if rng.unit() < 0.005 {
                v *= 4.0 + 10.0 * rng.unit(); // the occasional stall
            }
            h.saturating_record(v.max(1.0) as u64);
        }
        let lat = Latency {
            min: Some(h.min()),
            mean: Some(h.mean() as u64),
            p50: Some(h.value_at_quantile(0.5)),
            p90: Some(h.value_at_quantile(0.9)),
            p99: Some(h.value_at_quantile(0.99)),
            p99_9: Some(h.value_at_quantile(0.999)),
            max: Some(h.max()),
        };
        let hist = keep_hist.then(|| {
            let mut buf = Vec::new();
            V2DeflateSerializer::new()
                .serialize(&h, &mut buf)
                .expect("serialize to memory");
            base64::engine::general_purpose::STANDARD.encode(buf)
        });
        (lat, hist)
    }

    fn steps(
        &self,
        p: &RunnerProfile,
        sync_lat_s: f64,
        write_mib_s: f64,
        rng: &mut Rng,
    ) -> Vec<StepResult> {
        let cpu_scale = 1.0e6 / p.cpu_ops_s;
        let cargo_wall = 95.0 * cpu_scale * rng.jitter(0.03) + 0.5;
        let sqlite_wall = 20_000.0 * sync_lat_s * rng.jitter(0.03) + 1.5 * cpu_scale;
        let docker_wall = 6_000.0 / write_mib_s * rng.jitter(0.03) + 4.0 * cpu_scale;
        let step =
            |id: &str, name: &str, wall: f64, user: f64, bound: Bound, why: String| StepResult {
                id: id.into(),
                name: name.into(),
                command: vec![id.into()],
                status: StepStatus::Ok,
                wall_s: wall,
                user_s: user,
                sys_s: wall * 0.05,
                io: Some(StepIo {
                    read_bytes: 50 << 20,
                    write_bytes: 400 << 20,
                    syscr: 1000,
                    syscw: 20_000,
                    ..StepIo::default()
                }),
                io_pressure_s: Some((wall - user / p.vcpus as f64).max(0.0) * 0.5),
                bound,
                why,
                ..StepResult::default()
            };
        let mut docker = step(
            "docker-build",
            "docker build (FROM scratch, 6 layers)",
            docker_wall,
            2.0 * cpu_scale,
            Bound::Bandwidth,
            format!(
                "{:.0}% of wall time waiting on I/O, mostly large writes",
                70.0
            ),
        );
        if p.docker_fails {
            docker.status = StepStatus::Failed;
            docker.reason =
                Some("docker: permission denied while connecting to /var/run/docker.sock".into());
            docker.exit_code = Some(1);
            docker.bound = Bound::Unknown;
            docker.why = "the step failed, so no verdict".into();
            docker.wall_s = 0.2;
        }
        vec![
            step(
                "cargo-build",
                "cargo build (ripgrep, debug)",
                cargo_wall,
                cargo_wall * p.vcpus as f64 * 0.9,
                Bound::Cpu,
                "CPU busy 90% of wall time on all cores; I/O stall under 2%".into(),
            ),
            step(
                "sqlite",
                "SQLite: 20k small transactions",
                sqlite_wall,
                1.2 * cpu_scale,
                Bound::Latency,
                format!(
                    "{} fdatasync calls; I/O stall {:.0}% of wall time",
                    20_000, 85.0
                ),
            ),
            docker,
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_records_are_consistent() {
        let fleet = Fleet::small();
        let recs = fleet.records();
        assert_eq!(recs.len(), fleet.runners.len() * fleet.runs_per_runner);
        let r = &recs[0];
        let qd1 = r.test(ColumnId::Qd1Read).unwrap();
        let lat = qd1.read.as_ref().unwrap().lat_ns.as_ref().unwrap();
        // Little's law at depth 1: IOPS about 1 / mean latency.
        let implied = 1e9 / lat.mean.unwrap() as f64;
        let iops = qd1.headline().unwrap();
        assert!((implied / iops - 1.0).abs() < 0.5, "{implied} vs {iops}");
        assert!(lat.p99.unwrap() > lat.p50.unwrap());
        for c in StorageClass::ALL {
            assert!(recs.iter().any(|r| r.storage.class == c), "{c} missing");
        }
        assert!(recs.iter().any(|r| r.is_imported()));
        // Same seed, same records.
        assert_eq!(Fleet::small().record(3, 1), fleet.record(3, 1));
    }
}

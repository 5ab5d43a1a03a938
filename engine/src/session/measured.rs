//! The record of a run measured on this machine. A run starts ([`MeasuredRun::start`]: the
//! time, and the machine and storage detected once) and finishes with what it measured
//! ([`MeasuredRun::finish`]). Every command that measures (`run`, `steps`, `fio`) ends here, so
//! what a measured record holds, and the checks it passes, are decided in one place: some I/O
//! in every test, each backend fallback said once in the record's notes, and every figure the
//! storage cannot physically deliver marked as served by a cache (`record::ceiling`).

use std::path::Path;

use anyhow::Result;
use record::{CpuReference, Record, Runner, Settings, StepResult, Storage, TestResult};

/// A measured run in progress.
#[derive(Debug)]
pub struct MeasuredRun {
    started_at: String,
    /// The machine, as detected at the start (a command may add a variant, e.g. the caps a
    /// `--like` run measures under).
    pub runner: Runner,
    /// The storage under the folder the run measures in.
    pub storage: Storage,
}

/// What a run measured, for [`MeasuredRun::finish`].
#[derive(Debug, Default)]
pub struct Measured {
    pub settings: Settings,
    pub tests: Vec<TestResult>,
    pub steps: Vec<StepResult>,
    pub cpu_reference: Option<CpuReference>,
    /// The command's own notes; backend fallbacks are added to them.
    pub notes: Vec<String>,
}

impl MeasuredRun {
    /// Start a run that measures in `dir`: now, on this machine (named `label`, else as
    /// detected).
    pub fn start(dir: &Path, label: Option<&str>) -> MeasuredRun {
        let started_at = record::time::now_rfc3339();
        let (runner, storage) = crate::machine::detect(dir, label);
        MeasuredRun {
            started_at,
            runner,
            storage,
        }
    }

    /// The record of the run. Fails, naming the test, when a test completed no I/O in its
    /// measured time: there is no figure to record.
    pub fn finish(self, measured: Measured) -> Result<Record> {
        let Measured {
            settings,
            tests,
            steps,
            cpu_reference,
            mut notes,
        } = measured;
        if let Some(t) = tests
            .iter()
            .find(|t| t.read.iter().chain(&t.write).map(|d| d.ios).sum::<u64>() == 0)
        {
            anyhow::bail!(
                "{}: no I/O completed in the measured time, so there is no figure to record; \
                 give a longer --runtime",
                t.id
            );
        }
        for fallback in tests.iter().filter_map(|t| t.engine.fallback.as_ref()) {
            if !notes.contains(fallback) {
                notes.push(fallback.clone());
            }
        }
        let mut record = Record::new(
            "measured",
            self.started_at,
            self.runner,
            self.storage,
            settings,
        );
        record.finished_at = record::time::now_rfc3339();
        record.tests = tests;
        record.steps = steps;
        record.cpu_reference = cpu_reference;
        record.notes = notes;
        record::ceiling::mark_record(&mut record);
        Ok(record)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use record::{Cpu, DirectionStats, EngineUsed, JobSettings};

    fn test(id: &str, ios: u64, fallback: Option<&str>) -> TestResult {
        TestResult {
            id: id.into(),
            job: JobSettings::of_column(record::ColumnId::Qd1Read, 1 << 20),
            engine: EngineUsed {
                used: "psync".into(),
                fallback: fallback.map(String::from),
                direct: true,
                jobs_as: None,
            },
            elapsed_s: 1.0,
            read: Some(DirectionStats {
                ios,
                iops: ios as f64,
                ..Default::default()
            }),
            write: None,
            cpu: Cpu::default(),
            notes: Vec::new(),
            repeats: None,
            file_preparation: None,
            cache_suspect: None,
            window: None,
        }
    }

    fn run() -> MeasuredRun {
        MeasuredRun {
            started_at: "2026-12-02T00:00:00Z".into(),
            runner: Runner::default(),
            storage: Storage::default(),
        }
    }

    #[test]
    fn a_test_without_io_gives_no_record() {
        let err = run()
            .finish(Measured {
                tests: vec![test("qd1-read", 10, None), test("sync-write", 0, None)],
                ..Default::default()
            })
            .unwrap_err();
        assert!(err.to_string().starts_with("sync-write: no I/O"), "{err}");
    }

    #[test]
    fn each_fallback_is_noted_once_and_the_record_is_new() {
        let why = "io_uring_setup: EPERM; used psync";
        let rec = run()
            .finish(Measured {
                tests: vec![test("qd1-read", 10, Some(why)), test("x", 5, Some(why))],
                notes: vec!["given".into()],
                ..Default::default()
            })
            .unwrap();
        assert_eq!(rec.notes, vec!["given".to_string(), why.to_string()]);
        assert_eq!(
            (rec.source.as_str(), rec.schema.as_str()),
            ("measured", record::SCHEMA)
        );
        assert_eq!(rec.started_at, "2026-12-02T00:00:00Z");
        assert_ne!(rec.finished_at, rec.started_at);
    }
}

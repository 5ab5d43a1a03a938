//! A step's result in the record, from one run's figures: its status, the inferred verdict
//! ([`super::verdict`], kept apart from the steps) and the notes that say what the figures
//! rest on.

use record::{Bound, StepIo, StepResult, StepStatus, TestResult};

use super::child::Measured;
use super::probe;
use super::step::Ran;
use super::verdict::{self, DiskFigures, StepSignals};

/// What a step's runs are judged against: this disk's figures and this machine's CPUs.
pub(crate) struct Yardstick<'a> {
    /// This disk's columns (from the same run or the newest record; may be empty).
    pub columns: &'a [TestResult],
    pub disk: DiskFigures,
    pub vcpus: u32,
    /// Where `columns` come from when not from the same run, noted on each step.
    pub columns_source: Option<&'a str>,
}

/// The step's and a daemon's CPU and I/O together.
struct Totals {
    user_s: f64,
    sys_s: f64,
    io: Option<StepIo>,
}

impl Totals {
    fn of(ran: &Ran) -> Totals {
        let m = &ran.measured;
        let mut t = Totals {
            user_s: m.rusage.user_s,
            sys_s: m.rusage.sys_s,
            io: m.io.clone(),
        };
        if let Some(d) = &ran.daemon {
            t.user_s += d.user_s;
            t.sys_s += d.sys_s;
            t.io = t.io.map(|i| probe::io_add(&i, &d.io));
        }
        t
    }
}

/// How the run ended: Ok on exit code 0, else Failed with the reason.
fn exit_status(m: &Measured) -> (StepStatus, Option<String>) {
    match (m.exit_code, m.signal) {
        (Some(0), _) => (StepStatus::Ok, None),
        (Some(code), _) => (StepStatus::Failed, Some(format!("exited with code {code}"))),
        (None, Some(sig)) => (StepStatus::Failed, Some(format!("killed by signal {sig}"))),
        (None, None) => (StepStatus::Failed, Some("ended abnormally".to_string())),
    }
}

impl Yardstick<'_> {
    /// The result of a run named `name` that ran `command`; `notes` are the step's own.
    pub(crate) fn result(
        &self,
        id: &str,
        name: String,
        command: Vec<String>,
        ran: Ran,
        mut notes: Vec<String>,
    ) -> StepResult {
        let totals = Totals::of(&ran);
        let (status, reason) = exit_status(&ran.measured);
        let (bound, why) = match &reason {
            None => self.verdict(&ran, &totals),
            Some(reason) => (
                Bound::Unknown,
                format!("The step failed ({reason}), so it gets no verdict."),
            ),
        };
        notes.extend(self.disk_note());
        let m = ran.measured;
        StepResult {
            id: id.into(),
            name,
            command,
            status,
            exit_code: m.exit_code,
            output_tail: (status == StepStatus::Failed).then_some(m.output_tail),
            reason,
            wall_s: m.wall_s,
            user_s: totals.user_s,
            sys_s: totals.sys_s,
            max_rss_kib: Some(m.rusage.max_rss_kib),
            io: totals.io,
            io_pressure_s: m.pressure_some_s,
            io_pressure_full_s: m.pressure_full_s,
            blkio_delay_s: m.blkio_delay_s,
            cpu_wait_s: m.cpu_wait_s,
            voluntary_switches: Some(m.rusage.voluntary_switches),
            involuntary_switches: Some(m.rusage.involuntary_switches),
            unavailable: m.unavailable,
            bound,
            why,
            notes,
            what_if: None,
            toolchain: None,
        }
    }

    /// The inferred verdict of a run that succeeded.
    fn verdict(&self, ran: &Ran, totals: &Totals) -> (Bound, String) {
        let m = &ran.measured;
        let v = verdict::judge(
            &StepSignals {
                wall_s: m.wall_s,
                cpu_s: totals.user_s + totals.sys_s,
                vcpus: self.vcpus,
                io: totals.io.clone(),
                io_pressure_s: m.pressure_some_s,
                blkio_delay_s: m.blkio_delay_s,
                cpu_wait_s: m.cpu_wait_s,
                // With a daemon counted, the client's switches no longer describe the
                // step's work: leave them out of the verdict.
                switches: ran
                    .daemon
                    .is_none()
                    .then_some((m.rusage.voluntary_switches, m.rusage.involuntary_switches)),
            },
            &self.disk,
        );
        (v.bound, v.why)
    }

    /// Where this disk's figures came from, or that there were none.
    fn disk_note(&self) -> Option<String> {
        if self.disk.is_empty() {
            Some(
                "no sequential figures for this disk: the verdict rests on the step's own signals"
                    .into(),
            )
        } else {
            self.columns_source
                .map(|src| format!("this disk's figures come from {src}"))
        }
    }
}

/// The result of a step that did not run, with the reason.
pub(crate) fn skipped(id: &str, name: String, reason: String) -> StepResult {
    StepResult {
        id: id.into(),
        name,
        status: StepStatus::Skipped,
        why: format!("Skipped: {reason}."),
        reason: Some(reason),
        bound: Bound::Unknown,
        ..Default::default()
    }
}

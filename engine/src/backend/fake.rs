//! A scripted backend for the job loop's tests: no file, no system call, and a clock of its
//! own, so every figure the loop computes from it is exact. Each I/O, numbered in the order
//! the loop prepares it, takes the latency and has the outcome the script gives it (every byte,
//! an errno, a short transfer); completions come back in the order their latencies put them.
//! The backend logs what it was given, so a test can check what the loop asked for.

use std::io;

use super::{Backend, Completion, Io, IoKind};

/// What one scripted I/O does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// Moves every byte asked.
    Full,
    /// Fails with this errno.
    Errno(i32),
    /// Moves only this many bytes.
    Short(u32),
    /// The write moves every byte; its sync then fails with this errno.
    SyncErrno(i32),
}

/// One I/O as the script plays it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Step {
    /// From its preparation to its completion, in the fake's clock.
    pub(crate) latency_ns: u64,
    pub(crate) outcome: Outcome,
    /// What the sync of a write + sync took (reported only for such writes).
    pub(crate) sync_ns: u64,
}

impl Step {
    /// Every byte, after `latency_ns`.
    pub(crate) fn full(latency_ns: u64) -> Step {
        Step {
            latency_ns,
            outcome: Outcome::Full,
            sync_ns: 0,
        }
    }
}

/// What a call of `submit_and_reap` does, by its number (0 first).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Reap {
    /// Waits for the next completion(s).
    Wait,
    /// Returns EINTR before waiting (a signal arrived).
    Interrupted,
    /// The backend broke (an errno outside any I/O).
    Broken(i32),
}

/// The script: the I/O's number and the I/O itself give how it plays.
pub(crate) type Script = Box<dyn FnMut(u64, &Io) -> Step>;

struct InFlight {
    number: u64,
    slot: u16,
    done_at_ns: u64,
    step: Step,
    io: Io,
}

/// The scripted backend, with the log of what the job loop did with it.
pub(crate) struct Fake {
    depth: u32,
    now_ns: u64,
    script: Script,
    reap: Box<dyn FnMut(u64) -> Reap>,
    reaps: u64,
    in_flight: Vec<InFlight>,
    /// Every I/O prepared, in order.
    pub(crate) prepared: Vec<Io>,
    /// The numbers of the I/Os completed, in the order they were handed back.
    pub(crate) completed: Vec<u64>,
    /// I/Os in flight at each wait for completions.
    pub(crate) in_flight_at_reap: Vec<usize>,
}

impl Fake {
    /// A fake of `depth` slots whose clock starts at `start_ns`.
    pub(crate) fn new(depth: u32, start_ns: u64, script: Script) -> Fake {
        Fake {
            depth,
            now_ns: start_ns,
            script,
            reap: Box::new(|_| Reap::Wait),
            reaps: 0,
            in_flight: Vec::new(),
            prepared: Vec::new(),
            completed: Vec::new(),
            in_flight_at_reap: Vec::new(),
        }
    }

    /// What each call of `submit_and_reap` does, by its number.
    pub(crate) fn with_reaps(mut self, reap: impl FnMut(u64) -> Reap + 'static) -> Fake {
        self.reap = Box::new(reap);
        self
    }

    /// I/Os prepared and not yet handed back.
    pub(crate) fn in_flight(&self) -> usize {
        self.in_flight.len()
    }
}

impl Backend for Fake {
    fn name(&self) -> &'static str {
        "fake"
    }

    fn depth(&self) -> u32 {
        self.depth
    }

    fn prepare(&mut self, io: Io) {
        assert!(
            self.in_flight.iter().all(|f| f.slot != io.slot),
            "slot {} reused while its I/O is in flight",
            io.slot
        );
        assert!(
            (io.slot as u32) < self.depth,
            "slot {} beyond the depth",
            io.slot
        );
        let number = self.prepared.len() as u64;
        let step = (self.script)(number, &io);
        self.prepared.push(io);
        self.in_flight.push(InFlight {
            number,
            slot: io.slot,
            done_at_ns: self.now_ns + step.latency_ns,
            step,
            io,
        });
    }

    fn submit_and_reap(&mut self, done: &mut Vec<Completion>) -> io::Result<()> {
        let call = self.reaps;
        self.reaps += 1;
        match (self.reap)(call) {
            Reap::Wait => {}
            Reap::Interrupted => return Err(io::Error::from_raw_os_error(libc::EINTR)),
            Reap::Broken(errno) => return Err(io::Error::from_raw_os_error(errno)),
        }
        self.in_flight_at_reap.push(self.in_flight.len());
        let Some(next_ns) = self.in_flight.iter().map(|f| f.done_at_ns).min() else {
            return Err(io::Error::other("reaped with nothing in flight"));
        };
        self.now_ns = next_ns;
        // Everything done by now, the earliest prepared first among equals.
        let mut ready: Vec<InFlight> = Vec::new();
        let mut i = 0;
        while i < self.in_flight.len() {
            if self.in_flight[i].done_at_ns <= self.now_ns {
                ready.push(self.in_flight.swap_remove(i));
            } else {
                i += 1;
            }
        }
        ready.sort_by_key(|f| f.number);
        for f in ready {
            self.completed.push(f.number);
            let result = match f.step.outcome {
                Outcome::Full => f.io.len as i32,
                Outcome::Errno(errno) => -errno,
                Outcome::Short(moved) => moved as i32,
                Outcome::SyncErrno(errno) => -errno,
            };
            let syncs = matches!(f.io.kind, IoKind::WriteDatasync | IoKind::WriteFsync);
            done.push(Completion {
                slot: f.slot,
                result,
                sync_ns: syncs.then_some(f.step.sync_ns),
                done_ns: None,
                sync_failed: matches!(f.step.outcome, Outcome::SyncErrno(_)),
            });
        }
        Ok(())
    }

    fn now_ns(&self) -> u64 {
        self.now_ns
    }
}

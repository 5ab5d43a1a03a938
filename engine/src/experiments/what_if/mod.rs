//! What-if experiments: rerun a step with the disk capped and on memory, and judge what it
//! waits on by what changed its time.
//!
//! The conditions (besides the normal run, which is the reference):
//! - `memory`: the step's work folder (scratch, target, generated inputs), its `TMPDIR` and a
//!   cargo step's `CARGO_TARGET_DIR` on a private tmpfs ([`memory_files`]), the run counted by
//!   a cgroup of its own;
//! - `iops-capped`: the device(s) under `--dir` capped in I/Os per second, bandwidth free;
//! - `bandwidth-capped`: the same device(s) capped in bytes per second, I/Os free;
//! - `like:<label>`: both caps taken from another runner's figures (a prediction).
//!
//! Two halves that do not know each other:
//! - the mechanism, which puts a run under a condition and takes it off again and knows
//!   nothing of verdicts: `setup` (the small interface a run calls: apply, enter, undo),
//!   built on [`caps`] (the devices under `--dir`, a capped cgroup per run, a docker daemon
//!   under the same caps; the cgroups themselves are [`crate::experiments::cgroup`]), [`memory`] (the
//!   private tmpfs) and [`page_cache`]; and [`preflight`] with [`lock`], checked once before
//!   any step runs (root, the hierarchy, one experiment per machine, what a killed run left);
//! - the judgement, from the runs' figures to the verdict and its sentence: [`judgement`].
//!
//! [`options`] says which conditions run with which caps and how many times (3, more while
//! their [`spread`] is wide, within a budget); `experiment` runs them for one step and hands
//! the figures to the judgement. Every run (the normal one included) starts
//! with the step's own files out of the page cache (synced, then `POSIX_FADV_DONTNEED`): the
//! toolchain and the rest of the machine stay warm, as on a runner mid-job, so a cap measures
//! the step's I/O and not the cold start of `rustc`.

pub mod caps;
pub(crate) mod experiment;
pub(crate) mod judgement;
pub mod like_latency;
pub(crate) mod lock;
pub(crate) mod memory;
pub(crate) mod memory_files;
pub mod options;
pub(crate) mod page_cache;
pub mod preflight;
pub(crate) mod setup;
pub(crate) mod spread;

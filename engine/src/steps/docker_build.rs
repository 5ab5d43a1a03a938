//! The `docker-build` step: `docker build --no-cache` of the user's Dockerfile, or of a
//! built-in `FROM scratch` context (so no registry is needed): a tree of many small files and
//! a few large incompressible ones, copied through several layers.
//!
//! The client only streams the context to the daemon; the daemon's processes (dockerd,
//! containerd, a fuse-overlayfs storage driver, buildkitd) do the writing. When the daemon
//! is local and its processes are visible, their CPU and I/O during the step are added to
//! the step's and the step says so; machine-wide I/O pressure sees them anyway.

use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{Context, Result};
use record::TestResult;

use super::child::{self, NoAnswer};
use super::daemon::LocalDaemon;
use super::project::Project;
use super::step::{Prepared, Ran, Readiness, Step};
use crate::session::said::{Said, tell};

/// The step's id.
pub(crate) const ID: &str = "docker-build";

/// Default built-in context: 2000 small files and 3 large ones, about 200 MiB.
pub const DEFAULT_CONTEXT_MIB: u32 = 192;
/// How long `docker version` may take to answer before the engine counts as absent.
const ENGINE_TIMEOUT: Duration = Duration::from_secs(15);
/// Processes that do a local docker daemon's work.
pub(crate) const DAEMON_COMMANDS: [&str; 5] = [
    "dockerd",
    "containerd",
    "fuse-overlayfs",
    "buildkitd",
    "containerd-shim",
];

/// Whether a docker engine answers; Err is the reason to skip the step.
pub(crate) fn engine_answers() -> Result<String, String> {
    let mut ask = Command::new("docker");
    ask.args(["version", "--format", "{{.Server.Version}}"]);
    let out = match child::answer_within(ask, ENGINE_TIMEOUT) {
        Ok(out) => out,
        Err(NoAnswer::NotStarted(e)) => {
            return Err(format!(
                "`docker` could not be started ({e}): no docker CLI on PATH"
            ));
        }
        Err(NoAnswer::TimedOut) => {
            return Err(format!(
                "the docker engine did not answer `docker version` within {} s",
                ENGINE_TIMEOUT.as_secs()
            ));
        }
        Err(NoAnswer::Unreadable(e)) => return Err(format!("cannot read `docker version`: {e}")),
    };
    let version = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if out.status.success() && !version.is_empty() {
        return Ok(version);
    }
    let err = String::from_utf8_lossy(&out.stderr);
    let last = err
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("");
    let host = std::env::var("DOCKER_HOST").unwrap_or_else(|_| "the default socket".into());
    Err(format!(
        "no docker engine answered at {host} (`docker version`: {})",
        last.trim()
    ))
}

/// The local daemon's processes, not visible when DOCKER_HOST points elsewhere.
pub(crate) fn local_daemon() -> LocalDaemon {
    let remote = std::env::var("DOCKER_HOST")
        .is_ok_and(|host| !host.is_empty() && !host.starts_with("unix://"));
    LocalDaemon {
        commands: &DAEMON_COMMANDS,
        visible: !remote,
    }
}

/// The step: the project's Dockerfile, or a built-in context of `context_mib` MiB.
pub(crate) struct DockerBuild {
    project_root: PathBuf,
    context_mib: u32,
}

impl DockerBuild {
    /// `context_mib`: of the built-in context, when the project has no Dockerfile (None: the
    /// default).
    pub(crate) fn new(project: &Project, context_mib: Option<u32>) -> DockerBuild {
        DockerBuild {
            project_root: project.root.clone(),
            context_mib: context_mib.unwrap_or(DEFAULT_CONTEXT_MIB).max(1),
        }
    }
}

impl Step for DockerBuild {
    fn id(&self) -> &str {
        ID
    }

    fn name(&self) -> String {
        "docker build --no-cache".into()
    }

    /// No docker engine answering skips the step, with the reason.
    fn check(&self) -> Result<Readiness> {
        Ok(match engine_answers() {
            Ok(_) => Readiness::Ready,
            Err(reason) => Readiness::Skip(reason),
        })
    }

    fn prepare(&self, work: &Path) -> Result<Prepared> {
        let user_dockerfile = self.project_root.join("Dockerfile");
        let mut notes = Vec::new();
        // This run's id, on every image it builds (the tag, and a label), so its cleanup
        // removes its own images and never another run's on the same daemon.
        let run_id = record::random::new_id();
        let (dockerfile, context, name) = if user_dockerfile.is_file() {
            (
                user_dockerfile,
                self.project_root.clone(),
                "docker build --no-cache of the project's Dockerfile",
            )
        } else {
            let context = work.join("context");
            let dockerfile = generate_context(&context, self.context_mib, &run_id)?;
            notes.push(format!(
                "no Dockerfile in the project: built a FROM scratch context of {} MiB \
                 (many small files, three large incompressible ones, five COPY layers)",
                self.context_mib
            ));
            (
                dockerfile,
                context,
                "docker build --no-cache of a built-in FROM scratch context",
            )
        };
        let tag = format!("diskbench-step-{run_id}");
        let mut run = Prepared::new(
            name.into(),
            build_command(&dockerfile, &context, &tag, &run_id),
        );
        run.notes = notes;
        run.daemon = Some(local_daemon());
        run.cleanup = Some(Box::new(move || remove_run_images(&tag, &run_id)));
        Ok(run)
    }

    fn notes(&self, ran: &Ran, _columns: &[TestResult]) -> Vec<String> {
        vec![match &ran.daemon {
            Some(d) => format!(
                "CPU and I/O include the local docker daemon's processes ({}), which may \
                 also serve other clients meanwhile; their storage is not under --dir",
                d.commands.join(", ")
            ),
            None => "the docker daemon's processes are not visible (remote DOCKER_HOST or \
                     another PID namespace): CPU and I/O are the client's only"
                .into(),
        }]
    }

    fn what_if_note(&self) -> Option<&'static str> {
        Some(
            "on memory, the build context is on tmpfs; the docker daemon's own storage stays \
             where it is",
        )
    }
}

/// Lay out the built-in context in `root` and return the Dockerfile's path. `total_mib` is
/// split: an eighth in small files of 1-8 KiB, the rest in three large files. Every layer
/// from the second instruction on carries the run's label (`run_id`), so the images an
/// interrupted build leaves untagged are found as this run's.
pub(crate) fn generate_context(root: &Path, total_mib: u32, run_id: &str) -> Result<PathBuf> {
    let mut rng = Xorshift(0x9E37_79B9_7F4A_7C15);
    let small_total = (total_mib as u64 * 1024 * 1024 / 8).max(64 * 1024);
    let mut written = 0u64;
    let mut i = 0u32;
    while written < small_total {
        let dir = root.join(format!("small/d{:02}", i % 40));
        fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
        let len = 1024 + (rng.next() % (7 * 1024)) as usize;
        write_random(&dir.join(format!("f{i:05}.bin")), len, &mut rng)?;
        written += len as u64;
        i += 1;
    }
    let large_total =
        total_mib as u64 * 1024 * 1024 - small_total.min(total_mib as u64 * 1024 * 1024);
    let big = root.join("big");
    fs::create_dir_all(&big).with_context(|| format!("cannot create {}", big.display()))?;
    for b in 0..3 {
        write_random(
            &big.join(format!("big-{b}.bin")),
            (large_total / 3) as usize,
            &mut rng,
        )?;
    }
    let dockerfile = root.join("Dockerfile");
    let text = format!(
        "# Generated by cargo-diskbench: many small files and a few large ones,\n\
         # through several layers.\n\
         FROM scratch\n\
         LABEL {STEP_LABEL} {RUN_LABEL}={run_id}\n\
         COPY small/ /small/\n\
         COPY big/big-0.bin /big/\n\
         COPY big/big-1.bin /big/\n\
         COPY big/big-2.bin /big/\n\
         COPY small/ /small-again/\n"
    );
    fs::write(&dockerfile, text)
        .with_context(|| format!("cannot write {}", dockerfile.display()))?;
    Ok(dockerfile)
}

struct Xorshift(u64);

impl Xorshift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// Incompressible content, synced so no write-back of it lands inside the timed build.
fn write_random(path: &Path, len: usize, rng: &mut Xorshift) -> Result<()> {
    let mut f =
        fs::File::create(path).with_context(|| format!("cannot create {}", path.display()))?;
    let mut buf = vec![0u8; 1 << 20];
    let mut left = len;
    while left > 0 {
        // Laying out a large context takes seconds: let Ctrl-C through.
        if record::cancel::requested() {
            return Err(record::error::interrupted());
        }
        let n = left.min(buf.len());
        for chunk in buf[..n].chunks_mut(8) {
            let v = rng.next().to_le_bytes();
            chunk.copy_from_slice(&v[..chunk.len()]);
        }
        f.write_all(&buf[..n])
            .with_context(|| format!("cannot write {}", path.display()))?;
        left -= n;
    }
    f.sync_all()
        .with_context(|| format!("cannot sync {}", path.display()))
}

pub(crate) fn build_command(dockerfile: &Path, context: &Path, tag: &str, run_id: &str) -> Command {
    let mut cmd = Command::new("docker");
    cmd.args([
        "build",
        "--no-cache",
        "--force-rm",
        "--label",
        STEP_LABEL,
        "--label",
    ])
    .arg(format!("{RUN_LABEL}={run_id}"))
    .args(["-t", tag, "-f"])
    .arg(dockerfile)
    .arg(context);
    cmd
}

/// The label on every image the step builds (and, in the built-in Dockerfile, on every layer
/// from the second instruction on).
pub(crate) const STEP_LABEL: &str = "diskbench.step=docker-build";
/// The label key whose value is one run's id: what a run's cleanup removes by. Two runs on
/// one daemon (two self-hosted runners on a host, two `steps` runs at once) each remove only
/// their own; a filter on [`STEP_LABEL`] alone also matched the untagged intermediate images
/// of a build still running, which then failed with "unknown parent image ID".
pub(crate) const RUN_LABEL: &str = "diskbench.run";

/// How long one docker call of the cleanup may take before the daemon counts as not
/// answering.
const CLEANUP_CALL_TIMEOUT: Duration = Duration::from_secs(20);
/// How long the cleanup waits for the daemon to finish an interrupted build: it goes on with
/// the instruction the killed client started and commits its layer after the client is gone.
const INTERRUPTED_BUILD_WAIT: Duration = Duration::from_secs(120);
/// Checks in a row that must find nothing of the run before the cleanup ends: the daemon
/// commits a layer, then removes the build's container, then stops.
const QUIET_CHECKS: u32 = 3;

/// Remove every image and build container of this run (the tag and anything labelled with
/// `run_id`). After Ctrl-C the daemon may still be building: the cleanup waits until
/// [`QUIET_CHECKS`] checks a second apart find nothing of the run (at most
/// [`INTERRUPTED_BUILD_WAIT`]). Every docker call has a timeout, and a further SIGINT/SIGTERM
/// ends the wait at once. Returns what was left, with the command that removes it.
pub(crate) fn remove_run_images(tag: &str, run_id: &str) -> Option<String> {
    let at_start = record::cancel::signals();
    let interrupted = record::cancel::requested();
    let stop = move || record::cancel::signals() > at_start;
    let filter = format!("label={RUN_LABEL}={run_id}");
    let by_hand = format!(
        "remove it with `docker image rm -f {tag}; docker image prune -f --filter {filter}`"
    );
    if interrupted {
        tell(Said::Status(format!(
            "waiting for the docker daemon to end the interrupted build of {tag} (Ctrl-C again \
             to stop waiting)..."
        )));
    }
    let docker = |args: &[&str]| -> Result<std::process::Output, String> {
        let mut cmd = Command::new("docker");
        cmd.args(args);
        child::answer_within_unless(cmd, CLEANUP_CALL_TIMEOUT, &stop).map_err(|e| match e {
            NoAnswer::TimedOut if stop() => "a second signal stopped the cleanup".to_string(),
            NoAnswer::TimedOut => format!(
                "the docker daemon did not answer `docker {}` within {} s",
                args.join(" "),
                CLEANUP_CALL_TIMEOUT.as_secs()
            ),
            NoAnswer::NotStarted(e) | NoAnswer::Unreadable(e) => format!("`docker`: {e}"),
        })
    };
    let lines = |out: &std::process::Output| -> Vec<String> {
        String::from_utf8_lossy(&out.stdout)
            .split_whitespace()
            .map(str::to_string)
            .collect()
    };
    let wait = if interrupted {
        INTERRUPTED_BUILD_WAIT
    } else {
        CLEANUP_CALL_TIMEOUT
    };
    let deadline = std::time::Instant::now() + wait;
    let mut quiet = 0;
    loop {
        // The tag first (the finished image), then what is labelled with this run: build
        // containers still there, then images (an untagged layer committed after the client
        // went, intermediate images).
        let step = (|| -> Result<bool, String> {
            let _ = docker(&["image", "rm", "-f", tag])?;
            let containers = lines(&docker(&["ps", "-a", "-q", "--filter", &filter])?);
            if !containers.is_empty() {
                let mut args = vec!["rm", "-f"];
                args.extend(containers.iter().map(String::as_str));
                let _ = docker(&args)?;
            }
            let images = lines(&docker(&["image", "ls", "-a", "-q", "--filter", &filter])?);
            if !images.is_empty() {
                let mut args = vec!["image", "rm", "-f"];
                args.extend(images.iter().map(String::as_str));
                let _ = docker(&args)?;
            }
            Ok(containers.is_empty() && images.is_empty())
        })();
        match step {
            Ok(true) => quiet += 1,
            Ok(false) => quiet = 0,
            Err(why) => {
                return Some(format!(
                    "could not remove the image {tag} ({why}): {by_hand}"
                ));
            }
        }
        if quiet >= if interrupted { QUIET_CHECKS } else { 1 } {
            return None;
        }
        if std::time::Instant::now() >= deadline {
            return Some(format!(
                "the docker daemon was still building {tag} after {} s: {by_hand}",
                wait.as_secs()
            ));
        }
        // A second apart, cut short by a further signal.
        for _ in 0..10 {
            if stop() {
                return Some(format!(
                    "a second signal stopped the cleanup of {tag}: {by_hand}"
                ));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn context_has_small_and_large_files() {
        let d = tempfile::tempdir().unwrap();
        let dockerfile = generate_context(d.path(), 8, "r1").unwrap();
        assert!(
            fs::read_to_string(dockerfile)
                .unwrap()
                .starts_with("# Generated")
        );
        let small = fs::read_dir(d.path().join("small")).unwrap().count();
        assert!(small > 1);
        let big = fs::metadata(d.path().join("big/big-0.bin")).unwrap().len();
        assert_eq!(big, (8 * 1024 * 1024 - 1024 * 1024) / 3);
    }
}

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
use std::process::{Command, Stdio};
use std::time::Duration;

use anyhow::{Context, Result};
use record::TestResult;

use super::child::{self, NoAnswer};
use super::daemon::LocalDaemon;
use super::project::Project;
use super::step::{Prepared, Ran, Readiness, Step};

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
        let (dockerfile, context, name) = if user_dockerfile.is_file() {
            (
                user_dockerfile,
                self.project_root.clone(),
                "docker build --no-cache of the project's Dockerfile",
            )
        } else {
            let context = work.join("context");
            let dockerfile = generate_context(&context, self.context_mib)?;
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
        let tag = format!("diskbench-step-{}", record::random::new_id());
        let mut run = Prepared::new(name.into(), build_command(&dockerfile, &context, &tag));
        run.notes = notes;
        run.daemon = Some(local_daemon());
        run.cleanup = Some(Box::new(move || remove_image(&tag)));
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
/// split: an eighth in small files of 1-8 KiB, the rest in three large files.
pub(crate) fn generate_context(root: &Path, total_mib: u32) -> Result<PathBuf> {
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
    let text = "# Generated by cargo-diskbench: many small files and a few large ones,\n\
                # through several layers.\n\
                FROM scratch\n\
                LABEL diskbench.step=docker-build\n\
                COPY small/ /small/\n\
                COPY big/big-0.bin /big/\n\
                COPY big/big-1.bin /big/\n\
                COPY big/big-2.bin /big/\n\
                COPY small/ /small-again/\n";
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

pub(crate) fn build_command(dockerfile: &Path, context: &Path, tag: &str) -> Command {
    let mut cmd = Command::new("docker");
    cmd.args([
        "build",
        "--no-cache",
        "--force-rm",
        "--label",
        STEP_LABEL,
        "-t",
        tag,
        "-f",
    ])
    .arg(dockerfile)
    .arg(context);
    cmd
}

/// The label on every image the step builds (and, in the built-in Dockerfile, on every layer
/// from the second instruction on), so an interrupted build's untagged `<none>` images can be
/// found and pruned without touching anyone else's.
pub(crate) const STEP_LABEL: &str = "diskbench.step=docker-build";

/// Remove the image the step built, and any dangling image a build of this step left (an
/// interrupted classic build leaves its last layer untagged). Returns a note if the image
/// could not be removed.
pub(crate) fn remove_image(tag: &str) -> Option<String> {
    let out = Command::new("docker")
        .args(["image", "rm", "-f", tag])
        .stdin(Stdio::null())
        .output();
    let _ = Command::new("docker")
        .args(["image", "prune", "-f", "--filter"])
        .arg(format!("label={STEP_LABEL}"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    match out {
        Ok(o) if o.status.success() => None,
        Ok(o) => Some(format!(
            "could not remove the image {tag}: {}",
            String::from_utf8_lossy(&o.stderr).trim()
        )),
        Err(e) => Some(format!("could not remove the image {tag}: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn context_has_small_and_large_files() {
        let d = tempfile::tempdir().unwrap();
        let dockerfile = generate_context(d.path(), 8).unwrap();
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

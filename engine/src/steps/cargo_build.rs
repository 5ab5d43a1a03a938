//! The `cargo-build` step: a cold `cargo build` into a fresh target directory.
//!
//! With a Cargo project, its workspace is built as the user builds it (`cargo build`, dev
//! profile); the dependencies are fetched beforehand, untimed, so the step measures the
//! build, not the network. Without one, a generated crate is built: `modules` modules of
//! generated functions and types, no dependencies, so every runner builds the same thing
//! offline.

use std::fmt::Write as _;
use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{Context, Result};

use super::child::{self, NoAnswer};
use super::project::Project;
use super::step::{Prepared, Readiness, Step};

/// The step's id.
pub(crate) const ID: &str = "cargo-build";
/// Modules in the generated crate by default: a build of roughly 20-40 s on 2 cores.
pub const DEFAULT_MODULES: u32 = 48;
const FUNCTIONS_PER_MODULE: u32 = 40;
/// How long `cargo --version` may take before cargo counts as absent.
const CARGO_TIMEOUT: Duration = Duration::from_secs(60);

/// The step: the project's workspace, or a generated crate of `modules` modules.
pub(crate) struct CargoBuild {
    /// The workspace root's Cargo.toml, when there is a Cargo project.
    manifest: Option<PathBuf>,
    root: PathBuf,
    modules: u32,
}

impl CargoBuild {
    /// `modules`: of the generated crate built when `project` has no Cargo.toml (None: the
    /// default).
    pub(crate) fn new(project: &Project, modules: Option<u32>) -> CargoBuild {
        CargoBuild {
            manifest: project.manifest.clone(),
            root: project.root.clone(),
            modules: modules.unwrap_or(DEFAULT_MODULES).max(1),
        }
    }
}

impl Step for CargoBuild {
    fn id(&self) -> &str {
        ID
    }

    fn name(&self) -> String {
        match &self.manifest {
            Some(_) => format!(
                "cold cargo build of {}",
                self.root
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_else(|| self.root.display().to_string())
            ),
            None => format!(
                "cold cargo build of a generated crate ({} modules)",
                self.modules
            ),
        }
    }

    /// A cargo that does not answer `cargo --version` skips the step (a project's own
    /// Cargo.toml has been read by `cargo metadata` already, so there it answers).
    fn check(&self) -> Result<Readiness> {
        let cargo = cargo_program();
        let mut ask = Command::new(&cargo);
        ask.arg("--version").current_dir(&self.root);
        let shown = cargo.display();
        let env_note = if std::env::var_os("CARGO").is_some() {
            " ($CARGO names it)"
        } else {
            ""
        };
        Ok(match child::answer_within(ask, CARGO_TIMEOUT) {
            Ok(out) if out.status.success() => Readiness::Ready,
            Ok(out) => Readiness::Skip(format!(
                "`{shown} --version` failed ({}): fix the Rust toolchain to time a cargo build",
                String::from_utf8_lossy(&out.stderr)
                    .lines()
                    .rev()
                    .find(|l| !l.trim().is_empty())
                    .unwrap_or("")
                    .trim()
            )),
            Err(NoAnswer::NotStarted(e)) => Readiness::Skip(format!(
                "`{shown}`{env_note} could not be started ({e}): no cargo here; install Rust \
                 (https://rustup.rs) to time a cargo build"
            )),
            Err(NoAnswer::TimedOut) => Readiness::Skip(format!(
                "`{shown} --version` did not answer within {} s",
                CARGO_TIMEOUT.as_secs()
            )),
            Err(NoAnswer::Unreadable(e)) => {
                Readiness::Skip(format!("cannot read `{shown} --version`: {e}"))
            }
        })
    }

    fn prepare(&self, work: &Path) -> Result<Prepared> {
        let target = work.join("target");
        match &self.manifest {
            Some(manifest) => {
                // Removes a Cargo.lock the fetch and build wrote into a project without one.
                let lockfile = LockfileGuard::new(manifest);
                let mut run = Prepared::new(self.name(), build_command(manifest, &target, false));
                run.notes.extend(prefetch(manifest));
                run.toolchain = rustc_version(&run.command);
                run.cleanup = Some(Box::new(move || {
                    drop(lockfile);
                    None
                }));
                Ok(run)
            }
            None => {
                let manifest = generate_crate(&work.join("crate"), self.modules)?;
                let mut run = Prepared::new(self.name(), build_command(&manifest, &target, true));
                run.toolchain = rustc_version(&run.command);
                run.notes.push(format!(
                    "no Cargo project here: built a generated crate ({} modules, no \
                     dependencies), the same on every runner",
                    self.modules
                ));
                Ok(run)
            }
        }
    }
}

/// The `cargo` to run: the one that ran us (`$CARGO`), else from PATH.
pub(crate) fn cargo_program() -> PathBuf {
    std::env::var_os("CARGO")
        .map(PathBuf::from)
        .unwrap_or_else(|| "cargo".into())
}

/// Write the generated crate into `root` (created). Every file is synced, so no dirty pages
/// from the generation are written back while the build is being timed.
pub(crate) fn generate_crate(root: &Path, modules: u32) -> Result<PathBuf> {
    let src = root.join("src");
    fs::create_dir_all(&src).with_context(|| format!("cannot create {}", src.display()))?;
    let manifest = root.join("Cargo.toml");
    // The empty [workspace] keeps the crate out of any workspace above --dir.
    write_synced(
        &manifest,
        "[package]\nname = \"diskbench-generated\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\
         publish = false\n\n[workspace]\n\n[lib]\npath = \"src/lib.rs\"\n",
    )?;
    let mut lib =
        String::from("//! Generated by cargo-diskbench: a fixed amount of compile work.\n");
    for m in 0..modules {
        writeln!(lib, "pub mod m{m};")?;
        write_synced(&src.join(format!("m{m}.rs")), &module_source(m))?;
    }
    lib.push_str("\npub fn total(x: u64) -> u64 {\n    let mut acc = x;\n");
    for m in 0..modules {
        writeln!(lib, "    acc = acc.wrapping_add(m{m}::entry(acc));")?;
    }
    lib.push_str("    acc\n}\n");
    write_synced(&src.join("lib.rs"), &lib)?;
    Ok(manifest)
}

/// One module: a generic type with trait impls and functions with branches and loops, the
/// kind of code that makes rustc type-check, monomorphise and generate code.
fn module_source(m: u32) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]\n\
         pub(crate) struct Item{m}<T> {{ pub id: u64, pub name: String, pub values: Vec<T> }}\n\n\
         impl<T: Clone + Into<u64>> Item{m}<T> {{\n    \
         pub(crate) fn score(&self) -> u64 {{ self.values.iter().cloned().map(Into::into).fold(self.id, u64::wrapping_add) }}\n}}\n"
    );
    for f in 0..FUNCTIONS_PER_MODULE {
        let _ = writeln!(
            s,
            "pub fn f{f}(x: u64) -> u64 {{\n    \
             let items: Vec<Item{m}<u32>> = (0..(x % 7 + 1)).map(|i| Item{m} {{ id: i ^ {f}, \
             name: format!(\"{m}-{f}-{{i}}\"), values: vec![i as u32; {f} % 5 + 1] }}).collect();\n    \
             let mut acc = x.rotate_left({r});\n    \
             for it in &items {{\n        \
             acc = match it.score() % 4 {{\n            \
             0 => acc.wrapping_mul({k}) ^ it.name.len() as u64,\n            \
             1 => acc.wrapping_add(it.id << 3),\n            \
             2 => acc.rotate_right(7) ^ {k},\n            \
             _ => acc.wrapping_sub(it.values.len() as u64),\n        }};\n    }}\n    \
             if items.iter().max().is_some_and(|i| i.id > 3) {{ acc ^ 0x5a }} else {{ acc }}\n}}\n",
            r = (m + f) % 63,
            k = 0x9E37_79B9u64.wrapping_mul(u64::from(f + 1) * u64::from(m + 1)) | 1,
        );
    }
    s.push_str("pub fn entry(x: u64) -> u64 {\n    let mut acc = x;\n");
    for f in 0..FUNCTIONS_PER_MODULE {
        let _ = writeln!(s, "    acc = f{f}(acc);");
    }
    s.push_str("    acc\n}\n");
    s
}

fn write_synced(path: &Path, text: &str) -> Result<()> {
    let mut f =
        fs::File::create(path).with_context(|| format!("cannot create {}", path.display()))?;
    f.write_all(text.as_bytes())
        .and_then(|_| f.sync_all())
        .with_context(|| format!("cannot write {}", path.display()))
}

/// `cargo build` of `manifest` into `target_dir`.
pub(crate) fn build_command(manifest: &Path, target_dir: &Path, offline: bool) -> Command {
    let mut cmd = Command::new(cargo_program());
    cmd.arg("build").arg("--manifest-path").arg(manifest);
    if offline {
        cmd.arg("--offline");
    }
    if let Some(dir) = manifest.parent() {
        cmd.current_dir(dir);
    }
    cmd.env("CARGO_TARGET_DIR", target_dir)
        // The step reads its own output tail; colour codes would only garble it.
        .env("CARGO_TERM_COLOR", "never");
    cmd
}

/// The compiler `build` will run: `rustc --version` with the build's environment and in its
/// folder (`$RUSTC` if set, as cargo reads it, else `rustc` from PATH; rustup's proxy then
/// honours a rust-toolchain.toml there). None when it does not answer.
pub(crate) fn rustc_version(build: &Command) -> Option<String> {
    let rustc = build
        .get_envs()
        .find(|(k, _)| *k == "RUSTC")
        .and_then(|(_, v)| v.map(PathBuf::from))
        .or_else(|| std::env::var_os("RUSTC").map(PathBuf::from))
        .unwrap_or_else(|| "rustc".into());
    let mut cmd = Command::new(rustc);
    cmd.arg("--version").stdin(std::process::Stdio::null());
    if let Some(dir) = build.get_current_dir() {
        cmd.current_dir(dir);
    }
    let out = cmd.output().ok().filter(|o| o.status.success())?;
    let line = String::from_utf8_lossy(&out.stdout)
        .lines()
        .next()?
        .trim()
        .to_string();
    (!line.is_empty()).then_some(line)
}

/// Fetch the dependencies before the timed build. Returns a note when it did not work (the
/// build then may include downloads, or fail offline).
pub(crate) fn prefetch(manifest: &Path) -> Option<String> {
    let out = Command::new(cargo_program())
        .arg("fetch")
        .arg("--manifest-path")
        .arg(manifest)
        .env("CARGO_TERM_COLOR", "never")
        .stdin(std::process::Stdio::null())
        .output();
    match out {
        Ok(o) if o.status.success() => None,
        Ok(o) => Some(format!(
            "`cargo fetch` before the build failed ({}): the timed build may include downloads",
            String::from_utf8_lossy(&o.stderr)
                .lines()
                .last()
                .unwrap_or("")
                .trim()
        )),
        Err(e) => Some(format!("cannot run `cargo fetch`: {e}")),
    }
}

/// The project's `Cargo.lock`, removed again when this is dropped if the step's fetch and build
/// wrote it where there was none: a project that does not commit its lockfile (a library, say)
/// must not find a new one after `cargo diskbench` or the GitHub action ran in it. A lockfile
/// that was there is left as it is (`cargo fetch`/`cargo build` only resolve what is missing).
pub(crate) struct LockfileGuard {
    path: PathBuf,
    existed: bool,
}

impl LockfileGuard {
    /// `manifest` is the workspace root's `Cargo.toml`: the lockfile lives beside it.
    pub(crate) fn new(manifest: &Path) -> Self {
        let path = manifest.with_file_name("Cargo.lock");
        // symlink_metadata: a dangling symlink counts as "there" and is never removed.
        let existed = fs::symlink_metadata(&path).is_ok();
        LockfileGuard { path, existed }
    }
}

impl Drop for LockfileGuard {
    fn drop(&mut self) {
        if self.existed {
            return;
        }
        // Only a regular file cargo wrote; never follow or remove a symlink.
        if fs::symlink_metadata(&self.path).is_ok_and(|m| m.file_type().is_file()) {
            let _ = fs::remove_file(&self.path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_crate_has_the_asked_size() {
        let d = tempfile::tempdir().unwrap();
        let manifest = generate_crate(d.path(), 3).unwrap();
        assert!(manifest.is_file());
        let lib = fs::read_to_string(d.path().join("src/lib.rs")).unwrap();
        assert_eq!(lib.matches("pub mod m").count(), 3);
        let m0 = fs::read_to_string(d.path().join("src/m0.rs")).unwrap();
        assert_eq!(
            m0.matches("pub fn f").count(),
            FUNCTIONS_PER_MODULE as usize
        );
    }

    #[test]
    fn rustc_version_names_the_compiler_or_nothing() {
        let d = tempfile::tempdir().unwrap();
        let build = build_command(&d.path().join("Cargo.toml"), d.path(), true);
        // The rustc that runs these tests' cargo is on PATH here.
        let version = rustc_version(&build).expect("rustc answers");
        assert!(version.starts_with("rustc "), "{version}");
        let mut broken = build_command(&d.path().join("Cargo.toml"), d.path(), true);
        broken.env("RUSTC", d.path().join("no-such-rustc"));
        assert_eq!(rustc_version(&broken), None);
    }

    #[test]
    fn lockfile_guard_removes_only_a_lockfile_it_did_not_find() {
        let d = tempfile::tempdir().unwrap();
        let manifest = d.path().join("Cargo.toml");
        fs::write(&manifest, "[workspace]\n").unwrap();
        let lock = d.path().join("Cargo.lock");
        {
            let _guard = LockfileGuard::new(&manifest);
            fs::write(&lock, "# written by the build\n").unwrap();
        }
        assert!(!lock.exists(), "a lockfile the step created is removed");
        fs::write(&lock, "# the user's\n").unwrap();
        {
            let _guard = LockfileGuard::new(&manifest);
            fs::write(&lock, "# updated by the build\n").unwrap();
        }
        assert!(lock.exists(), "a lockfile that was there stays");
    }
}

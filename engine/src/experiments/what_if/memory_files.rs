//! The memory condition covers the step's files, not only its work folder: `TMPDIR` and, for
//! a cargo step, `CARGO_TARGET_DIR` go to the same tmpfs (a fresh folder each run), and the
//! disk I/O the run still did, measured by its cgroup, is said with what it means.
//!
//! Before, only the work folder went to memory: a `cargo test` whose tests write their
//! database under `target/` ran on the disk in the memory condition, and "on memory" looked
//! like "the disk does not matter" (1.40-1.91 s on memory against 1.38-1.77 s normal, beside a
//! 4.5x slowdown under an I/O-rate cap).

use std::path::{Path, PathBuf};
use std::process::Command;

use record::{CgroupIo, WhatIfCondition};

/// The step's temporary files on memory: `TMPDIR` inside the tmpfs.
const TMP_FOLDER: &str = ".diskbench-tmp";
/// A cargo step's target folder on memory: `CARGO_TARGET_DIR` inside the tmpfs.
const TARGET_FOLDER: &str = ".diskbench-target";

/// A memory run that still moved this much to or from a disk did disk I/O of its own (the
/// toolchain and binaries come from the page cache, which is warm): 64 I/Os or 1 MiB.
const RESIDUAL_IOS: u64 = 64;
const RESIDUAL_BYTES: u64 = 1 << 20;

/// The target folder a user step's command builds into when the command is cargo (its
/// first word `cargo`, or a path ending in `/cargo`): `$CARGO_TARGET_DIR` as this process
/// sees it, else the project's `target/`. None for any other command.
pub(crate) fn cargo_target_of(run: &str, project_root: &Path) -> Option<PathBuf> {
    let first = run.split_whitespace().next()?;
    if first != "cargo" && !first.ends_with("/cargo") {
        return None;
    }
    Some(
        std::env::var_os("CARGO_TARGET_DIR")
            .map(PathBuf::from)
            .map(|t| {
                if t.is_absolute() {
                    t
                } else {
                    project_root.join(t)
                }
            })
            .unwrap_or_else(|| project_root.join("target")),
    )
}

/// Point `cmd`'s temporary files (and a cargo step's target folder, `cargo_target`) into
/// `work`, the memory condition's fresh tmpfs. A target folder that exists is copied in first
/// (untimed, times kept) when it fits in half the memory available, so the run does the same
/// incremental work as the normal run rather than a build from scratch. Returns what was done,
/// for the condition's notes.
pub(crate) fn redirect(cmd: &mut Command, work: &Path, cargo_target: Option<&Path>) -> Vec<String> {
    let mut notes = Vec::new();
    let tmp = work.join(TMP_FOLDER);
    match std::fs::create_dir(&tmp) {
        Ok(()) => {
            cmd.env("TMPDIR", &tmp);
        }
        Err(e) => notes.push(format!(
            "TMPDIR stayed where it was: cannot create {}: {e}",
            tmp.display()
        )),
    }
    let Some(source) = cargo_target else {
        return notes;
    };
    let target = work.join(TARGET_FOLDER);
    if let Err(e) = std::fs::create_dir(&target) {
        notes.push(format!(
            "on memory, the cargo target folder stayed at {}: cannot create {}: {e}",
            source.display(),
            target.display()
        ));
        return notes;
    }
    cmd.env("CARGO_TARGET_DIR", &target);
    if source.is_dir() {
        let bytes = folder_bytes(source);
        let room = available_memory_bytes().map(|a| a / 2);
        if room.is_some_and(|r| bytes > r) {
            notes.push(format!(
                "on memory the cargo target folder started empty: {} ({}) does not fit in half \
                 the memory available, so the memory run built from scratch where the normal \
                 run may have built incrementally",
                source.display(),
                record::size::format_bytes(bytes)
            ));
        } else {
            let copied = Command::new("cp")
                .arg("-a")
                .arg(source.join("."))
                .arg(&target)
                .status();
            match copied {
                Ok(s) if s.success() => notes.push(format!(
                    "on memory, TMPDIR and CARGO_TARGET_DIR were inside the tmpfs; the target \
                     folder {} ({}) was copied in before the run, untimed",
                    source.display(),
                    record::size::format_bytes(bytes)
                )),
                other => notes.push(format!(
                    "on memory the cargo target folder could not be copied from {} ({}): the \
                     memory run may have built more than the normal run",
                    source.display(),
                    match other {
                        Ok(s) => s.to_string(),
                        Err(e) => e.to_string(),
                    }
                )),
            }
        }
    }
    notes
}

/// Bytes in the regular files under `dir` (symbolic links not followed).
fn folder_bytes(dir: &Path) -> u64 {
    walkdir::WalkDir::new(dir)
        .follow_links(false)
        .into_iter()
        .flatten()
        .filter(|e| e.file_type().is_file())
        .map(|e| e.metadata().map_or(0, |m| m.len()))
        .fold(0u64, u64::saturating_add)
}

/// `MemAvailable` from /proc/meminfo, bytes.
fn available_memory_bytes() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib.saturating_mul(1024))
}

/// Whether a memory run's disk I/O is more than the noise of a warm machine.
pub(crate) fn is_residual(io: &CgroupIo) -> bool {
    io.read_ios + io.write_ios >= RESIDUAL_IOS || io.read_bytes + io.write_bytes >= RESIDUAL_BYTES
}

/// The note for a memory run that still did disk I/O: the figure and what it means. None
/// when it did none to speak of, or when it was not measured.
pub(crate) fn residual_note(conditions: &[WhatIfCondition]) -> Option<String> {
    let memory = conditions.iter().find(|c| c.id == "memory")?;
    let io = memory.cgroup_io.filter(is_residual)?;
    Some(format!(
        "on memory the step still did disk I/O: {} read in {} I/Os and {} written in {} I/Os \
         (its cgroup's counters, the median memory run): some of its files are not in its work \
         folder, TMPDIR or the cargo target folder (a fixed path, a cache in $HOME, a daemon's \
         storage), so the memory time is not the step without a disk",
        record::size::format_bytes(io.read_bytes),
        io.read_ios,
        record::size::format_bytes(io.write_bytes),
        io.write_ios
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cargo_commands_are_told_from_others() {
        let root = Path::new("/p");
        assert!(cargo_target_of("cargo test --release", root).is_some());
        assert!(cargo_target_of("/home/u/.cargo/bin/cargo build", root).is_some());
        assert_eq!(cargo_target_of("npm test", root), None);
        assert_eq!(cargo_target_of("cargo-nextest run", root), None);
        assert_eq!(cargo_target_of("", root), None);
    }

    #[test]
    fn a_memory_run_with_disk_io_gets_the_note_with_its_figures() {
        let mut memory = WhatIfCondition {
            id: "memory".into(),
            cgroup_io: Some(CgroupIo {
                read_bytes: 0,
                write_bytes: 3 << 20,
                read_ios: 0,
                write_ios: 412,
            }),
            ..Default::default()
        };
        let note = residual_note(std::slice::from_ref(&memory)).unwrap();
        assert!(
            note.contains("412 I/Os") && note.contains("3 MiB"),
            "{note}"
        );
        memory.cgroup_io = Some(CgroupIo {
            write_ios: 3,
            write_bytes: 12 << 10,
            ..Default::default()
        });
        assert_eq!(residual_note(&[memory]), None);
    }

    #[test]
    fn folder_bytes_counts_the_regular_files_below_and_follows_no_link() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir(d.path().join("sub")).unwrap();
        std::fs::write(d.path().join("a"), [0u8; 10]).unwrap();
        std::fs::write(d.path().join("sub/b"), [0u8; 5]).unwrap();
        // A link back up would count everything again (and loop) if it were followed.
        std::os::unix::fs::symlink(d.path(), d.path().join("sub/up")).unwrap();
        assert_eq!(folder_bytes(d.path()), 15);
    }
}

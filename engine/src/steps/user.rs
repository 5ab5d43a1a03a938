//! The user's own steps: `[workspace.metadata.diskbench]` or `[package.metadata.diskbench]`
//! in the workspace root's Cargo.toml (a single-crate project has only the second), or a
//! `diskbench.toml` beside it (or in the current directory without a Cargo project):
//!
//! ```toml
//! [workspace.metadata.diskbench]
//! steps = [{ id = "test", run = "cargo test" }]
//! ```
//!
//! A malformed table is refused with the file, the key and the problem (exit code 2): a
//! typo must not silently drop the step someone wanted measured. For the same reason a
//! workspace member's own `[package.metadata.diskbench]`, which is not read (steps run in the
//! workspace root, and two members could both define `test`), is named in a warning that
//! says where to move it.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::Result;
use toml::{Table, Value};

use record::error::usage;

use super::step::{Prepared, Readiness, Step};
use crate::session::said::{Said, tell};

/// One user step: run as `sh -c RUN` in the project directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct UserStep {
    pub id: String,
    pub name: Option<String>,
    pub run: String,
}

pub(crate) const CONFIG_FILE: &str = "diskbench.toml";
/// The environment variable that gives user steps a scratch folder under `--dir`.
pub(crate) const SCRATCH_ENV: &str = "DISKBENCH_SCRATCH";

/// A user step as it runs: `sh -c RUN` in the project's root, with [`SCRATCH_ENV`] naming
/// its work folder.
pub(crate) struct UserCommand {
    pub step: UserStep,
    pub project_root: PathBuf,
}

impl Step for UserCommand {
    fn id(&self) -> &str {
        &self.step.id
    }

    fn name(&self) -> String {
        self.step
            .name
            .clone()
            .unwrap_or_else(|| self.step.run.clone())
    }

    fn check(&self) -> Result<Readiness> {
        Ok(Readiness::Ready)
    }

    fn prepare(&self, work: &Path) -> Result<Prepared> {
        let mut cmd = Command::new("sh");
        cmd.arg("-c")
            .arg(&self.step.run)
            .current_dir(&self.project_root)
            .env(SCRATCH_ENV, work);
        let mut run = Prepared::new(self.name(), cmd);
        run.cargo_target = crate::experiments::what_if::memory_files::cargo_target_of(
            &self.step.run,
            &self.project_root,
        );
        Ok(run)
    }
}

/// Read the steps from `cargo_toml` (the workspace root manifest, if any) and from
/// `diskbench.toml` in `project_dir`. `reserved` are the built-in step ids.
pub(crate) fn load(
    cargo_toml: Option<&Path>,
    project_dir: &Path,
    reserved: &[&str],
) -> Result<Vec<UserStep>> {
    let mut steps: Vec<UserStep> = Vec::new();
    let mut sources: Vec<(PathBuf, String, Option<Value>)> = Vec::new();
    if let Some(manifest) = cargo_toml {
        let table = read_table(manifest)?;
        for note in ignored_member_tables(manifest, &table) {
            tell(Said::Warning(note));
        }
        let section = table
            .get("workspace")
            .and_then(|w| w.get("metadata"))
            .and_then(|m| m.get("diskbench"))
            .cloned();
        sources.push((
            manifest.to_path_buf(),
            "workspace.metadata.diskbench".into(),
            section,
        ));
        // A single-crate project has no [workspace]: its metadata is the package's.
        let section = table
            .get("package")
            .and_then(|p| p.get("metadata"))
            .and_then(|m| m.get("diskbench"))
            .cloned();
        sources.push((
            manifest.to_path_buf(),
            "package.metadata.diskbench".into(),
            section,
        ));
    }
    let config = project_dir.join(CONFIG_FILE);
    if config.is_file() {
        sources.push((
            config.clone(),
            String::new(),
            Some(read_table(&config)?.into()),
        ));
    }
    for (file, prefix, section) in sources {
        let Some(section) = section else { continue };
        for step in parse_section(&file, &prefix, &section)? {
            let key = |k: &str| join_key(&prefix, k);
            if reserved.contains(&step.id.as_str()) {
                return Err(usage(format!(
                    "{}: {}: id \"{}\" is a built-in step; choose another id",
                    file.display(),
                    key("steps"),
                    step.id
                )));
            }
            if steps.iter().any(|s| s.id == step.id) {
                return Err(usage(format!(
                    "{}: {}: id \"{}\" is defined twice",
                    file.display(),
                    key("steps"),
                    step.id
                )));
            }
            steps.push(step);
        }
    }
    Ok(steps)
}

/// Member manifests larger than this are not looked at (a Cargo.toml is a few KiB).
const MAX_MEMBER_MANIFEST_BYTES: u64 = 1 << 20;

/// One warning per workspace member whose Cargo.toml holds a `[package.metadata.diskbench]`
/// table, which is not read: it names the file and where to move the table. `table` is the
/// workspace root manifest `manifest`, already parsed.
pub(crate) fn ignored_member_tables(manifest: &Path, table: &Table) -> Vec<String> {
    let Some(workspace) = table.get("workspace").and_then(Value::as_table) else {
        return Vec::new();
    };
    let root = manifest.parent().unwrap_or(Path::new("."));
    let paths = |key: &str| -> Vec<&str> {
        workspace
            .get(key)
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default()
    };
    let excluded: Vec<PathBuf> = paths("exclude").iter().map(|e| root.join(e)).collect();
    let mut dirs: Vec<PathBuf> = paths("members")
        .iter()
        .flat_map(|pattern| expand_member(root, pattern))
        .filter(|d| !excluded.iter().any(|e| d.starts_with(e)))
        .collect();
    dirs.sort();
    dirs.dedup();
    let mut notes = Vec::new();
    for dir in dirs {
        let member = dir.join("Cargo.toml");
        // Only regular files of a sane size: a member path comes from the manifest's text.
        let readable = std::fs::metadata(&member)
            .is_ok_and(|m| m.is_file() && m.len() <= MAX_MEMBER_MANIFEST_BYTES);
        if !readable || member == manifest {
            continue;
        }
        // Cargo has checked the members' manifests already; one it cannot parse is its error.
        let Some(member_table) = record::input::read_text(&member)
            .ok()
            .and_then(|t| t.parse::<Table>().ok())
        else {
            continue;
        };
        let has_table = member_table
            .get("package")
            .and_then(|p| p.get("metadata"))
            .and_then(|m| m.get("diskbench"))
            .is_some();
        if has_table {
            let rel = dir.strip_prefix(root).unwrap_or(&dir).display().to_string();
            notes.push(format!(
                "{}: [package.metadata.diskbench] of a workspace member is not read; move its \
                 steps to [workspace.metadata.diskbench] in {} (or to {CONFIG_FILE} beside it), \
                 where they run in the workspace root: prefix a member's command with \
                 `cd {rel} && `",
                member.display(),
                manifest.display()
            ));
        }
    }
    notes
}

/// The directories a `workspace.members` entry names below `root`: `*` and `?` expand within
/// one path component; an entry that leaves the root (`..`, absolute) is not followed.
fn expand_member(root: &Path, pattern: &str) -> Vec<PathBuf> {
    if pattern.starts_with('/') {
        return Vec::new();
    }
    let mut dirs = vec![root.to_path_buf()];
    for part in pattern.split('/').filter(|p| !p.is_empty() && *p != ".") {
        if part == ".." {
            return Vec::new();
        }
        if !part.contains(['*', '?']) {
            dirs = dirs.into_iter().map(|d| d.join(part)).collect();
            continue;
        }
        dirs = dirs
            .iter()
            .filter_map(|d| std::fs::read_dir(d).ok())
            .flat_map(|entries| entries.flatten())
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
            .filter(|e| e.file_name().to_str().is_some_and(|n| wildcard(part, n)))
            .map(|e| e.path())
            .collect();
    }
    dirs
}

/// `*` matches any run of characters, `?` one character; everything else itself.
fn wildcard(pattern: &str, name: &str) -> bool {
    let (p, n): (Vec<char>, Vec<char>) = (pattern.chars().collect(), name.chars().collect());
    // Classic two-pointer match with backtracking to the last `*`.
    let (mut i, mut j, mut star, mut mark) = (0, 0, None, 0);
    while j < n.len() {
        if i < p.len() && (p[i] == '?' || p[i] == n[j]) {
            i += 1;
            j += 1;
        } else if i < p.len() && p[i] == '*' {
            star = Some(i);
            mark = j;
            i += 1;
        } else if let Some(s) = star {
            i = s + 1;
            mark += 1;
            j = mark;
        } else {
            return false;
        }
    }
    p[i..].iter().all(|c| *c == '*')
}

fn read_table(path: &Path) -> Result<Table> {
    // Through the one input reader: a FIFO or a device named Cargo.toml or diskbench.toml
    // is refused, not waited on.
    let text =
        record::input::read_text(path).map_err(|e| usage(format!("{}: {e}", path.display())))?;
    text.parse::<Table>().map_err(|e| {
        let msg = e.to_string();
        let first = msg.lines().next().unwrap_or("").trim();
        usage(format!("{}: not valid TOML: {first}", path.display()))
    })
}

fn join_key(prefix: &str, key: &str) -> String {
    if prefix.is_empty() {
        key.to_string()
    } else {
        format!("{prefix}.{key}")
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::String(_) => "a string",
        Value::Integer(_) => "an integer",
        Value::Float(_) => "a float",
        Value::Boolean(_) => "a boolean",
        Value::Datetime(_) => "a date",
        Value::Array(_) => "an array",
        Value::Table(_) => "a table",
    }
}

/// Parse one `diskbench` table (`prefix` names it in messages).
pub(crate) fn parse_section(file: &Path, prefix: &str, section: &Value) -> Result<Vec<UserStep>> {
    let bad = |key: String, problem: String| usage(format!("{}: {key}: {problem}", file.display()));
    let Value::Table(table) = section else {
        return Err(bad(
            prefix.to_string(),
            format!("expected a table, found {}", type_name(section)),
        ));
    };
    for key in table.keys() {
        if key != "steps" {
            return Err(bad(
                join_key(prefix, key),
                "unknown key (the only key is `steps`)".into(),
            ));
        }
    }
    let Some(list) = table.get("steps") else {
        return Ok(Vec::new());
    };
    let steps_key = join_key(prefix, "steps");
    let Value::Array(list) = list else {
        return Err(bad(
            steps_key,
            format!(
                "expected an array of tables like [{{ id = \"test\", run = \"cargo test\" }}], found {}",
                type_name(list)
            ),
        ));
    };
    let mut steps = Vec::new();
    for (i, entry) in list.iter().enumerate() {
        let at = format!("{steps_key}[{i}]");
        let Value::Table(entry) = entry else {
            return Err(bad(
                at,
                format!(
                    "expected a table with `id` and `run`, found {}",
                    type_name(entry)
                ),
            ));
        };
        for key in entry.keys() {
            if !["id", "run", "name"].contains(&key.as_str()) {
                return Err(bad(
                    format!("{at}.{key}"),
                    "unknown key (expected `id`, `run` and optionally `name`)".into(),
                ));
            }
        }
        let string = |key: &str, required: bool| -> Result<Option<String>> {
            match entry.get(key) {
                None if required => Err(bad(format!("{at}.{key}"), "missing".into())),
                None => Ok(None),
                Some(Value::String(s)) if s.trim().is_empty() => {
                    Err(bad(format!("{at}.{key}"), "must not be empty".into()))
                }
                Some(Value::String(s)) => Ok(Some(s.clone())),
                Some(other) => Err(bad(
                    format!("{at}.{key}"),
                    format!("expected a string, found {}", type_name(other)),
                )),
            }
        };
        let id = string("id", true)?.unwrap_or_default();
        if !id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        {
            return Err(bad(
                format!("{at}.id"),
                format!("\"{id}\" may hold only letters, digits, '-', '_' and '.'"),
            ));
        }
        steps.push(UserStep {
            id,
            name: string("name", false)?,
            run: string("run", true)?.unwrap_or_default(),
        });
    }
    Ok(steps)
}

#[cfg(test)]
mod tests {
    use super::*;
    use record::error::exit_code;
    use record::exit;

    fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    #[test]
    fn reads_cargo_metadata_and_diskbench_toml() {
        let d = tempfile::tempdir().unwrap();
        let manifest = write(
            d.path(),
            "Cargo.toml",
            "[workspace]\n[workspace.metadata.diskbench]\n\
             steps = [{ id = \"test\", run = \"cargo test\" }]\n",
        );
        write(
            d.path(),
            CONFIG_FILE,
            "[[steps]]\nid = \"lint\"\nname = \"Clippy\"\nrun = \"cargo clippy\"\n",
        );
        let steps = load(Some(&manifest), d.path(), &["sqlite"]).unwrap();
        assert_eq!(steps.len(), 2);
        assert_eq!(steps[0].run, "cargo test");
        assert_eq!(steps[1].name.as_deref(), Some("Clippy"));
    }

    #[test]
    fn reads_package_metadata_of_a_single_crate_project() {
        let d = tempfile::tempdir().unwrap();
        let manifest = write(
            d.path(),
            "Cargo.toml",
            "[package]\nname = \"demo\"\nversion = \"0.1.0\"\n\n\
             [package.metadata.diskbench]\n\
             steps = [{ id = \"test\", run = \"cargo test\" }]\n",
        );
        let steps = load(Some(&manifest), d.path(), &[]).unwrap();
        assert_eq!(steps.len(), 1);
        assert_eq!(steps[0].id, "test");
        // A mistake there is named with its key, as in the workspace table.
        let manifest = write(
            d.path(),
            "Cargo.toml",
            "[package]\nname = \"demo\"\n[package.metadata.diskbench]\nsteps = [{ id = \"t\" }]\n",
        );
        let msg = format!("{:#}", load(Some(&manifest), d.path(), &[]).unwrap_err());
        assert!(
            msg.contains("package.metadata.diskbench.steps[0].run: missing"),
            "{msg}"
        );
        // Both tables: one step each; the same id twice is refused.
        let manifest = write(
            d.path(),
            "Cargo.toml",
            "[package]\nname = \"demo\"\n[package.metadata.diskbench]\n\
             steps = [{ id = \"a\", run = \"x\" }]\n[workspace]\n\
             [workspace.metadata.diskbench]\nsteps = [{ id = \"a\", run = \"y\" }]\n",
        );
        let msg = format!("{:#}", load(Some(&manifest), d.path(), &[]).unwrap_err());
        assert!(msg.contains("id \"a\" is defined twice"), "{msg}");
    }

    /// Regression: a member crate's [package.metadata.diskbench] was silently ignored.
    #[test]
    fn a_member_crates_table_is_named_in_a_warning() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path();
        let manifest = write(
            root,
            "Cargo.toml",
            "[workspace]\nmembers = [\"crates/*\", \"tool\", \"../outside\"]\n\
             exclude = [\"crates/skipped\"]\n",
        );
        let member = |dir: &str, extra: &str| {
            std::fs::create_dir_all(root.join(dir)).unwrap();
            write(
                &root.join(dir),
                "Cargo.toml",
                &format!("[package]\nname = \"x\"\n{extra}"),
            );
        };
        let table = "[package.metadata.diskbench]\nsteps = [{ id = \"t\", run = \"x\" }]\n";
        member("crates/core", table);
        member("crates/plain", "");
        member("crates/skipped", table);
        member("tool", table);
        let notes = ignored_member_tables(&manifest, &read_table(&manifest).unwrap());
        assert_eq!(notes.len(), 2, "{notes:?}");
        let core = &notes[0];
        assert!(
            core.contains("crates/core/Cargo.toml: [package.metadata.diskbench]"),
            "{core}"
        );
        assert!(
            core.contains("move its steps to [workspace.metadata.diskbench]"),
            "{core}"
        );
        assert!(core.contains(&manifest.display().to_string()), "{core}");
        assert!(core.contains("cd crates/core && "), "{core}");
        assert!(notes[1].contains("tool/Cargo.toml"), "{notes:?}");
        // The members' steps are not loaded: no step, no error.
        assert!(load(Some(&manifest), root, &[]).unwrap().is_empty());
        // A single-crate project's own table is read, not warned about.
        let single = write(
            root,
            "Cargo.toml",
            &format!("[package]\nname = \"x\"\n{table}"),
        );
        assert!(ignored_member_tables(&single, &read_table(&single).unwrap()).is_empty());
    }

    #[test]
    fn member_wildcards() {
        assert!(wildcard("*", "core"));
        assert!(wildcard("c*e", "core"));
        assert!(wildcard("c?re", "core"));
        assert!(wildcard("*-sys", "foo-sys"));
        assert!(!wildcard("*-sys", "foo-sys2"));
        assert!(!wildcard("c?re", "cre"));
    }

    #[test]
    fn no_config_means_no_steps() {
        let d = tempfile::tempdir().unwrap();
        let manifest = write(d.path(), "Cargo.toml", "[workspace]\n");
        assert!(load(Some(&manifest), d.path(), &[]).unwrap().is_empty());
        assert!(load(None, d.path(), &[]).unwrap().is_empty());
    }

    #[test]
    fn malformed_config_names_file_key_and_problem() {
        let d = tempfile::tempdir().unwrap();
        let cases = [
            (
                "steps = [{ id = \"t\", run = 3 }]",
                "workspace.metadata.diskbench.steps[0].run: expected a string, found an integer",
            ),
            (
                "steps = [{ id = \"t\" }]",
                "workspace.metadata.diskbench.steps[0].run: missing",
            ),
            (
                "steps = \"cargo test\"",
                "workspace.metadata.diskbench.steps: expected an array",
            ),
            (
                "step = []",
                "workspace.metadata.diskbench.step: unknown key",
            ),
            (
                "steps = [{ id = \"sqlite\", run = \"x\" }]",
                "id \"sqlite\" is a built-in step",
            ),
            (
                "steps = [{ id = \"a b\", run = \"x\" }]",
                "steps[0].id: \"a b\" may hold only",
            ),
            (
                "steps = [{ id = \"t\", run = \"x\" }, { id = \"t\", run = \"y\" }]",
                "id \"t\" is defined twice",
            ),
        ];
        for (section, expected) in cases {
            let manifest = write(
                d.path(),
                "Cargo.toml",
                &format!("[workspace]\n[workspace.metadata.diskbench]\n{section}\n"),
            );
            let err = load(Some(&manifest), d.path(), &["sqlite"]).unwrap_err();
            let msg = format!("{err:#}");
            assert_eq!(exit_code(&err), exit::USAGE, "{msg}");
            assert!(msg.contains("Cargo.toml: "), "{msg}");
            assert!(msg.contains(expected), "{msg} lacks {expected}");
        }
        let bad = write(d.path(), "Cargo.toml", "[workspace\n");
        let msg = format!("{:#}", load(Some(&bad), d.path(), &[]).unwrap_err());
        assert!(msg.contains("not valid TOML"), "{msg}");
    }
}

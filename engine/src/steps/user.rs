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
//! typo must not silently drop the step someone wanted measured.

use std::path::{Path, PathBuf};

use anyhow::Result;
use toml::{Table, Value};

use crate::error::usage;

/// One user step: run as `sh -c RUN` in the project directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UserStep {
    pub id: String,
    pub name: Option<String>,
    pub run: String,
}

pub const CONFIG_FILE: &str = "diskbench.toml";

/// Read the steps from `cargo_toml` (the workspace root manifest, if any) and from
/// `diskbench.toml` in `project_dir`. `reserved` are the built-in step ids.
pub fn load(
    cargo_toml: Option<&Path>,
    project_dir: &Path,
    reserved: &[&str],
) -> Result<Vec<UserStep>> {
    let mut steps: Vec<UserStep> = Vec::new();
    let mut sources: Vec<(PathBuf, String, Option<Value>)> = Vec::new();
    if let Some(manifest) = cargo_toml {
        let table = read_table(manifest)?;
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

fn read_table(path: &Path) -> Result<Table> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| usage(format!("{}: cannot read: {e}", path.display())))?;
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
pub fn parse_section(file: &Path, prefix: &str, section: &Value) -> Result<Vec<UserStep>> {
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
    use crate::error::{exit, exit_code};

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

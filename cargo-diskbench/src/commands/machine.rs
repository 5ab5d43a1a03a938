//! `cargo diskbench machine`: what the tool detects about this machine and the storage under
//! `--dir`, without running a test.

use std::path::PathBuf;

use anyhow::Result;
use record::{Runner, Storage};

#[derive(clap::Args, Debug)]
pub struct MachineArgs {
    /// The directory whose storage to describe; without it, $GITHUB_WORKSPACE, else the
    /// current dir
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Print the runner and storage sections as JSON, as a record would hold them
    #[arg(long)]
    pub json: bool,
    /// How this machine is named in the report; without it, as detected
    #[arg(long, value_name = "TEXT")]
    pub label: Option<String>,
}

pub fn exec(args: MachineArgs) -> Result<()> {
    let dir = match args.dir {
        Some(d) => d,
        None => std::env::var_os("GITHUB_WORKSPACE")
            .map(PathBuf::from)
            .unwrap_or(std::env::current_dir()?),
    };
    if !dir.is_dir() {
        return Err(record::error::usage(format!(
            "--dir {}: not a directory; give an existing directory on the disk to describe",
            dir.display()
        )));
    }
    let (runner, storage) = engine::machine::detect(&dir, args.label.as_deref());
    if args.json {
        let doc = serde_json::json!({ "runner": runner, "storage": storage });
        println!("{}", serde_json::to_string_pretty(&doc)?);
    } else {
        print!(
            "{}",
            crate::output::terminal_safe(&render(&runner, &storage))
        );
    }
    Ok(())
}

/// Aligned `key: value` lines, one block per section: the facts of
/// [`record::machine_facts`], then what only this command shows (how the machine was
/// detected, the storage notes).
fn render(runner: &Runner, storage: &Storage) -> String {
    use record::machine_facts::{self, Fact, Section};
    let mut out = String::new();
    let rows_of = |facts: Vec<Fact>| -> Vec<(String, String)> {
        let mut rows = Vec::new();
        for f in facts {
            for (i, line) in f.lines.into_iter().enumerate() {
                let key = if i == 0 {
                    f.name.to_lowercase()
                } else {
                    String::new()
                };
                rows.push((key, line));
            }
        }
        rows
    };

    for (in_section, facts) in machine_facts::sections(runner, storage) {
        let mut rows = Vec::new();
        if in_section == Section::Machine {
            rows.push(("label".to_string(), runner.label.clone()));
        }
        rows.extend(rows_of(facts));
        match in_section {
            Section::Machine => {
                for e in &runner.evidence {
                    rows.push(("detected from".into(), e.clone()));
                }
            }
            // A reason already given as class evidence is not repeated as a note.
            Section::Storage => {
                for n in &storage.notes {
                    if !storage
                        .class_evidence
                        .iter()
                        .any(|e| e.contains(n.as_str()))
                    {
                        rows.push(("note".into(), n.clone()));
                    }
                }
            }
        }
        section(&mut out, &in_section.title().to_lowercase(), &rows);
    }
    out
}

fn section(out: &mut String, title: &str, rows: &[(String, String)]) {
    let width = rows.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
    out.push_str(title);
    out.push('\n');
    for (k, v) in rows {
        let key = if k.is_empty() {
            String::new()
        } else {
            format!("{k}:")
        };
        out.push_str(&format!("  {key:<width$}  {v}\n", width = width + 1));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_keys_are_aligned() {
        let text = render(&Runner::default(), &Storage::default());
        for block in text.split("\nstorage\n") {
            let starts: Vec<usize> = block
                .lines()
                .filter(|l| l.starts_with("  "))
                .map(|l| {
                    l.len()
                        - l[l.find(':').map(|i| i + 1).unwrap_or(0)..]
                            .trim_start()
                            .len()
                })
                .collect();
            assert!(starts.len() > 5, "{text}");
            assert!(starts.windows(2).all(|w| w[0] == w[1]), "{text}");
        }
    }

    /// The terminal table, the Markdown job summary and the runner page carry the same
    /// facts, name for name and value for value, for a described machine and for one whose
    /// record holds nothing (each says `unknown`, none `0` or an empty line).
    #[test]
    fn the_three_renderings_carry_the_same_machine_facts() {
        let fleet = site_gen::testdata::Fleet::small();
        let described = fleet.record(0, 0);
        let mut blank = described.clone();
        blank.runner = Runner {
            label: "blank".into(),
            ..Default::default()
        };
        blank.storage = Storage::default();
        let html_escape = |text: &str| {
            text.replace('&', "&amp;")
                .replace('<', "&lt;")
                .replace('>', "&gt;")
                .replace('"', "&quot;")
                .replace('\'', "&#39;")
        };
        for record in [described, blank] {
            let (runner, storage) = (&record.runner, &record.storage);
            let terminal = render(runner, storage);
            let markdown = site_gen::job_summary::markdown(&record);
            let results = tempfile::tempdir().unwrap();
            let site = tempfile::tempdir().unwrap();
            record::results::write_record(results.path(), &record).unwrap();
            site_gen::build_site(&site_gen::SiteOptions {
                results: results.path().to_path_buf(),
                out: site.path().to_path_buf(),
                ..Default::default()
            })
            .unwrap();
            let page = std::fs::read_to_string(site.path().join(format!(
                "runners/{}.html",
                record::results::label_slug(&runner.label)
            )))
            .unwrap();
            let mut seen = 0;
            for (_, facts) in record::machine_facts::sections(runner, storage) {
                for fact in facts {
                    let key = format!("{}:", fact.name.to_lowercase());
                    assert!(
                        terminal.lines().any(|l| l.trim_start().starts_with(&key)),
                        "terminal lacks {key}\n{terminal}"
                    );
                    assert!(
                        markdown.contains(&format!("| {} | ", fact.name)),
                        "summary lacks {}\n{markdown}",
                        fact.name
                    );
                    assert!(
                        page.contains(&format!("<dt>{}</dt>", html_escape(fact.name))),
                        "page lacks {}",
                        fact.name
                    );
                    for line in &fact.lines {
                        let line = line.trim();
                        assert!(terminal.contains(line), "terminal: {line}\n{terminal}");
                        assert!(
                            markdown.contains(&site_gen::job_summary::escape(line)),
                            "summary: {line}\n{markdown}"
                        );
                        assert!(page.contains(&html_escape(line)), "page: {line}");
                    }
                    seen += 1;
                }
            }
            assert!(seen >= 15, "{seen} facts");
            if record.runner.label == "blank" {
                for (name, text) in [("terminal", &terminal), ("summary", &markdown)] {
                    assert!(!text.contains("0 vCPU"), "{name}: {text}");
                    assert!(!text.contains("0.0 GiB"), "{name}: {text}");
                }
                assert!(page.contains("<dt>vCPUs</dt><dd>unknown</dd>"));
                assert!(
                    terminal
                        .lines()
                        .any(|l| l.starts_with("  vcpus:") && l.ends_with(" unknown"))
                );
                assert!(markdown.contains("| vCPUs | unknown |"), "{markdown}");
            }
        }
    }
}

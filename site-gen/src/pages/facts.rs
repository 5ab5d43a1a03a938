//! Facts the content pages state that live elsewhere, rendered into the pages instead of typed:
//! each is a tera function a page in `content/*.md` calls as `{{ name(key="value", ...) }}`,
//! and becomes Markdown made from the code's own tables (storage-class rules, flagged mount
//! options, column settings and the engine `auto` picks) or computed from the shipped
//! published figures. A page and the code (or the data) therefore cannot disagree: change the
//! table and the page changes with it. [`PLACEHOLDERS`] lists them (the report-site page shows
//! that list), and each function's arguments are a struct, so a misspelt one is refused by name.

use std::sync::Arc;

use record::storage_rules::{DiskRule, FsRule};
use record::{BackendKind, ColumnId, ColumnSettings, Medium, Record, StorageClass};
use serde::Deserialize;
use tera::{Kwargs, Tera};

use crate::analysis::stats::{fmt_ns, fmt_sig};

/// Why a fact could not be rendered: the page asked for something the data or the repository
/// does not have.
#[derive(Debug, thiserror::Error)]
pub(crate) enum FactError {
    #[error("no published row of {rows} has {figure:?} for {column:?}")]
    NoRows {
        rows: String,
        figure: Figure,
        column: ColumnId,
    },
    #[error("fewer than two published rows have {0}")]
    TooFewRows(String),
    #[error("unknown column {0:?} (a column id, or \"widest\")")]
    UnknownColumn(String),
    #[error("give class=\"...\" (a storage class) or provider=\"...\"")]
    NoClassNorProvider,
    #[error("unknown command {0:?}: give one of the CLI's commands, e.g. run")]
    UnknownCommand(String),
    #[error("path {0:?}: give a path inside the repository, e.g. docs/CONTRACT.md")]
    OutsideRepository(String),
}

/// The published figures shipped with the project (imported, never shown as measured here).
pub(crate) const PUBLISHED_CSV: (&str, &str) = (
    "ec2-storage-2026-09-30_10-01.csv",
    include_str!("../../published/ec2-storage-2026-09-30_10-01.csv"),
);

/// The published hardware figures of the node job's runners (GitHub-hosted and RunsOn), with
/// their providers: `published(provider="GitHub", ...)` draws on these.
pub(crate) const PUBLISHED_HARDWARE_CSV: (&str, &str) = (
    "hardware-node-runners-2026-10-08.csv",
    include_str!("../../published/hardware-node-runners-2026-10-08.csv"),
);

/// A command of the CLI as the options page shows it. The CLI makes these from its own clap
/// definition ([`crate::SiteOptions::commands`]), so the page lists what `--help` lists.
#[derive(Clone, Debug, Default)]
pub struct CommandDoc {
    /// The command's name, e.g. `run`.
    pub name: String,
    /// What it does, in one line.
    pub about: String,
    /// Its options, in the order `--help` lists them (empty: a command whose options are not
    /// clap's, such as `fio`'s, documented by its page section instead).
    pub options: Vec<OptionDoc>,
}

/// One option of a command.
#[derive(Clone, Debug, Default)]
pub struct OptionDoc {
    /// Every spelling, the first with its value: `-q`, `--quiet`; `--dir DIR`.
    pub names: Vec<String>,
    /// The value used without it, as `--help` shows it (None: none, or the help says).
    pub default: Option<String>,
    /// The help text.
    pub help: String,
}

/// Everything the placeholders draw on. [`PageFacts::from_code`] takes the code's own tables;
/// tests build variations (a row removed or added) and see the page follow.
#[derive(Clone)]
pub(crate) struct PageFacts<'a> {
    pub fs_rules: Vec<&'a FsRule>,
    pub disk_rules: Vec<&'a DiskRule>,
    pub fsync_options: Vec<(&'a str, &'a str)>,
    pub columns: Vec<(ColumnId, ColumnSettings)>,
    pub published: Vec<Record>,
    /// The hardware rows of [`PUBLISHED_HARDWARE_CSV`] (for `provider=`).
    pub published_hardware: Vec<Record>,
    pub ceilings: Vec<record::ceiling::ClassCeiling>,
    /// The CLI's commands, for `commands()` and `options(command=...)`.
    pub commands: Vec<CommandDoc>,
}

impl PageFacts<'static> {
    /// The code's tables and the shipped published figures. Fails only when interrupted while
    /// the figures are read (the shipped CSV itself is tested to parse).
    pub(crate) fn from_code(commands: &[CommandDoc]) -> anyhow::Result<Self> {
        let published = crate::data::import::csv_records(PUBLISHED_CSV.1, PUBLISHED_CSV.0)
            .map_err(|e| {
                record::cancel::check()
                    .err()
                    .unwrap_or_else(|| anyhow::anyhow!("the shipped published CSV: {e}"))
            })?;
        let published_hardware =
            crate::data::import::csv_records(PUBLISHED_HARDWARE_CSV.1, PUBLISHED_HARDWARE_CSV.0)
                .map_err(|e| {
                    record::cancel::check()
                        .err()
                        .unwrap_or_else(|| anyhow::anyhow!("the shipped hardware CSV: {e}"))
                })?;
        Ok(PageFacts {
            published_hardware,
            fs_rules: record::storage_rules::FS_RULES.iter().collect(),
            disk_rules: record::storage_rules::DISK_RULES.iter().collect(),
            fsync_options: record::storage_rules::FSYNC_OPTIONS.to_vec(),
            columns: ColumnId::ALL.map(|c| (c, c.settings())).to_vec(),
            published,
            ceilings: record::ceiling::CLASS_CEILINGS.to_vec(),
            commands: commands.to_vec(),
        })
    }
}

/// Every placeholder as a page calls it, and what it becomes: the report-site page lists them
/// from here (`{{ placeholders() }}`), and a test expands each example.
pub(crate) const PLACEHOLDERS: &[(&str, &str)] = &[
    (
        "class_rules()",
        "the storage-class rules, in the order they are tried",
    ),
    (
        "flagged_mount_options()",
        "the mount options flagged as changing what `fdatasync` costs",
    ),
    (
        "column_settings()",
        "each column's job, and the backend `--engine auto` picks on a disk and on tmpfs",
    ),
    (
        "cache_ceilings()",
        "the ceilings above which a figure is marked as served by a cache",
    ),
    (
        "published(class=\"local-nvme\", column=\"sync-write\", figure=\"p99\", stat=\"range\")",
        "a figure over the shipped published rows of a storage class (optional `variant`); `figure`: `iops`, `mib_s`, `p99`, `mean`; `stat`: `range`, `median`, `min`, `max`, `rows`; with `provider=\"GitHub\"` instead of `class`, over that provider's rows of the node job's hardware figures",
    ),
    (
        "published_spread(column=\"sync-write\")",
        "how far a column spreads over every shipped published row (largest over smallest), and `published_spread(column=\"widest\")`: the column that spreads widest, with its spread",
    ),
    (
        "repo_link(path=\"docs/CONTRACT.md\")",
        "a link to a file of the project's repository (optional `text`)",
    ),
    (
        "commands()",
        "the CLI's commands, each with what it does, from its command definition",
    ),
    (
        "options(command=\"site\")",
        "a command's options, each with its default and help, from the CLI's command definition",
    ),
    ("placeholders()", "this table"),
];

/// The repository the project is published from (`repository` in Cargo.toml).
pub(crate) const REPOSITORY: &str = env!("CARGO_PKG_REPOSITORY");

/// The arguments of `published(...)`: a storage class (and variant) of the published EC2 rows,
/// or a provider of the node job's hardware rows.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PublishedArgs {
    class: Option<StorageClass>,
    variant: Option<String>,
    provider: Option<String>,
    column: ColumnId,
    figure: Figure,
    #[serde(default)]
    stat: Stat,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SpreadArgs {
    column: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RepoLinkArgs {
    path: String,
    text: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NoArgs {}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct OptionsArgs {
    command: String,
}

/// Arguments of a function call, refused by name when one is unknown or missing.
fn args<'a, T: Deserialize<'a>>(kwargs: &'a Kwargs) -> tera::TeraResult<T> {
    kwargs.deserialize()
}

fn fact(r: Result<String, FactError>) -> tera::TeraResult<String> {
    r.map_err(tera::Error::message)
}

/// A tera instance whose functions are the facts. Only `{{ }}` and `{% %}` are tera's: a
/// comment would start at every Markdown heading id (`{#sources}`), so comments get a
/// delimiter no page has.
#[expect(
    clippy::expect_used,
    reason = "the delimiters are constants, each two bytes and distinct"
)]
pub(crate) fn tera(facts: PageFacts<'static>) -> Tera {
    let mut tera = Tera::new();
    tera.set_delimiters(tera::Delimiters {
        comment_start: "\u{1}#".into(),
        comment_end: "#\u{1}".into(),
        ..Default::default()
    })
    .expect("distinct two-byte delimiters");
    let facts = Arc::new(facts);
    let f = facts.clone();
    tera.register_function("class_rules", move |k: Kwargs, _: &tera::State<'_>| {
        args::<NoArgs>(&k).map(|_| class_rules(&f.fs_rules, &f.disk_rules))
    });
    let f = facts.clone();
    tera.register_function(
        "flagged_mount_options",
        move |k: Kwargs, _: &tera::State<'_>| {
            args::<NoArgs>(&k).map(|_| flagged_mount_options(&f.fsync_options))
        },
    );
    let f = facts.clone();
    tera.register_function("column_settings", move |k: Kwargs, _: &tera::State<'_>| {
        args::<NoArgs>(&k).map(|_| column_settings(&f.columns))
    });
    let f = facts.clone();
    tera.register_function("cache_ceilings", move |k: Kwargs, _: &tera::State<'_>| {
        args::<NoArgs>(&k).map(|_| cache_ceilings(&f.ceilings))
    });
    tera.register_function("placeholders", |k: Kwargs, _: &tera::State<'_>| {
        args::<NoArgs>(&k).map(|_| placeholders(PLACEHOLDERS))
    });
    tera.register_function("repo_link", |k: Kwargs, _: &tera::State<'_>| {
        let a: RepoLinkArgs = args(&k)?;
        fact(repo_link(&a.path, a.text.as_deref()))
    });
    let f = facts.clone();
    tera.register_function("published", move |k: Kwargs, _: &tera::State<'_>| {
        let a: PublishedArgs = args(&k)?;
        fact(match (&a.provider, a.class) {
            (Some(provider), _) => {
                let rows: Vec<Record> = f
                    .published_hardware
                    .iter()
                    .filter(|r| r.runner.provider.as_deref() == Some(provider.as_str()))
                    .cloned()
                    .collect();
                summarise(
                    &rows,
                    &format!("provider {provider:?}"),
                    a.column,
                    a.figure,
                    a.stat,
                )
            }
            (None, Some(class)) => published(
                &f.published,
                class,
                a.variant.as_deref(),
                a.column,
                a.figure,
                a.stat,
            ),
            (None, None) => Err(FactError::NoClassNorProvider),
        })
    });
    let f = facts.clone();
    tera.register_function("commands", move |k: Kwargs, _: &tera::State<'_>| {
        args::<NoArgs>(&k).map(|_| commands(&f.commands))
    });
    let f = facts.clone();
    tera.register_function("options", move |k: Kwargs, _: &tera::State<'_>| {
        let a: OptionsArgs = args(&k)?;
        fact(options(&f.commands, &a.command))
    });
    let f = facts;
    tera.register_function("published_spread", move |k: Kwargs, _: &tera::State<'_>| {
        let a: SpreadArgs = args(&k)?;
        fact(published_spread(&f.published, &a.column))
    });
    tera
}

/// The storage-class rules in the order the code tries them: filesystem types first, then
/// each disk at the bottom of the device chain.
pub(crate) fn class_rules(fs_rules: &[&FsRule], disk_rules: &[&DiskRule]) -> String {
    let mut md =
        String::from("| # | looks at | matches when | rule | class |\n|---|---|---|---|---|\n");
    let mut n = 0;
    for r in fs_rules {
        n += 1;
        let types: Vec<String> = r.fstypes.iter().map(|t| format!("`{t}`")).collect();
        md.push_str(&format!(
            "| {n} | filesystem | type is {} | {} | `{}` |\n",
            types.join(", "),
            cell(r.why),
            r.class
        ));
    }
    for r in disk_rules {
        n += 1;
        md.push_str(&format!(
            "| {n} | each disk | {} | {} | `{}` |\n",
            cell(&r.test.describe()),
            cell(r.name),
            r.class
        ));
    }
    md.push_str(&format!(
        "| {} | — | nothing above matched | — | `{}` |\n",
        n + 1,
        StorageClass::Unknown
    ));
    md
}

/// A Markdown link to `path` in the repository: a file under `blob/main/`, a folder (ending in
/// `/`) under `tree/main/`. The path is relative to the repository root and stays inside it.
pub(crate) fn repo_link(path: &str, text: Option<&str>) -> Result<String, FactError> {
    let inside = !path.is_empty()
        && !path.starts_with('/')
        && path
            .split('/')
            .all(|part| part != ".." && part != "." && !part.contains([' ', '(', ')', '\\']));
    if !inside {
        return Err(FactError::OutsideRepository(path.into()));
    }
    let kind = if path.ends_with('/') { "tree" } else { "blob" };
    let text = match text {
        Some(t) => t.to_string(),
        None => format!("`{path}`"),
    };
    Ok(format!(
        "[{text}]({REPOSITORY}/{kind}/main/{})",
        path.trim_end_matches('/')
    ))
}

/// The placeholders a page can use, as a table.
pub(crate) fn placeholders(list: &[(&str, &str)]) -> String {
    let mut md = String::from("| placeholder | becomes |\n|---|---|\n");
    for (call, what) in list {
        // Written out, not called: tera does not read a function's output again.
        md.push_str(&format!(
            "| `{{{{ {} }}}}` | {} |\n",
            cell(call),
            cell(what)
        ));
    }
    md
}

/// The CLI's commands, each linked to its section of the page.
pub(crate) fn commands(commands: &[CommandDoc]) -> String {
    let mut md = String::from("| command | what it does |\n|---|---|\n");
    for c in commands {
        md.push_str(&format!(
            "| [`{0}`](#{0}) | {1} |\n",
            c.name,
            cell(&c.about)
        ));
    }
    md
}

/// A command's options as a table: each spelling, the default `--help` shows, the help.
pub(crate) fn options(commands: &[CommandDoc], command: &str) -> Result<String, FactError> {
    if commands.is_empty() {
        // A site rendered without the CLI (the library alone) still says where the list is.
        return Ok(format!(
            "`cargo diskbench {command} --help` lists the options.\n"
        ));
    }
    let c = commands
        .iter()
        .find(|c| c.name == command)
        .ok_or_else(|| FactError::UnknownCommand(command.into()))?;
    let mut md = String::from("| option | default | meaning |\n|---|---|---|\n");
    for o in &c.options {
        let names: Vec<String> = o.names.iter().map(|n| format!("`{}`", cell(n))).collect();
        md.push_str(&format!(
            "| {} | {} | {} |\n",
            names.join(", "),
            o.default.as_deref().map(cell).unwrap_or_default(),
            cell(&o.help)
        ));
    }
    Ok(md)
}

/// The mount options the record flags as changing what `fdatasync` costs.
pub(crate) fn flagged_mount_options(options: &[(&str, &str)]) -> String {
    let mut md = String::from("| mount option | why it is flagged |\n|---|---|\n");
    for (opt, why) in options {
        md.push_str(&format!("| `{opt}` | {} |\n", cell(why)));
    }
    md
}

/// The ceilings above which a figure is marked as served by a cache (`record::ceiling`).
pub(crate) fn cache_ceilings(rows: &[record::ceiling::ClassCeiling]) -> String {
    let mut md = String::from("| storage | ceiling per device |\n|---|---|\n");
    for r in rows {
        md.push_str(&format!("| {} | {} |\n", r.class.title(), cell(r.basis)));
    }
    md.push_str(&format!(
        "| unknown class | the largest row above, for bandwidth and for IOPS |\n\
         | any disk, `qd1-read` | {} IOPS (under {:.0} µs per read: faster than any device answers) |\n\
         | any disk, `sync-write` | {} IOPS (under {:.0} µs per write and its flush) |\n",
        record::units::format_figure(record::ceiling::QD1_MAX_IOPS),
        1e6 / record::ceiling::QD1_MAX_IOPS,
        record::units::format_figure(record::ceiling::SYNC_MAX_IOPS),
        1e6 / record::ceiling::SYNC_MAX_IOPS,
    ));
    md
}

/// Each column's job as the suite builds it, and the backend `--engine auto` picks for it.
pub(crate) fn column_settings(columns: &[(ColumnId, ColumnSettings)]) -> String {
    let mut md = String::from(
        "| column | pattern | block | jobs × in flight | after each write | `auto` on a disk | `auto` on tmpfs | `auto` on ramfs |\n|---|---|---|---|---|---|---|---|\n",
    );
    let backend = |job: &ColumnSettings, medium: Medium| {
        BackendKind::auto(job.iodepth, medium, job.fdatasync_every.is_some()).as_str()
    };
    for (c, job) in columns {
        let sync = match job.fdatasync_every {
            None => "—".to_string(),
            Some(1) => "`fdatasync`".to_string(),
            Some(n) => format!("`fdatasync` every {n}"),
        };
        md.push_str(&format!(
            "| `{}` | {} | {} | {} × {} | {} | {} | {} | {} |\n",
            c.as_str(),
            job.rw,
            record::size::format_bytes(job.block_bytes),
            job.numjobs,
            job.iodepth,
            sync,
            backend(job, Medium::Disk),
            // tmpfs takes O_DIRECT (since Linux 6.6, as on the runners); ramfs never does.
            backend(job, Medium::MemoryDirect),
            backend(job, Medium::MemoryBuffered),
        ));
    }
    md
}

/// Which figure of a column `published(...)` takes.
#[derive(Clone, Copy, Debug, PartialEq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Figure {
    Iops,
    MibS,
    /// Latency p99.
    P99,
    /// One second divided by IOPS: the mean latency of a depth-1 column.
    Mean,
}

/// What `published(...)` says about the figure over the rows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Stat {
    /// min-max, with the median and the row count.
    #[default]
    Range,
    Median,
    Min,
    Max,
    Rows,
}

impl Figure {
    fn of(self, rec: &Record, column: ColumnId) -> Option<f64> {
        let d = rec
            .tests
            .iter()
            .find(|t| t.column() == Some(column))?
            .main_direction()?;
        match self {
            Figure::Iops => Some(d.iops),
            Figure::MibS => Some(d.mib_s),
            // In nanoseconds.
            Figure::P99 => d.lat_ns.as_ref()?.p99.map(|ns| ns as f64),
            Figure::Mean => (d.iops > 0.0).then(|| 1e9 / d.iops),
        }
        .filter(|v| v.is_finite())
    }

    fn format(self, v: f64) -> String {
        match self {
            Figure::Iops => format!("{} IOPS", fmt_sig(v)),
            Figure::MibS => format!("{} MiB/s", fmt_sig(v)),
            Figure::P99 | Figure::Mean => fmt_ns(v),
        }
    }
}

/// One figure over the published rows of a class (and variant).
pub(crate) fn published(
    records: &[Record],
    class: StorageClass,
    variant: Option<&str>,
    column: ColumnId,
    figure: Figure,
    stat: Stat,
) -> Result<String, FactError> {
    let rows: Vec<Record> = records
        .iter()
        .filter(|r| r.storage.class == class)
        .filter(|r| variant.is_none_or(|v| r.runner.variant.as_deref() == Some(v)))
        .cloned()
        .collect();
    summarise(&rows, &format!("class {class}"), column, figure, stat)
}

/// One figure over `records` (`what` names them in an error).
fn summarise(
    records: &[Record],
    what: &str,
    column: ColumnId,
    figure: Figure,
    stat: Stat,
) -> Result<String, FactError> {
    let mut values: Vec<f64> = records
        .iter()
        .filter_map(|r| figure.of(r, column))
        .collect();
    if values.is_empty() {
        return Err(FactError::NoRows {
            rows: what.to_string(),
            figure,
            column,
        });
    }
    values.sort_by(f64::total_cmp);
    let n = values.len();
    let median = crate::analysis::stats::median(&values).unwrap_or(values[0]);
    let (min, max) = (values[0], values[n - 1]);
    Ok(match stat {
        Stat::Range => format!(
            "{}–{} (median {}, {n} published rows)",
            figure.format(min),
            figure.format(max),
            figure.format(median)
        ),
        Stat::Median => figure.format(median),
        Stat::Min => figure.format(min),
        Stat::Max => figure.format(max),
        Stat::Rows => n.to_string(),
    })
}

/// Largest over smallest headline of a column across every published row (any class).
pub(crate) fn column_spread(records: &[Record], column: ColumnId) -> Option<f64> {
    let values: Vec<f64> = records
        .iter()
        .filter_map(|r| r.test(column)?.headline())
        .filter(|v| v.is_finite() && *v > 0.0)
        .collect();
    let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = values.iter().copied().fold(0.0, f64::max);
    (values.len() >= 2).then(|| hi / lo)
}

/// `published_spread(column=...)`: "805 x"; `column="widest"`: "random read (1,316 x)".
pub(crate) fn published_spread(records: &[Record], column: &str) -> Result<String, FactError> {
    if column == "widest" {
        let (c, r) = ColumnId::ALL
            .into_iter()
            .filter_map(|c| Some((c, column_spread(records, c)?)))
            .max_by(|a, b| a.1.total_cmp(&b.1))
            .ok_or_else(|| FactError::TooFewRows("any column".into()))?;
        let title = if c == ColumnId::Qd1Read {
            c.title().to_string()
        } else {
            c.title().to_lowercase()
        };
        return Ok(format!(
            "{title} ({})",
            crate::analysis::stats::fmt_ratio(r)
        ));
    }
    let c = ColumnId::parse(column).ok_or_else(|| FactError::UnknownColumn(column.into()))?;
    column_spread(records, c)
        .map(crate::analysis::stats::fmt_ratio)
        .ok_or_else(|| FactError::TooFewRows(column.into()))
}

/// Text safe inside a Markdown table cell.
fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A page's Markdown with its calls filled from `facts`, the error as text.
    fn expand(md: &str, facts: &PageFacts<'static>) -> Result<String, String> {
        crate::pages::content::fill(&tera(facts.clone()), md).map_err(|e| e.to_string())
    }
    use record::storage_rules::FSYNC_OPTIONS;
    use record::storage_rules::{DISK_RULES, DiskTest, FS_RULES};

    fn page(name: &str) -> String {
        crate::pages::content::pages(None, &[])
            .unwrap()
            .into_iter()
            .find(|p| p.name == name)
            .unwrap_or_else(|| panic!("no page {name}"))
            .html
    }

    /// What a Markdown cell becomes in HTML (backticks to <code>, quotes smartened), enough
    /// to find a rule's name on the rendered page.
    fn html_of(md: &str) -> String {
        crate::pages::content::render(md).1
    }

    #[test]
    fn every_class_rule_in_the_code_is_on_the_methodology_page() {
        let html = page("methodology");
        for r in DISK_RULES {
            let name = html_of(r.name);
            let name = name
                .trim()
                .trim_start_matches("<p>")
                .trim_end_matches("</p>");
            assert!(html.contains(name), "rule {:?} is not on the page", r.name);
        }
        for r in FS_RULES {
            assert!(
                html.contains(r.why),
                "fs rule {:?} is not on the page",
                r.why
            );
            for t in r.fstypes {
                assert!(html.contains(&format!("<code>{t}</code>")), "{t}");
            }
        }
    }

    #[test]
    fn removing_or_adding_a_class_rule_changes_the_table() {
        let facts = PageFacts::from_code(&[]).unwrap();
        let full = class_rules(&facts.fs_rules, &facts.disk_rules);
        let without_ebs: Vec<&DiskRule> = facts
            .disk_rules
            .iter()
            .copied()
            .filter(|r| r.name != "Amazon EBS volume")
            .collect();
        let less = class_rules(&facts.fs_rules, &without_ebs);
        assert!(full.contains("Amazon EBS volume") && !less.contains("Amazon EBS volume"));
        assert_eq!(full.lines().count(), less.lines().count() + 1);

        let extra = DiskRule {
            name: "a disk nobody has seen",
            class: StorageClass::LocalNvme,
            test: DiskTest::ModelIs("Unseen SSD 9000"),
        };
        let mut more = facts.disk_rules.clone();
        more.insert(0, &extra);
        let added = class_rules(&facts.fs_rules, &more);
        assert!(added.contains("a disk nobody has seen") && added.contains("\"Unseen SSD 9000\""));
        // The order is the code's: the new first disk rule comes right after the fs rules.
        let pos = |t: &str, s: &str| t.find(s).unwrap();
        assert!(pos(&added, "Unseen SSD") < pos(&added, "EC2 instance store"));
    }

    /// The cache ceilings on the methodology page are the engine's table, row for row; a row
    /// removed from the facts leaves the page.
    #[test]
    fn cache_ceilings_come_from_the_engines_table() {
        let html = page("methodology");
        for r in record::ceiling::CLASS_CEILINGS {
            let basis = html_of(r.basis);
            let basis = basis
                .trim()
                .trim_start_matches("<p>")
                .trim_end_matches("</p>");
            assert!(html.contains(basis), "{} not on the page", r.basis);
        }
        let mut facts = PageFacts::from_code(&[]).unwrap();
        let gone = facts.ceilings.remove(0);
        let md = expand("{{ cache_ceilings() }}", &facts).unwrap();
        assert!(!md.contains(gone.basis), "{md}");
        assert!(md.contains(facts.ceilings[0].basis), "{md}");
    }

    #[test]
    fn flagged_mount_options_come_from_the_engines_table() {
        let html = page("methodology");
        for (opt, why) in FSYNC_OPTIONS {
            assert!(
                html.contains(&format!("<code>{opt}</code>")),
                "{opt} not on the page"
            );
            let why = html_of(why);
            let why = why
                .trim()
                .trim_start_matches("<p>")
                .trim_end_matches("</p>");
            assert!(html.contains(why), "{why} not on the page");
        }
        let md = flagged_mount_options(&FSYNC_OPTIONS[1..]);
        assert!(!md.contains("`nobarrier`"));
        let mut more = FSYNC_OPTIONS.to_vec();
        more.push(("data=journal", "data goes through the journal"));
        assert!(flagged_mount_options(&more).contains("`data=journal`"));
    }

    #[test]
    fn column_settings_and_the_auto_engine_come_from_the_suite() {
        let facts = PageFacts::from_code(&[]).unwrap();
        let md = column_settings(&facts.columns);
        // qd1-read: 4 KiB random reads, one job, depth 1, psync under auto on a disk,
        // libaio (the published harness's path) on tmpfs and psync on ramfs (no O_DIRECT).
        assert!(
            md.contains("| `qd1-read` | randread | 4 KiB | 1 × 1 | — | psync | libaio | psync |"),
            "{md}"
        );
        assert!(
            md.contains(
                "| `rand-read` | randread | 4 KiB | 4 × 32 | — | io_uring | libaio | psync |"
            ),
            "{md}"
        );
        assert!(md.contains(
            "| `sync-write` | write | 4 KiB | 1 × 1 | `fdatasync` | libaio | libaio | psync |"
        ));
        let html = page("methodology");
        for c in ColumnId::ALL {
            assert!(
                html.contains(&format!("<code>{}</code>", c.as_str())),
                "{c:?}"
            );
        }
        // One column fewer, one row fewer.
        let less = column_settings(&facts.columns[1..]);
        assert_eq!(md.lines().count(), less.lines().count() + 1);
        // A deeper qd1-read would switch auto to io_uring on a disk.
        let mut deeper = facts.columns.clone();
        for (c, job) in &mut deeper {
            if *c == ColumnId::Qd1Read {
                job.iodepth = 8;
            }
        }
        assert!(
            column_settings(&deeper).contains(
                "| `qd1-read` | randread | 4 KiB | 1 × 8 | — | io_uring | libaio | psync |"
            )
        );
    }

    #[test]
    fn published_figures_are_computed_from_the_shipped_csv() {
        let facts = PageFacts::from_code(&[]).unwrap();
        let nvme_sync_p99 = published(
            &facts.published,
            StorageClass::LocalNvme,
            None,
            ColumnId::SyncWrite,
            Figure::P99,
            Stat::Range,
        )
        .unwrap();
        // 26 local-NVMe rows, sync-write p99 19.3 to 185.3 us, median 42.75 us.
        assert!(
            nvme_sync_p99.contains("26 published rows"),
            "{nvme_sync_p99}"
        );
        assert!(nvme_sync_p99.starts_with("19.3 µs–185"), "{nvme_sync_p99}");
        let gp3 = published(
            &facts.published,
            StorageClass::Ebs,
            Some("gp3 default"),
            ColumnId::SeqRead,
            Figure::MibS,
            Stat::Median,
        )
        .unwrap();
        assert_eq!(gp3, "401 MiB/s");
        // Dropping the rows changes the figure: it is computed, not typed.
        let fewer: Vec<Record> = facts
            .published
            .iter()
            .filter(|r| !r.runner.label.starts_with("runson-m8id"))
            .cloned()
            .collect();
        let other = published(
            &fewer,
            StorageClass::LocalNvme,
            None,
            ColumnId::SyncWrite,
            Figure::P99,
            Stat::Range,
        )
        .unwrap();
        assert_ne!(other, nvme_sync_p99);
        assert!(
            published(
                &facts.published,
                StorageClass::VmDisk,
                None,
                ColumnId::SeqRead,
                Figure::MibS,
                Stat::Range
            )
            .is_err()
        );
    }

    #[test]
    fn placeholders_expand_and_bad_ones_say_which() {
        let facts = PageFacts::from_code(&[]).unwrap();
        let md = expand("a {{ published(class=\"tmpfs\", column=\"qd1-read\", figure=\"mean\", stat=\"rows\") }} b", &facts).unwrap();
        assert_eq!(md, "a 8 b");
        let err = expand("{{ nope() }}", &facts).unwrap_err();
        assert!(err.contains("Unknown function `nope`"), "{err}");
        let err = expand("{{ class_rules(x=\"1\") }}", &facts).unwrap_err();
        assert!(err.contains("unknown field `x`"), "{err}");
        assert!(expand("{{ class_rules()", &facts).is_err());
        assert_eq!(
            expand("no placeholders", &facts).unwrap(),
            "no placeholders"
        );
    }

    /// The figures the methodology page quotes from the project's fio fixture (clat vs lat).
    #[test]
    fn fio_fixture_clat_and_lat_figures_on_the_methodology_page_hold() {
        let text = include_str!("../../../fixtures/fio/fio-3.33-suite.json");
        let v: serde_json::Value = serde_json::from_str(text).unwrap();
        let p99 = |job: &str, dir: &str, kind: &str| -> f64 {
            let j = v["jobs"]
                .as_array()
                .unwrap()
                .iter()
                .find(|j| j["jobname"] == job)
                .unwrap();
            j[dir][kind]["percentile"]["99.000000"].as_f64().unwrap() / 1000.0
        };
        let (clat, lat) = (
            p99("qd1-read", "read", "clat_ns"),
            p99("qd1-read", "read", "lat_ns"),
        );
        let html = page("methodology");
        let said = format!("{:.0} µs", clat);
        assert!(html.contains(&said), "{said}");
        let said = format!("{:.0} µs", lat);
        assert!(html.contains(&said), "{said}");
        let pct = format!("+{:.0}%", (lat / clat - 1.0) * 100.0);
        assert!(html.contains(&pct), "{pct}");
        for job in ["rand-read", "rand-write"] {
            let dir = if job == "rand-read" { "read" } else { "write" };
            let (c, l) = (p99(job, dir, "clat_ns"), p99(job, dir, "lat_ns"));
            assert!(
                l / c - 1.0 <= 0.01,
                "{job}: the page says at most 1% at 4 × 32"
            );
        }
    }

    /// Every page says where its claims come from. (A page added to `content/` needs
    /// a `## Sources {#sources}` section too.)
    #[test]
    fn every_built_in_page_has_a_sources_section() {
        for p in crate::pages::content::pages(None, &[]).unwrap() {
            assert!(
                p.html.contains("<h2 id=\"sources\">Sources</h2>"),
                "content/{}.md has no Sources section",
                p.name
            );
        }
    }

    /// The guide says memory does "more than a thousand times" the synced writes of EBS.
    #[test]
    fn the_guides_thousand_times_claim_holds_on_the_published_rows() {
        let facts = PageFacts::from_code(&[]).unwrap();
        let median = |class| {
            published(
                &facts.published,
                class,
                None,
                ColumnId::SyncWrite,
                Figure::Iops,
                Stat::Median,
            )
            .unwrap()
            .trim_end_matches(" IOPS")
            .replace(',', "")
            .parse::<f64>()
            .unwrap()
        };
        assert!(median(StorageClass::Tmpfs) / median(StorageClass::Ebs) > 1000.0);
        assert!(page("columns").contains("more than a thousand times fewer"));
    }

    /// The machine page lists the flagged options and the classes by hand; it must name every
    /// entry of the code's tables.
    #[test]
    fn the_machine_page_names_every_flagged_option_and_class() {
        let machine = page("machine");
        for (opt, _) in FSYNC_OPTIONS {
            assert!(
                machine.contains(&format!("<code>{opt}</code>")),
                "machine page: {opt}"
            );
        }
        for c in StorageClass::ALL {
            assert!(
                machine.contains(&format!("<td><code>{}</code></td>", c.as_str())),
                "machine page: {c}"
            );
        }
    }

    /// Every exit code the program has is a row of the exit-codes page.
    #[test]
    fn the_exit_codes_page_has_a_row_for_every_exit_code() {
        let html = page("exit-codes");
        for &(code, _) in record::exit::ALL {
            assert!(
                html.contains(&format!("<tr><td>{code}</td>")),
                "exit code {code} has no row"
            );
        }
    }

    #[test]
    fn every_placeholder_example_expands_and_is_listed() {
        let facts = PageFacts::from_code(&[]).unwrap();
        for (call, _) in PLACEHOLDERS {
            let md = expand(&format!("{{{{ {call} }}}}"), &facts)
                .unwrap_or_else(|e| panic!("{call}: {e}"));
            assert!(!md.trim().is_empty(), "{call}");
        }
        let table = expand("{{ placeholders() }}", &facts).unwrap();
        for (call, _) in PLACEHOLDERS {
            assert!(
                table.contains(&format!("`{{{{ {} }}}}`", cell(call))),
                "{call}"
            );
        }
        // The listed calls are shown, not run again.
        assert!(!table.contains("| # | looks at"), "{table}");
        assert!(html_of(&table).contains("<code>{{ class_rules() }}</code>"));
    }

    #[test]
    fn repo_links_point_into_the_repository() {
        assert!(
            REPOSITORY.starts_with("https://github.com/"),
            "{REPOSITORY}"
        );
        let facts = PageFacts::from_code(&[]).unwrap();
        let md = expand("{{ repo_link(path=\"docs/CONTRACT.md\") }}", &facts).unwrap();
        assert_eq!(
            md,
            format!("[`docs/CONTRACT.md`]({REPOSITORY}/blob/main/docs/CONTRACT.md)")
        );
        let md = expand(
            "{{ repo_link(path=\"docs/benchmarks/\", text=\"the runs\") }}",
            &facts,
        )
        .unwrap();
        assert_eq!(
            md,
            format!("[the runs]({REPOSITORY}/tree/main/docs/benchmarks)")
        );
        for bad in ["", "/etc/passwd", "../x", "docs/../../x", "a b", "x)"] {
            let err = expand(&format!("{{{{ repo_link(path=\"{bad}\") }}}}"), &facts).unwrap_err();
            assert!(err.contains("inside the repository"), "{bad}: {err}");
        }
    }
}

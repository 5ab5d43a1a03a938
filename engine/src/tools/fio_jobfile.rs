//! fio's job files, read as fio reads them (`init.c`: `__parse_jobs_ini`, `add_job`,
//! `parse_options`; `parse.c`: `strip_blank_end`).
//!
//! - A line whose first non-blank character is `;` or `#` is a comment; anything from a `;` or
//!   `#` on an option line is cut off, as are blanks at both ends.
//! - `[name]` starts a job; `[global]` (any section whose name starts with `global`) changes
//!   the defaults of the jobs that follow it in that file, not the ones before it.
//! - `key=value` or `key` (a flag) sets an option; a later setting wins. `include FILE` reads
//!   FILE's options into the current section (FILE relative to the job file when it does not
//!   exist as given; an included file may not start sections).
//! - Options given on the command line beside the job files are defaults: the files'
//!   `[global]` and sections override them. fio resets its defaults before every job file but
//!   the first (`fill_def_thread`), so they reach only the first file's jobs; so here.
//! - Jobs run at the same time unless `stonewall` (or `wait_for_previous`) makes one wait
//!   for all before it; `stonewall` or `new_group` starts a new reporting group. The first job
//!   of every job file after the first is stonewalled.
//!
//! Every option is one of `crate::tools::fio`'s supported options (refused by name with its file,
//! line and section otherwise), and each section becomes one [`FioInvocation`].

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::Result;

use crate::tools::fio::{
    FioInvocation, Given, OutputFormat, Takes, find_option, from_given, split_args,
};
use record::error::usage;

/// The largest job file read; real ones are a few hundred bytes.
const MAX_JOB_FILE_BYTES: u64 = 1 << 20;
/// `include` nesting deeper than this is a loop.
const MAX_INCLUDE_DEPTH: usize = 16;
/// Options only the command line takes (they are not job options to fio either).
const COMMAND_LINE_ONLY: &[&str] = &["output-format", "output", "results", "provisioned"];

/// What `cargo diskbench fio ARGS` asks for: one job given as options, or job files.
#[derive(Clone, Debug)]
pub enum FioCommand {
    Options(Box<FioInvocation>),
    JobFiles(JobFileRun),
}

/// Parse `args` (everything after `fio`): positional arguments are job files, the options
/// beside them apply as fio applies them (see the module documentation).
pub fn parse_command(args: &[String]) -> Result<FioCommand> {
    let (given, files) = split_args(args)?;
    if files.is_empty() {
        return Ok(FioCommand::Options(Box::new(from_given(
            &given,
            args.to_vec(),
        )?)));
    }
    Ok(FioCommand::JobFiles(parse(&files, given, args.to_vec())?))
}

/// Job files with the command line's options: the jobs, in file order, and how to report.
#[derive(Clone, Debug)]
pub struct JobFileRun {
    pub jobs: Vec<FileJob>,
    pub output_format: OutputFormat,
    pub output: Option<PathBuf>,
    pub results_dir: Option<PathBuf>,
    pub provisioned: Option<record::Provisioned>,
    pub command_line: Vec<String>,
}

/// One job section.
#[derive(Clone, Debug)]
pub struct FileJob {
    pub inv: FioInvocation,
    /// fio's reporting group (`groupid`).
    pub group: u32,
    /// Jobs of one wave run at the same time; a stonewalled job starts the next wave.
    pub wave: u32,
    /// Where the section starts: "read.fio:9 [bgread]".
    pub origin: String,
}

impl JobFileRun {
    /// The waves in order, each the indices of its jobs.
    pub fn waves(&self) -> Vec<Vec<usize>> {
        let mut waves: Vec<Vec<usize>> = Vec::new();
        for (i, j) in self.jobs.iter().enumerate() {
            match waves.last_mut() {
                Some(w) if self.jobs[w[0]].wave == j.wave => w.push(i),
                _ => waves.push(vec![i]),
            }
        }
        waves
    }

    /// The record's settings: the first job's, with the whole command line.
    pub fn settings(&self) -> record::Settings {
        let mut s = self.jobs[0].inv.settings();
        s.command_line = Some(self.command_line.clone());
        s.provisioned = self.provisioned.clone();
        s
    }
}

/// Where an option was set.
#[derive(Clone, Debug)]
struct Origin {
    file: PathBuf,
    line: usize,
}

impl Origin {
    fn describe(&self, section: &str) -> String {
        if self.line == 0 {
            format!("the command line (applied to [{section}])")
        } else {
            format!(
                "{} line {}, section [{section}]",
                self.file.display(),
                self.line
            )
        }
    }
}

/// One `key[=value]` line.
#[derive(Clone, Debug)]
struct OptionLine {
    key: String,
    value: Option<String>,
    origin: Origin,
}

struct Section {
    name: String,
    origin: Origin,
    options: Vec<OptionLine>,
}

/// What a line is once comments and blanks are gone.
enum LineKind<'a> {
    Empty,
    Section(&'a str),
    Include(&'a str),
    Option(&'a str, Option<&'a str>),
}

/// fio's `is_empty_or_comment` and `strip_blank_end` on one line.
fn classify(raw: &str) -> LineKind<'_> {
    let t = raw.trim_start();
    if t.is_empty() || t.starts_with([';', '#']) {
        return LineKind::Empty;
    }
    if let Some(rest) = t.strip_prefix('[') {
        // fio's sscanf("[%255[^\n]]") takes the rest of the line and drops its last
        // character, the closing bracket.
        let rest = rest.trim_end();
        return LineKind::Section(rest.strip_suffix(']').unwrap_or(rest));
    }
    let cut = t.find([';', '#']).unwrap_or(t.len());
    let t = t[..cut].trim_end();
    if t.is_empty() {
        return LineKind::Empty;
    }
    if let Some(rest) = t.strip_prefix("include")
        && rest.starts_with(char::is_whitespace)
    {
        return LineKind::Include(rest.trim());
    }
    match t.split_once('=') {
        Some((k, v)) => LineKind::Option(k.trim(), Some(v.trim())),
        None => LineKind::Option(t, None),
    }
}

fn read_text(path: &Path, what: &str) -> Result<String> {
    let bytes = record::input::read_limited(path, MAX_JOB_FILE_BYTES)
        .map_err(|e| usage(format!("{what} {}: {e}", path.display())))?;
    String::from_utf8(bytes)
        .map_err(|_| usage(format!("{what} {}: not UTF-8 text", path.display())))
}

/// Read one job file into its sections.
fn read_job_file(path: &Path) -> Result<Vec<Section>> {
    let text = read_text(path, "job file")?;
    let mut sections: Vec<Section> = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let origin = Origin {
            file: path.to_path_buf(),
            line: i + 1,
        };
        match classify(raw) {
            LineKind::Empty => {}
            LineKind::Section(name) => {
                if name.is_empty() {
                    return Err(usage(format!(
                        "{} line {}: an empty section name; give the job a name, e.g. [read]",
                        path.display(),
                        i + 1
                    )));
                }
                sections.push(Section {
                    name: name.to_string(),
                    origin,
                    options: Vec::new(),
                });
            }
            kind => {
                let Some(section) = sections.last_mut() else {
                    return Err(usage(format!(
                        "{} line {}: {:?} is outside of a [] job section; start a section \
                         first, e.g. [global]",
                        path.display(),
                        i + 1,
                        raw.trim()
                    )));
                };
                match kind {
                    LineKind::Include(name) => {
                        include(path, name, &origin, &section.name, &mut section.options, 1)?
                    }
                    LineKind::Option(k, v) => section.options.push(OptionLine {
                        key: k.to_string(),
                        value: v.map(String::from),
                        origin,
                    }),
                    LineKind::Empty | LineKind::Section(_) => {}
                }
            }
        }
    }
    Ok(sections)
}

/// `include NAME` inside a section of `from`: NAME's options join the section.
fn include(
    from: &Path,
    name: &str,
    at: &Origin,
    section: &str,
    options: &mut Vec<OptionLine>,
    depth: usize,
) -> Result<()> {
    let here = at.describe(section);
    if name.is_empty() {
        return Err(usage(format!("{here}: include needs a file name")));
    }
    if depth > MAX_INCLUDE_DEPTH {
        return Err(usage(format!(
            "{here}: include {name}: includes nested more than {MAX_INCLUDE_DEPTH} deep (a \
             file that includes itself?)"
        )));
    }
    let mut path = PathBuf::from(name);
    if !path.exists()
        && let Some(dir) = from.parent()
    {
        path = dir.join(name);
    }
    let text = read_text(&path, &format!("{here}: include"))?;
    for (i, raw) in text.lines().enumerate() {
        let origin = Origin {
            file: path.clone(),
            line: i + 1,
        };
        match classify(raw) {
            LineKind::Empty => {}
            LineKind::Section(_) => {
                return Err(usage(format!(
                    "{}: an included file may not start sections (fio: \"No new sections in \
                     included files\"); move the section into the job file",
                    origin.describe(section)
                )));
            }
            LineKind::Include(n) => include(&path, n, &origin, section, options, depth + 1)?,
            LineKind::Option(k, v) => options.push(OptionLine {
                key: k.to_string(),
                value: v.map(String::from),
                origin,
            }),
        }
    }
    Ok(())
}

/// An option's value as set, with where.
#[derive(Clone, Debug)]
struct Setting {
    given: Given,
    origin: Origin,
}

/// The options in effect, by canonical name (a later setting replaces an earlier one).
type Settings = BTreeMap<&'static str, Setting>;

/// The grouping options, which are the job file's business, not a job's.
#[derive(Clone, Copy, Debug, Default)]
struct Grouping {
    stonewall: bool,
    new_group: bool,
}

fn bool_value(line: &OptionLine, section: &str) -> Result<bool> {
    match line.value.as_deref() {
        None | Some("1") => Ok(true),
        Some("0") => Ok(false),
        Some(v) => Err(usage(format!(
            "{}: {}={v} is not a boolean; use {} or {}=0|1",
            line.origin.describe(section),
            line.key,
            line.key,
            line.key
        ))),
    }
}

/// Apply one option line to `settings` (or `grouping`).
fn apply(
    line: &OptionLine,
    section: &str,
    settings: &mut Settings,
    grouping: &mut Grouping,
) -> Result<()> {
    let here = line.origin.describe(section);
    match line.key.as_str() {
        "stonewall" | "wait_for_previous" => {
            grouping.stonewall = bool_value(line, section)?;
            return Ok(());
        }
        "new_group" => {
            grouping.new_group = bool_value(line, section)?;
            return Ok(());
        }
        _ => {}
    }
    let Some(def) = find_option(&line.key) else {
        return Err(usage(format!(
            "{here}: fio option {} is not supported by cargo diskbench fio; supported: {}, \
             stonewall, wait_for_previous, new_group, include",
            line.key,
            job_option_names()
        )));
    };
    if COMMAND_LINE_ONLY.contains(&def.name) {
        return Err(usage(format!(
            "{here}: {} is a command-line option; give it beside the job file (--{}=...)",
            line.key, def.name
        )));
    }
    if def.takes == Takes::Value && line.value.is_none() {
        return Err(usage(format!(
            "{here}: {} needs a value, e.g. {}=...",
            line.key, line.key
        )));
    }
    settings.insert(
        def.name,
        Setting {
            given: Given {
                spelled: line.key.clone(),
                value: line.value.clone(),
            },
            origin: line.origin.clone(),
        },
    );
    Ok(())
}

fn job_option_names() -> String {
    crate::tools::fio::option_names()
        .into_iter()
        .filter(|n| !COMMAND_LINE_ONLY.contains(n))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Read `files` with the command line's options `cmdline` (`command_line`: all arguments).
pub(crate) fn parse(
    files: &[String],
    cmdline: BTreeMap<&'static str, Given>,
    command_line: Vec<String>,
) -> Result<JobFileRun> {
    if let Some(g) = cmdline.get("name") {
        return Err(usage(format!(
            "--{}: beside a job file, jobs are the file's sections; give the job as a [section] \
             in the file",
            g.spelled
        )));
    }
    // The report and record options (ours and fio's) are read as they are read without a file.
    let mut report_given: BTreeMap<&'static str, Given> = cmdline
        .iter()
        .filter(|(k, _)| COMMAND_LINE_ONLY.contains(k))
        .map(|(k, v)| (*k, v.clone()))
        .collect();
    let cmdline_defaults: Settings = cmdline
        .iter()
        .filter(|(k, _)| !COMMAND_LINE_ONLY.contains(k))
        .map(|(k, g)| {
            (
                *k,
                Setting {
                    given: g.clone(),
                    origin: Origin {
                        file: PathBuf::new(),
                        line: 0,
                    },
                },
            )
        })
        .collect();

    let mut jobs: Vec<FileJob> = Vec::new();
    let mut group = 0u32;
    let mut wave = 0u32;
    for (file_index, file) in files.iter().enumerate() {
        let path = Path::new(file);
        let sections = read_job_file(path)?;
        let mut defaults = if file_index == 0 {
            cmdline_defaults.clone()
        } else {
            Settings::new()
        };
        let mut default_grouping = Grouping::default();
        // init.c: the first job of every file after the first is stonewalled.
        let mut stonewall_next = file_index > 0;
        for section in sections {
            if section.name.starts_with("global") {
                for line in &section.options {
                    apply(line, &section.name, &mut defaults, &mut default_grouping)?;
                }
                continue;
            }
            let mut settings = defaults.clone();
            let mut grouping = default_grouping;
            settings.insert(
                "name",
                Setting {
                    given: Given {
                        spelled: "name".into(),
                        value: Some(section.name.clone()),
                    },
                    origin: section.origin.clone(),
                },
            );
            for line in &section.options {
                apply(line, &section.name, &mut settings, &mut grouping)?;
            }
            if stonewall_next {
                grouping.stonewall = true;
                stonewall_next = false;
            }
            let origin = format!(
                "{}:{} [{}]",
                section.origin.file.display(),
                section.origin.line,
                section.name
            );
            let given: BTreeMap<&'static str, Given> = settings
                .iter()
                .map(|(k, s)| (*k, s.given.clone()))
                .collect();
            let inv = from_given(&given, command_line.clone())
                .map_err(|e| attribute(e, &settings, &section.name, &section.origin))?;
            if let Some(prev) = jobs.iter().find(|j| j.inv.job.name == inv.job.name) {
                return Err(usage(format!(
                    "{}: a second job named {:?} (the first is at {}); each job needs a name \
                     of its own, the record keeps one test per job",
                    section.origin.describe(&section.name),
                    inv.job.name,
                    prev.origin
                )));
            }
            // init.c add_job: stonewall or new_group starts a new group if this one has jobs.
            if let Some(last) = jobs.last() {
                if grouping.stonewall || grouping.new_group {
                    group = last.group + 1;
                }
                if grouping.stonewall {
                    wave = last.wave + 1;
                }
            }
            jobs.push(FileJob {
                inv,
                group,
                wave,
                origin,
            });
        }
    }
    if jobs.is_empty() {
        return Err(usage(format!(
            "{}: no job sections (only [global] or nothing); add a section such as [read]",
            files.join(", ")
        )));
    }
    // The report options, read by the same code as without a job file.
    report_given.insert(
        "name",
        Given {
            spelled: "name".into(),
            value: Some("report".into()),
        },
    );
    report_given.insert(
        "size",
        Given {
            spelled: "size".into(),
            value: Some("1m".into()),
        },
    );
    let report = from_given(&report_given, command_line.clone())?;
    for j in &mut jobs {
        j.inv.provisioned = report.provisioned.clone();
    }
    Ok(JobFileRun {
        jobs,
        output_format: report.output_format,
        output: report.output,
        results_dir: report.results_dir,
        provisioned: report.provisioned,
        command_line,
    })
}

/// Put the file, line and section of the option an error names in front of it.
fn attribute(e: anyhow::Error, settings: &Settings, section: &str, at: &Origin) -> anyhow::Error {
    let msg = format!("{e:#}");
    let named = settings.values().find(|s| {
        let token = format!("--{}", s.given.spelled);
        msg.match_indices(&token).any(|(i, _)| {
            !msg[i + token.len()..].starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_')
        })
    });
    let here = named.map(|s| &s.origin).unwrap_or(at).describe(section);
    usage(format!("{here}: {msg}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::{EngineChoice, Layout, Pattern};

    fn write(dir: &Path, name: &str, text: &str) -> String {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p.display().to_string()
    }

    fn run(args: &[String]) -> Result<JobFileRun> {
        match parse_command(args)? {
            FioCommand::JobFiles(r) => Ok(r),
            FioCommand::Options(_) => panic!("not a job file run"),
        }
    }

    fn err(args: &[String]) -> String {
        let e = run(args).expect_err("should be refused");
        assert_eq!(record::error::exit_code(&e), 2, "{e:#}");
        format!("{e:#}")
    }

    /// The read.fio: [global] defaults, the section overriding iodepth.
    const READ_FIO: &str = "[global]\nrw=randread\nsize=8G\nfilename=/tmp/testfio\n\
        ioengine=libaio\niodepth=4\ninvalidate=1\ndirect=1\n[bgread]\nrw=randread\niodepth=64\n";

    #[test]
    fn the_articles_read_file_is_read_as_fio_reads_it() {
        let d = tempfile::tempdir().unwrap();
        let f = write(d.path(), "read.fio", READ_FIO);
        let r = run(&[f]).unwrap();
        assert_eq!(r.jobs.len(), 1);
        let j = &r.jobs[0].inv.job;
        assert_eq!(j.name, "bgread");
        assert_eq!(j.pattern, Pattern::RandRead);
        assert_eq!(j.iodepth, 64, "the section overrides [global]");
        assert_eq!(j.size_per_job, 8 << 30);
        assert_eq!(j.engine, EngineChoice::Libaio);
        assert!(j.direct);
        assert!(r.jobs[0].inv.prep.invalidate);
        assert_eq!(
            j.layout,
            Layout::SharedFile {
                path: "/tmp/testfio".into(),
                region_per_job: false
            }
        );
    }

    #[test]
    fn command_line_options_are_defaults_the_file_overrides() {
        let d = tempfile::tempdir().unwrap();
        let f = write(d.path(), "read.fio", READ_FIO);
        let args: Vec<String> = ["--size=1m", "--runtime=2", &f, "--output-format=json"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let r = run(&args).unwrap();
        let inv = &r.jobs[0].inv;
        assert_eq!(
            inv.job.size_per_job,
            8 << 30,
            "[global] size= wins over --size"
        );
        assert_eq!(
            inv.job.termination,
            crate::job::Termination::Size {
                runtime_cap: Some(std::time::Duration::from_secs(2))
            },
            "--runtime reaches the job: the file does not set it"
        );
        assert_eq!(r.output_format, OutputFormat::Json);
        // fio resets its defaults before the second file: the command line reaches the first.
        let c = write(d.path(), "c.fio", "[c]\nfilename=/tmp/nonexistent-c\n");
        let e = write(d.path(), "e.fio", "[e]\nfilename=/tmp/nonexistent-e\n");
        assert!(run(&["--size=1m".into(), c.clone()]).is_ok());
        let msg = format!(
            "{:#}",
            run(&["--size=1m".into(), c, e.clone()]).unwrap_err()
        );
        assert!(
            msg.contains(&e) && msg.contains("--size is required"),
            "{msg}"
        );
    }

    #[test]
    fn sections_groups_and_stonewall_follow_add_job() {
        let d = tempfile::tempdir().unwrap();
        let f = write(
            d.path(),
            "groups.fio",
            "; a comment\n# another\n[global]\nsize=1m  ; inline comment\nfilename=/nonexistent-i27/x\n\
             [a]\n[b]\nrw=write\n[c]\nstonewall\n[d]\nnew_group\n[e]\n",
        );
        let r = run(std::slice::from_ref(&f)).unwrap();
        let got: Vec<(String, u32, u32)> = r
            .jobs
            .iter()
            .map(|j| (j.inv.job.name.clone(), j.group, j.wave))
            .collect();
        let want = [
            ("a", 0, 0),
            ("b", 0, 0),
            ("c", 1, 1),
            ("d", 2, 1),
            ("e", 2, 1),
        ];
        assert_eq!(
            got,
            want.iter()
                .map(|(n, g, w)| (n.to_string(), *g, *w))
                .collect::<Vec<_>>()
        );
        assert_eq!(r.waves(), vec![vec![0, 1], vec![2, 3, 4]]);
        assert_eq!(r.jobs[0].inv.job.size_per_job, 1 << 20);
        // A second file's first job waits for the first file's jobs.
        let g = write(
            d.path(),
            "more.fio",
            "[z]\nsize=1m\nfilename=/nonexistent-i27/x\n",
        );
        let r = run(&[f, g]).unwrap();
        let z = r.jobs.last().unwrap();
        assert_eq!((z.group, z.wave), (3, 2));
    }

    #[test]
    fn global_applies_to_the_jobs_after_it_only() {
        let d = tempfile::tempdir().unwrap();
        let f = write(
            d.path(),
            "g.fio",
            "[global]\nsize=1m\nfilename=/nonexistent-i27/x\n[a]\n[global]\nbs=64k\n[b]\n",
        );
        let r = run(&[f]).unwrap();
        assert_eq!(r.jobs[0].inv.job.block_size, 4096);
        assert_eq!(r.jobs[1].inv.job.block_size, 65536);
    }

    #[test]
    fn include_reads_options_into_the_section() {
        let d = tempfile::tempdir().unwrap();
        write(d.path(), "common.inc", "# shared\nbs=16k\nrw=randwrite\n");
        let f = write(
            d.path(),
            "i.fio",
            "[a]\nsize=1m\nfilename=/nonexistent-i27/x\ninclude common.inc\niodepth=2\nioengine=io_uring\n",
        );
        let r = run(&[f]).unwrap();
        let j = &r.jobs[0].inv.job;
        assert_eq!(j.block_size, 16384);
        assert_eq!(j.pattern, Pattern::RandWrite);
        write(d.path(), "bad.inc", "[nope]\n");
        let f = write(d.path(), "j.fio", "[a]\nsize=1m\ninclude bad.inc\n");
        assert!(err(&[f]).contains("may not start sections"));
        let f = write(d.path(), "loop.fio", "[a]\nsize=1m\ninclude loop.inc\n");
        write(d.path(), "loop.inc", "include loop.inc\n");
        assert!(err(&[f]).contains("nested"));
    }

    #[test]
    fn refusals_name_file_line_and_section() {
        let d = tempfile::tempdir().unwrap();
        let f = write(
            d.path(),
            "u.fio",
            "[global]\nsize=1m\n[bgread]\nrw=randread\nverify=crc32c\n",
        );
        let e = err(std::slice::from_ref(&f));
        assert!(
            e.contains(&format!("{f} line 5, section [bgread]"))
                && e.contains("fio option verify is not supported"),
            "{e}"
        );
        let f = write(d.path(), "v.fio", "[a]\nsize=1m\nbs=abc\n");
        let e = err(std::slice::from_ref(&f));
        assert!(e.contains(&format!("{f} line 3, section [a]")), "{e}");
        assert!(e.contains("--bs=abc"), "{e}");
        let f = write(d.path(), "o.fio", "size=1m\n[a]\n");
        assert!(err(&[f]).contains("outside of a [] job section"));
        let f = write(d.path(), "dup.fio", "[a]\nsize=1m\n[a]\nsize=1m\n");
        assert!(err(&[f]).contains("a second job named"));
        let f = write(d.path(), "g.fio", "[global]\nsize=1m\n");
        assert!(err(&[f]).contains("no job sections"));
        let f = write(d.path(), "out.fio", "[a]\nsize=1m\noutput=x\n");
        assert!(err(std::slice::from_ref(&f)).contains("command-line option"));
        assert!(err(&[f, "--name=x".into()]).contains("--name"));
        assert!(err(&[d.path().join("missing.fio").display().to_string()]).contains("cannot open"));
        assert!(err(&[d.path().display().to_string()]).contains("not a regular file"));
    }
}

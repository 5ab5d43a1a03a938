//! `cargo diskbench import`: fio JSON output and CSVs of published figures become records.

use std::path::PathBuf;

use anyhow::Result;

#[derive(clap::Args, Debug)]
pub struct ImportArgs {
    /// fio `--output-format=json` files and/or CSV files of published figures
    #[arg(value_name = "FILE", required = true)]
    pub files: Vec<PathBuf>,
    /// The results folder the records are written to
    #[arg(long, value_name = "DIR", default_value = record::results::DEFAULT_RESULTS_DIR)]
    pub results: PathBuf,
    /// Runner label for fio JSON files (fio does not name the machine); without it, the file name
    #[arg(long, value_name = "TEXT")]
    pub label: Option<String>,
}

pub fn exec(args: ImportArgs) -> Result<()> {
    super::destination::folder("--results", &args.results)?;
    let opts = site_gen::import::ImportOptions { label: args.label };
    let written = site_gen::import::import_files_each(
        &args.files,
        &args.results,
        &opts,
        &mut |e| match e {
            site_gen::import::Imported::Written(p) => println!("{}", p.display()),
            site_gen::import::Imported::AlreadyThere { file, records } => eprintln!(
                "note: {}: {records} record(s) already in {} with the same content, not added again",
                file.display(),
                args.results.display()
            ),
        },
    )?;
    eprintln!(
        "import: {written} record(s) written to {}",
        args.results.display()
    );
    Ok(())
}

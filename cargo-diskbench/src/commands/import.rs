//! `cargo diskbench import`.

use anyhow::Result;

#[derive(clap::Args, Debug)]
pub struct ImportArgs {}

pub fn exec(args: ImportArgs) -> Result<()> {
    let _ = args;
    anyhow::bail!("import: not implemented yet")
}

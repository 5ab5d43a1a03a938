//! `cargo diskbench run`: the standard suite, the build steps, the record, the site.

use anyhow::Result;

#[derive(clap::Args, Debug, Default)]
pub struct RunArgs {}

pub fn exec(args: RunArgs) -> Result<()> {
    let _ = args;
    anyhow::bail!("run: not implemented yet")
}

//! `cargo diskbench site`.

use anyhow::Result;

#[derive(clap::Args, Debug)]
pub struct SiteArgs {}

pub fn exec(args: SiteArgs) -> Result<()> {
    let _ = args;
    anyhow::bail!("site: not implemented yet")
}

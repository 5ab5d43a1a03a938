//! `cargo diskbench steps`.

use anyhow::Result;

#[derive(clap::Args, Debug)]
pub struct StepsArgs {}

pub fn exec(args: StepsArgs) -> Result<()> {
    let _ = args;
    anyhow::bail!("steps: not implemented yet")
}

//! `cargo diskbench fio`.

use anyhow::Result;

#[derive(clap::Args, Debug)]
pub struct FioArgs {}

pub fn exec(args: FioArgs) -> Result<()> {
    let _ = args;
    anyhow::bail!("fio: not implemented yet")
}

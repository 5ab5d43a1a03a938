//! `cargo diskbench machine`.

use anyhow::Result;

#[derive(clap::Args, Debug)]
pub struct MachineArgs {}

pub fn exec(args: MachineArgs) -> Result<()> {
    let _ = args;
    anyhow::bail!("machine: not implemented yet")
}

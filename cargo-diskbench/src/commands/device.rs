//! `cargo diskbench device DEVICE`: read a block device (never write it) sequentially and at
//! random, each region twice, and report the first pass (first reads), the second and their
//! ratio. See `engine::tools::device` for why and how it cannot write.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Result;
use engine::tools::device::{DevicePlan, DeviceProgress, ReadOnlyDevice, TestOutcome};
use record::Provisioned;
use record::error::usage;
use record::size::{SizeDialect, format_bytes, parse_size};

/// Where the region starts when `--offset` is not given: the device's first byte.
pub const DEFAULT_OFFSET: &str = "0";
/// How much is read when `--size` is not given.
pub const DEFAULT_REGION: &str = "1G";
/// The most seconds a test's first pass takes when `--runtime` is not given.
pub const DEFAULT_RUNTIME_S: f64 = 10.0;

#[derive(clap::Args, Debug)]
pub struct DeviceArgs {
    /// The block device to read, e.g. /dev/nvme0n1p1 (a mounted partition is fine)
    #[arg(value_name = "DEVICE")]
    pub device: PathBuf,
    /// Where the region starts on the device, bytes (K, M, G; a multiple of 1 MiB)
    #[arg(long, value_name = "BYTES", default_value = DEFAULT_OFFSET)]
    pub offset: String,
    /// How much of the device to read; each of the four tests reads a quarter, twice
    #[arg(long, value_name = "BYTES", default_value = DEFAULT_REGION)]
    pub size: String,
    /// The most seconds a test's first pass takes (its second pass reads the same blocks)
    #[arg(long, value_name = "SECS", default_value_t = DEFAULT_RUNTIME_S, value_parser = super::args::runtime_secs)]
    pub runtime: f64,
    /// The volume's provisioned limit, IOPS,BANDWIDTH (e.g. 3000,125M): figures as a share of it
    #[arg(long, value_name = "IOPS,BANDWIDTH", value_parser = super::args::provisioned)]
    pub provisioned: Option<Provisioned>,
}

fn bytes(option: &str, text: &str) -> Result<u64> {
    parse_size(text, SizeDialect::Tool).ok_or_else(|| {
        usage(format!(
            "{option} {text}: not a size; use bytes or a number with K, M, G (e.g. 512M, 2G)"
        ))
    })
}

pub fn exec(args: DeviceArgs) -> Result<()> {
    let plan = DevicePlan {
        offset: bytes("--offset", &args.offset)?,
        size: bytes("--size", &args.size)?,
        runtime_cap: Duration::from_secs_f64(args.runtime),
    };
    let dev = ReadOnlyDevice::open(&args.device)?;
    plan.check(&dev)?;
    println!(
        "device {} ({}), read-only (O_RDONLY|O_DIRECT): region {} from offset {}, a quarter \
         per test, each read twice (first pass at most {:.0} s)",
        dev.path().display(),
        format_bytes(dev.size_bytes()),
        format_bytes(plan.size),
        format_bytes(plan.offset),
        args.runtime
    );
    let outcomes = engine::tools::device::run(&dev, &plan, &mut |p| match p {
        DeviceProgress::Pass { test, pass, result } => eprintln!(
            "{}: pass {pass} ({}) {} in {:.1} s",
            test.name,
            if pass == 1 { "first reads" } else { "warm" },
            format_bytes(result.bytes),
            result.elapsed_s
        ),
    })?;
    print!("{}", report(&outcomes, args.provisioned.as_ref()));
    Ok(())
}

/// The table: per test, both passes, their ratio, and the shares of the limit when given.
pub fn report(outcomes: &[TestOutcome], limit: Option<&Provisioned>) -> String {
    let mut out = format!(
        "{:<16} {:>14} {:>14} {:>13}  {}\n",
        "test", "first pass", "second pass", "second/first", "region read"
    );
    for o in outcomes {
        let fmt = |p: &engine::tools::device::PassResult| {
            if o.test.random {
                format!("{:.0} IOPS", p.iops())
            } else {
                format!("{:.1} MiB/s", p.bytes_s() / 1_048_576.0)
            }
        };
        out.push_str(&format!(
            "{:<16} {:>14} {:>14} {:>12.2}x  {} at {}\n",
            o.test.name,
            fmt(&o.first),
            fmt(&o.second),
            o.ratio(),
            format_bytes(o.first.bytes),
            format_bytes(o.part_offset)
        ));
        if let Some(limit) = limit {
            let share = |p: &engine::tools::device::PassResult| {
                if o.test.random {
                    record::provisioned::iops_share(limit, p.iops())
                } else {
                    record::provisioned::bandwidth_share(limit, p.bytes_s())
                }
            };
            out.push_str(&format!(
                "{:<16} first: {}; second: {}\n",
                "",
                share(&o.first).describe(),
                share(&o.second).describe()
            ));
        }
    }
    out
}

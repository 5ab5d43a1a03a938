//! Write generated records (and optionally more runners) into a results folder, for demos and
//! the render benchmark: `cargo run -p diskbench-site --example demo_site -- DIR [RUNNERS RUNS]`.

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let dir = std::path::PathBuf::from(
        args.next()
            .ok_or_else(|| anyhow::anyhow!("usage: demo_site DIR [RUNNERS RUNS]"))?,
    );
    let fleet = match (args.next(), args.next()) {
        (Some(n), Some(runs)) => diskbench_site::testdata::Fleet::large(n.parse()?, runs.parse()?),
        _ => diskbench_site::testdata::Fleet::small(),
    };
    let t = std::time::Instant::now();
    let mut n = 0;
    for r in 0..fleet.runners.len() {
        for run in 0..fleet.runs_per_runner {
            record::results::write_record(&dir, &fleet.record(r, run))?;
            n += 1;
        }
    }
    eprintln!(
        "{n} records written to {} in {:.1} s",
        dir.display(),
        t.elapsed().as_secs_f64()
    );
    Ok(())
}

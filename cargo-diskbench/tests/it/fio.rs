//! Integration tests: `cargo diskbench fio`, the fio command lines from the issue run end to
//! end at small sizes (files moved into a temp dir), the record it prints, and refusals.

use std::path::Path;
use std::process::Output;

use record::Record;

use crate::common;

/// A fresh folder on the work disk (not /tmp, which may be tmpfs and refuse O_DIRECT).
fn work_dir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("fio-it-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Run with `--output-format=json` and return the record it printed.
fn run_json(dir: &Path, args: &[&str]) -> Record {
    let mut all: Vec<&str> = args.to_vec();
    all.push("--output-format=json");
    let o = common::fio_cmd(dir, &all);
    assert!(o.status.success(), "{args:?}: {}", stderr(&o));
    let record: Record = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{args:?}: stdout is not a record: {e}\n{}", stdout(&o)));
    assert_eq!(record.source, "measured");
    assert_eq!(record.settings.suite, "fio");
    let expected: Vec<String> = all.iter().map(|s| s.to_string()).collect();
    assert_eq!(record.settings.command_line.as_ref(), Some(&expected));
    assert_eq!(record.tests.len(), 1);
    record
}

fn files_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn issue_line_1_random_rw_psync_osync_runs() {
    let dir = work_dir();
    let file = dir.path().join("test_random");
    let filename = format!("--filename={}", file.display());
    let mut args = common::args(
        "--name=random-rw --direct=1 --sync=1 --bs=16k --size=16M --numjobs=2 --rw=randrw \
         --rwmixread=50 --rwmixwrite=50 --group_reporting --ioengine=psync --iodepth=1 \
         --runtime=1",
    );
    args.push(&filename);
    let record = run_json(dir.path(), &args);
    let t = &record.tests[0];
    assert_eq!(t.id, "random-rw");
    assert_eq!(t.job.rw, "randrw");
    assert_eq!(t.job.bs, 16384);
    assert_eq!(t.job.numjobs, 2);
    assert_eq!(t.job.sync, "o_sync");
    assert_eq!(t.job.rwmixread, Some(50));
    assert_eq!(t.engine.used, "psync");
    let (r, w) = (t.read.as_ref().unwrap(), t.write.as_ref().unwrap());
    assert!(r.ios > 0 && w.ios > 0, "both directions ran: {r:?} {w:?}");
    assert_eq!(r.bytes, r.ios * 16384);
    assert!(r.iops > 0.0 && w.iops > 0.0);
    assert!(t.elapsed_s > 0.0 && t.elapsed_s < 5.0, "{}", t.elapsed_s);
    let lat = r.lat_ns.as_ref().unwrap();
    assert!(lat.min <= lat.p50 && lat.p50 <= lat.p99 && lat.p99 <= lat.max);
}

#[test]
fn issue_line_2_sequential_rw_libaio_runs() {
    let dir = work_dir();
    let filename = format!(
        "--filename={}",
        dir.path().join("test_sequential").display()
    );
    let mut args = common::args(
        "--name=sequential-rw --direct=1 --sync=1 --bs=1m --size=16M --numjobs=2 --rw=rw \
         --rwmixread=50 --group_reporting --ioengine=libaio --iodepth=8 --runtime=1",
    );
    args.push(&filename);
    let record = run_json(dir.path(), &args);
    let t = &record.tests[0];
    assert_eq!(t.job.rw, "rw");
    assert_eq!(t.job.iodepth, 8);
    assert_eq!(t.job.bs, 1 << 20);
    assert!(t.read.as_ref().unwrap().ios > 0);
    assert!(t.write.as_ref().unwrap().ios > 0);
    assert!(t.read.as_ref().unwrap().mib_s > 0.0);
}

#[test]
fn issue_line_3_size_based_moves_size_once() {
    // fio without --time_based: the job moves --size bytes once.
    let dir = work_dir();
    let record = run_json(
        dir.path(),
        &common::args(
            "--randrepeat=1 --ioengine=libaio --direct=1 --gtod_reduce=1 \
            --name=fiotest --filename=testfio --bs=4k --iodepth=64 \
            --size=16M --readwrite=randrw --rwmixread=75",
        ),
    );
    let t = &record.tests[0];
    let ios = t.read.as_ref().map_or(0, |d| d.ios) + t.write.as_ref().map_or(0, |d| d.ios);
    assert_eq!(
        ios,
        (16 << 20) / 4096,
        "size-based: 16 MiB in 4 KiB blocks, once"
    );
    let reads = t.read.as_ref().unwrap().ios as f64 / ios as f64;
    assert!((0.6..0.9).contains(&reads), "rwmixread=75 gave {reads}");
    assert_eq!(
        record.settings.seed,
        Some(engine::tools::fio::FIO_DEFAULT_RANDSEED)
    );
    assert!(record.notes.iter().any(|n| n.contains("gtod_reduce")));
    // The relative --filename resolved against the current directory, and the file stays
    // there after the run, as fio's does.
    assert_eq!(files_in(dir.path()), ["testfio"]);
    assert_eq!(
        std::fs::metadata(dir.path().join("testfio")).unwrap().len(),
        16 << 20
    );
}

#[test]
fn issue_line_4_time_based_directory_runs_and_reports_like_fio() {
    let dir = work_dir();
    let sub = dir.path().join("x");
    std::fs::create_dir(&sub).unwrap();
    let directory = format!("--directory={}", sub.display());
    let mut args = common::args(
        "--name=rand_rw --rw=randrw --bs=4k --size=16M --numjobs=4 --time_based --runtime=1 \
         --iodepth=32 --ioengine=libaio --direct=1 --group_reporting",
    );
    args.insert(1, &directory);
    let o = common::fio_cmd(dir.path(), &args);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    for needle in [
        "rand_rw: (groupid=0, jobs=4)",
        "  read: IOPS=",
        "  write: IOPS=",
        "lat percentiles",
        "99.00th=[",
        "cpu          : usr=",
        "Run status group 0 (all jobs):",
        "   READ: bw=",
        "  WRITE: bw=",
    ] {
        assert!(text.contains(needle), "missing {needle:?} in:\n{text}");
    }
    // No record file appears anywhere without --results.
    assert!(
        files_in(dir.path()).iter().all(|n| n == "x"),
        "{:?}",
        files_in(dir.path())
    );
}

#[test]
fn results_and_output_options() {
    let dir = work_dir();
    let results = dir.path().join("results");
    let report = dir.path().join("report.txt");
    let results_arg = format!("--results={}", results.display());
    let output_arg = format!("--output={}", report.display());
    let mut args = common::args("--name=qd1 --rw=randread --size=4m --time_based --runtime=500ms");
    args.extend([results_arg.as_str(), &output_arg]);
    let o = common::fio_cmd(dir.path(), &args);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        o.stdout.is_empty(),
        "the report went to --output, not stdout"
    );
    let text = std::fs::read_to_string(&report).unwrap();
    assert!(text.contains("qd1: (groupid=0, jobs=1)"), "{text}");
    let written = files_in(&results);
    assert_eq!(written.len(), 1, "{written:?}");
    let record: Record =
        serde_json::from_slice(&std::fs::read(results.join(&written[0])).unwrap()).unwrap();
    assert_eq!(record.tests[0].id, "qd1");
    assert!(record.tests[0].read.as_ref().unwrap().ios > 0);
    assert!(record.tests[0].write.is_none());
}

#[test]
fn unknown_options_are_refused_by_name_and_nothing_is_created() {
    let dir = work_dir();
    for (line, needle) in [
        (
            "--norandommap",
            "fio option --norandommap is not supported by cargo diskbench fio; supported:",
        ),
        (
            "--filename=f --verify=md5",
            "fio option --verify is not supported",
        ),
        ("--bs=abc", "--bs=abc"),
        ("--rw=randrw --rwmixread=150", "--rwmixread=150"),
        ("--ioengine=libaio --iodepth=0", "--iodepth=0"),
        ("job.fio", "beside a job file"),
        (
            "--output=no/such/dir/report.txt",
            "--output no/such/dir/report.txt",
        ),
    ] {
        let line = format!("--name=a --size=1m {line}");
        let args = common::args(&line);
        let o = common::fio_cmd(dir.path(), &args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        let err = stderr(&o);
        assert!(err.contains(needle), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "one-line error: {err}");
        assert!(files_in(dir.path()).is_empty(), "{args:?} created files");
    }
}

#[test]
fn help_lists_the_supported_options() {
    let o = common::run(&["fio", "--help"]);
    assert!(o.status.success());
    let text = stdout(&o);
    assert!(
        text.contains("--rwmixread") && text.contains("--time_based"),
        "{text}"
    );
}

/// An etcd-style job (`--fdatasync=1`, a sync engine): besides the write + sync latency, the
/// report prints fio's separate `sync` block with its percentiles, and the record keeps the
/// syncs in their own histogram. Each sync is part of its write + sync, so it is never longer.
#[test]
fn fdatasync_jobs_print_the_sync_latency_block() {
    let dir = work_dir();
    let args =
        common::args("--name=etcd --rw=write --ioengine=sync --fdatasync=1 --bs=2300 --size=460k");
    let o = common::fio_cmd(dir.path(), &args);
    let text = stdout(&o);
    assert!(o.status.success(), "{}", stderr(&o));
    let block = text
        .find("  fsync/fdatasync/sync_file_range:\n    sync (")
        .unwrap_or_else(|| panic!("no sync block in\n{text}"));
    assert!(text[block..].contains("    sync percentiles ("), "{text}");
    assert!(text[block..].contains("99.00th=["), "{text}");
    // The write + sync latency block is still there, before it.
    assert!(text[..block].contains("    lat percentiles ("), "{text}");

    let record = run_json(dir.path(), &args);
    let w = record.tests[0].write.as_ref().unwrap();
    let (total, sync) = (w.lat_ns.as_ref().unwrap(), w.sync_lat_ns.as_ref().unwrap());
    assert!(w.sync_hist.is_some());
    assert!(
        sync.min.unwrap() <= total.min.unwrap(),
        "{sync:?} vs {total:?}"
    );
    assert!(
        sync.max.unwrap() <= total.max.unwrap(),
        "{sync:?} vs {total:?}"
    );
    // 3 significant figures of bucketing, hence the 1%.
    assert!(
        sync.p50.unwrap() as f64 <= total.p50.unwrap() as f64 * 1.01,
        "{sync:?} vs {total:?}"
    );

    // A job without a sync has no sync block and no sync figures.
    let plain = run_json(
        dir.path(),
        &["--name=plain", "--rw=write", "--bs=4k", "--size=64k"],
    );
    assert!(plain.tests[0].write.as_ref().unwrap().sync_lat_ns.is_none());
}

/// libaio runs as itself (io_submit/io_getevents, the path fio takes) at any depth, with no
/// note; posixaio, which we do not have, says which backend it ran on instead.
#[test]
fn libaio_runs_as_itself_and_posixaio_says_which_backend_it_ran_on() {
    let dir = work_dir();
    for (engine, depth, used, note) in [
        ("libaio", "1", "libaio", None),
        ("libaio", "8", "libaio", None),
        (
            "posixaio",
            "1",
            "psync",
            Some("runs on our backend --engine auto picks"),
        ),
        (
            "posixaio",
            "8",
            "io_uring",
            Some("runs on our backend --engine auto picks"),
        ),
    ] {
        let json = dir.path().join("out.json");
        let line = format!(
            "--name=n --rw=randread --bs=4k --size=256k --ioengine={engine} --iodepth={depth} \
             --output-format=json"
        );
        let mut args = common::args(&line);
        let output = format!("--output={}", json.display());
        args.push(&output);
        let o = common::fio_cmd(dir.path(), &args);
        assert!(o.status.success(), "{}", stderr(&o));
        let err = stderr(&o);
        let record: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        let t = &record["tests"][0];
        if used == "io_uring" && t["engine"]["used"] == "psync" {
            // io_uring refused here: psync with the reason is right too.
            assert!(t["engine"]["fallback"].is_string(), "{t}");
        } else {
            assert_eq!(t["engine"]["used"], used, "{engine} at depth {depth}: {t}");
        }
        assert_eq!(
            t["read"]["ios"], 64,
            "{engine} at depth {depth}: 256 KiB in 4 KiB reads"
        );
        match note {
            None => assert!(!err.contains("not itself used"), "{engine}: {err}"),
            Some(n) => assert!(
                err.contains(&format!("--ioengine={engine} is not itself used: this job"))
                    && err.contains(n),
                "{engine} at depth {depth}: {err}"
            ),
        }
    }
}

/// Files are prepared as fio prepares them, option by option: a write job gets a new
/// file allocated with `--fallocate` (default native: unwritten extents) and no data; a job
/// that reads, or `--overwrite=1`, gets data laid down first; a file at full size is used as it
/// is; `--fallocate=none` leaves a new empty file that the writes extend.
#[test]
fn files_are_prepared_as_fio_prepares_them() {
    use engine::files::prep::extent_map;
    let dir = work_dir();
    let prep = |args: &[&str]| {
        let r = run_json(dir.path(), args);
        r.tests[0]
            .file_preparation
            .clone()
            .expect("the record says how")
    };
    let job = |name: &'static str, extra: &[&'static str]| {
        let mut v = vec![
            name,
            "--size=4m",
            "--bs=64k",
            "--direct=1",
            "--runtime=500ms",
            "--time_based",
        ];
        v.extend_from_slice(extra);
        v
    };
    // A write job syncing each 4 KiB write into a new 256 MiB file, stopped after 1 s: the file
    // was allocated, not written, before the job. 65,536 blocks each written at most once per
    // pass (the random map) would take a disk over 65,000 synced writes a second to cover. (The
    // run is long enough for a first synced write into unwritten extents to finish on a busy
    // disk: at 0.1 s a CI run once completed none, and a run with no I/O has no figure.)
    let p = prep(&common::args(
        "--name=w --size=256m --bs=4k --direct=1 --rw=randwrite \
        --fdatasync=1 --runtime=1s",
    ));
    assert_eq!((p.method.as_str(), p.fresh), ("fallocate", true), "{p:?}");
    let w = dir.path().join("w.0");
    assert_eq!(std::fs::metadata(&w).unwrap().len(), 256 << 20);
    if let Some(map) = extent_map(&w)
        && !p.detail.contains("refused")
    {
        // Only what the job wrote is written; the rest stays unwritten.
        assert!(map.unwritten > 0, "{map:?}");
    }
    // Run again on the file now at full size: fio uses it as it is.
    let p = prep(&["--name=w", "--size=256m", "--rw=write", "--runtime=500ms"]);
    assert_eq!((p.method.as_str(), p.fresh), ("existing", false), "{p:?}");
    // Reads, and writes with --overwrite=1: data first.
    let p = prep(&job("--name=r", &["--rw=randread"]));
    assert_eq!(p.method, "written");
    if let Some(map) = extent_map(&dir.path().join("r.0")) {
        assert_eq!(map.unwritten, 0, "{map:?}");
        // Laid out as fio's extend_file does: buffered writes of the job's block size, synced,
        // then dropped from the page cache, so the job's O_DIRECT reads start cold. (A disk
        // filesystem only: tmpfs has no FIEMAP, and its pages are the file.)
        assert!(p.detail.contains("buffered writes of 64 KiB"), "{p:?}");
        let (resident, pages) = resident_pages(&dir.path().join("r.0"));
        assert!(
            resident * 100 <= pages,
            "{resident} of {pages} pages of the laid-out file still cached"
        );
    }
    let p = prep(&job("--name=o", &["--rw=randwrite", "--overwrite=1"]));
    assert_eq!(p.method, "written");
    if let Some(map) = extent_map(&dir.path().join("o.0")) {
        assert_eq!(map.unwritten, 0, "{map:?}");
    }
    // --fallocate=none: a new empty file the writes extend; truncate: sparse at full length.
    let p = prep(&job("--name=n", &["--rw=write", "--fallocate=none"]));
    assert_eq!(p.method, "none");
    let p = prep(&job(
        "--name=t",
        &["--rw=randwrite", "--fallocate=truncate"],
    ));
    assert_eq!(p.method, "truncate");
    let p = prep(&job("--name=c", &["--rw=write", "--create_on_open=1"]));
    assert_eq!(p.method, "create-on-open");
}

/// (pages of `path` in the page cache, pages in all), by mincore(2) on a read-only mapping.
fn resident_pages(path: &Path) -> (usize, usize) {
    use std::os::fd::AsRawFd;
    let file = std::fs::File::open(path).unwrap();
    let len = file.metadata().unwrap().len() as usize;
    let page = 4096;
    let pages = len.div_ceil(page);
    // SAFETY: a private read-only mapping of an open regular file of `len` bytes; unmapped
    // below and never dereferenced.
    let addr = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ,
            libc::MAP_PRIVATE,
            file.as_raw_fd(),
            0,
        )
    };
    assert_ne!(addr, libc::MAP_FAILED);
    let mut vec = vec![0u8; pages];
    // SAFETY: `addr` maps `len` bytes; `vec` has one byte per page of it.
    let rc = unsafe { libc::mincore(addr, len, vec.as_mut_ptr()) };
    // SAFETY: the mapping made above, of `len` bytes.
    unsafe { libc::munmap(addr, len) };
    assert_eq!(rc, 0);
    (vec.iter().filter(|b| **b & 1 == 1).count(), pages)
}

/// libaio takes one completion per `io_getevents`, as fio's libaio does with its defaults
/// (`iodepth_batch_complete_max=1`): on memory, where the system calls are the figure, both
/// tools then make the same calls per I/O. 256 reads at depth 8: 256 submissions and at least
/// 256 reaping calls (more if one returns early on a signal); reaping up to 8 at a time would
/// take as few as 32.
#[test]
fn libaio_reaps_one_completion_per_call_as_fio_does() {
    let dir = work_dir();
    let counts = dir.path().join("counts");
    let trace = ["-f", "-c", "-e", "trace=io_submit,io_getevents", "-o"];
    let trace = [&trace[..], &[counts.to_str().unwrap()]].concat();
    let args = common::args(
        "fio --name=r --rw=randread --bs=4k --size=1m --iodepth=8 --ioengine=libaio --direct=1",
    );
    let Some(out) = common::strace(dir.path(), &trace, &args) else {
        return;
    };
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("ran: libaio"), "{}", stdout(&out));
    let summary = std::fs::read_to_string(&counts).unwrap();
    let calls = |name: &str| -> u64 {
        summary
            .lines()
            .map(|l| l.split_whitespace().collect::<Vec<_>>())
            .find(|f| f.last() == Some(&name))
            .and_then(|f| f.get(3).and_then(|c| c.parse().ok()))
            .unwrap_or_else(|| panic!("no {name} line in\n{summary}"))
    };
    assert_eq!(calls("io_submit"), 256, "{summary}");
    assert!(calls("io_getevents") >= 256, "{summary}");
}

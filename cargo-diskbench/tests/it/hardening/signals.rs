//! Class 4: signals and hangs: `site`, `merge` and `import` stop on SIGINT and SIGTERM, absurd
//! figures do not hang the site, and a record exists exactly when the exit is zero.

use std::collections::BTreeMap;

use super::*;

/// Send `sig` to a running command after `delay`; returns what it did and how long it took to
/// exit after the signal, or None if it had already finished.
fn interrupt_after(mut cmd: Command, delay: Duration, sig: i32) -> Option<(Ran, Duration)> {
    let logs = tempfile::tempdir().unwrap();
    let err_path = logs.path().join("stderr");
    cmd.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&err_path).unwrap());
    let mut child = cmd.spawn().unwrap();
    std::thread::sleep(delay);
    if child.try_wait().unwrap().is_some() {
        return None;
    }
    // SAFETY: signalling our own child by its pid.
    unsafe { libc::kill(child.id() as i32, sig) };
    let sent = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let ran = Ran {
                code: status.code(),
                stderr: std::fs::read_to_string(&err_path).unwrap_or_default(),
                timed_out: false,
            };
            return Some((ran, sent.elapsed()));
        }
        if sent.elapsed() > Duration::from_secs(30) {
            let _ = child.kill();
            let _ = child.wait();
            return Some((
                Ran {
                    code: None,
                    stderr: String::new(),
                    timed_out: true,
                },
                sent.elapsed(),
            ));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn class4_site_import_and_merge_stop_on_sigint_and_sigterm() {
    // Writes records with fsync: a disk-loading test (see common::disk_quiet).
    let _disk = common::disk_load();
    let sb = sandbox();
    let root = sb.path();
    let many = Fleet::large(150, 8).records();
    write_records(&root.join("res"), &many);
    let mut csv = String::from("date,label,seq-read_mib_s\n");
    for i in 0..4000 {
        csv.push_str(&format!("2026-10-01,csv-{i},{}\n", 100 + i));
    }
    std::fs::write(root.join("many.csv"), csv).unwrap();

    let commands: [(&str, &[&str], &str); 3] = [
        ("site", &["site", "--results", "res", "--out", "out"], "out"),
        ("merge", &["merge", "--into", "merged", "res"], "merged"),
        (
            "import",
            &["import", "--results", "imported", "many.csv"],
            "imported",
        ),
    ];
    for (name, args, writes) in commands {
        let mut hits = 0;
        for (i, delay_ms) in [150u64, 300, 600, 1000].into_iter().enumerate() {
            let sig = if i % 2 == 0 {
                libc::SIGINT
            } else {
                libc::SIGTERM
            };
            let target = root.join(writes);
            let _ = std::fs::remove_dir_all(&target);
            let before = tree(root, &[&target]);
            let Some((ran, after)) =
                interrupt_after(cmd_in(root, args), Duration::from_millis(delay_ms), sig)
            else {
                continue; // finished before the signal
            };
            if ran.code.is_none() {
                // The signal came before main installed its handler (a very busy machine):
                // the default action ended it before it did anything, which the tree check
                // below confirms.
                assert_eq!(before, tree(root, &[&target]), "{name}");
                continue;
            }
            hits += 1;
            assert_eq!(
                ran.code,
                Some(130),
                "{name} after {delay_ms} ms, signal {sig}: {}",
                ran.context()
            );
            // A hang detector, not a speed claim (bench/interrupt.sh measures the latency).
            assert!(after < Duration::from_secs(10), "{name}: {after:?}");
            assert_eq!(
                before,
                tree(root, &[&target]),
                "{name}: wrote outside {writes}"
            );
            if name == "site" {
                assert!(
                    !root.join("out").exists(),
                    "an interrupted first site is not left half made"
                );
                // The site makes no test files and writes no record: it says what it did.
                assert!(
                    ran.stderr.contains("the unfinished new site was removed")
                        && ran.stderr.contains("left as it was (not created)")
                        && !ran.stderr.contains("test files")
                        && !ran.stderr.contains("no record"),
                    "{}",
                    ran.stderr
                );
            }
        }
        assert!(
            hits >= 1,
            "{name} finished before every signal: make the input larger"
        );
    }
}

#[test]
fn class4_absurd_figures_do_not_hang_the_site() {
    // Writes records with fsync: a disk-loading test (see common::disk_quiet).
    let _disk = common::disk_load();
    let sb = sandbox();
    let res = sb.path().join("res");
    // Enough runners for the steps page to draw its scatter plots (it needs 5 or more).
    let mut records = Fleet::large(8, 1).records();
    let variants: [(f64, f64); 3] = [
        (1e308, 5e-324),
        (f64::MAX, f64::MIN_POSITIVE),
        (1e300, 1e-300),
    ];
    for (k, (hi, lo)) in variants.iter().enumerate() {
        for (j, v) in [hi, lo].iter().enumerate() {
            let r = &mut records[k * 2 + j];
            for t in &mut r.tests {
                for d in t.read.iter_mut().chain(t.write.iter_mut()) {
                    d.mib_s = **v;
                    d.iops = **v;
                }
            }
        }
    }
    assert!(records.iter().all(|r| !r.steps.is_empty()));
    write_records(&res, &records);
    let ran = run_in(sb.path(), &["site", "--results", "res", "--out", "out"]);
    assert!(!ran.timed_out, "the site hung on absurd figures");
    assert_eq!(ran.code, Some(0), "{}", ran.context());
    let steps = std::fs::read_to_string(sb.path().join("out/steps.html")).unwrap();
    assert!(
        steps.contains("left out"),
        "the chart says it left points out"
    );
}

#[test]
fn class4_a_record_exists_exactly_when_the_exit_is_zero() {
    // Writes records with fsync: a disk-loading test (see common::disk_quiet).
    let _disk = common::disk_load();
    // Ctrl-C at any moment, including just after the last column: either exit 0 and a record,
    // or exit 130 and none, never a record behind a non-zero exit.
    let sb = sandbox();
    let root = sb.path();
    let mut seen = BTreeMap::<Option<i32>, usize>::new();
    for delay_ms in [100u64, 500, 900, 1050, 1150, 1250, 1400, 1700] {
        let res = root.join(format!("res{delay_ms}"));
        let cmd = cmd_in(
            root,
            &[
                "fio",
                "--name=t",
                "--directory=.",
                "--rw=randread",
                "--bs=4k",
                "--size=4M",
                "--time_based",
                "--runtime=1",
                &format!("--results={}", res.display()),
            ],
        );
        let (code, stderr) =
            match interrupt_after(cmd, Duration::from_millis(delay_ms), libc::SIGINT) {
                Some((ran, _)) => (ran.code, ran.stderr),
                None => (Some(0), String::new()),
            };
        let records = count_entries(&res);
        *seen.entry(code).or_default() += 1;
        match code {
            Some(0) => assert_eq!(records, 1, "{delay_ms} ms: exit 0 without a record"),
            Some(130) => assert_eq!(
                records, 0,
                "{delay_ms} ms: exit 130 left a record\n{stderr}"
            ),
            other => panic!("{delay_ms} ms: exit {other:?}\n{stderr}"),
        }
        // fio keeps its files once the job has finished (as fio does), also when the signal
        // then stops the record being written; remove them for the next try.
        let leftovers: Vec<PathBuf> = std::fs::read_dir(root)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with("t."))
            .collect();
        for p in leftovers {
            std::fs::remove_file(p).unwrap();
        }
    }
    assert!(
        seen.contains_key(&Some(130)),
        "no try was interrupted: {seen:?}"
    );

    // `run`: a signal that arrives while it runs, at any point up to writing the record (the
    // CPU probe after the last column is a window of a few hundred ms), means exit 130 and no
    // record. A run takes about 1.1 s here with these settings (debug build); the delays
    // cover its second half, where the columns are done.
    let mut interrupted = 0;
    for (i, delay_ms) in [350u64, 450, 550, 650, 750, 850, 950, 1050, 1200]
        .into_iter()
        .enumerate()
    {
        let res = root.join(format!("run{delay_ms}"));
        let cmd = cmd_in(
            root,
            &[
                "run",
                "--dir",
                ".",
                "--results",
                res.to_str().unwrap(),
                "--size",
                "4M",
                "--runtime",
                "0.3",
                "--ramp",
                "0",
                "--only",
                "seq-read",
                "--no-steps",
                "--no-site",
                "--quiet",
            ],
        );
        let sig = if i % 2 == 0 {
            libc::SIGINT
        } else {
            libc::SIGTERM
        };
        let records = || count_entries(&res);
        match interrupt_after(cmd, Duration::from_millis(delay_ms), sig) {
            Some((ran, _)) => {
                interrupted += 1;
                assert_eq!(ran.code, Some(130), "{delay_ms} ms: {}", ran.context());
                assert_eq!(records(), 0, "{delay_ms} ms: a record after exit 130");
            }
            None => assert_eq!(records(), 1, "{delay_ms} ms: finished without a record"),
        }
        let left: Vec<_> = std::fs::read_dir(root)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .filter(|n| n.to_string_lossy().starts_with(".diskbench-"))
            .collect();
        assert!(left.is_empty(), "{delay_ms} ms: test folder left: {left:?}");
    }
    assert!(interrupted > 0, "every run finished before its signal");
}

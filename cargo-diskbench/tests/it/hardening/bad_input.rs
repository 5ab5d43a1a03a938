//! Class 6: bad input is refused at the boundary naming file, line and field, and the readers
//! never panic or hang on mutated input.

use super::*;

fn import_err(dir: &Path, name: &str, text: &str) -> Ran {
    std::fs::write(dir.join(name), text).unwrap();
    let before = tree(dir, &[]);
    let ran = run_in(dir, &["import", "--results", "res", name]);
    assert_eq!(before, tree(dir, &[]), "{name}: import wrote something");
    ran
}

#[test]
fn class6_bad_input_is_refused_at_the_boundary_naming_file_line_and_field() {
    // Writes records with fsync: a disk-loading test (see common::disk_quiet).
    let _disk = common::disk_load();
    let sb = sandbox();
    let dir = sb.path();
    let header = "date,label,seq-read_mib_s\n";
    let csv_cases = [
        ("2026-02-31,a,1", "column date"),
        ("2026-01-01<script>alert(1)</script>,a,1", "column date"),
        ("2026-13-01,a,1", "column date"),
        ("9999-12-31,a,1", "future"),
        ("2026-01-01T00:00:00Zjunk,a,1", "column date"),
        ("2026-01-01,a,-5", "column seq-read_mib_s"),
        ("2026-01-01,a,1e999", "column seq-read_mib_s"),
    ];
    for (i, (row, needle)) in csv_cases.iter().enumerate() {
        let name = format!("bad{i}.csv");
        let ran = import_err(dir, &name, &format!("{header}2026-01-01,ok,1\n{row}\n"));
        assert_eq!(ran.code, Some(2), "{row}: {}", ran.context());
        for want in [name.as_str(), "line 3", needle] {
            assert!(
                ran.stderr.contains(want),
                "{row}: wants {want:?}: {}",
                ran.stderr
            );
        }
    }

    let fixture = common::fixture::read(common::fixture::FIO_SUITE);
    let good: serde_json::Value = serde_json::from_str(&fixture).unwrap();
    type Mutate = fn(&mut serde_json::Value);
    let fio_cases: [(&str, Mutate, &str); 7] = [
        (
            "timestamp 2^63",
            |v| v["timestamp"] = serde_json::json!(1u64 << 63),
            "timestamp",
        ),
        (
            "timestamp u64::MAX",
            |v| v["timestamp"] = serde_json::json!(u64::MAX),
            "timestamp",
        ),
        (
            "future timestamp",
            |v| v["timestamp"] = serde_json::json!(253_402_214_400u64),
            "timestamp",
        ),
        (
            "iodepth x numjobs overflows u32",
            |v| {
                v["jobs"][4]["job options"]["iodepth"] = "4294967295".into();
                v["jobs"][4]["job options"]["numjobs"] = "2".into();
            },
            "iodepth",
        ),
        (
            "negative IOPS",
            |v| v["jobs"][0]["read"]["iops"] = serde_json::json!(-5.0),
            "iops",
        ),
        (
            "a failed job",
            |v| v["jobs"][1]["error"] = serde_json::json!(5),
            "error",
        ),
        (
            "numjobs 0",
            |v| v["jobs"][2]["job options"]["numjobs"] = "0".into(),
            "numjobs",
        ),
    ];
    for (i, (what, mutate, field)) in fio_cases.iter().enumerate() {
        let mut v = good.clone();
        mutate(&mut v);
        let name = format!("bad{i}.json");
        let ran = import_err(dir, &name, &serde_json::to_string_pretty(&v).unwrap());
        assert_eq!(ran.code, Some(2), "{what}: {}", ran.context());
        assert!(!ran.stderr.contains("panicked"), "{what}: {}", ran.stderr);
        for want in [name.as_str(), field] {
            assert!(
                ran.stderr.contains(want),
                "{what}: wants {want:?}: {}",
                ran.stderr
            );
        }
    }

    // A record dated in the future is left out, so --window-days still shows the real runners.
    let res = dir.join("sres");
    let mut records = some_records();
    records[0].started_at = "9999-12-31T00:00:00Z".into();
    records[0].runner.label = "from-the-future".into();
    records[1].started_at = "2026-02-31T00:00:00Z".into();
    write_records(&res, &records);
    let ran = run_in(
        dir,
        &common::args("site --results sres --out sout --window-days 30"),
    );
    assert_eq!(ran.code, Some(0), "{}", ran.context());
    assert!(ran.stderr.contains("in the future"), "{}", ran.stderr);
    assert!(ran.stderr.contains("started_at"), "{}", ran.stderr);
    let index = std::fs::read_to_string(dir.join("sout/index.html")).unwrap();
    assert!(
        !index.contains("runners/from-the-future"),
        "the future record has no runner"
    );
    assert!(
        index.contains(&records[2].runner.label),
        "real runners still shown"
    );
}

/// A small deterministic generator (xorshift64*), so a failure names a seed to replay.
struct Mutator(u64);

impl Mutator {
    /// Set one field to a hostile value: half the time a field readers interpret (dates,
    /// figures, counts), else any field at all.
    fn mutate_field(&mut self, v: &mut serde_json::Value) {
        use serde_json::json;
        const INTERESTING: [&str; 14] = [
            "timestamp",
            "started_at",
            "iops",
            "bw_bytes",
            "mib_s",
            "iodepth",
            "numjobs",
            "error",
            "job_runtime",
            "wall_s",
            "label",
            "id",
            "total_ios",
            "bs",
        ];
        let values = [
            json!(1e308),
            json!(5e-324),
            json!(-1),
            json!(u64::MAX),
            json!(1u64 << 63),
            json!(i64::MIN),
            json!("4294967295"),
            json!("-1"),
            json!("../../../x"),
            json!("9999-12-31T00:00:00Z"),
            json!("2026-02-31"),
            json!(null),
            json!([]),
            json!({}),
            json!(""),
            json!("\u{1b}[2J"),
        ];
        let mut keys = Vec::new();
        fn walk(v: &serde_json::Value, path: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
            match v {
                serde_json::Value::Object(m) => {
                    for (k, child) in m {
                        path.push(k.clone());
                        out.push(path.clone());
                        walk(child, path, out);
                        path.pop();
                    }
                }
                serde_json::Value::Array(a) => {
                    for (i, child) in a.iter().enumerate() {
                        path.push(format!("#{i}"));
                        walk(child, path, out);
                        path.pop();
                    }
                }
                _ => {}
            }
        }
        walk(v, &mut Vec::new(), &mut keys);
        let wanted: Vec<&Vec<String>> = keys
            .iter()
            .filter(|k| INTERESTING.contains(&k.last().unwrap().as_str()))
            .collect();
        let key = if !wanted.is_empty() && self.below(2) == 0 {
            wanted[self.below(wanted.len())].clone()
        } else if keys.is_empty() {
            return;
        } else {
            keys[self.below(keys.len())].clone()
        };
        let mut at = v;
        for part in &key {
            at = match part.strip_prefix('#') {
                Some(i) => &mut at[i.parse::<usize>().unwrap()],
                None => &mut at[part.as_str()],
            };
        }
        *at = values[self.below(values.len())].clone();
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    /// One mutation of `text`: a byte flipped, a slice cut or doubled, or a hostile token put
    /// where a number, date or name was.
    fn mutate(&mut self, text: &str) -> String {
        const TOKENS: [&str; 16] = [
            "1e308",
            "5e-324",
            "-1",
            "18446744073709551616",
            "9223372036854775808",
            "NaN",
            "\"\"",
            "null",
            "[]",
            "{}",
            "\"../../../x\"",
            "\"9999-12-31T00:00:00Z\"",
            "\"2026-02-31\"",
            "\"\u{1b}[31m\"",
            "4294967295",
            ",",
        ];
        if self.below(2) == 0
            && let Ok(mut v) = serde_json::from_str::<serde_json::Value>(text)
        {
            self.mutate_field(&mut v);
            return v.to_string();
        }
        let mut b = text.as_bytes().to_vec();
        if b.is_empty() {
            return TOKENS[self.below(TOKENS.len())].to_string();
        }
        let at = self.below(b.len());
        match self.below(5) {
            0 => b[at] ^= 1 << self.below(8),
            1 => b.truncate(at),
            2 => {
                let end = (at + self.below(64)).min(b.len());
                let copy = b[at..end].to_vec();
                b.splice(at..at, copy);
            }
            _ => {
                let end = (at + 1 + self.below(12)).min(b.len());
                let t = TOKENS[self.below(TOKENS.len())].as_bytes();
                b.splice(at..end, t.iter().copied());
            }
        }
        String::from_utf8_lossy(&b).into_owned()
    }
}

#[test]
fn class6_readers_never_panic_or_hang_on_thousands_of_mutated_inputs() {
    // Writes records with fsync: a disk-loading test (see common::disk_quiet).
    let _disk = common::disk_load();
    let record = serde_json::to_string_pretty(&some_records()[0]).unwrap();
    let csv = common::fixture::read(common::fixture::PUBLISHED_CSV);
    let csv: String = csv.lines().take(6).map(|l| format!("{l}\n")).collect();
    let fio = common::fixture::read(common::fixture::FIO_SUITE);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut m = Mutator(0x5eed_1234_abcd_0001);
        let mut outcomes = [0usize; 2];
        for i in 0..3000 {
            // Up to three mutations stacked, so damage compounds.
            let (kind, base) = match i % 3 {
                0 => ("record", &record),
                1 => ("csv", &csv),
                _ => ("fio", &fio),
            };
            let mut input = base.clone();
            for _ in 0..=m.below(3) {
                input = m.mutate(&input);
            }
            let result = std::panic::catch_unwind(|| match kind {
                "record" => record::load::parse_record(&input)
                    .and_then(|r| record::load::check_record(&r).map(|_| r))
                    .map(|r| {
                        // A record that passes must also render a chart without trouble
                        // (the steps page's scatter, with its figures on a log axis).
                        let pts: Vec<site_gen::correlation::Point> = r
                            .tests
                            .iter()
                            .filter_map(|t| t.headline())
                            .map(|x| site_gen::correlation::Point {
                                label: r.runner.label.clone(),
                                class: r.storage.class,
                                imported: false,
                                x,
                                time_s: 1.0,
                            })
                            .collect();
                        let _ =
                            site_gen::charts::scatter::scatter_svg(&pts, "figure", "MiB/s", "step");
                        let _ = record::results::file_name(&r);
                    })
                    .is_ok(),
                "csv" => site_gen::import::csv_records(&input, "x.csv").is_ok(),
                _ => site_gen::import::fio_record(&input, "x.json", "x").is_ok(),
            });
            match result {
                Ok(accepted) => outcomes[accepted as usize] += 1,
                Err(_) => {
                    let _ = tx.send(Err(format!("input {i} ({kind}) panicked:\n{input}")));
                    return;
                }
            }
        }
        let _ = tx.send(Ok(outcomes));
    });
    match rx.recv_timeout(Duration::from_secs(300)) {
        Ok(Ok([refused, accepted])) => {
            assert_eq!(refused + accepted, 3000);
            assert!(
                refused > 300,
                "mutations should mostly be refused: {refused}"
            );
        }
        Ok(Err(e)) => panic!("{e}"),
        Err(_) => panic!("the readers hung on a mutated input"),
    }
}

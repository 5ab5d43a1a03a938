//! Stored latency histograms whose counts sum past u64: each one is a
//! valid HDR V2 histogram, but the library keeps its total in a u64, saturates it, and then
//! panics walking counts that never reach that total. `merge` refuses such a record naming
//! the field; records that reach the results folder another way never panic the site.

use std::path::Path;

use record::Record;
use site_gen::testdata::Fleet;

use crate::common::{self, sandbox};

/// The standard base64 alphabet, with padding (what the records store).
fn base64(bytes: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (b[0] as u32) << 16 | (b[1] as u32) << 8 | b[2] as u32;
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(A[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// An uncompressed HDR V2 histogram (1 ns .. 60 s, 3 significant figures) with `counts` at
/// consecutive buckets from index 1000 on.
fn v2_histogram(counts: &[u64]) -> String {
    let mut payload = Vec::new();
    let mut leb = |v: u64| {
        // HDR's LEB128: 7 bits a byte for 8 bytes, then a 9th byte of 8 bits.
        let mut v = v;
        for k in 0..9 {
            if k == 8 {
                payload.push(v as u8);
                return;
            }
            let low = (v & 0x7f) as u8;
            v >>= 7;
            if v == 0 {
                payload.push(low);
                return;
            }
            payload.push(low | 0x80);
        }
    };
    // A run of 1000 empty buckets, zig-zag encoded as -1000.
    leb((1000u64 << 1) - 1);
    for &n in counts {
        assert!(n <= i64::MAX as u64);
        leb(n << 1);
    }
    let mut body = Vec::new();
    body.extend_from_slice(&(0x1c84_9303u32 | 0x10).to_be_bytes());
    body.extend_from_slice(&(payload.len() as u32).to_be_bytes());
    body.extend_from_slice(&0u32.to_be_bytes());
    body.extend_from_slice(&3u32.to_be_bytes());
    body.extend_from_slice(&1u64.to_be_bytes());
    body.extend_from_slice(&60_000_000_000u64.to_be_bytes());
    body.extend_from_slice(&1.0f64.to_bits().to_be_bytes());
    body.extend_from_slice(&payload);
    base64(&body)
}

fn with_hist(mut r: Record, column: &str, hist: &str) -> Record {
    let t = r.tests.iter_mut().find(|t| t.id == column).unwrap();
    let d = t.read.as_mut().or(t.write.as_mut()).unwrap();
    d.hist = Some(hist.to_string());
    r
}

fn write_records(dir: &Path, records: &[Record]) {
    std::fs::create_dir_all(dir).unwrap();
    for r in records {
        record::results::write_record(dir, r).unwrap();
    }
}

#[test]
fn histograms_that_sum_past_u64_are_refused_at_merge_and_never_panic_the_site() {
    let _disk = common::disk_load();
    let fleet = Fleet::small().records();
    let half = 1u64 << 62;
    let max = i64::MAX as u64;
    // Each alone sums past u64.
    let alone = [
        ("five buckets of 2^62", v2_histogram(&[half; 5])),
        ("three buckets of 2^63-1", v2_histogram(&[max, max, max])),
        (
            "one small bucket after two huge",
            v2_histogram(&[max, max, 3]),
        ),
    ];
    for (k, (what, hist)) in alone.iter().enumerate() {
        let sb = sandbox();
        let src = sb.path().join("src");
        let res = sb.path().join("res");
        let hostile = with_hist(fleet[k].clone(), "rand-read", hist);
        write_records(&src, &[hostile]);
        write_records(&res, &fleet[5..8]);
        let before = std::fs::read_dir(&res).unwrap().count();
        for strict in [false, true] {
            let mut cmd = common::bin();
            cmd.args(["merge", "--into"])
                .arg(&res)
                .arg(&src)
                .env_remove("GITHUB_STEP_SUMMARY");
            if strict {
                cmd.arg("--strict");
            }
            let ran = common::Ran::of(&mut cmd);
            let text = format!("{}{}", ran.stdout, ran.stderr);
            let code = if strict { 2 } else { 0 };
            assert_eq!(ran.status.code(), Some(code), "{what}: {text}");
            assert!(
                text.contains("tests[\"rand-read\"].read.hist") && text.contains("2^64"),
                "{what}: the refusal names the field: {text}"
            );
            assert_eq!(
                std::fs::read_dir(&res).unwrap().count(),
                before,
                "{what}: the record was merged"
            );
        }
        // Put there by hand (or by an older version): the site still builds.
        let hostile = common::tree::files(&src).remove(0);
        std::fs::copy(hostile, res.join("hostile.json")).unwrap();
        site_builds(sb.path(), &res, what);
    }

    // Two that are valid alone but sum past u64 together, on the same runner page.
    let sb = sandbox();
    let res = sb.path().join("res");
    let a = with_hist(fleet[0].clone(), "qd1-read", &v2_histogram(&[max, 1]));
    let mut b = fleet[0].clone();
    b.id = format!("{}-again", b.id);
    b.started_at = fleet[1].started_at.clone();
    b.finished_at = fleet[1].finished_at.clone();
    let b = with_hist(b, "qd1-read", &v2_histogram(&[max, 5]));
    // Each alone passes merge.
    for r in [&a, &b] {
        let src = sb.path().join(format!("src-{}", r.id));
        write_records(&src, std::slice::from_ref(r));
        let mut merge = common::bin();
        merge
            .args(["merge", "--strict", "--into"])
            .arg(&res)
            .arg(&src);
        common::Ran::of(merge.env_remove("GITHUB_STEP_SUMMARY")).ok();
    }
    site_builds(sb.path(), &res, "two that sum past u64 together");
}

fn site_builds(at: &Path, res: &Path, what: &str) {
    let mut site = common::bin();
    site.current_dir(at).args(["site", "--results"]).arg(res);
    let ran = common::Ran::of(site.arg("--out").arg(at.join("out")));
    assert!(!ran.stderr.contains("panicked"), "{what}: {}", ran.stderr);
    assert_eq!(ran.status.code(), Some(0), "{what}: {}", ran.stderr);
    assert!(at.join("out/index.html").is_file(), "{what}");
}

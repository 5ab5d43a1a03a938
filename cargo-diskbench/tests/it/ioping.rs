//! Integration tests: `cargo diskbench ioping`, its request lines and summary read by one
//! parser of ioping's format, beside ioping's own output on the same folder (when ioping is
//! installed). Times differ run to run; every other field must be the same.

use std::process::Command;

use crate::common;

/// The fields of one request line, times as (number, unit).
#[derive(Debug, PartialEq)]
struct RequestLine {
    size: String,
    direction: String,
    target: String,
    request: u64,
    notice: Option<String>,
}

/// "4 KiB <<< . (ext4 /dev/vda 252.0 GiB): request=1 time=235.7 us (warmup)"
fn parse_request(line: &str) -> Option<(RequestLine, String)> {
    let (head, rest) = line.split_once(": request=")?;
    let (size, head) = split_n(head, 2)?;
    let (direction, target) = head.split_once(' ')?;
    let (n, time) = rest.split_once(" time=")?;
    let (time, notice) = match time.split_once(" (") {
        Some((t, n)) => (t, Some(n.trim_end_matches(')').to_string())),
        None => (time, None),
    };
    Some((
        RequestLine {
            size,
            direction: direction.into(),
            target: target.into(),
            request: n.parse().ok()?,
            notice,
        },
        time.to_string(),
    ))
}

/// The first `n` space-separated words, and the rest.
fn split_n(s: &str, n: usize) -> Option<(String, &str)> {
    let mut idx = 0;
    for _ in 0..n {
        let next = s[idx..].find(' ')? + idx;
        idx = next + 1;
    }
    Some((s[..idx - 1].to_string(), &s[idx..]))
}

/// A time as ioping prints one: a number and one of its units.
fn is_time(t: &str) -> bool {
    let Some((num, unit)) = t.split_once(' ') else {
        return false;
    };
    num.parse::<f64>().is_ok() && ["ns", "us", "ms", "s", "min", "hour"].contains(&unit)
}

/// The summary with its times replaced by "T" and rates by "R", for comparing.
fn summary_shape(out: &str) -> Vec<String> {
    let start = out
        .lines()
        .position(|l| l.starts_with("--- "))
        .expect("a summary");
    out.lines()
        .skip(start)
        .map(|l| {
            if let Some(rest) = l.strip_prefix("min/avg/max/mdev = ") {
                let times: Vec<&str> = rest.split(" / ").collect();
                assert!(times.iter().all(|t| is_time(t)), "{l}");
                return format!("min/avg/max/mdev = {} times", times.len());
            }
            // "4 requests completed in 12.8 ms, 16 KiB read, 312 iops, 1.22 MiB/s"
            let fields: Vec<&str> = l.split(", ").collect();
            if l.contains(" requests ") {
                let (counts, time) = fields[0].rsplit_once(" in ").unwrap();
                assert!(is_time(time), "{l}");
                assert!(
                    fields.len() == 4 && fields[2].ends_with(" iops") && fields[3].ends_with("/s"),
                    "{l}"
                );
                return format!("{counts} in T, {}, R iops, R/s", fields[1]);
            }
            l.to_string()
        })
        .collect()
}

fn lines_of(out: &str) -> Vec<RequestLine> {
    out.lines()
        .take_while(|l| !l.is_empty())
        .map(|l| {
            let (r, time) = parse_request(l).unwrap_or_else(|| panic!("not a request line: {l}"));
            assert!(is_time(&time), "{l}");
            r
        })
        .collect()
}

#[test]
fn five_requests_and_the_summary_in_iopings_format_beside_ioping() {
    let dir = common::sandbox();
    let out = {
        let _load = common::disk_load();
        common::bin()
            .current_dir(dir.path())
            .args(["ioping", "-c", "5", "."])
            .output()
            .unwrap()
    };
    let ours = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines = lines_of(&ours);
    assert_eq!(lines.len(), 5, "{ours}");
    assert_eq!(
        lines.iter().map(|l| l.request).collect::<Vec<_>>(),
        [1, 2, 3, 4, 5]
    );
    assert_eq!(lines[0].notice.as_deref(), Some("warmup"));
    assert!(
        lines
            .iter()
            .all(|l| l.size == "4 KiB" && l.direction == "<<<")
    );
    let shape = summary_shape(&ours);
    assert_eq!(
        shape[1], "4 requests completed in T, 16 KiB read, R iops, R/s",
        "{ours}"
    );
    assert_eq!(
        shape[2], "generated 5 requests in T, 20 KiB, R iops, R/s",
        "{ours}"
    );
    assert!(
        std::fs::read_dir(dir.path()).unwrap().next().is_none(),
        "nothing left behind"
    );

    let theirs = {
        let _load = common::disk_load();
        Command::new("ioping")
            .current_dir(dir.path())
            .args(["-c", "5", "."])
            .output()
    };
    let Ok(theirs) = theirs else {
        eprintln!("ioping is not installed: compared with nothing (apt-get install ioping)");
        return;
    };
    let theirs = String::from_utf8_lossy(&theirs.stdout).into_owned();
    let their_lines = lines_of(&theirs);
    // Same fields, same target label (filesystem, device, its size), request by request;
    // "fast"/"slow" marks depend on the times, so only the warm-up mark is compared.
    let strip = |v: Vec<RequestLine>| -> Vec<RequestLine> {
        v.into_iter()
            .map(|mut l| {
                l.notice = l.notice.filter(|n| n == "warmup");
                l
            })
            .collect()
    };
    assert_eq!(
        strip(lines),
        strip(their_lines),
        "ours:\n{ours}\nioping:\n{theirs}"
    );
    assert_eq!(
        shape,
        summary_shape(&theirs),
        "ours:\n{ours}\nioping:\n{theirs}"
    );
}

#[test]
fn bad_options_and_targets_are_refused_with_exit_2() {
    let dir = common::sandbox();
    let file = dir.path().join("f");
    std::fs::write(&file, vec![7u8; 8192]).unwrap();
    let f = file.display().to_string();
    let d = dir.path().display().to_string();
    for (args, says) in [
        (vec!["ioping", "-c", "x", &d], "-c x"),
        (vec!["ioping", "-s", "4q", &d], "-s 4q"),
        (vec!["ioping", "-W", "-c", "1", &f], "would overwrite"),
        (
            vec!["ioping", "-c", "1", "/dev/null"],
            "not a folder or a regular file",
        ),
        (
            vec!["ioping", "-c", "1", "/nonexistent-i27"],
            "cannot be read",
        ),
    ] {
        let out = common::run(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(says), "{args:?}: {err}");
    }
    assert_eq!(std::fs::read(&file).unwrap(), vec![7u8; 8192]);
}

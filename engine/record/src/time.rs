//! Wall-clock time as RFC 3339 (UTC), without a date-time dependency.

use std::time::{SystemTime, UNIX_EPOCH};

/// Now, as "2026-11-30T15:35:28Z".
pub fn now_rfc3339() -> String {
    rfc3339(SystemTime::now())
}

pub fn rfc3339(t: SystemTime) -> String {
    let secs = t
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let (y, m, d) = civil_from_days((secs / 86_400) as i64);
    let rem = secs % 86_400;
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        (rem / 60) % 60,
        rem % 60
    )
}

/// Days since 1970-01-01 to (year, month, day); Howard Hinnant's algorithm.
pub fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// Days since 1970-01-01 of a real calendar date (month lengths and leap years checked).
pub fn days_from_civil(y: i64, m: u32, d: u32) -> Option<i64> {
    let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let month_days = [
        31,
        if leap { 29 } else { 28 },
        31,
        30,
        31,
        30,
        31,
        31,
        30,
        31,
        30,
        31,
    ];
    if !(1..=12).contains(&m) || d == 0 || d > month_days[m as usize - 1] {
        return None;
    }
    let (m, d) = (m as i64, d as i64);
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * ((m + 9) % 12) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    Some(era * 146_097 + doe - 719_468)
}

/// Seconds since the epoch of a UTC time written as `YYYY-MM-DD` or
/// `YYYY-MM-DDTHH:MM:SS[.fraction](Z|+HH:MM|-HH:MM)`, years 1970-9999. Anything else,
/// including a real-looking prefix followed by other text, is `None`: callers validate
/// dates from files here, at the boundary.
pub fn parse_utc_secs(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    let digits = |r: std::ops::Range<usize>| -> Option<i64> {
        let part = b.get(r)?;
        if part.is_empty() || !part.iter().all(u8::is_ascii_digit) {
            return None;
        }
        std::str::from_utf8(part).ok()?.parse().ok()
    };
    if b.len() < 10 || b[4] != b'-' || b[7] != b'-' {
        return None;
    }
    let y = digits(0..4)?;
    if y < 1970 {
        return None;
    }
    let days = days_from_civil(y, digits(5..7)? as u32, digits(8..10)? as u32)?;
    if b.len() == 10 {
        return Some(days * 86_400);
    }
    if b.len() < 20 || b[10] != b'T' || b[13] != b':' || b[16] != b':' {
        return None;
    }
    let (h, mi, sec) = (digits(11..13)?, digits(14..16)?, digits(17..19)?);
    if h > 23 || mi > 59 || sec > 60 {
        return None;
    }
    let mut i = 19;
    if b[i] == b'.' {
        i += 1;
        let start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        if i == start || i - start > 9 {
            return None;
        }
    }
    let offset_s = match &b[i..] {
        b"Z" => 0,
        [sign @ (b'+' | b'-'), _, _, b':', _, _] => {
            let (oh, om) = (digits(i + 1..i + 3)?, digits(i + 4..i + 6)?);
            if oh > 23 || om > 59 {
                return None;
            }
            let o = oh * 3600 + om * 60;
            if *sign == b'+' { o } else { -o }
        }
        _ => return None,
    };
    Some(days * 86_400 + h * 3600 + mi * 60 + sec - offset_s)
}

/// Seconds since the epoch, now.
pub fn now_secs() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

/// The latest time a date from data may name: a day after now (clocks and time zones differ;
/// a run cannot have started later than that).
pub fn latest_plausible_secs() -> i64 {
    now_secs() + 86_400
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn formats_known_instants() {
        assert_eq!(rfc3339(UNIX_EPOCH), "1970-01-01T00:00:00Z");
        let t = UNIX_EPOCH + Duration::from_secs(1_796_053_328);
        assert_eq!(rfc3339(t), "2026-11-30T15:42:08Z");
        let leap = UNIX_EPOCH + Duration::from_secs(951_782_400); // 2000-02-29
        assert_eq!(rfc3339(leap), "2000-02-29T00:00:00Z");
    }

    #[test]
    fn only_real_dates_and_times_parse() {
        assert_eq!(parse_utc_secs("1970-01-01"), Some(0));
        assert_eq!(parse_utc_secs("2000-02-29T00:00:00Z"), Some(951_782_400));
        assert_eq!(parse_utc_secs("2026-11-30T15:42:08Z"), Some(1_796_053_328));
        assert_eq!(
            parse_utc_secs("2026-11-30T16:42:08+01:00"),
            Some(1_796_053_328)
        );
        assert_eq!(
            parse_utc_secs("2026-11-30T15:42:08.123Z"),
            Some(1_796_053_328)
        );
        for bad in [
            "2026-02-31",
            "2026-02-29",
            "2100-02-29",
            "2026-13-01",
            "2026-00-10",
            "2026-01-01<script>",
            "2026-01-01T00:00:00",
            "2026-01-01T24:00:00Z",
            "2026-01-01T00:00:00Zjunk",
            "../../../x",
            "+026-01-01",
            "1969-12-31",
            "2026-1-01",
            "",
        ] {
            assert_eq!(parse_utc_secs(bad), None, "{bad:?}");
        }
        assert!(latest_plausible_secs() < parse_utc_secs("9999-12-31").unwrap());
    }
}

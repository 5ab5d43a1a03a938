//! Sizes as people type them, in three dialects, and byte counts as people read them.
//!
//! One parser, because the dialects differ on purpose and in few places: this tool's options
//! read every prefix as a power of 1024; fio's default (`kb_base=1024`, parse.c
//! `get_mult_bytes`) reads `k`/`m`/`g` as powers of 1024 but the IEC spellings `KiB`/`MiB` as
//! powers of 1000, its compatibility rule. A size fio wrote into its JSON output or read from
//! a job file means what fio made of it. ioping (`ioping.c`, `parse_suffix` over
//! `size_suffix`) reads every prefix as a power of 1024, knows `sector` and `page`, and keeps
//! the whole part of a decimal figure; `cargo diskbench ioping` takes its options as ioping
//! does.

/// Which rules a size follows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SizeDialect {
    /// This tool's options (`--size 512M`): a whole number with an optional `K`, `M`, `G`, `T`
    /// (also `KB`, `KiB`, ...), every prefix a power of 1024.
    Tool,
    /// fio's default `kb_base=1024`: `k`, `m`, `g`, `t`, `p` (optionally with `b`) are powers of
    /// 1024, a decimal figure is allowed (`1.5m`), and `KiB`, `MiB`, ... are powers of 1000.
    Fio,
    /// ioping's `size_suffix`: the suffixes of [`IOPING_SIZE_SUFFIXES`] only, whole and
    /// case-insensitive, right after the figure; a decimal figure is allowed and its bytes
    /// are cut to a whole number, as ioping's `strtod` times the multiplier is.
    Ioping,
}

/// ioping's `size_suffix` table (`ioping.c`), in its order: the first six are also the units
/// it prints sizes in, largest first. Every prefix is a power of 1024 ("should be decimal,
/// keep binary for compatibility", says ioping).
pub const IOPING_SIZE_SUFFIXES: &[(&str, u64)] = &[
    ("PiB", 1 << 50),
    ("TiB", 1 << 40),
    ("GiB", 1 << 30),
    ("MiB", 1 << 20),
    ("KiB", 1 << 10),
    ("B", 1),
    ("", 1),
    ("k", 1 << 10),
    ("kb", 1 << 10),
    ("m", 1 << 20),
    ("mb", 1 << 20),
    ("g", 1 << 30),
    ("gb", 1 << 30),
    ("t", 1 << 40),
    ("tb", 1 << 40),
    ("pb", 1 << 50),
    ("eb", 1 << 60),
    ("sector", 512),
    ("page", 4096),
];

/// `text` in `dialect`, in bytes; `None` when it is not a size or does not fit in 64 bits.
pub fn parse_size(text: &str, dialect: SizeDialect) -> Option<u64> {
    if dialect == SizeDialect::Ioping {
        return parse_suffixed(text, IOPING_SIZE_SUFFIXES);
    }
    let (number, suffix) = split_figure(text);
    if number.is_empty() || (dialect == SizeDialect::Tool && number.contains('.')) {
        return None;
    }
    let suffix = suffix.trim().to_ascii_lowercase();
    let (prefix, iec) = match suffix.strip_suffix("ib") {
        Some(p) => (p, true),
        None => (suffix.strip_suffix('b').unwrap_or(&suffix), false),
    };
    let power: u32 = match prefix {
        "" if !iec => 0,
        "k" => 1,
        "m" => 2,
        "g" => 3,
        "t" => 4,
        "p" if dialect == SizeDialect::Fio => 5,
        _ => return None,
    };
    let base: u64 = if iec && dialect == SizeDialect::Fio {
        1000
    } else {
        1024
    };
    let multiplier = base.checked_pow(power)?;
    if number.contains('.') {
        let bytes = number.parse::<f64>().ok()? * multiplier as f64;
        (bytes.is_finite() && bytes >= 0.0 && bytes.fract() == 0.0 && bytes < u64::MAX as f64)
            .then_some(bytes as u64)
    } else {
        number.parse::<u64>().ok()?.checked_mul(multiplier)
    }
}

/// `text` without the white space around it, split where the figure (digits and decimal
/// points) ends: (figure, suffix).
fn split_figure(text: &str) -> (&str, &str) {
    let t = text.trim();
    t.split_at(
        t.find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(t.len()),
    )
}

/// ioping's `parse_suffix`: a figure (digits, a decimal point allowed) followed at once by
/// one of `suffixes`, matched whole and case-insensitively, as a count of the suffix's unit;
/// the product is cut to a whole number. `None` when the figure is not a number, the suffix
/// is not in the table, or the product does not fit in 64 bits. ioping's sizes
/// ([`SizeDialect::Ioping`]), and its times and counts with their own tables.
pub fn parse_suffixed(text: &str, suffixes: &[(&str, u64)]) -> Option<u64> {
    let (number, suffix) = split_figure(text);
    let figure: f64 = number.parse().ok()?;
    let (_, multiplier) = suffixes
        .iter()
        .find(|(s, _)| s.eq_ignore_ascii_case(suffix))?;
    let v = figure * *multiplier as f64;
    (v.is_finite() && v >= 0.0 && v < u64::MAX as f64).then_some(v as u64)
}

/// `bytes` as this tool's options spell it, the largest whole prefix: "1G", "512M", "4K",
/// "1000". [`parse_size`] in [`SizeDialect::Tool`] reads it back to `bytes`.
pub fn tool_size_text(bytes: u64) -> String {
    for (shift, prefix) in [(40, 'T'), (30, 'G'), (20, 'M'), (10, 'K')] {
        if bytes != 0 && bytes.is_multiple_of(1u64 << shift) {
            return format!("{}{prefix}", bytes >> shift);
        }
    }
    bytes.to_string()
}

/// Whether `text` uses an IEC prefix (`4KiB`), which fio's default reads as a power of 1000.
pub fn is_iec(text: &str) -> bool {
    let t = text.trim().to_ascii_lowercase();
    t.strip_suffix("ib")
        .is_some_and(|p| p.ends_with(['k', 'm', 'g', 't', 'p']))
}

/// A byte count for people: "512 B", "4 KiB", "1 GiB", "1.5 GiB" (powers of 1024, one
/// decimal where the figure is not whole).
pub fn format_bytes(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 || value.fract() == 0.0 {
        format!("{value:.0} {}", UNITS[unit])
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use SizeDialect::{Fio, Ioping, Tool};

    #[test]
    fn the_tools_own_spelling_reads_back() {
        for bytes in [0, 1000, 4096, 512 << 20, 1 << 30, 3 << 40, (1 << 30) + 1] {
            assert_eq!(
                parse_size(&tool_size_text(bytes), Tool),
                Some(bytes),
                "{bytes}"
            );
        }
        assert_eq!(tool_size_text(1 << 30), "1G");
        assert_eq!(tool_size_text(1536 << 20), "1536M");
    }

    #[test]
    fn the_tools_own_sizes_are_powers_of_1024() {
        for (text, want) in [
            ("4096", Some(4096)),
            ("4k", Some(4096)),
            ("4K", Some(4096)),
            ("4KB", Some(4096)),
            ("4KiB", Some(4096)),
            ("512M", Some(512 << 20)),
            ("2G", Some(2 << 30)),
            (" 1t ", Some(1 << 40)),
            ("16MB", Some(16 << 20)),
            ("-1", None),
            ("12b", Some(12)),
            ("", None),
            ("G", None),
            ("1.5G", None),
            ("1p", None),
            ("1x", None),
            ("99999999999999999999", None),
            ("20000000T", None),
        ] {
            assert_eq!(parse_size(text, Tool), want, "{text}");
        }
    }

    #[test]
    fn fio_reads_iec_prefixes_as_powers_of_ten() {
        for (text, want) in [
            ("4k", Some(4096)),
            ("4kb", Some(4096)),
            ("1m", Some(1 << 20)),
            ("1M", Some(1 << 20)),
            ("1.5m", Some(3 << 19)),
            ("1p", Some(1 << 50)),
            ("4KiB", Some(4000)),
            ("1MiB", Some(1_000_000)),
            ("0.5", None),
            ("k", None),
            ("1q", None),
        ] {
            assert_eq!(parse_size(text, Fio), want, "{text}");
        }
        assert!(is_iec("4KiB") && is_iec("1mib") && !is_iec("4k") && !is_iec("4kb"));
    }

    #[test]
    fn ioping_reads_every_prefix_as_a_power_of_1024_and_cuts_fractions() {
        for (text, want) in [
            ("4096", Some(4096)),
            ("4k", Some(4096)),
            ("4K", Some(4096)),
            ("4kb", Some(4096)),
            ("64KiB", Some(65536)),
            ("64kib", Some(65536)),
            ("1m", Some(1 << 20)),
            ("1MiB", Some(1 << 20)),
            ("2g", Some(2 << 30)),
            ("1t", Some(1 << 40)),
            ("1pb", Some(1 << 50)),
            ("1PiB", Some(1 << 50)),
            ("1eb", Some(1 << 60)),
            ("12b", Some(12)),
            ("1sector", Some(512)),
            ("1page", Some(4096)),
            ("2PAGE", Some(8192)),
            // A decimal figure; the bytes are cut to a whole number.
            ("1.5k", Some(1536)),
            ("0.5", Some(0)),
            ("1.7", Some(1)),
            (" 4k ", Some(4096)),
            // Not in ioping's table: "p" alone, "kib" is but "ki" is not, no space before it.
            ("1p", None),
            ("1ki", None),
            ("4 k", None),
            ("4x", None),
            ("k", None),
            ("", None),
            (".", None),
            ("1.2.3", None),
            ("-1", None),
            ("16eb", None),
        ] {
            assert_eq!(parse_size(text, Ioping), want, "{text}");
        }
    }

    #[test]
    fn a_suffix_table_is_matched_whole_and_without_case() {
        const TABLE: &[(&str, u64)] = &[("ms", 1_000_000), ("", 1_000_000_000), ("m", 60)];
        assert_eq!(parse_suffixed("200ms", TABLE), Some(200_000_000));
        assert_eq!(parse_suffixed("200MS", TABLE), Some(200_000_000));
        assert_eq!(parse_suffixed("0.5", TABLE), Some(500_000_000));
        assert_eq!(parse_suffixed("2m", TABLE), Some(120));
        assert_eq!(parse_suffixed("2mss", TABLE), None);
        assert_eq!(parse_suffixed("soon", TABLE), None);
    }

    #[test]
    fn byte_counts_read_in_binary_units() {
        assert_eq!(format_bytes(512), "512 B");
        assert_eq!(format_bytes(4096), "4 KiB");
        assert_eq!(format_bytes(1 << 30), "1 GiB");
        assert_eq!(format_bytes(3 << 29), "1.5 GiB");
    }
}

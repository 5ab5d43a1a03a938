//! Sizes as people type them, in two dialects, and byte counts as people read them.
//!
//! One parser, because the two dialects differ on purpose and in one place: this tool's
//! options read every prefix as a power of 1024; fio's default (`kb_base=1024`, parse.c
//! `get_mult_bytes`) reads `k`/`m`/`g` as powers of 1024 but the IEC spellings `KiB`/`MiB` as
//! powers of 1000, its compatibility rule. A size fio wrote into its JSON output or read from
//! a job file means what fio made of it.

/// Which rules a size follows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SizeDialect {
    /// This tool's options (`--size 512M`): a whole number with an optional `K`, `M`, `G`, `T`
    /// (also `KB`, `KiB`, ...), every prefix a power of 1024.
    Tool,
    /// fio's default `kb_base=1024`: `k`, `m`, `g`, `t`, `p` (optionally with `b`) are powers of
    /// 1024, a decimal figure is allowed (`1.5m`), and `KiB`, `MiB`, ... are powers of 1000.
    Fio,
}

/// `text` in `dialect`, in bytes; `None` when it is not a size or does not fit in 64 bits.
pub fn parse_size(text: &str, dialect: SizeDialect) -> Option<u64> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (number, suffix) = t.split_at(split);
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
    use SizeDialect::{Fio, Tool};

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
    fn byte_counts_read_in_binary_units() {
        assert_eq!(format_bytes(512), "512 B");
        assert_eq!(format_bytes(4096), "4 KiB");
        assert_eq!(format_bytes(1 << 30), "1 GiB");
        assert_eq!(format_bytes(3 << 29), "1.5 GiB");
    }
}

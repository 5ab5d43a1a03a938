//! A CSV file read the one way every importer here reads it, and the two things every CSV
//! import decides the same way: a row's date and a record's stable id.

use std::collections::BTreeMap;

/// Split one CSV line (RFC 4180 quoting; a line never holds a newline in these files).
pub(crate) fn split_csv_line(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(ch) = chars.next() {
        match ch {
            '"' if quoted && chars.peek() == Some(&'"') => {
                cur.push('"');
                chars.next();
            }
            '"' => quoted = !quoted,
            ',' if !quoted => out.push(std::mem::take(&mut cur)),
            c => cur.push(c),
        }
    }
    out.push(cur);
    out
}

/// A CSV file read the one way every importer here reads it: the first non-empty line is the
/// header (a byte-order mark stripped, names trimmed); every later non-empty line is a row of
/// exactly the header's width, numbered as in the file, its cells trimmed. Between rows a
/// Ctrl-C stops the reading ("interrupted": the caller turns it into exit 130).
/// One row of a [`CsvTable`]: its line number, the line as written, and column -> cell.
pub(crate) type CsvRow<'a> = (usize, &'a str, BTreeMap<&'a str, String>);

pub(crate) struct CsvTable<'a> {
    pub header: Vec<String>,
    lines: Vec<(usize, &'a str)>,
}

impl<'a> CsvTable<'a> {
    pub(crate) fn parse(text: &'a str) -> std::result::Result<CsvTable<'a>, String> {
        let mut lines = text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty());
        let (_, header) = lines
            .next()
            .ok_or("empty file: expected a CSV header line")?;
        let header = split_csv_line(header.trim_start_matches('\u{feff}'))
            .into_iter()
            .map(|h| h.trim().to_string())
            .collect();
        Ok(CsvTable {
            header,
            lines: lines.map(|(i, l)| (i + 1, l)).collect(),
        })
    }

    pub(crate) fn has(&self, column: &str) -> bool {
        self.header.iter().any(|h| h == column)
    }

    /// The rows as (line number, the line as written, column -> cell).
    pub(crate) fn rows(
        &self,
    ) -> impl Iterator<Item = std::result::Result<CsvRow<'_>, String>> + '_ {
        self.lines.iter().map(|&(lineno, line)| {
            if record::cancel::requested() {
                return Err("interrupted".to_string());
            }
            let cells = split_csv_line(line);
            if cells.len() != self.header.len() {
                return Err(format!(
                    "line {lineno}: {} fields, the header has {}",
                    cells.len(),
                    self.header.len()
                ));
            }
            let row = self
                .header
                .iter()
                .map(|h| h.as_str())
                .zip(cells.into_iter().map(|c| c.trim().to_string()))
                .collect();
            Ok((lineno, line, row))
        })
    }
}

/// A CSV row's date, as every CSV import takes it: a real calendar date (`2026-02-31` is not)
/// and not in the future (a date ahead would hide every real runner behind `--window-days`).
pub(crate) fn check_csv_date(lineno: usize, date: &str) -> std::result::Result<(), String> {
    match record::time::parse_utc_secs(date) {
        None => Err(format!(
            "line {lineno}, column date: {date:?} is not a real YYYY-MM-DD date"
        )),
        Some(t) if t > record::time::latest_plausible_secs() => Err(format!(
            "line {lineno}, column date: {date:?} is in the future"
        )),
        Some(_) => Ok(()),
    }
}

/// FNV-1a, 64 bits: a stable id from content (not for security).
pub(crate) fn stable_id(parts: &[&str]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for p in parts {
        for b in p.bytes().chain(std::iter::once(0)) {
            h ^= b as u64;
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    format!("{h:016x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoted_cells_keep_their_commas_and_quotes() {
        assert_eq!(
            split_csv_line("a,\"b, c\",\"d\"\"e\""),
            vec!["a", "b, c", "d\"e"]
        );
    }
}

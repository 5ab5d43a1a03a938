//! A CSV file read the one way every importer here reads it, and the two things every CSV
//! import decides the same way: a row's date and a record's stable id.

use std::collections::BTreeMap;

/// One row of a [`CsvTable`]: its line number, the line as written, and column -> cell.
pub(crate) type CsvRow<'a> = (usize, &'a str, BTreeMap<&'a str, String>);

/// A CSV file read the one way every importer here reads it: the first non-empty line is the
/// header (a byte-order mark stripped, names trimmed); every later non-empty line is a row of
/// exactly the header's width, numbered as in the file, its cells trimmed (RFC 4180 quoting,
/// by the `csv` crate). Between rows a Ctrl-C stops the reading ("interrupted": the caller
/// turns it into exit 130). The file's size is limited where it is opened (`record::input`).
///
/// The rows are read as they are asked for, never held: memory does not grow with the file
/// (a million-row import held every row twice, about 400 MB).
pub(crate) struct CsvTable<'a> {
    pub header: Vec<String>,
    text: &'a str,
}

/// The non-blank records of `text` as (line number, the record as written, its cells).
fn records(text: &str) -> impl Iterator<Item = Result<(usize, &str, csv::StringRecord), String>> {
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .from_reader(text.as_bytes());
    let mut done = false;
    std::iter::from_fn(move || {
        if done {
            return None;
        }
        let mut record = csv::StringRecord::new();
        loop {
            let start = reader.position().clone();
            let more = match reader.read_record(&mut record) {
                Ok(more) => more,
                Err(e) => {
                    done = true;
                    let line = e.position().map(|p| p.line()).unwrap_or(start.line());
                    return Some(Err(format!("line {line}: not CSV: {e}")));
                }
            };
            if !more {
                done = true;
                return None;
            }
            // A line of blanks is no row (the csv crate skips only truly empty lines).
            if record.iter().all(|cell| cell.trim().is_empty()) && record.len() <= 1 {
                continue;
            }
            let at = record.position().cloned().unwrap_or(start);
            let end = reader.position().byte() as usize;
            // A record's position is where the reader stood, before the empty lines it
            // skipped: the row starts after them.
            let raw = text.get(at.byte() as usize..end).unwrap_or_default();
            let written = raw.trim_start_matches(['\r', '\n']);
            let skipped = raw[..raw.len() - written.len()].matches('\n').count();
            return Some(Ok((
                at.line() as usize + skipped,
                written.trim_end(),
                record,
            )));
        }
    })
}

impl<'a> CsvTable<'a> {
    /// The header; the rows are read by [`CsvTable::rows`] (a row that is not CSV is an
    /// error there, with its line).
    pub(crate) fn parse(text: &'a str) -> std::result::Result<CsvTable<'a>, String> {
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let (_, _, header) = records(text)
            .next()
            .ok_or("empty file: expected a CSV header line")??;
        Ok(CsvTable {
            header: header.iter().map(|h| h.trim().to_string()).collect(),
            text,
        })
    }

    pub(crate) fn has(&self, column: &str) -> bool {
        self.header.iter().any(|h| h == column)
    }

    /// The rows as (line number, the line as written, column -> cell), read one at a time.
    pub fn rows(&self) -> impl Iterator<Item = std::result::Result<CsvRow<'_>, String>> + '_ {
        records(self.text).skip(1).map(|found| {
            if record::cancel::requested() {
                return Err("interrupted".to_string());
            }
            let (lineno, line, cells) = found?;
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
                .zip(cells.iter().map(|c| c.trim().to_string()))
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
        let table = CsvTable::parse("x,y,z\na,\"b, c\",\"d\"\"e\"\n").unwrap();
        let (_, line, row) = table.rows().next().unwrap().unwrap();
        assert_eq!(
            (row["x"].as_str(), row["y"].as_str(), row["z"].as_str()),
            ("a", "b, c", "d\"e")
        );
        assert_eq!(line, "a,\"b, c\",\"d\"\"e\"");
    }

    #[test]
    fn rows_keep_their_line_numbers_past_blank_lines() {
        let text = "\u{feff} a , b\n\n1,2\n   \n3,4,5\r\n";
        let table = CsvTable::parse(text).unwrap();
        assert_eq!(table.header, ["a", "b"]);
        let rows: Vec<_> = table.rows().collect();
        let (lineno, line, row) = rows[0].as_ref().unwrap();
        assert_eq!((*lineno, *line, row["b"].as_str()), (3, "1,2", "2"));
        assert_eq!(
            rows[1].as_ref().unwrap_err(),
            "line 5: 3 fields, the header has 2"
        );
        assert!(CsvTable::parse("\n \n").is_err());
    }
}

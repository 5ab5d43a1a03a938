//! Escaping, for the few fragments built in Rust rather than in templates.

/// Escape text for HTML element content and quoted attribute values. Control characters
/// (ESC, BEL, ... from a record's label) are never written raw: C0 ones become their visible
/// Unicode control pictures (ESC shows as U+241B), DEL and C1 ones U+FFFD. The templates'
/// autoescape uses this too.
pub(crate) fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    for ch in s.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '\t' | '\n' | '\r' => out.push(ch),
            c if (c as u32) < 0x20 => {
                out.push(char::from_u32(0x2400 + c as u32).unwrap_or('\u{fffd}'))
            }
            c if c.is_control() => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    out
}

/// [`esc`] as the templates' autoescape calls it.
pub(crate) fn esc_into(s: &str, out: &mut dyn std::io::Write) -> std::io::Result<()> {
    out.write_all(esc(s).as_bytes())
}

#[cfg(test)]
mod tests {
    #[test]
    fn escapes_markup() {
        assert_eq!(
            super::esc("<script>\"a\" & 'b'</script>"),
            "&lt;script&gt;&quot;a&quot; &amp; &#39;b&#39;&lt;/script&gt;"
        );
        assert_eq!(
            super::esc("a\u{1b}[31mb\u{7}c\u{9b}d\te"),
            "a\u{241b}[31mb\u{2407}c\u{fffd}d\te"
        );
    }
}

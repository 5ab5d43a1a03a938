//! Escaping, for the few fragments built in Rust rather than in templates.

/// Escape text for HTML element content and quoted attribute values. Control characters
/// (ESC, BEL, ... from a record's label) are never written raw: C0 ones become their visible
/// Unicode control pictures (ESC shows as U+241B), DEL, C1 ones and bidi overrides (U+202E,
/// which would turn the text after it around) a visible `[U+202E]`. The templates' autoescape
/// uses this too.
pub(crate) fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    for ch in s.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => push_visible(&mut out, c),
        }
    }
    out
}

/// DEL, the C1 controls and the Unicode bidi controls (embeddings, overrides, isolates, marks).
fn is_hidden_control(c: char) -> bool {
    matches!(c, '\u{7f}'..='\u{9f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}' | '\u{61c}')
}

/// Whether UTF-8 `text` holds a C0 control other than tab and line ends, or any character of
/// [`is_hidden_control`]: a scan of the bytes, since every page passes through it (decoding
/// 90 MB of pages into chars cost a tenth of the site's time).
fn has_hidden_control(text: &[u8]) -> bool {
    text.iter().enumerate().any(|(i, &b)| match b {
        b'\t' | b'\n' | b'\r' => false,
        0..0x20 | 0x7f => true,
        // U+0080..=U+009F
        0xc2 => text.get(i + 1).is_some_and(|&n| (0x80..=0x9f).contains(&n)),
        // U+061C
        0xd8 => text.get(i + 1) == Some(&0x9c),
        // U+200E, U+200F, U+202A..=U+202E, U+2066..=U+2069
        0xe2 => match (text.get(i + 1), text.get(i + 2)) {
            (Some(0x80), Some(&n)) => matches!(n, 0x8e | 0x8f | 0xaa..=0xae),
            (Some(0x81), Some(&n)) => (0xa6..=0xa9).contains(&n),
            _ => false,
        },
        _ => false,
    })
}

fn push_visible(out: &mut String, c: char) {
    match c {
        '\t' | '\n' | '\r' => out.push(c),
        c if (c as u32) < 0x20 => out.push(char::from_u32(0x2400 + c as u32).unwrap_or('\u{fffd}')),
        c if is_hidden_control(c) => out.push_str(&format!("[U+{:04X}]", c as u32)),
        c => out.push(c),
    }
}

/// A written page (HTML, SVG) with any control character still in it made visible as [`esc`]
/// does: the last line of defence for text that reached a page without passing `esc` (an SVG
/// drawn by a library, a fragment built in Rust). Template text has none, so a page without
/// any is returned as it is.
pub(crate) fn visible_controls(page: &str) -> std::borrow::Cow<'_, str> {
    if !has_hidden_control(page.as_bytes()) {
        return std::borrow::Cow::Borrowed(page);
    }
    let mut out = String::with_capacity(page.len() + 16);
    for c in page.chars() {
        push_visible(&mut out, c);
    }
    std::borrow::Cow::Owned(out)
}

/// A JSON file's text with DEL, C1 and bidi controls written as `\uXXXX` escapes (serde_json
/// escapes only C0): the same string to any JSON reader, and nothing that a terminal or an
/// editor showing the file would act on. Such characters only occur inside JSON strings.
pub(crate) fn json_controls_escaped(json: &str) -> std::borrow::Cow<'_, str> {
    if !has_hidden_control(json.as_bytes()) {
        return std::borrow::Cow::Borrowed(json);
    }
    let mut out = String::with_capacity(json.len() + 16);
    for c in json.chars() {
        if is_hidden_control(c) {
            out.push_str(&format!("\\u{:04x}", c as u32));
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
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
            "a\u{241b}[31mb\u{2407}c[U+009B]d\te"
        );
        for (raw, shown) in [
            ("\u{202e}txt.exe", "[U+202E]txt.exe"),
            ("a\u{2066}b\u{2069}", "a[U+2066]b[U+2069]"),
            ("\u{7f}\u{0}\u{200f}", "[U+007F]\u{2400}[U+200F]"),
            ("\u{85}", "[U+0085]"),
        ] {
            assert_eq!(super::esc(raw), shown);
            assert_eq!(
                super::visible_controls(&format!("<p>{raw}</p>")),
                format!("<p>{shown}</p>")
            );
        }
        assert!(matches!(
            super::visible_controls("<p>plain é ✓</p>"),
            std::borrow::Cow::Borrowed(_)
        ));
        let json = serde_json::to_string(&"\u{1b}\u{9b}\u{202e}x").unwrap();
        let escaped = super::json_controls_escaped(&json);
        assert_eq!(escaped, "\"\\u001b\\u009b\\u202ex\"");
        assert_eq!(
            serde_json::from_str::<String>(&escaped).unwrap(),
            "\u{1b}\u{9b}\u{202e}x"
        );
    }
}

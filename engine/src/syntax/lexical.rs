//! KDL v2's lexical classes, defined once.
//!
//! The pre-scan (`guard.rs`), the fast path (`fast.rs`) and the messages that name a line all
//! take newlines, spaces, identifier characters and the forbidden code points from here: a
//! comment, a line or a word that ended in one place and not in another let code hide from the
//! limits (`//` then a carriage return used to end a comment for the parser only).
//!
//! The classes are the KDL v2 specification's (its tables *Newline*, *Whitespace* and
//! *Disallowed Literal Code Points*); `lexical_classes_match_kdl` checks them against the kdl
//! crate's parser, character by character.

/// Every newline of KDL v2, CRLF first: a CR followed by an LF is one newline.
pub const NEWLINES: [&str; 8] = [
    "\r\n", "\r", "\n", "\u{85}", "\u{b}", "\u{c}", "\u{2028}", "\u{2029}",
];

/// A newline character (CRLF is two of them read as one newline: see [`newline_at`]).
pub fn is_newline(c: char) -> bool {
    matches!(
        c,
        '\r' | '\n' | '\u{85}' | '\u{b}' | '\u{c}' | '\u{2028}' | '\u{2029}'
    )
}

/// The length in bytes of the newline that starts at `i`, or 0.
pub fn newline_at(b: &[u8], i: usize) -> usize {
    match b.get(i..).unwrap_or_default() {
        [b'\r', b'\n', ..] => 2,
        [b'\r' | b'\n' | 0x0b | 0x0c, ..] => 1,
        [0xc2, 0x85, ..] => 2,
        [0xe2, 0x80, 0xa8 | 0xa9, ..] => 3,
        _ => 0,
    }
}

/// The offset of the first newline at or after `i` (the end of `b` when there is none).
pub fn line_end(b: &[u8], mut i: usize) -> usize {
    while i < b.len() {
        // Every newline of `NEWLINES` starts with one of these bytes: the others are passed over
        // without a look further.
        if matches!(b[i], b'\r' | b'\n' | 0x0b | 0x0c | 0xc2 | 0xe2) && newline_at(b, i) > 0 {
            return i;
        }
        i += 1;
    }
    i
}

/// KDL v2's `unicode-space`: what separates tokens on a line.
pub fn is_unicode_space(c: char) -> bool {
    matches!(
        c,
        '\t' | ' ' | '\u{a0}' | '\u{1680}' | '\u{2000}'
            ..='\u{200a}' | '\u{202f}' | '\u{205f}' | '\u{3000}'
    )
}

/// A code point KDL v2 forbids anywhere in a document, comments and strings included (a byte
/// order mark only counts at the very start, which the caller skips).
pub fn is_disallowed(c: char) -> bool {
    matches!(
        c,
        '\u{0}'..='\u{8}' | '\u{e}'..='\u{1f}' | '\u{7f}' | '\u{feff}'
    ) || is_bidi_control(c)
}

/// An ASCII byte KDL v2 allows anywhere: [`is_disallowed`] within ASCII, without its look-ups
/// (`ascii_identifier_chars_by_class` checks the two agree).
pub fn is_allowed_ascii(b: u8) -> bool {
    matches!(b, b'\t'..=b'\r' | b' '..=b'~')
}

/// The Unicode direction controls: text holding them can display in another order than the
/// order it is read in ("Trojan Source").
pub fn is_bidi_control(c: char) -> bool {
    matches!(
        c,
        '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'
    )
}

/// KDL v2's `identifier-char`: what a bare word (a name, a number, a keyword's letters) is
/// made of.
pub fn is_identifier_char(c: char) -> bool {
    // ASCII, nearly every character of a file, without the look-ups below: no space, newline
    // or forbidden code point lies in `!`..=`~` (`ascii_identifier_chars_by_class` checks it).
    if c.is_ascii() {
        return matches!(c, '!'..='~') && !is_punctuation(c);
    }
    !is_unicode_space(c) && !is_newline(c) && !is_disallowed(c) && !is_punctuation(c)
}

/// The characters that end a bare word besides spaces and newlines.
fn is_punctuation(c: char) -> bool {
    matches!(
        c,
        '\\' | '/' | '(' | ')' | '{' | '}' | '[' | ']' | ';' | '"' | '#' | '='
    )
}

/// Bare words KDL v2 reserves: they are neither strings nor (without a `#`) keywords.
pub const RESERVED_WORDS: [&str; 6] = ["true", "false", "null", "inf", "-inf", "nan"];

/// The 1-based line of a byte offset, lines ending at any KDL newline (CRLF counts once).
pub fn line_of(text: &str, offset: usize) -> usize {
    let b = text.as_bytes();
    let end = offset.min(b.len());
    let mut line = 1;
    let mut i = 0;
    while i < end {
        match newline_at(b, i) {
            0 => i += 1,
            n => {
                line += 1;
                i += n;
            }
        }
    }
    line
}

/// The standard name of a code point this module refuses, for messages.
pub fn name_of(c: char) -> &'static str {
    match c {
        '\u{0}' => "NULL",
        '\u{8}' => "BACKSPACE",
        '\u{1b}' => "ESCAPE",
        '\u{7f}' => "DELETE",
        '\u{200e}' => "LEFT-TO-RIGHT MARK",
        '\u{200f}' => "RIGHT-TO-LEFT MARK",
        '\u{202a}' => "LEFT-TO-RIGHT EMBEDDING",
        '\u{202b}' => "RIGHT-TO-LEFT EMBEDDING",
        '\u{202c}' => "POP DIRECTIONAL FORMATTING",
        '\u{202d}' => "LEFT-TO-RIGHT OVERRIDE",
        '\u{202e}' => "RIGHT-TO-LEFT OVERRIDE",
        '\u{2066}' => "LEFT-TO-RIGHT ISOLATE",
        '\u{2067}' => "RIGHT-TO-LEFT ISOLATE",
        '\u{2068}' => "FIRST STRONG ISOLATE",
        '\u{2069}' => "POP DIRECTIONAL ISOLATE",
        '\u{feff}' => "BYTE ORDER MARK",
        _ => "a control character",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kdl::KdlDocument;

    #[test]
    fn newline_at_reads_every_newline() {
        for nl in NEWLINES {
            let text = format!("a{nl}b");
            assert_eq!(newline_at(text.as_bytes(), 1), nl.len(), "{nl:?}");
            assert_eq!(line_of(&text, text.len() - 1), 2, "{nl:?}");
            assert_eq!(line_end(text.as_bytes(), 0), 1, "{nl:?}");
            let c = nl.chars().last().unwrap_or_default();
            assert!(is_newline(c) && !is_identifier_char(c), "{nl:?}");
        }
        assert_eq!(newline_at(b"a", 0), 0);
        assert_eq!(line_end("a\u{2027}\u{a0}b".as_bytes(), 0), 7);
        assert_eq!(newline_at("\u{2027}".as_bytes(), 0), 0);
        assert_eq!(line_of("a\r\nb\rc\n", 6), 3);
    }

    /// The ASCII shortcuts of `is_identifier_char` and `is_disallowed` are the classes'
    /// definitions.
    #[test]
    fn ascii_identifier_chars_by_class() {
        for c in (0u8..0x80).map(char::from) {
            let by_class =
                !is_unicode_space(c) && !is_newline(c) && !is_disallowed(c) && !is_punctuation(c);
            assert_eq!(is_identifier_char(c), by_class, "{c:?}");
            assert_eq!(is_allowed_ascii(c as u8), !is_disallowed(c), "{c:?}");
        }
    }

    /// Each class as the kdl crate's parser reads it: a newline ends a node (two nodes), a
    /// space separates arguments (one node, two arguments), an identifier character continues
    /// a word, a forbidden code point is refused in a string.
    #[test]
    fn lexical_classes_match_kdl() {
        let nodes = |t: &str| KdlDocument::parse_v2(t).ok().map(|d| d.nodes().len());
        let args = |t: &str| {
            KdlDocument::parse_v2(t)
                .ok()
                .and_then(|d| d.nodes().first().map(|n| n.entries().len()))
        };
        let probe = (0u32..0x3100)
            .chain(0xfe00..0xff00)
            .filter_map(char::from_u32);
        for c in probe {
            if is_newline(c) {
                assert_eq!(nodes(&format!("a{c}b")), Some(2), "{c:?} is a newline");
            }
            if is_unicode_space(c) {
                assert_eq!(args(&format!("a x{c}y")), Some(2), "{c:?} is a space");
            }
            if is_identifier_char(c) && !c.is_ascii_digit() && !matches!(c, '+' | '-' | '.') {
                assert_eq!(args(&format!("a x{c}y")), Some(1), "{c:?} is in a word");
            }
            // kdl lets U+007F through (a divergence the pre-scan decides); the rest it refuses.
            if is_disallowed(c) && c != '\u{7f}' {
                assert!(args(&format!("a \"{c}\"")).is_none(), "{c:?} is forbidden");
            }
        }
    }
}

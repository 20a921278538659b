//! Text from a pipeline file made safe to print on a terminal, and bounded.
//!
//! A name, a value or a whole line of a file can hold control characters: an escape sequence in a
//! `uses=` value would retitle or clear the terminal of whoever runs `reviewflow check`. Every
//! character that moves the cursor or changes the terminal's state (C0 and C1 controls but
//! newline and tab, DEL) and every Unicode direction override (which can make a line read as
//! something it is not) is printed as `\u{…}` instead.

/// The marker of text left out.
pub const ELLIPSIS: char = '…';

/// Whether `c` is printed escaped.
pub fn is_unsafe(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t')
        || matches!(c, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
        || matches!(c, '\u{2028}' | '\u{2029}')
}

/// Appends `c` to `out`, escaped when [`is_unsafe`].
pub fn push_char(out: &mut String, c: char) {
    if is_unsafe(c) {
        out.push_str(&format!("\\u{{{:x}}}", u32::from(c)));
    } else {
        out.push(c);
    }
}

/// `text` escaped, and cut after `max_chars` characters of the text with [`ELLIPSIS`] added.
pub fn bounded(text: &str, max_chars: usize) -> String {
    let mut out = String::with_capacity(text.len().min(max_chars.saturating_mul(4)));
    for (n, c) in text.chars().enumerate() {
        if n == max_chars {
            out.push(ELLIPSIS);
            break;
        }
        push_char(&mut out, c);
    }
    out
}

/// `text` escaped, whole.
pub fn escaped(text: &str) -> String {
    bounded(text, usize::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_and_overrides_are_escaped() {
        assert_eq!(
            escaped("a\u{1b}]0;x\u{7}\u{1b}[2J\r\0\u{9b}\u{202e}b\n\tc"),
            "a\\u{1b}]0;x\\u{7}\\u{1b}[2J\\u{d}\\u{0}\\u{9b}\\u{202e}b\n\tc"
        );
    }

    #[test]
    fn long_text_is_cut() {
        assert_eq!(bounded("abcdef", 3), "abc…");
        assert_eq!(bounded("abc", 3), "abc");
    }
}

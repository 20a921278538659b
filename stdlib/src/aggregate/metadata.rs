//! The notes the aggregate writes into a message — `(clamped from error)`, `(lens: a)`,
//! `(lenses: a, b)` — and the removal of text that imitates them (seed 004's threat 4): a
//! reviewer that read a prompt injection must not make a finding look clamped or agreed.

use std::sync::LazyLock;

use regex::Regex;

use crate::rules::Severity;

/// An imitation of a note, in any letter case, with an ASCII or a fullwidth parenthesis, up to its
/// closing parenthesis or the line's end.
static FORGED: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)[(\x{FF08}]\s*(?:clamped\s+from\b|lens(?:es)?\s*[:\x{FF1A}])[^)\x{FF09}\n]*[)\x{FF09}]?",
    )
    .expect("static pattern compiles")
});

/// Characters that render as nothing: inside `clamped` they would hide an imitation from the
/// pattern while a reader still sees the note.
fn invisible(c: char) -> bool {
    matches!(
        c,
        '\u{00AD}'
            | '\u{180E}'
            | '\u{200B}'..='\u{200F}'
            | '\u{202A}'..='\u{202E}'
            | '\u{2060}'..='\u{2064}'
            | '\u{2066}'..='\u{2069}'
            | '\u{FEFF}'
    )
}

/// The message of a finding whose text said nothing but forged notes.
pub const NO_MESSAGE: &str = "(no message)";

/// `message` without the text that imitates a note (and without invisible characters, which could
/// hide one); `None` when there was none of either.
pub fn strip_forged(message: &str) -> Option<String> {
    let hidden = message.chars().any(invisible);
    if !hidden && !FORGED.is_match(message) {
        return None;
    }
    let visible: String = message.chars().filter(|c| !invisible(*c)).collect();
    let stripped = FORGED.replace_all(&visible, "");
    // Removing a note in mid-line leaves two spaces; the line ends are the reviewer's.
    let mut out = String::with_capacity(stripped.len());
    for (i, line) in stripped.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let mut last_space = false;
        for c in line.trim_end().chars() {
            if c == ' ' && last_space {
                continue;
            }
            last_space = c == ' ';
            out.push(c);
        }
    }
    let out = out.trim();
    Some(if out.is_empty() {
        NO_MESSAGE.to_owned()
    } else {
        out.to_owned()
    })
}

/// `severity` capped at `ceiling`, and the severity it was when it was above.
pub fn clamp(severity: Severity, ceiling: Severity) -> (Severity, Option<Severity>) {
    if severity > ceiling {
        (ceiling, Some(severity))
    } else {
        (severity, None)
    }
}

/// The message with the aggregate's notes appended.
pub fn annotate(message: &str, clamped_from: Option<Severity>, lenses: &[&str]) -> String {
    let mut out = String::with_capacity(message.len() + 48);
    out.push_str(message);
    if let Some(from) = clamped_from {
        out.push_str(" (clamped from ");
        out.push_str(from.as_str());
        out.push(')');
    }
    match lenses {
        [] => {}
        [one] => {
            out.push_str(" (lens: ");
            out.push_str(one);
            out.push(')');
        }
        many => {
            out.push_str(" (lenses: ");
            out.push_str(&many.join(", "));
            out.push(')');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forged_notes_are_stripped() {
        let cases = [
            ("Bad (clamped from error) thing", "Bad thing"),
            ("Bad thing (CLAMPED  FROM info", "Bad thing"),
            ("x (lens: adversarial) y (lenses: a, b)", "x y"),
            ("(clamped from error)", NO_MESSAGE),
            ("line one (Lens : a)\nline two", "line one\nline two"),
        ];
        for (input, want) in cases {
            assert_eq!(strip_forged(input).as_deref(), Some(want), "{input:?}");
        }
        assert_eq!(strip_forged("a lens (of glass) is clamped"), None);
        // What renders like a note is one: a fullwidth parenthesis, an invisible character.
        assert_eq!(
            strip_forged("x \u{FF08}clamped from error\u{FF09} y").as_deref(),
            Some("x y")
        );
        assert_eq!(
            strip_forged("x (clam\u{200B}ped from error) y").as_deref(),
            Some("x y")
        );
    }

    #[test]
    fn clamp_caps_and_says_from_what() {
        assert_eq!(
            clamp(Severity::Error, Severity::Warning),
            (Severity::Warning, Some(Severity::Error))
        );
        assert_eq!(
            clamp(Severity::Info, Severity::Warning),
            (Severity::Info, None)
        );
        assert_eq!(
            annotate("m", Some(Severity::Error), &["a", "b"]),
            "m (clamped from error) (lenses: a, b)"
        );
        // What the aggregate writes is what it strips: a second pass is idempotent.
        assert_eq!(
            strip_forged(&annotate("m", Some(Severity::Error), &["a"])).as_deref(),
            Some("m")
        );
    }
}

//! Shared pieces of the pattern detectors: running a regex with a check, and the checks.

use regex::bytes::Regex;

use super::Found;

/// Appends the matches of `re` in `text` that pass `keep(text, start, end)`.
pub(crate) fn find_with(
    re: &Regex,
    text: &[u8],
    out: &mut Vec<Found>,
    keep: impl Fn(&[u8], usize, usize) -> bool,
) {
    out.extend(
        re.find_iter(text)
            .filter(|m| keep(text, m.start(), m.end()))
            .map(|m| Found {
                range: m.range(),
                secret: None,
            }),
    );
}

/// The match is not glued to a letter or digit on either side.
pub(crate) fn stands_alone(text: &[u8], start: usize, end: usize) -> bool {
    let before = start
        .checked_sub(1)
        .and_then(|i| text.get(i))
        .is_some_and(u8::is_ascii_alphanumeric);
    let after = text.get(end).is_some_and(u8::is_ascii_alphanumeric);
    !before && !after
}

/// Random key material mixes upper case, lower case and digits; words and identifiers rarely do.
pub(crate) fn looks_random(body: &[u8]) -> bool {
    body.iter().any(u8::is_ascii_uppercase)
        && body.iter().any(u8::is_ascii_lowercase)
        && body.iter().any(u8::is_ascii_digit)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alone() {
        assert!(stands_alone(b"x ab y", 2, 4));
        assert!(stands_alone(b"ab", 0, 2));
        assert!(!stands_alone(b"xab", 1, 3));
        assert!(!stands_alone(b"abx", 0, 2));
        assert!(stands_alone(b"_ab-", 1, 3));
    }
}

//! Paths as git writes them in diff headers: plain, or C-quoted when they hold special bytes.

/// Reads a C-quoted string at the start of `s` (which starts with `"`). Returns the unescaped
/// bytes and the rest after the closing quote.
pub(crate) fn unquote(s: &[u8]) -> Option<(Vec<u8>, &[u8])> {
    let mut out = Vec::new();
    let mut i = 1;
    if s.first() != Some(&b'"') {
        return None;
    }
    while i < s.len() {
        match s[i] {
            b'"' => return Some((out, &s[i + 1..])),
            b'\\' => {
                let c = *s.get(i + 1)?;
                i += 2;
                let b = match c {
                    b'a' => 0x07,
                    b'b' => 0x08,
                    b't' => b'\t',
                    b'n' => b'\n',
                    b'v' => 0x0b,
                    b'f' => 0x0c,
                    b'r' => b'\r',
                    b'"' => b'"',
                    b'\\' => b'\\',
                    b'0'..=b'3' => {
                        // Three octal digits, the first one already read.
                        let d1 = octal(*s.get(i)?)?;
                        let d2 = octal(*s.get(i + 1)?)?;
                        i += 2;
                        ((c - b'0') << 6) | (d1 << 3) | d2
                    }
                    _ => return None,
                };
                out.push(b);
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    None
}

fn octal(b: u8) -> Option<u8> {
    matches!(b, b'0'..=b'7').then(|| b - b'0')
}

/// The path of a `---`/`+++` line (after the marker and space). `None` stands for `/dev/null`;
/// `Err(())` for a quoted path that does not parse.
pub(crate) fn marker_path(s: &[u8], prefix: &[u8]) -> Result<Option<String>, ()> {
    let raw = if s.first() == Some(&b'"') {
        unquote(s).ok_or(())?.0
    } else {
        // Git appends a tab to names holding a space; traditional diffs put a timestamp there.
        let end = s.iter().position(|&b| b == b'\t').unwrap_or(s.len());
        s[..end].to_vec()
    };
    if raw == b"/dev/null" {
        return Ok(None);
    }
    Ok(Some(lossy(strip_prefix(&raw, prefix))))
}

/// A path from `rename from`, `copy to` and similar lines: no prefix, maybe quoted.
pub(crate) fn bare_path(s: &[u8]) -> Result<String, ()> {
    if s.first() == Some(&b'"') {
        Ok(lossy(&unquote(s).ok_or(())?.0))
    } else {
        Ok(lossy(s))
    }
}

/// The two paths of `diff --git <a> <b>`, prefixes removed. Unquoted names that hold spaces
/// are ambiguous; git's own rule applies (both sides name the same file), then a split at
/// ` b/`. Renames are read from their `rename from/to` lines instead, so a guess here is only
/// a fallback.
pub(crate) fn git_header_paths(s: &[u8]) -> Option<(String, String)> {
    let (a, rest) = if s.first() == Some(&b'"') {
        let (a, rest) = unquote(s)?;
        (a, rest.strip_prefix(b" ")?.to_vec())
    } else if s.last() == Some(&b'"') {
        let split = find_last(s, b" \"")?;
        (s[..split].to_vec(), s[split + 1..].to_vec())
    } else {
        let (a, b) = split_unquoted(s)?;
        (a.to_vec(), b.to_vec())
    };
    let b = if rest.first() == Some(&b'"') {
        unquote(&rest)?.0
    } else {
        rest
    };
    Some((
        lossy(strip_prefix(&a, b"a/")),
        lossy(strip_prefix(&b, b"b/")),
    ))
}

fn split_unquoted(s: &[u8]) -> Option<(&[u8], &[u8])> {
    // Same name on both sides: "a/N b/N".
    if s.len() >= 5 && (s.len() - 1).is_multiple_of(2) {
        let half = (s.len() - 1) / 2;
        let (a, b) = (&s[..half], &s[half + 1..]);
        if s[half] == b' ' && a.starts_with(b"a/") && b.starts_with(b"b/") && a[2..] == b[2..] {
            return Some((a, b));
        }
    }
    if let Some(i) = find(s, b" b/") {
        return Some((&s[..i], &s[i + 1..]));
    }
    let i = s.iter().position(|&b| b == b' ')?;
    Some((&s[..i], &s[i + 1..]))
}

fn strip_prefix<'a>(s: &'a [u8], prefix: &[u8]) -> &'a [u8] {
    s.strip_prefix(prefix).unwrap_or(s)
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

fn find_last(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).rposition(|w| w == needle)
}

fn lossy(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unquotes_escapes_and_octal() {
        let (v, rest) = unquote(br#""a/tab\there \303\251\"q\\" tail"#).unwrap();
        assert_eq!(v, "a/tab\there é\"q\\".as_bytes());
        assert_eq!(rest, b" tail");
    }

    #[test]
    fn rejects_broken_quotes() {
        assert!(unquote(br#""open"#).is_none());
        assert!(unquote(br#""bad\q""#).is_none());
        assert!(unquote(br#""oct\39""#).is_none());
        assert!(unquote(br#""end\"#).is_none());
    }

    #[test]
    fn header_paths() {
        let cases: &[(&[u8], &str, &str)] = &[
            (b"a/x.rs b/x.rs", "x.rs", "x.rs"),
            (b"a/sp ace b/sp ace", "sp ace", "sp ace"),
            (b"a/old name b/new name", "old name", "new name"),
            (br#""a/t\tb" "b/t\tb""#, "t\tb", "t\tb"),
            (br#"a/plain "b/qu\"ote""#, "plain", "qu\"ote"),
        ];
        for (input, a, b) in cases {
            let (pa, pb) = git_header_paths(input).unwrap();
            assert_eq!((pa.as_str(), pb.as_str()), (*a, *b), "{:?}", input);
        }
    }

    #[test]
    fn marker_paths() {
        assert_eq!(marker_path(b"/dev/null", b"a/"), Ok(None));
        assert_eq!(
            marker_path(b"a/sp ace.txt\t", b"a/"),
            Ok(Some("sp ace.txt".into()))
        );
        assert_eq!(
            marker_path(br#""b/caf\303\251""#, b"b/"),
            Ok(Some("café".into()))
        );
        assert_eq!(marker_path(br#""b/broken"#, b"b/"), Err(()));
    }
}

//! The byte strings searched for on behalf of one secret value.
//!
//! A secret leaks in more shapes than its exact bytes: a value read from a file often carries a
//! trailing newline, tools print credentials base64-encoded (HTTP basic auth, Kubernetes
//! manifests, JWT-like envelopes), and JSON output escapes newlines and quotes. git keeps a token
//! as the HTTP basic credentials `x-access-token:<token>`, base64-encoded in an `Authorization`
//! header (`http.<url>.extraheader`): that whole encoding is a pattern too.

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
use zeroize::Zeroizing;

/// The user names under which git sends a token as HTTP basic credentials (`user:token`).
const BASIC_USERS: &[&[u8]] = &[b"x-access-token"];

/// Values (after trimming) shorter than this are not redacted.
///
/// One to three bytes ("1", "yes", "dev") occur all over ordinary output: replacing them would
/// mangle every line while hiding nothing an observer could not guess anyway. The pipeline's
/// `min-bytes` and the static checks are where such a weak secret is refused.
pub const MIN_SECRET_LEN: usize = 4;

/// Every pattern for `value`, at least [`MIN_SECRET_LEN`] long, without duplicates; empty when
/// the trimmed value is too short.
///
/// The untrimmed value itself is not a pattern: it contains the trimmed value, so each of its
/// occurrences is already covered, and leaving the surrounding whitespace in place keeps the
/// line structure of the output (a value ending in `\n` would otherwise swallow a line break).
pub(super) fn variants(value: &[u8]) -> Vec<Zeroizing<Vec<u8>>> {
    let trimmed = value.trim_ascii();
    if trimmed.len() < MIN_SECRET_LEN {
        return Vec::new();
    }
    let mut out: Vec<Zeroizing<Vec<u8>>> = Vec::new();
    let mut add = |pattern: Zeroizing<Vec<u8>>| {
        if pattern.len() >= MIN_SECRET_LEN && !out.contains(&pattern) {
            out.push(pattern);
        }
    };
    add(Zeroizing::new(trimmed.to_vec()));
    if let Some(escaped) = json_escaped(trimmed) {
        add(escaped);
    }
    let sources: &[&[u8]] = if value == trimmed {
        &[trimmed]
    } else {
        &[trimmed, value]
    };
    // The whole credential, so that no character of the header that depends on the value
    // survives around the embedded encoding below.
    for user in BASIC_USERS {
        let mut credential = Zeroizing::new(Vec::with_capacity(user.len() + 1 + trimmed.len()));
        credential.extend_from_slice(user);
        credential.push(b':');
        credential.extend_from_slice(trimmed);
        for engine in [STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD] {
            add(Zeroizing::new(engine.encode(&*credential).into_bytes()));
        }
    }
    for source in sources {
        for padded in [STANDARD, URL_SAFE] {
            add(Zeroizing::new(padded.encode(source).into_bytes()));
        }
        for unpadded in [STANDARD_NO_PAD, URL_SAFE_NO_PAD] {
            add(Zeroizing::new(unpadded.encode(source).into_bytes()));
            for offset in 0..3 {
                add(embedded_base64(&unpadded, source, offset));
            }
        }
    }
    out
}

/// The characters of base64 that depend only on `source` when it sits `offset` bytes (mod 3)
/// into a longer encoded blob, e.g. the password in `base64("user:password")`.
///
/// Character `i` of an encoding covers bits `6i..6i+6`; the source occupies bits
/// `8·offset..8·(offset+n)`, so the characters fully inside it are
/// `ceil(8·offset/6)..floor(8·(offset+n)/6)`.
fn embedded_base64(
    engine: &base64::engine::GeneralPurpose,
    source: &[u8],
    offset: usize,
) -> Zeroizing<Vec<u8>> {
    let mut shifted = Zeroizing::new(vec![0u8; offset]);
    shifted.extend_from_slice(source);
    let encoded = Zeroizing::new(engine.encode(&*shifted).into_bytes());
    let start = (8 * offset).div_ceil(6);
    let end = (8 * (offset + source.len())) / 6;
    Zeroizing::new(encoded.get(start..end).unwrap_or_default().to_vec())
}

/// The value as it appears inside a JSON string, if that differs from the raw bytes.
fn json_escaped(value: &[u8]) -> Option<Zeroizing<Vec<u8>>> {
    let needs = |b: u8| b < 0x20 || b == b'"' || b == b'\\';
    if !value.iter().any(|&b| needs(b)) {
        return None;
    }
    let mut out = Zeroizing::new(Vec::with_capacity(value.len() + 8));
    for &b in value {
        match b {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            b if b < 0x20 => out.extend_from_slice(format!("\\u{b:04x}").as_bytes()),
            b => out.push(b),
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn contains(patterns: &[Zeroizing<Vec<u8>>], needle: &[u8]) -> bool {
        patterns.iter().any(|p| p.as_slice() == needle)
    }

    #[test]
    fn short_values_have_no_patterns() {
        assert!(variants(b"abc").is_empty());
        assert!(variants(b"  ab \n").is_empty());
        assert!(!variants(b"abcd").is_empty());
    }

    #[test]
    fn includes_trimmed_and_encodings() {
        let p = variants(b"s3cr3t-value\n");
        assert!(contains(&p, b"s3cr3t-value"));
        assert!(!contains(&p, b"s3cr3t-value\n"));
        assert!(contains(&p, STANDARD.encode("s3cr3t-value").as_bytes()));
        assert!(contains(&p, STANDARD.encode("s3cr3t-value\n").as_bytes()));
        assert!(contains(
            &p,
            URL_SAFE_NO_PAD.encode("s3cr3t-value").as_bytes()
        ));
    }

    #[test]
    fn embedded_encoding_is_found_in_a_longer_blob() {
        let secret = b"Zm9vYmFy-\xfb\xff-secret";
        let p = variants(secret);
        for prefix in ["", "a", "ab", "abc", "user:"] {
            let mut whole = prefix.as_bytes().to_vec();
            whole.extend_from_slice(secret);
            whole.extend_from_slice(b"@tail");
            for engine in [STANDARD, URL_SAFE] {
                let blob = engine.encode(&whole);
                assert!(
                    p.iter()
                        .any(|pat| blob.as_bytes().windows(pat.len()).any(|w| w == &pat[..])),
                    "prefix {prefix:?}"
                );
            }
        }
    }

    #[test]
    fn git_basic_credentials_are_a_pattern_whole() {
        let token = b"ghs_FAKE0123456789abcdefghijklmnopqrstuv";
        let p = variants(token);
        let header = STANDARD.encode(b"x-access-token:ghs_FAKE0123456789abcdefghijklmnopqrstuv");
        assert!(contains(&p, header.as_bytes()));
        assert!(contains(&p, header.trim_end_matches('=').as_bytes()));
        // A value read with its newline: the credential is built from the trimmed value.
        assert!(contains(
            &variants(b"ghs_FAKE0123456789abcdefghijklmnopqrstuv\n"),
            header.as_bytes()
        ));
    }

    /// The header git keeps for a persisted token leaves nothing of the token behind: no
    /// character next to the marker depends on it.
    #[test]
    fn a_git_extraheader_is_redacted_whole() {
        let token = "ghs_FAKE0123456789abcdefghijklmnopqrstuvw";
        let redactor =
            crate::exec::redact::Redactor::new([("forge-token", token)]).expect("a redactor");
        for engine in [STANDARD, STANDARD_NO_PAD] {
            let encoded = engine.encode(format!("x-access-token:{token}"));
            let line = format!("\textraheader = AUTHORIZATION: basic {encoded}\n");
            let redacted = redactor.redact(line.as_bytes());
            assert_eq!(
                String::from_utf8_lossy(&redacted),
                "\textraheader = AUTHORIZATION: basic [redacted:forge-token]\n"
            );
        }
    }

    #[test]
    fn json_escape_of_multiline_value() {
        let p = variants(b"line1\nline\"2\"");
        assert!(contains(&p, br#"line1\nline\"2\""#));
    }
}

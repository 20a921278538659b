//! The run's own secret values, plain and base64-encoded (the forms are listed in the module
//! documentation of [`super`]).
//!
//! All forms of all secrets are searched in one pass with Aho-Corasick, leftmost-longest and
//! without overlaps (which lets it use its SIMD prefilter): where the values of two secrets
//! overlap in the text (or two secrets share a value), one match is reported: the longer one,
//! else the first secret's. The needles are held in zeroizing buffers; the automaton's internal
//! copy cannot be zeroed and lives only as long as one call.

use aho_corasick::{AhoCorasick, MatchKind};
use base64::Engine;
use base64::engine::GeneralPurpose;
use base64::engine::general_purpose::{STANDARD_NO_PAD, URL_SAFE_NO_PAD};
use zeroize::Zeroizing;

use super::{Detector, DetectorId, Found, NamedSecret};

pub struct SecretValue;

impl Detector for SecretValue {
    fn id(&self) -> DetectorId {
        DetectorId::SecretValue
    }

    fn label(&self) -> &'static str {
        "the value of a secret"
    }

    fn find(&self, text: &[u8], secrets: &[NamedSecret], out: &mut Vec<Found>) {
        let needles = needles(secrets);
        if needles.is_empty() {
            return;
        }
        let mut found: Vec<(usize, usize, usize)> = Vec::new();
        let patterns: Vec<&[u8]> = needles.iter().map(|n| n.bytes.as_slice()).collect();
        match AhoCorasick::builder()
            .match_kind(MatchKind::LeftmostLongest)
            .build(&patterns)
        {
            Ok(ac) => {
                for m in ac.find_iter(text) {
                    let n = &needles[m.pattern().as_usize()];
                    found.push((n.secret, m.start(), extend(text, m.end(), n.base64)));
                }
            }
            // Only an automaton too large to build fails; fall back to one search per needle.
            Err(_) => {
                for n in &needles {
                    let len = n.bytes.len();
                    for i in memchr::memmem::find_iter(text, n.bytes.as_slice()) {
                        found.push((n.secret, i, extend(text, i + len, n.base64)));
                    }
                }
            }
        }
        out.extend(
            outermost(found)
                .into_iter()
                .map(|(secret, start, end)| Found {
                    range: start..end,
                    secret: Some(secret),
                }),
        );
    }
}

struct Needle {
    secret: usize,
    bytes: Zeroizing<Vec<u8>>,
    base64: bool,
}

/// Every searched form of every searchable secret, without duplicates per secret.
fn needles(secrets: &[NamedSecret]) -> Vec<Needle> {
    let mut out: Vec<Needle> = Vec::new();
    for (i, s) in secrets.iter().enumerate() {
        if !s.is_searchable() {
            continue;
        }
        let mut forms = vec![s.expose()];
        if s.trimmed() != s.expose() {
            forms.push(s.trimmed());
        }
        let mut push = |bytes: Zeroizing<Vec<u8>>, base64: bool| {
            let dup = out
                .iter()
                .any(|n| n.secret == i && n.bytes.as_slice() == bytes.as_slice());
            if !bytes.is_empty() && !dup {
                out.push(Needle {
                    secret: i,
                    bytes,
                    base64,
                });
            }
        };
        for form in forms {
            push(Zeroizing::new(form.to_vec()), false);
            for engine in [&STANDARD_NO_PAD, &URL_SAFE_NO_PAD] {
                push(encode(engine, form), true);
                for align in 0..3 {
                    push(embedded(engine, form, align), true);
                }
            }
        }
    }
    out
}

fn encode(engine: &GeneralPurpose, value: &[u8]) -> Zeroizing<Vec<u8>> {
    Zeroizing::new(engine.encode(value).into_bytes())
}

/// The base64 characters that depend on `value` alone when it sits `align` bytes into a
/// 3-byte group of a longer stream: drop the characters that share bits with the bytes before
/// and after it.
fn embedded(engine: &GeneralPurpose, value: &[u8], align: usize) -> Zeroizing<Vec<u8>> {
    let mut padded = Zeroizing::new(vec![0u8; align]);
    padded.extend_from_slice(value);
    let chars = encode(engine, &padded);
    let first = (align * 8).div_ceil(6);
    let last = ((align + value.len()) * 8) / 6;
    Zeroizing::new(chars.get(first..last).unwrap_or(&[]).to_vec())
}

/// Takes in the `=` padding that may follow a standalone base64 form.
fn extend(text: &[u8], end: usize, base64: bool) -> usize {
    if !base64 {
        return end;
    }
    end + text[end..]
        .iter()
        .take(2)
        .take_while(|&&b| b == b'=')
        .count()
}

/// Drops matches that lie inside a longer match of the same secret (the embedded form inside
/// the standalone one, the trimmed value inside the untrimmed one).
fn outermost(mut found: Vec<(usize, usize, usize)>) -> Vec<(usize, usize, usize)> {
    found.sort_by_key(|&(secret, start, end)| (secret, start, std::cmp::Reverse(end)));
    let mut kept: Vec<(usize, usize, usize)> = Vec::new();
    let mut reach: Option<(usize, usize)> = None;
    for (secret, start, end) in found {
        match reach {
            Some((s, e)) if s == secret && end <= e => continue,
            _ => {
                kept.push((secret, start, end));
                reach = Some((
                    secret,
                    end.max(reach.filter(|r| r.0 == secret).map_or(0, |r| r.1)),
                ));
            }
        }
    }
    kept
}

#[cfg(test)]
mod tests {
    use super::super::{DetectorId, Hit, NamedSecret, scan};
    use super::*;

    const VALUE: &[u8] = b"FAKE-secret-value-0123";

    fn secrets() -> Vec<NamedSecret> {
        vec![NamedSecret::new("fake-key", VALUE.to_vec())]
    }

    fn scan_value(text: &[u8]) -> Vec<Hit> {
        scan(text, &secrets(), &[DetectorId::SecretValue])
    }

    #[test]
    fn finds_the_plain_value() {
        let hits = scan_value(b"line one\nkey = FAKE-secret-value-0123;\n");
        assert_eq!(hits.len(), 1);
        let h = &hits[0];
        assert_eq!((h.line, h.column), (2, 7));
        assert_eq!(h.byte_range, 15..15 + VALUE.len());
        assert_eq!(h.secret_name.as_deref(), Some("fake-key"));
    }

    #[test]
    fn finds_base64_forms_with_their_padding() {
        for engine in [&STANDARD_NO_PAD, &URL_SAFE_NO_PAD] {
            let enc = engine.encode(VALUE);
            for text in [format!("x {enc} y"), format!("x {enc}== y")] {
                let hits = scan_value(text.as_bytes());
                assert_eq!(hits.len(), 1, "{text}");
                assert_eq!(
                    &text[hits[0].byte_range.clone()],
                    text[2..].trim_end_matches(" y")
                );
            }
        }
    }

    #[test]
    fn finds_the_value_inside_a_longer_base64_stream() {
        for before in 0..6 {
            for after in 0..4 {
                let mut plain = vec![b'#'; before];
                plain.extend_from_slice(VALUE);
                plain.extend(std::iter::repeat_n(b'!', after));
                let text = STANDARD_NO_PAD.encode(&plain);
                assert_eq!(scan_value(text.as_bytes()).len(), 1, "{before} {after}");
            }
        }
    }

    #[test]
    fn finds_trimmed_and_binary_values() {
        let s = vec![NamedSecret::new(
            "from-file",
            b"  0123456789abcdef\n".to_vec(),
        )];
        let hits = scan(b"token=0123456789abcdef", &s, &[DetectorId::SecretValue]);
        assert_eq!(hits.len(), 1);
        let bin = vec![NamedSecret::new(
            "raw",
            vec![0xff, 0x00, 0xfe, 0x01, 0x80, 0x7f, 0x10, 0x21],
        )];
        let mut text = b"\x00\x01garbage".to_vec();
        text.extend_from_slice(&[0xff, 0x00, 0xfe, 0x01, 0x80, 0x7f, 0x10, 0x21]);
        assert_eq!(scan(&text, &bin, &[DetectorId::SecretValue]).len(), 1);
    }

    #[test]
    fn short_and_absent_values_are_not_found() {
        let s = vec![NamedSecret::new("short", b"abc".to_vec())];
        assert!(scan(b"abc abc abc", &s, &[DetectorId::SecretValue]).is_empty());
        assert!(scan_value(b"FAKE-secret-value-012").is_empty());
        assert!(scan_value(b"").is_empty());
    }

    #[test]
    fn several_secrets_are_told_apart() {
        let s = vec![
            NamedSecret::new("first", b"first-FAKE-value".to_vec()),
            NamedSecret::new("second", b"second-FAKE-value".to_vec()),
        ];
        let hits = scan(
            b"second-FAKE-value first-FAKE-value",
            &s,
            &[DetectorId::SecretValue],
        );
        let names: Vec<_> = hits.iter().map(|h| h.secret_name.as_deref()).collect();
        assert_eq!(names, vec![Some("second"), Some("first")]);
    }

    #[test]
    fn embedded_needles_have_the_expected_length() {
        // 22 bytes = 176 bits: 29 full characters at alignments 0 and 2, 28 at 1.
        let lens: Vec<_> = (0..3)
            .map(|a| embedded(&STANDARD_NO_PAD, VALUE, a).len())
            .collect();
        assert_eq!(lens, vec![29, 28, 29]);
    }
}

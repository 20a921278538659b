//! Private key blocks: PEM (`-----BEGIN [RSA |EC |DSA |OPENSSH |ENCRYPTED ]PRIVATE KEY-----`)
//! and `-----BEGIN PGP PRIVATE KEY BLOCK-----`.
//!
//! A header alone is not a key: code that parses keys names the header too. So a run of base64
//! must follow within [`BODY_WINDOW`] bytes (encrypted PEM and PGP put a few header lines
//! first). In a JSON-escaped text (`\n`) the run still counts. The hit spans the whole block when
//! its END line is within [`END_WINDOW`] bytes, so that a caller redacting by range removes all
//! of it.

use std::sync::LazyLock;

use regex::bytes::Regex;

use super::{Detector, DetectorId, Found, NamedSecret};

static RE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?-u)-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----")
        .expect("static pattern compiles")
});

const BODY_WINDOW: usize = 1024;
/// Base64 lines of PEM are 64 characters, of OpenSSH keys 70.
const MIN_RUN: usize = 40;
/// An RSA 16384-bit key is about 12 KiB of PEM.
const END_WINDOW: usize = 64 * 1024;

pub struct PrivateKey;

impl Detector for PrivateKey {
    fn id(&self) -> DetectorId {
        DetectorId::PrivateKey
    }

    fn label(&self) -> &'static str {
        "a private key"
    }

    fn find(&self, text: &[u8], _: &[NamedSecret], out: &mut Vec<Found>) {
        for m in RE.find_iter(text) {
            let after = &text[m.end()..];
            let Some(run_end) = base64_run(&after[..after.len().min(BODY_WINDOW)]) else {
                continue;
            };
            let end = block_end(&after[..after.len().min(END_WINDOW)]).unwrap_or(run_end);
            out.push(Found {
                range: m.start()..m.end() + end,
                secret: None,
            });
        }
    }
}

/// The end of the first run of at least [`MIN_RUN`] base64 characters.
fn base64_run(s: &[u8]) -> Option<usize> {
    let mut len = 0;
    for (i, &b) in s.iter().enumerate() {
        if b.is_ascii_alphanumeric() || b == b'+' || b == b'/' || b == b'=' {
            len += 1;
            if len >= MIN_RUN {
                let rest = s[i..]
                    .iter()
                    .take_while(|&&c| {
                        c.is_ascii_alphanumeric() || c == b'+' || c == b'/' || c == b'='
                    })
                    .count();
                return Some(i + rest);
            }
        } else {
            len = 0;
        }
    }
    None
}

/// The end of `-----END …-----`, if present.
fn block_end(s: &[u8]) -> Option<usize> {
    let start = memchr::memmem::find(s, b"-----END ")?;
    let close = memchr::memmem::find(&s[start + 9..], b"-----")?;
    Some(start + 9 + close + 5)
}

#[cfg(test)]
mod tests {
    use super::super::{DetectorId, scan};

    const BODY: &str = "FAKEKEYFAKEKEYFAKEKEYFAKEKEYFAKEKEYFAKEKEYFAKEKEYFAKEKEYFAKEKEY0";

    fn found(text: &str) -> Vec<std::ops::Range<usize>> {
        scan(text.as_bytes(), &[], &[DetectorId::PrivateKey])
            .into_iter()
            .map(|h| h.byte_range)
            .collect()
    }

    #[test]
    fn finds_every_kind() {
        for kind in ["", "RSA ", "EC ", "DSA ", "OPENSSH ", "ENCRYPTED "] {
            let block = format!(
                "-----BEGIN {kind}PRIVATE KEY-----\n{BODY}\n{BODY}\n-----END {kind}PRIVATE KEY-----"
            );
            let text = format!("x\n{block}\ny");
            assert_eq!(found(&text), vec![2..2 + block.len()], "{kind}");
        }
        let pgp = format!(
            "-----BEGIN PGP PRIVATE KEY BLOCK-----\nVersion: Fake 1\n\n{BODY}\n=AbCd\n-----END PGP PRIVATE KEY BLOCK-----\n"
        );
        assert_eq!(found(&pgp).len(), 1);
    }

    #[test]
    fn json_escaped_and_unterminated() {
        let json = format!("{{\"text\":\"-----BEGIN RSA PRIVATE KEY-----\\n{BODY}\\n\"}}");
        let hits = found(&json);
        assert_eq!(hits.len(), 1);
        assert!(hits[0].end > json.find(BODY).unwrap());
    }

    #[test]
    fn near_misses() {
        assert!(
            found("if line == \"-----BEGIN RSA PRIVATE KEY-----\" {\n    parse()\n}").is_empty()
        );
        assert!(found(&format!("-----BEGIN PUBLIC KEY-----\n{BODY}\n")).is_empty());
        assert!(found(&format!("-----BEGIN CERTIFICATE-----\n{BODY}\n")).is_empty());
        assert!(found(&format!("-----BEGIN private key-----\n{BODY}\n")).is_empty());
    }
}

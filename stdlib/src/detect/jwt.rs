//! JSON Web Tokens: `header.payload.signature`, three base64url segments.
//!
//! The header must decode to a JSON object with a string `"alg"`: many dotted base64 strings
//! exist, few of them start with a JWT header. The signature must be at least 16 characters
//! (the smallest real one, HS256, has 43): an unsigned `alg: none` token grants nothing.

use std::sync::LazyLock;

use base64::Engine;
use base64::alphabet;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use regex::bytes::Regex;

use super::{Detector, DetectorId, Found, NamedSecret};

/// `e[wy]` is how base64 of `{"`, `{ ` and `{\n` starts.
static RE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?-u)e[wy][A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{2,}\.[A-Za-z0-9_-]{16,}")
        .expect("static pattern compiles")
});

/// Headers are unpadded base64url; tolerate padding and loose trailing bits.
const LENIENT: GeneralPurpose = GeneralPurpose::new(
    &alphabet::URL_SAFE,
    GeneralPurposeConfig::new()
        .with_decode_padding_mode(DecodePaddingMode::Indifferent)
        .with_decode_allow_trailing_bits(true),
);

/// Longer headers are not JWT headers; the bound keeps decoding cheap on hostile input.
const MAX_HEADER: usize = 2048;

pub struct Jwt;

impl Detector for Jwt {
    fn id(&self) -> DetectorId {
        DetectorId::Jwt
    }

    fn label(&self) -> &'static str {
        "a JSON Web Token"
    }

    fn find(&self, text: &[u8], _: &[NamedSecret], out: &mut Vec<Found>) {
        for m in RE.find_iter(text) {
            let glued = m
                .start()
                .checked_sub(1)
                .and_then(|i| text.get(i))
                .is_some_and(|&b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
            let header = m.as_bytes().split(|&b| b == b'.').next().unwrap_or(&[]);
            if !glued && has_alg(header) {
                out.push(Found {
                    range: m.range(),
                    secret: None,
                });
            }
        }
    }
}

fn has_alg(header: &[u8]) -> bool {
    if header.len() > MAX_HEADER {
        return false;
    }
    let Ok(json) = LENIENT.decode(header) else {
        return false;
    };
    match serde_json::from_slice::<serde_json::Value>(&json) {
        Ok(serde_json::Value::Object(map)) => map.get("alg").is_some_and(|a| a.is_string()),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::super::{DetectorId, scan};
    use base64::Engine;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;

    fn b64(s: &str) -> String {
        URL_SAFE_NO_PAD.encode(s)
    }

    fn token(header: &str, sig: &str) -> String {
        format!(
            "{}.{}.{sig}",
            b64(header),
            b64(r#"{"sub":"fake-user","iat":0}"#)
        )
    }

    const SIG: &str = "FAKE-signature_0123456789abcdefFAKE";

    fn hits(text: &str) -> usize {
        scan(text.as_bytes(), &[], &[DetectorId::Jwt]).len()
    }

    #[test]
    fn finds_tokens() {
        let t = token(r#"{"alg":"HS256","typ":"JWT"}"#, SIG);
        assert_eq!(hits(&format!("Authorization: Bearer {t}")), 1);
        assert_eq!(
            hits(&token("{\n  \"alg\": \"RS256\"\n}", SIG)),
            1,
            "spaced header"
        );
        assert_eq!(hits(&format!("\"{t}\",\"{t}\"")), 2);
    }

    #[test]
    fn near_misses() {
        assert_eq!(hits(&token(r#"{"typ":"JWT"}"#, SIG)), 0, "no alg");
        assert_eq!(hits(&token(r#"{"alg":256}"#, SIG)), 0, "alg not a string");
        assert_eq!(hits(&token(r#"{"alg":"none"}"#, "")), 0, "unsigned");
        assert_eq!(
            hits(&token(r#"{"alg":"HS256"}"#, "short")),
            0,
            "short signature"
        );
        assert_eq!(hits(&format!("{}.x.{SIG}", b64(r#"{"alg":"HS256"}"#))), 0);
        assert_eq!(hits("eyJhbGciOiJIUzI1NiJ9"), 0, "a header alone");
        assert_eq!(
            hits("eyJub3QganNvbg.eyJzdWIiOiJ4In0.abcdefghijklmnopqrstuvwxyz"),
            0
        );
        let t = token(r#"{"alg":"HS256"}"#, SIG);
        assert_eq!(hits(&format!("x{t}")), 0, "glued to a word");
        assert_eq!(hits("www.eyeglasses.example.com.and.more"), 0);
    }
}

//! AWS access keys, both halves of the pair:
//!
//! - access key ids: `AKIA` (long-term) and `ASIA` (temporary) + 16 upper-case letters and
//!   digits;
//! - secret access keys: 40 characters of standard base64 (`A-Z a-z 0-9 / +`). Forty such
//!   characters alone are any hash or blob, so a secret key is only found where it is named: right
//!   after a name that says it is one (`aws_secret_access_key`, `AWS_SECRET_ACCESS_KEY`,
//!   `SecretAccessKey`, `secret-access-key`, any case), separated from it by 1 to 8 quotes,
//!   blanks, `:`, `=` or `>` (`key = "…"`, `"SecretAccessKey": "…"`, `<SecretAccessKey>…`,
//!   `--aws-secret-access-key …`). The 40 characters must stand alone (no base64 character or `=`
//!   right after them) and look random: upper case, lower case, and a digit, `/` or `+`. The hit
//!   is the key, not its name.

use std::sync::LazyLock;

use regex::bytes::Regex;

use super::pattern::{find_with, stands_alone};
use super::{Detector, DetectorId, Found, NamedSecret};

static KEY_ID: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?-u)(?:AKIA|ASIA)[A-Z0-9]{16}").expect("static pattern compiles")
});

/// The name, the separator, then the key in group 1 (its end is checked in [`secret_key_ends`]:
/// the regex crate has no look-ahead).
static SECRET_KEY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?-u)(?i:secret[_.-]?access[_.-]?key)["'`\s:=>]{1,8}([A-Za-z0-9/+]{40})"#)
        .expect("static pattern compiles")
});

fn is_base64(b: &u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'/' | b'+' | b'=')
}

/// The key is exactly 40 characters: nothing of base64 continues it.
fn secret_key_ends(text: &[u8], end: usize) -> bool {
    !text.get(end).is_some_and(is_base64)
}

/// A generated key mixes cases and has a digit or `/` or `+`; a placeholder
/// (`xxxx…`, `YOUR_SECRET_ACCESS_KEY_GOES_HERE…`) does not.
fn looks_random(key: &[u8]) -> bool {
    key.iter().any(u8::is_ascii_uppercase)
        && key.iter().any(u8::is_ascii_lowercase)
        && key
            .iter()
            .any(|b| b.is_ascii_digit() || matches!(b, b'/' | b'+'))
}

pub struct Aws;

impl Detector for Aws {
    fn id(&self) -> DetectorId {
        DetectorId::Aws
    }

    fn label(&self) -> &'static str {
        "an AWS access key"
    }

    fn find(&self, text: &[u8], _: &[NamedSecret], out: &mut Vec<Found>) {
        find_with(&KEY_ID, text, out, stands_alone);
        for caps in SECRET_KEY.captures_iter(text) {
            let Some(key) = caps.get(1) else { continue };
            if secret_key_ends(text, key.end()) && looks_random(key.as_bytes()) {
                out.push(Found {
                    range: key.range(),
                    secret: None,
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{DetectorId, scan};

    fn hits(text: &str) -> usize {
        scan(text.as_bytes(), &[], &[DetectorId::Aws]).len()
    }

    /// Where the hit is, as the text it covers.
    fn hit(text: &str) -> Vec<&str> {
        scan(text.as_bytes(), &[], &[DetectorId::Aws])
            .iter()
            .map(|h| &text[h.byte_range.clone()])
            .collect()
    }

    /// Synthetic: 40 characters of the key alphabet, mixed as a generated key is.
    const SECRET: &str = "FAKEfake0123/FAKEfake+0123FAKEfake012345";

    #[test]
    fn finds_key_ids() {
        assert_eq!(hits("aws_access_key_id = AKIAFAKEFAKEFAKE0123"), 1);
        assert_eq!(hits("\"ASIA0123456789FAKEAB\""), 1);
    }

    #[test]
    fn near_misses() {
        assert_eq!(hits("AKIAFAKEFAKEFAKE012"), 0, "15 characters");
        assert_eq!(hits("AKIAFAKEFAKEFAKE01234"), 0, "17 characters");
        assert_eq!(hits("AKIAfakefakefake0123"), 0, "lower case");
        assert_eq!(hits("XAKIAFAKEFAKEFAKE0123"), 0, "glued to a word");
        assert_eq!(hits("AIDAFAKEFAKEFAKE0123"), 0, "a user id, not a key");
        assert_eq!(hits("EURASIA"), 0);
    }

    #[test]
    fn finds_secret_access_keys_after_their_name() {
        assert_eq!(SECRET.len(), 40);
        for text in [
            format!("aws_secret_access_key = {SECRET}"),
            format!("aws_secret_access_key={SECRET}\n"),
            format!("export AWS_SECRET_ACCESS_KEY=\"{SECRET}\""),
            format!("AWS_SECRET_ACCESS_KEY: '{SECRET}'"),
            format!("{{\"SecretAccessKey\": \"{SECRET}\", \"SessionToken\": \"x\"}}"),
            format!("<SecretAccessKey>{SECRET}</SecretAccessKey>"),
            format!("secretAccessKey: {SECRET}"),
            format!("aws configure --aws-secret-access-key {SECRET}"),
            format!("aws.secret.access.key => `{SECRET}`"),
        ] {
            assert_eq!(hit(&text), [SECRET], "{text}");
        }
    }

    #[test]
    fn a_pair_is_two_hits_in_order() {
        let text = format!(
            "[default]\naws_access_key_id = AKIAFAKEFAKEFAKE0123\naws_secret_access_key = {SECRET}\n"
        );
        assert_eq!(hit(&text), ["AKIAFAKEFAKEFAKE0123", SECRET]);
    }

    #[test]
    fn secret_key_near_misses() {
        assert_eq!(hits(SECRET), 0, "no name: any 40 characters of base64");
        assert_eq!(hits(&format!("sha = {SECRET}")), 0, "another name");
        assert_eq!(
            hits(&format!("secret_key = {SECRET}")),
            0,
            "not an access key's name"
        );
        assert_eq!(
            hits(&format!("aws_secret_access_key = {}", &SECRET[1..])),
            0,
            "39 characters"
        );
        assert_eq!(
            hits(&format!("aws_secret_access_key = {SECRET}A")),
            0,
            "41 characters"
        );
        assert_eq!(
            hits(&format!("aws_secret_access_key = {SECRET}==")),
            0,
            "the start of a longer base64 value"
        );
        assert_eq!(
            hits(&format!("aws_secret_access_key_id = {SECRET}")),
            0,
            "a longer name"
        );
        assert_eq!(
            hits(&format!("aws_secret_access_key{SECRET}")),
            0,
            "glued to its name"
        );
        assert_eq!(
            hits(&format!(
                "aws_secret_access_key = {SECRET}",
                SECRET = "x".repeat(40)
            )),
            0,
            "a placeholder"
        );
        assert_eq!(
            hits("aws_secret_access_key = YOUR_SECRET_ACCESS_KEY_GOES_HERE_PLEASE"),
            0,
            "a placeholder in capitals"
        );
        assert_eq!(
            hits("aws_secret_access_key = ${AWS_SECRET_ACCESS_KEY}"),
            0,
            "a reference"
        );
        assert_eq!(
            hits(&format!("aws_secret_access_key = \n\n\n\n\n\n\n\n{SECRET}")),
            0,
            "too far from its name"
        );
    }
}

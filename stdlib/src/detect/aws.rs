//! AWS access key ids: `AKIA` (long-term) and `ASIA` (temporary) + 16 upper-case letters and
//! digits. The id alone is not the secret key, but the secret key is rarely far from it and has
//! no recognisable shape of its own.

use std::sync::LazyLock;

use regex::bytes::Regex;

use super::pattern::{find_with, stands_alone};
use super::{Detector, DetectorId, Found, NamedSecret};

static RE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?-u)(?:AKIA|ASIA)[A-Z0-9]{16}").expect("static pattern compiles")
});

pub struct Aws;

impl Detector for Aws {
    fn id(&self) -> DetectorId {
        DetectorId::Aws
    }

    fn label(&self) -> &'static str {
        "an AWS access key id"
    }

    fn find(&self, text: &[u8], _: &[NamedSecret], out: &mut Vec<Found>) {
        find_with(&RE, text, out, stands_alone);
    }
}

#[cfg(test)]
mod tests {
    use super::super::{DetectorId, scan};

    fn hits(text: &str) -> usize {
        scan(text.as_bytes(), &[], &[DetectorId::Aws]).len()
    }

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
}

//! Anthropic API keys: `sk-ant-<kind><version>-…`, e.g. `sk-ant-api03-`, `sk-ant-admin01-`.

use std::sync::LazyLock;

use regex::bytes::Regex;

use super::pattern::{find_with, looks_random, stands_alone};
use super::{Detector, DetectorId, Found, NamedSecret};

static RE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?-u)sk-ant-[a-z]{2,10}[0-9]{0,3}-([A-Za-z0-9_-]{32,})")
        .expect("static pattern compiles")
});

pub struct Anthropic;

impl Detector for Anthropic {
    fn id(&self) -> DetectorId {
        DetectorId::Anthropic
    }

    fn label(&self) -> &'static str {
        "an Anthropic API key"
    }

    fn find(&self, text: &[u8], _: &[NamedSecret], out: &mut Vec<Found>) {
        find_with(&RE, text, out, |t, s, e| {
            // The body follows the third dash.
            let body = t[s..e].splitn(4, |&b| b == b'-').nth(3).unwrap_or(&[]);
            stands_alone(t, s, e) && looks_random(body)
        });
    }
}

#[cfg(test)]
mod tests {
    use super::super::{DetectorId, scan};

    fn hits(text: &str) -> usize {
        scan(text.as_bytes(), &[], &[DetectorId::Anthropic]).len()
    }

    const BODY: &str =
        "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-_0123456789AA";

    #[test]
    fn finds_keys() {
        assert_eq!(hits(&format!("ANTHROPIC_API_KEY=sk-ant-api03-{BODY}")), 1);
        assert_eq!(hits(&format!("'sk-ant-admin01-{BODY}'")), 1);
    }

    #[test]
    fn near_misses() {
        assert_eq!(hits("sk-ant-api03-0123456789abcdefABCDEF"), 0, "too short");
        assert_eq!(
            hits("sk-ant-api03-this-is-not-a-real-key-just-words-here"),
            0
        );
        assert_eq!(
            hits(&format!("task-ant-api03-{BODY}")),
            0,
            "glued to a word"
        );
        assert_eq!(hits("sk-ant-..."), 0);
    }
}

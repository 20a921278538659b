//! OpenAI API keys: project (`sk-proj-`), service account (`sk-svcacct-`) and admin
//! (`sk-admin-`) keys, legacy `sk-` + 48 letters and digits, and any `sk-` key carrying
//! `T3BlbkFJ` (base64 of "OpenAI"). Anthropic's `sk-ant-` keys are left to their own detector.

use std::sync::LazyLock;

use regex::bytes::Regex;

use super::pattern::{find_with, looks_random, stands_alone};
use super::{Detector, DetectorId, Found, NamedSecret};

static RE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?-u)sk-(?:(?:proj|svcacct|admin)-[A-Za-z0-9_-]{32,}|[A-Za-z0-9_-]{16,}T3BlbkFJ[A-Za-z0-9_-]{16,}|[A-Za-z0-9]{48})",
    )
    .expect("static pattern compiles")
});

pub struct Openai;

impl Detector for Openai {
    fn id(&self) -> DetectorId {
        DetectorId::Openai
    }

    fn label(&self) -> &'static str {
        "an OpenAI API key"
    }

    fn find(&self, text: &[u8], _: &[NamedSecret], out: &mut Vec<Found>) {
        find_with(&RE, text, out, |t, s, e| {
            !t[s..e].starts_with(b"sk-ant-") && stands_alone(t, s, e) && looks_random(&t[s + 3..e])
        });
    }
}

#[cfg(test)]
mod tests {
    use super::super::{DetectorId, scan};

    fn hits(text: &str) -> usize {
        scan(text.as_bytes(), &[], &[DetectorId::Openai]).len()
    }

    const BODY: &str = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKL";

    #[test]
    fn finds_keys() {
        assert_eq!(hits(&format!("OPENAI_API_KEY=sk-proj-{BODY}")), 1);
        assert_eq!(hits(&format!("sk-svcacct-{BODY}-_x")), 1);
        assert_eq!(hits(&format!("sk-admin-{BODY}")), 1);
        assert_eq!(hits(&format!("key: sk-{BODY}")), 1, "legacy 48");
        assert_eq!(hits("sk-FAKEfake0123456789T3BlbkFJfake0123456789FAKE"), 1);
    }

    #[test]
    fn near_misses() {
        let ant = "sk-ant-api03-0123456789abcdefghijklmnopqrstuvwxyzABCDEFT3BlbkFJabcdefghijklmnop";
        assert_eq!(hits(ant), 0, "an Anthropic key");
        assert_eq!(hits(&format!("sk-{}", &BODY[1..])), 0, "47 characters");
        assert_eq!(hits(&format!("sk-{BODY}x")), 0, "49 characters");
        assert_eq!(
            hits("sk-admin-dashboard-settings-panel-config-layout"),
            0,
            "words"
        );
        assert_eq!(hits(&format!("sk-{}", "a1".repeat(24))), 0, "no upper case");
        assert_eq!(hits(&format!("desk-proj-{BODY}")), 0, "glued to a word");
        assert_eq!(hits(&format!("sk_live_{BODY}")), 0, "a Stripe key");
    }
}

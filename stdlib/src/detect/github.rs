//! GitHub tokens: `ghp_` (personal), `gho_` (OAuth), `ghu_` (app user-to-server), `ghs_` (app
//! server-to-server, also the Actions `GITHUB_TOKEN`), `ghr_` (refresh), and fine-grained
//! personal tokens `github_pat_<22>_<59>`. GitHub reserves lengths up to 255 characters.

use std::sync::LazyLock;

use regex::bytes::Regex;

use super::pattern::{find_with, stands_alone};
use super::{Detector, DetectorId, Found, NamedSecret};

static RE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?-u)gh[pousr]_[A-Za-z0-9]{36,251}|github_pat_[A-Za-z0-9_]{82,244}")
        .expect("static pattern compiles")
});

pub struct Github;

impl Detector for Github {
    fn id(&self) -> DetectorId {
        DetectorId::Github
    }

    fn label(&self) -> &'static str {
        "a GitHub token"
    }

    fn find(&self, text: &[u8], _: &[NamedSecret], out: &mut Vec<Found>) {
        find_with(&RE, text, out, stands_alone);
    }
}

#[cfg(test)]
mod tests {
    use super::super::{DetectorId, scan};

    fn hits(text: &str) -> usize {
        scan(text.as_bytes(), &[], &[DetectorId::Github]).len()
    }

    const BODY: &str = "0123456789abcdefghijklmnopqrstuvwxyz";

    #[test]
    fn finds_every_prefix() {
        for p in ["ghp_", "gho_", "ghu_", "ghs_", "ghr_"] {
            assert_eq!(hits(&format!("token = \"{p}{BODY}\"")), 1, "{p}");
        }
        let fine = format!("github_pat_{}_{}", "A".repeat(22), "b".repeat(59));
        assert_eq!(hits(&format!("GH={fine}\n")), 1);
        assert_eq!(hits(&format!("ghp_{BODY}ABCDEFGH")), 1, "longer tokens");
        assert_eq!(hits(&format!("my_ghp_{BODY}")), 1, "after an underscore");
    }

    #[test]
    fn near_misses() {
        assert_eq!(hits(&format!("ghp_{}", &BODY[1..])), 0, "35 characters");
        assert_eq!(hits(&format!("ghx_{BODY}")), 0, "unknown prefix");
        assert_eq!(hits(&format!("xghp_{BODY}")), 0, "glued to a word");
        assert_eq!(hits(&format!("ghp-{BODY}")), 0);
        assert_eq!(
            hits(&format!("ghp_{}", "a".repeat(252))),
            0,
            "over 255 in all"
        );
        assert_eq!(hits(&format!("github_pat_{}", "a".repeat(81))), 0);
        assert_eq!(hits("GITHUB_TOKEN=${{ secrets.GITHUB_TOKEN }}"), 0);
    }
}

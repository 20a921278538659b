//! GitHub tokens: `ghp_` (personal), `gho_` (OAuth), `ghu_` (app user-to-server), `ghs_` (app
//! server-to-server, also the Actions `GITHUB_TOKEN`), `ghr_` (refresh), and fine-grained
//! personal tokens `github_pat_<22>_<59>`. GitHub reserves lengths up to 255 characters.
//!
//! And a token of any shape after `x-access-token:`, the user name under which git sends a token
//! as HTTP basic credentials (in a URL, `https://x-access-token:<token>@github.com/`, or
//! base64-encoded in an `Authorization` header, which [`super::encoded`] decodes).

use std::sync::LazyLock;

use regex::bytes::Regex;

use super::pattern::{find_with, stands_alone};
use super::{Detector, DetectorId, Found, NamedSecret};

static RE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?-u)x-access-token:[A-Za-z0-9_.-]{20,255}|gh[pousr]_[A-Za-z0-9]{36,251}|github_pat_[A-Za-z0-9_]{82,244}",
    )
    .expect("static pattern compiles")
});

/// The user name git sends a token under; what follows it is the token.
const BASIC_USER: &[u8] = b"x-access-token:";

/// Stands alone, and a token after `x-access-token:` has a letter and a digit (a placeholder
/// such as `x-access-token:your-token-goes-here` has none).
fn keep(text: &[u8], start: usize, end: usize) -> bool {
    if !stands_alone(text, start, end) {
        return false;
    }
    match text[start..end].strip_prefix(BASIC_USER) {
        Some(token) => {
            token.iter().any(u8::is_ascii_alphabetic) && token.iter().any(u8::is_ascii_digit)
        }
        None => true,
    }
}

pub struct Github;

impl Detector for Github {
    fn id(&self) -> DetectorId {
        DetectorId::Github
    }

    fn label(&self) -> &'static str {
        "a GitHub token"
    }

    fn find(&self, text: &[u8], _: &[NamedSecret], out: &mut Vec<Found>) {
        find_with(&RE, text, out, keep);
    }
}

#[cfg(test)]
mod tests {
    use base64::Engine as _;

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
    fn a_token_after_git_basic_user_is_one_hit() {
        let url = format!("https://x-access-token:ghs_{BODY}@github.com/acme/widgets");
        let found = scan(url.as_bytes(), &[], &[DetectorId::Github]);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].byte_range.start, "https://".len());
        assert_eq!(
            hits(&format!("x-access-token:v1.{}", "0a".repeat(20))),
            1,
            "any shape"
        );
        assert_eq!(hits("x-access-token:your-token-goes-here-now"), 0);
        assert_eq!(hits("x-access-token:${{ secrets.GITHUB_TOKEN }}"), 0);
        assert_eq!(hits("x-access-token:abc123"), 0, "too short");
    }

    /// git's form of the job's token, as a checkout that persists credentials leaves it.
    #[test]
    fn the_extraheader_form_is_found() {
        let b64 =
            base64::engine::general_purpose::STANDARD.encode(format!("x-access-token:ghs_{BODY}"));
        let header = format!("\textraheader = AUTHORIZATION: basic {b64}\n");
        let found = scan(header.as_bytes(), &[], &[DetectorId::Github]);
        assert_eq!(found.len(), 1, "{found:?}");
        let start = header.find(&b64).expect("in the header");
        assert_eq!(found[0].byte_range, start..start + b64.len());
        assert_eq!(hits(&b64), 1, "bare");
        let whole = base64::engine::general_purpose::STANDARD.encode(&header);
        assert_eq!(hits(&whole), 1, "the whole config encoded");
        let plain = base64::engine::general_purpose::STANDARD.encode(format!("ghs_{BODY}"));
        assert_eq!(hits(&plain), 1, "a token encoded alone");
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

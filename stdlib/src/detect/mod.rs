//! Credential detectors: find what looks like a credential, or the value of one of the run's
//! own secrets, in any bytes (text, binary, a model conversation, a diff).
//!
//! Each detector has a stable id ([`DetectorId`]) and lives in its own file; [`registry`] lists
//! them. [`scan`] runs the enabled ones over a text, one pass each, and returns [`Hit`]s: where a
//! match is and which detector (and which secret) found it, never the matched bytes.
//!
//! | id             | finds |
//! |----------------|-------|
//! | `jwt`          | three base64url segments whose first decodes to a JSON object with a string `"alg"`, and whose signature is at least 16 characters (unsigned `alg: none` tokens carry no credential) |
//! | `github`       | `ghp_`, `gho_`, `ghu_`, `ghs_`, `ghr_` followed by 36 to 251 letters and digits (GitHub's announced maximum is 255 in all); `github_pat_` followed by 82 to 244 letters, digits and `_`; `x-access-token:` followed by 20 to 255 token characters with a letter and a digit among them (the user name under which git sends a token, whatever its shape) |
//! | `anthropic`    | `sk-ant-<kind><version>-` (e.g. `sk-ant-api03-`) followed by at least 32 key characters |
//! | `openai`       | `sk-proj-`, `sk-svcacct-`, `sk-admin-` keys; `sk-` + 48 letters and digits (legacy); any `sk-` key holding `T3BlbkFJ`. Never an `sk-ant-` key |
//! | `aws`          | access key ids `AKIA…`/`ASIA…` + 16 upper-case letters and digits; secret access keys, 40 characters of base64 (upper case, lower case, and a digit, `/` or `+`) right after a name that says so (`aws_secret_access_key`, `AWS_SECRET_ACCESS_KEY`, `SecretAccessKey`, any case, `_`, `-` or `.` between the words) and 1 to 8 quotes, blanks, `:`, `=` or `>`: alone, 40 such characters are any hash |
//! | `private-key`  | `-----BEGIN … PRIVATE KEY-----` (PKCS#8, RSA, EC, DSA, OPENSSH, ENCRYPTED) and `-----BEGIN PGP PRIVATE KEY BLOCK-----`, followed within 1 KiB by a run of 40 base64 characters; the hit spans the block up to its `-----END …-----` line when present |
//! | `secret-value` | the run's own secret values, see below |
//!
//! Every detector also searches what base64 hides: each run of at least 24 base64 characters
//! (standard or URL-safe, not both) is decoded, up to three times within itself, and a credential
//! found in it is a hit on the whole run, unless the same detector already hit inside the run. So
//! git's form of a token, `AUTHORIZATION: basic <base64 of x-access-token:ghs_…>` in
//! `http.<url>.extraheader`, is a `github` hit, and so is the base64 of a whole `.git/config`
//! holding it.
//!
//! Token detectors require the match to stand alone (no letter or digit right before or after)
//! and key bodies to mix upper case, lower case and digits, which keeps identifiers such as
//! `sk-admin-dashboard-settings` out.
//!
//! `secret-value` searches every secret given to [`scan`] in these forms: the exact bytes; the
//! value with surrounding ASCII whitespace trimmed; the standard and URL-safe base64 of each,
//! with or without padding; and, for a value embedded at any offset in a longer base64 stream,
//! the characters that depend on the value alone at each of the three alignments. Base64 broken
//! across lines (MIME wrapping) and other encodings (hex, URL-escaping) are not searched. A
//! secret whose trimmed value is shorter than [`MIN_SECRET_LEN`] bytes is not searched: short
//! values match ordinary text too often to mean anything. [`notes`] names such secrets so that
//! the caller can say so.

mod anthropic;
mod aws;
mod encoded;
mod github;
mod hit;
mod id;
mod jwt;
mod openai;
mod pattern;
mod private_key;
pub mod registry;
mod secret;
mod secret_value;

pub use hit::Hit;
pub use id::{DetectorId, UnknownDetector};
pub use secret::{MIN_SECRET_LEN, NamedSecret, Note};

use std::ops::Range;
use std::sync::Arc;

use reviewflow_engine::Registry;
use reviewflow_engine::registry::CredentialDetector;

/// One detector. Implementations are stateless; compiled patterns live in statics.
pub trait Detector: Sync {
    fn id(&self) -> DetectorId;
    /// What a match is, for messages: "a GitHub token".
    fn label(&self) -> &'static str;
    /// Appends every match in `text`. `secrets` is only read by detectors that search them.
    fn find(&self, text: &[u8], secrets: &[NamedSecret], out: &mut Vec<Found>);
}

/// A match before it becomes a [`Hit`]: where, and which of the given secrets (by index).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Found {
    pub range: Range<usize>,
    pub secret: Option<usize>,
}

/// Runs the `enabled` detectors over `text` and returns their hits, sorted by position, then
/// detector, then secret name. Detectors are independent: one place can hit several times
/// (a secret's value that is also a GitHub token hits `secret-value` and `github`).
pub fn scan(text: &[u8], secrets: &[NamedSecret], enabled: &[DetectorId]) -> Vec<Hit> {
    let mut found: Vec<(DetectorId, Found)> = Vec::new();
    let mut out = Vec::new();
    let layers = encoded::layers(text);
    for d in registry::DETECTORS {
        if !enabled.contains(&d.id()) {
            continue;
        }
        out.clear();
        d.find(text, secrets, &mut out);
        // What the text shows in the clear is reported where it is; a run of base64 is
        // reported for what it hides only when nothing inside it was.
        let mut plain: Vec<(usize, usize, Option<usize>)> = out
            .iter()
            .map(|f| (f.range.start, f.range.end, f.secret))
            .collect();
        plain.sort_unstable();
        found.extend(out.drain(..).map(|f| (d.id(), f)));
        for layer in &layers {
            d.find(&layer.bytes, secrets, &mut out);
            for f in out.drain(..) {
                let Some(run) = layer.origin(f.range.start) else {
                    continue;
                };
                let first = plain.partition_point(|(start, _, _)| *start < run.start);
                let shown = plain[first..]
                    .iter()
                    .take_while(|(start, _, _)| *start < run.end)
                    .any(|&(_, end, secret)| end <= run.end && secret == f.secret);
                if !shown {
                    found.push((
                        d.id(),
                        Found {
                            range: run,
                            secret: f.secret,
                        },
                    ));
                }
            }
        }
    }
    found.sort_by(|(da, a), (db, b)| {
        (a.range.start, a.range.end, *da, a.secret).cmp(&(
            b.range.start,
            b.range.end,
            *db,
            b.secret,
        ))
    });
    found.dedup();
    hit::locate(text, found, secrets)
}

/// What the caller should be told about `secrets` before trusting a clean [`scan`]: the secrets
/// that are not searched because they are too short. Empty when `secret-value` is not enabled.
pub fn notes(secrets: &[NamedSecret], enabled: &[DetectorId]) -> Vec<Note> {
    if !enabled.contains(&DetectorId::SecretValue) {
        return Vec::new();
    }
    secrets
        .iter()
        .filter(|s| !s.is_searchable())
        .map(|s| Note::SecretTooShort {
            name: s.name().to_owned(),
        })
        .collect()
}

/// A pattern detector as the engine's [`CredentialDetector`]: what `check` runs on the values
/// written in a pipeline (an input's `default`).
struct ForCheck(&'static dyn Detector);

impl CredentialDetector for ForCheck {
    fn id(&self) -> &str {
        self.0.id().as_str()
    }

    fn label(&self) -> &str {
        self.0.label()
    }

    fn detects(&self, text: &[u8]) -> bool {
        let mut out = Vec::new();
        self.0.find(text, &[], &mut out);
        for layer in encoded::layers(text) {
            if !out.is_empty() {
                break;
            }
            self.0.find(&layer.bytes, &[], &mut out);
        }
        !out.is_empty()
    }
}

/// Registers every pattern detector with `registry`, for `check`. `secret-value` is left out: a
/// pipeline that is being checked has no secret values.
pub fn register(into: &mut Registry) {
    for d in registry::DETECTORS {
        if d.id() != DetectorId::SecretValue {
            into.register_detector(Arc::new(ForCheck(*d)));
        }
    }
}

/// The label of a detector, for messages ("a GitHub token").
pub fn label(id: DetectorId) -> &'static str {
    registry::DETECTORS
        .iter()
        .find(|d| d.id() == id)
        .map_or("a credential", |d| d.label())
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_registry_hands_check_every_pattern_detector() {
        let registry = crate::registry();
        let ids: Vec<&str> = registry.detectors().map(|d| d.id()).collect();
        assert_eq!(
            ids,
            ["jwt", "github", "anthropic", "openai", "aws", "private-key"]
        );
        let token = format!("ghp_{}", "aB3".repeat(12));
        assert_eq!(
            registry.detect(token.as_bytes()).map(|d| d.label()),
            Some("a GitHub token")
        );
        assert!(registry.detect(b"reviewed").is_none());
    }
}

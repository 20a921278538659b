//! The author's answers to a review's findings (`docs/findings.md`, "Answering a finding").
//!
//! A response names a finding by its **id**, `rf-` and the first eight hex digits of its
//! fingerprint, shown beside each finding the review lists, and says it is fixed or refuted:
//!
//! ```text
//! refuted rf-3f2a9c1b: the caller bounds the length (parse.rs:40)
//! fixed rf-9a0b1c2d
//! ```
//!
//! One response a line, its keyword first (any case); a refutation's reason is the rest of its
//! line and the lines after it up to a blank line or the next response. In a reply to a finding's
//! own thread the id may be left out (`refuted: …`, `fixed`). A line quoted with `>` is never a
//! response, so quoting someone's refutation does not repeat it; a text naming no finding is no
//! response. Responses are the change's author's words: untrusted, bounded, and only read from
//! the people a pipeline names.

use std::fmt::Write as _;

use reviewflow_engine::hex::encode as hex;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::baseline::{BaselineFinding, cut};
use crate::rules::Severity;

/// What precedes the hex of an id.
pub const ID_PREFIX: &str = "rf-";
/// Hex digits of an id: the first 32 bits of the fingerprint.
pub const ID_HEX: usize = 8;
/// Longest reason kept, in characters (a longer one is cut, with a final `…`).
pub const MAX_REASON_CHARS: usize = 1000;
/// Most responses one run reads; later ones are left for the next run.
pub const MAX_RESPONSES: usize = 100;
/// Largest text read for responses (one comment, a responses file), in bytes.
pub const MAX_TEXT_BYTES: usize = 64 * 1024;
/// Longest author name kept.
pub const MAX_AUTHOR_CHARS: usize = 100;

/// The id a review shows for the finding of `fingerprint`: `rf-` and its first 8 hex digits.
pub fn finding_id(fingerprint: &str) -> String {
    let hex: String = fingerprint.chars().take(ID_HEX).collect();
    format!("{ID_PREFIX}{hex}")
}

/// Fixed, or refuted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ResponseKind {
    /// The author says the finding is fixed: only the next review (the finding gone from the
    /// code) makes it so.
    Fixed,
    /// The author says the finding is wrong, with a reason: it passes once a reviewer accepts.
    Refuted,
}

/// One response, as read from a comment, a reply or the responses file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Response {
    /// The finding's id (`rf-3f2a9c1b`).
    pub finding: String,
    pub kind: ResponseKind,
    /// Why (a refutation); may be empty for `fixed`. One paragraph, untrusted.
    pub reason: String,
    /// Who wrote it, as the forge names them (`local` for the responses file).
    pub author: String,
}

impl Response {
    /// What identifies the response across runs (16 hex digits): the finding, the kind and the
    /// reason with its whitespace runs made one space. The same words again are the same
    /// response, however often they are posted.
    pub fn digest(&self) -> String {
        let mut hash = Sha256::new();
        for part in [
            "reviewflow-response/1",
            &self.finding,
            match self.kind {
                ResponseKind::Fixed => "fixed",
                ResponseKind::Refuted => "refuted",
            },
            &self.reason.split_whitespace().collect::<Vec<_>>().join(" "),
        ] {
            hash.update(part.as_bytes());
            hash.update([0]);
        }
        hex(&hash.finalize()[..8])
    }
}

/// The responses of `text`, written by `author`. `implied`: the id of the finding whose thread
/// the text replies in, which a response there may leave out.
pub fn parse(text: &str, author: &str, implied: Option<&str>) -> Vec<Response> {
    let text = cut_bytes(text, MAX_TEXT_BYTES);
    let author = cut(author.trim(), MAX_AUTHOR_CHARS);
    let mut out: Vec<Response> = Vec::new();
    let mut open: Option<usize> = None;
    for line in text.lines() {
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('>') {
            open = None;
            continue;
        }
        if let Some((kind, finding, rest)) = response_line(trimmed, implied) {
            out.push(Response {
                finding,
                kind,
                reason: rest.to_owned(),
                author: author.clone(),
            });
            open = Some(out.len() - 1);
        } else if let Some(i) = open {
            let reason = &mut out[i].reason;
            if !reason.is_empty() {
                reason.push(' ');
            }
            reason.push_str(trimmed);
        }
    }
    for r in &mut out {
        r.reason = cut(r.reason.trim(), MAX_REASON_CHARS);
    }
    out
}

/// `(kind, id, reason)` of a line that opens a response.
fn response_line<'a>(
    line: &'a str,
    implied: Option<&str>,
) -> Option<(ResponseKind, String, &'a str)> {
    let (word, rest) = split_word(line);
    let kind = match word.trim_end_matches(':').to_ascii_lowercase().as_str() {
        "fixed" => ResponseKind::Fixed,
        "refuted" => ResponseKind::Refuted,
        _ => return None,
    };
    let named_colon = word.ends_with(':');
    let (id_word, after_id) = split_word(rest);
    let candidate = id_word.trim_end_matches(':');
    let (finding, rest) = match parse_id(candidate) {
        Some(id) if !named_colon => (id, after_id),
        _ => (implied?.to_owned(), rest),
    };
    let rest = rest.trim_start();
    let rest = rest.strip_prefix(':').unwrap_or(rest).trim();
    Some((kind, finding, rest))
}

/// An id as written (`rf-3F2A9C1B`, any case), lower-cased; `None` for anything else.
pub fn parse_id(word: &str) -> Option<String> {
    let hex = word.get(..ID_PREFIX.len()).and_then(|p| {
        p.eq_ignore_ascii_case(ID_PREFIX)
            .then(|| &word[ID_PREFIX.len()..])
    })?;
    (hex.len() == ID_HEX && hex.bytes().all(|b| b.is_ascii_hexdigit()))
        .then(|| format!("{ID_PREFIX}{}", hex.to_ascii_lowercase()))
}

fn split_word(text: &str) -> (&str, &str) {
    let text = text.trim_start();
    match text.find(char::is_whitespace) {
        Some(i) => (&text[..i], &text[i..]),
        None => (text, ""),
    }
}

fn cut_bytes(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// The finding a response is about, as the last posted review kept it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct About {
    pub rule: String,
    pub severity: Option<Severity>,
    pub path: String,
    pub line: Option<u32>,
    pub message: String,
}

/// One response for the reviewer and for `std/post`: the response, what it answers, and its
/// digest.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Answered {
    #[serde(flatten)]
    pub response: Response,
    pub digest: String,
    pub about: About,
}

/// `std/gather`'s `responses` output: the responses not yet given to a reviewer, each naming a
/// finding of the last posted review.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Responses {
    pub responses: Vec<Answered>,
}

/// What matching responses against the last review's findings left out, for a status line.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Unmatched {
    /// Naming no finding of the last review.
    pub unknown: usize,
    /// Given to a reviewer already (the same words).
    pub seen: usize,
    /// Past [`MAX_RESPONSES`].
    pub over: usize,
}

impl Responses {
    /// The responses of `read` that name a finding of `findings` (the last review's baseline)
    /// and that no reviewer was given yet (their digest is not in that finding's dialogue), in
    /// order, at most [`MAX_RESPONSES`]; and what was left out.
    pub fn matched(read: Vec<Response>, findings: &[BaselineFinding]) -> (Self, Unmatched) {
        let mut out = Responses::default();
        let mut left = Unmatched::default();
        for response in read {
            let Some(f) = findings
                .iter()
                .find(|f| finding_id(&f.fingerprint) == response.finding)
            else {
                left.unknown += 1;
                continue;
            };
            let digest = response.digest();
            let seen = f
                .dialogue
                .as_ref()
                .is_some_and(|d| d.seen.contains(&digest));
            if seen || out.responses.iter().any(|a| a.digest == digest) {
                left.seen += 1;
                continue;
            }
            if out.responses.len() == MAX_RESPONSES {
                left.over += 1;
                continue;
            }
            out.responses.push(Answered {
                response,
                digest,
                about: About {
                    rule: f.rule.clone(),
                    severity: f.severity,
                    path: f.path.clone(),
                    line: f.line,
                    message: f.message.clone(),
                },
            });
        }
        (out, left)
    }

    /// The responses as the reviewer reads them: each finding, then what its author said.
    pub fn to_prompt(&self) -> String {
        let mut out = String::new();
        for a in &self.responses {
            let r = &a.response;
            let place = match a.about.line {
                Some(l) => format!("{}:{l}", a.about.path),
                None => a.about.path.clone(),
            };
            let _ = writeln!(
                out,
                "{} ({}, {place}): {}",
                r.finding,
                if a.about.rule.is_empty() {
                    "review"
                } else {
                    &a.about.rule
                },
                a.about.message
            );
            let _ = match r.kind {
                ResponseKind::Fixed => {
                    writeln!(out, "  {} says it is fixed. {}", r.author, r.reason)
                }
                ResponseKind::Refuted => {
                    writeln!(out, "  {} refutes it: {}", r.author, r.reason)
                }
            };
        }
        out
    }

    /// The refutations, by finding id.
    pub fn refutations(&self) -> impl Iterator<Item = &Answered> {
        self.responses
            .iter()
            .filter(|a| a.response.kind == ResponseKind::Refuted)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::forge::baseline::Dialogue;

    #[test]
    fn responses_name_a_finding_and_say_fixed_or_refuted() {
        let text = "Thanks!\n\nRefuted RF-3F2A9C1B: the caller bounds it\nsee parse.rs:40\n\n\
                    fixed rf-9a0b1c2d\n> refuted rf-11111111: quoted, not mine\n\
                    refuted rf-123: too short\nI refuted rf-22222222 in my head\n";
        let r = parse(text, "alice", None);
        assert_eq!(r.len(), 2, "{r:?}");
        assert_eq!(r[0].finding, "rf-3f2a9c1b");
        assert_eq!(r[0].kind, ResponseKind::Refuted);
        assert_eq!(r[0].reason, "the caller bounds it see parse.rs:40");
        assert_eq!(r[0].author, "alice");
        assert_eq!(r[1].finding, "rf-9a0b1c2d");
        assert_eq!(r[1].kind, ResponseKind::Fixed);
        assert_eq!(r[1].reason, "");
    }

    #[test]
    fn in_a_thread_the_id_may_be_left_out() {
        let r = parse("refuted: it is checked above", "bob", Some("rf-0123abcd"));
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].finding, "rf-0123abcd");
        assert_eq!(r[0].reason, "it is checked above");
        assert_eq!(
            parse("Fixed", "bob", Some("rf-0123abcd"))[0].kind,
            ResponseKind::Fixed
        );
        // Outside a thread, a response must name its finding.
        assert!(parse("refuted: it is checked above", "bob", None).is_empty());
        // A thread's reply may still name another finding.
        let other = parse("refuted rf-99999999 no", "bob", Some("rf-0123abcd"));
        assert_eq!(other[0].finding, "rf-99999999");
    }

    #[test]
    fn reasons_are_bounded_and_one_line() {
        let long = format!("refuted rf-00000000: {}\u{7}x", "y".repeat(5000));
        let r = parse(&long, "a\nb", None);
        assert_eq!(r[0].reason.chars().count(), MAX_REASON_CHARS);
        assert!(r[0].reason.ends_with('…'));
        assert_eq!(r[0].author, "a b");
        // Text past the bound is not read at all.
        let late = format!("{}\nrefuted rf-00000000: late", "z".repeat(MAX_TEXT_BYTES));
        assert!(parse(&late, "a", None).is_empty());
    }

    #[test]
    fn the_same_words_are_the_same_response() {
        let a = &parse("refuted rf-00000000: a   b", "x", None)[0];
        let b = &parse("REFUTED rf-00000000: a b", "y", None)[0];
        assert_eq!(a.digest(), b.digest());
        let c = &parse("refuted rf-00000000: a c", "x", None)[0];
        assert_ne!(a.digest(), c.digest());
        assert_eq!(a.digest().len(), 16);
    }

    #[test]
    fn matched_keeps_what_names_a_known_finding_and_is_new() {
        let mut known = BaselineFinding {
            fingerprint: format!("3f2a9c1b{}", "0".repeat(24)),
            rule: "r".into(),
            severity: Some(Severity::Error),
            path: "a.rs".into(),
            line: Some(3),
            message: "m".into(),
            moved: None,
            dialogue: None,
        };
        let read = parse(
            "refuted rf-3f2a9c1b: no\nrefuted rf-ffffffff: who\nrefuted rf-3f2a9c1b: no",
            "alice",
            None,
        );
        let (m, left) = Responses::matched(read.clone(), std::slice::from_ref(&known));
        assert_eq!(m.responses.len(), 1);
        assert_eq!(m.responses[0].about.path, "a.rs");
        assert_eq!((left.unknown, left.seen), (1, 1));
        assert!(
            m.to_prompt()
                .contains("rf-3f2a9c1b (r, a.rs:3): m\n  alice refutes it: no")
        );
        // Once a reviewer was given it, it is not given again.
        known.dialogue = Some(Dialogue {
            seen: vec![read[0].digest()],
            ..Dialogue::default()
        });
        let (m, left) = Responses::matched(read, std::slice::from_ref(&known));
        assert!(m.responses.is_empty());
        assert_eq!(left.seen, 2);
    }
}

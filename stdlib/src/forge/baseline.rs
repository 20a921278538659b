//! The baseline: the fingerprints of the last posted review, with enough of each finding to
//! list it once resolved, kept with the posted record (`posted.json`, the GitHub comment), and
//! the states of a new review's findings against it (`docs/findings.md`).
//!
//! A baseline is read back from a file or a comment: [`Baseline::validate`] checks every field,
//! and callers treat one that fails as no baseline.

use std::collections::{BTreeMap, BTreeSet};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::identity::FINGERPRINT_HEX;
use super::review::{FindingState, ReviewFinding};
use crate::rules::Severity;

/// Version of the baseline's layout.
pub const BASELINE_VERSION: u32 = 1;
/// Most findings a baseline holds (a reviewer reports at most this many).
pub const MAX_BASELINE_FINDINGS: usize = crate::reviewer::result::MAX_FINDINGS;
/// Longest message kept, in characters.
pub const MAX_BASELINE_MESSAGE: usize = 200;
/// Longest path kept, in characters.
pub const MAX_BASELINE_PATH: usize = 512;
/// Longest rule kept, in characters.
pub const MAX_BASELINE_RULE: usize = 128;
/// The budget of a baseline in `posted.json`, in bytes of JSON.
pub const LOCAL_BASELINE_BYTES: usize = 1 << 20;
/// The budget of a baseline in a GitHub comment, in bytes of its JSON (so at most as many
/// characters; `<` and `>` escaped take a few more).
pub const GITHUB_BASELINE_CHARS: usize = 24_000;

/// The findings of a posted review, as the next review compares with them.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Baseline {
    /// [`BASELINE_VERSION`].
    pub version: u32,
    /// Every finding of the review is here; `false` when the budget left some out.
    pub complete: bool,
    pub findings: Vec<BaselineFinding>,
}

/// One finding of a baseline. Details may be left out (empty, `None`) to fit a budget; the
/// fingerprint never is.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BaselineFinding {
    pub fingerprint: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub rule: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub severity: Option<Severity>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub path: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// Its fingerprint without the path ([`super::identity::moved_prints`]), when it has one:
    /// how it is recognised after a rename.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub moved: Option<String>,
    /// Where the author's answers to it stand (`docs/findings.md`, "Answering a finding").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dialogue: Option<Dialogue>,
}

/// The dialogue about one finding: the author's last refutation, the reviewer's answer, and
/// the responses a reviewer was given already.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Dialogue {
    /// `refuted`, `accepted` or `upheld`; none while no refutation was made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<FindingState>,
    /// Who refuted it.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub by: String,
    /// Their reason (cut to [`MAX_BASELINE_MESSAGE`] characters in a baseline).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    /// The reviewer's answer to it.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub answer: String,
    /// The digests of the responses a reviewer was given already (at most [`MAX_SEEN`], the
    /// latest last): the same words again are not asked again.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub seen: Vec<String>,
}

impl Dialogue {
    fn validate(&self) -> Result<(), BaselineError> {
        let state_ok = matches!(
            self.state,
            None | Some(FindingState::Refuted | FindingState::Accepted | FindingState::Upheld)
        );
        let seen_ok = self.seen.len() <= MAX_SEEN
            && self.seen.iter().all(|s| {
                s.len() == 16
                    && s.bytes()
                        .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
            });
        let text_ok = [
            (&self.by, MAX_BASELINE_RULE),
            (&self.reason, MAX_BASELINE_MESSAGE),
            (&self.answer, MAX_BASELINE_MESSAGE),
        ]
        .iter()
        .all(|(t, max)| t.chars().count() <= *max && !t.chars().any(char::is_control));
        if state_ok && seen_ok && text_ok {
            Ok(())
        } else {
            Err(BaselineError::Detail("dialogue"))
        }
    }
}

/// Most response digests a finding's dialogue keeps.
pub const MAX_SEEN: usize = 8;

impl Baseline {
    /// The baseline of `findings` (fingerprinted; `moved` are their
    /// [`super::identity::moved_prints`], or empty), fitted to `budget` ([`Baseline::fit`]).
    pub fn of(findings: &[ReviewFinding], moved: &[Option<String>], budget: usize) -> Baseline {
        let mut sorted: Vec<(&ReviewFinding, Option<&String>)> = findings
            .iter()
            .enumerate()
            .filter(|(_, f)| f.fingerprint.is_some())
            .map(|(i, f)| (f, moved.get(i).and_then(Option::as_ref)))
            .collect();
        // Most severe first, so that what a cut leaves out is the least severe.
        sorted.sort_by_key(|(f, _)| std::cmp::Reverse(f.severity));
        let complete = sorted.len() == findings.len() && sorted.len() <= MAX_BASELINE_FINDINGS;
        sorted.truncate(MAX_BASELINE_FINDINGS);
        Baseline {
            version: BASELINE_VERSION,
            complete,
            findings: sorted.into_iter().map(|(f, m)| entry(f, m)).collect(),
        }
        .fit(budget)
    }

    /// This baseline within `budget` bytes of compact JSON ([`Baseline::size`]): as it is; else
    /// without messages; else fingerprints and severities only; else the first (most severe)
    /// findings that fit, marked incomplete.
    pub fn fit(&self, budget: usize) -> Baseline {
        for detail in [Detail::All, Detail::NoMessage, Detail::Bare] {
            let baseline = Baseline {
                version: self.version,
                complete: self.complete,
                findings: self.findings.iter().map(|f| reduce(f, detail)).collect(),
            };
            if baseline.size() <= budget {
                return baseline;
            }
        }
        let mut baseline = Baseline {
            version: self.version,
            complete: false,
            findings: Vec::new(),
        };
        let mut size = baseline.size();
        for f in &self.findings {
            let e = reduce(f, Detail::Bare);
            let grow = serde_json::to_string(&e).map_or(usize::MAX, |s| escaped_len(&s) + 1);
            if size.saturating_add(grow) > budget {
                break;
            }
            size += grow;
            baseline.findings.push(e);
        }
        baseline
    }

    /// Bytes of its compact JSON as [`render_line`] writes it (`<` and `>` escaped); never
    /// fewer than its characters, so a budget of characters holds too.
    pub fn size(&self) -> usize {
        serde_json::to_string(self).map_or(usize::MAX, |s| escaped_len(&s))
    }

    /// Checks every field: the version, at most [`MAX_BASELINE_FINDINGS`] findings, each
    /// fingerprint 32 lowercase hex digits and distinct, details within their bounds and
    /// without control characters.
    pub fn validate(&self) -> Result<(), BaselineError> {
        if self.version != BASELINE_VERSION {
            return Err(BaselineError::Version(self.version));
        }
        if self.findings.len() > MAX_BASELINE_FINDINGS {
            return Err(BaselineError::TooMany);
        }
        let mut seen = BTreeSet::new();
        for f in &self.findings {
            if !is_print(&f.fingerprint) || f.moved.as_deref().is_some_and(|m| !is_print(m)) {
                return Err(BaselineError::Fingerprint);
            }
            if !seen.insert(f.fingerprint.as_str()) {
                return Err(BaselineError::Twice);
            }
            for (what, text, max) in [
                ("rule", &f.rule, MAX_BASELINE_RULE),
                ("path", &f.path, MAX_BASELINE_PATH),
                ("message", &f.message, MAX_BASELINE_MESSAGE),
            ] {
                if text.chars().count() > max || text.chars().any(char::is_control) {
                    return Err(BaselineError::Detail(what));
                }
            }
            if let Some(d) = &f.dialogue {
                d.validate()?;
            }
        }
        Ok(())
    }
}

/// Why a baseline read back is refused ([`Baseline::validate`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BaselineError {
    #[error("baseline version {0} is not {BASELINE_VERSION}")]
    Version(u32),
    #[error("the baseline holds more than {MAX_BASELINE_FINDINGS} findings")]
    TooMany,
    #[error("a baseline fingerprint is not 32 lowercase hex digits")]
    Fingerprint,
    #[error("a baseline fingerprint is listed twice")]
    Twice,
    /// The rule, path or message of a finding.
    #[error("a baseline {0} is too long or not one line")]
    Detail(&'static str),
}

fn escaped_len(json: &str) -> usize {
    json.len() + 5 * json.bytes().filter(|b| matches!(b, b'<' | b'>')).count()
}

#[derive(Clone, Copy)]
enum Detail {
    All,
    NoMessage,
    Bare,
}

fn is_print(text: &str) -> bool {
    text.len() == FINGERPRINT_HEX
        && text
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

fn entry(f: &ReviewFinding, moved: Option<&String>) -> BaselineFinding {
    BaselineFinding {
        fingerprint: f.fingerprint.clone().unwrap_or_default(),
        rule: cut(&f.rule, MAX_BASELINE_RULE),
        severity: Some(f.severity),
        path: cut(&f.path, MAX_BASELINE_PATH),
        line: f.line,
        message: cut(&f.message, MAX_BASELINE_MESSAGE),
        moved: moved.cloned(),
        dialogue: f.dialogue.clone().map(|mut d| {
            d.by = cut(&d.by, MAX_BASELINE_RULE);
            d.reason = cut(&d.reason, MAX_BASELINE_MESSAGE);
            d.answer = cut(&d.answer, MAX_BASELINE_MESSAGE);
            let skip = d.seen.len().saturating_sub(MAX_SEEN);
            d.seen.drain(..skip);
            d
        }),
    }
}

/// `f` with the details `detail` leaves out removed.
fn reduce(f: &BaselineFinding, detail: Detail) -> BaselineFinding {
    let mut f = f.clone();
    if !matches!(detail, Detail::All) {
        f.message.clear();
        // What a dialogue must keep is its state and what was asked already.
        if let Some(d) = &mut f.dialogue {
            d.reason.clear();
            d.answer.clear();
        }
    }
    if matches!(detail, Detail::Bare) {
        f.rule.clear();
        f.path.clear();
        f.line = None;
        f.moved = None;
        if let Some(d) = &mut f.dialogue {
            d.by.clear();
        }
    }
    f
}

/// `text` as one line of at most `max` characters, a final `…` when cut.
pub(crate) fn cut(text: &str, max: usize) -> String {
    let line: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if line.chars().count() <= max {
        return line;
    }
    let mut out: String = line.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// Sets the state of each of `findings` (fingerprinted; `moved` are their
/// [`super::identity::moved_prints`], or empty) against `previous`, and returns the findings of
/// `previous` that `findings` no longer has, each `Resolved`. A finding is `Persisting` when its
/// fingerprint is in `previous`, or when its path-free print is that of a finding of `previous`
/// no finding kept (its file was renamed or moved). With no baseline every state is left `None`
/// and nothing is resolved.
pub fn compare(
    findings: &mut [ReviewFinding],
    moved: &[Option<String>],
    previous: Option<&Baseline>,
) -> Vec<ReviewFinding> {
    let Some(previous) = previous else {
        for f in findings.iter_mut() {
            f.state = None;
        }
        return Vec::new();
    };
    let now: BTreeSet<String> = findings
        .iter()
        .filter_map(|f| f.fingerprint.clone())
        .collect();
    // The baseline's findings no fingerprint of this review names, by their path-free print.
    let mut gone: BTreeMap<&str, usize> = previous
        .findings
        .iter()
        .enumerate()
        .filter(|(_, b)| !now.contains(&b.fingerprint))
        .filter_map(|(i, b)| Some((b.moved.as_deref()?, i)))
        .collect();
    let before: BTreeSet<&str> = previous
        .findings
        .iter()
        .map(|f| f.fingerprint.as_str())
        .collect();
    let mut claimed = BTreeSet::new();
    for (i, f) in findings.iter_mut().enumerate() {
        let known = f.fingerprint.as_deref().is_some_and(|p| before.contains(p));
        let renamed = !known
            && moved
                .get(i)
                .and_then(Option::as_deref)
                .and_then(|m| gone.remove(m))
                .map(|b| claimed.insert(b))
                .is_some();
        f.state = Some(if known || renamed {
            FindingState::Persisting
        } else {
            FindingState::New
        });
    }
    previous
        .findings
        .iter()
        .enumerate()
        .filter(|(i, b)| !now.contains(&b.fingerprint) && !claimed.contains(i))
        .map(|(_, b)| ReviewFinding {
            rule: if b.rule.is_empty() {
                "(not kept)".into()
            } else {
                b.rule.clone()
            },
            severity: b.severity.unwrap_or(Severity::Info),
            path: b.path.clone(),
            line: b.line,
            end_line: None,
            message: b.message.clone(),
            fingerprint: Some(b.fingerprint.clone()),
            state: Some(FindingState::Resolved),
            dialogue: None,
            suggestion: None,
        })
        .collect()
}

/// The baseline as the hidden line of a GitHub comment: `<!-- reviewflow:baseline {json} -->`,
/// with `<` and `>` escaped in the JSON so that no value closes the HTML comment.
pub fn render_line(baseline: &Baseline) -> String {
    let json = serde_json::to_string(baseline).unwrap_or_default();
    let json = json.replace('<', "\\u003c").replace('>', "\\u003e");
    format!("{LINE_PREFIX}{json}{LINE_SUFFIX}")
}

/// The baseline of a line written by [`render_line`]; `None` for anything else, or a baseline
/// that fails [`Baseline::validate`].
pub fn parse_line(line: &str) -> Option<Baseline> {
    let line = line.strip_suffix('\r').unwrap_or(line);
    if line.chars().count() > GITHUB_BASELINE_CHARS + LINE_PREFIX.len() + LINE_SUFFIX.len() {
        return None;
    }
    let json = line.strip_prefix(LINE_PREFIX)?.strip_suffix(LINE_SUFFIX)?;
    let baseline: Baseline = serde_json::from_str(json).ok()?;
    baseline.validate().ok()?;
    Some(baseline)
}

const LINE_PREFIX: &str = "<!-- reviewflow:baseline ";
const LINE_SUFFIX: &str = " -->";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::forge::review::StateCounts;

    fn finding(print: &str, severity: Severity, message: &str) -> ReviewFinding {
        ReviewFinding {
            rule: "todo-added".into(),
            severity,
            path: "src/a.rs".into(),
            line: Some(3),
            end_line: None,
            message: message.into(),
            fingerprint: Some(print.repeat(32)),
            state: None,
            dialogue: None,
            suggestion: None,
        }
    }

    #[test]
    fn states_against_a_baseline() {
        let before = [
            finding("a", Severity::Warning, "kept"),
            finding("b", Severity::Info, "fixed"),
        ];
        let baseline = Baseline::of(&before, &[], LOCAL_BASELINE_BYTES);
        assert!(baseline.complete);
        baseline.validate().unwrap();
        let mut now = [
            finding("a", Severity::Warning, "kept"),
            finding("c", Severity::Error, "added"),
        ];
        let resolved = compare(&mut now, &[], Some(&baseline));
        assert_eq!(now[0].state, Some(FindingState::Persisting));
        assert_eq!(now[1].state, Some(FindingState::New));
        assert_eq!(resolved.len(), 1);
        assert_eq!(resolved[0].message, "fixed");
        assert_eq!(resolved[0].state, Some(FindingState::Resolved));
        assert_eq!(
            StateCounts::of(&now, &resolved),
            Some(StateCounts {
                new: 1,
                persisting: 1,
                resolved: 1,
                ..StateCounts::default()
            })
        );
    }

    #[test]
    fn a_finding_in_a_renamed_file_persists() {
        let before = [finding("a", Severity::Warning, "x")];
        let moved = [Some("f".repeat(32))];
        let baseline = Baseline::of(&before, &moved, LOCAL_BASELINE_BYTES);
        assert_eq!(
            baseline.findings[0].moved.as_deref(),
            Some(&*"f".repeat(32))
        );
        let mut renamed = [finding("b", Severity::Warning, "x")];
        renamed[0].path = "src/b.rs".into();
        assert!(compare(&mut renamed, &moved, Some(&baseline)).is_empty());
        assert_eq!(renamed[0].state, Some(FindingState::Persisting));
        // Two findings with that print: one persists, the other is new.
        let mut two = [
            finding("b", Severity::Warning, "x"),
            finding("c", Severity::Warning, "x"),
        ];
        let both = [moved[0].clone(), moved[0].clone()];
        assert!(compare(&mut two, &both, Some(&baseline)).is_empty());
        assert_eq!(two[0].state, Some(FindingState::Persisting));
        assert_eq!(two[1].state, Some(FindingState::New));
        // Without a path-free print, the old one is resolved and the other new.
        let mut other = [finding("b", Severity::Warning, "x")];
        assert_eq!(compare(&mut other, &[], Some(&baseline)).len(), 1);
        assert_eq!(other[0].state, Some(FindingState::New));
    }

    #[test]
    fn no_baseline_no_states() {
        let mut now = [finding("a", Severity::Warning, "x")];
        assert!(compare(&mut now, &[], None).is_empty());
        assert_eq!(now[0].state, None);
        assert_eq!(StateCounts::of(&now, &[]), None);
    }

    #[test]
    fn a_baseline_fits_its_budget_most_severe_first() {
        let many: Vec<ReviewFinding> = (0..300)
            .map(|i| {
                let mut f = finding("a", Severity::Info, &"m".repeat(500));
                f.fingerprint = Some(format!("{i:032x}"));
                if i == 299 {
                    f.severity = Severity::Error;
                }
                f
            })
            .collect();
        let full = Baseline::of(&many, &[], LOCAL_BASELINE_BYTES);
        assert!(full.complete);
        assert_eq!(
            full.findings[0].message.chars().count(),
            MAX_BASELINE_MESSAGE
        );
        let fitted = Baseline::of(&many, &[], GITHUB_BASELINE_CHARS);
        assert!(fitted.size() <= GITHUB_BASELINE_CHARS);
        assert_eq!(
            fitted.findings.len(),
            300,
            "details dropped before findings"
        );
        let small = Baseline::of(&many, &[], 2_000);
        assert!(!small.complete && small.size() <= 2_000);
        assert_eq!(small.findings[0].fingerprint, format!("{:032x}", 299));
        small.validate().unwrap();
    }

    #[test]
    fn the_comment_line_round_trips_and_cannot_close_the_comment() {
        let f = finding("a", Severity::Warning, "x --> <b> -->");
        let baseline = Baseline::of(&[f], &[], GITHUB_BASELINE_CHARS);
        let line = render_line(&baseline);
        assert!(line.starts_with("<!-- reviewflow:baseline {"));
        assert_eq!(line.matches("-->").count(), 1, "{line}");
        assert!(!line.contains('<') || line.find('<') == Some(0));
        assert_eq!(parse_line(&line), Some(baseline.clone()));
        assert_eq!(parse_line(&format!("{line}\r")), Some(baseline));
        for bad in [
            "<!-- reviewflow:baseline {} -->".to_owned(),
            "<!-- reviewflow:baseline {\"version\":2,\"complete\":true,\"findings\":[]} -->"
                .to_owned(),
            format!(" {line}"),
            line.replace("aaaa", "AAAA"),
        ] {
            assert_eq!(parse_line(&bad), None, "{bad}");
        }
    }
}

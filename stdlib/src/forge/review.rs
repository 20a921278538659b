//! A review as the forge publishes it: the comment, the findings, and what was reviewed.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::git::Sha;
use crate::rules::{Finding, Severity};

/// One finding of a review. Reviewers other than the built-in rules name their own rule ids,
/// so the rule is text here.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReviewFinding {
    /// The rule or check that found it (the SARIF `ruleId`, the rdjsonl `code.value`).
    pub rule: String,
    pub severity: Severity,
    /// New path of the file (old path for a deleted file), relative to the repository's top.
    pub path: String,
    /// First new-side line; none (`null`) for a finding about the whole file.
    pub line: Option<u32>,
    /// Last new-side line (inclusive) when the finding spans several.
    #[serde(default)]
    pub end_line: Option<u32>,
    /// What the finding says.
    pub message: String,
    /// The finding's identity across pushes, when it was computed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fingerprint: Option<String>,
    /// New since the last posted review, persisting from it, or resolved by this push; none
    /// when there was no earlier review to compare with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<FindingState>,
    /// The author's refutation of it and the reviewer's answer, when there was one
    /// (`docs/findings.md`, "Answering a finding").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dialogue: Option<super::baseline::Dialogue>,
    /// The suggested fix: the replacement text for the finding's lines (`line` to `end_line`),
    /// without the last line's ending; empty deletes them. Kept only when every one of those
    /// lines is a line the change added; shown where a person applies it, never applied by
    /// reviewflow (`docs/reviewers.md`, "Suggested fixes").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suggestion: Option<String>,
}

/// Where a finding stands against the last posted review (SARIF's `baselineState` `new` and
/// `unchanged`; a resolved finding is no SARIF result), and in the dialogue with the author:
/// `new` and `persisting` are open, `resolved` is fixed (gone from the code), `refuted` waits
/// for a reviewer's answer, which makes it `accepted` or `upheld`. Open, refuted and upheld
/// findings fail a review; accepted and resolved ones do not ([`FindingState::fails`]).
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum FindingState {
    New,
    Persisting,
    Resolved,
    Refuted,
    Accepted,
    Upheld,
}

impl FindingState {
    /// Whether a finding in this state counts against the review (its verdict, the check run,
    /// `--fail-on`).
    pub fn fails(self) -> bool {
        !matches!(self, FindingState::Resolved | FindingState::Accepted)
    }

    /// The state as a word (`new`, `refuted`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            FindingState::New => "new",
            FindingState::Persisting => "persisting",
            FindingState::Resolved => "resolved",
            FindingState::Refuted => "refuted",
            FindingState::Accepted => "accepted",
            FindingState::Upheld => "upheld",
        }
    }
}

/// How many findings are in each state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, JsonSchema)]
pub struct StateCounts {
    pub new: usize,
    pub persisting: usize,
    /// Fixed: gone from the code.
    pub resolved: usize,
    pub refuted: usize,
    pub accepted: usize,
    pub upheld: usize,
}

impl StateCounts {
    /// The counts of `findings` and `resolved`; `None` when nothing was compared (no state set).
    pub fn of(findings: &[ReviewFinding], resolved: &[ReviewFinding]) -> Option<Self> {
        let compared = findings.iter().any(|f| f.state.is_some()) || !resolved.is_empty();
        compared.then(|| {
            let mut c = Self::default();
            for state in findings.iter().chain(resolved).filter_map(|f| f.state) {
                *match state {
                    FindingState::New => &mut c.new,
                    FindingState::Persisting => &mut c.persisting,
                    FindingState::Resolved => &mut c.resolved,
                    FindingState::Refuted => &mut c.refuted,
                    FindingState::Accepted => &mut c.accepted,
                    FindingState::Upheld => &mut c.upheld,
                } += 1;
            }
            c
        })
    }

    /// The counts as a phrase: `1 new, 2 persisting, 1 resolved`, then the dialogue's states
    /// that are not zero (`, 1 refuted, 1 accepted`).
    pub fn phrase(&self) -> String {
        let mut out = format!(
            "{} new, {} persisting, {} resolved",
            self.new, self.persisting, self.resolved
        );
        for (n, word) in [
            (self.refuted, "refuted"),
            (self.accepted, "accepted"),
            (self.upheld, "upheld"),
        ] {
            if n > 0 {
                out.push_str(&format!(", {n} {word}"));
            }
        }
        out
    }
}

impl From<Finding> for ReviewFinding {
    fn from(f: Finding) -> Self {
        ReviewFinding {
            rule: f.rule.as_str().to_owned(),
            severity: f.severity,
            path: f.path,
            line: f.line,
            end_line: None,
            message: f.message,
            fingerprint: None,
            state: None,
            dialogue: None,
            suggestion: f.suggestion,
        }
    }
}

/// The review to post.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Review {
    /// The review comment, markdown.
    pub comment: String,
    pub findings: Vec<ReviewFinding>,
    /// The commits the review is of.
    pub base: Sha,
    pub head: Sha,
    /// The run that produced it (`[A-Za-z0-9][A-Za-z0-9._-]*`).
    pub run_id: String,
    /// The reviewer's conversation, for the next run to resume (same pattern as `run_id`).
    pub conversation_id: Option<String>,
    /// Who reviewed (`claude`, `rules`, …): printable text.
    pub reviewer: String,
    /// Findings of the last posted review that this one no longer has: `Resolved` (fixed), or
    /// `Accepted` when the reviewer accepted their refutation; empty on a first review.
    #[serde(default)]
    pub resolved: Vec<ReviewFinding>,
}

impl Review {
    /// How many findings are new, persisting and resolved against the last posted review;
    /// `None` when there was none to compare with (`docs/findings.md`).
    pub fn state_counts(&self) -> Option<StateCounts> {
        StateCounts::of(&self.findings, &self.resolved)
    }

    /// The findings new to the change: those marked `New`, or every finding when there was no
    /// earlier review to compare with (`state` unset).
    pub fn new_findings(&self) -> impl Iterator<Item = &ReviewFinding> {
        self.findings
            .iter()
            .filter(|f| matches!(f.state, None | Some(FindingState::New)))
    }

    /// The findings that count against the review: every finding but the accepted ones.
    pub fn failing_findings(&self) -> impl Iterator<Item = &ReviewFinding> {
        self.findings
            .iter()
            .filter(|f| f.state.is_none_or(FindingState::fails))
    }
}

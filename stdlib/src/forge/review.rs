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
}

/// Where a finding stands against the last posted review (SARIF's `baselineState` `new` and
/// `unchanged`; a resolved finding is no SARIF result).
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum FindingState {
    New,
    Persisting,
    Resolved,
}

/// How many findings are new, persisting and resolved.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, JsonSchema)]
pub struct StateCounts {
    pub new: usize,
    pub persisting: usize,
    pub resolved: usize,
}

impl StateCounts {
    /// The counts of `findings` and `resolved`; `None` when nothing was compared (no state set).
    pub fn of(findings: &[ReviewFinding], resolved: &[ReviewFinding]) -> Option<Self> {
        let compared = findings.iter().any(|f| f.state.is_some()) || !resolved.is_empty();
        compared.then(|| Self {
            new: findings
                .iter()
                .filter(|f| f.state == Some(FindingState::New))
                .count(),
            persisting: findings
                .iter()
                .filter(|f| f.state == Some(FindingState::Persisting))
                .count(),
            resolved: resolved.len(),
        })
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
    /// Findings of the last posted review that this one no longer has (their `state` is
    /// `Resolved`); empty on a first review.
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
}

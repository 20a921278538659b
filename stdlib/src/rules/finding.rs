//! What a rule reports.

use serde::{Deserialize, Serialize};

use super::RuleId;

/// Ordered from least to most severe.
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Info,
    Warning,
    Error,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

impl std::fmt::Display for Severity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One finding. The message never quotes the line: a credential finding must not repeat the
/// credential, and other rules keep the same habit.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Finding {
    pub rule: RuleId,
    pub severity: Severity,
    /// New path of the file (old path for a deleted file).
    pub path: String,
    /// New-side line; `None` for a finding about the whole file.
    pub line: Option<u32>,
    pub message: String,
    /// The fix, where the rule knows it exactly: the line's new text (`docs/reviewers.md`,
    /// "Suggested fixes").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suggestion: Option<String>,
}

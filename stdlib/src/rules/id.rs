//! Stable rule ids, as findings and configuration name them.

use serde::{Deserialize, Serialize};
use thiserror::Error;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RuleId {
    ConflictMarker,
    Credential,
    DebugLeftover,
    TodoAdded,
    BinaryFile,
    OversizedFile,
    TrailingWhitespace,
}

impl RuleId {
    /// Every rule, in registry order.
    pub const ALL: [RuleId; 7] = [
        RuleId::ConflictMarker,
        RuleId::Credential,
        RuleId::DebugLeftover,
        RuleId::TodoAdded,
        RuleId::BinaryFile,
        RuleId::OversizedFile,
        RuleId::TrailingWhitespace,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            RuleId::ConflictMarker => "conflict-marker",
            RuleId::Credential => "credential",
            RuleId::DebugLeftover => "debug-leftover",
            RuleId::TodoAdded => "todo-added",
            RuleId::BinaryFile => "binary-file",
            RuleId::OversizedFile => "oversized-file",
            RuleId::TrailingWhitespace => "trailing-whitespace",
        }
    }
}

impl std::fmt::Display for RuleId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A rule name that no rule has.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[error("unknown rule `{name}`")]
pub struct UnknownRule {
    pub name: String,
}

impl std::str::FromStr for RuleId {
    type Err = UnknownRule;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        RuleId::ALL
            .into_iter()
            .find(|r| r.as_str() == s)
            .ok_or_else(|| UnknownRule { name: s.to_owned() })
    }
}

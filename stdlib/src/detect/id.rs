//! Stable detector ids: what a pipeline names in `detect "…"` and what a hit reports.

use serde::{Deserialize, Serialize};
use thiserror::Error;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DetectorId {
    Jwt,
    Github,
    Anthropic,
    Openai,
    Aws,
    PrivateKey,
    SecretValue,
}

impl DetectorId {
    /// Every detector, in registry order.
    pub const ALL: [DetectorId; 7] = [
        DetectorId::Jwt,
        DetectorId::Github,
        DetectorId::Anthropic,
        DetectorId::Openai,
        DetectorId::Aws,
        DetectorId::PrivateKey,
        DetectorId::SecretValue,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            DetectorId::Jwt => "jwt",
            DetectorId::Github => "github",
            DetectorId::Anthropic => "anthropic",
            DetectorId::Openai => "openai",
            DetectorId::Aws => "aws",
            DetectorId::PrivateKey => "private-key",
            DetectorId::SecretValue => "secret-value",
        }
    }
}

impl std::fmt::Display for DetectorId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A detector name that no detector has.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[error("unknown detector `{name}`")]
pub struct UnknownDetector {
    pub name: String,
}

impl std::str::FromStr for DetectorId {
    type Err = UnknownDetector;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        DetectorId::ALL
            .into_iter()
            .find(|d| d.as_str() == s)
            .ok_or_else(|| UnknownDetector { name: s.to_owned() })
    }
}

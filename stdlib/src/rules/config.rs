//! Settings of the rules reviewer.

use serde::{Deserialize, Serialize};

use super::RuleId;
use crate::detect::DetectorId;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "kebab-case")]
pub struct RulesConfig {
    /// Rules that run. Default: all.
    pub rules: Vec<RuleId>,
    /// Detectors the `credential` rule runs. Default: all.
    pub detectors: Vec<DetectorId>,
    /// `oversized-file` fires above this many added lines in one file.
    pub max_added_lines: u32,
}

impl Default for RulesConfig {
    fn default() -> Self {
        RulesConfig {
            rules: RuleId::ALL.to_vec(),
            detectors: DetectorId::ALL.to_vec(),
            max_added_lines: 1000,
        }
    }
}

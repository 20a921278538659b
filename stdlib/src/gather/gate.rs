//! The size gate: what a change's size tier does to the run.

use serde::{Deserialize, Serialize};

use crate::diff::{Tier, Totals};

/// From which tier up a gather halts the run, and from which it warns. Neither is set by
/// default: a pipeline states its gate (`gate halt="black" warn="red"`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Gate {
    pub halt: Option<Tier>,
    pub warn: Option<Tier>,
}

/// What the gate decided, with the reason in words.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", content = "reason", rename_all = "lowercase")]
pub enum GateOutcome {
    Pass,
    Warn(String),
    Halt(String),
}

impl Gate {
    /// Halt when `tier` is at or above `halt`, else warn when at or above `warn`, else pass.
    pub fn judge(&self, tier: Tier, totals: &Totals) -> GateOutcome {
        let reason = |what: &str, bound: Tier| {
            format!(
                "size tier {tier} ({} lines changed in {} files) is at or above the {what} tier {bound}",
                totals.lines_changed(),
                totals.files
            )
        };
        match (self.halt, self.warn) {
            (Some(bound), _) if tier >= bound => GateOutcome::Halt(reason("halt", bound)),
            (_, Some(bound)) if tier >= bound => GateOutcome::Warn(reason("warn", bound)),
            _ => GateOutcome::Pass,
        }
    }
}

impl GateOutcome {
    pub fn is_halt(&self) -> bool {
        matches!(self, GateOutcome::Halt(_))
    }
}

//! Why a reviewer gave no review.

use super::program::ProgramMissing;
use super::tries::TryReport;

/// A review that did not happen: the stage's `on-error` policy decides what follows.
#[derive(Debug, thiserror::Error)]
pub enum ReviewerError {
    /// The stage's reviewer settings cannot work (found before anything runs).
    #[error("invalid reviewer settings: {problem}")]
    Settings { problem: String },
    /// The program is not there: found before any try, and never retried.
    #[error(transparent)]
    Missing(#[from] ProgramMissing),
    /// Every try ended without a review.
    #[error("no review after {} {}: {}", tries.len(), if tries.len() == 1 { "try" } else { "tries" }, list(tries))]
    NoReview { tries: Vec<TryReport> },
    /// The budget was spent before a try could start, or a try reached it (`docs/reviewers.md`,
    /// "Costs and budgets").
    #[error("not reviewed: {reason}{}", if tries.is_empty() { String::new() } else { format!(" ({})", list(tries)) })]
    BudgetSpent {
        reason: String,
        tries: Vec<TryReport>,
    },
    /// The run was cancelled during a try.
    #[error("the review was cancelled ({})", list(tries))]
    Cancelled { tries: Vec<TryReport> },
}

impl ReviewerError {
    pub(crate) fn settings(problem: impl Into<String>) -> Self {
        ReviewerError::Settings {
            problem: problem.into(),
        }
    }

    /// The tries that ran (none for invalid settings).
    pub fn tries(&self) -> &[TryReport] {
        match self {
            ReviewerError::Settings { .. } | ReviewerError::Missing(_) => &[],
            ReviewerError::NoReview { tries }
            | ReviewerError::Cancelled { tries }
            | ReviewerError::BudgetSpent { tries, .. } => tries,
        }
    }
}

impl From<super::tries::NotReviewed> for ReviewerError {
    fn from(not: super::tries::NotReviewed) -> Self {
        if not.cancelled {
            ReviewerError::Cancelled { tries: not.reports }
        } else {
            ReviewerError::NoReview { tries: not.reports }
        }
    }
}

/// "try 1 (resumed): reason; try 2 (fresh): reason".
fn list(tries: &[TryReport]) -> String {
    tries
        .iter()
        .map(|t| {
            format!(
                "try {} ({}): {}",
                t.number,
                t.kind,
                t.reason.as_deref().unwrap_or("reviewed")
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
}

//! The commit status that is the honest check: `success` only when a review ran and found
//! nothing that blocks. GitLab has no `neutral`: a review that did not run (fell back, was
//! skipped or gated out) is `failed`, with why in its description, since a status a merge
//! can pass on must mean the change was reviewed (docs/gitlab.md, "The forge").

use crate::forge::github::{BlockOn, CheckConclusion, ReviewState, conclude, fit_line};

/// GitLab keeps a status's `name` and `description` in 255-character columns.
pub const STATUS_TEXT_MAX_CHARS: usize = 255;

/// The two states reviewflow writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StatusState {
    Success,
    Failed,
}

impl StatusState {
    pub fn as_str(self) -> &'static str {
        match self {
            StatusState::Success => "success",
            StatusState::Failed => "failed",
        }
    }
}

/// The state and description of the status for `state` under `block_on`.
pub fn commit_status(state: &ReviewState, block_on: BlockOn) -> (StatusState, String) {
    let conclusion = conclude(state, block_on);
    let status = match conclusion.conclusion {
        CheckConclusion::Success => StatusState::Success,
        CheckConclusion::Failure | CheckConclusion::Neutral => StatusState::Failed,
    };
    (
        status,
        fit_line(&conclusion.title, STATUS_TEXT_MAX_CHARS).into_owned(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn success_only_when_reviewed_and_nothing_blocks() {
        let ok = ReviewState::Reviewed {
            blocking: 0,
            findings: 2,
        };
        assert_eq!(commit_status(&ok, BlockOn::Error).0, StatusState::Success);
        let blocked = ReviewState::Reviewed {
            blocking: 1,
            findings: 2,
        };
        assert_eq!(
            commit_status(&blocked, BlockOn::Error).0,
            StatusState::Failed
        );
        let skipped = ReviewState::NotReviewed {
            reason: "the reviewer fell back".into(),
        };
        let (state, text) = commit_status(&skipped, BlockOn::Never);
        assert_eq!(state, StatusState::Failed);
        assert!(text.chars().count() <= STATUS_TEXT_MAX_CHARS);
        assert!(!text.is_empty());
    }
}

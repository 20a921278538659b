//! Drafts: a change the forge marks a draft (a GitHub draft pull request, a GitLab draft merge
//! request) is skipped by a pipeline whose review stage says `when="!gather.draft"`, and reviewed
//! when it is marked ready (a new run: `ready_for_review` on GitHub). `std/gather` says the change
//! is a draft, and `std/post` puts it first in the reason of a review that did not run, which the
//! check run (neutral) or the commit status carries: a skipped draft is not a pass.

use crate::kinds::{ChangeInfo, ReviewState};

/// What `std/gather` (the stage `stage`) says of a draft, once: what a gated review does with it.
pub fn gathered(change: &ChangeInfo, stage: &str) -> Option<String> {
    change.draft.then(|| {
        format!("the change is a draft: a stage gated on `!{stage}.draft` is skipped until it is marked ready for review")
    })
}

/// The state `std/post` publishes: a review that did not run on a draft says so first, then why
/// it did not run (which names the gate, or another cause: the draft is a fact, not a guess at
/// the cause). A review that ran is published as any other.
pub fn state(change: &ChangeInfo, state: ReviewState) -> ReviewState {
    match state {
        ReviewState::NotReviewed(reason) if change.draft => ReviewState::NotReviewed(format!(
            "the change is a draft, reviewed once marked ready for review; {reason}"
        )),
        state => state,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::git::Sha;

    fn change(draft: bool) -> ChangeInfo {
        let sha = |c: char| Sha::parse(&c.to_string().repeat(40)).expect("a sha");
        ChangeInfo {
            repo: "o/r".into(),
            change_id: "7".into(),
            base: sha('a'),
            head: sha('b'),
            title: String::new(),
            body: String::new(),
            branch: None,
            draft,
        }
    }

    #[test]
    fn a_draft_not_reviewed_says_so_first() {
        let skipped =
            ReviewState::NotReviewed("the review did not run: `review` was skipped".into());
        assert_eq!(
            state(&change(true), skipped.clone()),
            ReviewState::NotReviewed(
                "the change is a draft, reviewed once marked ready for review; the review did not run: `review` was skipped".into()
            )
        );
        assert_eq!(state(&change(false), skipped.clone()), skipped);
        // A draft that was reviewed (its pipeline does not skip drafts) is a review.
        assert_eq!(
            state(&change(true), ReviewState::Reviewed),
            ReviewState::Reviewed
        );
        assert_eq!(
            gathered(&change(true), "collect").as_deref(),
            Some(
                "the change is a draft: a stage gated on `!collect.draft` is skipped until it is marked ready for review"
            )
        );
        assert_eq!(gathered(&change(false), "gather"), None);
    }
}

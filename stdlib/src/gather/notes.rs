//! What a gather says when the since-last-review diff is not the plain one: the same words on
//! every forge.

use crate::git::Sha;

pub fn no_review_before() -> String {
    "no review was posted for this change before: the whole diff is used".to_owned()
}

pub fn already_reviewed(head: &Sha) -> String {
    format!(
        "the head {} was already reviewed: nothing new since",
        head.short()
    )
}

/// The head was already reviewed and the run was started with `--force`: a new review of the
/// whole change, not of an empty difference.
pub fn forced_whole_diff() -> String {
    "since-last-review: the whole diff is used (--force)".to_owned()
}

pub fn last_head_gone(last: &Sha) -> String {
    format!(
        "the last reviewed head {} is not in this repository: the whole diff is used",
        last.short()
    )
}

/// An amend, a rebase or a force-push dropped the last reviewed head.
pub fn not_an_ancestor(last: &Sha) -> String {
    format!(
        "the last reviewed head {} is no longer an ancestor of the head (a rebase or a force-push): the whole diff is used",
        last.short()
    )
}

//! What `std/post` hands a forge, for the forge tests: a review of no findings, to change where
//! a test is about something else.

use reviewflow_stdlib::forge::Review;
use reviewflow_stdlib::git::Sha;
use reviewflow_stdlib::kinds::{PostRequest, ReviewState};
use reviewflow_stdlib::reviewer::usage::{Usage, Usd};

/// A review of `head` against `base` by `pipeline` with no findings, reviewed, nothing spent.
pub fn post_request(base: &str, head: &str, pipeline: &str) -> PostRequest {
    let sha = |text: &str| Sha::parse(text).expect("a test's sha");
    PostRequest {
        review: Review {
            comment: "Fine.".into(),
            findings: Vec::new(),
            base: sha(base),
            head: sha(head),
            run_id: "run-1".into(),
            conversation_id: None,
            reviewer: "claude".into(),
            resolved: Vec::new(),
        },
        state: ReviewState::Reviewed,
        expected_head: sha(head),
        ranges: Vec::new(),
        pipeline: pipeline.into(),
        formats: Vec::new(),
        check_run: None,
        inline: None,
        block_on: "error".into(),
        fail_not_reviewed: false,
        baseline: None,
        spent: None,
        cost: None,
    }
}

/// `tokens` input tokens at a millionth of a dollar each.
pub fn usage(tokens: u64) -> Usage {
    Usage {
        input_tokens: tokens,
        output_tokens: 0,
        cached_tokens: 0,
        cost_usd: Some(Usd(tokens)),
    }
}

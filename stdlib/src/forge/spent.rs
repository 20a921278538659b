//! What the change's reviews cost, as the posted review shows it: one footer line under the
//! review comment (`docs/github.md`, "Costs and budgets"). The running total itself is kept by
//! the forge with the posted review: the comment's marker (`spent=`), the local record
//! (`spent`).

use crate::reviewer::usage::Usage;

/// The footer line: `Cost: this review 1,280 tokens (…), $0.0123 · this pull request so far
/// 45,678 tokens (…), $0.0456`. `change` names the change as the forge does ("pull request",
/// "merge request", "change"). Numbers and fixed words only: nothing in it comes from the change.
pub fn footer(review: &Usage, so_far: &Usage, change: &str) -> String {
    format!(
        "Cost: this review {} · this {change} so far {}",
        review.say(),
        so_far.say()
    )
}

/// The footer of a post that carries a cost (`std/post`'s `cost`); `None` without one.
pub fn footer_of(review: Option<Usage>, so_far: Option<Usage>, change: &str) -> Option<String> {
    let review = review?;
    Some(footer(&review, &so_far.unwrap_or(review), change))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reviewer::usage::Usd;

    #[test]
    fn the_footer_says_both_totals() {
        let review = Usage {
            input_tokens: 12_000,
            output_tokens: 345,
            cached_tokens: 0,
            cost_usd: Some(Usd(12_300)),
        };
        let so_far = Usage {
            input_tokens: 45_000,
            output_tokens: 678,
            cached_tokens: 1_000,
            cost_usd: None,
        };
        assert_eq!(
            footer(&review, &so_far, "pull request"),
            "Cost: this review 12,345 tokens (12,000 in, 345 out, 0 cached), $0.0123 · \
             this pull request so far 45,678 tokens (45,000 in, 678 out, 1,000 cached), cost not reported"
        );
        assert_eq!(footer_of(None, Some(so_far), "change"), None);
        assert_eq!(
            footer_of(Some(review), None, "change"),
            Some(footer(&review, &review, "change"))
        );
    }
}

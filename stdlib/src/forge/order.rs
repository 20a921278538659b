//! Which of two runs of one change is the newer, so that only the newest speaks: a re-run of an
//! older CI run must not replace the review a newer run posted (`docs/github.md`, "Only the
//! newest run posts").
//!
//! Runs are ordered by head first: the head a post is of must be the change's current head
//! (`require-head`, [`crate::kinds::forge::check_preconditions`]), so a review of any other head
//! is older. On one head, by the CI run, then by its attempt: GitHub's `GITHUB_RUN_ID` grows
//! with every new run and a re-run keeps it with the next `GITHUB_RUN_ATTEMPT`; GitLab's
//! `CI_PIPELINE_ID` grows with every pipeline and a retried job gets a new, larger `CI_JOB_ID`.
//! A posted review that names no run order (written before it was kept, or by a run outside
//! CI) is older than any run that has one; a run without one orders nothing and posts as before.

use std::fmt;

/// Where a run stands among the runs of one change: its CI run, then its attempt (GitLab: the
/// pipeline, then the job). Compared as the pair, run first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RunOrder {
    pub run: u64,
    pub attempt: u64,
}

impl RunOrder {
    /// The order of a GitHub Actions run: `GITHUB_RUN_ID`, and `GITHUB_RUN_ATTEMPT` (1 when the
    /// runner names none, as a first attempt is); `None` outside a run.
    pub fn of_github(run_id: Option<u64>, attempt: Option<u32>) -> Option<Self> {
        Some(RunOrder {
            run: run_id?,
            attempt: u64::from(attempt.unwrap_or(1)),
        })
    }

    /// Parses what [`fmt::Display`] writes, `<run>.<attempt>`: two decimal numbers without a
    /// sign or a leading zero (the marker is strict, so one value has one spelling).
    pub fn parse(text: &str) -> Option<Self> {
        let (run, attempt) = text.split_once('.')?;
        Some(RunOrder {
            run: number(run)?,
            attempt: number(attempt)?,
        })
    }
}

impl fmt::Display for RunOrder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.run, self.attempt)
    }
}

fn number(text: &str) -> Option<u64> {
    let canonical = !text.is_empty()
        && text.bytes().all(|b| b.is_ascii_digit())
        && (text == "0" || !text.starts_with('0'));
    canonical.then(|| text.parse().ok()).flatten()
}

/// Why a post is refused: the forge already holds a review of the same head by a newer run or a
/// newer attempt of this run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Superseded {
    /// This run's order.
    pub ours: RunOrder,
    /// The posted review's.
    pub posted: RunOrder,
}

impl fmt::Display for Superseded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = if self.posted.run == self.ours.run {
            "a newer attempt of this run"
        } else {
            "a newer run"
        };
        write!(
            f,
            "the review posted for this head is by {what} (run {} attempt {}; this is run {} attempt {})",
            self.posted.run, self.posted.attempt, self.ours.run, self.ours.attempt
        )
    }
}

/// Whether a post by the run `ours` of `head` may replace the posted review of `posted_head`
/// with order `posted`. `head` is the change's current head (the post's preconditions hold), so
/// a review of another head is older whatever its run; on the same head the newer run or
/// attempt wins, and an equal one is the same run posting again. Without an order on either
/// side nothing is refused: there is nothing to compare.
pub fn may_replace(
    head: &crate::git::Sha,
    ours: Option<RunOrder>,
    posted_head: &crate::git::Sha,
    posted: Option<RunOrder>,
) -> Result<(), Superseded> {
    match (ours, posted) {
        (Some(ours), Some(posted)) if posted_head == head && posted > ours => {
            Err(Superseded { ours, posted })
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::git::Sha;

    fn sha(c: char) -> Sha {
        Sha::parse(&c.to_string().repeat(40)).expect("a sha")
    }

    fn order(run: u64, attempt: u64) -> Option<RunOrder> {
        Some(RunOrder { run, attempt })
    }

    #[test]
    fn runs_order_by_run_then_attempt() {
        assert!(order(100, 2) > order(100, 1));
        assert!(order(101, 1) > order(100, 9));
        assert_eq!(RunOrder::of_github(Some(7), None), order(7, 1));
        assert_eq!(RunOrder::of_github(None, Some(2)), None);
    }

    #[test]
    fn the_written_form_parses_back_and_nothing_else_does() {
        let o = RunOrder {
            run: 12_345_678_901,
            attempt: 3,
        };
        assert_eq!(RunOrder::parse(&o.to_string()), Some(o));
        for bad in [
            "", "1", "1.", ".1", "01.1", "1.01", "-1.1", "1.1.1", "1.a", "+1.1",
        ] {
            assert_eq!(RunOrder::parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn only_a_newer_run_of_the_same_head_refuses() {
        let (a, b) = (sha('a'), sha('b'));
        // A newer run, a newer attempt of this run: refused.
        let err = may_replace(&a, order(100, 1), &a, order(101, 1)).unwrap_err();
        assert!(
            err.to_string().contains("a newer run (run 101 attempt 1"),
            "{err}"
        );
        let err = may_replace(&a, order(100, 1), &a, order(100, 2)).unwrap_err();
        assert!(
            err.to_string().contains("a newer attempt of this run"),
            "{err}"
        );
        // Older, or the same run and attempt again: replaced.
        assert!(may_replace(&a, order(100, 2), &a, order(100, 1)).is_ok());
        assert!(may_replace(&a, order(101, 1), &a, order(100, 3)).is_ok());
        assert!(may_replace(&a, order(100, 1), &a, order(100, 1)).is_ok());
        // Another head is not the current one: older, whatever its run.
        assert!(may_replace(&a, order(100, 1), &b, order(200, 1)).is_ok());
        // No order on one side: nothing to compare.
        assert!(may_replace(&a, order(100, 1), &a, None).is_ok());
        assert!(may_replace(&a, None, &a, order(100, 1)).is_ok());
    }
}

//! A reviewer's budget (`budget` on `std/review`) and what a review cost (its `cost` output),
//! `docs/reviewers.md`, "Costs and budgets".
//!
//! A budget is per run and per change (a pull request, a merge request), in tokens or dollars.
//! A try that would start with either spent does not start; the model API proxy stops
//! forwarding once a try reaches the tokens left. Unknown cost is unbounded cost: under a
//! dollar budget, a sum whose cost was not reported counts as spent.

use serde::{Deserialize, Serialize};

use super::tries::{Attempt, Reviewed, TryFailure, TrySequence};
use super::usage::{Usage, Usd, thousands};

/// The most a reviewer may spend; every limit optional.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Budget {
    pub run_tokens: Option<u64>,
    pub change_tokens: Option<u64>,
    pub run_usd: Option<Usd>,
    pub change_usd: Option<Usd>,
}

impl Budget {
    /// No limit at all.
    pub fn is_unlimited(&self) -> bool {
        *self == Budget::default()
    }

    /// Why no further try may start, when `run` is what this run spent so far and `change`
    /// what the change spent before it and this run together; `None` when there is room.
    pub fn spent(&self, run: &Usage, change: &Usage) -> Option<String> {
        let tokens = |spent: &Usage, limit: Option<u64>, whose: &str| {
            let limit = limit?;
            (spent.tokens() >= limit).then(|| {
                format!(
                    "{whose} spent {} tokens of its budget of {}",
                    thousands(spent.tokens()),
                    thousands(limit)
                )
            })
        };
        let money = |spent: &Usage, limit: Option<Usd>, whose: &str| {
            let limit = limit?;
            match spent.cost_usd {
                Some(cost) if cost < limit => None,
                Some(cost) => Some(format!("{whose} spent {cost} of its budget of {limit}")),
                None => Some(format!(
                    "{whose} has a budget of {limit} and a cost that was not reported (unknown cost is unbounded cost: use a token budget with this reviewer)"
                )),
            }
        };
        tokens(run, self.run_tokens, "this run")
            .or_else(|| tokens(change, self.change_tokens, "this change"))
            .or_else(|| money(run, self.run_usd, "this run"))
            .or_else(|| money(change, self.change_usd, "this change"))
            .map(|why| format!("budget spent: {why}"))
    }

    /// The tokens a try may still spend, the least of what the run's and the change's token
    /// budgets leave; `None` without a token budget.
    pub fn tokens_left(&self, run: &Usage, change: &Usage) -> Option<u64> {
        let left =
            |spent: &Usage, limit: Option<u64>| limit.map(|l| l.saturating_sub(spent.tokens()));
        match (left(run, self.run_tokens), left(change, self.change_tokens)) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}

/// What a run spent so far against its budget: the change's spend before the run, and each
/// try's as it ends.
#[derive(Clone, Debug)]
pub struct Spend {
    pub budget: Budget,
    /// What the change spent before this run.
    pub before: Usage,
    /// This run's tries so far.
    pub run: Usage,
}

impl Spend {
    pub fn new(budget: Budget, before: Usage) -> Self {
        Spend {
            budget,
            before,
            run: Usage::nothing(),
        }
    }

    /// Adds a try's spend; a try that reported nothing has an unknown cost.
    pub fn add(&mut self, usage: Option<&Usage>) {
        let usage = usage.copied().unwrap_or_default();
        self.run = self.run.plus(&usage);
    }

    /// The change's total with this run.
    pub fn change(&self) -> Usage {
        self.before.plus(&self.run)
    }

    /// Why no further try may start; `None` when there is room.
    pub fn stop(&self) -> Option<String> {
        self.budget.spent(&self.run, &self.change())
    }

    /// The tokens the next try may spend before its proxy stops forwarding.
    pub fn tokens_left(&self) -> Option<u64> {
        self.budget.tokens_left(&self.run, &self.change())
    }

    /// The next try of `sequence`, unless the budget is spent: then the error that ends the
    /// review, said on `status`. A try that would start over the budget does not start.
    pub fn next_attempt(
        &self,
        sequence: &mut TrySequence,
        status: &mut dyn FnMut(String),
    ) -> Result<Option<Attempt>, super::ReviewerError> {
        if let Some(reason) = self.stop() {
            status(format!("not reviewed: {reason}"));
            return Err(super::ReviewerError::BudgetSpent {
                reason,
                tries: sequence.reports().to_vec(),
            });
        }
        Ok(sequence.next_attempt(status))
    }

    /// Records how `attempt` ended in `sequence` with what it spent, said on `status` before
    /// its outcome is; the review when the try produced one ([`TrySequence::record`]).
    pub fn record<T: Reviewed, E: TryFailure>(
        &mut self,
        sequence: &mut TrySequence,
        attempt: &Attempt,
        result: Result<T, E>,
        usage: Option<Usage>,
        status: &mut dyn FnMut(String),
    ) -> Option<T> {
        if let Some(u) = &usage {
            status(format!("try {} spent {}", attempt.number, u.say()));
        }
        self.add(usage.as_ref());
        let review = sequence.record(attempt, result, status);
        sequence.note_usage(attempt.number, usage);
        review
    }

    /// The `cost` output of the tries `tries`.
    pub fn cost(&self, tries: &[super::tries::TryReport]) -> Cost {
        Cost {
            run: self.run,
            change: self.change(),
            tries: tries.iter().map(|t| t.usage).collect(),
        }
    }
}

/// `std/review`'s `cost` output: what this run's tries spent, and the change's total with it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Cost {
    /// Every try of this run together.
    pub run: Usage,
    /// What the change spent before this run (`spent`), and this run.
    pub change: Usage,
    /// Each try in order; `None` for a try that reported nothing.
    pub tries: Vec<Option<Usage>>,
}

/// Manifest facts of the stage: the run's and the change's totals.
pub const RUN_FACT: &str = "cost.run";
pub const CHANGE_FACT: &str = "cost.change";

/// The manifest fact of try `number`'s usage.
pub fn try_fact(number: u32) -> String {
    format!("try.{number}.usage")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn used(tokens: u64, micros: Option<u64>) -> Usage {
        Usage {
            input_tokens: tokens,
            output_tokens: 0,
            cached_tokens: 0,
            cost_usd: micros.map(Usd),
        }
    }

    #[test]
    fn either_limit_spent_stops_and_says_which() {
        let b = Budget {
            run_tokens: Some(1000),
            change_tokens: Some(5000),
            ..Budget::default()
        };
        assert_eq!(b.spent(&used(999, None), &used(999, None)), None);
        assert_eq!(
            b.spent(&used(1000, None), &used(1000, None)).as_deref(),
            Some("budget spent: this run spent 1,000 tokens of its budget of 1,000")
        );
        assert_eq!(
            b.spent(&used(10, None), &used(6000, None)).as_deref(),
            Some("budget spent: this change spent 6,000 tokens of its budget of 5,000")
        );
        assert_eq!(
            b.tokens_left(&used(200, None), &used(4500, None)),
            Some(500)
        );
        assert_eq!(
            Budget::default().tokens_left(&used(1, None), &used(1, None)),
            None
        );
    }

    #[test]
    fn under_a_dollar_budget_an_unknown_cost_is_spent() {
        let b = Budget {
            change_usd: Some(Usd(1_000_000)),
            ..Budget::default()
        };
        assert_eq!(b.spent(&used(1, Some(10)), &used(1, Some(999_999))), None);
        assert!(
            b.spent(&used(1, Some(10)), &used(1, Some(1_000_000)))
                .is_some_and(|w| w.contains("spent $1.0000 of its budget of $1.0000"))
        );
        assert!(
            b.spent(&used(1, None), &used(1, None))
                .is_some_and(|w| w.contains("not reported"))
        );
        // A token budget alone does not care what the cost was.
        let t = Budget {
            run_tokens: Some(10),
            ..Budget::default()
        };
        assert_eq!(t.spent(&used(1, None), &used(1, None)), None);
    }
}

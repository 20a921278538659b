//! GitHub's workflow events: the ones a pipeline's `trigger` may name ([`TRIGGERS`]), and, for
//! every event a run may have had, whose workflow file it uses: what a `trust` rule of a store
//! whose producers are workflow runs may admit (docs/github.md). Default deny: an event not
//! listed here is not known to run a reviewed workflow file.

use reviewflow_engine::platform::{Event, EventRuns};

/// GitHub's activity types of `pull_request` and `pull_request_target`.
const PULL_REQUEST_TYPES: &[&str] = &[
    "assigned",
    "unassigned",
    "labeled",
    "unlabeled",
    "opened",
    "edited",
    "closed",
    "reopened",
    "synchronize",
    "converted_to_draft",
    "ready_for_review",
    "locked",
    "unlocked",
    "review_requested",
    "review_request_removed",
    "auto_merge_enabled",
    "auto_merge_disabled",
    "milestoned",
    "demilestoned",
    "enqueued",
    "dequeued",
];

/// The activity types a pull-request trigger runs on without `types`.
pub const DEFAULT_TYPES: &[&str] = &["opened", "synchronize", "reopened", "ready_for_review"];

/// The events an exported workflow may run on, first the one a review with secrets needs.
pub const TRIGGERS: &[Event] = &[
    Event {
        name: "pull_request_target",
        runs: EventRuns::Base,
        checks_out: "the base branch",
        types: PULL_REQUEST_TYPES,
        default_types: DEFAULT_TYPES,
        push_type: Some("synchronize"),
        ready_type: Some("ready_for_review"),
    },
    Event {
        name: "pull_request",
        runs: EventRuns::Change,
        checks_out: "the pull request's merge commit, the change's own files",
        types: PULL_REQUEST_TYPES,
        default_types: DEFAULT_TYPES,
        push_type: Some("synchronize"),
        ready_type: Some("ready_for_review"),
    },
    Event {
        name: "workflow_dispatch",
        runs: EventRuns::Chosen,
        checks_out: "whatever ref the one who dispatches it picks, a pull request's branch included",
        types: &[],
        default_types: &[],
        push_type: None,
        ready_type: None,
    },
];

/// Whose workflow file (and so whose code) a run of an event runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Provenance {
    /// The workflow file as the pull request's head has it (a merge queue's run uses the merge
    /// group's commit, which holds the pull request's changes).
    PullRequest,
    /// The workflow file of the branch the run was started on: reviewed only on a named branch.
    Branch,
    /// The default (or base) branch's workflow file, started by the forge itself or by the
    /// pull request's own event, with nothing but the event's facts as input.
    Base,
    /// The base branch's workflow file, started when another workflow's run ends (a pull
    /// request's own run included), to act on that run's outcome and artifacts: what such a run
    /// uploads is as trustworthy as the run that started it, which a rule cannot name.
    AfterAnotherRun,
}

/// The events whose provenance is known; every other is reported.
const EVENTS: &[(&str, Provenance)] = &[
    ("merge_group", Provenance::PullRequest),
    ("pull_request", Provenance::PullRequest),
    ("pull_request_review", Provenance::PullRequest),
    ("pull_request_review_comment", Provenance::PullRequest),
    ("pull_request_target", Provenance::Base),
    ("push", Provenance::Branch),
    ("schedule", Provenance::Base),
    ("workflow_dispatch", Provenance::Branch),
    ("workflow_run", Provenance::AfterAnotherRun),
];

/// Whose workflow file a run of `event` uses, if GitHub's documentation says so.
pub fn provenance(event: &str) -> Option<Provenance> {
    EVENTS
        .iter()
        .find_map(|(name, p)| (*name == event).then_some(*p))
}

/// The events of one provenance, for a message.
pub fn with(provenance: Provenance) -> Vec<&'static str> {
    EVENTS
        .iter()
        .filter(|(_, p)| *p == provenance)
        .map(|(name, _)| *name)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_trigger_has_a_provenance_that_matches_what_it_runs() {
        for t in TRIGGERS {
            let expected = match t.runs {
                EventRuns::Base => Provenance::Base,
                EventRuns::Change => Provenance::PullRequest,
                EventRuns::Chosen => Provenance::Branch,
            };
            assert_eq!(provenance(t.name), Some(expected), "{}", t.name);
        }
    }

    #[test]
    fn the_table_is_sorted_and_unknown_events_have_no_provenance() {
        assert!(EVENTS.windows(2).all(|w| w[0].0 < w[1].0));
        assert_eq!(provenance("issues"), None);
        assert_eq!(
            provenance("workflow_run"),
            Some(Provenance::AfterAnotherRun)
        );
        assert_eq!(with(Provenance::Base), ["pull_request_target", "schedule"]);
    }
}

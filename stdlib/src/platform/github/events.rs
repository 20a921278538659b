//! GitHub's workflow events, by whose workflow file a run of each uses: what a `trust` rule of
//! a store whose producers are workflow runs may admit (docs/github.md). Default deny: an event
//! not listed here is not known to run a reviewed workflow file.

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

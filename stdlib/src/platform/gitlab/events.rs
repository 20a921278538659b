//! GitLab's pipeline sources (`CI_PIPELINE_SOURCE`) a pipeline's `trigger` may name, with whose
//! `.gitlab-ci.yml` the job each starts runs (docs/gitlab.md, Events). Default deny: a source not
//! listed here (`api`, `chat`, `external`, `parent_pipeline`, …) is refused.

use reviewflow_engine::platform::{Event, EventRuns};

/// The kinds of merge request pipeline (`CI_MERGE_REQUEST_EVENT_TYPE`): on the source branch
/// alone, on the merge of the source into the target, or on a merge train's merge.
pub const MERGE_REQUEST_TYPES: &[&str] = &["detached", "merged_result", "merge_train"];

/// The events a pipeline on GitLab may run on, the one about a change first.
///
/// Only `merge_request_event` is about a change: its `types` are the kinds of merge request
/// pipeline, and it runs on all of them without `types`. A push to the source branch starts a
/// `detached` or a `merged_result` pipeline depending on a setting of the project, which the file
/// does not say, so no type is the one a push fires (`push_type` is none) and `check` does not
/// judge `types` for pushes on it.
///
/// `schedule` runs the configuration of the ref its schedule names, which its owner sets and the
/// change's author does not (the design's: the protected default branch): the base's. Every
/// other source runs whatever ref the one who starts it names.
pub const TRIGGERS: &[Event] = &[
    Event {
        name: "merge_request_event",
        runs: EventRuns::Change,
        checks_out: "the merge request's source branch (or its merge into the target), the change's own files, in the fork for a fork's merge request",
        types: MERGE_REQUEST_TYPES,
        default_types: MERGE_REQUEST_TYPES,
        push_type: None,
        // GitLab starts no review pipeline when a merge request is marked ready.
        ready_type: None,
    },
    Event {
        name: "schedule",
        runs: EventRuns::Base,
        checks_out: "the ref its schedule names, which the schedule's owner sets",
        types: &[],
        default_types: &[],
        push_type: None,
        // GitLab starts no review pipeline when a merge request is marked ready.
        ready_type: None,
    },
    Event {
        name: "trigger",
        runs: EventRuns::Chosen,
        checks_out: "whatever ref the trigger's caller names, a merge request's branch included",
        types: &[],
        default_types: &[],
        push_type: None,
        // GitLab starts no review pipeline when a merge request is marked ready.
        ready_type: None,
    },
    Event {
        name: "pipeline",
        runs: EventRuns::Chosen,
        checks_out: "whatever ref the upstream pipeline names, a merge request's branch included",
        types: &[],
        default_types: &[],
        push_type: None,
        // GitLab starts no review pipeline when a merge request is marked ready.
        ready_type: None,
    },
    Event {
        name: "web",
        runs: EventRuns::Chosen,
        checks_out: "whatever ref the one who runs it picks, a merge request's branch included",
        types: &[],
        default_types: &[],
        push_type: None,
        // GitLab starts no review pipeline when a merge request is marked ready.
        ready_type: None,
    },
    Event {
        name: "push",
        runs: EventRuns::Chosen,
        checks_out: "the pushed ref, a merge request's source branch included",
        types: &[],
        default_types: &[],
        push_type: None,
        // GitLab starts no review pipeline when a merge request is marked ready.
        ready_type: None,
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_merge_request_event_is_about_a_change_and_it_runs_the_change() {
        let about: Vec<&str> = TRIGGERS
            .iter()
            .filter(|e| e.about_a_change())
            .map(|e| e.name)
            .collect();
        assert_eq!(about, ["merge_request_event"]);
        assert_eq!(TRIGGERS[0].runs, EventRuns::Change);
        for e in TRIGGERS {
            assert!(e.default_types.iter().all(|t| e.types.contains(t)));
            assert!(e.push_type.is_none());
        }
    }

    #[test]
    fn only_schedule_runs_a_configuration_its_starter_cannot_choose() {
        let base: Vec<&str> = TRIGGERS
            .iter()
            .filter(|e| e.runs == EventRuns::Base)
            .map(|e| e.name)
            .collect();
        assert_eq!(base, ["schedule"]);
    }
}

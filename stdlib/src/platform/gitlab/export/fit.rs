//! What a pipeline asks of a `.gitlab-ci.yml` that the file could not do safely, refused before
//! anything is written (docs/gitlab.md, "The exported pipeline"): a pipeline that runs and
//! silently does nothing, or hands its secrets to the change, is worse than none.
//!
//! - A trigger names no GitLab pipeline source, or names `merge_request_event`: a merge
//!   request's pipeline runs the change's own copy of `.gitlab-ci.yml`, so the rules written
//!   here bind nothing there.
//! - The pipeline names no trigger: which sources run the review is the pipeline's to say.
//! - A stage that publishes declares no write permission: it could post nothing.
//! - A store of another kind than `gitlab-artifacts`: a runner's files are gone after the job,
//!   and a store kept with another platform cannot be read back from GitLab.
//! - A secret's variable GitLab cannot hold, or an environment name GitLab would expand.

use reviewflow_engine::contract::Effect;
use reviewflow_engine::model::{Access, Pipeline};
use reviewflow_engine::registry::Registry;
use reviewflow_engine::source::Source;

use crate::platform::gitlab::events::TRIGGERS;

/// The source whose pipeline runs the change's own configuration.
const MERGE_REQUEST_EVENT: &str = "merge_request_event";

/// The one store kind whose blobs a later GitLab pipeline reads back.
pub const GITLAB_ARTIFACTS: &str = "gitlab-artifacts";

/// The job token GitLab gives every job: not a project variable, in no environment.
pub const JOB_TOKEN: &str = "CI_JOB_TOKEN";

/// Refuses what the exported pipeline could not do.
pub fn judge(pipeline: &Pipeline, registry: &Registry, source: &Source) -> Result<(), String> {
    let line = |offset: usize| source.position(offset).line;
    if pipeline.triggers.is_empty() {
        return Err(
            "the pipeline names no trigger, and a GitLab pipeline runs only for the sources it \
             admits: write the sources the review runs on, e.g. `trigger \"schedule\"` \
             (docs/gitlab.md, \"The shape chosen\")"
                .into(),
        );
    }
    for trigger in &pipeline.triggers {
        let event = trigger.event.value.as_str();
        if event == MERGE_REQUEST_EVENT {
            return Err(format!(
                "line {}: `trigger \"{MERGE_REQUEST_EVENT}\"` cannot be exported: a merge \
                 request's pipeline runs the change's own copy of .gitlab-ci.yml, so the rules \
                 written here bind nothing there, and the review's secrets must never reach it; \
                 run the review on the default branch instead: `trigger \"schedule\"` or \
                 `trigger \"trigger\"` (docs/gitlab.md, \"The shape chosen\")",
                line(trigger.event.span.offset),
            ));
        }
        if !TRIGGERS.iter().any(|e| e.name == event) {
            let names: Vec<String> = TRIGGERS
                .iter()
                .filter(|e| e.name != MERGE_REQUEST_EVENT)
                .map(|e| format!("`{}`", e.name))
                .collect();
            return Err(format!(
                "line {}: `trigger \"{event}\"` is not a GitLab pipeline source, and a GitLab \
                 pipeline runs for GitLab's alone: name {}",
                line(trigger.event.span.offset),
                names.join(", "),
            ));
        }
    }
    // A GitLab job gets no token whose power the file sets (`CI_JOB_TOKEN` cannot write notes
    // or statuses on most instances): a stage writes with a secret it holds, one whose `can=`
    // grants a write or, without `can=`, is taken to write (principle 2).
    for stage in &pipeline.stages {
        let publishes = registry
            .get(&stage.uses.value)
            .is_some_and(|c| c.has_effect(Effect::Publishes));
        let name = stage.name.value.as_str();
        let can_write = pipeline.secrets.iter().any(|s| {
            s.env.value != JOB_TOKEN
                && s.visible_to.iter().any(|v| v.value == name)
                && s.can
                    .as_ref()
                    .is_none_or(|can| can.value.iter().any(|p| p.value.access == Access::Write))
        });
        if !publishes || can_write {
            continue;
        }
        return Err(format!(
            "line {}: stage `{name}` publishes but holds no secret that can write, and a GitLab \
             job's own token cannot write notes or commit statuses: make the forge's token (a \
             project access token with the `api` scope) visible to it",
            line(stage.name.span.offset),
        ));
    }
    if let Some(store) = pipeline
        .stores
        .iter()
        .find(|s| s.kind.value != GITLAB_ARTIFACTS)
    {
        let why = if registry
            .store(&store.kind.value)
            .is_some_and(|k| k.outlives_the_job)
        {
            "keeps its blobs with another platform, which a GitLab job cannot read back"
        } else {
            "keeps its blobs on the machine that ran the job, and a GitLab runner's files are \
             gone after the job"
        };
        return Err(format!(
            "line {}: store `{}` is kind `{}`, which {why}: nothing would be read back on the \
             next pipeline; keep them in GitLab's job artifacts: `store \"{}\" \
             kind=\"{GITLAB_ARTIFACTS}\"` (docs/gitlab.md, \"The store\")",
            line(store.name.span.offset),
            store.name.value,
            store.kind.value,
            store.name.value,
        ));
    }
    for secret in &pipeline.secrets {
        let env = secret.env.value.as_str();
        let predefined = env.starts_with("CI_") || env.starts_with("GITLAB_");
        if !is_variable_name(env) || (predefined && env != JOB_TOKEN) {
            return Err(format!(
                "secret `{}`: env=\"{}\" cannot name a GitLab project variable (letters, digits \
                 and `_`, not starting with a digit, `CI_` or `GITLAB_`)",
                secret.name.value,
                env.escape_debug(),
            ));
        }
    }
    Ok(())
}

/// A name GitLab takes for a CI/CD variable.
fn is_variable_name(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

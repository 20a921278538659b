//! What a pipeline asks of a GitHub workflow that the workflow could not do, refused before
//! anything is written (`docs/export.md`, "What export refuses"): a workflow that runs and
//! silently does nothing is worse than none.
//!
//! - A trigger names an event of another platform (lowering admits every registered platform's):
//!   a workflow runs on GitHub's events alone.
//! - A stage that publishes declares no write permission: its job's token is read-only, and it
//!   could post nothing.
//! - A store keeps its blobs on the machine that ran the job: a workflow's runner is thrown away
//!   after each job, so nothing would be read back on the next push.
//! - A store the pipeline keeps blobs in believes runs of another workflow file than the one
//!   written: the store would never believe what this workflow keeps.

use reviewflow_engine::contract::Effect;
use reviewflow_engine::model::{Access, Pipeline};
use reviewflow_engine::registry::Registry;
use reviewflow_engine::source::Source;

use super::workflow::ExportError;

/// Where the workflow goes, as far as export knows it.
pub struct Destination<'a> {
    /// The workflow's path in the repository (`.github/workflows/review.yml`), when `--out`
    /// writes it where GitHub runs workflows from; else `None` (stdout, or another folder).
    pub workflow_file: Option<&'a str>,
}

/// The folder GitHub runs workflows from; a file in a folder below it is not run.
pub const WORKFLOWS: &str = ".github/workflows/";

/// The workflow file `path` names, when GitHub would run a workflow kept there.
pub fn workflow_file(path: &str) -> Option<&str> {
    path.strip_prefix(WORKFLOWS)
        .filter(|name| !name.is_empty() && !name.contains('/'))
        .map(|_| path)
}

/// Refuses what the workflow could not do; otherwise the file the store's trust rules name for
/// the workflow's own runs (where it must be installed), if they name one.
pub fn judge(
    pipeline: &Pipeline,
    registry: &Registry,
    source: &Source,
    to: &Destination<'_>,
) -> Result<Option<String>, ExportError> {
    let line = |offset: usize| source.position(offset).line;
    // Lowering admits the events of every registered platform; a workflow runs on GitHub's.
    for trigger in &pipeline.triggers {
        if super::super::events::TRIGGERS
            .iter()
            .any(|e| e.name == trigger.event.value)
        {
            continue;
        }
        let names: Vec<String> = super::super::events::TRIGGERS
            .iter()
            .map(|e| format!("`{}`", e.name))
            .collect();
        return Err(ExportError::Unexportable(format!(
            "line {}: `trigger \"{}\"` is not an event of GitHub Actions, and a workflow runs on \
             GitHub's alone: name {}",
            line(trigger.event.span.offset),
            trigger.event.value,
            names.join(", "),
        )));
    }
    for stage in &pipeline.stages {
        let publishes = registry
            .get(&stage.uses.value)
            .filter(|c| c.has_effect(Effect::Publishes));
        let Some(contract) = publishes else { continue };
        if stage
            .permissions
            .iter()
            .any(|p| p.value.access == Access::Write)
        {
            continue;
        }
        let writes: Vec<&str> = contract
            .permissions
            .iter()
            .map(String::as_str)
            .filter(|p| p.ends_with(":write"))
            .collect();
        return Err(ExportError::Unexportable(format!(
            "line {}: stage `{}` publishes but declares no write permission, so its job's token \
             would be read-only and it could post nothing: declare what it uses, e.g. \
             permissions=\"{}\"",
            line(stage.name.span.offset),
            stage.name.value,
            writes.join(" "),
        )));
    }
    for store in &pipeline.stores {
        // Only a store whose blobs GitHub keeps outlives the job: default deny for the rest.
        if registry
            .store(&store.kind.value)
            .is_some_and(|k| k.outlives_the_job)
        {
            continue;
        }
        return Err(ExportError::Unexportable(format!(
            "line {}: store `{}` is kind `{}`, whose blobs stay on the machine that ran the job, \
             and a workflow's runner is thrown away after each job: nothing would be read back on \
             the next push; keep them as artifacts of the workflow's runs: \
             kind=\"github-artifacts\" (docs/github.md)",
            line(store.name.span.offset),
            store.name.value,
            store.kind.value,
        )));
    }
    own_workflow(pipeline, source, to)
}

/// The trust rules that admit the workflow's own runs (a store the pipeline keeps blobs in, a
/// rule naming an event the workflow runs on and a workflow file) must name one file, the one
/// written when export knows it.
fn own_workflow(
    pipeline: &Pipeline,
    source: &Source,
    to: &Destination<'_>,
) -> Result<Option<String>, ExportError> {
    let events: Vec<&str> = pipeline
        .triggers
        .iter()
        .map(|t| t.event.value.as_str())
        .collect();
    let mut named: Option<(&str, usize)> = None;
    for store in pipeline
        .stores
        .iter()
        .filter(|s| pipeline.keeps_in(&s.name.value))
    {
        for rule in &store.trust {
            let event = rule.setting("event").and_then(|e| e.value.as_str());
            if !event.is_some_and(|e| events.contains(&e)) {
                continue;
            }
            let Some(workflow) = rule.setting("workflow").and_then(|w| w.value.as_str()) else {
                continue;
            };
            let at = source.position(rule.span.offset).line;
            if let Some(written) = to.workflow_file
                && workflow != written
            {
                return Err(ExportError::Unexportable(format!(
                    "line {at}: store `{}` believes runs of `{workflow}` on `{}`, but this \
                     workflow is written to `{written}`: the store would never believe what it \
                     keeps, and every push would review fresh; change line {at} to \
                     workflow=\"{written}\"",
                    store.name.value,
                    event.unwrap_or_default(),
                )));
            }
            match named {
                None => named = Some((workflow, at)),
                Some((first, first_at)) if first != workflow => {
                    return Err(ExportError::Unexportable(format!(
                        "lines {first_at} and {at}: the trust rules for this workflow's \
                         own runs name two files, `{first}` and `{workflow}`, and the workflow is \
                         one file: name the one it is installed as on both lines"
                    )));
                }
                Some(_) => {}
            }
        }
    }
    Ok(named.map(|(w, _)| w.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_file_directly_in_the_workflows_folder_is_run() {
        assert_eq!(
            workflow_file(".github/workflows/review.yml"),
            Some(".github/workflows/review.yml")
        );
        assert_eq!(workflow_file(".github/workflows/sub/review.yml"), None);
        assert_eq!(workflow_file("examples/github/review.export.yml"), None);
        assert_eq!(workflow_file(".github/workflows/"), None);
    }
}

//! `--stages`: a partial run, one job of an exported workflow (docs/export.md). Only the named
//! stages run. Every stage upstream of them must be reused from the `--resume` parent (its
//! identity admitted like any resume, so a job cannot be fed another run's outputs); the stages
//! downstream are not run. Only the secrets of the named stages are read as required: the other
//! jobs' secrets are not in this job's environment.

use std::collections::BTreeSet;

use super::manifest::Manifest;
use super::outcome::Outcome;
use crate::flow::Flow;
use crate::graph::Dag;
use crate::model::Pipeline;

/// Outcome reason of a stage outside the selection.
pub(crate) const NOT_SELECTED: &str = "not in --stages";

/// The stages `names` selects, or why not (an unknown name, none at all).
pub(crate) fn select(
    pipeline: &Pipeline,
    dag: &Dag,
    names: &[String],
) -> Result<BTreeSet<usize>, String> {
    if names.is_empty() {
        return Err("--stages names no stage".into());
    }
    let mut only = BTreeSet::new();
    let mut unknown = Vec::new();
    for name in names {
        match dag.stage_index(name) {
            Some(i) => {
                only.insert(i);
            }
            None => unknown.push(format!("`{}`", crate::render::escape::escaped(name))),
        }
    }
    if unknown.is_empty() {
        Ok(only)
    } else {
        Err(format!(
            "--stages names no stage {} of this pipeline (its stages: {})",
            unknown.join(", "),
            pipeline
                .stages
                .iter()
                .map(|s| format!("`{}`", s.name.value))
                .collect::<Vec<_>>()
                .join(", ")
        ))
    }
}

/// Stages upstream of the selection that are not in it: the ones the parent must provide, in
/// index order.
pub(crate) fn upstream(dag: &Dag, only: &BTreeSet<usize>) -> Vec<usize> {
    let mut seen: BTreeSet<usize> = BTreeSet::new();
    let mut stack: Vec<usize> = only.iter().copied().collect();
    while let Some(i) = stack.pop() {
        for (p, _) in dag.producers(i) {
            // A named producer's own producers are reached from it, as it is in the stack.
            if !only.contains(&p) && seen.insert(p) {
                stack.push(p);
            }
        }
    }
    seen.into_iter().collect()
}

/// A partial run as the scheduler sees it.
#[derive(Clone, Debug, Default)]
pub(crate) struct Partial {
    /// The stages `--stages` named.
    pub only: BTreeSet<usize>,
    /// Stages upstream of them, not named: taken from the parent.
    pub upstream: BTreeSet<usize>,
    /// Upstream stages the parent fell back on: they fall back again.
    pub fell_back: BTreeSet<usize>,
    /// The parent run's id.
    pub parent: String,
}

impl Partial {
    /// Whether a named stage holds secret `k` (an index into `Pipeline::secrets`): only those
    /// are this job's; the others are another job's, absent from its environment.
    pub fn holds(&self, flow: &Flow, k: usize) -> bool {
        self.only
            .iter()
            .any(|&i| flow.held.get(i).is_some_and(|h| h.contains(&k)))
    }

    /// Neither named nor upstream: not run.
    pub fn outside(&self, i: usize) -> bool {
        !self.only.contains(&i) && !self.upstream.contains(&i)
    }

    /// Upstream stages that the parent skipped or fell back on: a resume does not reuse them,
    /// and here they are decided again without running.
    pub fn carried(&self, pipeline: &Pipeline, parent: &Manifest) -> BTreeSet<usize> {
        self.upstream
            .iter()
            .copied()
            .filter(|&i| {
                parent
                    .stage(&pipeline.stages[i].name.value)
                    .is_some_and(|r| matches!(r.outcome, Outcome::Skipped | Outcome::FellBack))
            })
            .collect()
    }
}

/// Checks, before anything is created, that the parent ended every upstream stage in a way
/// that can be handed over: completed, skipped or fell back.
pub(crate) fn check_parent(
    pipeline: &Pipeline,
    upstream: &[usize],
    parent: Option<(&str, &Manifest)>,
) -> Result<(), String> {
    if upstream.is_empty() {
        return Ok(());
    }
    let names = |list: &[usize]| {
        list.iter()
            .map(|&i| format!("`{}`", pipeline.stages[i].name.value))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let Some((id, manifest)) = parent else {
        return Err(format!(
            "--stages needs the outputs of {} from an earlier run: give it with --resume",
            names(upstream)
        ));
    };
    let missing: Vec<usize> = upstream
        .iter()
        .copied()
        .filter(|&i| {
            !manifest
                .stage(&pipeline.stages[i].name.value)
                .is_some_and(|r| {
                    r.outcome.completed()
                        || matches!(r.outcome, Outcome::Skipped | Outcome::FellBack)
                })
        })
        .collect();
    if missing.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "run `{id}` did not complete {}, which --stages needs: run them first",
            names(&missing)
        ))
    }
}

//! The partition of pipelines into jobs (`docs/export.md`): an edge carrying a private value
//! keeps its ends in one job, a stage caught between two stages of a job joins it, everything
//! else is split; each job holds exactly its stages' secrets and permissions.

use std::collections::BTreeMap;

use reviewflow_engine::compile::Compiled;
use reviewflow_engine::export::{Carries, Partition, Reason, partition};
use reviewflow_engine::flow::Flow;
use reviewflow_engine::model::Access;

fn partition_of(text: &str) -> (Compiled, Partition) {
    let registry = reviewflow_stdlib::registry();
    let compiled = reviewflow_engine::compile::compile(
        reviewflow_engine::Source::new("p.kdl", text),
        &registry,
        &reviewflow_engine::syntax::Limits::default(),
    )
    .expect("compiles");
    let flow = Flow::compute(&compiled.pipeline, &registry, &compiled.dag).expect("acyclic");
    let p = partition(&compiled.pipeline, &registry, &compiled.dag, &flow).expect("acyclic");
    (compiled, p)
}

fn stage(c: &Compiled, i: usize) -> &str {
    &c.pipeline.stages[i].name.value
}

/// Each job as its stage names, the jobs it needs (by first stage), its secrets and permissions.
type JobView = (Vec<String>, Vec<String>, Vec<String>, String);

fn jobs(c: &Compiled, p: &Partition) -> Vec<JobView> {
    p.jobs
        .iter()
        .map(|j| {
            let stages = j.stages.iter().map(|&s| stage(c, s).to_owned()).collect();
            let needs = j
                .needs
                .iter()
                .map(|&n| stage(c, p.jobs[n].stages[0]).to_owned())
                .collect();
            let secrets = j
                .secrets
                .iter()
                .map(|&s| c.pipeline.secrets[s].name.value.clone())
                .collect();
            (stages, needs, secrets, permissions(&j.permissions))
        })
        .collect()
}

fn permissions(p: &BTreeMap<String, Access>) -> String {
    p.iter()
        .map(|(scope, access)| {
            format!(
                "{scope}:{}",
                if *access == Access::Write {
                    "write"
                } else {
                    "read"
                }
            )
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| (*s).to_owned()).collect()
}

/// A `Private` reason as (producer, consumer, [(output, why)]).
type Join = (String, String, Vec<(String, Carries)>);

fn joins(c: &Compiled, p: &Partition) -> Vec<Join> {
    p.reasons
        .iter()
        .filter_map(|r| match r {
            Reason::Private {
                producer,
                consumer,
                outputs,
            } => Some((
                stage(c, *producer).to_owned(),
                stage(c, *consumer).to_owned(),
                outputs.clone(),
            )),
            Reason::Between { .. } | Reason::Tangled { .. } => None,
        })
        .collect()
}

fn join(producer: &str, consumer: &str, outputs: &[(&str, Carries)]) -> Join {
    (
        producer.to_owned(),
        consumer.to_owned(),
        outputs.iter().map(|(o, c)| ((*o).to_owned(), *c)).collect(),
    )
}

#[test]
fn the_review_example_keeps_the_diff_and_the_conversation_in_one_job() {
    let (c, p) = partition_of(include_str!("../../examples/review.kdl"));
    assert_eq!(
        jobs(&c, &p),
        vec![
            (
                strings(&["gather", "restore", "review", "scan", "seal"]),
                Vec::new(),
                strings(&["conversation-key", "github-token", "anthropic-key"]),
                "actions:read contents:read pull-requests:read".to_owned()
            ),
            (
                strings(&["post"]),
                strings(&["gather"]),
                strings(&["github-token"]),
                "actions:read checks:write pull-requests:write".to_owned()
            ),
        ]
    );
    // Each join names the edge that forced it, and why its value may not cross.
    assert_eq!(
        joins(&c, &p),
        vec![
            join(
                "gather",
                "review",
                &[
                    ("diff", Carries::Diff),
                    ("since-last-review", Carries::Diff)
                ]
            ),
            join("restore", "review", &[("conversation", Carries::Private)]),
            join("review", "scan", &[("conversation", Carries::Private)]),
            join("review", "seal", &[("conversation", Carries::Private)]),
        ]
    );
    assert!(
        p.reasons
            .iter()
            .all(|r| matches!(r, Reason::Private { .. }))
    );
}

#[test]
fn the_runner_check_example_puts_the_reviewer_with_the_diff_and_posts_apart() {
    let (c, p) = partition_of(include_str!("../../examples/runner-check.kdl"));
    assert_eq!(
        jobs(&c, &p),
        vec![
            (
                strings(&["gather", "review"]),
                Vec::new(),
                strings(&["github-token", "openai-key"]),
                "contents:read pull-requests:read".to_owned()
            ),
            (
                strings(&["post"]),
                strings(&["gather"]),
                strings(&["github-token"]),
                "actions:read checks:write issues:write pull-requests:write".to_owned()
            ),
        ]
    );
    assert_eq!(
        joins(&c, &p),
        vec![join("gather", "review", &[("diff", Carries::Diff)])]
    );
}

#[test]
fn a_stage_between_two_stages_of_a_job_joins_it() {
    // The fixture's pipeline, and a stage after restore that nothing else waits for.
    let text = format!(
        "{}{}",
        include_str!("fixtures/pipelines/between.kdl"),
        r#"stage "other" uses="run" {
    needs "restore"
    command "true"
}
"#
    );
    let (c, p) = partition_of(&text);
    let names: Vec<Vec<String>> = jobs(&c, &p).into_iter().map(|j| j.0).collect();
    assert_eq!(
        names,
        vec![strings(&["restore", "mid", "review"]), strings(&["other"])]
    );
    let between: Vec<(&str, &str, &str)> = p
        .reasons
        .iter()
        .filter_map(|r| match r {
            Reason::Between {
                stage: s,
                after,
                before,
            } => Some((stage(&c, *s), stage(&c, *after), stage(&c, *before))),
            Reason::Private { .. } | Reason::Tangled { .. } => None,
        })
        .collect();
    assert_eq!(between, vec![("mid", "restore", "review")]);
    assert_eq!(p.job_of.len(), 4);
}

/// Two jobs of two stages each that would wait for each other, with no single stage between
/// two stages of one job: the merge is recorded with the two edges that close the cycle.
#[test]
fn two_jobs_that_would_wait_for_each_other_are_one_and_say_why() {
    let text = include_str!("fixtures/pipelines/tangled.kdl");
    let (c, p) = partition_of(text);
    let names: Vec<Vec<String>> = jobs(&c, &p).into_iter().map(|j| j.0).collect();
    assert_eq!(
        names,
        vec![strings(&["review1", "review2", "scan2", "seal1"])]
    );
    let tangled: Vec<[&str; 4]> = p
        .reasons
        .iter()
        .filter_map(|r| match r {
            Reason::Tangled {
                after,
                entry,
                exit,
                before,
            } => Some([
                stage(&c, *after),
                stage(&c, *entry),
                stage(&c, *exit),
                stage(&c, *before),
            ]),
            _ => None,
        })
        .collect();
    // One record for the one cycle, whichever job it starts from.
    assert_eq!(tangled.len(), 1, "{:?}", p.reasons);
    let [after, entry, exit, before] = tangled[0];
    let edges = [(after, entry), (exit, before)];
    assert!(
        edges.contains(&("review1", "review2")) && edges.contains(&("scan2", "seal1")),
        "{tangled:?}"
    );
}

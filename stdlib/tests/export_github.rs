//! The GitHub workflow writer (`docs/export.md`, "The workflow") on pipelines the examples do not
//! cover: a stage caught between two stages of a job, jobs that could run side by side, inputs,
//! and names GitHub cannot hold.

use reviewflow_engine::flow::Flow;
use reviewflow_stdlib::platform::github::export::workflow::{
    Action, ExportError, Source, workflow,
};

/// The workflow of `text`, which runs on `pull_request_target` unless it names its triggers
/// (a pipeline without one is not exported: `a_pipeline_without_a_trigger_is_refused`).
fn export(text: &str) -> Result<String, ExportError> {
    if text.lines().any(|l| l.starts_with("trigger ")) {
        export_as_written(text)
    } else {
        export_as_written(&text.replacen('\n', "\ntrigger \"pull_request_target\"\n", 1))
    }
}

fn export_as_written(text: &str) -> Result<String, ExportError> {
    let registry = reviewflow_stdlib::registry();
    let compiled = reviewflow_engine::compile::compile(
        reviewflow_engine::Source::new("p.kdl", text),
        &registry,
        &reviewflow_engine::syntax::Limits::default(),
    )
    .expect("compiles");
    let flow = Flow::compute(&compiled.pipeline, &registry, &compiled.dag).expect("acyclic");
    workflow(&Source {
        pipeline: &compiled.pipeline,
        registry: &registry,
        dag: &compiled.dag,
        flow: &flow,
        file: ".github/p.kdl",
        action: &Action::default(),
        installed_as: None,
    })
}

/// The lines of the job `id`, from its comments to the next job.
fn job<'a>(text: &'a str, id: &str) -> Vec<&'a str> {
    let lines: Vec<&str> = text.lines().collect();
    let at = lines
        .iter()
        .position(|l| *l == format!("  {id}:"))
        .unwrap_or_else(|| panic!("no job {id}:\n{text}"));
    let start = lines[..at]
        .iter()
        .rposition(|l| !l.starts_with("  #"))
        .map_or(0, |i| i + 1);
    let end = lines[at + 1..]
        .iter()
        .position(|l| l.len() > 2 && l.starts_with("  ") && !l[2..].starts_with(' '))
        .map_or(lines.len(), |i| at + 1 + i);
    lines[start..end].to_vec()
}

#[test]
fn a_stage_between_is_explained() {
    let text = export(include_str!("fixtures/pipelines/between.kdl")).expect("exports");
    let restore = job(&text, "restore");
    assert_eq!(
        &restore[..4],
        &[
            "  # restore, mid and review share this job:",
            "  # - restore → review: restore.conversation is private, and never crosses a job \
             boundary.",
            "  # - restore → mid → review: mid sits between two stages of this job; in a job of \
             its own",
            "  #   it would make the jobs a cycle.",
        ],
        "{text}"
    );
    // A secret other than the workflow's token: the job runs in the pipeline's environment.
    assert!(restore.contains(&"    environment: between"), "{text}");
    assert!(restore.contains(&"          K: ${{ secrets.K }}"), "{text}");
    // The reviewer is `rules`: nothing to install.
    assert!(!text.contains("npm install"), "{text}");
    // One job: nothing to hand over.
    assert!(!text.contains("upload-artifact"), "{text}");
    assert!(!text.contains("--resume"), "{text}");
}

#[test]
fn jobs_that_could_run_side_by_side_run_one_after_another() {
    // b and c both read a only; a run resumes one parent, so c resumes b's run and needs b.
    let text = export(
        r#"
pipeline "diamond"
stage "a" uses="run" {
    command "true"
}
stage "b" uses="run" {
    needs "a"
    command "true"
}
stage "c" uses="run" {
    needs "a"
    command "true"
}
stage "d" uses="run" {
    needs "b" "c"
    command "true"
}
"#,
    )
    .expect("exports");
    let c = job(&text, "c");
    assert!(
        c.contains(&"  # It needs b too: that job's run is the one this job resumes."),
        "{text}"
    );
    assert!(c.contains(&"    needs: [a, b]"), "{text}");
    assert!(
        c.iter().any(|l| l.ends_with(
            "--stages c --run-dir \"$RUNNER_TEMP/reviewflow-runs\" --resume \"$REVIEWFLOW_PARENT_RUN\""
        )),
        "{text}"
    );
    assert!(
        c.contains(&"          REVIEWFLOW_PARENT_RUN: ${{ needs.b.outputs.run-id }}"),
        "{text}"
    );
    let d = job(&text, "d");
    assert!(d.contains(&"    needs: [b, c]"), "{text}");
    assert!(!d.iter().any(|l| l.contains("It needs")), "{text}");
    // The last job hands nothing over; the others do, under their own name.
    assert!(!d.iter().any(|l| l.contains("Hand the run over")), "{text}");
    assert!(c.contains(&"          name: reviewflow-run-c"), "{text}");
    // No secret, no environment; every job still checks out with the read that needs.
    assert!(!text.contains("environment:"), "{text}");
    assert!(d.contains(&"      contents: read # the checkout"), "{text}");
}

#[test]
fn inputs_come_from_variables_unless_they_have_a_default() {
    let text = export(
        r#"
pipeline "inputs"
input "project" env="PROJECT"
input "depth" env="DEPTH" default="3"
stage "a" uses="run" {
    command "echo" "{project}" "{depth}"
}
"#,
    )
    .expect("exports");
    assert!(
        text.contains("          PROJECT: ${{ vars.PROJECT }}\n"),
        "{text}"
    );
    assert!(!text.contains("DEPTH"), "{text}");
}

#[test]
fn a_secret_github_cannot_hold_is_refused() {
    let err = export(
        r#"
pipeline "bad"
secret "t" env="GITHUB_OTHER" {
    visible-to "a"
}
stage "a" uses="run" {
    command "true"
    secret-env "T" "t"
}
"#,
    )
    .expect_err("refused");
    assert!(
        matches!(&err, ExportError::Unexportable(m) if m.contains("GITHUB_OTHER")),
        "{err}"
    );
}

#[test]
fn a_pipeline_without_stages_is_refused() {
    let err = export("pipeline \"empty\"\n").expect_err("refused");
    assert!(
        matches!(&err, ExportError::Unexportable(m) if m.contains("no stage")),
        "{err}"
    );
}

#[test]
fn a_stage_named_like_a_yaml_boolean_gets_a_job_id_yaml_keeps_a_string() {
    let text = export(
        r#"
pipeline "words"
stage "on" uses="run" {
    command "true"
}
stage "on-job" uses="run" {
    command "true"
}
stage "yes" uses="run" {
    needs "on"
    command "true"
}
"#,
    )
    .expect("exports");
    assert!(text.contains("\n  on-job-2:\n    name: \"on\"\n"), "{text}");
    assert!(text.contains("\n  on-job:\n    name: on-job\n"), "{text}");
    assert!(text.contains("\n  yes-job:\n"), "{text}");
    assert!(text.contains("needs.on-job-2.outputs.run-id"), "{text}");
}

/// The lines of the workflow's `on:` block.
fn on_block(text: &str) -> Vec<&str> {
    text.lines()
        .skip_while(|l| *l != "on:")
        .skip(1)
        .take_while(|l| !l.is_empty())
        .collect()
}

/// No event is assumed: the widest, `pull_request_target` into every branch, would hand the
/// secrets to every branch's copy of the workflow.
#[test]
fn a_pipeline_without_a_trigger_is_refused() {
    let refused =
        export_as_written("pipeline \"p\"\nstage \"a\" uses=\"run\" {\n    command \"true\"\n}\n");
    assert!(
        matches!(&refused, Err(ExportError::Unexportable(m)) if m.contains("names no trigger")),
        "{refused:?}"
    );
}

#[test]
fn pull_request_target_runs_on_the_default_types_and_checks_out_the_base() {
    let text = export_as_written(
        "pipeline \"p\"\ntrigger \"pull_request_target\"\nstage \"a\" uses=\"run\" {\n    command \"true\"\n}\n",
    )
    .expect("exports");
    assert_eq!(
        on_block(&text),
        [
            "  pull_request_target: # zizmor: ignore[dangerous-triggers] no code of the pull request runs",
            "    types: [opened, synchronize, reopened, ready_for_review]",
        ]
    );
    assert!(
        text.contains("      - name: Check out the base branch\n"),
        "{text}"
    );
    assert!(
        text.contains("  group: p-${{ github.event.pull_request.number }}\n"),
        "{text}"
    );
    assert!(!text.contains("inputs."), "{text}");
}

#[test]
fn triggers_come_from_the_pipeline_in_a_fixed_order() {
    let text = export(
        r#"
pipeline "p"
trigger "workflow_dispatch"
trigger "pull_request" types="opened labeled opened" branches="main !release/old release/**"
trigger "pull_request_target" branches="main"
stage "a" uses="run" {
    command "true"
}
"#,
    )
    .expect("exports");
    assert_eq!(
        on_block(&text),
        [
            "  pull_request_target: # zizmor: ignore[dangerous-triggers] no code of the pull request runs",
            "    types: [opened, synchronize, reopened, ready_for_review]",
            "    branches: ['main']",
            "  pull_request:",
            "    types: [opened, labeled]",
            "    branches: ['main', '!release/old', 'release/**']",
            "  workflow_dispatch:",
            "    inputs:",
            "      pull-request:",
            "        description: The number of the pull request to review",
            "        required: true",
            "        type: number",
        ]
    );
    // Each event says where the workflow and the pipeline come from.
    for event in ["pull_request_target", "pull_request", "workflow_dispatch"] {
        assert!(
            text.contains(&format!("# It runs on {event}: ")),
            "{event}\n{text}"
        );
    }
    // A dispatched review waits for the pull request's other reviews like a push does.
    assert!(
        text.contains(
            "  group: \"p-${{ github.event.pull_request.number || inputs.pull-request }}\"\n"
        ),
        "{text}"
    );
    // Not only the base branch: the checkout is GitHub's default for each event.
    assert!(
        text.contains("      - name: Check out the workflow's own commit\n"),
        "{text}"
    );
    assert!(!text.contains("ref:"), "{text}");
}

#[test]
fn a_job_runs_in_the_environment_its_secrets_name() {
    let text = export(
        r#"
pipeline "p"
secret "key" env="KEY" environment="review keys" {
    visible-to "a"
}
secret "other" env="OTHER" {
    visible-to "b"
}
secret "token" env="GITHUB_TOKEN" {
    visible-to "c"
}
stage "a" uses="run" {
    command "true"
    secret-env "KEY" "key"
}
stage "b" uses="run" {
    command "true"
    secret-env "OTHER" "other"
}
stage "c" uses="run" {
    command "true"
    secret-env "GH_TOKEN" "token"
}
"#,
    )
    .expect("exports");
    assert!(
        job(&text, "a").contains(&"    environment: review keys"),
        "{text}"
    );
    // Without `environment=`, the pipeline's; the workflow's own token needs none.
    assert!(job(&text, "b").contains(&"    environment: p"), "{text}");
    assert!(
        !job(&text, "c").iter().any(|l| l.contains("environment")),
        "{text}"
    );
}

#[test]
fn secrets_of_two_environments_in_one_job_are_refused() {
    let err = export(
        r#"
pipeline "p"
secret "key" env="KEY" environment="one" {
    visible-to "a"
}
secret "other" env="OTHER" environment="two" {
    visible-to "a"
}
stage "a" uses="run" {
    command "true"
    secret-env "KEY" "key"
    secret-env "OTHER" "other"
}
"#,
    )
    .expect_err("refused");
    assert!(
        matches!(&err, ExportError::Unexportable(m)
            if m.contains("two environments") && m.contains("`one` (secret `key`)")
                && m.contains("`two` (secret `other`)")),
        "{err}"
    );
}

#[test]
fn jobs_that_would_wait_for_each_other_are_explained_by_the_two_edges() {
    let text = export(include_str!("fixtures/pipelines/tangled.kdl")).expect("exports");
    let lines = job(&text, "review1");
    let at = lines
        .iter()
        .position(|l| l.contains(" would wait for the job of "))
        .unwrap_or_else(|| panic!("no tangled join named:\n{text}"));
    let said = format!("{}\n{}", lines[at], lines[at + 1]);
    // The cycle is named once, from the side of the job of review2 and scan2.
    assert_eq!(
        said,
        "  # - review1 → review2 and scan2 → seal1: apart, the job of review2 would wait for the job of review1,\n  #   and the job of seal1 for it."
    );
    assert_eq!(
        lines
            .iter()
            .filter(|l| l.contains(" would wait for "))
            .count(),
        1
    );
}

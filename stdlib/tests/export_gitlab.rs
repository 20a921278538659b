//! The GitLab pipeline writer (docs/gitlab.md, "The exported pipeline"): a representative
//! export, each refusal, one environment per job, and no secret's value in the text.

use reviewflow_engine::export::{Exporter, Request};
use reviewflow_engine::flow::Flow;
use reviewflow_stdlib::platform::gitlab::export::PipelineExporter;

const IMAGE: &str = "registry.example.com/reviewflow@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

fn export(text: &str) -> Result<String, String> {
    let registry = reviewflow_stdlib::registry();
    let compiled = reviewflow_engine::compile::compile(
        reviewflow_engine::Source::new("ci/review.kdl", text),
        &registry,
        &reviewflow_engine::syntax::Limits::default(),
    )
    .expect("compiles");
    let flow = Flow::compute(&compiled.pipeline, &registry, &compiled.dag).expect("acyclic");
    let options = [("image", IMAGE.to_owned())];
    PipelineExporter.export(&Request {
        pipeline: &compiled.pipeline,
        registry: &registry,
        source: &compiled.source,
        dag: &compiled.dag,
        flow: &flow,
        file: "ci/review.kdl",
        written_as: None,
        options: &options,
    })
}

/// Three jobs: gather with review (the diff) and the forge's token, a stage that reads a model
/// key in its own environment, and post with the forge's token again.
const SHAPES: &str = r#"pipeline "mr-review"

input "mr" env="REVIEWFLOW_MERGE_REQUEST" pattern="^[0-9]{1,10}$"

forge "gitlab" token="gitlab-token" merge-request="{mr}"

trigger "trigger"
trigger "schedule"

secret "gitlab-token" env="REVIEW_GITLAB_TOKEN" environment="review-forge" {
    visible-to "gather" "post"
}
secret "model-key" env="MODEL_KEY" environment="review-model" {
    visible-to "summary"
}

stage "gather" uses="std/gather" {
}

stage "review" uses="std/review" timeout="90m" {
    reviewer "rules"
    untrusted "gather.diff"
}

stage "summary" uses="run" {
    needs "review"
    command "true"
    secret-env "MODEL_KEY" "model-key"
}

stage "post" uses="std/post" {
    needs "summary"
    comment "review.comment"
    findings "review.findings"
    require-head "gather.head"
    check-run "mr-review"
}
"#;

/// The lines of the job `id`, from its name to the next top-level key.
fn job<'a>(text: &'a str, id: &str) -> Vec<&'a str> {
    let lines: Vec<&str> = text.lines().collect();
    let at = lines
        .iter()
        .position(|l| *l == format!("{id}:"))
        .unwrap_or_else(|| panic!("no job {id}:\n{text}"));
    let end = lines[at + 1..]
        .iter()
        .position(|l| !l.is_empty() && !l.starts_with(' '))
        .map_or(lines.len(), |i| at + 1 + i);
    lines[at..end].to_vec()
}

#[test]
fn a_representative_export() {
    let text = export(SHAPES).unwrap_or_else(|e| panic!("{e}"));
    insta::assert_snapshot!(text);
}

#[test]
fn each_job_runs_in_exactly_its_stages_environment() {
    let text = export(SHAPES).unwrap_or_else(|e| panic!("{e}"));
    for (id, env) in [
        ("gather", Some("review-forge")),
        ("summary", Some("review-model")),
        ("post", Some("review-forge")),
    ] {
        let lines = job(&text, id);
        let names: Vec<&str> = lines
            .iter()
            .filter_map(|l| l.strip_prefix("    name: "))
            .collect();
        assert_eq!(names, env.into_iter().collect::<Vec<_>>(), "{id}:\n{text}");
    }
    // Every environment is listed once in the header, with its variables.
    for line in [
        "#   environment review-forge: REVIEW_GITLAB_TOKEN",
        "#   environment review-model: MODEL_KEY",
    ] {
        assert!(text.lines().any(|l| l == line), "{line}\n{text}");
    }
}

#[test]
fn jobs_resume_the_one_before_through_its_dotenv_report() {
    let text = export(SHAPES).unwrap_or_else(|e| panic!("{e}"));
    let gather = job(&text, "gather");
    assert!(gather.contains(&"  needs: []"), "{text}");
    assert!(gather.contains(&"      dotenv: reviewflow.env"), "{text}");
    assert!(
        gather.contains(
            &"    - reviewflow run ci/review.kdl --stages gather,review --run-dir reviewflow-runs"
        ),
        "{text}"
    );
    assert!(gather.contains(&"  timeout: 105 minutes"), "{text}");
    let post = job(&text, "post");
    assert!(
        post.windows(3)
            .any(|w| w == ["  needs:", "    - job: summary", "      artifacts: true"]),
        "{text}"
    );
    assert!(
        post.iter().any(|l| l.ends_with(
            "--stages post --run-dir reviewflow-runs --resume \"$REVIEWFLOW_PARENT_RUN\""
        )),
        "{text}"
    );
    // The last job hands nothing on.
    assert!(!post.iter().any(|l| l.contains("dotenv")), "{text}");
}

#[test]
fn only_the_named_sources_on_a_protected_ref_run_it() {
    let text = export(SHAPES).unwrap_or_else(|e| panic!("{e}"));
    let rules: Vec<&str> = text
        .lines()
        .skip_while(|l| *l != "workflow:")
        .take_while(|l| !l.is_empty())
        .collect();
    assert_eq!(
        rules,
        [
            "workflow:",
            "  rules:",
            "    - if: '$CI_PIPELINE_SOURCE == \"schedule\" && $CI_COMMIT_REF_PROTECTED == \"true\"'",
            "    - if: '$CI_PIPELINE_SOURCE == \"trigger\" && $CI_COMMIT_REF_PROTECTED == \"true\"'",
            "    - when: never",
        ]
    );
}

#[test]
fn no_secret_value_or_variable_reference_is_written() {
    let text = export(SHAPES).unwrap_or_else(|e| panic!("{e}"));
    // The jobs get their variables from the project; the file names them only in the header.
    for var in ["REVIEW_GITLAB_TOKEN", "MODEL_KEY"] {
        assert!(
            text.lines()
                .filter(|l| l.contains(var))
                .all(|l| l.starts_with('#') || l.trim_start().starts_with('#')),
            "{var}\n{text}"
        );
        assert!(!text.contains(&format!("${var}")), "{var}\n{text}");
    }
}

#[test]
fn the_export_is_deterministic() {
    assert_eq!(export(SHAPES), export(SHAPES));
}

fn refused(text: &str) -> String {
    match export(text) {
        Ok(out) => panic!("exported:\n{out}"),
        Err(e) => e,
    }
}

#[test]
fn a_pipeline_without_a_trigger_is_refused() {
    let e = refused(&SHAPES.replace("trigger \"trigger\"\ntrigger \"schedule\"\n", ""));
    assert!(e.contains("names no trigger"), "{e}");
}

#[test]
fn merge_request_event_is_refused() {
    let e = refused(&SHAPES.replace("trigger \"trigger\"\n", "trigger \"merge_request_event\"\n"));
    assert!(
        e.starts_with("line 7: `trigger \"merge_request_event\"` cannot be exported"),
        "{e}"
    );
    assert!(e.contains("the change's own copy of .gitlab-ci.yml"), "{e}");
}

#[test]
fn an_event_of_another_platform_is_refused() {
    let e = refused(&SHAPES.replace("trigger \"trigger\"\n", "trigger \"workflow_dispatch\"\n"));
    assert!(e.contains("is not a GitLab pipeline source"), "{e}");
}

#[test]
fn secrets_of_two_environments_in_one_job_are_refused() {
    // review reads the model key too: gather's job would hold review-forge and review-model.
    let text = SHAPES
        .replace(
            "visible-to \"summary\"",
            "visible-to \"summary\" \"review\"",
        )
        .replace(
            "    reviewer \"rules\"\n",
            "    reviewer \"rules\"\n    secret-env \"MODEL_KEY\" \"model-key\"\n",
        );
    let e = refused(&text);
    assert!(
        e.contains("job `gather` would hold secrets of two environments, `review-forge`"),
        "{e}"
    );
}

#[test]
fn a_publishing_stage_that_holds_no_writing_secret_is_refused() {
    let e = refused(&SHAPES.replace(
        "secret \"gitlab-token\" env=\"REVIEW_GITLAB_TOKEN\"",
        "secret \"gitlab-token\" env=\"REVIEW_GITLAB_TOKEN\" can=\"read_api:read\"",
    ));
    assert!(
        e.contains("stage `post` publishes but holds no secret that can write"),
        "{e}"
    );
}

#[test]
fn a_store_is_refused() {
    let text = SHAPES.replace(
        "trigger \"schedule\"\n",
        "trigger \"schedule\"\n\nstore \"conversations\" kind=\"local\" name=\"review-{change}\" {\n    trust local=#true\n}\n",
    );
    let e = refused(&text);
    assert!(e.contains("store `conversations` is kind `local`"), "{e}");
    assert!(e.contains("on the machine that ran the job"), "{e}");
    assert!(e.contains("kind=\"gitlab-artifacts\""), "{e}");
    // A store kept with another platform is refused for what it is.
    let github = SHAPES.replace(
        "trigger \"schedule\"\n",
        "trigger \"schedule\"\n\nstore \"conversations\" kind=\"github-artifacts\" name=\"review-{change}\" {\n    trust workflow=\".github/workflows/review.yml\" event=\"pull_request_target\"\n}\n",
    );
    let e = refused(&github);
    assert!(e.contains("kind `github-artifacts`"), "{e}");
    assert!(e.contains("with another platform"), "{e}");
}

/// SHAPES keeping in a `gitlab-artifacts` store trusted for job `job`.
fn with_store(job: &str) -> String {
    SHAPES
        .replace(
            "trigger \"schedule\"\n",
            &format!(
                "trigger \"schedule\"\n\nstore \"conversations\" kind=\"gitlab-artifacts\" name=\"review-{{change}}\" {{\n    trust ref=\"main\" source=\"trigger\" job=\"{job}\"\n    max-tries 10\n    max-run-lookups 50\n}}\n"
            ),
        )
        .replace(
            "    check-run \"mr-review\"\n",
            "    check-run \"mr-review\"\n    upload to=\"conversations\"\n",
        )
}

#[test]
fn the_job_that_keeps_uploads_the_stores_folder_for_a_month() {
    let text = export(&with_store("post")).unwrap_or_else(|e| panic!("{e}"));
    let post = job(&text, "post");
    assert!(post.contains(&"      - reviewflow-store/"), "{post:#?}");
    assert!(post.contains(&"    expire_in: 30 days"), "{post:#?}");
    // The other jobs keep their runs a day and no store folder.
    for id in ["gather", "summary"] {
        let other = job(&text, id);
        assert!(
            !other.iter().any(|l| l.contains("reviewflow-store")),
            "{other:#?}"
        );
        assert!(other.contains(&"    expire_in: 1 day"), "{other:#?}");
    }
}

#[test]
fn a_store_trusting_another_job_than_the_one_that_keeps_is_refused() {
    let e = refused(&with_store("gather"));
    assert!(
        e.contains("trusts the artifacts of job `gather`, but the job that keeps is `post`"),
        "{e}"
    );
}

#[test]
fn a_secret_gitlab_cannot_hold_is_refused() {
    let e = refused(&SHAPES.replace("env=\"MODEL_KEY\"", "env=\"CI_MODEL_KEY\""));
    assert!(e.contains("cannot name a GitLab project variable"), "{e}");
}

#[test]
fn a_stage_named_like_a_keyword_gets_another_job_name() {
    let text =
        export(&SHAPES.replace("\"summary\"", "\"pages\"")).unwrap_or_else(|e| panic!("{e}"));
    assert!(text.lines().any(|l| l == "pages-job:"), "{text}");
    assert!(!text.lines().any(|l| l == "pages:"), "{text}");
}

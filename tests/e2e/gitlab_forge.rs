//! `reviewflow check` on a pipeline whose forge is `gitlab`: accepted as the other forge kinds
//! are, with the forge's own refusals (a job token, plain http to another machine) in the words
//! `run` would say them.

use crate::support::findings_json;

const PIPELINE: &str = r#"pipeline "gitlab-review"

forge "gitlab" token="gitlab-token" SETTINGS

secret "gitlab-token" env="TOKEN_VARIABLE" {
    visible-to "gather" "post"
}

stage "gather" uses="std/gather" {
    since-last-review
}

stage "review" uses="std/review" {
    reviewer "rules"
    untrusted "gather.diff"
}

stage "post" uses="std/post" {
    comment "review.comment"
    findings "review.findings"
    ranges "gather.ranges"
    require-head "gather.head"
    check-run "gitlab-review"
}
"#;

/// The findings of `check` on the pipeline with these settings and token variable:
/// `(check, message)`.
fn findings(settings: &str, variable: &str) -> Vec<(String, String)> {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("review.kdl");
    let text = PIPELINE
        .replace("SETTINGS", settings)
        .replace("TOKEN_VARIABLE", variable);
    std::fs::write(&path, text).expect("written");
    let json = findings_json(path.to_str().expect("utf-8"));
    json["files"][0]["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .map(|f| {
            (
                f["check"].as_str().unwrap_or("").to_string(),
                f["message"].as_str().unwrap_or("").to_string(),
            )
        })
        // The GitLab platform is registered, so `shared-job` judges the jobs: gather holds the
        // forge's token beside review (docs/gitlab.md, "The exported pipeline"). Not the forge's
        // settings, which are what these tests are about.
        .filter(|(check, _)| check != "shared-job")
        .collect()
}

#[test]
fn check_accepts_a_gitlab_forge() {
    assert_eq!(findings("", "REVIEW_GITLAB_TOKEN"), []);
    assert_eq!(
        findings(
            r#"api-url="https://gitlab.example.com/api/v4" project-id="acme/widgets" merge-request="7" timeout="20s" retries=2 note-authors="project_42_bot_5f1c2a""#,
            "REVIEW_GITLAB_TOKEN"
        ),
        []
    );
}

#[test]
fn check_refuses_a_job_token_and_plain_http_as_run_would() {
    let job = findings("", "CI_JOB_TOKEN");
    assert_eq!(job.len(), 1, "{job:?}");
    assert_eq!(job[0].0, "run-refusal");
    assert!(job[0].1.contains("CI_JOB_TOKEN"), "{job:?}");
    let http = findings(
        r#"api-url="http://gitlab.example.com/api/v4""#,
        "REVIEW_GITLAB_TOKEN",
    );
    assert_eq!(http.len(), 1, "{http:?}");
    assert!(
        http[0].1.contains("plain http to another machine"),
        "{http:?}"
    );
}

/// Principle 2: `CI_JOB_TOKEN` held by a stage that reads the change, with no `can=`, says
/// nothing of what it can do, so it is taken to write: the job token of some instances writes
/// more than notes, and the file does not say which instance it runs on.
#[test]
fn a_job_token_with_no_can_is_taken_to_write() {
    let text = r#"pipeline "gitlab-review"
forge "gitlab" token="gitlab-token"
secret "gitlab-token" env="REVIEW_GITLAB_TOKEN" {
    visible-to "gather" "post"
}
secret "job-token" env="CI_JOB_TOKEN" {
    visible-to "linked"
}
stage "gather" uses="std/gather"
stage "linked" uses="run" {
    command "/usr/local/bin/check-linked-issue"
    cwd "{work}"
    stdin "{gather.body}"
    secret-env "CI_JOB_TOKEN" "job-token"
    output "comment" type="text"
}
stage "post" uses="std/post" {
    comment "linked.comment"
    require-head "gather.head"
}
"#;
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("review.kdl");
    std::fs::write(&path, text).expect("written");
    let json = findings_json(path.to_str().expect("utf-8"));
    let found: Vec<(String, String)> = json["files"][0]["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .map(|f| {
            (
                f["check"].as_str().unwrap_or("").to_string(),
                f["message"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    assert!(
        found
            .iter()
            .any(|(check, message)| check == "write-token-injection"
                && message.contains("job-token")
                && message.contains("taken to write")),
        "{found:#?}"
    );
}

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

//! A review started by hand: on `workflow_dispatch` the workflow `export github` writes asks for
//! the pull request as the input `pull-request`, and the `github` forge reads it from the event
//! payload (docs/language.md, `trigger`).

use crate::fail_on_github::{PR, RULES, fake, pipeline, run_on};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dispatched_run_reviews_the_pull_request_its_input_names() {
    let fake = fake().await;
    // GitHub keeps a dispatch's inputs as strings in the payload.
    let payload = format!(
        r#"{{"inputs":{{"pull-request":"{PR}"}},"ref":"refs/heads/main","workflow":".github/workflows/review.yml"}}"#
    );
    let out = run_on(
        &fake,
        &pipeline(RULES, ""),
        &[],
        "workflow_dispatch",
        &payload,
    )
    .await;
    let log = out.transcript();
    assert_eq!(out.code, 0, "{log}");
    assert_eq!(fake.comments(PR).len(), 1, "the review is posted on #{PR}");
    assert_eq!(fake.check_runs().len(), 1, "{log}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dispatched_run_without_a_pull_request_stops_before_any_stage() {
    let fake = fake().await;
    for payload in [
        r#"{"inputs":{},"ref":"refs/heads/main"}"#,
        r#"{"inputs":{"pull-request":"9; rm -rf /"},"ref":"refs/heads/main"}"#,
    ] {
        let out = run_on(
            &fake,
            &pipeline(RULES, ""),
            &[],
            "workflow_dispatch",
            payload,
        )
        .await;
        let log = out.transcript();
        assert_eq!(out.code, 2, "{payload}: {log}");
        assert!(log.contains("no pull request"), "{payload}: {log}");
        assert!(fake.comments(PR).is_empty(), "{payload}: nothing posted");
    }
}

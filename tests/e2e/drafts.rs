//! Drafts (`docs/github.md`, "Drafts"): a pipeline whose review stage says
//! `when="!gather.draft"` skips a draft pull request (or GitLab merge request), says why in the
//! check run (neutral) or the commit status (failed), and reviews it once it is marked ready.

use crate::fail_on_github::{PR, RULES, fake, pipeline, run_on};

/// The rules review, gated on the change not being a draft.
fn skipping_drafts() -> String {
    let review = RULES.replace(
        "stage \"review\" uses=\"std/review\" {",
        "stage \"review\" uses=\"std/review\" when=\"!gather.draft\" {",
    );
    assert_ne!(
        review, RULES,
        "the review stage is where the test expects it"
    );
    pipeline(&review, "")
}

fn payload(action: &str) -> String {
    format!(r#"{{"action":"{action}","number":{PR},"pull_request":{{"number":{PR}}}}}"#)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_draft_pull_request_is_skipped_with_the_reason_and_reviewed_once_ready() {
    let fake = fake().await;
    fake.set_draft(PR, true);
    let draft = run_on(
        &fake,
        &skipping_drafts(),
        &[],
        "pull_request_target",
        &payload("opened"),
    )
    .await;
    let log = draft.transcript();
    assert_eq!(draft.code, 0, "{log}");
    assert!(
        log.contains("the change is a draft: a stage gated on `!gather.draft` is skipped until it is marked ready for review"),
        "{log}"
    );
    assert!(
        fake.comments(PR).is_empty(),
        "nothing reviewed, nothing commented"
    );
    let runs = fake.check_runs();
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_eq!(
        runs[0]["conclusion"], "neutral",
        "a skipped draft is not a pass"
    );
    let title = runs[0]["output"]["title"].as_str().unwrap_or_default();
    assert!(
        title.starts_with("Not reviewed: the change is a draft, reviewed once marked ready for review; the review did not run: `review` was skipped"),
        "{title}"
    );

    // Under `--fail-on` a skipped draft is not reviewed: exit 4, never a pass.
    let judged = run_on(
        &fake,
        &skipping_drafts(),
        &["--fail-on", "error"],
        "pull_request_target",
        &payload("synchronize"),
    )
    .await;
    assert_eq!(judged.code, 4, "{}", judged.transcript());

    // Marked ready for review: the workflow runs again, and the review runs.
    fake.set_draft(PR, false);
    let ready = run_on(
        &fake,
        &skipping_drafts(),
        &[],
        "pull_request_target",
        &payload("ready_for_review"),
    )
    .await;
    let log = ready.transcript();
    assert_eq!(ready.code, 0, "{log}");
    assert!(!log.contains("is a draft"), "{log}");
    assert_eq!(fake.comments(PR).len(), 1, "{log}");
    let runs = fake.check_runs();
    assert_eq!(runs.len(), 3, "{runs:?}");
    assert_eq!(
        runs[2]["conclusion"], "failure",
        "reviewed: its findings block"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_draft_merge_request_is_skipped_with_the_reason_and_reviewed_once_ready() {
    use crate::gitlab_step::{MR, our_notes, pipeline, run, seeded};
    let fake = seeded(&"1".repeat(40), &"2".repeat(40)).await;
    fake.set_draft(MR, true);
    let gated = pipeline(" when=\"!gather.draft\"");
    let draft = run(&fake, &gated, &[], &[]).await;
    let log = draft.transcript();
    assert_eq!(draft.code, 0, "{log}");
    assert!(log.contains("the change is a draft"), "{log}");
    assert!(our_notes(&fake).is_empty(), "{log}");
    let statuses = fake.statuses();
    assert_eq!(statuses.len(), 1, "{statuses:?}");
    assert_eq!(
        statuses[0]["status"], "failed",
        "GitLab has no neutral: {statuses:?}"
    );
    let description = statuses[0]["description"].as_str().unwrap_or_default();
    assert!(description.contains("draft"), "{description}");

    fake.set_draft(MR, false);
    let ready = run(&fake, &gated, &[], &[]).await;
    assert_eq!(ready.code, 0, "{}", ready.transcript());
    assert_eq!(our_notes(&fake).len(), 1, "{}", ready.transcript());
    let statuses = fake.statuses();
    assert_eq!(statuses.len(), 2, "{statuses:?}");
    assert_eq!(
        statuses[1]["status"], "success",
        "a TODO does not block: {statuses:?}"
    );
}

/// `check` takes the draft gate alone as routed (`std/post` says why the review did not run),
/// and any other condition as a skip nobody reports (`fail-closed`).
#[test]
fn check_admits_the_draft_gate_alone() {
    let dir = tempfile::tempdir().expect("tempdir");
    for (when, clean) in [
        ("!gather.draft", true),
        ("!gather.draft && gather.changed", false),
        ("gather.changed", false),
    ] {
        let review = RULES.replace(
            "stage \"review\" uses=\"std/review\" {",
            &format!("stage \"review\" uses=\"std/review\" when=\"{when}\" {{"),
        );
        std::fs::write(dir.path().join("review.kdl"), pipeline(&review, "")).expect("write");
        let out = crate::support::reviewflow_in(dir.path(), &["check", "review.kdl"]);
        let log = out.transcript();
        assert_eq!(out.code == 0, clean, "{when}: {log}");
        assert_eq!(!log.contains("fail-closed"), clean, "{when}: {log}");
    }
}

/// A trigger whose `types` leave out `ready_for_review` never reviews a skipped draft once it is
/// ready: `check` warns (`trigger`); the default types, or a list with it, are clean.
#[test]
fn check_warns_of_a_trigger_that_never_sees_a_draft_marked_ready() {
    let dir = tempfile::tempdir().expect("tempdir");
    let review = RULES.replace(
        "stage \"review\" uses=\"std/review\" {",
        "stage \"review\" uses=\"std/review\" when=\"!gather.draft\" {",
    );
    for (trigger, warned) in [
        (
            r#"trigger "pull_request_target" branches="main" types="opened synchronize""#,
            true,
        ),
        (
            r#"trigger "pull_request_target" branches="main" types="opened synchronize ready_for_review""#,
            false,
        ),
        (r#"trigger "pull_request_target" branches="main""#, false),
    ] {
        let text = format!("{}{trigger}\n", pipeline(&review, ""));
        std::fs::write(dir.path().join("review.kdl"), text).expect("write");
        let out = crate::support::reviewflow_in(dir.path(), &["check", "review.kdl"]);
        let log = out.transcript();
        assert_eq!(
            log.contains("starts no review when a draft pull request is marked ready")
                && log.contains("help: add `ready_for_review` to `types`"),
            warned,
            "{trigger}: {log}"
        );
    }
}

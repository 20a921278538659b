//! The GitLab REST client against the fake GitLab: both pagination styles, where the token
//! goes, GitLab's error JSON, retries on 5xx, a next page on another host, a bounded listing.

// Test helpers unwrap as the tests do (clippy's allow-unwrap-in-tests covers only the
// `#[test]` functions themselves).
#![allow(clippy::unwrap_used)]

mod support;

use std::time::Duration;

use reviewflow_stdlib::github::RetryPolicy;
use reviewflow_stdlib::gitlab::{Client, ClientConfig, GitlabError, unified_diff};
use serde_json::json;
use support::fake_gitlab::{FakeGitlab, Fault, MrSeed, PROJECT_ID, Paging, RouteKind};
use zeroize::Zeroizing;

const TOKEN: &str = "glpat-FAKEtoken0123456789ab";
const BASE: &str = "1111111111111111111111111111111111111111";
const HEAD: &str = "2222222222222222222222222222222222222222";
const MR: u64 = 7;

fn config(fake: &FakeGitlab, project: &str) -> ClientConfig {
    ClientConfig {
        api_url: fake.api_url(),
        token: Some(Zeroizing::new(TOKEN.to_owned())),
        project: project.into(),
        timeout: Duration::from_secs(10),
        retry: RetryPolicy {
            max_attempts: 3,
            base_delay: Duration::from_millis(5),
            max_wait: Duration::from_secs(2),
        },
    }
}

async fn started() -> (FakeGitlab, Client) {
    let fake = FakeGitlab::start().await;
    fake.require_token(TOKEN);
    fake.add_merge_request(MrSeed::new(MR, BASE, HEAD));
    let client = Client::new(config(&fake, &PROJECT_ID.to_string())).unwrap();
    (fake, client)
}

fn assert_clean(error: &GitlabError) {
    let shown = error.to_string();
    assert!(!shown.contains(TOKEN), "{shown}");
    assert!(!format!("{error:?}").contains(TOKEN));
    assert!(!shown.contains('\n'), "{shown}");
}

#[tokio::test]
async fn reads_a_merge_request_with_its_diff_refs() {
    let (fake, client) = started().await;
    let mr = client.merge_request(MR).await.unwrap();
    assert_eq!(mr.iid, MR);
    assert_eq!(mr.title, "Add the widget cache");
    assert_eq!(mr.source_branch, "feature/cache");
    assert_eq!(mr.author.unwrap().username, "alice");
    let refs = mr.diff_refs.unwrap();
    assert_eq!(
        (refs.base_sha.as_str(), refs.head_sha.as_str()),
        (BASE, HEAD)
    );
    let log = fake.requests();
    assert_eq!(
        log[0].path_and_query,
        format!("/api/v4/projects/{PROJECT_ID}/merge_requests/{MR}")
    );
    // The token: in PRIVATE-TOKEN, never in the URL, no other header.
    assert_eq!(log[0].private_token.as_deref(), Some(TOKEN));
    assert_eq!(log[0].authorization, None);
    assert!(!log[0].path_and_query.contains(TOKEN));
}

#[tokio::test]
async fn a_project_path_is_one_encoded_segment() {
    let (fake, _) = started().await;
    let client = Client::new(config(&fake, "acme/widgets")).unwrap();
    client.merge_request(MR).await.unwrap();
    assert_eq!(
        fake.requests()[0].path_and_query,
        format!("/api/v4/projects/acme%2Fwidgets/merge_requests/{MR}")
    );
}

#[tokio::test]
async fn the_diff_is_paginated_by_link_by_x_next_page_or_both() {
    for paging in [Paging::Both, Paging::LinkOnly, Paging::NextPageOnly] {
        let (fake, client) = started().await;
        fake.paging(paging);
        for i in 0..250 {
            fake.add_diff(
                MR,
                &format!("src/f{i}.rs"),
                &format!("src/f{i}.rs"),
                "@@ -1 +1 @@\n-a\n+b\n",
            );
        }
        let (files, pages) = client.merge_request_diffs(MR, 10, 1 << 30).await.unwrap();
        assert_eq!(files.len(), 250, "{paging:?}");
        assert_eq!(files[249].new_path, "src/f249.rs");
        assert_eq!(pages.pages, 3);
        assert_eq!(fake.count(RouteKind::Diffs), 3, "{paging:?}");
        for r in fake.requests() {
            assert_eq!(r.private_token.as_deref(), Some(TOKEN), "{paging:?}");
        }
        let diff = unified_diff(&files).unwrap();
        let parsed = reviewflow_stdlib::diff::parse(&diff);
        assert_eq!(parsed.files.len(), 250);
        assert!(parsed.problems.is_empty());
    }
}

#[tokio::test]
async fn a_diff_past_its_page_cap_is_refused_not_cut() {
    let (fake, client) = started().await;
    for i in 0..250 {
        fake.add_diff(
            MR,
            &format!("f{i}"),
            &format!("f{i}"),
            "@@ -1 +1 @@\n-a\n+b\n",
        );
    }
    let e = client
        .merge_request_diffs(MR, 2, 1 << 30)
        .await
        .unwrap_err();
    assert!(e.to_string().contains("not reviewed in part"), "{e}");
    assert_eq!(fake.count(RouteKind::Diffs), 2);
}

#[tokio::test]
async fn a_flood_of_notes_is_read_to_the_cap_and_no_further() {
    let (fake, client) = started().await;
    fake.flood_notes(MR, 5000, "spam", "mallory");
    let (notes, paging) = client.notes_until(MR, 20, false, |_| false).await.unwrap();
    assert_eq!(notes.len(), 2000);
    assert!(!paging.complete);
    assert_eq!(fake.count(RouteKind::ListNotes), 20);
}

#[tokio::test]
async fn gitlabs_error_json_becomes_one_clear_line() {
    let (fake, client) = started().await;
    let e = client.merge_request(99).await.unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "GitLab answered 404 to GET /projects/{PROJECT_ID}/merge_requests/99: 404 Not found"
        )
    );
    assert_clean(&e);
    fake.fault(
        RouteKind::CreateNote,
        Fault::Body(
            400,
            json!({"message": {"note": ["is too long (maximum is 1000000 characters)"]}}),
        ),
    );
    let e = client.create_note(MR, "x").await.unwrap_err();
    assert!(
        e.to_string()
            .ends_with("note is too long (maximum is 1000000 characters)"),
        "{e}"
    );
    fake.fault(
        RouteKind::MergeRequest,
        Fault::Body(401, json!({"error": "invalid_token", "error_description": "Token is expired. You can either do re-authorization or token refresh."})),
    );
    let e = client.merge_request(MR).await.unwrap_err();
    assert!(
        e.to_string().contains("401") && e.to_string().contains("invalid_token: Token is expired"),
        "{e}"
    );
    assert_clean(&e);
}

#[tokio::test]
async fn a_wrong_token_is_a_401_that_names_no_token() {
    let (fake, _) = started().await;
    let mut c = config(&fake, "42");
    c.token = Some(Zeroizing::new("glpat-wrongwrongwrong".into()));
    let client = Client::new(c).unwrap();
    let e = client.merge_request(MR).await.unwrap_err();
    assert_eq!(e.status(), Some(401));
    assert!(!e.to_string().contains("glpat-wrong"), "{e}");
}

#[tokio::test]
async fn server_errors_are_retried_for_reads_only() {
    let (fake, client) = started().await;
    fake.fault(RouteKind::MergeRequest, Fault::Status(503));
    fake.fault(RouteKind::MergeRequest, Fault::BadGateway);
    assert_eq!(client.merge_request(MR).await.unwrap().iid, MR);
    assert_eq!(fake.count(RouteKind::MergeRequest), 3);
    assert_eq!(client.counts().retries, 2);
    // A POST that failed may have written: never tried again.
    fake.fault(RouteKind::CreateNote, Fault::Status(500));
    let e = client.create_note(MR, "hello").await.unwrap_err();
    assert_eq!(e.status(), Some(500));
    assert_eq!(fake.count(RouteKind::CreateNote), 1);
    // A proxy's HTML page says nothing GitLab said.
    for _ in 0..3 {
        fake.fault(RouteKind::MergeRequest, Fault::BadGateway);
    }
    let e = client.merge_request(MR).await.unwrap_err();
    assert!(
        e.to_string()
            .ends_with("502 to GET /projects/42/merge_requests/7: (no message)"),
        "{e}"
    );
}

#[tokio::test]
async fn a_next_page_on_another_host_is_not_followed() {
    let (fake, client) = started().await;
    fake.fault(RouteKind::ListNotes, Fault::ForeignNextLink);
    let e = client
        .notes_until(MR, 5, false, |_| false)
        .await
        .unwrap_err();
    assert!(
        e.to_string().contains("elsewhere.example") && e.to_string().contains("not followed"),
        "{e}"
    );
    assert_eq!(fake.requests().len(), 1);
}

#[tokio::test]
async fn plain_http_is_refused_unless_to_this_machine() {
    let mut c = ClientConfig::new("http://gitlab.example.com/api/v4", None, "42");
    let e = Client::new(c.clone()).unwrap_err().to_string();
    assert!(e.contains("plain http to another machine"), "{e}");
    c.api_url = "https://user:pw@gitlab.example.com/api/v4".into();
    assert!(Client::new(c.clone()).is_err());
    c.api_url = "http://127.0.0.1:1/api/v4".into();
    assert!(Client::new(c).is_ok());
}

#[tokio::test]
async fn notes_commit_statuses_and_discussions_post_gitlabs_shapes() {
    let (fake, client) = started().await;
    let note = client.create_note(MR, "first").await.unwrap();
    let updated = client.update_note(MR, note.id, "second").await.unwrap();
    assert_eq!((updated.id, updated.body.as_str()), (note.id, "second"));
    let status = client
        .set_commit_status(
            HEAD,
            "failed",
            "reviewflow",
            "2 findings block the merge",
            None,
        )
        .await
        .unwrap();
    assert_eq!(
        (status.status.as_str(), status.name.as_str()),
        ("failed", "reviewflow")
    );
    let writes = fake.writes();
    assert_eq!(
        writes[0].path_and_query,
        "/api/v4/projects/42/merge_requests/7/notes"
    );
    assert_eq!(writes[1].method, "PUT");
    assert_eq!(
        writes[1].path_and_query,
        format!("/api/v4/projects/42/merge_requests/7/notes/{}", note.id)
    );
    assert_eq!(
        writes[2].path_and_query,
        format!("/api/v4/projects/42/statuses/{HEAD}")
    );
    assert_eq!(writes[2].body.as_ref().unwrap()["state"], "failed");
    // A SHA that is not one never reaches a route.
    assert!(
        client
            .set_commit_status("main", "success", "x", "", None)
            .await
            .is_err()
    );
    assert_eq!(fake.writes().len(), 3);
}

#[tokio::test]
async fn a_rate_limit_waits_its_retry_after_then_passes_or_gives_up() {
    let (fake, client) = started().await;
    fake.fault(RouteKind::MergeRequest, Fault::RateLimited { secs: 1 });
    assert_eq!(client.merge_request(MR).await.unwrap().iid, MR);
    assert_eq!(client.counts().retries, 1);
    // Longer than the longest wait accepted (2 s here): not waited.
    fake.fault(RouteKind::CreateNote, Fault::RateLimited { secs: 3600 });
    let e = client.create_note(MR, "x").await.unwrap_err();
    assert!(matches!(e, GitlabError::RateLimited { .. }), "{e}");
    assert!(e.to_string().starts_with("rate limited until"), "{e}");
}

#[tokio::test]
async fn a_diff_past_its_byte_budget_stops_reading() {
    let (fake, client) = started().await;
    let hunk = format!("@@ -0,0 +1 @@\n+{}\n", "x".repeat(10_000));
    for i in 0..250 {
        fake.add_diff(MR, &format!("f{i}"), &format!("f{i}"), &hunk);
    }
    // A page is about a megabyte: the budget ends inside the second page.
    let e = client
        .merge_request_diffs(MR, 10, 1_500_000)
        .await
        .unwrap_err();
    assert!(matches!(e, GitlabError::TooLarge { .. }), "{e}");
    assert_eq!(fake.count(RouteKind::Diffs), 2);
}

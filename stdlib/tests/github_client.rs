//! The GitHub REST client against the fake GitHub: pagination, retries, rate limits, timeouts,
//! redirects, byte caps, where the token goes, typed calls, and the Actions environment.

// Test helpers unwrap as the tests do (clippy's allow-unwrap-in-tests covers only the
// `#[test]` functions themselves).
#![allow(clippy::unwrap_used)]

mod support;

use std::collections::HashMap;
use std::time::Duration;

use reviewflow_stdlib::github::{
    ActionsEnv, Client, ClientConfig, GithubError, IssueComment, MAX_REDIRECTS, RetryPolicy,
};
use serde_json::json;
use support::fake_github::{
    ArtifactSeed, BUILD_WORKFLOW, FakeGithub, Fault, Host, REPO_ID, RouteKind, RunSeed, zip_of,
};
use zeroize::Zeroizing;

const TOKEN: &str = "ghs_FAKEtoken0123456789abcdefABCDEF";
const HEAD: &str = "6dcb09b5b57875f334f61aebed695e2e4193db5e";
const BASE: &str = "328faa0536e6fef19753d9d91dc96a9931694ce3";

fn config(fake: &FakeGithub) -> ClientConfig {
    ClientConfig {
        api_url: fake.api_url(),
        token: Some(Zeroizing::new(TOKEN.to_owned())),
        repository: FakeGithub::repository().parse().unwrap(),
        timeout: Duration::from_secs(10),
        retry: RetryPolicy {
            max_attempts: 4,
            base_delay: Duration::from_millis(10),
            max_wait: Duration::from_secs(5),
        },
    }
}

async fn started() -> (FakeGithub, Client) {
    let fake = FakeGithub::start().await;
    fake.require_token(TOKEN);
    fake.add_pull_request(7, HEAD, BASE);
    let client = Client::new(config(&fake)).unwrap();
    (fake, client)
}

fn assert_no_token(error: &GithubError) {
    let shown = error.to_string();
    assert!(!shown.contains(TOKEN), "{shown}");
    assert!(!format!("{error:?}").contains(TOKEN));
    assert!(!shown.contains('\n'), "{shown}");
}

#[tokio::test]
async fn pages_follow_absolute_link_urls_on_the_api_host_with_the_token() {
    let (fake, client) = started().await;
    for i in 0..250 {
        fake.add_issue_comment(7, &format!("comment {i}"), "octocat", "User");
    }
    let comments: Vec<IssueComment> = client.issue_comments(7).await.unwrap();
    assert_eq!(comments.len(), 250);
    assert_eq!(comments[0].body.as_deref(), Some("comment 0"));
    assert_eq!(comments[249].body.as_deref(), Some("comment 249"));
    let log = fake.requests();
    assert_eq!(fake.count(RouteKind::ListComments), 3);
    assert_eq!(
        log[0].path_and_query,
        "/repos/octo-org/octo-repo/issues/7/comments?per_page=100"
    );
    // Pages 2 and 3 came from GitHub's absolute Link URLs, and the token went with them.
    assert_eq!(
        log[1].path_and_query,
        format!("/repositories/{REPO_ID}/issues/7/comments?per_page=100&page=2")
    );
    assert!(log[2].path_and_query.ends_with("page=3"));
    for r in &log {
        assert_eq!(
            r.authorization.as_deref(),
            Some(&*format!("Bearer {TOKEN}"))
        );
    }
    assert_eq!(client.counts().api_calls, 3);
}

#[tokio::test]
async fn pages_stop_at_the_page_cap() {
    let (fake, client) = started().await;
    for i in 0..250 {
        fake.add_issue_comment(7, &format!("c{i}"), "octocat", "User");
    }
    let route = "/repos/octo-org/octo-repo/issues/7/comments?per_page=100";
    let two: Vec<IssueComment> = client.get_pages(route, None, 2).await.unwrap();
    assert_eq!(two.len(), 200);
    assert_eq!(fake.count(RouteKind::ListComments), 2);
    let over = client
        .get_pages::<IssueComment>(route, None, 1_000_000)
        .await;
    assert!(matches!(over, Err(GithubError::Pagination(_))));
}

#[tokio::test]
async fn a_next_page_on_another_host_is_refused_and_gets_no_token() {
    let (fake, client) = started().await;
    for i in 0..150 {
        fake.add_issue_comment(7, &format!("c{i}"), "octocat", "User");
    }
    fake.fault_next(RouteKind::ListComments, 1, Fault::ForeignNextLink);
    let err = client.issue_comments(7).await.unwrap_err();
    assert!(matches!(err, GithubError::Pagination(_)), "{err}");
    assert!(err.to_string().contains("not followed"), "{err}");
    assert_no_token(&err);
    assert!(fake.blob_requests().is_empty());
    assert_eq!(fake.count(RouteKind::ListComments), 1);
}

#[tokio::test]
async fn a_server_error_is_retried_then_succeeds() {
    let (fake, client) = started().await;
    fake.fail_next(RouteKind::PullRequest, 2, 500);
    let pr = client.pull_request(7).await.unwrap();
    assert_eq!(pr.head.sha, HEAD);
    assert_eq!(fake.count(RouteKind::PullRequest), 3);
    let counts = client.counts();
    assert_eq!((counts.api_calls, counts.retries), (3, 2));
}

#[tokio::test]
async fn server_errors_past_max_attempts_fail_with_githubs_message() {
    let (fake, client) = started().await;
    fake.fail_next(RouteKind::PullRequest, 10, 502);
    let err = client.pull_request(7).await.unwrap_err();
    assert_eq!(err.status(), Some(502));
    assert_eq!(
        err.to_string(),
        "GitHub answered 502 to GET /repos/octo-org/octo-repo/pulls/7: Server Error"
    );
    assert_eq!(fake.count(RouteKind::PullRequest), 4);
}

#[tokio::test]
async fn a_post_is_not_retried_after_a_server_error() {
    let (fake, client) = started().await;
    fake.fail_next(RouteKind::CreateComment, 1, 502);
    let err = client.create_issue_comment(7, "hello").await.unwrap_err();
    assert_eq!(err.status(), Some(502));
    assert_eq!(fake.count(RouteKind::CreateComment), 1);
    assert!(fake.comments(7).is_empty());
}

#[tokio::test]
async fn other_client_errors_are_never_retried() {
    let (fake, client) = started().await;
    fake.fail_next(RouteKind::PullRequest, 1, 403);
    let err = client.pull_request(7).await.unwrap_err();
    assert_eq!(err.status(), Some(403));
    assert!(!err.is_rate_limit());
    assert_eq!(fake.count(RouteKind::PullRequest), 1);
    let missing = client.pull_request(8).await.unwrap_err();
    assert_eq!(missing.status(), Some(404));
    assert_eq!(fake.count(RouteKind::PullRequest), 2);
}

#[tokio::test]
async fn a_429_with_retry_after_waits_and_retries() {
    let (fake, client) = started().await;
    fake.fault_next(
        RouteKind::PullRequest,
        1,
        Fault::RetryAfter {
            status: 429,
            secs: 1,
        },
    );
    client.pull_request(7).await.unwrap();
    assert_eq!(fake.count(RouteKind::PullRequest), 2);
    assert_eq!(client.counts().retries, 1);
}

#[tokio::test]
async fn a_retry_after_past_max_wait_is_an_error_without_waiting() {
    let (fake, client) = started().await;
    fake.fault_next(
        RouteKind::PullRequest,
        1,
        Fault::RetryAfter {
            status: 429,
            secs: 3600,
        },
    );
    let err = client.pull_request(7).await.unwrap_err();
    assert!(matches!(err, GithubError::RateLimited { .. }), "{err}");
    assert!(err.is_rate_limit());
    assert!(err.to_string().starts_with("rate limited until "), "{err}");
    assert_eq!(fake.count(RouteKind::PullRequest), 1);
    assert_eq!(client.counts().retries, 0);
}

#[tokio::test]
async fn a_primary_rate_limit_waits_for_a_near_reset() {
    let (fake, client) = started().await;
    fake.fault_next(
        RouteKind::PullRequest,
        1,
        Fault::PrimaryRateLimit { reset_in: -5 },
    );
    fake.fault_next(
        RouteKind::PullRequest,
        1,
        Fault::PrimaryRateLimit { reset_in: 1 },
    );
    client.pull_request(7).await.unwrap();
    assert_eq!(fake.count(RouteKind::PullRequest), 3);
    assert_eq!(client.counts().retries, 2);
}

#[tokio::test]
async fn a_primary_rate_limit_far_away_is_an_error_without_waiting() {
    let (fake, client) = started().await;
    fake.fault_next(
        RouteKind::PullRequest,
        1,
        Fault::PrimaryRateLimit { reset_in: 3600 },
    );
    let started = std::time::Instant::now();
    let err = client.pull_request(7).await.unwrap_err();
    assert!(matches!(err, GithubError::RateLimited { .. }), "{err}");
    assert!(err.is_rate_limit());
    assert_eq!(fake.count(RouteKind::PullRequest), 1);
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_no_token(&err);
}

#[tokio::test]
async fn a_secondary_rate_limit_waits_at_most_max_wait() {
    let fake = FakeGithub::start().await;
    fake.add_pull_request(7, HEAD, BASE);
    let mut cfg = config(&fake);
    cfg.retry.max_wait = Duration::from_millis(50);
    let client = Client::new(cfg).unwrap();
    fake.fault_next(RouteKind::PullRequest, 1, Fault::SecondaryRateLimit);
    client.pull_request(7).await.unwrap();
    assert_eq!(fake.count(RouteKind::PullRequest), 2);
    // A POST is retried too: GitHub refused it before doing anything.
    fake.fault_next(RouteKind::CreateComment, 1, Fault::SecondaryRateLimit);
    client.create_issue_comment(7, "hi").await.unwrap();
    assert_eq!(fake.count(RouteKind::CreateComment), 2);
    assert_eq!(fake.comments(7).len(), 1);
}

#[tokio::test]
async fn garbage_json_is_a_decode_error() {
    let (fake, client) = started().await;
    fake.garbage_json(RouteKind::PullRequest, true);
    let err = client.pull_request(7).await.unwrap_err();
    assert!(matches!(err, GithubError::Decode { .. }), "{err}");
    assert!(
        err.to_string()
            .starts_with("cannot decode the answer to GET /repos/octo-org/octo-repo/pulls/7"),
        "{err}"
    );
    assert_eq!(fake.count(RouteKind::PullRequest), 1);
}

#[tokio::test]
async fn a_slow_answer_times_out() {
    let fake = FakeGithub::start().await;
    fake.add_pull_request(7, HEAD, BASE);
    fake.delay(RouteKind::PullRequest, Duration::from_secs(2));
    let mut cfg = config(&fake);
    cfg.timeout = Duration::from_millis(300);
    cfg.retry.max_attempts = 1;
    let client = Client::new(cfg).unwrap();
    let err = client.pull_request(7).await.unwrap_err();
    assert!(matches!(err, GithubError::Timeout { .. }), "{err}");
    assert_eq!(
        err.to_string(),
        "GET /repos/octo-org/octo-repo/pulls/7 timed out after 0.3s"
    );
    assert_eq!(fake.count(RouteKind::PullRequest), 1);
}

#[tokio::test]
async fn a_refused_connection_is_a_transport_error() {
    let fake = FakeGithub::start().await;
    let mut cfg = config(&fake);
    // A port nothing listens on: bind one, then let it go.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    cfg.api_url = format!("http://127.0.0.1:{port}");
    cfg.retry.max_attempts = 2;
    let client = Client::new(cfg).unwrap();
    let err = client.pull_request(7).await.unwrap_err();
    assert!(matches!(err, GithubError::Transport { .. }), "{err}");
    assert_eq!(client.counts().api_calls, 2);
    assert_no_token(&err);
}

#[tokio::test]
async fn a_download_goes_to_the_blob_host_without_the_token() {
    let (fake, client) = started().await;
    fake.add_workflow_run(RunSeed::trusted(500, HEAD));
    let zip = zip_of("conversation.sealed", b"sealed bytes");
    let id = fake.add_artifact("review-7-api", 500, zip.clone(), "2026-10-26T09:00:00Z");
    let bytes = client.download_artifact(id, 1 << 20).await.unwrap();
    assert_eq!(bytes, zip);
    let api: Vec<_> = fake
        .requests()
        .into_iter()
        .filter(|r| r.host == Host::Api)
        .collect();
    assert_eq!(api.len(), 1);
    assert_eq!(
        api[0].authorization.as_deref(),
        Some(&*format!("Bearer {TOKEN}"))
    );
    assert_eq!(fake.downloads_of(id), 1);
    assert!(!fake.authorization_seen(Host::Blob));
    assert_eq!(client.counts().downloads, 1);
}

#[tokio::test]
async fn a_download_redirect_loop_is_refused() {
    let (fake, client) = started().await;
    fake.add_workflow_run(RunSeed::trusted(500, HEAD));
    let id = fake.add_artifact(
        "a",
        500,
        zip_of("conversation.sealed", b"x"),
        "2026-10-26T09:00:00Z",
    );
    fake.redirect_loop(true);
    let err = client.download_artifact(id, 1 << 20).await.unwrap_err();
    assert!(matches!(err, GithubError::Redirect(_)), "{err}");
    assert_eq!(fake.blob_requests().len(), MAX_REDIRECTS);
    assert!(!fake.authorization_seen(Host::Blob));
    // The message names no signed URL.
    assert!(!err.to_string().contains("/loop/"), "{err}");
    assert_no_token(&err);
}

#[tokio::test]
async fn a_download_over_the_cap_stops_reading() {
    let (fake, client) = started().await;
    fake.add_workflow_run(RunSeed::trusted(500, HEAD));
    let big: Vec<u8> = (0..50_000u32).flat_map(|i| i.to_le_bytes()).collect();
    let id = fake.add_artifact_with(ArtifactSeed {
        // The listing lies: it says the zip is small.
        size_in_bytes: Some(10),
        ..ArtifactSeed::new(
            "a",
            500,
            zip_of("conversation.sealed", &big),
            "2026-10-26T09:00:00Z",
        )
    });
    let err = client.download_artifact(id, 1000).await.unwrap_err();
    assert!(
        matches!(err, GithubError::TooLarge { limit: 1000, .. }),
        "{err}"
    );
}

#[tokio::test]
async fn a_json_call_never_follows_a_redirect() {
    let (fake, client) = started().await;
    fake.add_workflow_run(RunSeed::trusted(500, HEAD));
    let id = fake.add_artifact(
        "a",
        500,
        zip_of("conversation.sealed", b"x"),
        "2026-10-26T09:00:00Z",
    );
    let route = format!("/repos/octo-org/octo-repo/actions/artifacts/{id}/zip");
    let err = client
        .get_json::<serde_json::Value>(&route)
        .await
        .unwrap_err();
    assert!(matches!(err, GithubError::Redirect(_)), "{err}");
    assert!(fake.blob_requests().is_empty());
}

/// How octocrab itself behaves, which the client relies on: the token goes only to the base
/// URI's host, and the redirect layer inside octocrab (which the client keeps from following)
/// would strip it on a cross-origin hop.
#[tokio::test]
async fn octocrab_sends_a_personal_token_only_to_its_base_host() {
    let fake = FakeGithub::start().await;
    fake.add_workflow_run(RunSeed::trusted(500, HEAD));
    let id = fake.add_artifact(
        "a",
        500,
        zip_of("conversation.sealed", b"x"),
        "2026-10-26T09:00:00Z",
    );
    let crab = octocrab::Octocrab::builder()
        .base_uri(fake.api_url())
        .unwrap()
        .personal_token(TOKEN.to_owned())
        .build()
        .unwrap();
    // An absolute URL on another host: no Authorization.
    let _ = crab
        ._get(format!("{}/blob/{id}", fake.blob_url()))
        .await
        .unwrap();
    // A plain GET of the zip route: octocrab follows the 302 itself, without the token.
    let followed = crab
        ._get(format!(
            "/repos/octo-org/octo-repo/actions/artifacts/{id}/zip"
        ))
        .await
        .unwrap();
    assert_eq!(followed.status(), 200);
    let log = fake.requests();
    let api: Vec<_> = log.iter().filter(|r| r.host == Host::Api).collect();
    assert_eq!(api.len(), 1);
    assert_eq!(
        api[0].authorization.as_deref(),
        Some(&*format!("Bearer {TOKEN}"))
    );
    assert_eq!(fake.blob_requests().len(), 2);
    assert!(!fake.authorization_seen(Host::Blob));
}

#[tokio::test]
async fn no_error_message_holds_the_token() {
    let fake = FakeGithub::start().await;
    fake.require_token("another-token");
    let client = Client::new(config(&fake)).unwrap();
    let err = client.pull_request(7).await.unwrap_err();
    assert_eq!(err.status(), Some(401));
    assert_eq!(
        err.to_string(),
        "GitHub answered 401 to GET /repos/octo-org/octo-repo/pulls/7: Bad credentials"
    );
    assert_no_token(&err);
}

#[tokio::test]
async fn invalid_configurations_are_refused() {
    let fake = FakeGithub::start().await;
    let mut bad_token = config(&fake);
    bad_token.token = Some(Zeroizing::new("line\nbreak".to_owned()));
    assert!(matches!(
        Client::new(bad_token),
        Err(GithubError::Invalid(_))
    ));
    let mut bad_url = config(&fake);
    bad_url.api_url = "not a url".into();
    assert!(matches!(Client::new(bad_url), Err(GithubError::Invalid(_))));
    let mut relative = config(&fake);
    relative.api_url = "/api/v3".into();
    assert!(matches!(
        Client::new(relative),
        Err(GithubError::Invalid(_))
    ));
}

#[test]
fn a_client_outside_a_runtime_is_an_error_not_a_panic() {
    let config = ClientConfig::new(
        "https://api.github.com",
        None,
        "octo-org/octo-repo".parse().unwrap(),
    );
    assert!(matches!(Client::new(config), Err(GithubError::Invalid(_))));
}

#[tokio::test]
async fn typed_calls_read_and_write_githubs_shapes() {
    let (fake, client) = started().await;
    fake.set_head_repo(7, None);
    let pr = client.pull_request(7).await.unwrap();
    assert_eq!((pr.number, pr.state.as_str()), (7, "open"));
    assert_eq!((pr.head.sha.as_str(), pr.base.sha.as_str()), (HEAD, BASE));
    assert_eq!(pr.head.repo, None);
    assert_eq!(pr.body, None);
    assert_eq!(pr.user.kind, "User");

    let created = client.create_issue_comment(7, "first").await.unwrap();
    assert_eq!(created.body.as_deref(), Some("first"));
    let updated = client
        .update_issue_comment(created.id, "second")
        .await
        .unwrap();
    assert_eq!(updated.body.as_deref(), Some("second"));
    assert_eq!(fake.comments(7)[0]["body"], "second");
    let patch = fake
        .requests()
        .into_iter()
        .find(|r| r.kind == RouteKind::UpdateComment)
        .unwrap();
    assert_eq!(patch.method, "PATCH");
    let too_long = "x".repeat(65_537);
    assert!(matches!(
        client.create_issue_comment(7, &too_long).await,
        Err(GithubError::Invalid(_))
    ));
    assert_eq!(fake.count(RouteKind::CreateComment), 1);

    let run = client
        .create_check_run(&json!({"name": "reviewflow", "head_sha": HEAD, "status": "in_progress"}))
        .await
        .unwrap();
    assert!(run.html_url.is_some());
    client
        .update_check_run(run.id, &json!({"conclusion": "success", "output": {"title": "t", "summary": "s", "annotations": [{"path": "a"}]}}))
        .await
        .unwrap();
    assert_eq!(fake.check_runs()[0]["output"]["annotations_count"], 1);
    let review = client
        .create_review(
            7,
            &json!({"event": "COMMENT", "body": "b", "commit_id": HEAD}),
        )
        .await
        .unwrap();
    assert_eq!(review.state.as_deref(), Some("COMMENTED"));

    fake.set_compare(BASE, HEAD, "ahead");
    fake.set_compare(HEAD, BASE, "behind");
    fake.set_compare(BASE, "a".repeat(40).as_str(), "diverged");
    fake.set_compare(HEAD, HEAD, "identical");
    assert_eq!(
        client.commit_is_ancestor(BASE, HEAD).await.unwrap(),
        Some(true)
    );
    assert_eq!(
        client.commit_is_ancestor(HEAD, BASE).await.unwrap(),
        Some(false)
    );
    assert_eq!(
        client
            .commit_is_ancestor(BASE, &"a".repeat(40))
            .await
            .unwrap(),
        Some(false)
    );
    assert_eq!(
        client.commit_is_ancestor(HEAD, HEAD).await.unwrap(),
        Some(true)
    );
    assert_eq!(
        client
            .commit_is_ancestor(BASE, &"b".repeat(40))
            .await
            .unwrap(),
        None
    );
    assert!(matches!(
        client.commit_is_ancestor("a..b", HEAD).await,
        Err(GithubError::Invalid(_))
    ));

    fake.set_compare_diff(BASE, HEAD, "diff --git a/x b/x\n");
    assert_eq!(
        client.compare_diff(BASE, HEAD, 1000).await.unwrap(),
        b"diff --git a/x b/x\n"
    );
    let diff_request = fake
        .requests()
        .into_iter()
        .rfind(|r| r.kind == RouteKind::CompareDiff)
        .unwrap();
    assert_eq!(
        diff_request.accept.as_deref(),
        Some("application/vnd.github.diff")
    );
    fake.set_pull_diff(7, &"+line\n".repeat(100));
    assert_eq!(client.pull_diff(7, 600).await.unwrap().len(), 600);
    let err = client.pull_diff(7, 599).await.unwrap_err();
    assert!(
        matches!(err, GithubError::TooLarge { limit: 599, .. }),
        "{err}"
    );
}

#[tokio::test]
async fn workflow_runs_and_artifact_listings() {
    let (fake, client) = started().await;
    fake.add_workflow_run(RunSeed::trusted(500, HEAD));
    fake.add_workflow_run(RunSeed::fork_pull_request(600, HEAD));
    let run = client.workflow_run(500).await.unwrap();
    assert_eq!(run.normalized_path(), BUILD_WORKFLOW);
    assert_eq!(run.workflow_ref(), Some("refs/heads/main"));
    assert_eq!(run.event, "pull_request_target");
    assert_eq!(run.head_branch.as_deref(), Some("main"));
    let fork = client.workflow_run(600).await.unwrap();
    assert_eq!(fork.head_repository.unwrap().full_name, "mallory/octo-repo");

    let zip = zip_of("conversation.sealed", b"x");
    let old = fake.add_artifact("n", 500, zip.clone(), "2026-10-26T09:00:00Z");
    let new = fake.add_artifact("n", 600, zip.clone(), "2026-10-26T10:00:00Z");
    let undated = fake.add_artifact_with(ArtifactSeed {
        created_at: None,
        ..ArtifactSeed::new("n", 500, zip.clone(), "")
    });
    let orphan = fake.add_artifact_with(ArtifactSeed {
        run_id: None,
        ..ArtifactSeed::new("n", 0, zip.clone(), "2026-10-26T08:00:00Z")
    });
    fake.add_artifact("other", 500, zip, "2026-10-26T11:00:00Z");
    let listed = client.list_artifacts("n", 10).await.unwrap();
    let ids: Vec<u64> = listed.iter().map(|a| a.id).collect();
    assert_eq!(ids, [new, old, orphan, undated]);
    assert_eq!(listed[2].workflow_run, None);
    assert_eq!(
        listed[0].workflow_run.as_ref().unwrap().head_repository_id,
        Some(support::fake_github::FORK_ID)
    );
    assert_eq!(listed[0].digest, None);
}

#[test]
fn the_actions_environment_and_its_event_payload() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path.to_str().unwrap().to_owned()
    };
    let vars = |pairs: &[(&str, &str)]| -> HashMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    };
    let read = |map: &HashMap<String, String>| ActionsEnv::from_vars(|k| map.get(k).cloned());

    let pr_event = write(
        "pr.json",
        r#"{"action":"synchronize","number":7,"pull_request":{"number":7}}"#,
    );
    let env = read(&vars(&[
        ("GITHUB_REPOSITORY", "octo-org/octo-repo"),
        ("GITHUB_EVENT_NAME", "pull_request_target"),
        ("GITHUB_EVENT_PATH", &pr_event),
        ("GITHUB_RUN_ID", "40296315967"),
        ("GITHUB_RUN_ATTEMPT", "2"),
        ("GITHUB_SHA", HEAD),
        (
            "GITHUB_WORKFLOW_REF",
            "octo-org/octo-repo/.github/workflows/build.yaml@refs/heads/main",
        ),
    ]))
    .unwrap();
    assert_eq!(env.api_url, "https://api.github.com");
    assert_eq!(env.server_url, "https://github.com");
    assert_eq!(env.repository.to_string(), "octo-org/octo-repo");
    assert_eq!(env.pull_request, Some(7));
    assert_eq!(
        (env.run_id, env.run_attempt),
        (Some(40_296_315_967), Some(2))
    );
    assert_eq!(env.event_name.as_deref(), Some("pull_request_target"));

    let comment_event = write(
        "c.json",
        r#"{"issue":{"number":12,"pull_request":{"url":"u"}},"comment":{"id":1}}"#,
    );
    let env = read(&vars(&[
        ("GITHUB_REPOSITORY", "octo-org/octo-repo"),
        ("GITHUB_API_URL", "https://ghe.example/api/v3"),
        ("GITHUB_EVENT_PATH", &comment_event),
    ]))
    .unwrap();
    assert_eq!(env.pull_request, Some(12));
    assert_eq!(env.api_url, "https://ghe.example/api/v3");
    let push_event = write("p.json", r#"{"ref":"refs/heads/main"}"#);
    let env = read(&vars(&[
        ("GITHUB_REPOSITORY", "o/r"),
        ("GITHUB_EVENT_PATH", &push_event),
    ]))
    .unwrap();
    assert_eq!(env.pull_request, None);

    assert!(read(&vars(&[])).unwrap_err().contains("GITHUB_REPOSITORY"));
    assert!(read(&vars(&[("GITHUB_REPOSITORY", "o/../r")])).is_err());
    let missing = read(&vars(&[
        ("GITHUB_REPOSITORY", "o/r"),
        ("GITHUB_EVENT_PATH", "/no/such/event.json"),
    ]))
    .unwrap_err();
    assert!(
        missing.contains("cannot read the event payload /no/such/event.json"),
        "{missing}"
    );
    let garbage = write("g.json", "<html>");
    let not_json = read(&vars(&[
        ("GITHUB_REPOSITORY", "o/r"),
        ("GITHUB_EVENT_PATH", &garbage),
    ]))
    .unwrap_err();
    assert!(not_json.contains("is not JSON"), "{not_json}");
    assert!(
        read(&vars(&[
            ("GITHUB_REPOSITORY", "o/r"),
            ("GITHUB_RUN_ID", "abc")
        ]))
        .is_err()
    );
}

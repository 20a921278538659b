//! The pull request's running total of review costs on GitHub (docs/github.md, "Costs and
//! budgets"), against the fake: the marker keeps it, the footer says it, the next run reads it
//! back, and a review that did not run keeps the total too: in the marker of the comment, the rest
//! of it as it was, or in a first comment that names no head.

// Test helpers unwrap as the tests do (clippy's allow-unwrap-in-tests covers only the
// `#[test]` functions themselves).
#![allow(clippy::unwrap_used)]

mod support;

use std::sync::Arc;

use reviewflow_engine::run::StatusSink;
use reviewflow_stdlib::forge::Format;
use reviewflow_stdlib::git::Sha;
use reviewflow_stdlib::kinds::forge_github::GithubKind;
use reviewflow_stdlib::kinds::{Forge, PostRequest, ReviewState};
use reviewflow_stdlib::reviewer::usage::{Usage, Usd};
use support::fake_github::FakeGithub;
use support::request::{post_request, usage};

const TOKEN: &str = "ghs_FAKEtoken0123456789abcdefABCDEF";
const BASE: &str = "1111111111111111111111111111111111111111";
const HEAD: &str = "1a2b3c4d5e6f1a2b3c4d5e6f1a2b3c4d5e6f1a2b";
const PR: u64 = 7;

async fn open(fake: &FakeGithub, dir: &std::path::Path) -> Arc<dyn Forge> {
    open_as(fake, dir, 100).await
}

async fn open_as(fake: &FakeGithub, dir: &std::path::Path, run: u64) -> Arc<dyn Forge> {
    let event = dir.join("event.json");
    std::fs::write(
        &event,
        format!(r#"{{"action":"synchronize","number":{PR},"pull_request":{{"number":{PR}}}}}"#),
    )
    .unwrap();
    let vars = [
        ("GITHUB_API_URL", fake.api_url()),
        ("GITHUB_REPOSITORY", FakeGithub::repository()),
        ("GITHUB_EVENT_PATH", event.display().to_string()),
        ("GITHUB_RUN_ID", run.to_string()),
    ];
    match support::open::open_forge(&GithubKind, &vars, TOKEN, "review").await {
        Ok(forge) => forge,
        Err(e) => panic!("the github forge opens: {e}"),
    }
}

fn request(state: ReviewState, spent: Option<Usage>, cost: Option<Usage>) -> PostRequest {
    PostRequest {
        state,
        formats: vec![Format::Markdown],
        spent,
        cost,
        ..post_request(BASE, HEAD, "review")
    }
}

#[tokio::test]
async fn the_marker_keeps_the_total_and_the_footer_says_it() {
    let (fake, dir) = pull_request().await;
    let forge = open(&fake, dir.path()).await;
    let run = Usage {
        input_tokens: 12_000,
        output_tokens: 345,
        cached_tokens: 0,
        cost_usd: Some(Usd(12_300)),
    };
    let total = Usage {
        input_tokens: 45_000,
        output_tokens: 678,
        cached_tokens: 1_000,
        cost_usd: Some(Usd(45_600)),
    };
    post(&*forge, ReviewState::Reviewed, total, run).await;
    let comments = fake.comments(PR);
    assert_eq!(comments.len(), 1, "{comments:#?}");
    let body = comments[0]["body"].as_str().unwrap();
    let marker = body.lines().next().unwrap();
    assert!(
        marker.ends_with(" spent=45000.678.1000.45600 order=100.1 -->"),
        "{marker}"
    );
    assert!(
        body.ends_with(
            "\n\nCost: this review 12,345 tokens (12,000 in, 345 out, 0 cached), $0.0123 · \
             this pull request so far 45,678 tokens (45,000 in, 678 out, 1,000 cached), $0.0456\n"
        ),
        "{body}"
    );

    // The next run reads the total back.
    let forge = open(&fake, dir.path()).await;
    let last = forge.last_posted().await.unwrap().expect("a posted review");
    assert_eq!(last.spent, Some(total));

    // A review that did not run keeps the new total in the marker; the rest stays as it was.
    let more = total.plus(&run);
    post_not_reviewed(&*forge, "budget spent", more, run).await;
    let comments = fake.comments(PR);
    assert_eq!(comments.len(), 1, "{comments:#?}");
    let kept = comments[0]["body"].as_str().unwrap();
    let (kept_marker, kept_rest) = kept.split_once('\n').unwrap();
    assert_eq!(kept_rest, body.split_once('\n').unwrap().1);
    assert_eq!(
        kept_marker,
        marker.replace(
            " spent=45000.678.1000.45600 ",
            " spent=57000.1023.1000.57900 "
        )
    );
    assert!(
        kept_marker.contains(&format!(" head={HEAD} ")),
        "{kept_marker}"
    );
    let forge = open(&fake, dir.path()).await;
    let last = forge.last_posted().await.unwrap().expect("a posted review");
    assert_eq!(last.spent, Some(more));
    assert_eq!(last.head, Some(Sha::parse(HEAD).unwrap()));

    // The same total again writes nothing.
    let before = patches(&fake);
    post_not_reviewed(&*forge, "budget spent", more, run).await;
    assert_eq!(patches(&fake), before);
    assert_eq!(fake.comments(PR)[0]["body"].as_str().unwrap(), kept);
}

/// Posts a review in `state` whose run spent `run`, the pull request's total then `total`.
async fn post(forge: &dyn Forge, state: ReviewState, total: Usage, run: Usage) {
    forge
        .post(
            &request(state, Some(total), Some(run)),
            &StatusSink::discard("post"),
        )
        .await
        .unwrap();
}

/// Posts a review that did not run for `reason`, with the change's `total` and this run's `run`.
async fn post_not_reviewed(forge: &dyn Forge, reason: &str, total: Usage, run: Usage) {
    post(forge, ReviewState::NotReviewed(reason.into()), total, run).await;
}

/// The fake, with the pull request, and a folder for the event file.
async fn pull_request() -> (FakeGithub, tempfile::TempDir) {
    let fake = FakeGithub::start().await;
    fake.require_token(TOKEN);
    fake.add_pull_request(PR, HEAD, BASE);
    (fake, tempfile::tempdir().unwrap())
}

fn patches(fake: &FakeGithub) -> usize {
    fake.writes().iter().filter(|r| r.method == "PATCH").count()
}

#[tokio::test]
async fn a_review_that_never_ran_keeps_the_total_in_a_comment_that_names_no_head() {
    let (fake, dir) = pull_request().await;
    let forge = open(&fake, dir.path()).await;
    assert_eq!(forge.last_posted().await.unwrap(), None);
    let (run, total) = (usage(1_000), usage(3_000));
    post_not_reviewed(&*forge, "the reviewer failed: timed out", total, run).await;
    let comments = fake.comments(PR);
    assert_eq!(comments.len(), 1, "{comments:#?}");
    let body = comments[0]["body"].as_str().unwrap();
    assert_eq!(
        body,
        "<!-- reviewflow:v1 pipeline=review project=- head=- run=run-1 conversation=- spent=3000.0.0.3000 order=100.1 -->\n\
         **Not reviewed:** the reviewer failed: timed out\n\n\
         Cost: this review 1,000 tokens (1,000 in, 0 out, 0 cached), $0.0010 · \
         this pull request so far 3,000 tokens (3,000 in, 0 out, 0 cached), $0.0030\n"
    );
    let forge = open(&fake, dir.path()).await;
    let last = forge.last_posted().await.unwrap().expect("a kept total");
    assert_eq!((last.head, last.spent), (None, Some(total)));

    // Another run whose review did not run: that comment holds no review, so it is this run's.
    let total = usage(3_500);
    post_not_reviewed(&*forge, "budget spent", total, usage(500)).await;
    let comments = fake.comments(PR);
    assert_eq!(comments.len(), 1, "{comments:#?}");
    let body = comments[0]["body"].as_str().unwrap();
    assert!(
        body.contains(" head=- ") && body.contains(" spent=3500.0.0.3500 "),
        "{body}"
    );
    assert!(
        body.contains("\n**Not reviewed:** budget spent\n"),
        "{body}"
    );
    assert!(body.contains("this review 500 tokens"), "{body}");
    let forge = open(&fake, dir.path()).await;

    // The next review posted replaces that comment: one comment, of a head.
    let more = usage(4_000);
    post(&*forge, ReviewState::Reviewed, more, run).await;
    let comments = fake.comments(PR);
    assert_eq!(comments.len(), 1, "{comments:#?}");
    let body = comments[0]["body"].as_str().unwrap();
    assert!(body.contains(&format!(" head={HEAD} ")), "{body}");
    assert!(!body.contains("Not reviewed"), "{body}");
    let forge = open(&fake, dir.path()).await;
    let last = forge.last_posted().await.unwrap().expect("a posted review");
    assert_eq!(
        (last.head, last.spent),
        (Some(Sha::parse(HEAD).unwrap()), Some(more))
    );
}

#[tokio::test]
async fn a_comment_by_a_newer_run_keeps_its_own_total() {
    let (fake, dir) = pull_request().await;
    let newer = open_as(&fake, dir.path(), 200).await;
    post(&*newer, ReviewState::Reviewed, usage(5_000), usage(5_000)).await;
    let body = fake.comments(PR)[0]["body"].as_str().unwrap().to_owned();
    let older = open_as(&fake, dir.path(), 100).await;
    post_not_reviewed(&*older, "budget spent", usage(9_000), usage(1_000)).await;
    assert_eq!(fake.comments(PR)[0]["body"].as_str().unwrap(), body);
    assert_eq!(patches(&fake), 0);
}

#[tokio::test]
async fn a_review_that_spent_nothing_writes_no_first_comment() {
    let (fake, dir) = pull_request().await;
    let forge = open(&fake, dir.path()).await;
    post_not_reviewed(&*forge, "no key", usage(0), usage(0)).await;
    assert!(fake.comments(PR).is_empty());
    assert!(fake.writes().is_empty());
}

#[tokio::test]
async fn a_comment_that_names_no_head_keeps_no_run_from_posting() {
    let (fake, dir) = pull_request().await;
    // A newer run whose review did not run kept only a total.
    let newer = open_as(&fake, dir.path(), 200).await;
    post_not_reviewed(&*newer, "budget spent", usage(2_000), usage(2_000)).await;
    // An older run's review is posted all the same: that comment is of no review.
    let older = open_as(&fake, dir.path(), 100).await;
    reviewflow_stdlib::kinds::forge::check_preconditions(
        older.as_ref(),
        &reviewflow_stdlib::kinds::forge::Preconditions {
            head: Sha::parse(HEAD).unwrap(),
            authors: Vec::new(),
        },
    )
    .await
    .unwrap();
    post(&*older, ReviewState::Reviewed, usage(3_000), usage(1_000)).await;
    let comments = fake.comments(PR);
    assert_eq!(comments.len(), 1, "{comments:#?}");
    let body = comments[0]["body"].as_str().unwrap();
    assert!(body.contains(&format!(" head={HEAD} ")), "{body}");
    assert!(body.contains(" order=100.1 -->"), "{body}");
}

//! The merge request's running total of review costs on GitLab (docs/gitlab.md), against the
//! fake: a review that did not run keeps the total in the marker of the review note, the rest of
//! it as it was, or in a first note that names no head; a note by a newer pipeline stands.

// Test helpers unwrap as the tests do (clippy's allow-unwrap-in-tests covers only the
// `#[test]` functions themselves).
#![allow(clippy::unwrap_used)]

mod support;

use std::sync::Arc;

use reviewflow_stdlib::git::Sha;
use reviewflow_stdlib::kinds::forge_gitlab::{Gitlab, GitlabKind};
use reviewflow_stdlib::kinds::{Forge, PostRequest, ReviewState};
use reviewflow_stdlib::reviewer::usage::{Usage, Usd};
use support::fake_gitlab::{FakeGitlab, MrSeed};
use support::request::{post_request, usage};

const TOKEN: &str = "glpat-FAKEtoken0123456789ab";
const BASE: &str = "1111111111111111111111111111111111111111";
const HEAD: &str = "2222222222222222222222222222222222222222";
const MR: u64 = 7;
const PIPELINE: &str = "gitlab-review";

async fn fake() -> FakeGitlab {
    let fake = FakeGitlab::start().await;
    fake.require_token(TOKEN);
    fake.add_merge_request(MrSeed::new(MR, BASE, HEAD));
    fake
}

/// The forge opened as a job of pipeline `pipeline` opens it.
async fn open(fake: &FakeGitlab, pipeline: u64) -> Arc<dyn Forge> {
    let vars = [
        ("CI_API_V4_URL", fake.api_url()),
        ("CI_PROJECT_ID", "42".to_owned()),
        ("CI_PROJECT_PATH", "acme/widgets".to_owned()),
        ("CI_MERGE_REQUEST_IID", MR.to_string()),
        ("CI_PIPELINE_ID", pipeline.to_string()),
        ("CI_JOB_ID", "1".to_owned()),
    ];
    support::open::open_forge(&GitlabKind, &vars, TOKEN, PIPELINE)
        .await
        .unwrap()
}

async fn post(forge: &Arc<dyn Forge>, state: ReviewState, spent: Usage) {
    let request = PostRequest {
        state,
        spent: Some(spent),
        cost: Some(usage(1_000)),
        ..post_request(BASE, HEAD, PIPELINE)
    };
    let gitlab = forge.as_any().downcast_ref::<Gitlab>().unwrap();
    gitlab.publish(&request, &|_: String| {}).await.unwrap();
}

fn not_reviewed() -> ReviewState {
    ReviewState::NotReviewed("budget spent".into())
}

fn bodies(fake: &FakeGitlab) -> Vec<String> {
    fake.notes(MR)
        .iter()
        .map(|n| n["body"].as_str().unwrap().to_owned())
        .collect()
}

fn puts(fake: &FakeGitlab) -> usize {
    fake.writes().iter().filter(|r| r.method == "PUT").count()
}

#[tokio::test]
async fn a_review_that_did_not_run_keeps_the_total_in_the_marker_only() {
    let fake = fake().await;
    post(&open(&fake, 100).await, ReviewState::Reviewed, usage(2_000)).await;
    let body = bodies(&fake).remove(0);
    let (marker, rest) = body.split_once('\n').unwrap();
    assert!(marker.contains(" spent=2000.0.0.2000 "), "{marker}");

    post(&open(&fake, 101).await, not_reviewed(), usage(5_000)).await;
    let kept = bodies(&fake);
    assert_eq!(kept.len(), 1, "{kept:#?}");
    let (kept_marker, kept_rest) = kept[0].split_once('\n').unwrap();
    assert_eq!(kept_rest, rest);
    assert_eq!(
        kept_marker,
        marker.replace(" spent=2000.0.0.2000 ", " spent=5000.0.0.5000 ")
    );
    let last = open(&fake, 102).await.last_posted().await.unwrap().unwrap();
    assert_eq!(
        (last.head, last.spent),
        (Some(Sha::parse(HEAD).unwrap()), Some(usage(5_000)))
    );

    // The same total again writes nothing.
    let before = puts(&fake);
    post(&open(&fake, 102).await, not_reviewed(), usage(5_000)).await;
    assert_eq!(puts(&fake), before);
    assert_eq!(bodies(&fake), kept);
}

#[tokio::test]
async fn a_review_that_never_ran_keeps_the_total_in_a_note_that_names_no_head() {
    let fake = fake().await;
    post(&open(&fake, 100).await, not_reviewed(), usage(3_000)).await;
    let notes = bodies(&fake);
    assert_eq!(notes.len(), 1, "{notes:#?}");
    assert_eq!(
        notes[0],
        "<!-- reviewflow:v1 pipeline=gitlab-review project=- head=- run=run-1 conversation=- spent=3000.0.0.3000 order=100.1 -->\n\
         **Not reviewed:** budget spent\n\n\
         Cost: this review 1,000 tokens (1,000 in, 0 out, 0 cached), $0.0010 · \
         this merge request so far 3,000 tokens (3,000 in, 0 out, 0 cached), $0.0030\n"
    );
    let forge = open(&fake, 101).await;
    let last = forge.last_posted().await.unwrap().unwrap();
    assert_eq!((last.head, last.spent), (None, Some(usage(3_000))));

    // The next review posted replaces that note: one note, of a head.
    post(&forge, ReviewState::Reviewed, usage(4_000)).await;
    let notes = bodies(&fake);
    assert_eq!(notes.len(), 1, "{notes:#?}");
    assert!(notes[0].contains(&format!(" head={HEAD} ")), "{}", notes[0]);
    assert!(!notes[0].contains("Not reviewed"), "{}", notes[0]);
}

#[tokio::test]
async fn a_note_by_a_newer_pipeline_keeps_its_own_total() {
    let fake = fake().await;
    post(&open(&fake, 200).await, ReviewState::Reviewed, usage(2_000)).await;
    let before = bodies(&fake);
    post(&open(&fake, 100).await, not_reviewed(), usage(9_000)).await;
    assert_eq!(bodies(&fake), before);
    assert_eq!(puts(&fake), 0);
}

#[tokio::test]
async fn a_forged_note_is_not_ours_to_keep_a_total_in() {
    let fake = fake().await;
    let forged = format!(
        "<!-- reviewflow:v1 pipeline={PIPELINE} project=- head={HEAD} run=r conversation=- -->\nreview"
    );
    fake.add_note(MR, &forged, "mallory");
    post(&open(&fake, 100).await, not_reviewed(), usage(3_000)).await;
    let notes = bodies(&fake);
    assert_eq!(notes.len(), 2, "{notes:#?}");
    assert_eq!(notes[0], forged);
    assert!(notes[1].contains(" head=- "), "{}", notes[1]);
}

#[tokio::test]
async fn a_review_that_spent_nothing_writes_no_first_note() {
    let fake = fake().await;
    let nothing = Usage {
        cost_usd: Some(Usd(0)),
        ..usage(0)
    };
    post(&open(&fake, 100).await, not_reviewed(), nothing).await;
    assert!(bodies(&fake).is_empty());
    assert!(fake.writes().is_empty(), "{:?}", fake.writes());
}

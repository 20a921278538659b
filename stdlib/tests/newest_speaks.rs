//! Only the newest run posts, at the forge: a newer pipeline's note that appears after the run
//! read the last review (between the preconditions and the write) still stands, since the
//! GitLab forge reads its note again right before writing and refuses there; and the
//! preconditions refuse it when it was there from the start.

#![allow(clippy::unwrap_used)]

mod support;

use std::sync::{Arc, Mutex};

use reviewflow_stdlib::git::Sha;
use reviewflow_stdlib::kinds::forge::{Preconditions, check_preconditions};
use reviewflow_stdlib::kinds::forge_gitlab::{Gitlab, GitlabKind};
use reviewflow_stdlib::kinds::{Forge, ForgeError, PostRequest};
use support::fake_gitlab::{BOT, FakeGitlab, MrSeed, diff_file};

const TOKEN: &str = "glpat-FAKEtoken0123456789ab";
const BASE: &str = "1111111111111111111111111111111111111111";
const HEAD: &str = "2222222222222222222222222222222222222222";
const MR: u64 = 7;
const PIPELINE: &str = "gitlab-review";

fn sha(text: &str) -> Sha {
    Sha::parse(text).unwrap()
}

/// The forge opened by job `job` of pipeline `pipeline`.
async fn open(fake: &FakeGitlab, pipeline: u64, job: u64) -> Arc<dyn Forge> {
    let vars = [
        ("CI_API_V4_URL", fake.api_url()),
        ("CI_PROJECT_ID", "42".to_owned()),
        ("CI_MERGE_REQUEST_IID", MR.to_string()),
        ("CI_PIPELINE_ID", pipeline.to_string()),
        ("CI_JOB_ID", job.to_string()),
    ];
    support::open::open_forge(&GitlabKind, &vars, TOKEN, PIPELINE)
        .await
        .unwrap()
}

fn request() -> PostRequest {
    let mut request = support::request::post_request(BASE, HEAD, PIPELINE);
    request.check_run = Some(PIPELINE.into());
    request
}

/// The note pipeline 81's job 500 posted for [`HEAD`].
fn newer_note() -> String {
    format!(
        "<!-- reviewflow:v1 pipeline={PIPELINE} project=- head={HEAD} run=run-0002 conversation=- findings=0.0.0 new=0.0.0 order=81.500 -->\nreview of pipeline 81"
    )
}

async fn fake() -> FakeGitlab {
    let fake = FakeGitlab::start().await;
    fake.require_token(TOKEN);
    fake.add_merge_request(MrSeed::new(MR, BASE, HEAD));
    fake.add_diff_value(
        MR,
        diff_file("a.rs", "a.rs", "@@ -1 +1 @@\n-fn a() {}\n+fn b() {}\n"),
    );
    fake
}

fn preconditions() -> Preconditions {
    Preconditions {
        head: sha(HEAD),
        authors: Vec::new(),
    }
}

#[tokio::test]
async fn a_newer_note_written_after_the_last_review_was_read_still_stands() {
    let fake = fake().await;
    let forge = open(&fake, 80, 400).await;
    // The run read the last review (none) and its preconditions held...
    check_preconditions(forge.as_ref(), &preconditions())
        .await
        .unwrap();
    // ...then pipeline 81 posted its review of the same head.
    fake.add_note(MR, &newer_note(), BOT);
    let said = Mutex::new(Vec::new());
    let say = |m: String| said.lock().unwrap().push(m);
    let gitlab = forge.as_any().downcast_ref::<Gitlab>().unwrap();
    let e = gitlab.publish(&request(), &say).await.unwrap_err();
    assert!(matches!(e, ForgeError::Superseded(_)), "{e:?}");
    assert!(
        e.to_string().contains(
            "is by a newer run (run 81 attempt 500; this is run 80 attempt 400): nothing was posted, and that review stands"
        ),
        "{e}"
    );
    assert!(fake.writes().is_empty(), "{:?}", fake.writes());
    assert_eq!(fake.notes(MR)[0]["body"], newer_note());
}

#[tokio::test]
async fn the_preconditions_refuse_a_post_older_than_the_note() {
    let fake = fake().await;
    fake.add_note(MR, &newer_note(), BOT);
    // A retry of pipeline 80's job: a larger job id, an older pipeline.
    let forge = open(&fake, 80, 600).await;
    let e = check_preconditions(forge.as_ref(), &preconditions())
        .await
        .unwrap_err();
    assert!(matches!(e, ForgeError::Superseded(_)), "{e:?}");
    // Pipeline 81's own retry replaces it.
    let forge = open(&fake, 81, 601).await;
    check_preconditions(forge.as_ref(), &preconditions())
        .await
        .unwrap();
    let gitlab = forge.as_any().downcast_ref::<Gitlab>().unwrap();
    let said = Mutex::new(Vec::new());
    let say = |m: String| said.lock().unwrap().push(m);
    gitlab.publish(&request(), &say).await.unwrap();
    let body = fake.notes(MR)[0]["body"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        body.lines()
            .next()
            .unwrap_or_default()
            .ends_with(" order=81.601 -->"),
        "{body}"
    );
}

//! The `gitlab-artifacts` store against the fake GitLab: two pushes (the second reads back what
//! the first kept), floods of pipelines no rule admits, the look-up cap, and faults (a 500, a
//! 404, an oversized file, answers that are not GitLab's JSON). Every test counts the calls.

// Test helpers unwrap as the tests do (clippy's allow-unwrap-in-tests covers only the
// `#[test]` functions themselves).
#![allow(clippy::unwrap_used)]

mod support;

use std::time::Duration;

use reviewflow_stdlib::github::RetryPolicy;
use reviewflow_stdlib::gitlab::{Client, ClientConfig};
use reviewflow_stdlib::store::{
    BlobStore, Candidate, Fetched, GitlabArtifacts, GitlabArtifactsConfig, Judgement, Keep,
    PipelineTrust, Producer, StoreError, StoreName,
};
use serde_json::json;
use support::fake_gitlab::{FakeGitlab, Fault, JobSeed, PROJECT_ID, PipelineSeed, RouteKind};
use zeroize::Zeroizing;

const TOKEN: &str = "glpat-FAKEtoken0123456789ab";
const NAME: &str = "review-7-api";
const MAX: u64 = 1 << 20;
/// A sealed envelope's first bytes (`RFSE`, version 1), then anything: the store does not open it.
const SEALED: &[u8] = b"RFSE\x01 the sealed conversation of push 1";

struct Setup {
    fake: FakeGitlab,
    dir: tempfile::TempDir,
}

async fn setup() -> Setup {
    let fake = FakeGitlab::start().await;
    fake.require_token(TOKEN);
    fake.protect_branch("main");
    Setup {
        fake,
        dir: tempfile::tempdir().unwrap(),
    }
}

fn rule() -> PipelineTrust {
    PipelineTrust {
        git_ref: Some("main".into()),
        source: Some("trigger".into()),
        job: Some("post".into()),
    }
}

fn client(fake: &FakeGitlab, project: &str) -> Client {
    let mut config = ClientConfig::new(
        fake.api_url(),
        Some(Zeroizing::new(TOKEN.to_owned())),
        project,
    );
    config.timeout = Duration::from_secs(10);
    config.retry = RetryPolicy {
        max_attempts: 3,
        base_delay: Duration::from_millis(10),
        max_wait: Duration::from_secs(2),
    };
    Client::new(config).unwrap()
}

/// One run's store: `this_pipeline` is the run's own pipeline.
fn store(s: &Setup, max_run_lookups: usize, this_pipeline: Option<u64>) -> GitlabArtifacts {
    store_with(s, vec![rule()], max_run_lookups, this_pipeline)
}

fn store_with(
    s: &Setup,
    trust: Vec<PipelineTrust>,
    max_run_lookups: usize,
    this_pipeline: Option<u64>,
) -> GitlabArtifacts {
    let client = client(&s.fake, &PROJECT_ID.to_string());
    GitlabArtifacts::new(
        client.clone(),
        GitlabArtifactsConfig {
            project_id: client.numeric_project(),
            this_pipeline,
            trust,
            max_run_lookups,
            keep_dir: s.dir.path().join("reviewflow-store"),
        },
    )
}

fn name() -> StoreName {
    StoreName::new(NAME).unwrap()
}

fn entry_path() -> String {
    GitlabArtifacts::entry_path(&name())
}

/// What a walk in the trait's order did.
struct Walk {
    candidates: usize,
    judgements: Vec<(String, Judgement)>,
    failed_fetches: Vec<String>,
    fetched: Option<(Candidate, Fetched)>,
}

/// Lists, judges each candidate in order, fetches only trusted ones, stops at the first that
/// fetches or when the look-up cap is reached: what `std/restore` does.
async fn walk(store: &dyn BlobStore, max_bytes: u64) -> Walk {
    let candidates = store.list(&name()).await.unwrap();
    let mut walk = Walk {
        candidates: candidates.len(),
        judgements: Vec::new(),
        failed_fetches: Vec::new(),
        fetched: None,
    };
    for candidate in candidates {
        let judgement = store.judge(&candidate).await;
        walk.judgements
            .push((candidate.id.clone(), judgement.clone()));
        match judgement {
            Judgement::Trusted => match store.fetch(&candidate, max_bytes).await {
                Ok(fetched) => {
                    walk.fetched = Some((candidate, fetched));
                    return walk;
                }
                Err(e) => walk.failed_fetches.push(e.to_string()),
            },
            Judgement::CapReached(_) => return walk,
            Judgement::Untrusted(_) | Judgement::Unknown(_) => {}
        }
    }
    walk
}

/// A review pipeline whose `post` job kept `bytes` under [`NAME`]; returns the pipeline's id.
fn kept_review(fake: &FakeGitlab, bytes: &[u8]) -> u64 {
    let (pipeline, jobs) = fake.add_pipeline(PipelineSeed::review());
    fake.put_artifact_file(jobs[1], &entry_path(), bytes);
    pipeline
}

fn untrusted(walk: &Walk) -> usize {
    walk.judgements
        .iter()
        .filter(|(_, j)| matches!(j, Judgement::Untrusted(_)))
        .count()
}

fn paths(fake: &FakeGitlab) -> Vec<String> {
    fake.requests()
        .into_iter()
        .map(|r| {
            let path = r.path_and_query;
            path[path.find("/api/v4").unwrap_or(0)..].to_owned()
        })
        .collect()
}

#[tokio::test]
async fn the_second_push_restores_what_the_first_kept() {
    let s = setup().await;
    // Push 1: nothing kept yet; the run keeps its blob, and GitLab uploads it with the job's
    // artifacts when the job ends.
    let (first_pipeline, first_jobs) = s.fake.add_pipeline(PipelineSeed {
        status: "running".into(),
        jobs: vec![JobSeed {
            status: "running".into(),
            ..JobSeed::keeping("post")
        }],
        ..PipelineSeed::review()
    });
    let run1 = store(&s, 50, Some(first_pipeline));
    let first = walk(&run1, MAX).await;
    assert!(first.fetched.is_none());
    assert_eq!(first.candidates, 0, "the run's own pipeline is skipped");
    let producer = Producer::from([("head".to_owned(), "a".repeat(40))]);
    let kept = run1
        .keep(&name(), Keep::Blob(SEALED), producer.clone())
        .await
        .unwrap();
    assert!(kept.description.contains("reviewflow-store/"), "{kept:?}");
    let written = std::fs::read(s.dir.path().join(entry_path())).unwrap();
    assert_eq!(written, SEALED);
    // A second keep under the name in one job is refused: one entry per job and name.
    assert!(run1.keep(&name(), Keep::Tombstone, producer).await.is_err());
    // The job ends: GitLab uploads `reviewflow-store/` and marks the job and pipeline done.
    s.fake
        .put_artifact_file(first_jobs[0], &entry_path(), &written);
    s.fake.finish_pipeline(first_pipeline);

    // Push 2: a new pipeline, a new run.
    let (second_pipeline, _) = s.fake.add_pipeline(PipelineSeed {
        status: "running".into(),
        ..PipelineSeed::review()
    });
    s.fake.clear_log();
    let run2 = store(&s, 50, Some(second_pipeline));
    let second = walk(&run2, MAX).await;
    let (candidate, fetched) = second.fetched.expect("the first push's blob is restored");
    assert_eq!(candidate.id, format!("pipeline {first_pipeline}"));
    match fetched {
        Fetched::Blob(bytes) => assert_eq!(bytes, SEALED),
        other => panic!("{other:?}"),
    }
    // Four calls: a page of pipelines, the branch's protection, the pipeline's jobs, the file.
    assert_eq!(
        paths(&s.fake),
        vec![
            "/api/v4/projects/42/pipelines?scope=branches&order_by=id&sort=desc&per_page=100&ref=main&source=trigger".to_owned(),
            "/api/v4/projects/42/protected_branches/main".to_owned(),
            format!("/api/v4/projects/42/pipelines/{first_pipeline}/jobs?scope%5B%5D=success&per_page=100"),
            format!("/api/v4/projects/42/jobs/{}/artifacts/reviewflow-store/{NAME}/entry", first_jobs[0]),
        ]
    );
    assert_eq!(run2.client().counts().api_calls, 4);
    assert!(
        s.fake
            .requests()
            .iter()
            .all(|r| r.private_token.as_deref() == Some(TOKEN))
    );
}

#[tokio::test]
async fn a_kept_tombstone_reads_back_as_one() {
    let s = setup().await;
    let run1 = store(&s, 50, None);
    let producer = Producer::from([
        ("head".to_owned(), "b".repeat(40)),
        ("run".to_owned(), "20261203T100000Z-1a2b3c4d".to_owned()),
    ]);
    run1.keep(&name(), Keep::Tombstone, producer.clone())
        .await
        .unwrap();
    let written = std::fs::read(s.dir.path().join(entry_path())).unwrap();
    kept_review(&s.fake, &written);
    let walk = walk(&store(&s, 50, None), MAX).await;
    match walk.fetched.map(|(_, f)| f) {
        Some(Fetched::Tombstone(p)) => assert_eq!(p, producer),
        other => panic!("{other:?}"),
    }
}

/// Pipelines no rule admits, newest: a merge request's own, another project's on the rule's
/// branch and source, another branch's, and a push to the protected branch.
fn flood(fake: &FakeGitlab) -> usize {
    let mut n = 0;
    for i in 0..60 {
        fake.add_pipeline(PipelineSeed::merge_request(100 + i));
        fake.add_pipeline(PipelineSeed {
            project_id: PROJECT_ID + 1,
            ..PipelineSeed::review()
        });
        fake.add_pipeline(PipelineSeed {
            git_ref: format!("feature-{i}"),
            ..PipelineSeed::review()
        });
        fake.add_pipeline(PipelineSeed {
            source: "push".into(),
            ..PipelineSeed::review()
        });
        n += 4;
    }
    n
}

#[tokio::test]
async fn a_flood_the_listing_shows_is_refused_without_a_look_up() {
    let s = setup().await;
    let trusted = kept_review(&s.fake, SEALED);
    let flooded = flood(&s.fake);
    // As a proxy or an older GitLab might: the listing holds every pipeline of branches.
    s.fake.ignore_pipeline_filters();
    let store = store(&s, 50, None);
    let walk = walk(&store, MAX).await;
    let (candidate, _) = walk.fetched.as_ref().expect("the trusted blob is restored");
    assert_eq!(candidate.id, format!("pipeline {trusted}"));
    assert_eq!(walk.candidates, flooded + 1);
    assert_eq!(untrusted(&walk), flooded);
    // Each kind of flood is refused by its own fact, from the listing.
    let reasons: Vec<&str> = walk
        .judgements
        .iter()
        .filter_map(|(_, j)| match j {
            Judgement::Untrusted(r) => Some(r.as_str()),
            _ => None,
        })
        .collect();
    assert!(reasons.iter().any(|r| r.contains("another project")));
    assert!(
        reasons
            .iter()
            .any(|r| r.contains("\"merge_request_event\" on \"refs/merge-requests/"))
    );
    assert!(
        reasons
            .iter()
            .any(|r| r.contains("\"trigger\" on \"feature-"))
    );
    assert!(reasons.iter().any(|r| r.contains("\"push\" on \"main\"")));
    // 241 pipelines: three pages, the protection once, one look-up, one file.
    assert_eq!(s.fake.count(RouteKind::ListPipelines), 3);
    assert_eq!(s.fake.count(RouteKind::ProtectedBranch), 1);
    assert_eq!(s.fake.count(RouteKind::PipelineJobs), 1);
    assert_eq!(s.fake.count(RouteKind::ArtifactFile), 1);
    assert_eq!(store.run_lookups(), 1);
    assert_eq!(store.client().counts().api_calls, 6);
}

#[tokio::test]
async fn gitlab_filters_a_flood_out_of_the_listing() {
    let s = setup().await;
    let trusted = kept_review(&s.fake, SEALED);
    flood(&s.fake);
    let store = store(&s, 50, None);
    let walk = walk(&store, MAX).await;
    assert_eq!(walk.fetched.unwrap().0.id, format!("pipeline {trusted}"));
    // GitLab lists the project's own pipelines, by the rule's `ref` and `source`: the flood
    // is not listed, and the restore costs what it costs without one.
    assert_eq!(walk.candidates, 1);
    assert_eq!(store.client().counts().api_calls, 4);
}

#[tokio::test]
async fn without_source_in_the_listing_each_pipeline_costs_a_look_up_up_to_the_cap() {
    let s = setup().await;
    kept_review(&s.fake, SEALED);
    for _ in 0..120 {
        s.fake.add_pipeline(PipelineSeed {
            source: "push".into(),
            ..PipelineSeed::review()
        });
    }
    s.fake.ignore_pipeline_filters();
    s.fake.omit_source();
    let store = store(&s, 5, None);
    let walk = walk(&store, MAX).await;
    assert!(walk.fetched.is_none());
    assert!(matches!(
        walk.judgements.last(),
        Some((_, Judgement::CapReached(r))) if r.contains("5 pipeline look-ups")
    ));
    // Without `source` a job says nothing of it either: the five looked up are refused.
    assert_eq!(untrusted(&walk), 5);
    assert_eq!(s.fake.count(RouteKind::PipelineJobs), 5);
    // Two pages of pipelines, the protection once, five look-ups.
    assert_eq!(store.client().counts().api_calls, 8);
}

#[tokio::test]
async fn the_looked_up_jobs_must_say_what_the_listing_said() {
    let s = setup().await;
    kept_review(&s.fake, SEALED);
    // Listed as `trigger` on `main`, but its jobs say it ran for a tag named `main`.
    let (tag, tag_jobs) = s.fake.add_pipeline(PipelineSeed {
        tag: true,
        ..PipelineSeed::review()
    });
    s.fake
        .put_artifact_file(tag_jobs[1], &entry_path(), b"RFSE\x01 planted");
    s.fake.ignore_pipeline_filters();
    let store = store(&s, 50, None);
    let walk = walk(&store, MAX).await;
    // A tag's pipeline is not in `scope=branches`; the fake ignores filters here, so it is
    // listed, looked up, and refused by its jobs' `tag`.
    let tag_judgement = walk
        .judgements
        .iter()
        .find(|(id, _)| *id == format!("pipeline {tag}"))
        .map(|(_, j)| j.clone());
    assert!(
        matches!(&tag_judgement, Some(Judgement::Untrusted(r)) if r.contains("a tag")),
        "{tag_judgement:?}"
    );
    match walk.fetched.map(|(_, f)| f) {
        Some(Fetched::Blob(b)) => assert_eq!(b, SEALED),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn an_unprotected_branch_is_trusted_for_nothing() {
    let s = setup().await;
    kept_review(&s.fake, SEALED);
    let trust = vec![PipelineTrust {
        git_ref: Some("dev".into()),
        ..rule()
    }];
    for _ in 0..30 {
        let (_, jobs) = s.fake.add_pipeline(PipelineSeed {
            git_ref: "dev".into(),
            ..PipelineSeed::review()
        });
        s.fake.put_artifact_file(jobs[1], &entry_path(), SEALED);
    }
    let store = store_with(&s, trust, 50, None);
    let walk = walk(&store, MAX).await;
    assert!(walk.fetched.is_none());
    assert_eq!(untrusted(&walk), 30);
    assert!(walk.judgements.iter().all(
        |(_, j)| matches!(j, Judgement::Untrusted(r) if r.contains("not a protected branch"))
    ));
    // A page of pipelines and the protection, asked once: no look-up, no file.
    assert_eq!(s.fake.count(RouteKind::ProtectedBranch), 1);
    assert_eq!(s.fake.count(RouteKind::PipelineJobs), 0);
    assert_eq!(store.client().counts().api_calls, 2);
}

#[tokio::test]
async fn a_pipeline_that_kept_another_name_answers_404_and_the_next_is_read() {
    let s = setup().await;
    let ours = kept_review(&s.fake, SEALED);
    // Another merge request's review, newer: its file is under its own name.
    let (theirs, jobs) = s.fake.add_pipeline(PipelineSeed::review());
    s.fake.put_artifact_file(
        jobs[1],
        "reviewflow-store/review-8-api/entry",
        b"RFSE\x01 theirs",
    );
    let store = store(&s, 50, None);
    let walk = walk(&store, MAX).await;
    assert_eq!(walk.fetched.unwrap().0.id, format!("pipeline {ours}"));
    assert_eq!(walk.failed_fetches.len(), 1);
    assert!(
        walk.failed_fetches[0].contains(&format!("pipeline {theirs} kept nothing under {NAME}")),
        "{:?}",
        walk.failed_fetches
    );
    // Only the job the rule names is asked, once for each pipeline.
    assert_eq!(s.fake.count(RouteKind::ArtifactFile), 2);
    assert_eq!(store.client().counts().api_calls, 6);
}

#[tokio::test]
async fn a_file_over_the_limit_is_refused() {
    let s = setup().await;
    let mut big = b"RFSE\x01".to_vec();
    big.resize(4096, b'x');
    kept_review(&s.fake, &big);
    let store = store(&s, 50, None);
    let walk = walk(&store, 1024).await;
    assert!(walk.fetched.is_none());
    assert!(
        walk.failed_fetches[0].contains("over the limit of 1024"),
        "{:?}",
        walk.failed_fetches
    );
    assert_eq!(s.fake.count(RouteKind::ArtifactFile), 1);
}

#[tokio::test]
async fn a_file_that_is_neither_envelope_nor_tombstone_is_an_error() {
    let s = setup().await;
    kept_review(&s.fake, b"PK\x03\x04 a zip where a file was expected");
    let walk = walk(&store(&s, 50, None), MAX).await;
    assert!(walk.fetched.is_none());
    assert!(
        walk.failed_fetches[0].contains("neither a sealed envelope nor a tombstone"),
        "{:?}",
        walk.failed_fetches
    );
}

#[tokio::test]
async fn a_failing_listing_is_one_remote_line_after_its_retries() {
    let s = setup().await;
    kept_review(&s.fake, SEALED);
    for _ in 0..3 {
        s.fake.fault(RouteKind::ListPipelines, Fault::Status(500));
    }
    let store = store(&s, 50, None);
    let e = store.list(&name()).await.unwrap_err();
    assert!(matches!(e, StoreError::Remote(_)), "{e:?}");
    let text = e.to_string();
    assert!(text.contains("GitLab answered 500"), "{text}");
    assert!(!text.contains('\n'));
    assert_eq!(s.fake.count(RouteKind::ListPipelines), 3);
    // A listing that is not GitLab's JSON is refused too.
    s.fake.fault(
        RouteKind::ListPipelines,
        Fault::Body(200, json!({"pipelines": "not an array"})),
    );
    let e = store.list(&name()).await.unwrap_err().to_string();
    assert!(e.contains("cannot decode"), "{e}");
}

#[tokio::test]
async fn a_failed_look_up_is_unknown_and_not_repeated() {
    let s = setup().await;
    let pipeline = kept_review(&s.fake, SEALED);
    s.fake.fault(
        RouteKind::PipelineJobs,
        Fault::Body(200, json!({"message": "not a list of jobs"})),
    );
    let store = store(&s, 50, None);
    let candidates = store.list(&name()).await.unwrap();
    assert_eq!(candidates[0].id, format!("pipeline {pipeline}"));
    for _ in 0..3 {
        let j = store.judge(&candidates[0]).await;
        assert!(
            matches!(&j, Judgement::Unknown(r) if r.contains("cannot look up the jobs")),
            "{j:?}"
        );
    }
    assert_eq!(s.fake.count(RouteKind::PipelineJobs), 1);
    assert_eq!(store.run_lookups(), 1);
    // Never judged trusted, never read.
    assert!(store.fetch(&candidates[0], MAX).await.is_err());
    assert_eq!(s.fake.count(RouteKind::ArtifactFile), 0);
}

#[tokio::test]
async fn a_server_error_on_the_file_is_an_error_not_a_miss() {
    let s = setup().await;
    kept_review(&s.fake, SEALED);
    for _ in 0..3 {
        s.fake.fault(RouteKind::ArtifactFile, Fault::Status(500));
    }
    let walk = walk(&store(&s, 50, None), MAX).await;
    assert!(walk.fetched.is_none());
    assert!(
        walk.failed_fetches[0].contains("GitLab answered 500"),
        "{:?}",
        walk.failed_fetches
    );
    assert_eq!(s.fake.count(RouteKind::ArtifactFile), 3);
}

#[tokio::test]
async fn a_project_named_by_its_path_is_asked_its_id_once() {
    let s = setup().await;
    kept_review(&s.fake, SEALED);
    let client = client(&s.fake, "acme/widgets");
    assert_eq!(client.numeric_project(), None);
    let store = GitlabArtifacts::new(
        client,
        GitlabArtifactsConfig {
            project_id: None,
            this_pipeline: None,
            trust: vec![rule()],
            max_run_lookups: 50,
            keep_dir: s.dir.path().join("reviewflow-store"),
        },
    );
    let walk = walk(&store, MAX).await;
    assert!(walk.fetched.is_some());
    assert_eq!(s.fake.count(RouteKind::Project), 1);
    assert_eq!(store.client().counts().api_calls, 5);
}

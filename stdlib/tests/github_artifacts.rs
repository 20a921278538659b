//! The `github-artifacts` store against the fake GitHub: the flood of untrusted artifacts, the
//! look-up cap, what a listing rules out, zips that lie, and keeping files for the workflow's
//! upload step.

// Test helpers unwrap as the tests do (clippy's allow-unwrap-in-tests covers only the
// `#[test]` functions themselves).
#![allow(clippy::unwrap_used)]

mod support;

use std::path::PathBuf;
use std::time::Duration;

use reviewflow_stdlib::github::{Client, ClientConfig, RetryPolicy};
use reviewflow_stdlib::store::{
    ArtifactTrust, ArtifactsConfig, BlobStore, Candidate, Fetched, GithubArtifacts, Judgement,
    Keep, Producer, StoreError, StoreName,
};
use support::fake_github::{
    ArtifactSeed, BUILD_WORKFLOW, FakeGithub, REPO_ID, RouteKind, RunSeed, timestamp, zip_of,
    zip_with,
};
use zeroize::Zeroizing;

const TOKEN: &str = "ghs_FAKEtoken0123456789abcdefABCDEF";
const HEAD: &str = "6dcb09b5b57875f334f61aebed695e2e4193db5e";
/// The base branch's commit, which GitHub gives as a `pull_request_target` run's head SHA.
const BASE_SHA: &str = "a1b2c3d4e5f60718293a4b5c6d7e8f9012345678";
const NAME: &str = "review-7-api";
const MAX: u64 = 1 << 20;

struct Setup {
    fake: FakeGithub,
    store: GithubArtifacts,
    dir: tempfile::TempDir,
}

fn trust() -> Vec<ArtifactTrust> {
    vec![ArtifactTrust {
        workflow: Some(BUILD_WORKFLOW.into()),
        event: Some("pull_request_target".into()),
        ..ArtifactTrust::default()
    }]
}

async fn setup(max_run_lookups: usize) -> Setup {
    let fake = FakeGithub::start().await;
    fake.require_token(TOKEN);
    let dir = tempfile::tempdir().unwrap();
    // As on a runner, which sets GITHUB_REPOSITORY_ID.
    let store = store_for(&fake, &dir, max_run_lookups, Some(REPO_ID));
    Setup { fake, store, dir }
}

fn store_for(
    fake: &FakeGithub,
    dir: &tempfile::TempDir,
    max_run_lookups: usize,
    repository_id: Option<u64>,
) -> GithubArtifacts {
    let client = Client::new(ClientConfig {
        api_url: fake.api_url(),
        token: Some(Zeroizing::new(TOKEN.to_owned())),
        repository: FakeGithub::repository().parse().unwrap(),
        timeout: Duration::from_secs(10),
        retry: RetryPolicy {
            max_attempts: 3,
            base_delay: Duration::from_millis(10),
            max_wait: Duration::from_secs(2),
        },
    })
    .unwrap();
    GithubArtifacts::new(
        client,
        ArtifactsConfig {
            repository_id,
            trust: trust(),
            max_run_lookups,
            upload_dir: dir.path().join("upload"),
            github_output: Some(dir.path().join("github_output")),
            base_branch: Some("main".into()),
        },
    )
}

fn name() -> StoreName {
    StoreName::new(NAME).unwrap()
}

/// What a walk in the trait's order did.
struct Walk {
    candidates: usize,
    judgements: Vec<(String, Judgement)>,
    fetched: Option<(Candidate, Fetched)>,
}

/// Lists, judges each candidate in order, fetches only trusted ones, stops at the first that
/// fetches or when the look-up cap is reached: what `std/restore` does.
async fn walk(store: &dyn BlobStore, max_bytes: u64) -> Walk {
    let candidates = store.list(&name()).await.unwrap();
    let mut walk = Walk {
        candidates: candidates.len(),
        judgements: Vec::new(),
        fetched: None,
    };
    for candidate in candidates {
        let judgement = store.judge(&candidate).await;
        walk.judgements
            .push((candidate.id.clone(), judgement.clone()));
        match judgement {
            Judgement::Trusted => {
                if let Ok(fetched) = store.fetch(&candidate, max_bytes).await {
                    walk.fetched = Some((candidate, fetched));
                    return walk;
                }
            }
            Judgement::CapReached(_) => return walk,
            Judgement::Untrusted(_) | Judgement::Unknown(_) => {}
        }
    }
    walk
}

fn trusted_artifact(fake: &FakeGithub, run: u64, created: u64, body: &[u8]) -> u64 {
    fake.add_workflow_run(RunSeed::trusted(run, HEAD));
    fake.add_artifact(
        NAME,
        run,
        zip_of("conversation.sealed", body),
        &timestamp(created),
    )
}

#[tokio::test]
async fn a_flood_of_untrusted_artifacts_costs_a_few_look_ups_and_one_download() {
    let s = setup(10).await;
    let trusted = trusted_artifact(&s.fake, 500, 0, b"the sealed conversation");
    // Fork runs (another head repository) and this repository's own pull_request runs.
    for run in 0..40 {
        s.fake
            .add_workflow_run(RunSeed::fork_pull_request(10_000 + run, HEAD));
    }
    for run in 0..3 {
        s.fake.add_workflow_run(RunSeed::branch_pull_request(
            20_000 + run,
            "feature-7",
            HEAD,
        ));
    }
    let evil = zip_of("conversation.sealed", b"forged");
    let mut untrusted = Vec::new();
    for i in 0..1000u64 {
        let run = if i % 10 == 0 {
            20_000 + i % 3
        } else {
            10_000 + i % 40
        };
        untrusted.push(
            s.fake
                .add_artifact(NAME, run, evil.clone(), &timestamp(1 + i)),
        );
    }

    let walk = walk(&s.store, MAX).await;
    let (candidate, fetched) = walk.fetched.expect("the trusted artifact is restored");
    assert_eq!(candidate.id, format!("artifact {trusted}"));
    match fetched {
        Fetched::Blob(bytes) => assert_eq!(bytes, b"the sealed conversation"),
        other => panic!("{other:?}"),
    }
    assert_eq!(walk.candidates, 1001);
    assert_eq!(walk.judgements.len(), 1001);
    let untrusted_judged = walk.judgements[..1000]
        .iter()
        .filter(|(_, j)| matches!(j, Judgement::Untrusted(_)))
        .count();
    assert_eq!(untrusted_judged, 1000);

    // Exactly one download, of the trusted artifact; none of the flood.
    assert_eq!(s.fake.count(RouteKind::ArtifactZip), 1);
    assert_eq!(s.fake.blob_requests().len(), 1);
    assert_eq!(s.fake.downloads_of(trusted), 1);
    assert!(untrusted.iter().all(|id| s.fake.downloads_of(*id) == 0));
    // Forks were refused from the listing; three shared branch runs and the trusted one were
    // looked up, each once.
    assert_eq!(s.fake.count(RouteKind::WorkflowRun), 4);
    assert_eq!(s.store.run_lookups(), 4);
    assert_eq!(s.fake.count(RouteKind::ListArtifacts), 11);
    let counts = s.store.client().counts();
    assert_eq!(
        (counts.api_calls, counts.downloads, counts.retries),
        (16, 1, 0)
    );
    eprintln!(
        "flood of 1,000: {} API calls ({} pages, {} run look-ups, 1 zip redirect), {} download",
        counts.api_calls,
        s.fake.count(RouteKind::ListArtifacts),
        s.store.run_lookups(),
        counts.downloads
    );
    let fork_reason = &walk.judgements[1].1;
    assert!(
        matches!(fork_reason, Judgement::Untrusted(r) if r.contains("another repository")),
        "{fork_reason:?}"
    );
}

#[tokio::test]
async fn the_look_up_cap_stops_the_search() {
    let s = setup(5).await;
    trusted_artifact(&s.fake, 500, 0, b"sealed");
    for i in 0..20u64 {
        s.fake
            .add_workflow_run(RunSeed::branch_pull_request(30_000 + i, "feature-7", HEAD));
        s.fake.add_artifact(
            NAME,
            30_000 + i,
            zip_of("conversation.sealed", b"x"),
            &timestamp(10 + i),
        );
    }
    let walk = walk(&s.store, MAX).await;
    assert!(walk.fetched.is_none());
    assert_eq!(walk.judgements.len(), 6);
    assert!(matches!(walk.judgements[5].1, Judgement::CapReached(_)));
    assert_eq!(s.fake.count(RouteKind::WorkflowRun), 5);
    assert!(s.fake.blob_requests().is_empty());
}

#[tokio::test]
async fn the_listing_decides_before_any_look_up() {
    let s = setup(10).await;
    // Expired and orphan artifacts, and one of another workflow on this repository.
    s.fake.add_workflow_run(RunSeed::trusted(500, HEAD));
    s.fake.add_artifact_with(ArtifactSeed {
        expired: true,
        ..ArtifactSeed::new(
            NAME,
            500,
            zip_of("conversation.sealed", b"old"),
            &timestamp(50),
        )
    });
    s.fake.add_artifact_with(ArtifactSeed {
        run_id: None,
        ..ArtifactSeed::new(NAME, 0, zip_of("conversation.sealed", b"?"), &timestamp(40))
    });
    s.fake.add_workflow_run(RunSeed::new(
        700,
        ".github/workflows/other.yaml",
        "pull_request_target",
        "main",
        HEAD,
    ));
    s.fake.add_artifact(
        NAME,
        700,
        zip_of("conversation.sealed", b"other"),
        &timestamp(30),
    );
    let candidates = s.store.list(&name()).await.unwrap();
    assert_eq!(candidates.len(), 2, "the expired artifact is skipped");
    assert_eq!(candidates[0].producer.get("run"), None);
    assert!(candidates.iter().all(|c| c.kind.is_none()));
    assert_eq!(candidates[1].producer["run"], "700");
    assert_eq!(candidates[1].producer["head_branch"], "main");
    assert_eq!(candidates[1].producer["head_sha"], HEAD);
    assert!(
        matches!(s.store.judge(&candidates[0]).await, Judgement::Untrusted(r) if r.contains("names no workflow run"))
    );
    assert_eq!(s.fake.count(RouteKind::WorkflowRun), 0);
    assert!(
        matches!(s.store.judge(&candidates[1]).await, Judgement::Untrusted(r) if r.contains("matches no trust rule"))
    );
    assert_eq!(s.fake.count(RouteKind::WorkflowRun), 1);
    // Judged again: from the cache.
    s.store.judge(&candidates[1]).await;
    assert_eq!(s.fake.count(RouteKind::WorkflowRun), 1);
}

#[tokio::test]
async fn a_failed_look_up_is_unknown_and_not_repeated() {
    let s = setup(10).await;
    trusted_artifact(&s.fake, 500, 0, b"sealed");
    s.fake.fail_next(RouteKind::WorkflowRun, 5, 404);
    let candidates = s.store.list(&name()).await.unwrap();
    let first = s.store.judge(&candidates[0]).await;
    assert!(
        matches!(&first, Judgement::Unknown(r) if r.contains("cannot look up run 500")),
        "{first:?}"
    );
    assert!(matches!(
        s.store.judge(&candidates[0]).await,
        Judgement::Unknown(_)
    ));
    assert_eq!(s.fake.count(RouteKind::WorkflowRun), 1);
}

#[tokio::test]
async fn a_known_repository_id_refuses_forks_from_the_listing() {
    let fake = FakeGithub::start().await;
    let dir = tempfile::tempdir().unwrap();
    let store = store_for(&fake, &dir, 10, Some(REPO_ID));
    fake.add_workflow_run(RunSeed::fork_pull_request(600, HEAD));
    fake.add_artifact(
        NAME,
        600,
        zip_of("conversation.sealed", b"x"),
        &timestamp(1),
    );
    let candidates = store.list(&name()).await.unwrap();
    assert!(matches!(
        store.judge(&candidates[0]).await,
        Judgement::Untrusted(_)
    ));
    assert_eq!(fake.count(RouteKind::WorkflowRun), 0);
}

/// A flood of artifacts listed as runs of another repository: each is refused from the
/// listing, without a look-up; the store learns its own id from the runner, or asks once.
#[tokio::test]
async fn a_run_listed_in_another_repository_is_refused_without_a_look_up() {
    for known in [Some(REPO_ID), None] {
        let fake = FakeGithub::start().await;
        let dir = tempfile::tempdir().unwrap();
        let store = store_for(&fake, &dir, 10, known);
        // The run exists and is trusted by its facts: only the listing tells it apart.
        fake.add_workflow_run(RunSeed::trusted(800, HEAD));
        for i in 0..5 {
            fake.add_artifact_with(ArtifactSeed {
                repository_id: Some(REPO_ID + 1),
                ..ArtifactSeed::new(
                    NAME,
                    800,
                    zip_of("conversation.sealed", b"planted"),
                    &timestamp(i),
                )
            });
        }
        let candidates = store.list(&name()).await.unwrap();
        assert_eq!(candidates.len(), 5);
        for c in &candidates {
            match store.judge(c).await {
                Judgement::Untrusted(why) => {
                    assert!(why.contains("ran in another repository"), "{why}")
                }
                other => panic!("{known:?}: {other:?}"),
            }
        }
        assert_eq!(fake.count(RouteKind::WorkflowRun), 0, "{known:?}");
        let asked = usize::from(known.is_none());
        assert_eq!(fake.count(RouteKind::Repository), asked, "{known:?}");
    }
}

#[tokio::test]
async fn an_oversize_artifact_is_refused_before_download() {
    let s = setup(10).await;
    s.fake.add_workflow_run(RunSeed::trusted(500, HEAD));
    s.fake.add_artifact_with(ArtifactSeed {
        size_in_bytes: Some(10_000),
        ..ArtifactSeed::new(
            NAME,
            500,
            zip_of("conversation.sealed", b"x"),
            &timestamp(1),
        )
    });
    let candidates = s.store.list(&name()).await.unwrap();
    assert_eq!(s.store.judge(&candidates[0]).await, Judgement::Trusted);
    let err = s.store.fetch(&candidates[0], 1000).await.unwrap_err();
    assert!(
        matches!(
            err,
            StoreError::TooLarge {
                size: 10_000,
                max_bytes: 1000,
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(s.fake.count(RouteKind::ArtifactZip), 0);
    assert!(s.fake.blob_requests().is_empty());
}

#[tokio::test]
async fn an_unjudged_candidate_is_never_downloaded() {
    let s = setup(10).await;
    trusted_artifact(&s.fake, 500, 0, b"sealed");
    let candidates = s.store.list(&name()).await.unwrap();
    let err = s.store.fetch(&candidates[0], MAX).await.unwrap_err();
    assert!(err.to_string().contains("not judged trusted"), "{err}");
    assert!(s.fake.blob_requests().is_empty());
}

/// Fetches the one trusted artifact whose zip is `zip`; the store's error, if any.
async fn fetch_zip(
    zip: Vec<u8>,
    max_bytes: u64,
    truncate: bool,
) -> (Setup, Result<Fetched, StoreError>) {
    let s = setup(10).await;
    s.fake.add_workflow_run(RunSeed::trusted(500, HEAD));
    let id = s.fake.add_artifact(NAME, 500, zip, &timestamp(1));
    if truncate {
        s.fake.truncate_zip(id);
    }
    let candidates = s.store.list(&name()).await.unwrap();
    assert_eq!(s.store.judge(&candidates[0]).await, Judgement::Trusted);
    let result = s.store.fetch(&candidates[0], max_bytes).await;
    (s, result)
}

#[tokio::test]
async fn a_truncated_zip_is_an_error() {
    let body: Vec<u8> = (0..4000u32).flat_map(|i| i.to_le_bytes()).collect();
    let (_s, result) = fetch_zip(zip_of("conversation.sealed", &body), MAX, true).await;
    let err = result.unwrap_err();
    assert!(
        matches!(&err, StoreError::Remote(m) if m.contains("zip")),
        "{err}"
    );
}

#[tokio::test]
async fn a_zip_of_two_members_is_an_error() {
    let zip = zip_with(&[("conversation.sealed", b"a"), ("tombstone.json", b"{}")]);
    let (_s, result) = fetch_zip(zip, MAX, false).await;
    let err = result.unwrap_err();
    assert!(
        err.to_string().contains("holds 2 files, not exactly one"),
        "{err}"
    );
}

#[tokio::test]
async fn a_zip_of_another_member_is_an_error() {
    let (_s, result) = fetch_zip(zip_of("../../etc/passwd", b"x"), MAX, false).await;
    let err = result.unwrap_err();
    assert!(
        err.to_string()
            .contains("neither conversation.sealed nor tombstone.json"),
        "{err}"
    );
}

#[tokio::test]
async fn a_member_larger_than_the_limit_is_refused_unpacked() {
    // Zeros deflate to almost nothing: a small zip that unpacks large.
    let (_s, result) =
        fetch_zip(zip_of("conversation.sealed", &[0u8; 200_000]), 5_000, false).await;
    let err = result.unwrap_err();
    assert!(
        err.to_string()
            .contains("declares 200000 bytes, over the limit of 5000"),
        "{err}"
    );
}

#[tokio::test]
async fn a_tombstone_carries_its_writers_record() {
    let (_s, result) = fetch_zip(
        zip_of(
            "tombstone.json",
            format!(r#"{{"format":1,"head":"{HEAD}","run":"77"}}"#).as_bytes(),
        ),
        MAX,
        false,
    )
    .await;
    match result.unwrap() {
        Fetched::Tombstone(producer) => {
            assert_eq!(producer["head"], HEAD);
            assert_eq!(producer["run"], "77");
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_failed_listing_is_one_remote_line() {
    let s = setup(10).await;
    s.fake.fail_next(RouteKind::ListArtifacts, 1, 403);
    let err = s.store.list(&name()).await.unwrap_err();
    match &err {
        StoreError::Remote(line) => {
            assert!(line.contains("GitHub answered 403"), "{line}");
            assert!(!line.contains('\n') && !line.contains(TOKEN));
        }
        other => panic!("{other:?}"),
    }
}

fn outputs(path: &PathBuf) -> Vec<(String, String)> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines();
    let mut out = Vec::new();
    while let Some(first) = lines.next() {
        let (name, delimiter) = first.split_once("<<").unwrap();
        assert!(
            delimiter.starts_with("ghadelimiter_") && delimiter.len() > 20,
            "{delimiter}"
        );
        let mut value = Vec::new();
        for line in lines.by_ref() {
            if line == delimiter {
                break;
            }
            value.push(line);
        }
        out.push((name.to_owned(), value.join("\n")));
    }
    out
}

#[tokio::test]
async fn keep_writes_the_file_and_the_step_outputs_once() {
    let s = setup(10).await;
    let kept = s
        .store
        .keep(&name(), Keep::Blob(b"sealed bytes"), Producer::new())
        .await
        .unwrap();
    let file = s
        .dir
        .path()
        .join("upload")
        .join(NAME)
        .join("conversation.sealed");
    assert_eq!(std::fs::read(&file).unwrap(), b"sealed bytes");
    assert_eq!(kept.id, None);
    assert!(
        kept.description.starts_with("wrote "),
        "{}",
        kept.description
    );
    assert!(
        kept.description
            .ends_with("for the workflow's upload-artifact step as artifact review-7-api")
    );
    let output = s.dir.path().join("github_output");
    assert_eq!(
        outputs(&output),
        [
            ("artifact-name".to_owned(), NAME.to_owned()),
            (
                "artifact-path".to_owned(),
                file.to_str().unwrap().to_owned()
            ),
        ]
    );

    // A second keep under the name, of either kind, is refused and changes nothing.
    let again = s
        .store
        .keep(&name(), Keep::Tombstone, Producer::new())
        .await;
    assert!(again.is_err());
    assert!(!file.with_file_name("tombstone.json").exists());
    assert_eq!(outputs(&output).len(), 2);
    // Another store of the same run finds the file there and refuses too.
    let other = store_for(&s.fake, &s.dir, 10, None);
    assert!(
        other
            .keep(&name(), Keep::Blob(b"other"), Producer::new())
            .await
            .is_err()
    );
    assert_eq!(std::fs::read(&file).unwrap(), b"sealed bytes");
    assert!(s.fake.requests().is_empty(), "keeping calls no API");
}

#[tokio::test]
async fn a_kept_tombstone_reads_back_as_one() {
    let s = setup(10).await;
    let producer = Producer::from([
        ("head".to_owned(), HEAD.to_owned()),
        ("run".to_owned(), "500".to_owned()),
    ]);
    s.store
        .keep(&name(), Keep::Tombstone, producer.clone())
        .await
        .unwrap();
    let written = std::fs::read(
        s.dir
            .path()
            .join("upload")
            .join(NAME)
            .join("tombstone.json"),
    )
    .unwrap();
    let (_t, result) = fetch_zip(zip_of("tombstone.json", &written), MAX, false).await;
    match result.unwrap() {
        Fetched::Tombstone(read) => assert_eq!(read, producer),
        other => panic!("{other:?}"),
    }
}

/// A fork's pull request is the audience of `pull_request_target`: the review job's run for it
/// has the fork as its head repository, and is trusted by its event and its workflow file (the
/// base branch's), so its conversation resumes.
#[tokio::test]
async fn a_forks_pull_request_resumes_its_conversation() {
    let s = setup(10).await;
    s.fake
        .add_workflow_run(RunSeed::fork_pull_request_target(600, BASE_SHA));
    let id = s.fake.add_artifact(
        NAME,
        600,
        zip_of("conversation.sealed", b"the fork's review"),
        &timestamp(1),
    );
    let walk = walk(&s.store, MAX).await;
    let (candidate, fetched) = walk.fetched.expect("the fork's review is restored");
    assert_eq!(candidate.id, format!("artifact {id}"));
    assert!(matches!(fetched, Fetched::Blob(b) if b == b"the fork's review"));
    assert_eq!(s.store.run_lookups(), 1);
}

/// A fork's own `pull_request` run (the fork's workflow file, any code) is still refused: from a
/// branch of another name than the base, for free; from a branch it named like the base, after
/// one look-up of its run (the listing carries no event), within the cap.
#[tokio::test]
async fn a_forks_own_pull_request_run_is_still_refused() {
    let s = setup(10).await;
    s.fake
        .add_workflow_run(RunSeed::fork_pull_request_from(700, "patch-1", HEAD));
    s.fake
        .add_workflow_run(RunSeed::fork_pull_request_from(701, "main", HEAD));
    let evil = zip_of("conversation.sealed", b"forged");
    let free = s.fake.add_artifact(NAME, 700, evil.clone(), &timestamp(2));
    let named = s.fake.add_artifact(NAME, 701, evil, &timestamp(1));
    let walk = walk(&s.store, MAX).await;
    assert!(walk.fetched.is_none());
    assert!(
        walk.judgements
            .iter()
            .all(|(_, j)| matches!(j, Judgement::Untrusted(_))),
        "{:?}",
        walk.judgements
    );
    assert_eq!(
        s.store.run_lookups(),
        1,
        "only the run from a branch named main"
    );
    assert_eq!(s.fake.downloads_of(free), 0);
    assert_eq!(s.fake.downloads_of(named), 0);
}

//! The author's answers on GitLab (docs/gitlab.md, "Answering a finding"), against the fake:
//! replies in the threads of the review's inline comments and notes naming a finding's id,
//! only by the merge request's author and the usernames a pipeline declares.

// The functions here unwrap as the tests do (clippy's allow-unwrap-in-tests covers only the
// `#[test]` functions themselves).
#![allow(clippy::unwrap_used)]

mod support;

use std::sync::Arc;

use reviewflow_engine::run::StatusSink;
use reviewflow_stdlib::diff::LineRange;
use reviewflow_stdlib::forge::{
    Baseline, FileRanges, Format, ResponseKind, Review, ReviewFinding, finding_id,
};
use reviewflow_stdlib::git::Sha;
use reviewflow_stdlib::kinds::forge_gitlab::GitlabKind;
use reviewflow_stdlib::kinds::{Forge, PostRequest, ReviewState};
use reviewflow_stdlib::rules::Severity;
use support::fake_gitlab::{BOT, FakeGitlab, MrSeed, RouteKind};

const TOKEN: &str = "glpat-FAKEtoken0123456789ab";
const BASE: &str = "1111111111111111111111111111111111111111";
const HEAD: &str = "2222222222222222222222222222222222222222";
const MR: u64 = 7;
const PIPELINE: &str = "gitlab-review";
const HUNK: &str = "@@ -0,0 +1,3 @@\n+fn cache() {}\n+fn evict() {}\n+fn size() {}\n";

/// The forge opened as a run opens it, with a GitLab job's variables.
async fn open(fake: &FakeGitlab) -> Arc<dyn Forge> {
    let vars = [
        ("CI_API_V4_URL", fake.api_url()),
        ("CI_PROJECT_ID", "42".to_owned()),
        ("CI_MERGE_REQUEST_IID", MR.to_string()),
    ];
    match support::open::open_forge(&GitlabKind, &vars, TOKEN, PIPELINE).await {
        Ok(forge) => forge,
        Err(e) => panic!("the gitlab forge opens: {e}"),
    }
}

fn finding(line: u32, print: char) -> ReviewFinding {
    ReviewFinding {
        rule: "cache-eviction".into(),
        severity: Severity::Error,
        path: "src/cache.rs".into(),
        line: Some(line),
        end_line: None,
        message: format!("problem on line {line}"),
        fingerprint: Some(print.to_string().repeat(32)),
        state: None,
        dialogue: None,
        suggestion: None,
    }
}

#[tokio::test]
async fn replies_in_threads_and_notes_naming_an_id_by_the_author_or_a_declared_username() {
    let fake = FakeGitlab::start().await;
    fake.require_token(TOKEN);
    // alice wrote the merge request.
    fake.add_merge_request(MrSeed::new(MR, BASE, HEAD));
    fake.add_diff(MR, "src/cache.rs", "src/cache.rs", HUNK);
    let forge = open(&fake).await;
    let findings = vec![finding(1, 'a'), finding(3, 'b')];
    let request = PostRequest {
        review: Review {
            comment: "Two problems.".into(),
            findings: findings.clone(),
            base: Sha::parse(BASE).unwrap(),
            head: Sha::parse(HEAD).unwrap(),
            run_id: "run-1".into(),
            conversation_id: None,
            reviewer: "rules".into(),
            resolved: Vec::new(),
        },
        state: ReviewState::Reviewed,
        expected_head: Sha::parse(HEAD).unwrap(),
        ranges: vec![FileRanges {
            path: "src/cache.rs".into(),
            old_path: None,
            changed: vec![LineRange { start: 1, end: 3 }],
            hunks: vec![LineRange { start: 1, end: 3 }],
        }],
        pipeline: PIPELINE.into(),
        formats: vec![Format::Markdown],
        check_run: None,
        inline: Some("added".into()),
        block_on: "error".into(),
        fail_not_reviewed: false,
        baseline: Some(Baseline::of(&findings, &[], 24_000)),
        spent: None,
        cost: None,
    };
    forge
        .post(&request, &StatusSink::discard("post"))
        .await
        .unwrap();
    let (a, b) = (finding_id(&"a".repeat(32)), finding_id(&"b".repeat(32)));
    let threads = fake.discussions(MR);
    assert_eq!(threads.len(), 2, "{threads:#?}");
    // Each thread's first note names its finding, which is how a reply is matched to it.
    let first = threads[0]["notes"][0]["body"].as_str().unwrap();
    assert_eq!(
        first.lines().next().unwrap(),
        format!("**error** · cache-eviction · `{a}`"),
        "{first}"
    );
    assert_eq!(threads[0]["notes"][0]["author"]["username"], BOT);
    let thread_a = threads[0]["id"].as_str().unwrap().to_owned();

    // The author replies in a's thread without naming it; someone else tries too.
    fake.add_reply(
        MR,
        &thread_a,
        "refuted: the caller checks the bound",
        "alice",
    );
    fake.add_reply(MR, &thread_a, "refuted: trust me", "mallory");
    // A thread someone else opened with our first line names no finding for its replies.
    let spoofed = fake.add_discussion(
        MR,
        &format!("**error** · cache-eviction · `{a}`"),
        "mallory",
    );
    fake.add_reply(MR, &spoofed, "refuted: the thread says so", "alice");
    // Quoting a refutation does not repeat it.
    fake.add_note(MR, &format!("> refuted {a}: quoted\nagreed"), "alice");
    // GitLab's own note names nothing anyone wrote.
    fake.add_system_note(MR, &format!("refuted {b}: added 1 commit"), "alice");
    // Notes naming b: the author's, a declared reviewer's (its case as GitLab shows it), a
    // stranger's.
    fake.add_note(MR, &format!("fixed {b}"), "alice");
    fake.add_note(MR, &format!("refuted {b}: it is dead code"), "Declared");
    fake.add_note(MR, &format!("refuted {b}: no"), "mallory");

    // A second run: the forge opened again reads the answers to the review it posted.
    let forge = open(&fake).await;
    fake.clear_log();
    let last = forge.last_posted().await.unwrap().expect("a posted review");
    assert!(last.baseline.is_some());
    let read = forge
        .responses(&last, &["declared".to_owned()])
        .await
        .unwrap();
    let got: Vec<(&str, ResponseKind, &str, &str)> = read
        .iter()
        .map(|r| {
            (
                r.finding.as_str(),
                r.kind,
                r.reason.as_str(),
                r.author.as_str(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            (
                a.as_str(),
                ResponseKind::Refuted,
                "the caller checks the bound",
                "alice"
            ),
            (b.as_str(), ResponseKind::Fixed, "", "alice"),
            (
                b.as_str(),
                ResponseKind::Refuted,
                "it is dead code",
                "Declared"
            ),
        ]
    );
    // The marker's page of notes, then one page of discussions.
    assert_eq!(fake.count(RouteKind::ListNotes), 1);
    assert_eq!(fake.count(RouteKind::ListDiscussions), 1);
    assert!(fake.writes().is_empty());
}

#[tokio::test]
async fn discussions_past_the_page_cap_are_refused_not_read_in_part() {
    let fake = FakeGitlab::start().await;
    fake.require_token(TOKEN);
    fake.add_merge_request(MrSeed::new(MR, BASE, HEAD));
    fake.add_diff(MR, "src/cache.rs", "src/cache.rs", HUNK);
    let forge = open(&fake).await;
    let request = PostRequest {
        review: Review {
            comment: "Nothing.".into(),
            findings: Vec::new(),
            base: Sha::parse(BASE).unwrap(),
            head: Sha::parse(HEAD).unwrap(),
            run_id: "run-1".into(),
            conversation_id: None,
            reviewer: "rules".into(),
            resolved: Vec::new(),
        },
        state: ReviewState::Reviewed,
        expected_head: Sha::parse(HEAD).unwrap(),
        ranges: Vec::new(),
        pipeline: PIPELINE.into(),
        formats: vec![Format::Markdown],
        check_run: None,
        inline: None,
        block_on: "error".into(),
        fail_not_reviewed: false,
        baseline: Some(Baseline::of(&[], &[], 24_000)),
        spent: None,
        cost: None,
    };
    forge
        .post(&request, &StatusSink::discard("post"))
        .await
        .unwrap();
    fake.flood_notes(MR, 2_001, "+1", "mallory");
    let forge = open(&fake).await;
    let last = forge.last_posted().await.unwrap().expect("a posted review");
    let err = forge.responses(&last, &[]).await.unwrap_err().to_string();
    assert!(err.contains("more than 20 pages of discussions"), "{err}");
    assert_eq!(fake.count(RouteKind::ListDiscussions), 20);
}

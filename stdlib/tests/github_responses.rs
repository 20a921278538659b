//! The author's answers on GitHub (docs/github.md, "Answering a finding"), against the fake:
//! replies in the threads of the review's inline comments and comments naming a finding's id,
//! only by the pull request's author and the names a pipeline declares.

// Test helpers unwrap as the tests do (clippy's allow-unwrap-in-tests covers only the
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
use reviewflow_stdlib::kinds::forge_github::GithubKind;
use reviewflow_stdlib::kinds::{Forge, PostRequest, ReviewState};
use reviewflow_stdlib::rules::Severity;
use support::fake_github::FakeGithub;

const TOKEN: &str = "ghs_FAKEtoken0123456789abcdefABCDEF";
const BASE: &str = "1111111111111111111111111111111111111111";
const HEAD: &str = "1a2b3c4d5e6f1a2b3c4d5e6f1a2b3c4d5e6f1a2b";
const PR: u64 = 7;

async fn open(fake: &FakeGithub, dir: &std::path::Path) -> Arc<dyn Forge> {
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
        ("GITHUB_RUN_ID", "100".to_owned()),
    ];
    match support::open::open_forge(&GithubKind, &vars, TOKEN, "review").await {
        Ok(forge) => forge,
        Err(e) => panic!("the github forge opens: {e}"),
    }
}

fn finding(line: u32, print: char) -> ReviewFinding {
    ReviewFinding {
        rule: "unchecked".into(),
        severity: Severity::Error,
        path: "src/lib.rs".into(),
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
async fn replies_in_threads_and_comments_naming_an_id_by_the_author_or_a_declared_name() {
    let fake = FakeGithub::start().await;
    fake.require_token(TOKEN);
    fake.add_pull_request(PR, HEAD, BASE);
    let dir = tempfile::tempdir().unwrap();
    let forge = open(&fake, dir.path()).await;
    let findings = vec![finding(3, 'a'), finding(5, 'b')];
    let request = PostRequest {
        review: Review {
            comment: "Two problems.".into(),
            findings: findings.clone(),
            base: Sha::parse(BASE).unwrap(),
            head: Sha::parse(HEAD).unwrap(),
            run_id: "run-1".into(),
            conversation_id: None,
            reviewer: "claude".into(),
            resolved: Vec::new(),
        },
        state: ReviewState::Reviewed,
        expected_head: Sha::parse(HEAD).unwrap(),
        ranges: vec![FileRanges {
            path: "src/lib.rs".into(),
            old_path: None,
            changed: vec![LineRange { start: 1, end: 10 }],
            hunks: vec![LineRange { start: 1, end: 10 }],
        }],
        pipeline: "review".into(),
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
    let threads = fake.review_comments(PR);
    assert_eq!(threads.len(), 2, "{threads:#?}");
    // Each inline comment names its finding, which is how a reply is matched to it.
    let first = threads[0]["body"].as_str().unwrap();
    assert!(
        first.lines().next().unwrap().ends_with(&format!("`{a}`")),
        "{first}"
    );
    let thread_a = threads[0]["id"].as_u64().unwrap();

    // The author replies in a's thread without naming it; someone else tries too.
    fake.add_review_reply(
        PR,
        thread_a,
        "refuted: the caller checks the bound",
        "octocat",
    );
    fake.add_review_reply(PR, thread_a, "refuted: trust me", "mallory");
    // A comment naming b, by the author; a declared reviewer's; a stranger's; a quote.
    fake.add_issue_comment(PR, &format!("fixed {b}"), "octocat", "User");
    fake.add_issue_comment(
        PR,
        &format!("refuted {b}: it is dead code"),
        "Second-Reader",
        "User",
    );
    fake.add_issue_comment(PR, &format!("refuted {b}: no"), "mallory", "User");
    fake.add_issue_comment(
        PR,
        &format!("> refuted {a}: quoted\nagreed"),
        "octocat",
        "User",
    );

    // A second run: the forge opened again reads the answers to the review it posted.
    let forge = open(&fake, dir.path()).await;
    let last = forge.last_posted().await.unwrap().expect("a posted review");
    assert!(last.baseline.is_some());
    let read = forge
        .responses(&last, &["second-reader".to_owned()])
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
                "octocat"
            ),
            (b.as_str(), ResponseKind::Fixed, "", "octocat"),
            (
                b.as_str(),
                ResponseKind::Refuted,
                "it is dead code",
                "Second-Reader"
            ),
        ]
    );
}

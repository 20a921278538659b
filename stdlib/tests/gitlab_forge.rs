//! `forge "gitlab"` against the fake GitLab: a merge request read and its diff gathered, two
//! pushes end to end (a note created, then the same note updated; a commit status on each
//! pinned head), a head that moved between pin and post, GitLab's errors, and floods of notes.
//! The API calls of a second push and of a flood are counted.

// Test helpers unwrap as the tests do (clippy's allow-unwrap-in-tests covers only the
// `#[test]` functions themselves).
#![allow(clippy::unwrap_used)]

mod support;

use std::sync::{Arc, Mutex};

use reviewflow_stdlib::forge::{Review, ReviewFinding};
use reviewflow_stdlib::gather::{GatherConfig, GatherError};
use reviewflow_stdlib::git::Sha;
use reviewflow_stdlib::kinds::forge::{Preconditions, check_preconditions};
use reviewflow_stdlib::kinds::forge_gitlab::{Gitlab, GitlabKind};
use reviewflow_stdlib::kinds::{Forge, ForgeError, PostRequest, ReviewState};
use reviewflow_stdlib::rules::Severity;
use serde_json::json;
use support::fake_gitlab::{BOT, FakeGitlab, Fault, MrSeed, Paging, RouteKind, diff_file};

const TOKEN: &str = "glpat-FAKEtoken0123456789ab";
const BASE: &str = "1111111111111111111111111111111111111111";
const HEAD1: &str = "2222222222222222222222222222222222222222";
const HEAD2: &str = "3333333333333333333333333333333333333333";
const MR: u64 = 7;
const PIPELINE: &str = "gitlab-review";
const HUNK: &str = "@@ -0,0 +1,3 @@\n+fn cache() {}\n+fn evict() {}\n+fn size() {}\n";

fn sha(text: &str) -> Sha {
    Sha::parse(text).unwrap()
}

async fn fake() -> FakeGitlab {
    let fake = FakeGitlab::start().await;
    fake.require_token(TOKEN);
    fake.add_merge_request(MrSeed::new(MR, BASE, HEAD1));
    let mut added = diff_file("src/cache.rs", "src/cache.rs", HUNK);
    added["new_file"] = json!(true);
    added["a_mode"] = json!("0");
    fake.add_diff_value(MR, added);
    fake
}

/// The forge opened as a run opens it, with a GitLab job's variables.
async fn open(fake: &FakeGitlab) -> Result<Arc<dyn Forge>, ForgeError> {
    let vars = [
        ("CI_API_V4_URL", fake.api_url()),
        ("CI_PROJECT_ID", "42".to_owned()),
        ("CI_PROJECT_PATH", "acme/widgets".to_owned()),
        ("CI_MERGE_REQUEST_IID", MR.to_string()),
        (
            "CI_JOB_URL",
            "https://gitlab.example.com/acme/widgets/-/jobs/77".to_owned(),
        ),
    ];
    support::open::open_forge(&GitlabKind, &vars, TOKEN, PIPELINE).await
}

fn gitlab(forge: &Arc<dyn Forge>) -> &Gitlab {
    forge.as_any().downcast_ref::<Gitlab>().unwrap()
}

fn finding(path: &str, line: u32, severity: Severity) -> ReviewFinding {
    ReviewFinding {
        rule: "cache-eviction".into(),
        severity,
        path: path.into(),
        line: Some(line),
        end_line: None,
        message: "evict() never runs".into(),
        fingerprint: None,
        state: None,
        dialogue: None,
        suggestion: None,
    }
}

fn request(
    head: &str,
    findings: Vec<ReviewFinding>,
    ranges: Vec<reviewflow_stdlib::forge::FileRanges>,
) -> PostRequest {
    PostRequest {
        review: Review {
            comment: "One thing to fix.".into(),
            findings,
            base: sha(BASE),
            head: sha(head),
            run_id: "run-0001".into(),
            conversation_id: None,
            reviewer: "rules".into(),
            resolved: Vec::new(),
        },
        state: ReviewState::Reviewed,
        expected_head: sha(head),
        ranges,
        pipeline: PIPELINE.into(),
        formats: Vec::new(),
        check_run: Some(PIPELINE.into()),
        inline: Some("added".into()),
        block_on: "error".into(),
        fail_not_reviewed: false,
        baseline: None,
        spent: None,
        cost: None,
    }
}

/// One push as `std/gather` and `std/post` run it: open, last review, gather, check the head,
/// post. Returns what was said.
async fn push(fake: &FakeGitlab, head: &str, findings: Vec<ReviewFinding>) -> Vec<String> {
    let forge = open(fake).await.unwrap();
    let last = forge.last_posted().await.unwrap().and_then(|m| m.head);
    let config = GatherConfig {
        since_last_review: true,
        ..GatherConfig::default()
    };
    let gathered = forge.gather(&config, last.as_ref()).await.unwrap();
    assert_eq!(gathered.head, sha(head));
    check_preconditions(
        forge.as_ref(),
        &Preconditions {
            head: sha(head),
            authors: Vec::new(),
        },
    )
    .await
    .unwrap();
    let said = Mutex::new(Vec::new());
    let say = |m: String| said.lock().unwrap().push(m);
    gitlab(&forge)
        .publish(&request(head, findings, gathered.ranges.clone()), &say)
        .await
        .unwrap();
    said.into_inner().unwrap()
}

#[tokio::test]
async fn a_merge_request_and_its_paginated_diff_are_gathered() {
    for paging in [Paging::Both, Paging::LinkOnly, Paging::NextPageOnly] {
        let fake = fake().await;
        fake.paging(paging);
        for i in 0..120 {
            fake.add_diff(
                MR,
                &format!("src/m{i}.rs"),
                &format!("src/m{i}.rs"),
                "@@ -1 +1 @@\n-a\n+b\n",
            );
        }
        let forge = open(&fake).await.unwrap();
        let info = forge.change();
        assert_eq!(info.change_id, "7");
        assert_eq!(info.repo, "acme/widgets");
        assert_eq!((info.base.as_str(), info.head.as_str()), (BASE, HEAD1));
        assert_eq!(info.title, "Add the widget cache");
        assert_eq!(info.branch.as_deref(), Some("feature/cache"));
        let gathered = forge.gather(&GatherConfig::default(), None).await.unwrap();
        assert_eq!(gathered.files, 121, "{paging:?}");
        assert!(gathered.problems.is_empty());
        assert_eq!(gathered.ranges[0].path, "src/cache.rs");
        assert_eq!(fake.count(RouteKind::Diffs), 2, "{paging:?}");
        let text = String::from_utf8(gathered.diff).unwrap();
        assert!(text.starts_with(
            "diff --git a/src/cache.rs b/src/cache.rs\nnew file mode 100644\n--- /dev/null\n"
        ));
        // The token went in PRIVATE-TOKEN on every call, never in a URL.
        for r in fake.requests() {
            assert_eq!(r.private_token.as_deref(), Some(TOKEN));
            assert!(!r.path_and_query.contains(TOKEN));
        }
    }
}

#[tokio::test]
async fn two_pushes_post_one_note_then_update_it() {
    let fake = fake().await;
    // Push 1: no note yet; one finding on an added line.
    let said = push(
        &fake,
        HEAD1,
        vec![finding("src/cache.rs", 2, Severity::Error)],
    )
    .await;
    let notes = fake.notes(MR);
    assert_eq!(notes.len(), 1);
    let id = notes[0]["id"].clone();
    assert!(
        notes[0]["body"]
            .as_str()
            .unwrap()
            .contains(&format!("head={HEAD1}"))
    );
    assert_eq!(fake.discussions(MR).len(), 1);
    let position = &fake.discussions(MR)[0]["notes"][0]["position"];
    assert_eq!(position["new_path"], "src/cache.rs");
    assert_eq!(position["new_line"], 2);
    assert_eq!(fake.statuses()[0]["sha"], HEAD1);
    assert_eq!(fake.statuses()[0]["status"], "failed");
    assert_eq!(fake.statuses()[0]["name"], PIPELINE);
    assert_eq!(
        fake.statuses()[0]["target_url"],
        "https://gitlab.example.com/acme/widgets/-/jobs/77"
    );
    assert!(said.iter().any(|s| s.contains("commit status")), "{said:?}");

    // Push 2: a new head on top of the first; the review reads what changed since.
    let mut seed = MrSeed::new(MR, BASE, HEAD2);
    seed.start_sha = BASE.into();
    fake.add_merge_request(seed);
    fake.add_diff(MR, "src/size.rs", "src/size.rs", "@@ -1 +1 @@\n-a\n+b\n");
    fake.set_merge_base(HEAD1, HEAD2, HEAD1);
    fake.set_compare(
        HEAD1,
        HEAD2,
        vec![diff_file(
            "src/size.rs",
            "src/size.rs",
            "@@ -1 +1 @@\n-a\n+b\n",
        )],
    );
    fake.flood_notes(MR, 3, "a person's comment", "bob");
    fake.clear_log();
    push(&fake, HEAD2, Vec::new()).await;
    let calls: Vec<String> = fake
        .requests()
        .iter()
        .map(|r| format!("{} {}", r.method, r.path_and_query))
        .collect();
    eprintln!(
        "second push: {} API calls:\n{}",
        calls.len(),
        calls.join("\n")
    );
    let notes = fake.notes(MR);
    let ours: Vec<_> = notes
        .iter()
        .filter(|n| n["author"]["username"] == BOT)
        .collect();
    assert_eq!(ours.len(), 1, "one note, updated in place");
    assert_eq!(ours[0]["id"], id);
    assert!(
        ours[0]["body"]
            .as_str()
            .unwrap()
            .contains(&format!("head={HEAD2}"))
    );
    assert_eq!(fake.count(RouteKind::CreateNote), 0);
    assert_eq!(fake.count(RouteKind::UpdateNote), 1);
    assert_eq!(fake.count(RouteKind::Compare), 1);
    assert_eq!(fake.statuses()[1]["sha"], HEAD2);
    assert_eq!(fake.statuses()[1]["status"], "success");
    // GET /user, the merge request, notes (last review), the newest diff version, diffs, the
    // newest diff version again, merge base, compare, the merge request (head check), notes
    // (before writing), PUT note, POST status.
    assert_eq!(calls.len(), 12, "{calls:#?}");
}

/// A finding on lines 2 and 3 with a suggested fix: its thread sits on line 3, the fix in
/// GitLab's syntax for that line and the one above.
#[tokio::test]
async fn a_suggestion_is_written_in_gitlab_s_syntax_on_the_thread() {
    let fake = fake().await;
    let mut f = finding("src/cache.rs", 2, Severity::Warning);
    f.end_line = Some(3);
    f.suggestion = Some("fn evict(&mut self) {}\nfn size(&self) -> usize { 0 }".into());
    push(&fake, HEAD1, vec![f]).await;
    let discussions = fake.discussions(MR);
    assert_eq!(discussions.len(), 1);
    let note = &discussions[0]["notes"][0];
    assert_eq!(note["position"]["new_line"], 3);
    assert_eq!(
        note["body"],
        "**warning** · cache-eviction\n\nevict() never runs\n\n```suggestion:-1+0\nfn evict(&mut self) {}\nfn size(&self) -> usize { 0 }\n```"
    );
}

#[tokio::test]
async fn a_head_that_moved_between_pin_and_post_is_refused_and_nothing_is_written() {
    let fake = fake().await;
    let forge = open(&fake).await.unwrap();
    // Pinned at HEAD1; someone pushes HEAD2 before the post.
    let mut seed = MrSeed::new(MR, BASE, HEAD2);
    seed.start_sha = BASE.into();
    fake.add_merge_request(seed);
    let e = check_preconditions(
        forge.as_ref(),
        &Preconditions {
            head: sha(HEAD1),
            authors: Vec::new(),
        },
    )
    .await
    .unwrap_err();
    assert!(matches!(e, ForgeError::HeadMoved { .. }), "{e:?}");
    assert!(e.head_moved());
    let e = e.to_string();
    assert!(
        e.contains("moved since gather") && e.contains("nothing was posted"),
        "{e}"
    );
    assert!(fake.writes().is_empty(), "{:?}", fake.writes());
}

#[tokio::test]
async fn a_head_author_is_a_name_not_an_account() {
    let fake = fake().await;
    let forge = open(&fake).await.unwrap();
    let author = forge.head_author(&sha(HEAD1)).await.unwrap();
    assert_eq!(
        author,
        reviewflow_stdlib::forge::CommitAuthor::NoAccount {
            name: "alice".into()
        }
    );
}

#[tokio::test]
async fn gitlabs_errors_are_clear_and_server_errors_retried() {
    let fake = fake().await;
    // A merge request GitLab does not know.
    fake.fault(RouteKind::MergeRequest, Fault::Status(404));
    let e = open(&fake).await.err().unwrap();
    assert!(matches!(e, ForgeError::NotFound { .. }), "{e:?}");
    assert_eq!(
        e.to_string(),
        "cannot read merge request !7: GitLab answered 404 to GET /projects/42/merge_requests/7: 404 Not found"
    );
    // A revoked token.
    fake.fault(
        RouteKind::User,
        Fault::Body(401, json!({"error": "invalid_token", "error_description": "Token was revoked. You have to re-authorize from the user."})),
    );
    let e = open(&fake).await.err().unwrap();
    assert!(matches!(e, ForgeError::Unauthorized { .. }), "{e:?}");
    let e = e.to_string();
    assert!(
        e.contains("401") && e.contains("invalid_token: Token was revoked"),
        "{e}"
    );
    assert!(!e.contains(TOKEN));
    // A 5xx on a POST is not tried again (it may have written), and says which write failed.
    let forge = open(&fake).await.unwrap();
    fake.fault(RouteKind::CreateNote, Fault::Status(503));
    let say = |_: String| {};
    let e = gitlab(&forge)
        .publish(&request(HEAD1, Vec::new(), Vec::new()), &say)
        .await
        .unwrap_err();
    assert!(matches!(e, ForgeError::Http { .. }), "{e:?}");
    assert_eq!(e.status(), Some(503));
    let e = e.to_string();
    assert!(
        e.starts_with("cannot create the review note: GitLab answered 503"),
        "{e}"
    );
    assert_eq!(fake.count(RouteKind::CreateNote), 1);
    assert!(fake.statuses().is_empty(), "no status after a failed note");
    // 5xx on reads (and on the PUT that updates a note, which is idempotent) are tried again;
    // the post goes through.
    fake.fault(RouteKind::ListNotes, Fault::Status(500));
    fake.fault(RouteKind::Diffs, Fault::BadGateway);
    push(&fake, HEAD1, Vec::new()).await;
    assert_eq!(fake.notes(MR).len(), 1);
    // A status GitLab refuses says the note is posted.
    fake.fault(
        RouteKind::CreateStatus,
        Fault::Body(400, json!({"message": {"state": ["is invalid"]}})),
    );
    let e = gitlab(&forge)
        .publish(&request(HEAD1, Vec::new(), Vec::new()), &say)
        .await
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("the review note is posted, but the commit status is not")
            && e.ends_with("state is invalid"),
        "{e}"
    );
}

#[tokio::test]
async fn a_token_refused_a_write_names_the_scope_it_lacks() {
    let fake = fake().await;
    let forge = open(&fake).await.unwrap();
    fake.fault(RouteKind::CreateNote, Fault::Status(403));
    let say = |_: String| {};
    let e = gitlab(&forge)
        .publish(&request(HEAD1, Vec::new(), Vec::new()), &say)
        .await
        .unwrap_err();
    assert!(matches!(e, ForgeError::Forbidden { .. }), "{e:?}");
    assert_eq!(e.capability(), Some("api:write"));
    assert!(
        e.to_string()
            .starts_with("cannot create the review note: GitLab answered 403"),
        "{e}"
    );
}

#[tokio::test]
async fn a_flood_of_notes_after_ours_costs_one_page() {
    let fake = fake().await;
    push(&fake, HEAD1, Vec::new()).await;
    fake.flood_notes(MR, 5000, "spam", "mallory");
    fake.clear_log();
    let forge = open(&fake).await.unwrap();
    let last = forge.last_posted().await.unwrap().unwrap();
    assert_eq!(last.head, Some(sha(HEAD1)));
    eprintln!(
        "flood after ours: {} note pages to find ours",
        fake.count(RouteKind::ListNotes)
    );
    assert_eq!(fake.count(RouteKind::ListNotes), 1);
}

#[tokio::test]
async fn a_flood_of_notes_before_ours_is_searched_from_the_newest_end_and_stays_bounded() {
    let fake = fake().await;
    fake.flood_notes(MR, 5000, "spam", "mallory");
    // A note by someone else that carries our marker is not ours.
    fake.add_note(
        MR,
        &format!("<!-- reviewflow:v1 pipeline={PIPELINE} head={HEAD2} run=forged -->"),
        "mallory",
    );
    fake.clear_log();
    push(&fake, HEAD1, Vec::new()).await;
    let first = fake.requests().len();
    let pages_first = fake.count(RouteKind::ListNotes);
    eprintln!("flood before the first review: {first} API calls, {pages_first} note pages");
    // Two searches (last review, before writing), each 10 pages from each end.
    assert_eq!(pages_first, 40);
    assert_eq!(fake.count(RouteKind::CreateNote), 1);
    fake.clear_log();
    let mut seed = MrSeed::new(MR, BASE, HEAD2);
    seed.start_sha = BASE.into();
    fake.add_merge_request(seed);
    fake.set_merge_base(HEAD1, HEAD2, HEAD1);
    fake.set_compare(HEAD1, HEAD2, Vec::new());
    push(&fake, HEAD2, Vec::new()).await;
    let pages_second = fake.count(RouteKind::ListNotes);
    eprintln!(
        "flood, second push: {} API calls, {pages_second} note pages",
        fake.requests().len()
    );
    // Ours is the newest note: ten pages from the oldest end, then one from the newest.
    assert_eq!(pages_second, 22);
    assert_eq!(fake.count(RouteKind::CreateNote), 0);
    assert_eq!(fake.count(RouteKind::UpdateNote), 1);
}

#[tokio::test]
async fn a_diff_over_max_bytes_is_refused_as_gather_refuses_one() {
    let fake = fake().await;
    let forge = open(&fake).await.unwrap();
    let config = GatherConfig {
        max_bytes: 64,
        ..GatherConfig::default()
    };
    let e = forge.gather(&config, None).await.unwrap_err();
    assert!(
        matches!(e, ForgeError::Gather(GatherError::TooLarge { .. })),
        "{e:?}"
    );
    assert!(
        e.to_string()
            .contains("over the limit of 64 bytes (max-bytes)"),
        "{e}"
    );
}

#[tokio::test]
async fn a_push_between_the_pin_and_the_diff_or_during_its_read_reviews_nothing() {
    // Pinned at HEAD1, pushed before the diff is read: the newest version is HEAD2's.
    let fake = fake().await;
    let forge = open(&fake).await.unwrap();
    let mut seed = MrSeed::new(MR, BASE, HEAD2);
    seed.start_sha = BASE.into();
    fake.add_merge_request(seed);
    let e = forge
        .gather(&GatherConfig::default(), None)
        .await
        .unwrap_err();
    assert!(matches!(e, ForgeError::DiffMoved { .. }), "{e:?}");
    let e = e.to_string();
    assert!(
        e.contains("head moved since the forge opened") && e.contains("nothing was reviewed"),
        "{e}"
    );
    assert_eq!(fake.count(RouteKind::Diffs), 0);

    // Pushed while the pages are read: page 1 is read at HEAD2.
    let fake = fake_with_pages().await;
    let forge = open(&fake).await.unwrap();
    fake.push_during_diff(MR, &[HEAD2]);
    let e = forge
        .gather(&GatherConfig::default(), None)
        .await
        .unwrap_err();
    assert!(
        matches!(e, ForgeError::PushedDuringRead { .. }) && e.head_moved(),
        "{e:?}"
    );
    assert!(
        e.to_string().contains("pushed to while its diff was read"),
        "{e}"
    );
    // Pushed and put back while the pages are read: the head is the pinned one again, but
    // each push made a new version, and page 1 was HEAD2's.
    let fake = fake_with_pages().await;
    let forge = open(&fake).await.unwrap();
    fake.push_during_diff(MR, &[HEAD2, HEAD1]);
    let e = forge
        .gather(&GatherConfig::default(), None)
        .await
        .unwrap_err();
    assert!(
        matches!(e, ForgeError::PushedDuringRead { .. }) && e.head_moved(),
        "{e:?}"
    );
    assert!(
        e.to_string().contains("pushed to while its diff was read"),
        "{e}"
    );
    assert!(fake.writes().is_empty());
}

async fn fake_with_pages() -> FakeGitlab {
    let fake = fake().await;
    for i in 0..150 {
        fake.add_diff(
            MR,
            &format!("f{i}"),
            &format!("f{i}"),
            "@@ -1 +1 @@\n-a\n+b\n",
        );
    }
    fake
}

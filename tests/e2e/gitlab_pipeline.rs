//! `reviewflow run` on a pipeline whose forge is `gitlab`, as a job of the review pipeline runs
//! it, against the fake GitLab that answers with GitLab's real shapes (see
//! `stdlib/tests/support/fake_gitlab.rs`): two pushes, one note updated in place, a thread and a
//! commit status on each pinned head; a head that moves before the post; and two pushes keeping
//! the conversation in a `gitlab-artifacts` store, the second resuming what the first kept; and
//! the merge request's author's reply in a thread, read by the next push's `gather`.

#[path = "../../stdlib/tests/support/fake_gitlab.rs"]
mod fake_gitlab;

use std::process::Command;

use fake_gitlab::{BOT, FakeGitlab, MrSeed, RouteKind, diff_file};
use serde_json::json;

const TOKEN: &str = "glpat-FakeProjectTokenForTheTests01";
const BASE: &str = "1111111111111111111111111111111111111111";
const HEAD1: &str = "2222222222222222222222222222222222222222";
const HEAD2: &str = "3333333333333333333333333333333333333333";
const MR: u64 = 7;

const PIPELINE: &str = r#"pipeline "gitlab-review"

forge "gitlab" token="gitlab-token" timeout="2s" retries=1

secret "gitlab-token" env="REVIEW_GITLAB_TOKEN" {
    visible-to "gather" "post"
}

stage "gather" uses="std/gather" {
    since-last-review
}

stage "review" uses="std/review" {
    reviewer "rules"
    untrusted "gather.diff"
}

stage "post" uses="std/post" {
    comment "review.comment"
    findings "review.findings"
    ranges "gather.ranges"
    require-head "gather.head"
    check-run "gitlab-review"
    inline "added"
}
"#;

/// A new file whose second line is a TODO, which the rules reviewer reports.
const HUNK1: &str = "@@ -0,0 +1,3 @@\n+def main():\n+    # TODO: handle errors\n+    return 1\n";
const HUNK2: &str = "@@ -0,0 +1,2 @@\n+def helper():\n+    return 2\n";

struct Outcome {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Outcome {
    fn log(&self) -> String {
        format!(
            "exit {}\n--- stdout\n{}--- stderr\n{}",
            self.code, self.stdout, self.stderr
        )
    }
}

/// One job: a folder holding the pipeline, GitLab's variables and the token, nothing else of
/// the test's environment.
async fn run(fake: &FakeGitlab) -> Outcome {
    run_pipeline(fake, PIPELINE).await
}

/// One job of `pipeline`.
async fn run_pipeline(fake: &FakeGitlab, pipeline: &str) -> Outcome {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("review.kdl"), pipeline).expect("write the pipeline");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_reviewflow"));
    cmd.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", dir.path())
        .env("NO_COLOR", "1")
        .env("CI_API_V4_URL", fake.api_url())
        .env("CI_PROJECT_ID", "42")
        .env("CI_PROJECT_PATH", "acme/widgets")
        .env("CI_MERGE_REQUEST_IID", MR.to_string())
        .env("REVIEW_GITLAB_TOKEN", TOKEN)
        .args(["run", "review.kdl"])
        .current_dir(dir.path());
    let out = tokio::task::spawn_blocking(move || cmd.output())
        .await
        .expect("join")
        .expect("the binary runs");
    drop(dir);
    Outcome {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

async fn seeded() -> FakeGitlab {
    let fake = FakeGitlab::start().await;
    fake.require_token(TOKEN);
    fake.add_merge_request(MrSeed::new(MR, BASE, HEAD1));
    let mut file = diff_file("app.py", "app.py", HUNK1);
    file["new_file"] = json!(true);
    fake.add_diff_value(MR, file);
    fake
}

fn our_notes(fake: &FakeGitlab) -> Vec<serde_json::Value> {
    fake.notes(MR)
        .into_iter()
        .filter(|n| n["author"]["username"] == BOT)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_pushes_update_one_note_and_set_a_status_on_each_head() {
    let fake = seeded().await;
    let first = run(&fake).await;
    assert_eq!(first.code, 0, "{}", first.log());
    let notes = our_notes(&fake);
    assert_eq!(notes.len(), 1, "{}", first.log());
    let body = notes[0]["body"].as_str().unwrap_or_default();
    assert!(body.contains(&format!("head={HEAD1}")), "{body}");
    assert!(body.contains("TODO"), "{body}");
    let threads = fake.discussions(MR);
    assert_eq!(threads.len(), 1, "{}", first.log());
    assert_eq!(threads[0]["notes"][0]["position"]["new_line"], 2);
    assert_eq!(fake.statuses()[0]["sha"], HEAD1);
    assert_eq!(fake.statuses()[0]["name"], "gitlab-review");

    // Push 2 adds a file on top of the first.
    fake.add_merge_request(MrSeed::new(MR, BASE, HEAD2));
    fake.add_diff(MR, "util.py", "util.py", HUNK2);
    fake.set_merge_base(HEAD1, HEAD2, HEAD1);
    fake.set_compare(HEAD1, HEAD2, vec![diff_file("util.py", "util.py", HUNK2)]);
    fake.clear_log();
    let second = run(&fake).await;
    assert_eq!(second.code, 0, "{}", second.log());
    let notes = our_notes(&fake);
    assert_eq!(notes.len(), 1, "one note, updated in place");
    assert!(
        notes[0]["body"]
            .as_str()
            .unwrap_or_default()
            .contains(&format!("head={HEAD2}"))
    );
    assert_eq!(fake.count(RouteKind::UpdateNote), 1);
    assert_eq!(fake.count(RouteKind::CreateNote), 0);
    assert_eq!(fake.count(RouteKind::Compare), 1, "{}", second.log());
    assert_eq!(fake.statuses()[1]["sha"], HEAD2);
    // The token: only in PRIVATE-TOKEN, never in a URL, never in the job's output.
    for r in fake.requests() {
        assert_eq!(r.private_token.as_deref(), Some(TOKEN));
        assert!(!r.path_and_query.contains(TOKEN));
    }
    for out in [&first, &second] {
        assert!(!out.stdout.contains(TOKEN) && !out.stderr.contains(TOKEN));
    }
    let calls: Vec<String> = fake
        .requests()
        .iter()
        .map(|r| format!("{} {}", r.method, r.path_and_query))
        .collect();
    eprintln!(
        "second push through `reviewflow run`: {} API calls\n{}",
        calls.len(),
        calls.join("\n")
    );
    // The forge-level twelve (stdlib/tests/gitlab_forge.rs), and the thread the TODO still
    // gets.
    assert_eq!(calls.len(), 13, "{calls:#?}");
    assert_eq!(fake.count(RouteKind::CreateDiscussion), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_head_that_moves_before_the_post_is_refused_and_nothing_is_written() {
    let fake = seeded().await;
    // The first read (when the forge opens) pins HEAD1; by the post's check it is HEAD2.
    fake.push_after(MR, 1, HEAD2);
    let out = run(&fake).await;
    assert!(
        out.stdout.contains("moved since gather") || out.stderr.contains("moved since gather"),
        "{}",
        out.log()
    );
    assert!(fake.writes().is_empty(), "{:?}", fake.writes());
}

/// The review pipeline keeping its conversation in a `gitlab-artifacts` store, with a reviewer
/// that continues the conversation it is given.
const KEEPING: &str = r#"pipeline "gitlab-review"

forge "gitlab" token="gitlab-token" timeout="2s" retries=1

store "conversations" kind="gitlab-artifacts" name="review-{change}" {
    trust ref="main" source="trigger" job="post"
    max-tries 10
    max-run-lookups 50
}

secret "conversation-key" env="REVIEW_CONVERSATION_KEY" min-bytes=32 on-missing="disable" {
    visible-to "restore" "seal"
}
secret "gitlab-token" env="REVIEW_GITLAB_TOKEN" {
    visible-to "gather" "restore" "post"
}

stage "gather" uses="std/gather" {
    since-last-review
}

stage "restore" uses="std/restore" on-error="fallback" {
    from "conversations"
    key "conversation-key"
    bind repo="{repo}" change="{change}"
    require-posted-head
}

stage "review" uses="std/review" {
    reviewer "command"
    command "sh" "-c" REVIEWER
    resume "restore.conversation"
    untrusted "gather.diff"
}

stage "scan" uses="std/scan" on-error="fallback" {
    target "review.conversation"
}

stage "seal" uses="std/seal" when="scan.clean && review.commented" on-error="fallback" {
    key "conversation-key"
    input "review.conversation"
    bind repo="{repo}" change="{change}"
}

stage "post" uses="std/post" {
    comment "review.comment"
    findings "review.findings"
    ranges "gather.ranges"
    require-head "gather.head"
    upload "seal.blob" to="conversations"
}
"#;

/// Appends a turn to the conversation it resumes, and says how many it saw: one line of `sh`,
/// a KDL raw string (the sandbox reads no script outside the checkout and the system).
const REVIEWER: &str = r###"#"set -e; turns=0; resumed=false; if [ -n "$REVIEWFLOW_RESUME" ]; then resumed=true; cp "$REVIEWFLOW_RESUME" "$REVIEWFLOW_CONVERSATION_OUT/session"; turns=$(wc -l < "$REVIEWFLOW_RESUME" | tr -d ' '); fi; echo turn >> "$REVIEWFLOW_CONVERSATION_OUT/session"; printf '{{"version":1,"comment":"it saw %s earlier turns","findings":[],"conversation":"session","resumed":%s}}' "$turns" "$resumed" > "$REVIEWFLOW_RESULT""#"###;

const KEY: &str = "a-conversation-key-of-at-least-32-bytes!";

/// One job of a pipeline: the run and what it left in its folder for GitLab to upload.
async fn keeping_run(fake: &FakeGitlab, pipeline: u64) -> (Outcome, Option<Vec<u8>>) {
    let dir = tempfile::tempdir().expect("tempdir");
    let text = KEEPING.replace("REVIEWER", REVIEWER);
    std::fs::write(dir.path().join("review.kdl"), text).expect("write the pipeline");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_reviewflow"));
    cmd.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", dir.path())
        .env("NO_COLOR", "1")
        .env("CI_API_V4_URL", fake.api_url())
        .env("CI_PROJECT_ID", "42")
        .env("CI_PROJECT_PATH", "acme/widgets")
        .env("CI_PROJECT_DIR", dir.path())
        .env("CI_PIPELINE_ID", pipeline.to_string())
        .env("CI_MERGE_REQUEST_IID", MR.to_string())
        .env("REVIEW_GITLAB_TOKEN", TOKEN)
        .env("REVIEW_CONVERSATION_KEY", KEY)
        .args(["run", "review.kdl"])
        .current_dir(dir.path());
    let out = tokio::task::spawn_blocking(move || cmd.output())
        .await
        .expect("join")
        .expect("the binary runs");
    let kept = std::fs::read(
        dir.path()
            .join(format!("reviewflow-store/review-{MR}/entry")),
    )
    .ok();
    let outcome = Outcome {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    };
    (outcome, kept)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_second_push_resumes_the_conversation_the_first_kept_as_a_job_artifact() {
    let fake = seeded().await;
    fake.protect_branch("main");

    // Push 1, in pipeline 1: nothing to restore; post keeps the sealed conversation.
    let (first, first_jobs) = fake.add_pipeline(fake_gitlab::PipelineSeed {
        status: "running".into(),
        ..fake_gitlab::PipelineSeed::review()
    });
    let (out1, kept) = keeping_run(&fake, first).await;
    assert_eq!(out1.code, 0, "{}", out1.log());
    let kept = kept.unwrap_or_else(|| panic!("post kept nothing: {}", out1.log()));
    assert!(kept.starts_with(b"RFSE"), "a sealed envelope");
    let note = our_notes(&fake)[0]["body"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(note.contains("it saw 0 earlier turns"), "{note}");
    // The job ends: GitLab uploads its `reviewflow-store/`.
    fake.put_artifact_file(
        first_jobs[1],
        &format!("reviewflow-store/review-{MR}/entry"),
        &kept,
    );
    fake.finish_pipeline(first);

    // Push 2, in pipeline 2: the conversation of push 1 is restored and continued.
    fake.add_merge_request(MrSeed::new(MR, BASE, HEAD2));
    fake.add_diff(MR, "util.py", "util.py", HUNK2);
    fake.set_merge_base(HEAD1, HEAD2, HEAD1);
    fake.set_compare(HEAD1, HEAD2, vec![diff_file("util.py", "util.py", HUNK2)]);
    let (second, _) = fake.add_pipeline(fake_gitlab::PipelineSeed {
        status: "running".into(),
        ..fake_gitlab::PipelineSeed::review()
    });
    fake.clear_log();
    let (out2, kept2) = keeping_run(&fake, second).await;
    let log2 = out2.log();
    assert_eq!(out2.code, 0, "{log2}");
    assert!(log2.contains("restored"), "{log2}");
    let note = our_notes(&fake)[0]["body"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        note.contains("it saw 1 earlier turns"),
        "the conversation was resumed: {note}"
    );
    assert!(kept2.is_some_and(|k| k.starts_with(b"RFSE")));
    let store_calls = [
        RouteKind::ListPipelines,
        RouteKind::ProtectedBranch,
        RouteKind::PipelineJobs,
        RouteKind::ArtifactFile,
    ]
    .map(|k| fake.count(k));
    assert_eq!(store_calls, [1, 1, 1, 1], "{log2}");
    let calls: Vec<String> = fake
        .requests()
        .iter()
        .map(|r| format!("{} {}", r.method, r.path_and_query))
        .collect();
    eprintln!(
        "second push resuming through `reviewflow run`: {} API calls\n{}",
        calls.len(),
        calls.join("\n")
    );
    // The forge's eleven (no commit status here) and the store's four.
    assert_eq!(calls.len(), 15, "{calls:#?}");
    for r in fake.requests() {
        assert_eq!(r.private_token.as_deref(), Some(TOKEN));
    }
    for out in [&out1, &out2] {
        assert!(!out.stdout.contains(KEY) && !out.stderr.contains(KEY));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_authors_reply_in_a_thread_is_read_by_the_next_push() {
    let fake = seeded().await;
    let answering = PIPELINE.replace(
        "    since-last-review\n",
        "    since-last-review\n    responses\n",
    );
    let first = run_pipeline(&fake, &answering).await;
    assert_eq!(first.code, 0, "{}", first.log());
    let threads = fake.discussions(MR);
    assert_eq!(threads.len(), 1, "{}", first.log());
    let opening = threads[0]["notes"][0]["body"].as_str().unwrap_or_default();
    assert!(
        opening.lines().next().unwrap_or_default().contains("`rf-"),
        "the thread names its finding: {opening}"
    );
    let thread = threads[0]["id"].as_str().unwrap_or_default().to_owned();
    // alice wrote the merge request; mallory did not.
    fake.add_reply(
        MR,
        &thread,
        "refuted: errors are handled by the caller",
        "alice",
    );
    fake.add_reply(MR, &thread, "refuted: trust me", "mallory");

    fake.add_merge_request(MrSeed::new(MR, BASE, HEAD2));
    fake.add_diff(MR, "util.py", "util.py", HUNK2);
    fake.set_merge_base(HEAD1, HEAD2, HEAD1);
    fake.set_compare(HEAD1, HEAD2, vec![diff_file("util.py", "util.py", HUNK2)]);
    fake.clear_log();
    let second = run_pipeline(&fake, &answering).await;
    assert_eq!(second.code, 0, "{}", second.log());
    assert!(
        second
            .log()
            .contains("responses: 1 of 1 read are new answers to the last review's findings"),
        "{}",
        second.log()
    );
    assert_eq!(fake.count(RouteKind::ListDiscussions), 1);
}

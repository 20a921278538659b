//! Suggested fixes on GitHub (docs/reviewers.md, "Suggested fixes"): `examples/review.kdl` with
//! the fake `claude` reporting findings that carry suggestions, against the fake GitHub. A
//! two-line suggestion is a suggestion block on a two-line inline comment; one that reaches a
//! line the change did not add is removed (the finding stays) and the log says why; one that
//! holds a credential makes the scan of the findings not clean, and nothing is published. On
//! the local forge, a post without the change's ranges publishes no suggestion.

// The fake GitHub of github_pipeline.rs, loaded here too: that module keeps its copy private.
#[path = "../../stdlib/tests/support/fake_github.rs"]
#[allow(clippy::duplicate_mod)]
mod fake_github;

use fake_github::{FakeGithub, RunSeed};
use serde_json::{Value, json};

use crate::support::{ExampleJob, JOB_TOKEN, root};
const BASE: &str = "1111111111111111111111111111111111111111";
const HEAD: &str = "2222222222222222222222222222222222222222";
const PR: u64 = 7;
const APP: &str = "projects/web/app.py";

/// The change: line 1 and 4 are context, lines 2 and 3 are added.
fn diff() -> String {
    format!(
        "diff --git a/{APP} b/{APP}\nindex 1111111..2222222 100644\n--- a/{APP}\n+++ b/{APP}\n\
         @@ -1,3 +1,4 @@\n def main():\n-    return 0\n+    x = compute( )\n+    return  x\n # end\n"
    )
}

/// `examples/review.kdl`, the fake claude told its findings by an input the test sets, inline
/// comments on added lines, and `edit` applied.
fn pipeline(edit: impl Fn(String) -> String) -> String {
    let text = std::fs::read_to_string(root().join("examples/review.kdl")).expect("pipeline");
    let stage = "stage \"gather\" uses=\"std/gather\" {\n";
    let anchor = "    responses \"gather.responses\"    // fenced too";
    let check_run = "    check-run \"enroll-review-{project}\"\n";
    assert!(
        text.contains(stage) && text.contains(anchor) && text.contains(check_run),
        "the example changed"
    );
    let edited = text
        .replace(
            stage,
            &format!(
                "input \"findings\" env=\"FINDINGS\"\ntrusted \"input\" name=\"findings\" reason=\"the test sets it\"\n\n{stage}"
            ),
        )
        .replace(
            anchor,
            &format!("    env \"FAKE_CLAUDE_FINDINGS\" \"{{findings}}\"\n{anchor}"),
        )
        .replace(check_run, &format!("{check_run}    inline \"added\"\n"));
    edit(edited)
}

/// One run of the workflow on the pull request, the fake claude reporting `findings`: the exit
/// status and the log.
async fn run(fake: &FakeGithub, findings: Value, edit: impl Fn(String) -> String) -> (i32, String) {
    fake.add_pull_request(PR, HEAD, BASE);
    fake.set_compare(BASE, HEAD, "ahead");
    fake.set_compare_diff(BASE, HEAD, &diff());
    fake.add_workflow_run(RunSeed::trusted(100, BASE));
    let job = ExampleJob {
        api_url: &fake.api_url(),
        repository: &FakeGithub::repository(),
        pr: PR,
        run_id: 100,
        pipeline: pipeline(edit),
        args: &[],
        env: vec![
            (
                "ANTHROPIC_API_KEY",
                "sk-ant-api03-fake-suggestions-0123456789".into(),
            ),
            ("FINDINGS", findings.to_string()),
        ],
    }
    .run()
    .await;
    (job.code, job.log)
}

fn finding(line: u32, end_line: u32, suggestion: &str) -> Value {
    json!({
        "path": APP, "line": line, "end_line": end_line, "severity": "warning",
        "rule": "spacing", "message": "odd spacing", "suggestion": suggestion
    })
}

/// Everything the fake GitHub was given to show: comments, check runs, reviews.
fn posted(fake: &FakeGithub) -> String {
    format!(
        "{:?}{:?}{:?}",
        fake.comments(PR),
        fake.check_runs(),
        fake.reviews()
    )
}

/// The inline comments of the one pull-request review posted.
fn inline_comments(fake: &FakeGithub) -> Vec<Value> {
    let reviews = fake.reviews();
    assert_eq!(reviews.len(), 1, "{reviews:#?}");
    reviews[0]["comments"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_two_line_suggestion_is_a_suggestion_block_on_both_lines() {
    let fake = FakeGithub::start().await;
    fake.require_token(JOB_TOKEN);
    let fix = "    x = compute()\n    return x";
    let (code, log) = run(&fake, json!([finding(2, 3, fix)]), |t| t).await;
    assert_eq!(code, 0, "{log}");
    let comments = inline_comments(&fake);
    assert_eq!(comments.len(), 1, "{comments:#?}");
    let c = &comments[0];
    assert_eq!(
        (
            &c["path"],
            &c["start_line"],
            &c["line"],
            &c["start_side"],
            &c["side"]
        ),
        (
            &json!(APP),
            &json!(2),
            &json!(3),
            &json!("RIGHT"),
            &json!("RIGHT")
        ),
        "{c:#}"
    );
    let body = c["body"].as_str().expect("a body");
    let (head, block) = body.split_once("\n\n```suggestion\n").expect("a block");
    assert!(head.starts_with("**warning** · spacing · `rf-"), "{body}");
    assert!(head.ends_with("`\n\nodd spacing"), "{body}");
    assert_eq!(block, "    x = compute()\n    return x\n```", "{body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_suggestion_past_the_added_lines_is_removed_and_the_finding_kept() {
    let fake = FakeGithub::start().await;
    fake.require_token(JOB_TOKEN);
    // Lines 3 and 4: line 4 is context, which the change did not write.
    let (code, log) = run(
        &fake,
        json!([finding(3, 4, "    return x\n# the end")]),
        |t| t,
    )
    .await;
    assert_eq!(code, 0, "{log}");
    assert!(
        log.contains(&format!(
            "{APP}:3: suggestion removed: line 4 is not a line the change added (a suggestion replaces only added lines) (the finding is kept)"
        )),
        "{log}"
    );
    let comments = inline_comments(&fake);
    assert_eq!(comments.len(), 1, "the finding stays: {comments:#?}");
    let body = comments[0]["body"].as_str().expect("a body");
    assert!(
        body.ends_with("odd spacing") && !body.contains("```"),
        "{body}"
    );
    // Nothing posted offers the removed fix.
    assert!(!posted(&fake).contains("# the end"));
}

/// A `command` reviewer's `result.json` is published as written (only the run's own secrets are
/// redacted): a credential in a suggestion reaches `review.findings`, where the scan finds it,
/// and the post that waits for the scan publishes nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_credential_in_a_suggestion_is_caught_by_the_scan_and_nothing_is_published() {
    let fake = FakeGithub::start().await;
    fake.require_token(JOB_TOKEN);
    let credential = format!("ghp_{}", "a1B2".repeat(9));
    let result = json!({
        "version": 1, "comment": "One fix.", "conversation": null, "resumed": false,
        "findings": [finding(2, 2, &format!("    x = compute(\"{credential}\")"))],
    });
    let scripts = tempfile::tempdir().expect("tempdir");
    let script = scripts.path().join("reviewer.sh");
    std::fs::write(
        &script,
        format!("#!/bin/sh\nset -e\ncat > \"$REVIEWFLOW_RESULT\" <<'JSON'\n{result}\nJSON\n"),
    )
    .expect("write");
    std::process::Command::new("chmod")
        .arg("+x")
        .arg(&script)
        .status()
        .expect("chmod");
    let script = script.display().to_string();
    // The scan covers the findings, and the post waits for it (docs/checks.md, fail-closed).
    let (_, log) = run(&fake, json!([]), |t| {
        let command = t.replace(
            "    reviewer \"claude\"\n",
            &format!("    reviewer \"command\"\n    command \"{script}\"\n"),
        );
        let scanned = command.replace(
            "    target \"review.conversation\"\n",
            "    target \"review.conversation\" \"review.comment\" \"review.findings\"\n",
        );
        let gated = scanned.replace(
            "stage \"post\" uses=\"std/post\" ",
            "stage \"post\" uses=\"std/post\" when=\"scan.clean\" ",
        );
        assert!(
            command != t && scanned != command && gated != scanned,
            "the example changed"
        );
        gated
    })
    .await;
    assert!(log.contains("review.findings: 1 hit: not clean"), "{log}");
    assert!(log.contains("github: review.findings:"), "{log}");
    assert!(log.contains("post: skipped"), "{log}");
    assert!(!log.contains(&credential), "the log never shows it: {log}");
    assert!(fake.reviews().is_empty(), "{:#?}", fake.reviews());
    assert!(!posted(&fake).contains(&credential));
}

/// A model's answer is masked of credentials before it is published: a suggestion that held
/// one is removed whole (a fix with a hole in it is no fix), and the finding is posted without
/// it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_s_suggestion_holding_a_credential_is_removed() {
    let fake = FakeGithub::start().await;
    fake.require_token(JOB_TOKEN);
    let credential = format!("ghp_{}", "a1B2".repeat(9));
    let fix = format!("    x = compute(\"{credential}\")");
    let (code, log) = run(&fake, json!([finding(2, 2, &fix)]), |t| t).await;
    assert_eq!(code, 0, "{log}");
    assert!(
        log.contains("1 suggested fix removed: they held a secret of the run or what looks like a credential (the findings are kept)"),
        "{log}"
    );
    let comments = inline_comments(&fake);
    assert_eq!(comments.len(), 1, "{comments:#?}");
    assert!(!posted(&fake).contains(&credential) && !posted(&fake).contains("```suggestion"));
}

/// `examples/local.kdl` without `ranges`: nothing shows a suggestion replaces lines the change
/// added, so the rules reviewer's fix is not published; the finding is.
#[test]
fn without_ranges_a_post_publishes_no_suggestion() {
    let repo = crate::support::Repo::local_example();
    let pipeline = repo.path().join("examples/local.kdl");
    let text = std::fs::read_to_string(&pipeline).expect("read");
    let edited = text.replace("    ranges \"gather.ranges\"\n", "");
    assert_ne!(edited, text, "the example changed");
    std::fs::write(&pipeline, edited).expect("write");
    repo.commit("src/app.js", "let x = 1;  \n", "trailing whitespace");
    let out = crate::support::reviewflow_in(repo.path(), &["run", "examples/local.kdl"]);
    assert_eq!(out.code, 0, "{}", out.transcript());
    assert!(
        out.transcript().contains(
            "1 suggestion removed: without `ranges` nothing shows they replace lines the change added (the findings are kept)"
        ),
        "{}",
        out.transcript()
    );
    let json = std::fs::read_to_string(
        repo.path()
            .join(".reviewflow/forge/branch-main/local-review/review.json"),
    )
    .expect("review.json");
    let review: Value = serde_json::from_str(&json).expect("json");
    let findings = review["findings"].as_array().expect("findings");
    assert!(
        findings
            .iter()
            .any(|f| f["rule"] == "trailing-whitespace" && f.get("suggestion").is_none()),
        "{review:#}"
    );
}

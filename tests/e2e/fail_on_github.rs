//! `reviewflow run --fail-on` on the `github` forge, against the fake GitHub of
//! `stdlib/tests/support/fake_github.rs`: the same rule as on the local forge, and a review
//! that fell back is "not reviewed" in the check run and in the exit status alike.

// The fake GitHub of github_pipeline.rs, loaded here too: that module keeps its copy private.
#[path = "../../stdlib/tests/support/fake_github.rs"]
#[allow(clippy::duplicate_mod)]
pub(crate) mod fake_github;

use fake_github::FakeGithub;

use crate::support::{ActionsStep, Run};

pub(crate) const TOKEN: &str = "ghs_FakeInstallationTokenForTheFailOnTests01";
const BASE: &str = "1111111111111111111111111111111111111111";
const HEAD: &str = "2222222222222222222222222222222222222222";
pub(crate) const PR: u64 = 9;

/// The review of `reviewer`, published with a check run.
pub(crate) fn pipeline(review: &str, post_extra: &str) -> String {
    format!(
        r#"pipeline "gh-fail-on"
forge "github" token="github-token" timeout="1s" retries=1
secret "github-token" env="GITHUB_TOKEN" {{
    visible-to "gather" "post"
}}
stage "gather" uses="std/gather"
{review}
stage "post" uses="std/post" permissions="pull-requests:write checks:write" {{
{post_extra}    comment "review.comment"
    findings "review.findings"
    ranges "gather.ranges"
    require-head "gather.head"
    check-run "gh-fail-on"
}}
"#
    )
}

pub(crate) const RULES: &str = r#"stage "review" uses="std/review" {
    reviewer "rules"
    untrusted "gather.diff"
}"#;

const FAILING: &str = r#"stage "review" uses="std/review" on-error="fallback" {
    reviewer "command"
    command "false"
    untrusted "gather.diff"
    tries 1
}"#;

/// A new file with conflict markers: three `error` findings of the `rules` reviewer.
fn conflict_diff() -> String {
    let lines = [
        "fn f() {}",
        "<<<<<<< HEAD",
        "let a = 1;",
        "=======",
        "let a = 2;",
        ">>>>>>> other",
    ];
    let mut d = format!(
        "diff --git a/src/merge.rs b/src/merge.rs\nnew file mode 100644\nindex 0000000000000000000000000000000000000000..e69de29bb2d1d6434b8b29ae775ad8c2e48c5391\n--- /dev/null\n+++ b/src/merge.rs\n@@ -0,0 +1,{} @@\n",
        lines.len()
    );
    for l in lines {
        d.push_str(&format!("+{l}\n"));
    }
    d
}

pub(crate) async fn fake() -> FakeGithub {
    let fake = FakeGithub::start().await;
    fake.require_token(TOKEN);
    fake.add_pull_request(PR, HEAD, BASE);
    fake.set_compare(BASE, HEAD, "ahead");
    fake.set_compare_diff(BASE, HEAD, &conflict_diff());
    fake
}

/// The job's step: `reviewflow run pipeline.kdl ARGS` as GitHub Actions runs it on a push to
/// the pull request.
async fn run(fake: &FakeGithub, pipeline: &str, args: &[&str]) -> Run {
    let payload =
        format!(r#"{{"action":"synchronize","number":{PR},"pull_request":{{"number":{PR}}}}}"#);
    run_on(fake, pipeline, args, "pull_request_target", &payload).await
}

/// The same step, started by the event `name` with the payload `payload`.
pub(crate) async fn run_on(
    fake: &FakeGithub,
    pipeline: &str,
    args: &[&str],
    name: &str,
    payload: &str,
) -> Run {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(dir.path().join("checkout")).expect("mkdir");
    std::fs::create_dir_all(dir.path().join("temp")).expect("mkdir");
    std::fs::write(dir.path().join("checkout/pipeline.kdl"), pipeline).expect("pipeline");
    let event = dir.path().join("event.json");
    std::fs::write(&event, payload).expect("event");
    let mut cmd = crate::support::command();
    let step = ActionsStep {
        api_url: &fake.api_url(),
        repository: &FakeGithub::repository(),
        event_name: name,
        event_path: &event,
        run_id: 300,
        temp: &dir.path().join("temp"),
    };
    step.environment(&mut cmd)
        .arg("run")
        .arg("pipeline.kdl")
        .args(args)
        .current_dir(dir.path().join("checkout"))
        .env("GITHUB_TOKEN", TOKEN);
    let out = tokio::task::spawn_blocking(move || cmd.output())
        .await
        .expect("join")
        .expect("the binary runs");
    drop(dir);
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_github_a_blocking_finding_fails_the_check_run_and_the_run() {
    let fake = fake().await;
    let out = run(&fake, &pipeline(RULES, ""), &["--fail-on", "error"]).await;
    let log = out.transcript();
    assert_eq!(out.code, 3, "{log}");
    assert!(
        log.contains("--fail-on error: 3 published findings at or above error (exit 3)"),
        "{log}"
    );
    let runs = fake.check_runs();
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_eq!(runs[0]["conclusion"], "failure", "{runs:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_github_a_review_that_fell_back_is_not_reviewed_in_the_check_run_and_the_exit() {
    let fake = fake().await;
    let allow = "    allow \"fail-closed\" reason=\"the check run says not reviewed\"\n";
    let text = crate::support::with_allow_ids(&pipeline(FAILING, allow));
    let out = run(&fake, &text, &["--fail-on", "error"]).await;
    let log = out.transcript();
    assert_eq!(out.code, 4, "{log}");
    assert!(
        log.contains("not reviewed: `post` published no review: `review` fell back"),
        "{log}"
    );
    assert!(!log.contains("no published finding"), "{log}");
    let runs = fake.check_runs();
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_eq!(runs[0]["conclusion"], "neutral", "{runs:?}");
    // The title says why, in the words the manifest keeps: the stage and its reason.
    let title = runs[0]["output"]["title"].as_str().unwrap_or_default();
    assert!(
        title.starts_with(
            "Not reviewed: the review did not run: `review` fell back: no review after 1 try"
        ),
        "{runs:?}"
    );
    assert!(title.contains("exited with status 1"), "{runs:?}");
    assert!(
        fake.comments(PR).is_empty(),
        "no review comment for a review that did not run"
    );
}

/// A re-run of the job on the same head: `gather` stops the run (the comment's marker names the
/// head), and the exit is the verdict the marker keeps, so a red job stays red.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_github_a_rerun_on_a_reviewed_head_fails_what_failed() {
    let fake = fake().await;
    let text = pipeline(RULES, "");
    let first = run(&fake, &text, &["--fail-on", "error"]).await;
    assert_eq!(first.code, 3, "{}", first.transcript());
    let comments = fake.comments(PR);
    assert_eq!(comments.len(), 1, "{comments:?}");
    let body = comments[0]["body"].as_str().unwrap_or_default();
    assert!(
        body.lines()
            .next()
            // The counts, then the run that posted (`GITHUB_RUN_ID` 300, attempt 1).
            .is_some_and(|l| l.ends_with(" findings=3.0.0 new=3.0.0 order=300.1 -->")),
        "{body}"
    );

    let again = run(&fake, &text, &["--fail-on", "error"]).await;
    let log = again.transcript();
    assert!(log.contains("was already reviewed"), "{log}");
    assert_eq!(again.code, 3, "{log}");
    assert!(
        log.contains(") published 3 errors, 0 warnings, 0 info"),
        "{log}"
    );
    assert_eq!(
        again.stderr.lines().last(),
        Some("--fail-on error: 3 published findings at or above error (exit 3)"),
        "{log}"
    );
    assert_eq!(fake.check_runs().len(), 1, "nothing is posted again");
}

/// The same, for a job that passed: its re-run passes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_github_a_rerun_on_a_reviewed_head_passes_what_passed() {
    let fake = fake().await;
    fake.set_compare_diff(
        BASE,
        HEAD,
        "diff --git a/src/ok.rs b/src/ok.rs\nnew file mode 100644\nindex 0000000000000000000000000000000000000000..e69de29bb2d1d6434b8b29ae775ad8c2e48c5391\n--- /dev/null\n+++ b/src/ok.rs\n@@ -0,0 +1,1 @@\n+pub fn ok() {}\n",
    );
    let text = pipeline(RULES, "");
    let first = run(&fake, &text, &["--fail-on", "error"]).await;
    assert_eq!(first.code, 0, "{}", first.transcript());
    let again = run(&fake, &text, &["--fail-on", "error"]).await;
    let log = again.transcript();
    assert!(log.contains("was already reviewed"), "{log}");
    assert_eq!(again.code, 0, "{log}");
    assert!(!log.contains("not reviewed"), "{log}");
    assert_eq!(
        again.stderr.lines().last(),
        Some("--fail-on error: no published finding at or above error (exit 0)"),
        "{log}"
    );
}

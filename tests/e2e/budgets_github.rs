//! A pull request's budget on GitHub (docs/reviewers.md, "Costs and budgets"):
//! `examples/review.kdl` with the fake `claude` against the fake GitHub, three pushes. Each
//! review reports 1,000 tokens in and 200 out, $0.05; the pull request's budget is 2,400 tokens,
//! so the third push finds it spent: not reviewed, said so, and never a pass. A review that
//! fails after spending counts toward the budget too.

// The fake GitHub of github_pipeline.rs, loaded here too: that module keeps its copy private.
#[path = "../../stdlib/tests/support/fake_github.rs"]
#[allow(clippy::duplicate_mod)]
mod fake_github;

use fake_github::{FakeGithub, RunSeed};

use crate::support::{ExampleJob, JOB_TOKEN, JobRun, root};

const BASE: &str = "1111111111111111111111111111111111111111";
const HEADS: [&str; 3] = [
    "2222222222222222222222222222222222222222",
    "3333333333333333333333333333333333333333",
    "4444444444444444444444444444444444444444",
];
const PR: u64 = 9;
const APP: &str = "projects/web/app.py";

/// `examples/review.kdl`, its budget `budget` and the fake claude's spend fixed, in `mode`.
fn pipeline(budget_tokens: u64, mode: &str) -> String {
    let text = std::fs::read_to_string(root().join("examples/review.kdl")).expect("pipeline");
    let budget = text
        .lines()
        .find(|l| l.trim_start().starts_with("budget "))
        .expect("the example's review stage has a budget")
        .to_owned();
    assert!(
        text.contains("    spent \"gather.spent\"") && text.contains("    cost \"review.cost\""),
        "the example reads the change's spend and posts its cost"
    );
    text.replace(
        &budget,
        &format!(
            "    budget change-tokens={budget_tokens}\n    env \"FAKE_USAGE\" \"1000 200 0.05\"\n    env \"FAKE_CLAUDE_FINDINGS\" \"[]\"\n    env \"FAKE_MODE\" \"{mode}\""
        ),
    )
}

/// Push `n` (0-based) of a pipeline: the head moves, and the workflow runs under `--fail-on
/// error`.
async fn push(fake: &FakeGithub, n: usize, pipeline: String) -> JobRun {
    let head = HEADS[n];
    fake.set_head(PR, head);
    let diff = format!(
        "diff --git a/{APP} b/{APP}\nnew file mode 100644\nindex 0000000000000000000000000000000000000000..e69de29bb2d1d6434b8b29ae775ad8c2e48c5391\n--- /dev/null\n+++ b/{APP}\n@@ -0,0 +1,1 @@\n+print({n})\n"
    );
    fake.set_compare(BASE, head, "ahead");
    fake.set_compare_diff(BASE, head, &diff);
    if n > 0 {
        fake.set_compare(HEADS[n - 1], head, "ahead");
        fake.set_compare_diff(HEADS[n - 1], head, &diff);
    }
    let run_id = 200 + n as u64;
    fake.add_workflow_run(RunSeed::trusted(run_id, BASE));
    ExampleJob {
        api_url: &fake.api_url(),
        repository: &FakeGithub::repository(),
        pr: PR,
        run_id,
        pipeline,
        args: &["--fail-on", "error"],
        env: vec![(
            "ANTHROPIC_API_KEY",
            "sk-ant-api03-fake-budget-0123456789".into(),
        )],
    }
    .run()
    .await
}

fn comment_body(fake: &FakeGithub) -> String {
    fake.comments(PR)
        .iter()
        .find(|c| c["user"]["login"] == "github-actions[bot]")
        .and_then(|c| c["body"].as_str())
        .unwrap_or_default()
        .to_owned()
}

fn last_check_run(fake: &FakeGithub) -> serde_json::Value {
    fake.check_runs().last().cloned().unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_pushes_whose_budget_runs_out_on_the_third() {
    let fake = FakeGithub::start().await;
    fake.require_token(JOB_TOKEN);
    fake.add_pull_request(PR, HEADS[0], BASE);

    // Push 1: reviewed; the footer says what this review and the pull request spent.
    let JobRun { code, log, summary } = push(&fake, 0, pipeline(2400, "ok")).await;
    assert_eq!(code, 0, "{log}");
    let body = comment_body(&fake);
    assert!(
        body.contains(
            "Cost: this review 1,200 tokens (1,000 in, 200 out, 0 cached), $0.0500 · this pull request so far 1,200 tokens (1,000 in, 200 out, 0 cached), $0.0500"
        ),
        "{body}"
    );
    assert!(summary.contains("1,200 tokens"), "{summary}");
    assert_eq!(last_check_run(&fake)["conclusion"], "success");

    // Push 2: the running total grows across pushes.
    let JobRun { code, log, .. } = push(&fake, 1, pipeline(2400, "ok")).await;
    assert_eq!(code, 0, "{log}");
    let body = comment_body(&fake);
    assert!(
        body.contains(
            "this pull request so far 2,400 tokens (2,000 in, 400 out, 0 cached), $0.1000"
        ),
        "{body}"
    );

    // Push 3: the budget is spent before a try starts: not reviewed, and never a pass. The
    // example's review falls back and its post fails a review that did not run: the check run
    // fails, titled with the reason, the job fails, and the comment stays the last review's (the
    // run spent nothing, so its total is unchanged).
    let JobRun { code, log, summary } = push(&fake, 2, pipeline(2400, "ok")).await;
    assert_eq!(code, 1, "the run fails: {log}");
    let reason = "budget spent: this change spent 2,400 tokens of its budget of 2,400";
    assert!(log.contains(reason), "{log}");
    assert!(
        log.contains("::error title=post::published as not reviewed (`not-reviewed \"fail\"`): the review did not run: `review` fell back: "),
        "{log}"
    );
    assert!(!log.contains("try 1 spent"), "no try started: {log}");
    let check = last_check_run(&fake);
    assert_eq!(check["conclusion"], "failure", "{check}");
    assert_eq!(check["head_sha"], HEADS[2], "{check}");
    let title = check["output"]["title"].as_str().unwrap_or_default();
    assert!(
        title.starts_with("Not reviewed: the review did not run: `review` fell back: ")
            && title.contains(reason),
        "{title}"
    );
    assert_eq!(comment_body(&fake), body, "the last review stays");
    assert!(
        log.contains("the review comment already keeps the pull request's total spent"),
        "nothing spent, nothing written: {log}"
    );
    assert!(summary.contains(reason), "{summary}");
}

/// The marker's running total, `spent=IN.OUT.CACHED.MICROUSD`.
fn marker_spent(body: &str) -> String {
    body.lines()
        .next()
        .and_then(|l| l.split(' ').find_map(|f| f.strip_prefix("spent=")))
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_review_that_fails_after_spending_counts_toward_the_budget() {
    let fake = FakeGithub::start().await;
    fake.require_token(JOB_TOKEN);
    fake.add_pull_request(PR, HEADS[0], BASE);

    // Push 1: reviewed, 1,200 tokens.
    let JobRun { code, log, .. } = push(&fake, 0, pipeline(3000, "ok")).await;
    assert_eq!(code, 0, "{log}");
    let reviewed = comment_body(&fake);
    assert_eq!(marker_spent(&reviewed), "1000.200.0.50000", "{reviewed}");

    // Push 2: both tries spend 1,200 tokens and answer with an error: not reviewed, the run
    // fails, and what it spent is added to the pull request's total, kept in the marker of the
    // last review's comment, whose text stays.
    let JobRun { code, log, .. } = push(&fake, 1, pipeline(3000, "error-result")).await;
    assert_eq!(code, 1, "{log}");
    assert!(log.contains("published as not reviewed"), "{log}");
    assert!(
        log.contains("the review did not run: the review comment keeps the pull request's total spent, 3,600 tokens (3,000 in, 600 out, 0 cached), $0.1500"),
        "{log}"
    );
    assert_eq!(last_check_run(&fake)["conclusion"], "failure");
    let after = comment_body(&fake);
    assert_eq!(marker_spent(&after), "3000.600.0.150000", "{after}");
    assert_eq!(
        after.lines().skip(1).collect::<Vec<_>>(),
        reviewed.lines().skip(1).collect::<Vec<_>>(),
        "only the marker's total changes"
    );
    assert!(after.contains(&format!("head={}", HEADS[0])), "{after}");

    // Push 3: the failed run counted, the budget of 3,000 is spent before a try starts.
    let JobRun { code, log, .. } = push(&fake, 2, pipeline(3000, "ok")).await;
    assert_eq!(code, 1, "{log}");
    assert!(
        log.contains("budget spent: this change spent 3,600 tokens of its budget of 3,000"),
        "{log}"
    );
    assert!(!log.contains("try 1 spent"), "no try started: {log}");
}

//! A pull request's budget on GitHub (docs/reviewers.md, "Costs and budgets"):
//! `examples/review.kdl` with the fake `claude` against the fake GitHub, three pushes. Each
//! review reports 1,000 tokens in and 200 out, $0.05; the pull request's budget is 2,400 tokens,
//! so the third push finds it spent: not reviewed, said so, and never a pass.

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

/// `examples/review.kdl`, its budget the test's and the fake claude's spend fixed.
fn pipeline() -> String {
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
        "    budget change-tokens=2400\n    env \"FAKE_USAGE\" \"1000 200 0.05\"\n    env \"FAKE_CLAUDE_FINDINGS\" \"[]\"",
    )
}

/// Push `n` (0-based): the head moves, and the workflow runs under `--fail-on error`.
async fn push(fake: &FakeGithub, n: usize) -> JobRun {
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
        pipeline: pipeline(),
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
    let JobRun { code, log, summary } = push(&fake, 0).await;
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
    let JobRun { code, log, .. } = push(&fake, 1).await;
    assert_eq!(code, 0, "{log}");
    let body = comment_body(&fake);
    assert!(
        body.contains(
            "this pull request so far 2,400 tokens (2,000 in, 400 out, 0 cached), $0.1000"
        ),
        "{body}"
    );

    // Push 3: the budget is spent before a try starts: not reviewed, said so on the job, and
    // never a pass. The example lets a failed review fail the run (`fail-closed`), so nothing is
    // posted: the last review, its check run and its running total stay as they were.
    let runs_before = fake.check_runs().len();
    let JobRun { code, log, summary } = push(&fake, 2).await;
    assert_eq!(code, 1, "the run fails: {log}");
    assert!(
        log.contains(
            "::error title=review::not reviewed: budget spent: this change spent 2,400 tokens of its budget of 2,400"
        ),
        "{log}"
    );
    assert!(!log.contains("try 1 spent"), "no try started: {log}");
    assert_eq!(fake.check_runs().len(), runs_before, "nothing posted");
    assert_eq!(comment_body(&fake), body, "the last review stays");
    assert!(
        summary.contains("budget spent") && summary.contains("2,400 tokens"),
        "{summary}"
    );
}

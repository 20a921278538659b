//! The author answers on GitHub (docs/findings.md, "Answering a finding"): `examples/review.kdl`
//! with the fake `claude` against the fake GitHub, four pushes of a pull request. The author
//! refutes one finding (accepted in the next round), fixes another, and refutes a third that the
//! reviewer upholds; each round's check run and `--fail-on` verdict.

// The fake GitHub of github_pipeline.rs, loaded here too: that module keeps its copy private.
#[path = "../../stdlib/tests/support/fake_github.rs"]
#[allow(clippy::duplicate_mod)]
mod fake_github;

use fake_github::{FakeGithub, RunSeed};
use serde_json::{Value, json};

use crate::support::{ExampleJob, JOB_TOKEN, root};
const BASE: &str = "1111111111111111111111111111111111111111";
const HEADS: [&str; 4] = [
    "2222222222222222222222222222222222222222",
    "3333333333333333333333333333333333333333",
    "4444444444444444444444444444444444444444",
    "5555555555555555555555555555555555555555",
];
const PR: u64 = 7;
const APP: &str = "projects/web/app.py";

/// `examples/review.kdl`, the fake claude told its findings and decisions by two inputs the
/// test sets.
fn pipeline() -> String {
    let text = std::fs::read_to_string(root().join("examples/review.kdl")).expect("pipeline");
    let stage = "stage \"gather\" uses=\"std/gather\" {\n";
    let anchor = "    responses \"gather.responses\"    // fenced too";
    assert!(
        text.contains(stage) && text.contains(anchor),
        "the example changed"
    );
    text.replace(
        stage,
        &format!(
            "input \"findings\" env=\"FINDINGS\"\ntrusted \"input\" name=\"findings\" reason=\"the test sets it\"\n\
             input \"decisions\" env=\"DECISIONS\"\ntrusted \"input\" name=\"decisions\" reason=\"the test sets it\"\n\n{stage}"
        ),
    )
    .replace(
        anchor,
        &format!(
            "    env \"FAKE_CLAUDE_FINDINGS\" \"{{findings}}\"\n    env \"FAKE_CLAUDE_DECISIONS\" \"{{decisions}}\"\n{anchor}"
        ),
    )
}

fn file_diff(lines: &[&str]) -> String {
    let mut d = format!(
        "diff --git a/{APP} b/{APP}\nnew file mode 100644\nindex 0000000000000000000000000000000000000000..e69de29bb2d1d6434b8b29ae775ad8c2e48c5391\n--- /dev/null\n+++ b/{APP}\n@@ -0,0 +1,{} @@\n",
        lines.len()
    );
    for l in lines {
        d.push_str(&format!("+{l}\n"));
    }
    d
}

fn finding(rule: &str) -> Value {
    json!({"path": APP, "line": 2, "severity": "error", "rule": rule, "message": format!("{rule} is wrong")})
}

fn decision(id: &str, verdict: &str) -> Value {
    json!({"finding": id, "decision": verdict, "reason": format!("{verdict}: the answer was read")})
}

/// Push `n` (0-based): the pull request's head moves, and the workflow runs with the fake
/// claude reporting `findings` and `decisions`. Returns the exit status under
/// `--fail-on error` and the log.
async fn push(fake: &FakeGithub, n: usize, findings: Value, decisions: Value) -> (i32, String) {
    let head = HEADS[n];
    fake.set_head(PR, head);
    let diff = file_diff(&["def main():", &format!("    return {n}")]);
    fake.set_compare(BASE, head, "ahead");
    fake.set_compare_diff(BASE, head, &diff);
    if n > 0 {
        fake.set_compare(HEADS[n - 1], head, "ahead");
        fake.set_compare_diff(HEADS[n - 1], head, &diff);
    }
    let run_id = 100 + n as u64;
    fake.add_workflow_run(RunSeed::trusted(run_id, BASE));
    let job = ExampleJob {
        api_url: &fake.api_url(),
        repository: &FakeGithub::repository(),
        pr: PR,
        run_id,
        pipeline: pipeline(),
        args: &["--fail-on", "error"],
        env: vec![
            (
                "ANTHROPIC_API_KEY",
                "sk-ant-api03-fake-dialogue-0123456789".into(),
            ),
            ("FINDINGS", findings.to_string()),
            ("DECISIONS", decisions.to_string()),
        ],
    }
    .run()
    .await;
    (job.code, job.log)
}

fn comment_body(fake: &FakeGithub) -> String {
    let comments = fake.comments(PR);
    comments
        .iter()
        .find(|c| c["user"]["login"] == "github-actions[bot]")
        .and_then(|c| c["body"].as_str())
        .unwrap_or_default()
        .to_owned()
}

/// The id of the finding of `rule`, from the hidden baseline line of the review comment.
fn id_of(body: &str, rule: &str) -> String {
    let line = body.lines().nth(1).unwrap_or_default();
    let json = line
        .strip_prefix("<!-- reviewflow:baseline ")
        .and_then(|l| l.strip_suffix(" -->"))
        .unwrap_or_else(|| panic!("no baseline line: {body}"));
    let baseline: Value = serde_json::from_str(json).expect("the baseline parses");
    baseline["findings"]
        .as_array()
        .and_then(|all| all.iter().find(|f| f["rule"] == rule))
        .and_then(|f| f["fingerprint"].as_str())
        .map(|p| format!("rf-{}", &p[..8]))
        .unwrap_or_else(|| panic!("no finding of {rule}: {body}"))
}

fn last_conclusion(fake: &FakeGithub) -> String {
    fake.check_runs()
        .last()
        .and_then(|r| r["conclusion"].as_str())
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn four_pushes_on_github_refuted_accepted_fixed_and_upheld() {
    let fake = FakeGithub::start().await;
    fake.require_token(JOB_TOKEN);
    fake.add_pull_request(PR, HEADS[0], BASE);

    // Round 1: three open findings: the check run fails, and so does the run.
    let all = json!([finding("alpha"), finding("beta"), finding("gamma")]);
    let (code, log) = push(&fake, 0, all, json!([])).await;
    assert_eq!(code, 3, "{log}");
    assert_eq!(last_conclusion(&fake), "failure");
    let body = comment_body(&fake);
    let (a, c) = (id_of(&body, "alpha"), id_of(&body, "gamma"));
    assert!(
        body.contains(&format!("`{a}`")),
        "each finding shows its id: {body}"
    );

    // The author refutes alpha; a stranger's refutation of gamma is no answer.
    fake.add_issue_comment(
        PR,
        &format!("refuted {a}: alpha is handled by the caller"),
        "octocat",
        "User",
    );
    fake.add_issue_comment(PR, &format!("refuted {c}: trust me"), "mallory", "User");
    // Round 2: beta fixed; the reviewer read one refutation and accepts it; gamma stays open.
    let (code, log) = push(
        &fake,
        1,
        json!([finding("gamma")]),
        json!([decision(&a, "accepted")]),
    )
    .await;
    assert_eq!(code, 3, "{log}");
    assert!(
        log.contains("responses: 1 of 1 read are new answers to the last review's findings"),
        "{log}"
    );
    let body = comment_body(&fake);
    assert!(body.contains("It read 1 refutation."), "{body}");
    assert!(
        body.contains("0 new, 1 persisting, 1 resolved, 1 accepted"),
        "{body}"
    );
    assert!(
        body.contains(
            "refuted by `octocat`: `alpha is handled by the caller` — the reviewer accepted"
        ),
        "{body}"
    );
    assert_eq!(last_conclusion(&fake), "failure");

    // The author refutes gamma. Round 3: the reviewer upholds it: still failing.
    fake.add_issue_comment(
        PR,
        &format!("refuted {c}: gamma cannot happen here"),
        "octocat",
        "User",
    );
    let (code, log) = push(
        &fake,
        2,
        json!([finding("gamma")]),
        json!([decision(&c, "upheld")]),
    )
    .await;
    assert_eq!(code, 3, "{log}");
    let body = comment_body(&fake);
    assert!(
        body.contains("It read 1 refutation.") && body.contains("_upheld_"),
        "alpha's answered refutation is not given again: {body}"
    );
    assert_eq!(last_conclusion(&fake), "failure");

    // Round 4: gamma fixed; nothing is open: the check run and the run pass.
    let (code, log) = push(&fake, 3, json!([]), json!([])).await;
    assert_eq!(code, 0, "{log}");
    assert_eq!(last_conclusion(&fake), "success");
    let body = comment_body(&fake);
    assert!(
        !body.contains("refutation."),
        "nothing left to answer: {body}"
    );
}

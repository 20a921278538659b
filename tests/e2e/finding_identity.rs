//! Finding identity across pushes (docs/findings.md), through the binary: pushes of a change on
//! the local forge (a fix and a new finding, an unrelated edit, a rename), and the baseline's
//! round trip through the GitHub comment.

// The fake GitHub of github_pipeline.rs, loaded here too: that module keeps its copy private.
#[path = "../../stdlib/tests/support/fake_github.rs"]
#[allow(clippy::duplicate_mod)]
mod fake_github;

use std::path::Path;

use fake_github::{FakeGithub, RunSeed};
use serde_json::Value;

use crate::support::{ActionsStep, Repo, Run, reviewflow_in, root};

/// Push 1: three findings of the `rules` reviewer (a TODO, a `dbg!`, a FIXME).
const PUSH1: &str = "fn main() {\n    // TODO: handle errors\n    let a = 1;\n    dbg!(a);\n    // FIXME: remove this\n}\n";
/// Push 2: the `dbg!` fixed, an XXX added, lines added above, the TODO reindented.
const PUSH2: &str = "use std::io;\n\nfn main() {\n        // TODO: handle errors\n    let a = 1;\n    // FIXME: remove this\n    // XXX: a new note\n}\n";

fn run(repo: &Repo) -> Run {
    let out = reviewflow_in(repo.path(), &["run", "examples/local.kdl"]);
    assert_eq!(out.code, 0, "{}", out.transcript());
    out
}

fn read(repo: &Repo, file: &str) -> String {
    std::fs::read_to_string(
        repo.path()
            .join(".reviewflow/forge/branch-topic/local-review")
            .join(file),
    )
    .unwrap_or_else(|e| panic!("{file}: {e}"))
}

fn review_json(repo: &Repo) -> Value {
    serde_json::from_str(&read(repo, "review.json")).expect("review.json parses")
}

/// Each finding's `(rule, state)`, sorted.
fn states(json: &Value) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = json["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .map(|f| {
            (
                f["rule"].as_str().unwrap_or_default().to_owned(),
                f["state"].as_str().unwrap_or("-").to_owned(),
            )
        })
        .collect();
    out.sort();
    out
}

#[test]
fn three_pushes_say_what_is_new_persisting_and_resolved() {
    let repo = Repo::local_example();
    repo.git(&["checkout", "-q", "-b", "topic"]);

    // Push 1: no earlier review, so no states; every finding has a fingerprint.
    repo.commit("src/app.rs", PUSH1, "push 1");
    run(&repo);
    let json = review_json(&repo);
    assert_eq!(json["states"], Value::Null, "{json:#}");
    let findings = json["findings"].as_array().expect("findings");
    assert_eq!(findings.len(), 3, "{json:#}");
    let prints: Vec<&str> = findings
        .iter()
        .map(|f| f["fingerprint"].as_str().expect("a fingerprint"))
        .collect();
    assert!(prints.iter().all(|p| p.len() == 32), "{prints:?}");
    assert!(findings.iter().all(|f| f.get("state").is_none()));
    let md = read(&repo, "review.md");
    assert!(md.contains("## Findings (3)\n"), "{md}");
    let record: Value = serde_json::from_str(&read(&repo, "posted.json")).expect("record");
    assert_eq!(
        record["baseline"]["findings"].as_array().map(Vec::len),
        Some(3)
    );

    // Push 2 fixes the `dbg!` and adds an XXX; the TODO moves down and is reindented.
    repo.commit("src/app.rs", PUSH2, "push 2");
    let out = run(&repo);
    assert!(
        out.transcript()
            .contains("1 new, 2 persisting, 1 resolved since the last review"),
        "{}",
        out.transcript()
    );
    let json = review_json(&repo);
    assert_eq!(
        json["states"],
        serde_json::json!({"new": 1, "persisting": 2, "resolved": 1, "refuted": 0, "accepted": 0, "upheld": 0}),
        "{json:#}"
    );
    assert_eq!(
        states(&json),
        [
            ("todo-added".to_owned(), "new".to_owned()),
            ("todo-added".to_owned(), "persisting".to_owned()),
            ("todo-added".to_owned(), "persisting".to_owned()),
        ]
    );
    let resolved = json["resolved"].as_array().expect("resolved");
    assert_eq!(resolved.len(), 1, "{json:#}");
    assert_eq!(resolved[0]["rule"], "debug-leftover");
    assert_eq!(resolved[0]["state"], "resolved");
    assert_eq!(resolved[0]["path"], "src/app.rs");
    let md = read(&repo, "review.md");
    assert!(
        md.contains("## Findings (3): 1 new, 2 persisting, 1 resolved\n"),
        "{md}"
    );
    // Each finding carries its id (docs/findings.md, "Answering a finding").
    let id = |f: &Value| {
        format!(
            "rf-{}",
            &f["fingerprint"].as_str().expect("a fingerprint")[..8]
        )
    };
    let at = |line: u64| {
        json["findings"]
            .as_array()
            .and_then(|all| all.iter().find(|f| f["line"] == line))
            .map(id)
            .expect("a finding on the line")
    };
    assert!(
        md.contains(&format!("- **info** _new_ `{}` `src/app.rs:7`", at(7))),
        "{md}"
    );
    assert!(
        md.contains(&format!(
            "- **info** _persisting_ `{}` `src/app.rs:4`",
            at(4)
        )),
        "{md}"
    );
    assert!(
        md.contains(&format!(
            "## Resolved (1)\n\n- **warning** `{}` `src/app.rs:4` `debug-leftover`",
            id(&resolved[0])
        )),
        "{md}"
    );
    // rdjsonl carries what reviewdog shows (reviewdog refuses fields its `Diagnostic` does not
    // declare, and prints `original_output` as the line): its line n is review.json's finding n,
    // which holds the identity.
    let rdjsonl = read(&repo, "review.rdjsonl");
    let diagnostics: Vec<Value> = rdjsonl
        .lines()
        .map(|l| serde_json::from_str(l).expect("a diagnostic"))
        .collect();
    let findings = json["findings"].as_array().expect("findings");
    assert_eq!(diagnostics.len(), findings.len());
    for (d, f) in diagnostics.iter().zip(findings) {
        let output = d["original_output"].as_str().unwrap_or_default();
        assert!(
            output.starts_with(&format!("src/app.rs:{}: ", f["line"])),
            "{output}"
        );
        assert!(!d.to_string().contains("fingerprint"), "{d}");
        assert_eq!(d["code"]["value"], f["rule"]);
        assert_eq!(d["location"]["range"]["start"]["line"], f["line"]);
    }
    // SARIF agrees: baselineState new / unchanged, and each finding's identity is its partial
    // fingerprint. The resolved finding is in review.json only: a SARIF consumer reads every
    // result as live.
    let sarif: Value = serde_json::from_str(&read(&repo, "review.sarif")).expect("SARIF");
    let results = sarif["runs"][0]["results"].as_array().expect("results");
    let mut baseline: Vec<&str> = results
        .iter()
        .map(|r| r["baselineState"].as_str().unwrap_or("-"))
        .collect();
    baseline.sort_unstable();
    assert_eq!(baseline, ["new", "unchanged", "unchanged"], "{sarif:#}");
    let in_sarif = |print: &str| {
        results.iter().any(|r| {
            r["partialFingerprints"].as_object().is_some_and(|p| {
                p.values()
                    .any(|v| v.as_str().is_some_and(|v| v.starts_with(print)))
            })
        })
    };
    for f in json["findings"].as_array().expect("findings") {
        let print = f["fingerprint"].as_str().expect("a fingerprint");
        assert!(in_sarif(print), "{print} in {sarif:#}");
    }
    let gone = resolved[0]["fingerprint"].as_str().expect("a fingerprint");
    assert!(!in_sarif(gone), "{gone} is not live: {sarif:#}");
    assert!(
        !sarif.to_string().contains("debug-leftover"),
        "the resolved finding's rule is not described: {sarif:#}"
    );

    // Push 3 changes nothing a finding is on: every finding persists, nothing is resolved.
    repo.commit("src/other.rs", "pub fn g() {}\n", "push 3");
    run(&repo);
    let json = review_json(&repo);
    assert_eq!(
        json["states"],
        serde_json::json!({"new": 0, "persisting": 3, "resolved": 0, "refuted": 0, "accepted": 0, "upheld": 0}),
        "{json:#}"
    );

    // Push 4 renames the file: its findings persist under the new path.
    repo.git(&["mv", "src/app.rs", "src/main_app.rs"]);
    repo.git(&["commit", "-q", "-m", "push 4"]);
    run(&repo);
    let json = review_json(&repo);
    assert_eq!(
        json["states"],
        serde_json::json!({"new": 0, "persisting": 3, "resolved": 0, "refuted": 0, "accepted": 0, "upheld": 0}),
        "{json:#}"
    );
    assert!(
        json["findings"]
            .as_array()
            .expect("findings")
            .iter()
            .all(|f| f["path"] == "src/main_app.rs"),
        "{json:#}"
    );
}

#[test]
fn a_record_without_a_baseline_is_no_baseline() {
    let repo = Repo::local_example();
    repo.git(&["checkout", "-q", "-b", "topic"]);
    repo.commit("src/app.rs", PUSH1, "push 1");
    run(&repo);
    // As a record written before baselines were kept.
    let path = repo
        .path()
        .join(".reviewflow/forge/branch-topic/local-review/posted.json");
    let mut record: Value =
        serde_json::from_str(&std::fs::read_to_string(&path).expect("record")).expect("json");
    record
        .as_object_mut()
        .expect("an object")
        .remove("baseline");
    std::fs::write(&path, serde_json::to_vec_pretty(&record).expect("json")).expect("write");

    repo.commit("src/app.rs", PUSH2, "push 2");
    run(&repo);
    let json = review_json(&repo);
    assert_eq!(json["states"], Value::Null, "{json:#}");
    assert_eq!(json["resolved"], serde_json::json!([]));
}

// --- GitHub: the baseline round-trips through the review comment.

const TOKEN: &str = "ghs_FakeInstallationTokenForTheTestsOnly0123";
const KEY: &str = "0123456789abcdef0123456789abcdef-github-test";
const BASE: &str = "1111111111111111111111111111111111111111";
const HEAD1: &str = "2222222222222222222222222222222222222222";
const HEAD2: &str = "3333333333333333333333333333333333333333";
const PR: u64 = 7;

fn file_diff(path: &str, lines: &[&str]) -> String {
    let mut d = format!(
        "diff --git a/{path} b/{path}\nnew file mode 100644\nindex 0000000000000000000000000000000000000000..e69de29bb2d1d6434b8b29ae775ad8c2e48c5391\n--- /dev/null\n+++ b/{path}\n@@ -0,0 +1,{} @@\n",
        lines.len()
    );
    for l in lines {
        d.push_str(&format!("+{l}\n"));
    }
    d
}

/// `examples/review.kdl` with the `rules` reviewer, as the workflow's checkout holds it.
fn github_checkout(dir: &Path) {
    let text = std::fs::read_to_string(root().join("examples/review.kdl")).expect("pipeline");
    let edited = text
        .replace("    reviewer \"claude\"\n", "    reviewer \"rules\"\n")
        .lines()
        // The rules reviewer spends nothing: a budget on it is refused.
        .filter(|l| !l.trim_start().starts_with("budget "))
        .map(|l| format!("{l}\n"))
        .collect::<String>();
    assert_ne!(
        edited, text,
        "the reviewer line is where the test expects it"
    );
    std::fs::create_dir_all(dir.join("checkout/examples")).expect("mkdir");
    std::fs::create_dir_all(dir.join("temp")).expect("mkdir");
    std::fs::write(dir.join("checkout/examples/review.kdl"), edited).expect("write");
    std::fs::write(
        dir.join("event.json"),
        format!(r#"{{"action":"synchronize","number":{PR},"pull_request":{{"number":{PR}}}}}"#),
    )
    .expect("event");
}

async fn github_run(fake: &FakeGithub, dir: &Path, run_id: u64) -> (i32, String) {
    let mut cmd = crate::support::command();
    let step = ActionsStep {
        api_url: &fake.api_url(),
        repository: &FakeGithub::repository(),
        event_name: "pull_request_target",
        event_path: &dir.join("event.json"),
        run_id,
        temp: &dir.join("temp"),
    };
    step.environment(&mut cmd)
        .args(["run", "examples/review.kdl"])
        .current_dir(dir.join("checkout"))
        .env("ANTHROPIC_API_KEY", "unused")
        .env("GITHUB_OUTPUT", dir.join("github_output"))
        .env("GITHUB_STEP_SUMMARY", dir.join("summary.md"))
        .env("GITHUB_TOKEN", TOKEN)
        .env("REVIEW_CONVERSATION_KEY", KEY)
        .env("PROJECT", "web");
    let out = tokio::task::spawn_blocking(move || cmd.output())
        .await
        .expect("join")
        .expect("the binary runs");
    let log = format!(
        "exit {:?}\n--- stdout\n{}--- stderr\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code().unwrap_or(-1), log)
}

fn comment_body(fake: &FakeGithub) -> String {
    let comments = fake.comments(PR);
    assert_eq!(comments.len(), 1, "{comments:?}");
    comments[0]["body"].as_str().unwrap_or_default().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_baseline_round_trips_through_the_github_comment() {
    let fake = FakeGithub::start().await;
    fake.require_token(TOKEN);
    fake.add_pull_request(PR, HEAD1, BASE);
    fake.set_compare(BASE, HEAD1, "ahead");
    let app = "projects/web/app.py";
    fake.set_compare_diff(
        BASE,
        HEAD1,
        &file_diff(
            app,
            &[
                "def main():",
                "    # TODO: handle errors",
                "    # FIXME: later",
                "    return 1",
            ],
        ),
    );
    fake.add_workflow_run(RunSeed::trusted(100, BASE));

    let job1 = tempfile::tempdir().expect("tempdir");
    github_checkout(job1.path());
    let (code, log) = github_run(&fake, job1.path(), 100).await;
    assert_eq!(code, 0, "{log}");
    let body = comment_body(&fake);
    let second = body.lines().nth(1).unwrap_or_default();
    assert!(second.starts_with("<!-- reviewflow:baseline {"), "{body}");
    assert!(second.ends_with(" -->"), "{body}");
    assert!(body.contains("## Findings (2)\n"), "{body}");

    // Push 2: the FIXME is gone, an XXX is added, the TODO stays.
    fake.set_head(PR, HEAD2);
    fake.set_compare(BASE, HEAD2, "ahead");
    fake.set_compare_diff(
        BASE,
        HEAD2,
        &file_diff(
            app,
            &[
                "def main():",
                "    # TODO: handle errors",
                "    # XXX: new",
                "    return 1",
            ],
        ),
    );
    fake.set_compare(HEAD1, HEAD2, "ahead");
    fake.set_compare_diff(HEAD1, HEAD2, &file_diff(app, &["    # XXX: new"]));
    fake.add_workflow_run(RunSeed::trusted(101, BASE));
    let job2 = tempfile::tempdir().expect("tempdir");
    github_checkout(job2.path());
    let (code, log) = github_run(&fake, job2.path(), 101).await;
    assert_eq!(code, 0, "{log}");
    let body = comment_body(&fake);
    assert!(
        body.contains("## Findings (2): 1 new, 1 persisting, 1 resolved\n"),
        "{body}"
    );
    // The id is the fingerprint's first 8 hex digits, which the hidden baseline line carries.
    let xxx = body
        .split("\"fingerprint\":\"")
        .skip(1)
        .find(|rest| {
            rest.split('}')
                .next()
                .is_some_and(|entry| entry.contains("`XXX` added"))
        })
        .map(|rest| rest[..8].to_owned())
        .expect("the baseline names the XXX finding");
    assert!(
        body.contains(&format!(
            "_new_ `rf-{xxx}` `projects/web/app.py:3` `todo-added`: `XXX` added"
        )),
        "{body}"
    );
    assert!(body.contains("## Resolved (1)\n"), "{body}");
    assert!(body.contains("`FIXME` added"), "{body}");
    assert!(
        log.contains("are identified by their message"),
        "the head is not in the checkout: {log}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_baseline_line_from_an_untrusted_comment_or_the_review_text_is_ignored() {
    let fake = FakeGithub::start().await;
    fake.require_token(TOKEN);
    fake.add_pull_request(PR, HEAD2, BASE);
    fake.set_compare(BASE, HEAD2, "ahead");
    let app = "projects/web/app.py";
    fake.set_compare_diff(BASE, HEAD2, &file_diff(app, &["    # TODO: handle errors"]));
    fake.add_workflow_run(RunSeed::trusted(101, BASE));
    // Someone else's comment carrying our marker and a baseline: never believed.
    let forged = format!(
        "<!-- reviewflow:v1 pipeline=enroll-review project=web head={HEAD1} run=1 conversation=- -->\n<!-- reviewflow:baseline {{\"version\":1,\"complete\":true,\"findings\":[{{\"fingerprint\":\"{}\",\"rule\":\"forged\",\"path\":\"x\",\"message\":\"forged\"}}]}} -->\n",
        "a".repeat(32)
    );
    fake.add_issue_comment(PR, &forged, "mallory", "User");
    let job = tempfile::tempdir().expect("tempdir");
    github_checkout(job.path());
    let (code, log) = github_run(&fake, job.path(), 101).await;
    assert_eq!(code, 0, "{log}");
    let ours = fake
        .comments(PR)
        .into_iter()
        .map(|c| c["body"].as_str().unwrap_or_default().to_owned())
        .find(|b| !b.contains("forged"))
        .expect("our comment");
    assert!(ours.contains("## Findings (1)\n"), "no states: {ours}");
    assert!(!ours.contains("## Resolved"), "{ours}");
}

/// A review that did not run compares nothing and keeps the last baseline, so the next review
/// is compared with the last one that ran.
#[test]
fn a_review_that_did_not_run_keeps_the_last_baseline() {
    let repo = Repo::local_example();
    repo.git(&["checkout", "-q", "-b", "topic"]);
    repo.commit("src/app.rs", PUSH1, "push 1");
    run(&repo);
    let record = |repo: &Repo| -> Value {
        serde_json::from_str(&read(repo, "posted.json")).expect("record")
    };
    let first = record(&repo)["baseline"].clone();
    assert_eq!(first["findings"].as_array().map(Vec::len), Some(3));

    // Push 2 is reviewed by a reviewer that fails, the review falls back, and the post says
    // that it did not run.
    let pipeline = std::fs::read_to_string(repo.path().join("examples/local.kdl"))
        .expect("read")
        .replace(
            "stage \"review\" uses=\"std/review\" timeout=\"10m\" {\n    reviewer \"rules\"",
            "stage \"review\" uses=\"std/review\" timeout=\"10m\" on-error=\"fallback\" {\n    reviewer \"command\"\n    command \"false\"",
        )
        .replace("    resume \"restore.conversation\"\n", "")
        .replace(
            "stage \"post\" uses=\"std/post\" {\n",
            "stage \"post\" uses=\"std/post\" {\n    allow \"fail-closed\" reason=\"the post says itself that the review did not run\"\n",
        );
    assert!(
        pipeline.contains("command \"false\"") && pipeline.contains("allow \"fail-closed\""),
        "{pipeline}"
    );
    let pipeline = crate::support::with_allow_ids_in(repo.path(), &pipeline);
    std::fs::write(repo.path().join("fails.kdl"), pipeline).expect("write");
    repo.commit("src/app.rs", PUSH2, "push 2");
    let first_head = record(&repo)["head"].clone();
    let out = reviewflow_in(repo.path(), &["run", "fails.kdl"]);
    // The run got past `check`: the review ran, failed and fell back.
    assert_ne!(out.code, 2, "{}", out.transcript());
    assert_eq!(
        record(&repo)["head"],
        first_head,
        "the review that did not run is not recorded (docs/local-forge.md): {}",
        out.transcript()
    );
    assert_eq!(
        record(&repo)["baseline"],
        first,
        "the last baseline is kept: {}",
        out.transcript()
    );

    // The same head is then reviewed (it was not taken for reviewed): compared with push 1's
    // review.
    let out = reviewflow_in(repo.path(), &["run", "examples/local.kdl"]);
    assert_eq!(out.code, 0, "{}", out.transcript());
    let json = review_json(&repo);
    assert_eq!(
        json["states"],
        serde_json::json!({"new": 1, "persisting": 2, "resolved": 1, "refuted": 0, "accepted": 0, "upheld": 0}),
        "{json:#}"
    );
}

//! The model reviewers against fake `claude` and `codex` executables (tests/fakes/, which behave
//! like the real CLIs): fresh and resumed reviews, refused resumes, failures, what reaches the
//! CLI, read-only flags, cancellation.

// Test helpers unwrap as the tests do (clippy's allow-unwrap-in-tests covers only the
// `#[test]` functions themselves).
#![allow(clippy::unwrap_used)]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use reviewflow_engine::exec::process::Stream;
use reviewflow_engine::exec::redact::Redactor;
use reviewflow_engine::exec::secret::SecretValue;
use reviewflow_stdlib::reviewer::kinds::ModelCli;
use reviewflow_stdlib::reviewer::model::{ModelReviewer, run_model_reviewer};
use reviewflow_stdlib::reviewer::{
    Conversation, ReviewEvent, ReviewInput, ReviewOutcome, ReviewerError, SecretEnv, TryKind,
    TryOutcome,
};
use sha2::{Digest as _, Sha256};
use tempfile::TempDir;

const KEY: &str = "sk-ant-fake-0123456789abcdef";
const DIFF: &[u8] = b"diff --git a/src/lib.rs b/src/lib.rs\n--- a/src/lib.rs\n+++ b/src/lib.rs\n@@ -1 +1,2 @@\n fn a() {}\n+fn b() {}\n";

fn fakes() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fakes")
}

struct Setup {
    dir: TempDir,
    spy: PathBuf,
}

impl Setup {
    fn new() -> Self {
        let dir = TempDir::new().unwrap();
        std::fs::create_dir(dir.path().join("ws")).unwrap();
        let spy = dir.path().join("spy.jsonl");
        Setup { dir, spy }
    }

    fn spec(&self, cli: ModelCli, mode: &str) -> ModelReviewer {
        let mut spec = ModelReviewer::new(cli, self.dir.path().join("ws"));
        spec.env = vec![
            (
                "PATH".into(),
                format!("{}:/usr/local/bin:/usr/bin:/bin", fakes().display()),
            ),
            ("FAKE_MODE".into(), mode.into()),
            ("FAKE_SPY_FILE".into(), self.spy.to_string_lossy().into()),
        ];
        let credential = cli.credentials()[0];
        spec.secret_env = vec![SecretEnv::one(
            credential,
            "model-key",
            SecretValue::from(KEY.to_owned()),
        )];
        spec.grace = Duration::from_millis(300);
        spec.timeout = Some(Duration::from_secs(60));
        spec
    }

    fn spied(&self) -> Vec<serde_json::Value> {
        std::fs::read_to_string(&self.spy)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    /// Keeps a conversation out of the work folder (the next run replaces its tries).
    fn keep(&self, path: &Path) -> PathBuf {
        let to = self.dir.path().join("kept").join(path.file_name().unwrap());
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(path, &to).unwrap();
        to
    }
}

struct Run {
    result: Result<ReviewOutcome, ReviewerError>,
    status: Vec<String>,
    /// The CLI's standard error lines, as the console shows them.
    stderr: Vec<String>,
}

async fn run(spec: &ModelReviewer, resume: Option<PathBuf>, work: &Path) -> Run {
    run_with(spec, resume, work, std::future::pending(), None).await
}

/// A review cancelled when `cancel` ends; `hung`, when given, is told when the CLI says it
/// ignores SIGTERM (the fake's `hang` mode).
async fn run_with(
    spec: &ModelReviewer,
    resume: Option<PathBuf>,
    work: &Path,
    cancel: impl std::future::Future<Output = ()>,
    hung: Option<std::sync::Arc<tokio::sync::Notify>>,
) -> Run {
    let redactor = Redactor::new([("key", KEY)]).unwrap();
    let mut status = Vec::new();
    let mut stderr = Vec::new();
    let inputs = vec![ReviewInput::untrusted("gather.diff", DIFF.to_vec())];
    let result = run_model_reviewer(
        spec,
        &inputs,
        &[],
        resume.map(Conversation::new),
        work,
        &redactor,
        cancel,
        |e| match e {
            ReviewEvent::Status(s) => status.push(s),
            ReviewEvent::Output {
                stream: Stream::Stderr,
                line,
                ..
            } => {
                if line.contains("SIGTERM ignored")
                    && let Some(h) = &hung
                {
                    h.notify_one();
                }
                stderr.push(line)
            }
            ReviewEvent::Output { .. } => {}
        },
    )
    .await;
    Run {
        result,
        status,
        stderr,
    }
}

fn sha(path: &Path) -> String {
    Sha256::digest(std::fs::read(path).unwrap())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn fact<'a>(outcome: &'a ReviewOutcome, key: &str) -> Option<&'a str> {
    outcome
        .facts
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
}

#[tokio::test]
async fn claude_reviews_fresh_then_resumes_with_a_fork_that_leaves_the_old_session_whole() {
    let s = Setup::new();
    let spec = s.spec(ModelCli::Claude, "ok");
    let first = run(&spec, None, &s.dir.path().join("w1")).await;
    let first = first.result.unwrap();
    assert!(!first.resumed);
    assert_eq!(first.findings.len(), 1);
    assert_eq!(first.findings[0].path, "src/lib.rs");
    assert!(first.comment.contains("fresh review"), "{}", first.comment);
    assert_eq!(
        fact(&first, "reviewer.cli-version"),
        Some("2.1.197 (Claude Code)")
    );
    assert_eq!(
        fact(&first, "reviewer.model"),
        Some("claude-sonnet-4-5-20250929")
    );
    let session = s.keep(first.conversation.as_ref().unwrap());
    let before = sha(&session);

    let second = run(&spec, Some(session.clone()), &s.dir.path().join("w2")).await;
    let second = second.result.unwrap();
    assert!(second.resumed);
    assert!(
        second
            .comment
            .contains("resumed review; it saw 1 earlier turn"),
        "{}",
        second.comment
    );
    assert_eq!(sha(&session), before, "the restored session stays whole");
    let new_id = fact(&second, "reviewer.session").unwrap();
    let old_id = session.file_stem().unwrap().to_string_lossy();
    assert_ne!(new_id, old_id, "the fork is a new session");

    // What the CLI was asked: the prompt on stdin, JSON out, read-only tools, the fork.
    let calls = s.spied();
    let resumed = calls.last().unwrap();
    let argv: Vec<&str> = resumed["argv"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    for want in ["-p", "--fork-session", "--strict-mcp-config"] {
        assert!(argv.contains(&want), "{argv:?}");
    }
    let after = |flag: &str| argv[argv.iter().position(|a| *a == flag).unwrap() + 1];
    assert_eq!(after("--resume"), old_id);
    assert_eq!(after("--session-id"), new_id);
    assert_eq!(after("--output-format"), "json");
    assert_eq!(after("--setting-sources"), "user");
    for tool in ["Bash", "Edit", "Write", "WebFetch", "WebSearch"] {
        assert!(
            after("--disallowedTools").split(',').any(|t| t == tool),
            "{argv:?}"
        );
    }
    assert!(
        !argv
            .iter()
            .any(|a| a.contains("dangerously") || a.contains("bypass"))
    );
    assert!(resumed["stdin_bytes"].as_u64().unwrap() > 0);
    assert!(
        !argv.iter().any(|a| a.contains(KEY)),
        "a secret is never an argument"
    );
}

#[tokio::test]
async fn the_cli_sees_only_what_it_needs() {
    let s = Setup::new();
    for cli in [ModelCli::Claude, ModelCli::Codex] {
        let spec = s.spec(cli, "ok");
        run(&spec, None, &s.dir.path().join(cli.name()))
            .await
            .result
            .unwrap();
    }
    for call in s.spied() {
        let names: BTreeSet<String> = call["env"].as_object().unwrap().keys().cloned().collect();
        let mut want: BTreeSet<String> = ["PATH", "HOME", "LANG", "FAKE_MODE", "FAKE_SPY_FILE"]
            .map(String::from)
            .into();
        if call["argv"] == serde_json::json!(["--version"]) {
            assert_eq!(names, want, "`--version` gets no credential: {call}");
            continue;
        }
        match call["cli"].as_str().unwrap() {
            "claude" => {
                want.insert("ANTHROPIC_API_KEY".into());
                want.insert("ANTHROPIC_BASE_URL".into());
            }
            _ => {
                want.insert("OPENAI_API_KEY".into());
                want.insert("CODEX_HOME".into());
            }
        }
        assert_eq!(names, want, "{call}");
        let home = call["env"]["HOME"].as_str().unwrap();
        assert!(
            home.starts_with(&*s.dir.path().to_string_lossy()),
            "a private home: {home}"
        );
    }
}

#[tokio::test]
async fn a_refused_claude_resume_gives_a_fresh_try_2() {
    let s = Setup::new();
    let spec = s.spec(ModelCli::Claude, "ok");
    let first = run(&spec, None, &s.dir.path().join("w1"))
        .await
        .result
        .unwrap();
    let session = s.keep(first.conversation.as_ref().unwrap());
    let mut refusing = spec.clone();
    refusing.env.push(("FAKE_FAIL_RESUME".into(), "1".into()));
    let second = run(&refusing, Some(session), &s.dir.path().join("w2")).await;
    // The status says what happened in reviewflow's words; the CLI's own are on the console.
    assert!(
        second
            .status
            .iter()
            .any(|l| l.contains("exited with status 1 (its standard error is in the log)")),
        "{:?}",
        second.status
    );
    assert!(
        !second
            .status
            .iter()
            .any(|s| s.contains("No conversation found")),
        "{:?}",
        second.status
    );
    assert!(
        second
            .stderr
            .iter()
            .any(|l| l.contains("No conversation found with session ID")),
        "{:?}",
        second.stderr
    );
    let outcome = second.result.unwrap();
    assert!(!outcome.resumed);
    assert_eq!(outcome.tries[0].outcome, TryOutcome::Failed);
    assert_eq!(outcome.tries[1].kind, TryKind::Fresh);
    assert_eq!(outcome.tries[1].outcome, TryOutcome::Reviewed);
}

#[tokio::test]
async fn codex_resumes_its_thread_and_a_silent_fresh_start_is_a_refused_resume() {
    let s = Setup::new();
    let spec = s.spec(ModelCli::Codex, "ok");
    let first = run(&spec, None, &s.dir.path().join("w1"))
        .await
        .result
        .unwrap();
    assert_eq!(
        fact(&first, "reviewer.cli-version"),
        Some("codex-cli 0.58.0")
    );
    assert_eq!(fact(&first, "reviewer.model"), Some("gpt-5-codex"));
    let rollout = s.keep(first.conversation.as_ref().unwrap());
    assert!(
        rollout
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("rollout-")
    );
    let before = sha(&rollout);

    let second = run(&spec, Some(rollout.clone()), &s.dir.path().join("w2")).await;
    let second = second.result.unwrap();
    assert!(second.resumed);
    assert!(
        second.comment.contains("resumed review"),
        "{}",
        second.comment
    );
    assert_eq!(sha(&rollout), before);
    let argv = s.spied().last().unwrap()["argv"].clone();
    let argv: Vec<&str> = argv
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    let at = |flag: &str| argv[argv.iter().position(|a| *a == flag).unwrap() + 1];
    assert_eq!(at("--sandbox"), "read-only");
    assert_eq!(at("resume"), fact(&first, "reviewer.session").unwrap());
    assert_eq!(argv.last(), Some(&"-"), "the prompt comes on stdin");

    // An older Codex starts a new thread, exit 0, when it cannot find the one asked for.
    let mut silent = spec.clone();
    silent.env.push(("FAKE_FAIL_RESUME".into(), "1".into()));
    silent
        .env
        .push(("FAKE_CODEX_SILENT_FRESH".into(), "1".into()));
    let third = run(&silent, Some(rollout), &s.dir.path().join("w3")).await;
    assert!(
        third.status.iter().any(|l| l.contains("a refused resume")),
        "{:?}",
        third.status
    );
    let outcome = third.result.unwrap();
    assert!(!outcome.resumed);
    assert_eq!(outcome.tries.len(), 2);
}

/// Each try keeps what the CLI reported it spent, as the real ones report it: Claude Code its
/// result's `usage` and `total_cost_usd`, Codex its turns' `usage` and no price. A try that
/// failed after its answer spent too. Nothing reached an API here (no `FAKE_API`): the proxy
/// counted nothing, and the CLI's report stands.
#[tokio::test]
async fn each_try_keeps_what_the_cli_reported_it_spent() {
    let s = Setup::new();
    for (cli, mode) in [
        (ModelCli::Claude, "ok"),
        (ModelCli::Claude, "error-result"),
        (ModelCli::Codex, "ok"),
    ] {
        let spec = s.spec(cli, mode);
        let out = run(
            &spec,
            None,
            &s.dir.path().join(format!("spent-{}-{mode}", cli.name())),
        )
        .await;
        let tries = match &out.result {
            Ok(o) => o.tries.clone(),
            Err(e) => e.tries().to_vec(),
        };
        for t in &tries {
            let usage = t
                .usage
                .unwrap_or_else(|| panic!("{mode}: try {} reported nothing", t.number));
            assert!(
                usage.input_tokens > 0 && usage.output_tokens > 0,
                "{mode}: {usage:?}"
            );
            let cost = usage.cost_usd.map(|c| c.to_string());
            match cli {
                ModelCli::Claude => assert_eq!(cost.as_deref(), Some("$0.0123"), "{mode}"),
                ModelCli::Codex => assert_eq!(cost, None, "Codex reports no price"),
            }
        }
        assert!(
            out.status.iter().any(|l| l.starts_with("try 1 spent ")),
            "{:?}",
            out.status
        );
    }
}

#[tokio::test]
async fn when_every_try_fails_there_is_no_review() {
    let s = Setup::new();
    for (cli, mode) in [
        (ModelCli::Claude, "crash"),
        (ModelCli::Claude, "no-review"),
        (ModelCli::Claude, "error-result"),
        (ModelCli::Codex, "crash"),
        (ModelCli::Codex, "no-review"),
    ] {
        let spec = s.spec(cli, mode);
        let out = run(
            &spec,
            None,
            &s.dir.path().join(format!("{}-{mode}", cli.name())),
        )
        .await;
        let Err(ReviewerError::NoReview { tries }) = out.result else {
            panic!("{mode}: {:?}", out.result.map(|o| o.comment));
        };
        assert_eq!(tries.len(), 2, "{mode}");
        assert!(tries.iter().all(|r| r.outcome == TryOutcome::Failed));
    }
}

#[tokio::test]
async fn only_the_models_credential_may_be_a_secret() {
    let s = Setup::new();
    let mut spec = s.spec(ModelCli::Claude, "ok");
    spec.secret_env.push(SecretEnv::one(
        "GITHUB_TOKEN",
        "github-token",
        SecretValue::from("ghs_x".to_owned()),
    ));
    let out = run(&spec, None, &s.dir.path().join("w")).await;
    let err = out.result.unwrap_err().to_string();
    assert!(err.contains("only its credential"), "{err}");
    assert!(s.spied().is_empty(), "nothing ran");
}

#[tokio::test]
async fn a_cancel_during_the_review_ends_a_cli_that_ignores_sigterm() {
    let s = Setup::new();
    let spec = s.spec(ModelCli::Claude, "hang");
    let started = std::time::Instant::now();
    // Cancelled once the CLI ignores SIGTERM: what ends it is the grace's SIGKILL.
    let hung = std::sync::Arc::new(tokio::sync::Notify::new());
    let waited = hung.clone();
    let out = run_with(
        &spec,
        None,
        &s.dir.path().join("w"),
        async move { waited.notified().await },
        Some(hung),
    )
    .await;
    let Err(ReviewerError::Cancelled { tries }) = out.result else {
        panic!("not cancelled");
    };
    assert_eq!(tries.len(), 1, "no try after a cancel");
    assert!(started.elapsed() < Duration::from_secs(30));
    // Returned only after the CLI exited: nothing of it is left.
    let spy = s.spy.to_string_lossy().into_owned();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        if let Ok(env) = std::fs::read(entry.path().join("environ")) {
            assert!(
                !String::from_utf8_lossy(&env).contains(&spy),
                "a fake CLI is still running: {:?}",
                entry.path()
            );
        }
    }
}

#[tokio::test]
async fn a_credential_the_model_quotes_is_not_published() {
    let s = Setup::new();
    let spec = s.spec(ModelCli::Claude, "leak-token");
    let out = run(&spec, None, &s.dir.path().join("w"))
        .await
        .result
        .unwrap();
    assert!(!out.comment.contains("ghp_AAAA"), "{}", out.comment);
    assert!(
        out.comment.contains("[credential removed]"),
        "{}",
        out.comment
    );
    // The conversation keeps what was said: the scan decides whether it may be sealed.
    let session = std::fs::read_to_string(out.conversation.unwrap()).unwrap();
    assert!(session.contains("ghp_AAAA"));
}

#[tokio::test]
async fn a_transient_codex_error_event_does_not_fail_the_review() {
    let s = Setup::new();
    let spec = s.spec(ModelCli::Codex, "reconnect");
    let out = run(&spec, None, &s.dir.path().join("w")).await;
    let outcome = out.result.unwrap();
    assert_eq!(outcome.tries.len(), 1, "{:?}", out.status);
}

#[tokio::test]
async fn a_cli_that_hangs_times_out_on_each_try() {
    let s = Setup::new();
    let mut spec = s.spec(ModelCli::Codex, "hang");
    spec.timeout = Some(Duration::from_millis(700));
    let out = run(&spec, None, &s.dir.path().join("w")).await;
    let Err(ReviewerError::NoReview { tries }) = out.result else {
        panic!("{:?}", out.status);
    };
    assert_eq!(tries.len(), 2);
    assert!(
        tries
            .iter()
            .all(|t| t.reason.as_deref() == Some("timed out after 700ms")),
        "{tries:?}"
    );
}

#[tokio::test]
async fn a_reviewer_without_its_credential_says_how_to_give_it() {
    let s = Setup::new();
    let mut spec = s.spec(ModelCli::Codex, "ok");
    spec.secret_env.clear();
    let err = run(&spec, None, &s.dir.path().join("w"))
        .await
        .result
        .unwrap_err()
        .to_string();
    assert!(err.contains("secret-env \"OPENAI_API_KEY\""), "{err}");
    assert!(s.spied().is_empty(), "nothing ran");
}

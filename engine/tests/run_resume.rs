//! The executor through the library: a test-only stage kind, and the identity fields the command
//! line cannot vary (commits, reviewer provider/model).

// Test helpers unwrap as the tests do (clippy's allow-unwrap-in-tests covers only the
// `#[test]` functions themselves).
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use reviewflow_engine::contract::{
    ChildSpec, LabelRule, OutputType, Role, StageContract, ValueType,
};
use reviewflow_engine::run::{
    BoxFuture, ConsoleMode, Implementations, Outcome, OutputValue, RunError, RunOptions, RunStatus,
    StageCx, StageError, StageImpl, StageOutputs, execute,
};
use reviewflow_engine::syntax::Limits;
use reviewflow_engine::{Registry, Source, compile};

/// `test/review`: counts its runs and answers with its reviewer's model.
struct Review {
    runs: Arc<AtomicUsize>,
}

impl StageImpl for Review {
    fn run<'a>(&'a self, cx: StageCx<'a>) -> BoxFuture<'a, Result<StageOutputs, StageError>> {
        Box::pin(async move {
            self.runs.fetch_add(1, Ordering::SeqCst);
            let model = cx
                .children_named("reviewer")
                .next()
                .and_then(|c| c.prop("model"))
                .and_then(|m| m.text())
                .unwrap_or_default();
            cx.status.status(format!("reviewed with {model}"));
            Ok(StageOutputs::from([(
                "comment".to_string(),
                OutputValue::Text(format!("by {model}")),
            )]))
        })
    }
}

fn registry() -> Registry {
    let mut r = Registry::with_builtins();
    r.register(
        StageContract::new("test/review", "a reviewer for tests")
            .child(
                ChildSpec::new("reviewer", Role::Config, "provider")
                    .arg(ValueType::String)
                    .prop("model", ValueType::String, false, "model"),
            )
            .output(
                "comment",
                OutputType::Text,
                "the comment",
                LabelRule::none(),
            ),
    );
    r
}

fn pipeline(model: &str) -> String {
    format!(
        r#"
pipeline "lib"
stage "review" uses="test/review" {{
    reviewer "claude" model="{model}"
}}
stage "after" uses="run" {{
    command "sh" "-c" "test -f \"$ALLOW\" && echo {{review.comment}}"
    env "ALLOW" "{{allow}}"
    output "said"
}}
input "allow" env="ALLOW"
"#
    )
}

struct Env {
    dir: tempfile::TempDir,
    runs: Arc<AtomicUsize>,
}

impl Env {
    fn new() -> Self {
        Self {
            dir: tempfile::tempdir().unwrap(),
            runs: Arc::new(AtomicUsize::new(0)),
        }
    }

    fn options(&self, commits: &[(&str, &str)], resume: Option<&str>, allow: bool) -> RunOptions {
        let mut o = RunOptions::new(self.dir.path());
        o.console = ConsoleMode::Quiet;
        o.grace = std::time::Duration::from_millis(300);
        o.commits = commits
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect::<BTreeMap<_, _>>();
        o.resume = resume.map(str::to_string);
        o.allow_model_change = allow;
        let allow_path = self.dir.path().join("allow").to_string_lossy().into_owned();
        o.env = Arc::new(move |name| (name == "ALLOW").then(|| allow_path.clone().into()));
        o
    }

    async fn run(
        &self,
        model: &str,
        options: RunOptions,
    ) -> Result<reviewflow_engine::run::RunReport, RunError> {
        let registry = registry();
        let compiled = compile(
            Source::new("lib.kdl", pipeline(model)),
            &registry,
            &Limits::default(),
        )
        .map_err(|_| "compile")
        .unwrap();
        let mut impls = Implementations::with_builtins();
        impls.register(
            "test/review",
            Arc::new(Review {
                runs: self.runs.clone(),
            }),
        );
        execute(&compiled, &registry, &impls, options).await
    }

    /// A failed parent: `after` fails because the allow file is missing.
    async fn parent(&self) -> String {
        let r = self
            .run("opus", self.options(&[("head", "aaaa")], None, false))
            .await
            .unwrap();
        assert_eq!(r.status, RunStatus::Failed);
        std::fs::write(self.dir.path().join("allow"), "").unwrap();
        r.run_id
    }

    fn run_dirs(&self) -> usize {
        std::fs::read_dir(self.dir.path().join(".reviewflow/runs"))
            .map(|d| d.count())
            .unwrap_or(0)
    }
}

fn mismatch(e: RunError) -> Vec<String> {
    match e {
        RunError::Resume(reviewflow_engine::run::ResumeError::Mismatch { differences, .. }) => {
            differences.iter().map(ToString::to_string).collect()
        }
        other => panic!("not a mismatch: {other}"),
    }
}

#[tokio::test]
async fn a_test_only_kind_runs_and_is_reused_on_resume() {
    let env = Env::new();
    let parent = env.parent().await;
    let r = env
        .run(
            "opus",
            env.options(&[("head", "aaaa")], Some(&parent), false),
        )
        .await
        .unwrap();
    assert_eq!(r.status, RunStatus::Succeeded, "{:?}", r.manifest);
    assert_eq!(env.runs.load(Ordering::SeqCst), 1, "the reviewer ran again");
    let review = r.manifest.stage("review").unwrap();
    assert_eq!(review.outcome, Outcome::Reused);
    assert_eq!(review.reused_from.as_deref(), Some(parent.as_str()));
    assert_eq!(
        r.manifest.stage("after").unwrap().outcome,
        Outcome::Succeeded
    );
}

#[tokio::test]
async fn resume_is_rejected_when_a_commit_differs() {
    let env = Env::new();
    let parent = env.parent().await;
    let before = env.run_dirs();
    let e = env
        .run(
            "opus",
            env.options(&[("head", "bbbb")], Some(&parent), false),
        )
        .await
        .unwrap_err();
    assert_eq!(mismatch(e), ["commits.head: aaaa → bbbb"]);
    assert_eq!(env.run_dirs(), before);
}

#[tokio::test]
async fn a_model_change_is_rejected_without_the_flag() {
    let env = Env::new();
    let parent = env.parent().await;
    let before = env.run_dirs();
    let e = env
        .run(
            "sonnet",
            env.options(&[("head", "aaaa")], Some(&parent), false),
        )
        .await
        .unwrap_err();
    let text = e.to_string();
    assert!(text.contains("--allow-model-change"), "{text}");
    assert_eq!(
        mismatch(e),
        ["reviewers.review: claude/opus → claude/sonnet"]
    );
    assert_eq!(env.run_dirs(), before);
}

#[tokio::test]
async fn a_model_change_is_admitted_with_the_flag_and_the_reviewer_runs_again() {
    let env = Env::new();
    let parent = env.parent().await;
    let r = env
        .run(
            "sonnet",
            env.options(&[("head", "aaaa")], Some(&parent), true),
        )
        .await
        .unwrap();
    assert_eq!(r.status, RunStatus::Succeeded);
    assert_eq!(env.runs.load(Ordering::SeqCst), 2);
    assert_eq!(
        r.manifest.stage("review").unwrap().outcome,
        Outcome::Succeeded
    );
    assert_eq!(r.manifest.parent.as_deref(), Some(parent.as_str()));
    let events = reviewflow_engine::run::read_tolerant(&r.run_dir.join("events.jsonl")).unwrap();
    let lineage = events
        .events
        .iter()
        .find_map(|e| match &e.event {
            reviewflow_engine::run::Event::ResumeLineage { model_changes, .. } => {
                Some(model_changes.clone())
            }
            _ => None,
        })
        .unwrap();
    assert_eq!(lineage, ["reviewers.review: claude/opus → claude/sonnet"]);
}

#[tokio::test]
async fn a_kind_without_implementation_is_refused_before_anything_exists() {
    let env = Env::new();
    let registry = registry();
    let compiled = compile(
        Source::new("lib.kdl", pipeline("opus")),
        &registry,
        &Limits::default(),
    )
    .map_err(|_| "compile")
    .unwrap();
    let e = execute(
        &compiled,
        &registry,
        &Implementations::with_builtins(),
        env.options(&[], None, false),
    )
    .await
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "test/review has no implementation in this build (used by `review`)"
    );
    assert_eq!(env.run_dirs(), 0);
}

//! An input that carries a secret's value is redacted like the secret: in `manifest.json` (its
//! `inputs` and its identity), in `events.jsonl`, in kept outputs and in an input error. The
//! stages still get the real value.

// Test helpers unwrap as the tests do (clippy's allow-unwrap-in-tests covers only the
// `#[test]` functions themselves).
#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use reviewflow_engine::contract::StageContract;
use reviewflow_engine::run::{
    BoxFuture, ConsoleMode, Implementations, RunError, RunOptions, RunReport, RunStatus, StageCx,
    StageError, StageImpl, StageOutputs, execute,
};
use reviewflow_engine::syntax::Limits;
use reviewflow_engine::{Registry, Source, compile};

/// `test/echo`: says every input of the run in a status line and a fact, then fails with them in
/// its reason: each a record that reaches `events.jsonl` or `manifest.json`.
struct Echo;

impl StageImpl for Echo {
    fn run<'a>(&'a self, cx: StageCx<'a>) -> BoxFuture<'a, Result<StageOutputs, StageError>> {
        Box::pin(async move {
            let said: Vec<String> = cx
                .inputs
                .iter()
                .filter(|(n, _)| !matches!(n.as_str(), "repo" | "change" | "run"))
                .map(|(n, v)| format!("{n}={v}"))
                .collect();
            let said = said.join(" ");
            cx.status.status(format!("inputs: {said}"));
            cx.facts.record("echo.inputs", said.clone());
            Err(StageError::failed(format!("refused {said}")))
        })
    }
}

/// The value of the run's secret `token`.
const SECRET: &str = "s3cret-T0ken-value-0123456789";

/// How an input can carry the secret without `check` seeing it: the workflow maps the secret to
/// an innocently named variable (`LABEL: ${{ secrets.TOKEN }}`), or into part of one.
const MAPPED: &str = r#"
pipeline "mapped"
secret "token" env="TOKEN" {
    visible-to "use"
}
input "label" env="LABEL"
trusted "input" name="label" reason="the test sets it"
input "note" env="NOTE"
trusted "input" name="note" reason="the test sets it"
stage "use" uses="run" {
    command "sh" "-c" "printf %s \"$1\"" "sh" "{label}"
    env "NOTE" "{note}"
    secret-env "T" "token"
    output "said"
}
stage "echo" uses="test/echo" {
    needs "use"
}
"#;

/// The input reads the secret's own variable (allowed, with a reason), and the secret is too
/// short for its `min-bytes`, so no stage holds it as a secret: the input still carries it.
const ALIASED: &str = r#"
pipeline "aliased"
allow "secret-as-input" reason="the test: an allowed finding must not leak at run time"
secret "token" env="TOKEN" min-bytes=64 on-missing="disable" {
    visible-to "use"
}
input "raw" env="TOKEN"
stage "use" uses="run" on-error="skip" {
    command "true"
    secret-env "T" "token"
}
stage "echo" uses="run" {
    command "sh" "-c" "printf %s \"$RAW\""
    env "RAW" "{raw}"
    output "said"
}
stage "said" uses="test/echo" {
    needs "echo"
}
"#;

fn options(dir: &std::path::Path, env: &'static [(&'static str, &'static str)]) -> RunOptions {
    let mut o = RunOptions::new(dir);
    o.console = ConsoleMode::Quiet;
    o.grace = std::time::Duration::from_millis(300);
    o.env = Arc::new(move |name| {
        env.iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| (*v).into())
    });
    o
}

async fn run(
    source: &str,
    dir: &std::path::Path,
    env: &'static [(&'static str, &'static str)],
) -> Result<RunReport, RunError> {
    let mut registry = Registry::with_builtins();
    registry.register(StageContract::new(
        "test/echo",
        "says the inputs, then fails",
    ));
    let mut implementations = Implementations::with_builtins();
    implementations.register("test/echo", Arc::new(Echo));
    let compiled = compile(
        Source::new("t.kdl", with_allow_ids(source, &registry)),
        &registry,
        &Limits::default(),
    )
    .map_err(|_| "compile")
    .unwrap();
    execute(&compiled, &registry, &implementations, options(dir, env)).await
}

/// `source` with each `allow` given the id of the one finding of its check (principle 6: an
/// `allow` names the finding it hides); the id is `check`'s own.
fn with_allow_ids(source: &str, registry: &Registry) -> String {
    let compiled = compile(
        Source::new("t.kdl", source.to_string()),
        registry,
        &Limits::default(),
    )
    .map_err(|_| "compile")
    .unwrap();
    let findings = reviewflow_engine::run_checks(&compiled, registry, Default::default());
    source
        .lines()
        .map(|line| {
            let Some(check) = line
                .trim()
                .strip_prefix("allow \"")
                .and_then(|r| r.split('"').next())
            else {
                return line.to_owned();
            };
            let ids: Vec<String> = findings
                .iter()
                .filter(|f| f.check == check)
                .map(|f| f.id())
                .collect();
            assert_eq!(
                ids.len(),
                1,
                "one `{check}` finding to allow: {findings:#?}"
            );
            line.replacen(
                &format!("allow \"{check}\""),
                &format!("allow \"{check}\" finding=\"{}\"", ids[0]),
                1,
            )
        })
        .map(|l| l + "\n")
        .collect()
}

fn read(r: &RunReport, rel: &str) -> String {
    std::fs::read_to_string(r.run_dir.join(rel)).unwrap()
}

/// Every file the run wrote, as text.
fn every_file(dir: &std::path::Path, out: &mut Vec<(String, String)>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            every_file(&path, out);
        } else {
            let text = String::from_utf8_lossy(&std::fs::read(&path).unwrap()).into_owned();
            out.push((path.display().to_string(), text));
        }
    }
}

fn assert_no_plaintext(r: &RunReport) {
    let mut files = Vec::new();
    every_file(&r.run_dir, &mut files);
    assert!(files.iter().any(|(p, _)| p.ends_with("manifest.json")));
    assert!(files.iter().any(|(p, _)| p.ends_with("events.jsonl")));
    for (path, text) in &files {
        assert!(!text.contains(SECRET), "{path} holds the secret:\n{text}");
    }
}

#[tokio::test]
async fn an_input_equal_to_or_holding_a_secret_is_redacted_in_every_record() {
    let dir = tempfile::tempdir().unwrap();
    const ENV: &[(&str, &str)] = &[
        ("TOKEN", SECRET),
        ("LABEL", SECRET),
        (
            "NOTE",
            concat!("id-", "s3cret-T0ken-value-0123456789", "-x"),
        ),
    ];
    let r = run(MAPPED, dir.path(), ENV).await.unwrap();
    assert_eq!(r.status, RunStatus::Failed, "{:?}", r.manifest);
    assert_no_plaintext(&r);

    let manifest: serde_json::Value = serde_json::from_str(&read(&r, "manifest.json")).unwrap();
    for at in ["/inputs", "/identity/inputs"] {
        assert_eq!(
            manifest.pointer(&format!("{at}/label")).unwrap(),
            "[redacted:token]"
        );
        assert_eq!(
            manifest.pointer(&format!("{at}/note")).unwrap(),
            "id-[redacted:token]-x"
        );
    }
    assert_eq!(r.manifest.inputs["label"], "[redacted:token]");
    // The stages got the real values: what they said is in the log, the manifest and an
    // output, redacted.
    let said = "label=[redacted:token] note=id-[redacted:token]-x";
    let events = read(&r, "events.jsonl");
    assert!(events.contains(&format!("inputs: {said}")), "{events}");
    let echo = r.manifest.stage("echo").unwrap();
    assert_eq!(echo.facts["echo.inputs"], said);
    assert_eq!(echo.reason.as_deref(), Some(&*format!("refused {said}")));
    assert!(r.manifest.reason.as_deref().unwrap().contains(said));
    // What a stage that holds the secret wrote is discarded when the run ends (it carries the
    // secret); it was kept redacted while the run went on.
    assert!(!r.run_dir.join("outputs/use/said").exists());
    let use_said = &manifest["stages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "use")
        .unwrap()["outputs"]["said"];
    assert_eq!(use_said["discarded"], "secret", "{use_said}");
}

#[tokio::test]
async fn an_input_read_from_a_secrets_variable_is_redacted_even_when_the_secret_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    const ENV: &[(&str, &str)] = &[("TOKEN", SECRET)];
    let r = run(ALIASED, dir.path(), ENV).await.unwrap();
    assert_eq!(r.status, RunStatus::Failed, "{:?}", r.manifest);
    assert_eq!(
        r.manifest.secrets["token"],
        reviewflow_engine::run::SecretState::TooShort
    );
    assert_no_plaintext(&r);
    assert_eq!(r.manifest.inputs["raw"], "[redacted:token]");
    assert_eq!(r.manifest.identity.inputs["raw"], "[redacted:token]");
    let events = read(&r, "events.jsonl");
    assert!(events.contains("inputs: raw=[redacted:token]"), "{events}");
    assert_eq!(
        r.manifest.stage("said").unwrap().facts["echo.inputs"],
        "raw=[redacted:token]"
    );
    assert_eq!(read(&r, "outputs/echo/said"), "[redacted:token]");
}

#[tokio::test]
async fn an_input_error_does_not_show_a_secrets_value() {
    let dir = tempfile::tempdir().unwrap();
    let source = MAPPED.replace(
        r#"input "label" env="LABEL""#,
        r#"input "label" env="LABEL" pattern="^[a-z]+$""#,
    );
    const ENV: &[(&str, &str)] = &[("TOKEN", SECRET), ("LABEL", SECRET), ("NOTE", "n")];
    let err = run(&source, dir.path(), ENV).await.unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, RunError::Inputs { .. }), "{text}");
    assert!(!text.contains(SECRET), "{text}");
    assert!(text.contains("[redacted:token]"), "{text}");
}

//! The model API proxy (`reviewer::proxy`): the reviewer never holds its key.
//!
//! A fake model API on loopback (`tests/fakes/model-api`, which logs every request it gets)
//! stands in for the vendor. The fake CLIs of `tests/fakes/` talk to it through the proxy
//! (`FAKE_API=1`); raw requests test what the proxy refuses and how it streams; and, when
//! installed (`REVIEWFLOW_CLAUDE_CODE`, `REVIEWFLOW_CODEX`: `.ci/run` installs them), the real
//! Claude Code and Codex review and resume through it.
//!
//! The redactor given to the reviewer does not know the key: what a test reads (the comment, the
//! CLI's environment, its files) is what the reviewer had, not what redaction left of it.

// What a test could not check here.
#[path = "support/skip.rs"]
mod skip;

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use reviewflow_engine::exec::confine::{self, ConfineSpec, StageScope};
use reviewflow_engine::exec::redact::Redactor;
use reviewflow_engine::exec::secret::SecretValue;
use reviewflow_stdlib::reviewer::kinds::ModelCli;
use reviewflow_stdlib::reviewer::model::{ModelReviewer, run_model_reviewer};
use reviewflow_stdlib::reviewer::proxy::{Account, AccountPool, ModelProxy, Upstream};
use reviewflow_stdlib::reviewer::{
    CommandReviewer, Conversation, ReviewEvent, ReviewInput, ReviewOutcome, ReviewerError,
    SecretEnv, run_command_reviewer,
};
use serde_json::Value;
use tempfile::TempDir;

/// The real key, as far as these tests go: only the fake API may ever see it.
const KEY: &str = "sk-ant-api03-the-real-key-0123456789abcdefghijklmnop";
const DIFF: &[u8] = b"diff --git a/src/lib.rs b/src/lib.rs\n--- a/src/lib.rs\n+++ b/src/lib.rs\n@@ -1 +1,2 @@\n fn a() {}\n+fn b() {}\n";

fn fakes() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fakes")
}

/// Every form of the key a reviewer could write out: plain, reversed, in base64.
fn key_forms() -> [String; 3] {
    [
        KEY.to_owned(),
        KEY.chars().rev().collect(),
        base64::engine::general_purpose::STANDARD.encode(KEY),
    ]
}

fn holds_key(text: &str) -> bool {
    key_forms().iter().any(|k| text.contains(k.as_str()))
}

/// `tests/fakes/model-api`, on a free loopback port, until dropped.
struct FakeApi {
    child: Child,
    port: u16,
    log: PathBuf,
    gate: Option<ChildStdin>,
}

impl FakeApi {
    fn start(dir: &Path, gate: bool) -> Self {
        Self::limiting(dir, gate, &[])
    }

    /// The fake API, answering 429 to the keys `limited`, as to accounts past their limit.
    fn limiting(dir: &Path, gate: bool, limited: &[&str]) -> Self {
        let log = dir.join(format!("api-{}.jsonl", rand_suffix()));
        let mut command = Command::new(fakes().join("model-api"));
        command.arg("--log").arg(&log);
        for key in limited {
            command.arg("--limited").arg(key);
        }
        if gate {
            command.arg("--gate");
        }
        let mut child = command
            .stdin(if gate { Stdio::piped() } else { Stdio::null() })
            .stdout(Stdio::piped())
            .spawn()
            .expect("the fake model API starts");
        // Its readiness line: it listens from here on.
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("a readiness line");
        let port = line
            .trim()
            .rsplit(':')
            .next()
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("not a readiness line: {line:?}"));
        let gate = child.stdin.take();
        FakeApi {
            child,
            port,
            log,
            gate,
        }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    fn requests(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).expect("a JSON line"))
            .collect()
    }

    /// The values of the authentication headers it received.
    fn credentials(&self) -> Vec<String> {
        self.requests()
            .iter()
            .flat_map(|r| r["headers"].as_array().cloned().unwrap_or_default())
            .filter(|h| {
                let name = h[0].as_str().unwrap_or("").to_ascii_lowercase();
                name == "x-api-key" || name == "authorization"
            })
            .map(|h| h[1].as_str().unwrap_or("").to_owned())
            .collect()
    }

    /// Lets one held answer go on.
    fn open_gate(&mut self) {
        let gate = self.gate.as_mut().expect("started with a gate");
        gate.write_all(b"go\n").expect("the gate opens");
        gate.flush().expect("flushed");
    }
}

impl Drop for FakeApi {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn rand_suffix() -> String {
    let mut b = [0u8; 6];
    getrandom::fill(&mut b).expect("random");
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// The credential and base-URL variables of each CLI.
fn credential_of(cli: ModelCli) -> &'static str {
    cli.credentials()[0]
}

fn base_url_var(cli: ModelCli) -> (&'static str, &'static str) {
    match cli {
        ModelCli::Claude => ("ANTHROPIC_BASE_URL", ""),
        ModelCli::Codex => ("OPENAI_BASE_URL", "/v1"),
    }
}

struct Setup {
    dir: TempDir,
}

impl Setup {
    fn new() -> Self {
        let dir = TempDir::new().expect("tempdir");
        std::fs::create_dir(dir.path().join("ws")).expect("mkdir");
        std::fs::write(dir.path().join("ws/lib.rs"), "fn a() {}\n").expect("write");
        Setup { dir }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// A reviewer with the fake CLI in `mode`, its API declared as `api`.
    fn fake(&self, cli: ModelCli, mode: &str, api: &FakeApi) -> ModelReviewer {
        let mut spec = ModelReviewer::new(cli, self.path().join("ws"));
        let (var, path) = base_url_var(cli);
        spec.env = vec![
            (
                "PATH".into(),
                format!("{}:/usr/local/bin:/usr/bin:/bin", fakes().display()),
            ),
            ("FAKE_MODE".into(), mode.into()),
            ("FAKE_API".into(), "1".into()),
            ("FAKE_SPY_FILE".into(), "stderr:FAKE-SPY".into()),
            (var.into(), format!("{}{path}", api.url())),
        ];
        spec.secret_env = vec![SecretEnv::one(
            credential_of(cli),
            "model-key",
            SecretValue::from(KEY),
        )];
        spec.grace = Duration::from_millis(300);
        spec.timeout = Some(Duration::from_secs(120));
        spec.tries = 1;
        spec
    }
}

/// What a review left: its outcome, and every line it reported (status and the CLI's stderr).
struct Reviewed {
    result: Result<ReviewOutcome, ReviewerError>,
    lines: Vec<String>,
}

impl Reviewed {
    fn outcome(&self) -> &ReviewOutcome {
        self.result
            .as_ref()
            .unwrap_or_else(|e| panic!("{e}\n{}", self.lines.join("\n")))
    }

    /// The JSON of every line the fake CLI reported with `FAKE-SPY`.
    fn spied(&self) -> Vec<Value> {
        self.lines
            .iter()
            .filter_map(|l| l.strip_prefix("FAKE-SPY "))
            .map(|j| serde_json::from_str(j).expect("a spy line"))
            .collect()
    }
}

/// Runs `spec` as a stage would: inside a stage scope confined to read `ws` when `confined`.
async fn review(
    spec: &ModelReviewer,
    work: &Path,
    resume: Option<PathBuf>,
    confined: bool,
) -> Reviewed {
    let redactor = Redactor::empty();
    let mut lines = Vec::new();
    let inputs = vec![ReviewInput::untrusted("gather.diff", DIFF.to_vec())];
    let base = confined.then(|| ConfineSpec::new().read(&spec.cwd));
    let scope = Arc::new(StageScope::new(
        format!("proxy-test-{}", rand_suffix()),
        base,
    ));
    let result = scope
        .run(run_model_reviewer(
            spec,
            &inputs,
            &[],
            resume.map(Conversation::new),
            work,
            &redactor,
            std::future::pending(),
            |e| match e {
                ReviewEvent::Status(s) => lines.push(s),
                ReviewEvent::Output { line, .. } => lines.push(line),
            },
        ))
        .await;
    Reviewed { result, lines }
}

/// Runs the `command` reviewer `spec` as a stage would: inside a stage scope confined to read
/// `spec.cwd`.
async fn review_command(spec: &CommandReviewer, work: &Path) -> Reviewed {
    let mut lines = Vec::new();
    let inputs = vec![ReviewInput::untrusted("gather.diff", DIFF.to_vec())];
    let scope = Arc::new(StageScope::new(
        format!("proxy-test-{}", rand_suffix()),
        Some(ConfineSpec::new().read(&spec.cwd)),
    ));
    let result = scope
        .run(run_command_reviewer(
            spec,
            &inputs,
            None,
            work,
            &Redactor::empty(),
            std::future::pending(),
            |e| match e {
                ReviewEvent::Status(s) => lines.push(s),
                ReviewEvent::Output { line, .. } => lines.push(line),
            },
        ))
        .await;
    Reviewed { result, lines }
}

/// Every file under `dir` (no link followed), with its bytes.
fn files_under(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_dir() {
                stack.push(entry.path());
            } else if kind.is_file() {
                out.push((
                    entry.path(),
                    std::fs::read(entry.path()).unwrap_or_default(),
                ));
            }
        }
    }
    out
}

fn assert_no_file_holds_the_key(dir: &Path) {
    let files = files_under(dir);
    assert!(!files.is_empty(), "the try left no files to look at");
    for (path, bytes) in files {
        assert!(
            !holds_key(&String::from_utf8_lossy(&bytes)),
            "{} holds the key",
            path.display()
        );
    }
}

/// A CLI took its turn through the proxy: the API got the key, the CLI a stand-in.
#[tokio::test]
async fn the_api_sees_the_key_and_the_cli_only_a_stand_in() {
    let s = Setup::new();
    for cli in [ModelCli::Claude, ModelCli::Codex] {
        let api = FakeApi::start(s.path(), false);
        let spec = s.fake(cli, "ok", &api);
        let work = s.path().join(format!("work-{}", cli.name()));
        let r = review(&spec, &work, None, false).await;
        let outcome = r.outcome();
        assert!(
            outcome.comment.contains("The fake model API reviewed this"),
            "the answer came from the API: {}",
            outcome.comment
        );

        // The API: the key, in the header the CLI used, on every request.
        let credentials = api.credentials();
        let want = match cli {
            ModelCli::Claude => KEY.to_owned(),
            ModelCli::Codex => format!("Bearer {KEY}"),
        };
        assert!(!credentials.is_empty(), "{:?}", api.requests());
        assert!(credentials.iter().all(|c| *c == want), "{credentials:?}");

        // The CLI: a stand-in in its credential's variable, the proxy as its API, no key.
        let call = r
            .spied()
            .into_iter()
            .find(|c| c["argv"] != serde_json::json!(["--version"]))
            .expect("a spy line");
        let env = call["env"].as_object().expect("env");
        let stand_in = env[credential_of(cli)].as_str().expect("a credential");
        assert!(stand_in.starts_with("reviewflow-"), "{stand_in}");
        assert!(!holds_key(&call.to_string()), "{call}");
        let (var, path) = base_url_var(cli);
        match cli {
            ModelCli::Claude => {
                let url = env[var].as_str().expect("a base URL");
                assert!(url.starts_with("http://127.0.0.1:"), "{url}");
                assert_ne!(url, api.url(), "the CLI gets the proxy, not the API");
            }
            ModelCli::Codex => {
                assert!(
                    !env.contains_key(var),
                    "the declared URL stays with reviewflow"
                );
                let config = std::fs::read_to_string(work.join("try-1/codex-home/config.toml"))
                    .expect("the try's Codex configuration");
                assert!(
                    config.contains("base_url = \"http://127.0.0.1:"),
                    "{config}"
                );
                assert!(config.contains(&format!("{path}\"\n")), "{config}");
                assert!(config.contains("env_key = \"OPENAI_API_KEY\""), "{config}");
                assert!(config.contains("wire_api = \"responses\""), "{config}");
            }
        }
        // Nothing the try left, nothing reported, holds the key.
        assert_no_file_holds_the_key(&work);
        for line in &r.lines {
            assert!(!holds_key(line), "{line}");
        }
        let api_fact = outcome
            .facts
            .iter()
            .find(|(k, _)| k == "reviewer.api")
            .map(|(_, v)| v.clone());
        assert_eq!(api_fact, Some(format!("{}{path}", api.url())));
    }
}

/// The attack: a prompt injection makes the reviewer write its credential into the comment,
/// reversed and in base64 (no redactor recognises either), and into a file of its home. It
/// writes the stand-in: the key was never there.
#[tokio::test]
async fn a_reviewer_told_to_publish_its_key_publishes_a_dead_stand_in() {
    let s = Setup::new();
    for cli in [ModelCli::Claude, ModelCli::Codex] {
        let api = FakeApi::start(s.path(), false);
        let spec = s.fake(cli, "leak-credential", &api);
        let work = s.path().join(format!("work-{}", cli.name()));
        let r = review(&spec, &work, None, false).await;
        let comment = &r.outcome().comment;
        assert!(comment.contains("My credential reversed: "), "{comment}");
        assert!(
            !holds_key(comment),
            "{}: the key was published: {comment}",
            cli.name()
        );
        let written = std::fs::read_to_string(work.join("try-1/home/.fake-credential"))
            .expect("the CLI wrote its credential out");
        assert!(written.starts_with("reviewflow-"), "{written}");
        assert_no_file_holds_the_key(&work);
    }
}

/// A `command` reviewer's spend is what its API's answers reported to the proxy (no price:
/// the cost is unknown), and its budget holds as a model reviewer's: once spent, the next try
/// does not start.
#[tokio::test]
async fn a_command_reviewers_spend_is_counted_by_its_proxy_and_bounded_by_its_budget() {
    use reviewflow_stdlib::reviewer::cost::Budget;
    let s = Setup::new();
    let api = FakeApi::start(s.path(), false);
    let program = fakes().join("api-reviewer").to_string_lossy().into_owned();
    let mut runs = Vec::new();
    for (tries, budget) in [(1, None), (2, Some(10))] {
        let mut spec = CommandReviewer::new(vec![program.clone()], s.path().join("ws"));
        spec.env = vec![
            (
                "PATH".into(),
                format!("{}:/usr/local/bin:/usr/bin:/bin", fakes().display()),
            ),
            ("ANTHROPIC_BASE_URL".into(), api.url()),
            // `no-review`: each try calls the API, then writes no result (and the 10 tokens'
            // budget stops it once the answer is in, whichever comes first).
            (
                "FAKE_MODE".into(),
                if budget.is_some() { "no-review" } else { "ok" }.into(),
            ),
        ];
        spec.secret_env = vec![SecretEnv::one(
            "ANTHROPIC_API_KEY",
            "model-key",
            SecretValue::from(KEY),
        )];
        spec.tries = tries;
        spec.timeout = Some(Duration::from_secs(60));
        spec.budget = Budget {
            run_tokens: budget,
            ..Budget::default()
        };
        runs.push(review_command(&spec, &s.path().join(format!("work-{tries}"))).await);
    }
    let usage = runs[0].outcome().tries[0].usage.expect("the try's usage");
    // The fake API reports 10 tokens in and 20 out an answer.
    assert_eq!((usage.input_tokens, usage.output_tokens), (10, 20));
    assert_eq!(usage.cost_usd, None, "no API reports a price");
    let limited = &runs[1];
    let error = limited.result.as_ref().expect_err("no review").to_string();
    assert!(
        error.starts_with(
            "not reviewed: budget spent: this run spent 30 tokens of its budget of 10"
        ),
        "{error}\n{}",
        limited.lines.join("\n")
    );
    assert_eq!(
        api.credentials().len(),
        2,
        "one call a run: try 2 never started"
    );
}

/// A `command` reviewer given a model's key under its credential's variable gets a stand-in
/// and the proxy as `ANTHROPIC_BASE_URL`, like a model reviewer. Under another name the program
/// gets the key itself and holds it, and its comment carries the key: `check` reports the comment
/// reaching a stage out of the key's scope (`secret-flow`).
#[tokio::test]
async fn a_command_reviewer_given_a_model_key_under_its_variable_holds_a_stand_in() {
    let s = Setup::new();
    let api = FakeApi::start(s.path(), false);
    let program = fakes().join("api-reviewer").to_string_lossy().into_owned();
    let mut results = Vec::new();
    for var in ["ANTHROPIC_API_KEY", "LLM_KEY"] {
        let mut spec = CommandReviewer::new(vec![program.clone()], s.path().join("ws"));
        spec.env = vec![
            (
                "PATH".into(),
                format!("{}:/usr/local/bin:/usr/bin:/bin", fakes().display()),
            ),
            ("ANTHROPIC_BASE_URL".into(), api.url()),
            ("FAKE_MODE".into(), "leak-credential".into()),
            ("FAKE_SPY_FILE".into(), "stderr:FAKE-SPY".into()),
        ];
        spec.secret_env = vec![SecretEnv::one(var, "model-key", SecretValue::from(KEY))];
        spec.tries = 1;
        spec.timeout = Some(Duration::from_secs(60));
        results.push((
            var,
            review_command(&spec, &s.path().join(format!("work-{var}"))).await,
        ));
    }

    let (_, proxied) = &results[0];
    let comment = &proxied.outcome().comment;
    assert!(
        comment.contains("The fake model API reviewed this"),
        "{comment}"
    );
    assert!(comment.contains("My credential reversed: "), "{comment}");
    assert!(!holds_key(comment), "the key was published: {comment}");
    let env = proxied.spied().pop().expect("a spy line")["env"].clone();
    assert!(
        env["ANTHROPIC_API_KEY"]
            .as_str()
            .is_some_and(|v| v.starts_with("reviewflow-")),
        "{env}"
    );
    assert_ne!(env["ANTHROPIC_BASE_URL"], api.url().as_str(), "{env}");
    assert!(!holds_key(&env.to_string()), "{env}");
    assert!(
        proxied.lines[0].contains("ANTHROPIC_API_KEY reaches the program as a stand-in"),
        "{:?}",
        proxied.lines
    );
    assert_eq!(
        api.credentials(),
        [KEY],
        "the API got the key once, from the proxy"
    );

    // Under a name no model reads, the secret is the program's: it holds the key (and, with
    // no network of its own, cannot use it past a proxy it was not given).
    let (_, held) = &results[1];
    let env = held.spied().pop().expect("a spy line")["env"].clone();
    assert_eq!(env["LLM_KEY"], KEY);
    assert_eq!(env["ANTHROPIC_BASE_URL"], api.url().as_str());
    assert_eq!(
        api.credentials().len(),
        1,
        "only the proxied request carried a credential"
    );
}

/// The raw HTTP exchange `request` → the status and the whole answer.
fn exchange(port: u16, request: &str) -> (u16, String) {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("the proxy listens");
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .expect("timeout");
    stream.write_all(request.as_bytes()).expect("sent");
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).expect("an answer");
    let text = String::from_utf8_lossy(&answer).into_owned();
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    (status, text)
}

fn post(target: &str, host: &str, auth: &str, body: &str) -> String {
    format!(
        "POST {target} HTTP/1.1\r\nhost: {host}\r\n{auth}content-type: application/json\r\n\
         content-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
}

fn proxy_to(api: &FakeApi) -> ModelProxy {
    ModelProxy::start(
        Upstream::parse(&api.url()).expect("a loopback URL"),
        &[SecretEnv::one("ANTHROPIC_API_KEY", "model-key", SecretValue::from(KEY)).pool()],
    )
    .expect("the proxy starts")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_for_another_host_is_refused_and_never_forwarded() {
    let s = Setup::new();
    let api = FakeApi::start(s.path(), false);
    let proxy = proxy_to(&api);
    let (port, stand_in) = (proxy.port(), proxy.stand_ins()[0].1.as_str().to_owned());
    let own = format!("127.0.0.1:{port}");
    let auth = format!("x-api-key: {stand_in}\r\n");
    let body = r#"{"model":"m","stream":true,"messages":[]}"#;
    let requests = [
        post(
            "http://evil.example/v1/messages",
            "evil.example",
            &auth,
            body,
        ),
        post(&format!("http://{own}/v1/messages"), &own, &auth, body),
        post("/v1/messages", "evil.example", &auth, body),
        post("/v1/messages", "api.anthropic.com", &auth, body),
        post(
            "/v1/messages",
            &format!("{own}\r\nhost: evil.example"),
            &auth,
            body,
        ),
        format!(
            "CONNECT evil.example:443 HTTP/1.1\r\nhost: evil.example:443\r\n{auth}connection: close\r\n\r\n"
        ),
        format!("POST /v1/messages HTTP/1.0\r\n{auth}content-length: 0\r\n\r\n"),
    ];
    let answers = tokio::task::spawn_blocking(move || {
        requests
            .iter()
            .map(|r| exchange(port, r))
            .collect::<Vec<_>>()
    })
    .await
    .expect("the client ran");
    for (status, text) in &answers {
        assert!(
            *status == 403 || *status == 400,
            "not refused: {status}\n{text}"
        );
        assert!(!holds_key(text), "{text}");
    }
    assert!(api.requests().is_empty(), "{:?}", api.requests());
    assert_eq!(proxy.tally().forwarded(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_without_the_stand_in_is_refused() {
    let s = Setup::new();
    let api = FakeApi::start(s.path(), false);
    let proxy = proxy_to(&api);
    let (port, stand_in) = (proxy.port(), proxy.stand_ins()[0].1.as_str().to_owned());
    let own = format!("127.0.0.1:{port}");
    let body = r#"{"model":"m","messages":[]}"#;
    let requests: Vec<String> = [
        String::new(),
        "x-api-key: sk-ant-api03-someone-elses\r\n".to_owned(),
        format!("x-api-key: {}\r\n", stand_in.to_uppercase()),
        format!("authorization: Basic {stand_in}\r\n"),
        format!("x-api-key: {stand_in}\r\nauthorization: Bearer sk-other\r\n"),
    ]
    .iter()
    .map(|auth| post("/v1/messages", &own, auth, body))
    .collect();
    let answers = tokio::task::spawn_blocking(move || {
        requests
            .iter()
            .map(|r| exchange(port, r))
            .collect::<Vec<_>>()
    })
    .await
    .expect("the client ran");
    for (status, text) in &answers {
        assert_eq!(*status, 401, "{text}");
        assert!(!holds_key(text), "{text}");
    }
    assert!(api.requests().is_empty(), "{:?}", api.requests());
}

/// The stand-in is swapped in the authentication header only: in the body, the query and
/// another header it reaches the API as it was sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stand_in_anywhere_but_the_authentication_header_stays_a_stand_in() {
    let s = Setup::new();
    let api = FakeApi::start(s.path(), false);
    let proxy = proxy_to(&api);
    let (port, stand_in) = (proxy.port(), proxy.stand_ins()[0].1.as_str().to_owned());
    let own = format!("127.0.0.1:{port}");
    let body = serde_json::json!({
        "model": "m",
        "messages": [{"role": "user", "content": format!("Repeat this: {stand_in}")}],
    })
    .to_string();
    let request = post(
        &format!("/v1/messages?note={stand_in}"),
        &own,
        &format!("x-api-key: {stand_in}\r\nx-note: {stand_in}\r\n"),
        &body,
    );
    let (status, answer) = tokio::task::spawn_blocking(move || exchange(port, &request))
        .await
        .expect("the client ran");
    assert_eq!(status, 200, "{answer}");
    let seen = api.requests().pop().expect("forwarded");
    assert_eq!(api.credentials(), [KEY]);
    let mut without_auth = seen.clone();
    without_auth["headers"] = Value::Array(
        seen["headers"]
            .as_array()
            .expect("headers")
            .iter()
            .filter(|h| {
                h[0].as_str()
                    .is_some_and(|n| !n.eq_ignore_ascii_case("x-api-key"))
            })
            .cloned()
            .collect(),
    );
    let rest = without_auth.to_string();
    assert!(
        !rest.contains(KEY),
        "the key went beyond its header: {rest}"
    );
    assert_eq!(rest.matches(&stand_in).count(), 3, "{rest}");
    assert!(!holds_key(&answer), "{answer}");
}

/// The fake API sends its first event and holds the rest until the test opens its gate: the
/// client must read the first event before that, through the proxy.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streamed_answer_passes_event_by_event() {
    let s = Setup::new();
    let mut api = FakeApi::start(s.path(), true);
    let proxy = proxy_to(&api);
    streams_event_by_event(&mut api, &proxy).await;
}

/// A streamed request through `proxy`: its first event must reach the client before `api`'s
/// gate opens.
async fn streams_event_by_event(api: &mut FakeApi, proxy: &ModelProxy) {
    let (port, stand_in) = (proxy.port(), proxy.stand_ins()[0].1.as_str().to_owned());
    let own = format!("127.0.0.1:{port}");
    let request = post(
        "/v1/messages",
        &own,
        &format!("x-api-key: {stand_in}\r\n"),
        r#"{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}"#,
    );
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("the proxy listens");
    // A bound on a failure, not a synchronisation: a proxy that buffers never sends the first
    // event before the gate opens.
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .expect("timeout");
    let (first, stream) = tokio::task::spawn_blocking(move || {
        stream.write_all(request.as_bytes()).expect("sent");
        let mut seen = Vec::new();
        let mut buf = [0u8; 4096];
        while !String::from_utf8_lossy(&seen).contains("message_start") {
            match stream.read(&mut buf) {
                Ok(0) => panic!("closed before the first event"),
                Ok(n) => seen.extend_from_slice(&buf[..n]),
                Err(e) => panic!(
                    "no first event before the rest was released ({e}): the proxy buffers\n{}",
                    String::from_utf8_lossy(&seen)
                ),
            }
        }
        (String::from_utf8_lossy(&seen).into_owned(), stream)
    })
    .await
    .expect("the client ran");
    assert!(!first.contains("message_stop"), "{first}");
    api.open_gate();
    let rest = tokio::task::spawn_blocking(move || {
        let mut stream = stream;
        let mut rest = Vec::new();
        let mut buf = [0u8; 4096];
        while !String::from_utf8_lossy(&rest).contains("message_stop") {
            match stream.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => rest.extend_from_slice(&buf[..n]),
                Err(e) => panic!("the rest never came: {e}"),
            }
        }
        String::from_utf8_lossy(&rest).into_owned()
    })
    .await
    .expect("the client ran");
    assert!(rest.contains("message_stop"), "{rest}");
}

/// What the proxy reports (its summary, its refusals, an unreachable API) names no key.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_the_proxy_reports_holds_the_key() {
    let s = Setup::new();
    let api = FakeApi::start(s.path(), false);
    let proxy = proxy_to(&api);
    drop(api); // the API goes away: the proxy cannot reach it
    let (port, stand_in) = (proxy.port(), proxy.stand_ins()[0].1.as_str().to_owned());
    let own = format!("127.0.0.1:{port}");
    let requests = [
        post(
            "/v1/messages",
            &own,
            &format!("x-api-key: {stand_in}\r\n"),
            "{}",
        ),
        post("/v1/messages", &own, &format!("x-api-key: {KEY}\r\n"), "{}"),
        post("/v1/messages", "evil.example", "", "{}"),
    ];
    let answers = tokio::task::spawn_blocking(move || {
        requests
            .iter()
            .map(|r| exchange(port, r))
            .collect::<Vec<_>>()
    })
    .await
    .expect("the client ran");
    assert_eq!(answers[0].0, 502, "{}", answers[0].1);
    for (_, text) in &answers {
        assert!(!holds_key(text), "{text}");
        assert!(!text.contains(&stand_in), "{text}");
    }
    let summary = proxy.summary().to_string();
    assert!(summary.contains("refused 2"), "{summary}");
    assert!(summary.contains("1 could not reach it"), "{summary}");
    assert!(
        !holds_key(&summary) && !summary.contains(&stand_in),
        "{summary}"
    );
    assert!(
        !format!("{proxy:?}").contains(&stand_in),
        "{proxy:?} shows the stand-in"
    );
}

/// Landlock's network rules, or a line saying they could not be tested here.
fn landlock_network() -> bool {
    let abi = confine::kernel().landlock_abi;
    if abi >= confine::ABI_NETWORK {
        return true;
    }
    skip::skipped(&format!(
        "layer not tested: Landlock network rules (ABI {}; this kernel has {abi})",
        confine::ABI_NETWORK
    ));
    false
}

/// A CLI that ignores its base URL and dials out itself reaches nothing: neither its vendor's
/// port 443 nor another loopback service. Its only network is the proxy's port.
#[tokio::test]
async fn a_cli_that_ignores_the_base_url_reaches_nothing() {
    if !landlock_network() {
        return;
    }
    let s = Setup::new();
    let api = FakeApi::start(s.path(), false);
    // A loopback service the CLI could reach if it had the network.
    let service = std::net::TcpListener::bind(("127.0.0.1", 0)).expect("bind");
    let service = format!("127.0.0.1:{}", service.local_addr().expect("addr").port());
    for (n, target) in [
        "127.0.0.1:443".to_owned(),
        service,
        api.url()[7..].to_owned(),
    ]
    .iter()
    .enumerate()
    {
        let mut spec = s.fake(ModelCli::Claude, "ok", &api);
        spec.env.push(("FAKE_DIRECT".into(), target.clone()));
        let r = review(&spec, &s.path().join(format!("work-{n}")), None, true).await;
        let direct = r
            .spied()
            .into_iter()
            .find(|c| c.get("direct").is_some())
            .unwrap_or_else(|| panic!("the CLI never tried: {:?}", r.lines));
        assert_eq!(
            direct["outcome"], "refused: Permission denied",
            "{target}: {direct}"
        );
        // Through the proxy it still reviewed.
        r.outcome();
    }
}

/// A real CLI, from the variable `.ci/run` sets; a line saying it is missing, or under
/// `CI=true` a failure.
fn real_cli(var: &str) -> Option<PathBuf> {
    match std::env::var_os(var).map(PathBuf::from) {
        Some(p) if p.is_file() => Some(p),
        other => {
            skip::skipped(&format!(
                "real CLI not tested: {var} is {} (.ci/run installs it)",
                other.map_or("not set".to_owned(), |p| format!(
                    "{}, not a file",
                    p.display()
                ))
            ));
            None
        }
    }
}

/// The real CLI reviews through the proxy, confined, then resumes its session: the fake API
/// sees the key on every request and the earlier turn in the second review; nothing the CLI
/// had or left holds the key.
async fn real_cli_reviews_and_resumes(cli: ModelCli, program: PathBuf) {
    let s = Setup::new();
    let api = FakeApi::start(s.path(), false);
    let mut spec = ModelReviewer::new(cli, s.path().join("ws"));
    spec.program = program.to_string_lossy().into_owned();
    let (var, path) = base_url_var(cli);
    spec.env = vec![(var.into(), format!("{}{path}", api.url()))];
    spec.secret_env = vec![SecretEnv::one(
        credential_of(cli),
        "model-key",
        SecretValue::from(KEY),
    )];
    spec.timeout = Some(Duration::from_secs(240));
    spec.tries = 1;
    let first = review(&spec, &s.path().join("w1"), None, true).await;
    let outcome = first.outcome();
    assert!(!outcome.resumed);
    assert!(
        outcome.comment.contains("it saw 0 earlier answers"),
        "{}",
        outcome.comment
    );
    let session = outcome.conversation.clone().expect("a session");
    let kept = s
        .path()
        .join("kept")
        .join(session.file_name().expect("a name"));
    std::fs::create_dir_all(kept.parent().expect("a parent")).expect("mkdir");
    std::fs::copy(&session, &kept).expect("kept");

    let second = review(&spec, &s.path().join("w2"), Some(kept), true).await;
    let outcome = second.outcome();
    assert!(outcome.resumed, "{:?}", second.lines);
    assert!(
        !outcome.comment.contains("it saw 0 earlier"),
        "the API saw the earlier turn: {}",
        outcome.comment
    );
    let credentials = api.credentials();
    assert!(!credentials.is_empty());
    for c in &credentials {
        assert!(c == KEY || *c == format!("Bearer {KEY}"), "{c}");
    }
    for work in ["w1", "w2"] {
        assert_no_file_holds_the_key(&s.path().join(work));
    }
    for line in first.lines.iter().chain(&second.lines) {
        assert!(!holds_key(line), "{line}");
    }
}

#[tokio::test]
async fn the_real_claude_code_reviews_and_resumes_through_the_proxy() {
    if let Some(program) = real_cli("REVIEWFLOW_CLAUDE_CODE") {
        real_cli_reviews_and_resumes(ModelCli::Claude, program).await;
    }
}

#[tokio::test]
async fn the_real_codex_reviews_and_resumes_through_the_proxy() {
    if let Some(program) = real_cli("REVIEWFLOW_CODEX") {
        real_cli_reviews_and_resumes(ModelCli::Codex, program).await;
    }
}

/// Two accounts of one key: the first past its limit at the fake API.
const FIRST: &str = "sk-ant-api03-first-account-0123456789abcdefghij";
const SECOND: &str = "sk-ant-api03-second-account-0123456789abcdefgh";

fn holds_an_account(text: &str) -> bool {
    text.contains(FIRST) || text.contains(SECOND)
}

fn accounts() -> Vec<Account> {
    vec![
        Account::new("anthropic-first", SecretValue::from(FIRST)),
        Account::new("anthropic-second", SecretValue::from(SECOND)),
    ]
}

/// The API answers the first account 429: the proxy sends the same request again with the
/// second before passing anything back, and keeps to the second from then on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_refused_for_an_accounts_limit_is_sent_again_with_the_next() {
    let s = Setup::new();
    let api = FakeApi::limiting(s.path(), false, &[FIRST]);
    let pool = Arc::new(AccountPool::new(accounts()));
    let proxy = ModelProxy::start(
        Upstream::parse(&api.url()).expect("a loopback URL"),
        &[("ANTHROPIC_API_KEY".into(), Arc::clone(&pool))],
    )
    .expect("the proxy starts");
    let (port, stand_in) = (proxy.port(), proxy.stand_ins()[0].1.as_str().to_owned());
    let own = format!("127.0.0.1:{port}");
    let body = r#"{"model":"m","messages":[{"role":"user","content":"hi"}]}"#;
    let request = post(
        "/v1/messages",
        &own,
        &format!("x-api-key: {stand_in}\r\n"),
        body,
    );
    let again = request.clone();
    let (first, second) =
        tokio::task::spawn_blocking(move || (exchange(port, &request), exchange(port, &again)))
            .await
            .expect("the client ran");
    for (status, text) in [&first, &second] {
        assert_eq!(*status, 200, "{text}");
        assert!(text.contains("The fake model API reviewed this"), "{text}");
        assert!(!holds_an_account(text), "{text}");
    }
    assert_eq!(
        api.credentials(),
        [FIRST, SECOND, SECOND],
        "refused once with the first account, then the second only"
    );
    // The request went again whole: the API got the same body both times.
    let bodies: Vec<Value> = api.requests().iter().map(|r| r["body"].clone()).collect();
    assert_eq!(bodies[0], bodies[1]);
    assert_eq!(pool.answered_by(), Some("anthropic-second"));
    assert!(!pool.is_exhausted());
    assert_eq!(proxy.tally().limited(), 1);
    let summary = proxy.summary().to_string();
    assert!(
        summary.contains("rate or usage limit (HTTP 429)"),
        "{summary}"
    );
    assert!(!holds_an_account(&summary), "{summary}");
}

/// Every account past its limit: the last 429 reaches the client, and a later request is
/// answered 429 by the proxy itself, naming the accounts and forwarding nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn when_every_account_is_limited_the_proxy_says_so_and_forwards_nothing_more() {
    let s = Setup::new();
    let api = FakeApi::limiting(s.path(), false, &[FIRST, SECOND]);
    let pool = Arc::new(AccountPool::new(accounts()));
    let proxy = ModelProxy::start(
        Upstream::parse(&api.url()).expect("a loopback URL"),
        &[("ANTHROPIC_API_KEY".into(), Arc::clone(&pool))],
    )
    .expect("the proxy starts");
    let (port, stand_in) = (proxy.port(), proxy.stand_ins()[0].1.as_str().to_owned());
    let request = post(
        "/v1/messages",
        &format!("127.0.0.1:{port}"),
        &format!("x-api-key: {stand_in}\r\n"),
        r#"{"model":"m","messages":[]}"#,
    );
    let again = request.clone();
    let (first, later) =
        tokio::task::spawn_blocking(move || (exchange(port, &request), exchange(port, &again)))
            .await
            .expect("the client ran");
    assert_eq!(first.0, 429, "{}", first.1);
    assert!(first.1.contains("rate_limit_error"), "{}", first.1);
    assert_eq!(later.0, 429, "{}", later.1);
    assert!(
        later
            .1
            .contains("every account has reached its rate or usage limit (`anthropic-first` and `anthropic-second`)"),
        "{}",
        later.1
    );
    assert_eq!(api.credentials(), [FIRST, SECOND], "nothing more was sent");
    assert!(pool.is_exhausted());
    for (_, text) in [&first, &later] {
        assert!(!holds_an_account(text), "{text}");
    }
}

/// A review by the fake Claude Code through the proxy, given two accounts, the first limited:
/// the API sees the second key, the CLI neither (only its stand-in), and the outcome names the
/// second account by its secret's name.
#[tokio::test]
async fn a_review_whose_first_account_is_limited_is_made_with_the_second() {
    let s = Setup::new();
    let api = FakeApi::limiting(s.path(), false, &[FIRST]);
    let mut spec = s.fake(ModelCli::Claude, "ok", &api);
    spec.secret_env = vec![SecretEnv::new("ANTHROPIC_API_KEY", accounts())];
    let r = review(&spec, &s.path().join("work"), None, false).await;
    let outcome = r.outcome();
    assert!(
        outcome.comment.contains("The fake model API reviewed this"),
        "{}",
        outcome.comment
    );
    let credentials = api.credentials();
    assert_eq!(credentials.first().map(String::as_str), Some(FIRST));
    assert!(
        credentials[1..].iter().all(|c| c == SECOND) && credentials.len() > 1,
        "{credentials:?}"
    );
    let account = outcome
        .facts
        .iter()
        .find(|(k, _)| k == "reviewer.account")
        .map(|(_, v)| v.as_str());
    assert_eq!(account, Some("anthropic-second"));
    assert!(
        r.lines.iter().any(|l| l
            == "try 1: `anthropic-first` has reached its rate or usage limit (HTTP 429): `anthropic-second` from here on"),
        "{:?}",
        r.lines
    );
    let spied = r.spied();
    assert!(!spied.is_empty(), "{:?}", r.lines);
    for call in &spied {
        let env = call["env"].to_string();
        assert!(!holds_an_account(&env), "the CLI held a key: {env}");
    }
    for line in &r.lines {
        assert!(!holds_an_account(line), "{line}");
    }
    assert_no_account_in(&s.path().join("work"));
}

fn assert_no_account_in(dir: &Path) {
    for (path, bytes) in files_under(dir) {
        assert!(
            !holds_an_account(&String::from_utf8_lossy(&bytes)),
            "{} holds a key",
            path.display()
        );
    }
}

/// Both accounts limited: the try fails naming them, and no other try runs (none would have
/// an account left), though the stage allows two.
#[tokio::test]
async fn when_every_account_is_limited_the_review_fails_naming_them() {
    let s = Setup::new();
    let api = FakeApi::limiting(s.path(), false, &[FIRST, SECOND]);
    let mut spec = s.fake(ModelCli::Claude, "ok", &api);
    spec.secret_env = vec![SecretEnv::new("ANTHROPIC_API_KEY", accounts())];
    spec.tries = 2;
    let r = review(&spec, &s.path().join("work"), None, false).await;
    let error = match &r.result {
        Ok(o) => panic!("reviewed: {}", o.comment),
        Err(e) => e.to_string(),
    };
    assert!(
        error.contains(
            "every account has reached its rate or usage limit (HTTP 429): `anthropic-first` and `anthropic-second`"
        ),
        "{error}\n{}",
        r.lines.join("\n")
    );
    assert!(
        r.lines.iter().any(|l| l.ends_with("no further try")),
        "{:?}",
        r.lines
    );
    assert!(
        !r.lines.iter().any(|l| l.contains("another fresh review")),
        "{:?}",
        r.lines
    );
    assert_eq!(api.credentials(), [FIRST, SECOND]);
    assert!(!holds_an_account(&error), "{error}");
}

/// The answer of a request sent again with the next account still streams event by event.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streamed_answer_after_a_switch_of_account_passes_event_by_event() {
    let s = Setup::new();
    let mut api = FakeApi::limiting(s.path(), true, &[FIRST]);
    let pool = Arc::new(AccountPool::new(accounts()));
    let proxy = ModelProxy::start(
        Upstream::parse(&api.url()).expect("a loopback URL"),
        &[("ANTHROPIC_API_KEY".into(), Arc::clone(&pool))],
    )
    .expect("the proxy starts");
    streams_event_by_event(&mut api, &proxy).await;
    assert_eq!(api.credentials(), [FIRST, SECOND]);
}

/// A `command` reviewer given its model key's accounts under the key's variable gets the same
/// switch: the program holds a stand-in, the API sees the second account after the first's 429.
#[tokio::test]
async fn a_command_reviewers_accounts_switch_as_a_model_reviewers() {
    let s = Setup::new();
    let api = FakeApi::limiting(s.path(), false, &[FIRST]);
    let program = fakes().join("api-reviewer").to_string_lossy().into_owned();
    let mut spec = CommandReviewer::new(vec![program], s.path().join("ws"));
    spec.env = vec![
        (
            "PATH".into(),
            format!("{}:/usr/local/bin:/usr/bin:/bin", fakes().display()),
        ),
        ("ANTHROPIC_BASE_URL".into(), api.url()),
        ("FAKE_SPY_FILE".into(), "stderr:FAKE-SPY".into()),
    ];
    spec.secret_env = vec![SecretEnv::new("ANTHROPIC_API_KEY", accounts())];
    spec.tries = 1;
    spec.timeout = Some(Duration::from_secs(60));
    let mut lines = Vec::new();
    let inputs = vec![ReviewInput::untrusted("gather.diff", DIFF.to_vec())];
    let result = run_command_reviewer(
        &spec,
        &inputs,
        None,
        &s.path().join("work"),
        &Redactor::empty(),
        std::future::pending(),
        |e| match e {
            ReviewEvent::Status(s) => lines.push(s),
            ReviewEvent::Output { line, .. } => lines.push(line),
        },
    )
    .await;
    let r = Reviewed { result, lines };
    let outcome = r.outcome();
    assert!(
        outcome.comment.contains("The fake model API reviewed this"),
        "{}",
        outcome.comment
    );
    assert_eq!(api.credentials(), [FIRST, SECOND]);
    let account = outcome
        .facts
        .iter()
        .find(|(k, _)| k == "reviewer.account")
        .map(|(_, v)| v.as_str());
    assert_eq!(account, Some("anthropic-second"));
    let env = r.spied().pop().expect("a spy line")["env"].to_string();
    assert!(!holds_an_account(&env), "the program held a key: {env}");
    assert!(env.contains("reviewflow-"), "{env}");
}

//! The model reviewers: `claude` (Claude Code) and `codex` (Codex), driven exactly as those CLIs
//! behave (see `docs/reviewers.md`).
//!
//! Each try gets a folder of its own holding a private `HOME` (and, for Codex, `CODEX_HOME`).
//! A resumed try copies the restored session into it where the CLI looks for sessions, so the
//! restored original stays whole whatever the try does. The CLI runs in the checkout, from a
//! cleared environment (PATH, the try's HOME, a locale, its own credential and what the stage
//! declares), with the prompt on stdin, confined like every child of the stage. It never holds
//! its key: each try starts a [`ModelProxy`](super::proxy::ModelProxy) on loopback, and the
//! CLI gets a stand-in where the key would be and the proxy as its API ([`provider`]); the
//! proxy's port is the only one it adds to what the stage declares.
//! The answer ends with a findings block ([`answer`]); the session the CLI wrote is the
//! conversation kept.

mod answer;
mod claude;
mod codex;
mod home;
mod provider;

use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use reviewflow_engine::exec::confine;
use reviewflow_engine::exec::process::{self, ChildSpec, DEFAULT_GRACE, Outcome, Stdin, Stream};
use reviewflow_engine::exec::redact::Redactor;

use crate::reviewer::kinds::ModelCli;
use crate::reviewer::proxy::{AccountPool, account_fact, any_exhausted, limited_accounts};
use crate::reviewer::secret_env::SecretEnv;

pub use answer::{Answer, AnswerError, FINDINGS_FENCE, parse_answer};
pub use home::encode_project_dir;

use super::command::Fused;
use super::conversation::Conversation;
use super::cost::{Budget, Spend};
use super::error::ReviewerError;
use super::outcome::{ReviewEvent, ReviewInput, ReviewOutcome};
use super::program::{ReviewerPath, locate};
use super::prompt::{Nonce, build_prompt, build_resumed_prompt};
use super::result::ReviewFinding;
use super::tries::{Attempt, DEFAULT_TRIES, Reviewed, TryFailure, TryKind, TrySequence};
use super::try_folder::check_input_names;
use super::usage::Usage;
use home::TryHome;

/// The default instructions of a fresh review.
pub const DEFAULT_PROMPT: &str = include_str!("prompts/review.md");
/// The default instructions of a review that resumes an earlier one (a later push).
pub const DEFAULT_LATER_PROMPT: &str = include_str!("prompts/later.md");
/// The answer format, appended to every fresh prompt (not overridable: the answer is parsed).
pub const ANSWER_FORMAT: &str = include_str!("prompts/answer.md");
/// What a resumed prompt says of the answer, which its conversation already holds in full.
pub const ANSWER_REMINDER: &str = "Answer as before, ending with one ```reviewflow-findings block.";
/// What a reviewer given the author's refutations is asked to decide, and how to write it:
/// added to the instructions when there is a refutation to decide on.
pub const DECISIONS_FORMAT: &str = include_str!("prompts/decisions.md");

/// Stdout kept from a CLI: Claude's one JSON result, Codex's events (the answer itself comes
/// from a file).
const MAX_STDOUT: usize = 4 * 1024 * 1024;
/// How long `--version` may take.
const VERSION_TIMEOUT: Duration = Duration::from_secs(30);

/// What a model reviewer may do besides reading.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Access {
    /// Read files only: no shell, no edits, no web (the default).
    #[default]
    ReadOnly,
    /// Shell and edits (in its sandbox): only for trusted input.
    Write,
}

/// How to run a model reviewer. `Debug` shows no secret.
#[derive(Clone, Debug)]
pub struct ModelReviewer {
    pub cli: ModelCli,
    /// The program: `claude`/`codex` looked up in PATH, or a path.
    pub program: String,
    /// The model asked for (`--model`); `None` lets the CLI choose.
    pub model: Option<String>,
    pub access: Access,
    /// Claude's `--max-turns`.
    pub max_turns: u32,
    /// Instructions of a fresh review.
    pub instructions: String,
    /// Instructions of a resumed review.
    pub later_instructions: String,
    /// The workspace the CLI runs in (the checkout under review).
    pub cwd: PathBuf,
    /// Declared, non-secret variables (a `PATH` here replaces [`ModelReviewer::path`]).
    pub env: Vec<(String, String)>,
    /// The child's `PATH` when none is declared; `None`: the minimal one.
    pub path: Option<String>,
    /// Folders the CLI may read besides the checkout and the system (an exported workspace).
    pub readable: Vec<PathBuf>,
    /// The credential (and only it: [`ModelCli::credentials`]), each line's secrets the
    /// accounts tried in order. The CLI never gets them: the try's proxy does, and the CLI a
    /// stand-in.
    pub secret_env: Vec<SecretEnv>,
    /// Limit of each try besides its share of [`Self::deadline`]; `None` for none.
    pub timeout: Option<Duration>,
    /// When the stage's timeout ends: the tries share the time up to it
    /// ([`crate::reviewer::budget`]); `None` for no stage timeout.
    pub deadline: Option<std::time::Instant>,
    pub grace: Duration,
    pub tries: u32,
    /// The most the tries may spend ([`crate::reviewer::cost`]).
    pub budget: Budget,
    /// What the change spent before this run, against [`Self::budget`]'s change limits.
    pub spent_before: Usage,
}

impl ModelReviewer {
    /// A reviewer with the default prompts, read-only, 2 tries, no timeout.
    pub fn new(cli: ModelCli, cwd: impl Into<PathBuf>) -> Self {
        Self {
            cli,
            program: cli.name().to_owned(),
            model: None,
            access: Access::ReadOnly,
            max_turns: 30,
            instructions: DEFAULT_PROMPT.to_owned(),
            later_instructions: DEFAULT_LATER_PROMPT.to_owned(),
            cwd: cwd.into(),
            env: Vec::new(),
            path: None,
            readable: Vec::new(),
            secret_env: Vec::new(),
            timeout: None,
            deadline: None,
            grace: DEFAULT_GRACE,
            tries: DEFAULT_TRIES,
            budget: Budget::default(),
            spent_before: Usage::nothing(),
        }
    }

    fn check(&self) -> Result<(), ReviewerError> {
        if self.secret_env.is_empty() {
            // The CLI runs with a private HOME: a login on the machine is never seen.
            return Err(ReviewerError::settings(format!(
                "the `{}` reviewer has no credential: declare a secret and give it with \
                 `secret-env \"{}\" \"<secret>\"` (its CLI runs with a private HOME, so a login \
                 on this machine is not used)",
                self.cli.name(),
                self.cli.credentials().first().copied().unwrap_or("…")
            )));
        }
        for line in &self.secret_env {
            let name = &line.var;
            if line.accounts.is_empty() {
                return Err(ReviewerError::settings(format!(
                    "{name} is given no secret"
                )));
            }
            if !self.cli.credentials().contains(&name.as_str()) {
                return Err(ReviewerError::settings(format!(
                    "the `{}` reviewer takes only its credential as a secret ({}), not {name}",
                    self.cli.name(),
                    self.cli.credentials().join(" or ")
                )));
            }
        }
        // A declared base URL names the proxy's upstream: refused here, before anything runs,
        // when it cannot be one.
        provider::upstream(self).map_err(ReviewerError::settings)?;
        for (name, _) in &self.env {
            if let Some(why) = super::declared_env::refusal(self.cli.name(), name) {
                return Err(ReviewerError::settings(why));
            }
        }
        Ok(())
    }
}

/// What the CLI reported about a successful try.
#[derive(Debug)]
pub(crate) struct CliReview {
    /// The answer text.
    pub text: String,
    /// The session the CLI wrote (in the try's home).
    pub session: PathBuf,
    pub session_id: String,
    /// The model that answered, when the CLI says.
    pub model: Option<String>,
    /// True when the CLI continued the session it was asked to resume.
    pub resumed: bool,
}

struct TryReview {
    answer: Answer,
    cli: CliReview,
}

impl Reviewed for TryReview {
    fn resumed(&self) -> bool {
        self.cli.resumed
    }
}

#[derive(Debug, thiserror::Error)]
enum TryError {
    #[error("{0}")]
    Prepare(String),
    #[error("the reviewer cannot be started: {0}")]
    Start(#[from] process::ProcessError),
    // No words of the program's own: a reason is kept in the manifest and the events log and
    // published in a check run, while the program's output goes to the console only.
    #[error("exited with status {code} (its standard error is in the log)")]
    Exit { code: i32 },
    #[error("killed by signal {signal} (its standard error is in the log)")]
    Signalled { signal: i32 },
    #[error("timed out after {}", crate::reviewer::budget::say(*after))]
    TimedOut { after: Duration },
    #[error("cancelled")]
    Cancelled,
    #[error("{0}")]
    Output(String),
    #[error("no review: {0}")]
    Answer(#[from] AnswerError),
    // Names the secrets, never a key: the accounts are skipped for the run, so no later try
    // would fare better.
    #[error("every account has reached its rate or usage limit (HTTP 429): {0}")]
    Limited(String),
    #[error("stopped: the try reached the tokens its budget left")]
    BudgetSpent,
}

impl TryFailure for TryError {
    fn is_cancelled(&self) -> bool {
        matches!(self, TryError::Cancelled)
    }

    fn ends_tries(&self) -> bool {
        matches!(self, TryError::Limited(_) | TryError::BudgetSpent)
    }
}

/// Runs a model reviewer: up to `spec.tries` tries, the first resuming `resume`. `inputs` are
/// given to a fresh try; `later_inputs`, when not empty, replace them on a resumed try (the diff
/// since the last review instead of the whole change).
#[allow(clippy::too_many_arguments)]
pub async fn run_model_reviewer<C, E>(
    spec: &ModelReviewer,
    inputs: &[ReviewInput],
    later_inputs: &[ReviewInput],
    resume: Option<Conversation>,
    workdir: &Path,
    redactor: &Redactor,
    cancel: C,
    mut on_event: E,
) -> Result<ReviewOutcome, ReviewerError>
where
    C: Future<Output = ()>,
    E: FnMut(ReviewEvent),
{
    spec.check()?;
    check_input_names(inputs).map_err(ReviewerError::settings)?;
    check_input_names(later_inputs).map_err(ReviewerError::settings)?;
    let workdir = std::path::absolute(workdir).map_err(|e| {
        ReviewerError::settings(format!("the work folder {}: {e}", workdir.display()))
    })?;
    // The CLI finds sessions by the physical path of its working directory.
    let cwd = std::fs::canonicalize(&spec.cwd).map_err(|e| {
        ReviewerError::settings(format!("the workspace {}: {e}", spec.cwd.display()))
    })?;
    // A CLI that is not installed is said once, with the fix: no try would find it.
    {
        let (program, cwd, path) = (spec.program.clone(), cwd.clone(), child_path(spec));
        tokio::task::spawn_blocking(move || locate(&program, &cwd, &path))
            .await
            .map_err(|e| ReviewerError::settings(format!("the program's look-up failed: {e}")))??;
    }
    let mut cancel = Fused::new(cancel);
    let mut facts = vec![("reviewer.cli".to_owned(), spec.cli.name().to_owned())];
    // Where its proxy forwards: the vendor's API, or the one the stage declares.
    if let Ok(upstream) = provider::upstream(spec) {
        facts.push(("reviewer.api".to_owned(), upstream.to_string()));
    }
    if let Some(version) = cli_version(spec, &cwd, &workdir, redactor).await {
        facts.push(("reviewer.cli-version".to_owned(), version));
    }

    // The accounts live across the tries: one skipped for its limit stays skipped.
    let pools = provider::pools(spec);
    let budget = crate::reviewer::budget::TryBudget::new(spec.deadline, spec.timeout, spec.grace);
    let mut spend = Spend::new(spec.budget, spec.spent_before);
    let mut sequence = TrySequence::new(spec.tries, resume);
    while let Some(attempt) =
        spend.next_attempt(&mut sequence, &mut |l| on_event(ReviewEvent::Status(l)))?
    {
        let timeout = budget.next(sequence.left());
        let given = if attempt.kind == TryKind::Resumed && !later_inputs.is_empty() {
            later_inputs
        } else {
            inputs
        };
        let mut usage = None;
        let result = one_try(
            spec,
            &pools,
            timeout,
            (spend.tokens_left(), &mut usage),
            given,
            &attempt,
            &cwd,
            &workdir,
            redactor,
            &mut cancel,
            &mut on_event,
        )
        .await;
        let review = spend.record(&mut sequence, &attempt, result, usage, &mut |l| {
            on_event(ReviewEvent::Status(l));
        });
        if let Some(review) = review {
            let suggestions = review
                .answer
                .findings
                .iter()
                .filter(|f| f.suggestion.is_some())
                .count();
            let findings: Vec<ReviewFinding> = review
                .answer
                .findings
                .into_iter()
                .map(|f| ReviewFinding {
                    path: redact(redactor, &f.path),
                    rule: f.rule.map(|r| redact(redactor, &r)),
                    message: redact(redactor, &f.message),
                    // A fix with a hole in it is no fix: a suggestion redaction would change is
                    // removed whole, never published with its marker in the code.
                    suggestion: f.suggestion.filter(|s| redact(redactor, s) == *s),
                    ..f
                })
                .collect();
            let unsuggested =
                suggestions - findings.iter().filter(|f| f.suggestion.is_some()).count();
            if unsuggested > 0 {
                on_event(ReviewEvent::Status(format!(
                    "{unsuggested} {} removed: they held a secret of the run or what looks like a credential (the findings are kept)",
                    if unsuggested == 1 {
                        "suggested fix"
                    } else {
                        "suggested fixes"
                    }
                )));
            }
            if let Some(model) = &review.cli.model {
                facts.push(("reviewer.model".to_owned(), model.clone()));
            }
            if let Some(asked) = &spec.model {
                facts.push(("reviewer.model-asked".to_owned(), asked.clone()));
            }
            facts.push(("reviewer.session".to_owned(), review.cli.session_id.clone()));
            let decisions = review
                .answer
                .decisions
                .into_iter()
                .map(|d| crate::forge::Decision {
                    reason: redact(redactor, &d.reason),
                    ..d
                })
                .collect();
            if let Some(account) = account_fact(&pools) {
                facts.push(("reviewer.account".to_owned(), account));
            }
            return Ok(ReviewOutcome {
                decisions,
                comment: redact(redactor, &review.answer.comment),
                clean: findings.is_empty(),
                findings,
                conversation: Some(review.cli.session),
                commented: true,
                resumed: attempt.kind == TryKind::Resumed,
                tries: sequence.reports().to_vec(),
                facts,
            });
        }
    }
    Err(sequence.into_not_reviewed().into())
}

/// `text` redacted of the run's secrets and of anything a credential detector matches: a
/// model quotes what it read, and the comment and findings are published.
fn redact(redactor: &Redactor, text: &str) -> String {
    let text = String::from_utf8_lossy(&redactor.redact(text.as_bytes())).into_owned();
    mask_credentials(&text)
}

/// Every credential-shaped match in `text` replaced by `[credential removed]`.
pub fn mask_credentials(text: &str) -> String {
    use crate::detect::{DetectorId, scan};
    let enabled: Vec<DetectorId> = DetectorId::ALL
        .into_iter()
        .filter(|d| *d != DetectorId::SecretValue)
        .collect();
    let hits = scan(text.as_bytes(), &[], &enabled);
    if hits.is_empty() {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for hit in hits {
        let (start, end) = (hit.byte_range.start.max(at), hit.byte_range.end);
        if end <= start {
            continue;
        }
        // Detectors match ASCII tokens; on a non-boundary, widen to the next boundary.
        let start = (start..=text.len())
            .find(|&i| text.is_char_boundary(i))
            .unwrap_or(text.len());
        let end = (end..=text.len())
            .find(|&i| text.is_char_boundary(i))
            .unwrap_or(text.len());
        out.push_str(&text[at..start]);
        out.push_str("[credential removed]");
        at = end;
    }
    out.push_str(&text[at..]);
    out
}

/// The PATH of the child: the declared one, else the given one, else the minimal one.
fn child_path(spec: &ModelReviewer) -> ReviewerPath {
    ReviewerPath::of(&spec.env, spec.path.as_deref())
}

/// `path` without relative entries and without entries inside `checkout`: the change under
/// review must not supply the CLI.
pub fn trusted_path(path: &str, checkout: &Path) -> String {
    let checkout = std::fs::canonicalize(checkout).unwrap_or_else(|_| checkout.to_owned());
    path.split(':')
        .filter(|entry| {
            let p = Path::new(entry);
            p.is_absolute()
                && !p.starts_with(&checkout)
                && !std::fs::canonicalize(p).is_ok_and(|real| real.starts_with(&checkout))
        })
        .collect::<Vec<_>>()
        .join(":")
}

/// The environment every CLI child gets: PATH, the try's HOME, a locale and the declared
/// variables; no credential and no network ([`provider::point_at`] adds the proxy's).
fn base_child(spec: &ModelReviewer, cwd: &Path, home: &TryHome) -> ChildSpec {
    let mut child = ChildSpec::new(&spec.program, cwd);
    let text = |p: &Path| p.to_string_lossy().into_owned();
    child = child
        .env("PATH", child_path(spec).value)
        .env("HOME", text(&home.home))
        .env("LANG", "C.UTF-8");
    // A declared base URL is the proxy's upstream; the CLI gets the proxy's.
    let base_url_var = provider::api(spec.cli).map(|a| a.base_url_var).ok();
    for (name, value) in &spec.env {
        if name != "PATH" && name != "LANG" && Some(name.as_str()) != base_url_var {
            child = child.env(name.clone(), value.clone());
        }
    }
    child.grace = spec.grace;
    // Confined like every child of the stage, writing only in the try's folder.
    child.confine = confine::stage_confinement().map(|c| {
        spec.readable
            .iter()
            .fold(c.work(&home.root), |c, p| c.read(p))
    });
    child
}

/// `<cli> --version`, first line, when it answers.
async fn cli_version(
    spec: &ModelReviewer,
    cwd: &Path,
    workdir: &Path,
    redactor: &Redactor,
) -> Option<String> {
    let home = {
        let workdir = workdir.to_owned();
        let cli = spec.cli;
        tokio::task::spawn_blocking(move || TryHome::prepare(&workdir, "version", cli))
            .await
            .ok()?
            .ok()?
    };
    // Printing a version needs no credential and no network.
    let mut child = base_child(spec, cwd, &home).arg("--version");
    child.timeout = Some(VERSION_TIMEOUT);
    child.capture_stdout = Some(4096);
    let ran = process::run(child, redactor, std::future::pending(), |_, _| {})
        .await
        .ok()?;
    if ran.outcome != Outcome::Exited(0) {
        return None;
    }
    let text = String::from_utf8_lossy(&ran.stdout);
    let line: String = text
        .lines()
        .next()?
        .trim()
        .chars()
        .filter(|c| !c.is_control())
        .take(64)
        .collect();
    (!line.is_empty()).then_some(line)
}

/// The prompt of a try: a fresh one whole; a resumed one without what its conversation already
/// holds (the preamble and the answer format: docs/reviewers.md, "Prompts").
pub fn prompt_of(
    spec: &ModelReviewer,
    kind: TryKind,
    inputs: &[ReviewInput],
    nonce: &Nonce,
) -> String {
    match kind {
        TryKind::Resumed => {
            let instructions = format!(
                "{}\n\n{ANSWER_REMINDER}",
                spec.later_instructions.trim_end()
            );
            build_resumed_prompt(&instructions, inputs, nonce)
        }
        TryKind::Fresh => {
            let instructions = format!("{}\n\n{ANSWER_FORMAT}", spec.instructions.trim_end());
            build_prompt(&instructions, inputs, nonce)
        }
    }
}

#[allow(clippy::too_many_arguments)]
async fn one_try<C: Future<Output = ()>>(
    spec: &ModelReviewer,
    pools: &[(String, Arc<AccountPool>)],
    timeout: Option<Duration>,
    (tokens_left, usage): (Option<u64>, &mut Option<Usage>),
    inputs: &[ReviewInput],
    attempt: &Attempt,
    cwd: &Path,
    workdir: &Path,
    redactor: &Redactor,
    cancel: &mut Fused<C>,
    on_event: &mut impl FnMut(ReviewEvent),
) -> Result<TryReview, TryError> {
    let nonce = Nonce::generate().map_err(|e| TryError::Prepare(e.to_string()))?;
    let prompt = prompt_of(spec, attempt.kind, inputs, &nonce);

    // A private home per try; a resumed try gets a copy of the session where the CLI looks.
    let (home, resume_id) = {
        let (workdir, cwd, resume) = (workdir.to_owned(), cwd.to_owned(), attempt.resume.clone());
        let (cli, number) = (spec.cli, attempt.number);
        tokio::task::spawn_blocking(move || -> Result<_, String> {
            let home = TryHome::prepare(&workdir, &format!("try-{number}"), cli)
                .map_err(|e| format!("cannot prepare the try's home: {e}"))?;
            let id = match &resume {
                None => None,
                Some(c) => Some(match cli {
                    ModelCli::Claude => claude::place_session(&home, &cwd, &c.path)?,
                    ModelCli::Codex => codex::place_session(&home, &c.path)?,
                }),
            };
            Ok((home, id))
        })
        .await
        .map_err(|e| TryError::Prepare(e.to_string()))?
        .map_err(TryError::Prepare)?
    };

    // The try's proxy: the CLI's only way to its API, holding the key the CLI never sees.
    let proxy = provider::start_proxy(spec, pools).map_err(TryError::Prepare)?;
    let meter = Arc::clone(proxy.meter());
    meter.limit(tokens_left);
    let positions: Vec<usize> = pools.iter().map(|(_, p)| p.position()).collect();
    let mut child = provider::point_at(base_child(spec, cwd, &home), spec.cli, &home, &proxy)
        .map_err(TryError::Prepare)?;
    match spec.cli {
        ModelCli::Claude => {
            let id = home::uuid_v4().map_err(TryError::Prepare)?;
            child.args = claude::args(spec, resume_id.as_deref(), &id);
        }
        ModelCli::Codex => {
            child = child.env("CODEX_HOME", home.codex_home.to_string_lossy().into_owned());
            child.args = codex::args(spec, resume_id.as_deref(), &home.last_message);
        }
    }
    child.stdin = Stdin::Bytes(prompt.into_bytes());
    child.timeout = timeout;
    child.capture_stdout = Some(MAX_STDOUT);

    let number = attempt.number;
    // Once every account has reached its limit the CLI can only wait and retry: it is
    // stopped, and the try fails naming the accounts. So it is once the answers reach the
    // tokens the budget left.
    let stop = async {
        tokio::select! {
            () = &mut *cancel => {}
            () = any_exhausted(pools.iter().map(|(_, p)| &**p)) => {}
            () = meter.spent() => {}
        }
    };
    let ran = process::run(child, redactor, stop, |stream, line| {
        // Stdout is the CLI's machine output (kept, parsed below); stderr is for people.
        if stream == Stream::Stdout {
            return;
        }
        let line = String::from_utf8_lossy(&line).into_owned();
        on_event(ReviewEvent::Output {
            try_number: number,
            stream,
            line,
        });
    })
    .await?;
    // What the proxy refused, or could not forward, explains a try that went wrong; an
    // account's limit explains which account reviewed.
    let tally = proxy.tally();
    if tally.refused() > 0 || tally.failed() > 0 || tally.limited() > 0 {
        on_event(ReviewEvent::Status(format!(
            "try {number}: {}",
            proxy.summary()
        )));
    }
    for ((_, pool), from) in pools.iter().zip(positions) {
        if let Some(line) = pool.switched_since(from) {
            on_event(ReviewEvent::Status(format!("try {number}: {line}")));
        }
    }
    // What the try spent: what the CLI reports, and never less than its answers reported to
    // the proxy (a CLI stopped early reports nothing).
    *usage = Some(try_usage(spec.cli, &ran.stdout, &meter, tally.forwarded()));
    // The stand-in opens nothing from here on.
    drop(proxy);
    if ran.outcome != Outcome::Exited(0) && meter.is_spent() {
        return Err(TryError::BudgetSpent);
    }
    // A CLI that answered before it was stopped keeps its review.
    if ran.outcome != Outcome::Exited(0)
        && let Some(names) = limited_accounts(pools)
    {
        return Err(TryError::Limited(names));
    }
    match ran.outcome {
        Outcome::Exited(0) => {}
        Outcome::Exited(code) => return Err(TryError::Exit { code }),
        Outcome::Signalled(signal) => return Err(TryError::Signalled { signal }),
        Outcome::TimedOut => {
            return Err(TryError::TimedOut {
                after: timeout.unwrap_or_default(),
            });
        }
        Outcome::Cancelled => return Err(TryError::Cancelled),
    }
    if ran.stdout_truncated {
        return Err(TryError::Output(format!(
            "the CLI printed more than {MAX_STDOUT} bytes"
        )));
    }
    let cli = {
        let (stdout, home, cwd) = (ran.stdout, home.clone(), cwd.to_owned());
        let kind = spec.cli;
        tokio::task::spawn_blocking(move || match kind {
            ModelCli::Claude => claude::read_outcome(&stdout, &home, &cwd, resume_id.as_deref()),
            ModelCli::Codex => codex::read_outcome(&stdout, &home, resume_id.as_deref()),
        })
        .await
        .map_err(|e| TryError::Output(e.to_string()))?
        .map_err(TryError::Output)?
    };
    let answer = parse_answer(&cli.text)?;
    Ok(TryReview { answer, cli })
}

/// A try's spend: the CLI's report (Claude Code's carries the cost), or the proxy's count
/// when the CLI reported fewer tokens than its answers did, or none.
fn try_usage(cli: ModelCli, stdout: &[u8], meter: &super::proxy::Meter, forwarded: u64) -> Usage {
    let reported = match cli {
        ModelCli::Claude => serde_json::from_slice::<serde_json::Value>(stdout.trim_ascii())
            .ok()
            .and_then(|json| Usage::of_claude_result(&json)),
        ModelCli::Codex => Usage::of_codex_events(stdout),
    };
    let counted = Usage {
        // Nothing reached the API: nothing was spent.
        cost_usd: (forwarded == 0).then_some(super::usage::Usd(0)),
        ..meter.used()
    };
    match reported {
        Some(r) if r.tokens() >= counted.tokens() => r,
        _ => counted,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A diff of about `bytes` bytes.
    fn diff(bytes: usize) -> ReviewInput {
        let line = "+    let value = compute(input, 42); // a changed line of code\n";
        let text = line.repeat(bytes.div_ceil(line.len()));
        ReviewInput::untrusted("gather.diff", text)
    }

    fn sizes(bytes: usize) -> (usize, usize) {
        let spec = ModelReviewer::new(ModelCli::Claude, "/nonexistent");
        let nonce = Nonce::generate().unwrap();
        let inputs = [diff(bytes)];
        (
            prompt_of(&spec, TryKind::Fresh, &inputs, &nonce).len(),
            prompt_of(&spec, TryKind::Resumed, &inputs, &nonce).len(),
        )
    }

    #[test]
    fn a_resumed_prompt_sends_a_few_hundred_bytes_besides_its_inputs() {
        let spec = ModelReviewer::new(ModelCli::Claude, "/nonexistent");
        let nonce = Nonce::generate().unwrap();
        let empty = ReviewInput::untrusted("gather.since-last-review", Vec::new());
        let resumed = prompt_of(
            &spec,
            TryKind::Resumed,
            std::slice::from_ref(&empty),
            &nonce,
        );
        let fence = super::super::prompt::fence(&empty.name, &[], true, &nonce);
        let fixed = resumed.len() - fence.len();
        assert!(fixed <= 500, "{fixed} bytes: {resumed}");
        // It still declares this try's fences, and the answer it expects.
        assert!(
            resumed.contains(&format!("<<<END-{nonce}>>>`")),
            "{resumed}"
        );
        assert!(resumed.contains(FINDINGS_FENCE), "{resumed}");
        let fresh = prompt_of(&spec, TryKind::Fresh, std::slice::from_ref(&empty), &nonce);
        assert!(fresh.len() - fence.len() > 3 * fixed, "{fresh}");
        for kb in [512, 2048, 10240] {
            let (fresh, resumed) = sizes(kb);
            println!(
                "diff of {kb} bytes: fresh {fresh} bytes, resumed {resumed} bytes ({:.0} %)",
                100.0 * resumed as f64 / fresh as f64
            );
        }
    }
}

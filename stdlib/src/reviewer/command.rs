//! The `command` reviewer: any program that speaks the protocol of `docs/reviewers.md`.
//!
//! Each try: a fresh folder ([`TryFolder`]) with the prompt (inputs fenced by a new nonce), the
//! inputs and, for a resumed try, a copy of the conversation; the program runs with a cleared
//! environment (its declared variables, the `REVIEWFLOW_*` ones and a `PATH`), null
//! stdin, in its own process group, confined to its try folder inside a run; then its
//! `result.json` is validated strictly. The try policy is [`TrySequence`].
//!
//! A model's key given under its credential's variable (`ANTHROPIC_API_KEY`, …) never reaches
//! the program: each try starts that API's [`ModelProxy`], and the program gets a stand-in and
//! the proxy as the API's base URL (`ANTHROPIC_BASE_URL`, …), as a model reviewer does. Under
//! any other name a secret reaches the program as it is, and the program holds it. Several
//! secrets on a model key's line are accounts the proxy tries in turn, as a model reviewer's.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use reviewflow_engine::exec::confine;
use reviewflow_engine::exec::process::{self, ChildSpec, DEFAULT_GRACE, Outcome, ProcessError};
use reviewflow_engine::exec::redact::Redactor;
use reviewflow_engine::exec::secret::SecretValue;

use super::conversation::Conversation;
use super::cost::{Budget, Spend};
use super::error::ReviewerError;
use super::outcome::{ReviewEvent, ReviewInput, ReviewOutcome};
use super::program::{PathOrigin, ReviewerPath, locate};
use super::prompt::{Nonce, RandomError, build_prompt};
use super::proxy::{
    AccountPool, Meter, ModelApi, ModelProxy, account_fact, any_exhausted, limited_accounts,
    model_keys,
};
use super::result::{ResultError, ReviewFinding, ReviewResult, read_result};
use super::secret_env::SecretEnv;
use super::tries::{Attempt, DEFAULT_TRIES, Reviewed, TryFailure, TryKind, TrySequence};
use super::try_folder::{PrepareError, TryFolder, check_input_names};
use super::usage::Usage;

/// Why a budget on a `command` reviewer given no model key is refused: the stage when it starts,
/// and `check` from the file (`run-refusal`).
pub const NO_MODEL_KEY_FOR_BUDGET: &str = "a budget counts what a model's API reports through reviewflow's proxy, and this `command` reviewer is given no model key (`secret-env` under a model's variable, such as `ANTHROPIC_API_KEY`)";

/// How to run a `command` reviewer. `Debug` shows no secret.
#[derive(Clone, Debug)]
pub struct CommandReviewer {
    /// The program (a path, or a name looked up in `PATH`) and its arguments. No secret here.
    pub program_and_args: Vec<String>,
    /// The stage's instructions, placed at the top of `prompt.md`.
    pub instructions: String,
    /// The working directory of the program (the checkout under review); a relative program
    /// path is relative to it.
    pub cwd: PathBuf,
    /// Declared, non-secret environment variables. A `PATH` here replaces [`Self::path`].
    pub env: Vec<(String, String)>,
    /// The child's `PATH` when none is declared (reviewflow's own, without the checkout's
    /// entries); `None`: the minimal one.
    pub path: Option<String>,
    /// Secret environment variables; several secrets on a model key's line are accounts.
    pub secret_env: Vec<SecretEnv>,
    /// Limit of each try besides its share of [`Self::deadline`]; `None` for none.
    pub timeout: Option<Duration>,
    /// When the stage's timeout ends: the tries share the time up to it
    /// ([`super::budget`]); `None` for no stage timeout.
    pub deadline: Option<std::time::Instant>,
    /// Between SIGTERM and SIGKILL.
    pub grace: Duration,
    /// How many tries (1 to 5; default 2).
    pub tries: u32,
    /// The most the tries may spend through the proxies of its model keys
    /// ([`super::cost`]).
    pub budget: Budget,
    /// What the change spent before this run.
    pub spent_before: Usage,
}

impl CommandReviewer {
    /// A reviewer running `program_and_args` in `cwd`, with no instructions, no declared
    /// variables, the minimal `PATH`, no timeout, the default grace and two tries.
    pub fn new(program_and_args: Vec<String>, cwd: impl Into<PathBuf>) -> Self {
        Self {
            program_and_args,
            instructions: String::new(),
            cwd: cwd.into(),
            env: Vec::new(),
            path: None,
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
        if self.program_and_args.first().is_none_or(String::is_empty) {
            return Err(ReviewerError::settings("the command names no program"));
        }
        let mut seen: Vec<&str> = Vec::new();
        for name in self.declared_names() {
            if let Some(why) = super::declared_env::refusal("command", name) {
                return Err(ReviewerError::settings(why));
            }
            if seen.contains(&name) {
                return Err(ReviewerError::settings(format!(
                    "the variable {name} is declared twice"
                )));
            }
            seen.push(name);
        }
        for line in &self.secret_env {
            let var = &line.var;
            if line.accounts.is_empty() {
                return Err(ReviewerError::settings(format!("{var} is given no secret")));
            }
            // Only a proxy can switch accounts: a program holding the keys would use one.
            if let Some(why) =
                super::declared_env::accounts_refusal("command", var, line.accounts.len())
            {
                return Err(ReviewerError::settings(why));
            }
        }
        // A declared base URL of an API whose key is proxied names the proxy's upstream.
        for (api, _) in model_keys(&self.secret_env) {
            api.upstream(&self.env)
                .map_err(|e| ReviewerError::settings(format!("{}: {e}", api.base_url_var)))?;
        }
        Ok(())
    }

    /// The `PATH` the program gets and is looked up in.
    fn child_path(&self) -> ReviewerPath {
        ReviewerPath::of(&self.env, self.path.as_deref())
    }

    fn declared_names(&self) -> impl Iterator<Item = &str> {
        self.env
            .iter()
            .map(|(n, _)| n.as_str())
            .chain(self.secret_env.iter().map(|l| l.var.as_str()))
    }
}

/// The review of one try.
struct TryReview {
    result: ReviewResult,
    conversation: Option<PathBuf>,
}

impl Reviewed for TryReview {
    fn resumed(&self) -> bool {
        self.result.resumed
    }
}

/// Why one try ended without a review.
#[derive(Debug, thiserror::Error)]
enum TryError {
    // Names the secrets, never a key.
    #[error("every account has reached its rate or usage limit (HTTP 429): {0}")]
    Limited(String),
    #[error("stopped: the try reached the tokens its budget left")]
    BudgetSpent,
    #[error(transparent)]
    Prepare(#[from] PrepareError),
    #[error("no nonce for the prompt: {0}")]
    Random(#[from] RandomError),
    #[error("{0}")]
    Proxy(String),
    #[error("the reviewer cannot be started: {0}")]
    Start(#[from] ProcessError),
    // No words of the program's own: a reason is kept in the manifest and the events log and
    // published in a check run, while the program's output goes to the console only.
    #[error("exited with status {code} (its standard error is in the log)")]
    Exit { code: i32 },
    #[error("killed by signal {signal} (its standard error is in the log)")]
    Signalled { signal: i32 },
    #[error("timed out after {}", super::budget::say(*after))]
    TimedOut { after: Duration },
    #[error("cancelled")]
    Cancelled,
    #[error(transparent)]
    Result(#[from] ResultError),
    #[error("internal error: {0}")]
    Join(String),
}

impl TryFailure for TryError {
    fn is_cancelled(&self) -> bool {
        matches!(self, TryError::Cancelled)
    }

    fn ends_tries(&self) -> bool {
        matches!(self, TryError::Limited(_) | TryError::BudgetSpent)
    }
}

/// The accounts of each proxied API, for every try of the run.
type Pools = Vec<(&'static ModelApi, Vec<(String, Arc<AccountPool>)>)>;

/// Runs the `command` reviewer: up to `spec.tries` tries, the first resuming `resume` when
/// there is one. `workdir` receives one folder per try (the successful try's conversation stays
/// there); `redactor` covers every secret of the run; `cancel` resolving ends the running try
/// and the review. Status lines and the program's output lines go to `on_event`.
pub async fn run_command_reviewer<C, E>(
    spec: &CommandReviewer,
    inputs: &[ReviewInput],
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
    let workdir = std::path::absolute(workdir).map_err(|e| {
        ReviewerError::settings(format!("the work folder {}: {e}", workdir.display()))
    })?;
    // A program that is not there is said once, with the fix: no try would find it.
    {
        let (program, cwd, path) = (
            spec.program_and_args[0].clone(),
            spec.cwd.clone(),
            spec.child_path(),
        );
        tokio::task::spawn_blocking(move || locate(&program, &cwd, &path))
            .await
            .map_err(|e| ReviewerError::settings(format!("the program's look-up failed: {e}")))??;
    }
    let mut cancel = Fused::new(cancel);
    // Said once: which keys stay with reviewflow, and where their proxy forwards.
    let mut facts = Vec::new();
    for (api, keys) in model_keys(&spec.secret_env) {
        let upstream = api
            .upstream(&spec.env)
            .map(|u| u.to_string())
            .unwrap_or_default();
        let vars: Vec<&str> = keys.iter().map(|l| l.var.as_str()).collect();
        on_event(ReviewEvent::Status(format!(
            "{} reaches the program as a stand-in: {} is reviewflow's proxy to {upstream}",
            vars.join(" and "),
            api.base_url_var
        )));
        facts.push(("reviewer.api".to_owned(), upstream));
    }

    // The accounts live across the tries: one skipped for its limit stays skipped.
    let pools: Pools = model_keys(&spec.secret_env)
        .into_iter()
        .map(|(api, lines)| (api, lines.iter().map(|l| l.pool()).collect()))
        .collect();
    // Only what passes through reviewflow's proxies is counted: a budget needs a model key.
    if !spec.budget.is_unlimited() && pools.is_empty() {
        return Err(ReviewerError::settings(NO_MODEL_KEY_FOR_BUDGET));
    }
    let budget = super::budget::TryBudget::new(spec.deadline, spec.timeout, spec.grace);
    let mut spend = Spend::new(spec.budget, spec.spent_before);
    let mut sequence = TrySequence::new(spec.tries, resume);
    while let Some(attempt) =
        spend.next_attempt(&mut sequence, &mut |l| on_event(ReviewEvent::Status(l)))?
    {
        let timeout = budget.next(sequence.left());
        let mut usage = None;
        let result = one_try(
            spec,
            &pools,
            timeout,
            (spend.tokens_left(), &mut usage),
            inputs,
            &attempt,
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
                .result
                .findings
                .iter()
                .filter(|f| f.suggestion.is_some())
                .count();
            let findings = review
                .result
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
                .collect::<Vec<_>>();
            let unsuggested =
                suggestions - findings.iter().filter(|f| f.suggestion.is_some()).count();
            if unsuggested > 0 {
                on_event(ReviewEvent::Status(format!(
                    "{unsuggested} {} removed: they held a secret of the run (the findings are kept)",
                    if unsuggested == 1 {
                        "suggested fix"
                    } else {
                        "suggested fixes"
                    }
                )));
            }
            let decisions = review
                .result
                .decisions
                .into_iter()
                .map(|d| crate::forge::Decision {
                    reason: redact(redactor, &d.reason),
                    ..d
                })
                .collect();
            let every: Vec<(String, Arc<AccountPool>)> =
                pools.iter().flat_map(|(_, p)| p.iter().cloned()).collect();
            if let Some(account) = account_fact(&every) {
                facts.push(("reviewer.account".to_owned(), account));
            }
            return Ok(ReviewOutcome {
                decisions,
                comment: redact(redactor, &review.result.comment),
                clean: findings.is_empty(),
                findings,
                conversation: review.conversation,
                commented: true,
                resumed: attempt.kind == TryKind::Resumed,
                tries: sequence.reports().to_vec(),
                facts,
            });
        }
    }
    Err(sequence.into_not_reviewed().into())
}

fn redact(redactor: &Redactor, text: &str) -> String {
    String::from_utf8_lossy(&redactor.redact(text.as_bytes())).into_owned()
}

// `timeout` is this try's share, not the spec's: one more argument than clippy's default.
#[allow(clippy::too_many_arguments)]
async fn one_try<C: Future<Output = ()>>(
    spec: &CommandReviewer,
    pools: &Pools,
    timeout: Option<Duration>,
    (tokens_left, usage): (Option<u64>, &mut Option<Usage>),
    inputs: &[ReviewInput],
    attempt: &Attempt,
    workdir: &Path,
    redactor: &Redactor,
    cancel: &mut Fused<C>,
    on_event: &mut impl FnMut(ReviewEvent),
) -> Result<TryReview, TryError> {
    let nonce = Nonce::generate()?;
    let prompt = build_prompt(&spec.instructions, inputs, &nonce);
    // Copying a conversation and writing inputs is blocking file work: off the runtime threads.
    let folder = {
        let (workdir, inputs, resume) =
            (workdir.to_owned(), inputs.to_vec(), attempt.resume.clone());
        let number = attempt.number;
        tokio::task::spawn_blocking(move || {
            TryFolder::prepare(&workdir, number, &prompt, &inputs, resume.as_ref())
        })
        .await
        .map_err(|e| TryError::Join(e.to_string()))??
    };

    // The proxies of the model keys: the program's only way to those APIs, for this try only.
    let mut proxies = Vec::new();
    // One meter for every proxy of the try: the budget is of the try, whichever API it calls.
    let meter = Arc::new(Meter::default());
    meter.limit(tokens_left);
    for (api, keys) in pools {
        let upstream = api
            .upstream(&spec.env)
            .map_err(|e| TryError::Proxy(format!("{}: {e}", api.base_url_var)))?;
        let proxy = ModelProxy::start_metered(upstream, keys, Arc::clone(&meter))
            .map_err(|e| TryError::Proxy(e.to_string()))?;
        proxies.push((*api, proxy));
    }
    let child = child_spec(spec, timeout, attempt, &folder, &proxies);
    let number = attempt.number;
    let every: Vec<(String, Arc<AccountPool>)> =
        pools.iter().flat_map(|(_, p)| p.iter().cloned()).collect();
    let positions: Vec<usize> = every.iter().map(|(_, p)| p.position()).collect();
    // Once every account of a key has reached its limit the program can only wait and retry:
    // it is stopped, and the try fails naming the accounts.
    let stop = async {
        tokio::select! {
            () = &mut *cancel => {}
            () = any_exhausted(every.iter().map(|(_, p)| &**p)) => {}
            () = meter.spent() => {}
        }
    };
    let ran = process::run(child, redactor, stop, |stream, line| {
        let line = String::from_utf8_lossy(&line).into_owned();
        on_event(ReviewEvent::Output {
            try_number: number,
            stream,
            line,
        });
    })
    .await?;
    for (_, proxy) in &proxies {
        let tally = proxy.tally();
        if tally.refused() > 0 || tally.failed() > 0 || tally.limited() > 0 {
            on_event(ReviewEvent::Status(format!(
                "try {number}: {}",
                proxy.summary()
            )));
        }
    }
    for ((_, pool), from) in every.iter().zip(positions) {
        if let Some(line) = pool.switched_since(from) {
            on_event(ReviewEvent::Status(format!("try {number}: {line}")));
        }
    }
    // What the try spent: what the answers reported to the proxies (no API reports a price);
    // nothing when it was given no model key.
    if !proxies.is_empty() {
        let forwarded: u64 = proxies.iter().map(|(_, p)| p.tally().forwarded()).sum();
        *usage = Some(Usage {
            cost_usd: (forwarded == 0).then_some(super::usage::Usd(0)),
            ..meter.used()
        });
    }
    // The stand-ins open nothing from here on.
    drop(proxies);
    if ran.outcome != Outcome::Exited(0) && meter.is_spent() {
        return Err(TryError::BudgetSpent);
    }
    // A program that answered before it was stopped keeps its review.
    if ran.outcome != Outcome::Exited(0)
        && let Some(names) = limited_accounts(&every)
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

    let (result, conversation) = {
        let (path, out) = (folder.result.clone(), folder.conversation_out.clone());
        tokio::task::spawn_blocking(move || read_result(&path, &out))
            .await
            .map_err(|e| TryError::Join(e.to_string()))??
    };
    Ok(TryReview {
        result,
        conversation,
    })
}

/// The child: cleared environment with the `REVIEWFLOW_*` variables, its `PATH`
/// ([`CommandReviewer::child_path`]), and the declared ones, a model key replaced by its proxy's stand-in and
/// the API's base URL by the proxy's; stdin null.
fn child_spec(
    spec: &CommandReviewer,
    timeout: Option<Duration>,
    attempt: &Attempt,
    folder: &TryFolder,
    proxies: &[(&'static ModelApi, ModelProxy)],
) -> ChildSpec {
    let mut child = ChildSpec::new(&spec.program_and_args[0], &spec.cwd);
    child.args = spec.program_and_args[1..].to_vec();
    child.timeout = timeout;
    child.grace = spec.grace;
    let path_text = |p: &Path| p.to_string_lossy().into_owned();
    let path = spec.child_path();
    if path.origin != PathOrigin::Declared {
        child = child.env("PATH", path.value);
    }
    child = child
        .env("REVIEWFLOW_PROMPT", path_text(&folder.prompt))
        .env("REVIEWFLOW_INPUTS", path_text(&folder.inputs))
        .env("REVIEWFLOW_RESULT", path_text(&folder.result))
        .env(
            "REVIEWFLOW_CONVERSATION_OUT",
            path_text(&folder.conversation_out),
        )
        .env("REVIEWFLOW_TRY", attempt.number.to_string());
    if let Some(resume) = &folder.resume {
        child = child.env("REVIEWFLOW_RESUME", path_text(resume));
        if let Some(id) = attempt.resume.as_ref().and_then(|c| c.id.as_ref()) {
            child = child.env("REVIEWFLOW_RESUME_ID", id.clone());
        }
    }
    let proxied = |var: &str| {
        proxies
            .iter()
            .any(|(_, p)| p.stand_ins().iter().any(|(v, _)| v == var))
    };
    let base_url = |var: &str| proxies.iter().any(|(a, _)| a.base_url_var == var);
    child
        .env
        .extend(spec.env.iter().filter(|(n, _)| !base_url(n)).cloned());
    child.secret_env.extend(
        spec.secret_env
            .iter()
            .filter(|l| !proxied(&l.var))
            .filter_map(|l| Some((l.var.clone(), l.first_key()?.clone()))),
    );
    // Inside a run, the program is confined like every child of its stage, with the try's
    // folder as its own (the only place it writes; its TMPDIR), and the proxies' ports.
    child.confine = confine::stage_confinement().map(|c| {
        proxies
            .iter()
            .fold(c.work(&folder.root), |c, (_, p)| c.connect(p.port()))
    });
    for (api, proxy) in proxies {
        for (var, stand_in) in proxy.stand_ins() {
            child = child.secret_env(var.clone(), SecretValue::from(stand_in.as_str()));
        }
        child = child.env(api.base_url_var, proxy.base_url());
    }
    child
}

/// A future that can be polled again after it completed (it stays ready), so one cancellation
/// future serves every try.
pub(super) struct Fused<F> {
    inner: Option<Pin<Box<F>>>,
}

impl<F: Future<Output = ()>> Fused<F> {
    pub(super) fn new(future: F) -> Self {
        Self {
            inner: Some(Box::pin(future)),
        }
    }
}

impl<F: Future<Output = ()>> Future for Fused<F> {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        match self.inner.as_mut().map(|f| f.as_mut().poll(cx)) {
            None | Some(Poll::Ready(())) => {
                self.inner = None;
                Poll::Ready(())
            }
            Some(Poll::Pending) => Poll::Pending,
        }
    }
}

//! How `std/review` runs: reads its children, picks the reviewer, and turns its outcome into
//! the stage's outputs. The contract is in `review.rs`.

use reviewflow_engine::run::{OutputValue, Resolved, StageCx, StageError, StageOutputs};

use super::runtime::{arg, kept_copy, value_bytes};
use crate::reviewer::cost::{Budget, CHANGE_FACT, Cost, RUN_FACT, Spend, try_fact};
use crate::reviewer::instructions::Base;
use crate::reviewer::kinds::ModelCli;
use crate::reviewer::model::{Access, ModelReviewer, run_model_reviewer, trusted_path};
use crate::reviewer::proxy::Account;
use crate::reviewer::usage::{Usage, Usd};
use crate::reviewer::{
    CommandReviewer, Conversation, ReviewEvent, ReviewInput, RulesReviewer, SecretEnv,
    run_command_reviewer, run_rules_reviewer,
};

/// Runs the stage.
pub(super) async fn run(cx: StageCx<'_>) -> Result<StageOutputs, StageError> {
    // The stage's timeout counts from here: the tries share what is left of it.
    let deadline = cx.stage.timeout().map(|t| std::time::Instant::now() + t);
    let reviewer = arg(&cx, "reviewer")
        .and_then(Resolved::text)
        .unwrap_or_default();
    let model_cli = ModelCli::from_name(&reviewer);
    check_vendor_policy(&cx, &reviewer, model_cli)?;

    let lens = lens_of(&cx).await?;
    let mut inputs = inputs_of(&cx, "untrusted", true).await?;
    inputs.extend(inputs_of(&cx, "input", false).await?);
    // The author's answers: given in every try, fresh or resumed (docs/findings.md).
    let (responses, refutations) = responses_of(&cx, model_cli.is_some()).await?;
    inputs.extend(responses.iter().cloned());
    let decide = |text: &mut String| {
        if refutations {
            text.push_str("\n\n");
            text.push_str(crate::reviewer::model::DECISIONS_FORMAT);
        }
    };
    let resume = match arg(&cx, "resume") {
        // A verified copy in the stage's own folder: the kept one may have changed since.
        Some(Resolved::Output(Some(OutputValue::File(f)))) => {
            Some(Conversation::new(kept_copy(&cx, f, "resumed").await?))
        }
        _ => None,
    };
    let tries = match arg(&cx, "tries") {
        Some(Resolved::Int(n)) => u32::try_from(*n).unwrap_or(2),
        _ => 2,
    };
    let (budget, spent_before) = budget_of(&cx)?;
    let work = cx.work_dir().await?.to_path_buf();
    let status = cx.status.clone();
    let on_event = move |e: ReviewEvent| match e {
        ReviewEvent::Status(s) => status.status(s),
        ReviewEvent::Output { stream, line, .. } => status.line(stream, line.as_bytes()),
    };
    let cancel = cx.cancel.clone();
    let cancelled = async move {
        cancel.cancelled().await;
    };
    let outcome = match (reviewer.as_str(), model_cli) {
        (_, Some(cli)) => {
            let mut spec = ModelReviewer::new(cli, cx.checkout.to_path_buf());
            spec.tries = tries;
            spec.grace = cx.grace;
            spec.deadline = deadline;
            spec.env = env_of(&cx);
            spec.path = inherited_path(&cx);
            spec.secret_env = secret_env_of(&cx);
            spec.budget = budget;
            spec.spent_before = spent_before;
            let props = cx.children.iter().find(|c| c.name == "reviewer");
            if let Some(p) = props {
                spec.model = p.prop("model").and_then(Resolved::text);
                if p.prop("access").and_then(Resolved::text).as_deref() == Some("write") {
                    spec.access = Access::Write;
                }
                if let Some(Resolved::Int(n)) = p.prop("max-turns") {
                    spec.max_turns = u32::try_from(*n).unwrap_or(spec.max_turns).max(1);
                }
            }
            if let Some(workspace) = workspace(&cx, &work).await? {
                spec.readable.push(workspace.clone());
                spec.cwd = workspace;
            }
            if let Some(text) = prompt_file(&cx, "prompt").await? {
                spec.instructions = text;
            }
            if let Some(text) = prompt_file(&cx, "later-prompt").await? {
                spec.later_instructions = text;
            }
            if let Some(lens) = &lens {
                spec.instructions = lens.instructions(&spec.instructions);
                spec.later_instructions = lens.instructions(&spec.later_instructions);
            }
            decide(&mut spec.instructions);
            decide(&mut spec.later_instructions);
            let later = inputs_of(&cx, "since-last-review", true).await?;
            let later = if later.is_empty() {
                Vec::new()
            } else {
                // A resumed review reads the change since the last review instead of the whole
                // change, and the other (trusted) inputs as before.
                let mut l = later;
                l.extend(inputs.iter().filter(|i| !i.untrusted).cloned());
                l.extend(responses.iter().cloned());
                l
            };
            run_model_reviewer(
                &spec,
                &inputs,
                &later,
                resume,
                &work,
                cx.redactor,
                cancelled,
                on_event,
            )
            .await
        }
        (_, None) if arg(&cx, "workspace").is_some() => {
            return Err(StageError::failed(
                "`workspace` is for the model reviewers (\"claude\", \"codex\")",
            ));
        }
        ("rules", None) => {
            // The rules read the diff: the first input from the change.
            let diff = inputs
                .iter()
                .find(|i| i.untrusted)
                .map(|i| i.bytes.clone())
                .unwrap_or_default();
            let spec = RulesReviewer {
                tries,
                ..RulesReviewer::default()
            };
            let work = work.clone();
            tokio::task::spawn_blocking(move || {
                run_rules_reviewer(&spec, &diff, &[], resume, &work, on_event)
            })
            .await
            .map_err(|e| StageError::failed(format!("the reviewer thread failed: {e}")))?
        }
        ("command", None) => {
            let args: Vec<String> = cx
                .children
                .iter()
                .filter(|c| c.name == "command")
                .flat_map(|c| c.args.iter().filter_map(Resolved::text))
                .collect();
            if args.is_empty() {
                return Err(StageError::failed(
                    "a `command` reviewer needs a `command` child",
                ));
            }
            let mut spec = CommandReviewer::new(args, cx.checkout.to_path_buf());
            spec.tries = tries;
            spec.grace = cx.grace;
            spec.deadline = deadline;
            spec.env = env_of(&cx);
            spec.path = inherited_path(&cx);
            spec.secret_env = secret_env_of(&cx);
            spec.budget = budget;
            spec.spent_before = spent_before;
            if let Some(text) = prompt_file(&cx, "prompt").await? {
                spec.instructions = text;
            }
            if let Some(lens) = &lens {
                spec.instructions = lens.instructions(&spec.instructions);
            }
            decide(&mut spec.instructions);
            run_command_reviewer(
                &spec,
                &inputs,
                resume,
                &work,
                cx.redactor,
                cancelled,
                on_event,
            )
            .await
        }
        (other, None) => {
            return Err(StageError::failed(format!(
                "there is no `{other}` reviewer (use \"rules\", \"command\", \"claude\" or \"codex\")"
            )));
        }
    };
    // What the tries spent is kept whatever the outcome: a review that failed still cost.
    let tries = match &outcome {
        Ok(o) => o.tries.as_slice(),
        Err(e) => e.tries(),
    };
    let cost = record_cost(&cx, budget, spent_before, tries);
    let mut outcome = outcome.map_err(|e| StageError::failed(e.to_string()))?;
    if let Some(lens) = &lens {
        // The lens's name comes from the stage, never from what the reviewer wrote.
        for f in &mut outcome.findings {
            f.rule = Some(lens.rule(f.rule.as_deref()));
        }
    }
    for (key, value) in &outcome.facts {
        cx.facts.record(key.clone(), value.clone());
    }
    let mut out = StageOutputs::new();
    out.insert("comment".into(), OutputValue::Text(outcome.comment));
    let findings = serde_json::to_value(&outcome.findings)
        .map_err(|e| StageError::failed(format!("cannot encode the findings: {e}")))?;
    out.insert("findings".into(), OutputValue::Json(findings));
    let decisions = serde_json::to_value(&outcome.decisions)
        .map_err(|e| StageError::failed(format!("cannot encode the decisions: {e}")))?;
    out.insert("decisions".into(), OutputValue::Json(decisions));
    if let Some(c) = outcome.conversation {
        out.insert("conversation".into(), cx.output_file(&c).await?);
    }
    if let Some(lens) = &lens {
        let meta = serde_json::to_value(&lens.meta)
            .map_err(|e| StageError::failed(format!("cannot encode the lens: {e}")))?;
        out.insert("lens".into(), OutputValue::Json(meta));
    }
    if let Some(cost) = cost {
        let cost = serde_json::to_value(&cost)
            .map_err(|e| StageError::failed(format!("cannot encode the cost: {e}")))?;
        out.insert("cost".into(), OutputValue::Json(cost));
    }
    out.insert("commented".into(), OutputValue::Bool(outcome.commented));
    out.insert("resumed".into(), OutputValue::Bool(outcome.resumed));
    out.insert("clean".into(), OutputValue::Bool(outcome.clean));
    Ok(out)
}

/// The stage's `budget`, and what the change spent before this run (`spent`: std/gather's
/// output; nothing without it).
fn budget_of(cx: &StageCx<'_>) -> Result<(Budget, Usage), StageError> {
    let mut budget = Budget::default();
    if let Some(child) = cx.children.iter().find(|c| c.name == "budget") {
        let tokens = |name: &str| match child.prop(name) {
            Some(Resolved::Int(n)) => u64::try_from(*n).ok(),
            _ => None,
        };
        let usd = |name: &str| -> Result<Option<Usd>, StageError> {
            match child.prop(name).and_then(Resolved::text) {
                None => Ok(None),
                Some(text) => Usd::parse(&text).map(Some).ok_or_else(|| {
                    StageError::failed(format!("`{name}` is not an amount of dollars: {text:?}"))
                }),
            }
        };
        budget = Budget {
            run_tokens: tokens("run-tokens"),
            change_tokens: tokens("change-tokens"),
            run_usd: usd("run-usd")?,
            change_usd: usd("change-usd")?,
        };
    }
    let spent = match arg(cx, "spent") {
        Some(Resolved::Output(Some(OutputValue::Json(v)))) => serde_json::from_value(v.clone())
            .map_err(|e| StageError::failed(format!("`spent` is not what a change spent: {e}")))?,
        // Asked for and absent (gather fell back): what was spent is unknown, never nothing,
        // and a change's budget cannot be judged against it.
        Some(Resolved::Output(None))
            if budget
                .change_tokens
                .or(budget.change_usd.map(|u| u.0))
                .is_some() =>
        {
            return Err(StageError::failed(
                "not reviewed: budget unknown: what the change spent before this run is absent (`spent` fell back)",
            ));
        }
        Some(Resolved::Output(None)) => Usage::default(),
        _ => Usage::nothing(),
    };
    Ok((budget, spent))
}

/// Keeps what each try spent and the totals as the stage's facts (in the manifest whatever the
/// outcome), and returns the `cost` output; `None` when no try reported anything (the `rules`
/// and `command` reviewers without a model proxy).
fn record_cost(
    cx: &StageCx<'_>,
    budget: Budget,
    before: Usage,
    tries: &[crate::reviewer::TryReport],
) -> Option<Cost> {
    if tries.iter().all(|t| t.usage.is_none()) && budget.is_unlimited() {
        return None;
    }
    let mut spend = Spend::new(budget, before);
    for t in tries {
        spend.add(t.usage.as_ref());
        if let Some(u) = &t.usage {
            cx.facts.record(try_fact(t.number), u.fact());
        }
    }
    cx.facts.record(RUN_FACT, spend.run.fact());
    cx.facts.record(CHANGE_FACT, spend.change().fact());
    Some(spend.cost(tries))
}

/// reviewflow's own `PATH` for a reviewer's program, one rule for every reviewer: without
/// relative entries and entries inside the checkout (the change under review must not supply
/// the program), so a program the job installed is found; `None` when nothing is left.
fn inherited_path(cx: &StageCx<'_>) -> Option<String> {
    std::env::var("PATH")
        .ok()
        .map(|p| trusted_path(&p, cx.checkout))
        .filter(|p| !p.is_empty())
}

/// The `responses` input when it holds any, and whether one is a refutation to decide on. A
/// model reads it as text (each finding, then what its author said); a `command` reviewer's
/// program as the JSON `std/gather` wrote.
async fn responses_of(
    cx: &StageCx<'_>,
    as_text: bool,
) -> Result<(Vec<ReviewInput>, bool), StageError> {
    let mut out = Vec::new();
    let mut refutations = false;
    for mut input in inputs_of(cx, "responses", true).await? {
        let parsed: crate::forge::Responses =
            serde_json::from_slice(&input.bytes).map_err(|e| {
                StageError::failed(format!("`responses` is not std/gather's responses: {e}"))
            })?;
        if parsed.responses.is_empty() {
            continue;
        }
        refutations |= parsed.refutations().next().is_some();
        if as_text {
            input.bytes = parsed.to_prompt().into_bytes();
        }
        out.push(input);
    }
    Ok((out, refutations))
}

/// The inputs of every `child` child, named by the reference that gave them (`gather.diff`).
async fn inputs_of(
    cx: &StageCx<'_>,
    child: &str,
    untrusted: bool,
) -> Result<Vec<ReviewInput>, StageError> {
    let mut out = Vec::new();
    // Resolved children and the model's are in the same order.
    let declared = cx.stage.children_named(child);
    let resolved = cx.children.iter().filter(|c| c.name == child);
    for (n, (decl, res)) in declared.zip(resolved).enumerate() {
        for (i, a) in res.args.iter().enumerate() {
            let Resolved::Output(Some(v)) = a else {
                continue;
            };
            let name = decl
                .args
                .get(i)
                .and_then(|v| match &v.value {
                    reviewflow_engine::model::Value::Reference(r) => Some(r.to_string()),
                    _ => None,
                })
                .unwrap_or_else(|| format!("{child}-{n}-{i}"));
            let bytes = value_bytes(v).await?;
            out.push(if untrusted {
                ReviewInput::untrusted(name, bytes)
            } else {
                ReviewInput::trusted(name, bytes)
            });
        }
    }
    Ok(out)
}

/// The `workspace` commit exported into the stage's folder, when the stage names one.
async fn workspace(
    cx: &StageCx<'_>,
    work: &std::path::Path,
) -> Result<Option<std::path::PathBuf>, StageError> {
    let Some(text) = arg(cx, "workspace").and_then(Resolved::text) else {
        return Ok(None);
    };
    let commit = crate::git::Sha::parse(text.trim()).map_err(|e| {
        StageError::failed(format!("workspace: {:?} is not a commit: {e}", text.trim()))
    })?;
    let (repo, to, scratch) = (
        cx.checkout.to_path_buf(),
        work.join("workspace"),
        work.join("workspace-index"),
    );
    let short = commit.short().to_owned();
    tokio::task::spawn_blocking(move || {
        crate::git::export_commit(&repo, &commit, &to, &scratch).map(|()| to)
    })
    .await
    .map_err(|e| StageError::failed(format!("the workspace thread failed: {e}")))?
    .map(Some)
    .map_err(|e| {
        StageError::failed(format!(
            "workspace: the commit {short} cannot be exported from the checkout (is it fetched?): {e}"
        ))
    })
}

/// The declared `env` variables.
fn env_of(cx: &StageCx<'_>) -> Vec<(String, String)> {
    cx.children
        .iter()
        .filter(|c| c.name == "env")
        .filter_map(|c| {
            Some((
                c.args.first().and_then(Resolved::text)?,
                c.args.get(1).and_then(Resolved::text)?,
            ))
        })
        .collect()
}

/// The declared `secret-env` lines, each with those of its secrets that are set (several on a
/// model key's line: its accounts, in order).
fn secret_env_of(cx: &StageCx<'_>) -> Vec<SecretEnv> {
    let mut out = Vec::new();
    for c in cx.children.iter().filter(|c| c.name == "secret-env") {
        let Some(var) = c.args.first().and_then(Resolved::text) else {
            continue;
        };
        let accounts: Vec<Account> = c
            .args
            .iter()
            .skip(1)
            .filter_map(|a| match a {
                Resolved::Secret(s) => Some(Account::new(s.clone(), cx.secrets.get(s)?.clone())),
                _ => None,
            })
            .collect();
        if !accounts.is_empty() {
            out.push(SecretEnv::new(var, accounts));
        }
    }
    out
}

/// The base revision of the change the run opened, where instruction files are read from
/// (`reviewer::instructions`); `None` when the run opened no change.
fn base_of(cx: &StageCx<'_>) -> Option<Base> {
    let services = crate::kinds::Services::of(cx).ok()?;
    Some(Base {
        repo: cx.checkout.to_path_buf(),
        commit: services.forge.change().base.clone(),
    })
}

/// The stage's lens, loaded before anything runs: a lens that cannot be used fails the stage.
async fn lens_of(cx: &StageCx<'_>) -> Result<Option<crate::lens::Lens>, StageError> {
    let Some(spec) = arg(cx, "lens").and_then(Resolved::text) else {
        return Ok(None);
    };
    let base = base_of(cx);
    tokio::task::spawn_blocking(move || crate::lens::load(base.as_ref(), &spec))
        .await
        .map_err(|e| StageError::failed(format!("the lens thread failed: {e}")))?
        .map(Some)
        .map_err(|e| StageError::failed(format!("{e}: nothing reviewed")))
}

/// The text of the prompt file a child names, from the base revision.
async fn prompt_file(cx: &StageCx<'_>, child: &str) -> Result<Option<String>, StageError> {
    let Some(p) = arg(cx, child).and_then(Resolved::text) else {
        return Ok(None);
    };
    let base = base_of(cx);
    tokio::task::spawn_blocking(move || read_prompt(base.as_ref(), &p))
        .await
        .map_err(|e| StageError::failed(format!("reading the prompt did not finish: {e}")))?
        .map(Some)
}

/// Largest prompt file, in bytes.
const MAX_PROMPT_BYTES: u64 = 256 * 1024;

/// Reads a prompt file as a lens file is read: from the base revision, so the change under
/// review cannot rewrite it; a regular file, bounded.
fn read_prompt(base: Option<&Base>, p: &str) -> Result<String, StageError> {
    // Debug quoting: a control character in the name is escaped, not printed.
    let shown = format!("{p:?}");
    let Some(base) = base else {
        return Err(StageError::failed(format!(
            "the prompt {shown}: a prompt file is read from the base revision of the change under review, and this run has opened no change: nothing reviewed"
        )));
    };
    let bytes = base
        .read(p, MAX_PROMPT_BYTES)
        .map_err(|e| StageError::failed(format!("the prompt {shown}: {e}: nothing reviewed")))?;
    String::from_utf8(bytes)
        .map_err(|_| StageError::failed(format!("the prompt {shown} is not UTF-8")))
}

/// `reviewer-vendor-differs-from`: the reviewer's vendor must differ from the one named. `check`
/// proves it for a literal; a value known only now (`{input}`) is checked here, before anything
/// runs, and an unknown vendor on either side refuses (fail closed).
fn check_vendor_policy(
    cx: &StageCx<'_>,
    reviewer: &str,
    cli: Option<ModelCli>,
) -> Result<(), StageError> {
    let Some(named) = arg(cx, "reviewer-vendor-differs-from").and_then(Resolved::text) else {
        return Ok(());
    };
    let named = named.trim().to_ascii_lowercase();
    // The vendors and their aliases are the contract's (`REVIEWER_KINDS`), as `check` reads them.
    let vendor_of = |word: &str| cx.contract.vendor_named(word);
    let Some(author) = vendor_of(&named) else {
        return Err(StageError::failed(format!(
            "reviewer-vendor-differs-from: {named:?} names no known vendor (anthropic, openai) \
             or reviewer (claude, codex): nothing reviewed"
        )));
    };
    let declared = cx
        .children
        .iter()
        .find(|c| c.name == "reviewer")
        .and_then(|c| c.prop("vendor"))
        .and_then(Resolved::text)
        .map(|v| v.to_ascii_lowercase());
    // The CLI's vendor holds while its API is the vendor's own: an `env` that moves it to
    // another host (the kind's `api_url`, as `check` reads it) leaves only `vendor=` to say.
    let moved = cx
        .contract
        .reviewer_kind(reviewer)
        .and_then(|k| k.api_url)
        .is_some_and(|var| {
            cx.children
                .iter()
                .filter(|c| c.name == "env")
                .any(|c| c.args.first().and_then(Resolved::text).as_deref() == Some(var))
        });
    // A `vendor=` the stage's own model keys contradict is not believed (principle 2, as
    // `check` reads it): the keys' vendor answers.
    let keys = cx.contract.keys_vendor(
        cx.children
            .iter()
            .filter(|c| c.name == "secret-env")
            .filter_map(|c| match c.args.first() {
                Some(Resolved::String(s)) => Some(s.as_str()),
                _ => None,
            }),
    );
    let declared = declared
        .as_deref()
        .and_then(vendor_of)
        .map(|d| keys.filter(|k| *k != d).unwrap_or(d));
    let ours = cli
        .filter(|_| !moved)
        .map(|c| c.vendor().to_owned())
        .or_else(|| declared.map(str::to_owned));
    match ours {
        None => Err(StageError::failed(format!(
            "reviewer-vendor-differs-from: the vendor of the `{reviewer}` reviewer is unknown \
             (declare `vendor=` on it): nothing reviewed"
        ))),
        Some(v) if v == author => Err(StageError::failed(format!(
            "reviewer-vendor-differs-from: the work was written by {author}'s model and the \
             `{reviewer}` reviewer runs {v}'s: nothing reviewed"
        ))),
        Some(_) => Ok(()),
    }
}

//! `std/review`: runs a reviewer (`rules`, `command`, `claude`, `codex`). Try 1 resumes the
//! restored conversation, try 2 is fresh. Untrusted inputs are fenced by per-run nonce markers.
//! The comment and findings are the review's public product; the conversation is private.

use reviewflow_engine::contract::{
    Bound, ChildSpec, Effect, FallbackValue, LabelAdd, LabelKind, LabelRule, OutputType, Role,
    StageContract, ValueType,
};

use super::words;
use crate::reviewer::kinds::{REVIEWER_KINDS, REVIEWERS};

/// The most turns a model reviewer may be given (`max-turns`).
const MAX_TURNS: Bound = Bound::count(
    1,
    500,
    "each turn is one more model call on the run's key, and a review of a change takes tens: past 500 the cap no longer bounds what a prompt-injected reviewer spends",
);

/// A token budget (`budget run-tokens=…`).
const BUDGET_TOKENS: Bound = Bound::count(
    1,
    1_000_000_000,
    "a budget of more than a billion tokens bounds nothing",
);

/// How many tries a review may be given (`tries`).
const TRIES: Bound = Bound::count(
    1,
    5,
    "no try reviews nothing, and each try is a whole review on the run's key within the stage's one `timeout`: past 5 a failing reviewer spends the budget without a review",
);

/// What a model reviewer may do (`access=`).
pub const ACCESS: &[&str] = &["read-only", "write"];

/// What the stage refuses in its settings before it runs anything, from the file alone: the
/// reviewer's own rule on declared variables (`reviewer::declared_env`), which the reviewer
/// applies again when it starts.
fn refusals(
    stage: &reviewflow_engine::model::Stage,
) -> Vec<(reviewflow_engine::span::Span, String)> {
    use reviewflow_engine::model::Value;
    let literal = |v: &Value| match v {
        Value::String(s) => Some(s.clone()),
        _ => None,
    };
    let Some(reviewer) = stage
        .children
        .iter()
        .find(|c| c.name.value == "reviewer")
        .and_then(|c| c.args.first())
        .and_then(|a| literal(&a.value))
    else {
        return Vec::new();
    };
    let mut out: Vec<_> = stage
        .children
        .iter()
        .filter(|c| c.name.value == "env" || c.name.value == "secret-env")
        .filter_map(|c| {
            let name = c.args.first()?;
            let why = crate::reviewer::declared_env::refusal(&reviewer, &literal(&name.value)?)?;
            // A model CLI's credential belongs in `secret-env`: refused in `env` only.
            (c.name.value == "env" || why.contains("set by reviewflow")).then_some((name.span, why))
        })
        .collect();
    // Several secrets on a line the proxy does not hold: refused when the reviewer starts.
    for child in stage
        .children
        .iter()
        .filter(|c| c.name.value == "secret-env")
    {
        let Some(var) = child.args.first() else {
            continue;
        };
        let secrets = child
            .args
            .iter()
            .filter(|a| matches!(a.value, Value::Secret(_)))
            .count();
        let Some(name) = literal(&var.value) else {
            continue;
        };
        if let Some(why) =
            crate::reviewer::declared_env::accounts_refusal(&reviewer, &name, secrets)
        {
            out.push((var.span, why));
        }
    }
    // A dollar amount a budget cannot read: refused from the file, as the stage would refuse it.
    for child in stage.children.iter().filter(|c| c.name.value == "budget") {
        for prop in &child.props {
            if !prop.name.value.ends_with("-usd") {
                continue;
            }
            if let Some(text) = literal(&prop.value.value)
                && crate::reviewer::usage::Usd::parse(&text).is_none()
            {
                out.push((
                    prop.value.span,
                    format!(
                        "`{}` is not an amount of dollars (`\"2.50\"`: digits, at most six decimals)",
                        prop.name.value
                    ),
                ));
            }
        }
    }
    if reviewer == "rules"
        && let Some(budget) = stage.children.iter().find(|c| c.name.value == "budget")
    {
        out.push((
            budget.name.span,
            "the `rules` reviewer calls no model and spends nothing: a budget is for the model reviewers".into(),
        ));
    }
    // A `command` reviewer's spend is what its model keys' proxies count: a budget with no
    // model key is refused when it starts (`reviewer::command`), so from the file too.
    if reviewer == "command"
        && let Some(budget) = stage
            .children
            .iter()
            .find(|c| c.name.value == "budget" && !c.props.is_empty())
    {
        let kinds = crate::reviewer::kinds::REVIEWER_KINDS;
        let model_key = stage
            .children
            .iter()
            .filter(|c| c.name.value == "secret-env")
            .filter_map(|c| c.args.first().and_then(|a| literal(&a.value)))
            .any(|var| crate::reviewer::proxy::ModelApi::of_credential(kinds, &var).is_some());
        if !model_key {
            out.push((
                budget.name.span,
                crate::reviewer::NO_MODEL_KEY_FOR_BUDGET.into(),
            ));
        }
    }
    // The API's base URL the proxy would forward to: refused when the proxy starts, by the
    // same parser (`Upstream::parse`).
    let base_url_var = REVIEWER_KINDS
        .iter()
        .find(|k| k.name == reviewer)
        .and_then(|k| k.api_url);
    for child in stage.children.iter().filter(|c| c.name.value == "env") {
        let (Some(name), Some(value)) = (child.args.first(), child.args.get(1)) else {
            continue;
        };
        if literal(&name.value).as_deref() != base_url_var || base_url_var.is_none() {
            continue;
        }
        let url = match &value.value {
            Value::String(s) => s.clone(),
            Value::Template(t) if !t.is_interpolated() => t.source_text(),
            _ => continue,
        };
        if let Err(e) = crate::reviewer::proxy::Upstream::parse(&url) {
            out.push((value.span, e.to_string()));
        }
    }
    out
}

pub fn contract() -> StageContract {
    StageContract::new("std/review", "runs a reviewer over the change")
        .refusals(refusals)
        .child(
            ChildSpec::new(
                "reviewer",
                Role::Config,
                "which reviewer: \"rules\", \"command\", \"claude\" or \"codex\"",
            )
            .arg(words(REVIEWERS))
            .prop(
                "model",
                ValueType::String,
                false,
                "the model a CLI reviewer asks for",
            )
            .prop(
                "access",
                words(ACCESS),
                false,
                "what a model reviewer may do (default \"read-only\"; \"write\": shell and edit tools)",
            )
            .prop(
                "vendor",
                ValueType::String,
                false,
                "the vendor of the model behind a `command` reviewer, or behind a gateway an `env` moves a model reviewer's API to",
            )
            .prop(
                "max-turns",
                ValueType::Int(MAX_TURNS),
                false,
                "the most turns a model reviewer may take",
            )
            .required(),
        )
        .child(
            ChildSpec::new(
                "reviewer-vendor-differs-from",
                Role::Config,
                "the vendor (or reviewer) whose model wrote the work: the reviewer must be another vendor's",
            )
            .arg(ValueType::Template)
            .read_by_the_stage(),
        )
        .child(
            ChildSpec::new(
                "command",
                Role::CommandLine,
                "the program and arguments of a `command` reviewer",
            )
            .many(ValueType::Template),
        )
        .child(
            ChildSpec::new(
                "prompt",
                Role::Config,
                "a file with the reviewer's instructions, read from the base revision of the change",
            )
            .arg(ValueType::Template),
        )
        .child(
            ChildSpec::new(
                "lens",
                Role::Config,
                "a lens: `builtin:NAME` or a lens file relative to the top of the repository, read from the base revision of the change (docs/lenses.md)",
            )
            .arg(ValueType::String),
        )
        .child(
            ChildSpec::new(
                "later-prompt",
                Role::Config,
                "a file with the instructions of a review that resumes an earlier one, read as `prompt` is",
            )
            .arg(ValueType::Template),
        )
        .child(
            ChildSpec::new(
                "workspace",
                Role::Config,
                "the commit a model reviewer runs in, exported from the repository (e.g. gather.head)",
            )
            .arg(ValueType::Reference)
            .accepts(&[OutputType::Sha])
            .working_tree(),
        )
        .child(
            ChildSpec::new(
                "resume",
                Role::Data,
                "a conversation to resume on the first try",
            )
            .arg(ValueType::Reference)
            .accepts(&[OutputType::Conversation]),
        )
        .child(
            ChildSpec::new(
                "untrusted",
                Role::Data,
                "inputs from the change, fenced by nonce markers",
            )
            .many(ValueType::Reference)
            .fenced(),
        )
        .child(
            ChildSpec::new(
                "since-last-review",
                Role::Data,
                "what a resumed review reads instead of the `untrusted` inputs, fenced likewise",
            )
            .many(ValueType::Reference)
            .fenced()
            .delta(),
        )
        .child(
            ChildSpec::new(
                "responses",
                Role::Data,
                "the author's answers to the last review's findings (std/gather's `responses`), fenced likewise: the reviewer decides on each refutation",
            )
            .arg(ValueType::Reference)
            .accepts(&[OutputType::Json])
            .fenced(),
        )
        .child(
            ChildSpec::new(
                "input",
                Role::Data,
                "other inputs given to the reviewer, unfenced: nothing from the change",
            )
                .many(ValueType::Reference),
        )
        .child(
            ChildSpec::new(
                "tries",
                Role::Config,
                "how many tries (default 2: resumed, then fresh); they share the stage's `timeout`",
            )
            .arg(ValueType::Int(TRIES)),
        )
        .child(
            ChildSpec::new(
                "budget",
                Role::Config,
                "the most a model reviewer may spend, per run and per change: `run-tokens`, `change-tokens`, `run-usd`, `change-usd` (docs/reviewers.md, \"Costs and budgets\")",
            )
            .prop("run-tokens", ValueType::Int(BUDGET_TOKENS), false, "tokens (in and out) this run's tries may spend together")
            .prop("change-tokens", ValueType::Int(BUDGET_TOKENS), false, "tokens the change's runs may spend together, this one included")
            .prop("run-usd", ValueType::String, false, "dollars this run may spend (`\"2.50\"`), as the vendor reports cost")
            .prop("change-usd", ValueType::String, false, "dollars the change's runs may spend together")
            .read_by_the_stage(),
        )
        .child(
            ChildSpec::new(
                "spent",
                Role::Data,
                "what the change spent before this run (std/gather's `spent`), counted against `budget`'s change limits",
            )
            .arg(ValueType::Reference)
            .accepts(&[OutputType::Json]),
        )
        .child(
            ChildSpec::new(
                "env",
                Role::Environment,
                "an environment variable of the reviewer: name and value",
            )
            .args(vec![ValueType::String, ValueType::Template])
            .repeatable(),
        )
        .child(
            ChildSpec::new(
                "secret-env",
                Role::SecretSlot,
                "a secret given to the reviewer as an environment variable; several under a model's credential are its accounts, tried in order",
            )
            .args(vec![ValueType::String, ValueType::Secret])
            .last_repeats()
            .repeatable(),
        )
        .output(
            "comment",
            OutputType::Text,
            "the review comment (markdown)",
            LabelRule::all()
                .adding(LabelAdd::ProgramSecrets)
                .removing(LabelKind::Private),
        )
        .output(
            "findings",
            OutputType::Findings,
            "the findings, with paths and lines",
            LabelRule::all()
                .adding(LabelAdd::ProgramSecrets)
                .removing(LabelKind::Private),
        )
        .output(
            "decisions",
            OutputType::Json,
            "the reviewer's decision on each refutation it was given (accepted or upheld)",
            LabelRule::all()
                .adding(LabelAdd::ProgramSecrets)
                .removing(LabelKind::Private),
        )
        .output(
            "conversation",
            OutputType::Conversation,
            "the reviewer's conversation, to be sealed",
            LabelRule::all().adding(LabelAdd::Private),
        )
        .output(
            "lens",
            OutputType::Json,
            "the lens's name, ceiling and verdict mode, for std/aggregate (absent without a lens)",
            LabelRule::none(),
        )
        .output(
            "cost",
            OutputType::Json,
            "what the tries spent (tokens in, out and cached, and dollars where the vendor reports them), and the change's total with this run",
            LabelRule::none(),
        )
        .output(
            "commented",
            OutputType::Bool,
            "the reviewer wrote a comment",
            LabelRule::none(),
        )
        .output(
            "resumed",
            OutputType::Bool,
            "the review resumed the restored conversation",
            LabelRule::none(),
        )
        .output(
            "clean",
            OutputType::Bool,
            "the review reported no findings",
            LabelRule::none(),
        )
        .verdict("clean")
        .fallback("comment", FallbackValue::Absent)
        .fallback("findings", FallbackValue::Absent)
        .fallback("decisions", FallbackValue::Absent)
        .fallback("conversation", FallbackValue::Absent)
        .fallback("lens", FallbackValue::Absent)
        .fallback("cost", FallbackValue::Absent)
        .fallback("commented", FallbackValue::Bool(false))
        .fallback("resumed", FallbackValue::Bool(false))
        .fallback("clean", FallbackValue::Bool(false))
        .effect(Effect::Executes)
        .reviewer_kinds(REVIEWER_KINDS)
}

/// The implementation (in `review_run.rs`).
pub struct Review;

super::runtime::stage_impl!(Review, run);

async fn run(
    cx: reviewflow_engine::run::StageCx<'_>,
) -> Result<reviewflow_engine::run::StageOutputs, reviewflow_engine::run::StageError> {
    super::review_run::run(cx).await
}

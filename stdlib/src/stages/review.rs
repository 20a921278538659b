//! `std/review`: runs a reviewer (`rules`, `command`, `claude`, `codex`). Try 1 resumes the
//! restored conversation, try 2 is fresh. Untrusted inputs are fenced by per-run nonce markers.
//! The comment and findings are the review's public product; the conversation is private.

use reviewflow_engine::contract::{
    ChildSpec, Effect, FallbackValue, LabelAdd, LabelKind, LabelRule, OutputType, Role,
    StageContract, ValueType,
};

use super::words;

pub const REVIEWERS: &[&str] = &["rules", "command", "claude", "codex"];

pub fn contract() -> StageContract {
    StageContract::new("std/review", "runs a reviewer over the change")
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
            .required(),
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
                "a file with the reviewer's instructions",
            )
            .arg(ValueType::Template),
        )
        .child(
            ChildSpec::new(
                "resume",
                Role::Data,
                "a conversation to resume on the first try",
            )
            .arg(ValueType::Reference),
        )
        .child(
            ChildSpec::new(
                "untrusted",
                Role::Data,
                "inputs from the change, fenced by nonce markers",
            )
            .many(ValueType::Reference),
        )
        .child(
            ChildSpec::new("input", Role::Data, "other inputs given to the reviewer")
                .many(ValueType::Reference),
        )
        .child(
            ChildSpec::new(
                "tries",
                Role::Config,
                "how many tries (default 2: resumed, then fresh)",
            )
            .arg(ValueType::Int),
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
                "a secret given to the reviewer as an environment variable",
            )
            .args(vec![ValueType::String, ValueType::Secret])
            .repeatable(),
        )
        .output(
            "comment",
            OutputType::Text,
            "the review comment (markdown)",
            LabelRule::all().removing(LabelKind::Private),
        )
        .output(
            "findings",
            OutputType::Findings,
            "the findings, with paths and lines",
            LabelRule::all().removing(LabelKind::Private),
        )
        .output(
            "conversation",
            OutputType::Conversation,
            "the reviewer's conversation, to be sealed",
            LabelRule::all().adding(LabelAdd::Private),
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
        .fallback("comment", FallbackValue::Absent)
        .fallback("findings", FallbackValue::Absent)
        .fallback("conversation", FallbackValue::Absent)
        .fallback("commented", FallbackValue::Bool(false))
        .fallback("resumed", FallbackValue::Bool(false))
        .fallback("clean", FallbackValue::Bool(false))
        .effect(Effect::Executes)
}

/// The implementation: the `rules` and `command` reviewers.
pub struct Review;

super::runtime::stage_impl!(Review, run);

async fn run(
    cx: reviewflow_engine::run::StageCx<'_>,
) -> Result<reviewflow_engine::run::StageOutputs, reviewflow_engine::run::StageError> {
    use reviewflow_engine::run::{OutputValue, Resolved, StageError, StageOutputs};

    use super::runtime::{arg, value_bytes};
    use crate::reviewer::{
        CommandReviewer, Conversation, ReviewEvent, ReviewInput, RulesReviewer,
        run_command_reviewer, run_rules_reviewer,
    };

    let reviewer = arg(&cx, "reviewer")
        .and_then(Resolved::text)
        .unwrap_or_default();
    let mut inputs = Vec::new();
    for (child, untrusted) in [("untrusted", true), ("input", false)] {
        for c in cx.children.iter().filter(|c| c.name == child) {
            for (i, a) in c.args.iter().enumerate() {
                if let Resolved::Output(Some(v)) = a {
                    let name = cx
                        .stage
                        .children_named(child)
                        .flat_map(|c| c.args.iter())
                        .nth(i)
                        .and_then(|v| match &v.value {
                            reviewflow_engine::model::Value::Reference(r) => Some(r.to_string()),
                            _ => None,
                        })
                        .unwrap_or_else(|| format!("{child}-{i}"));
                    let bytes = value_bytes(v).await?;
                    inputs.push(if untrusted {
                        ReviewInput::untrusted(name, bytes)
                    } else {
                        ReviewInput::trusted(name, bytes)
                    });
                }
            }
        }
    }
    let resume = match arg(&cx, "resume") {
        Some(Resolved::Output(Some(OutputValue::File(p)))) => Some(Conversation::new(p.clone())),
        _ => None,
    };
    let tries = match arg(&cx, "tries") {
        Some(Resolved::Int(n)) => u32::try_from(*n).unwrap_or(2),
        _ => 2,
    };
    let work = cx.work_dir().await?.to_path_buf();
    let status = cx.status.clone();
    let on_event = move |e: ReviewEvent| match e {
        ReviewEvent::Status(s) => status.status(s),
        ReviewEvent::Output { stream, line, .. } => status.line(stream, line.as_bytes()),
    };
    let outcome = match reviewer.as_str() {
        "rules" => {
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
        "command" => {
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
            spec.timeout = cx.stage.timeout();
            for c in cx.children.iter().filter(|c| c.name == "env") {
                if let (Some(k), Some(v)) = (
                    c.args.first().and_then(Resolved::text),
                    c.args.get(1).and_then(Resolved::text),
                ) {
                    spec.env.push((k, v));
                }
            }
            for c in cx.children.iter().filter(|c| c.name == "secret-env") {
                if let (Some(k), Some(Resolved::Secret(s))) =
                    (c.args.first().and_then(Resolved::text), c.args.get(1))
                    && let Some(v) = cx.secrets.get(s)
                {
                    spec.secret_env.push((k, v.clone()));
                }
            }
            if let Some(p) = arg(&cx, "prompt").and_then(Resolved::text) {
                let path = cx.checkout.join(&p);
                spec.instructions = tokio::fs::read_to_string(&path).await.map_err(|e| {
                    StageError::io(format!("read the prompt {}", path.display()), e)
                })?;
            }
            let cancel = cx.cancel.clone();
            run_command_reviewer(
                &spec,
                &inputs,
                resume,
                &work,
                cx.redactor,
                async move {
                    cancel.cancelled().await;
                },
                on_event,
            )
            .await
        }
        other => {
            return Err(StageError::failed(format!(
                "the `{other}` reviewer is not available in this build (use \"rules\" or \"command\")"
            )));
        }
    };
    let outcome = outcome.map_err(|e| StageError::failed(e.to_string()))?;
    let mut out = StageOutputs::new();
    out.insert("comment".into(), OutputValue::Text(outcome.comment));
    let findings = serde_json::to_value(&outcome.findings)
        .map_err(|e| StageError::failed(format!("cannot encode the findings: {e}")))?;
    out.insert("findings".into(), OutputValue::Json(findings));
    if let Some(c) = outcome.conversation {
        out.insert("conversation".into(), OutputValue::File(c));
    }
    out.insert("commented".into(), OutputValue::Bool(outcome.commented));
    out.insert("resumed".into(), OutputValue::Bool(outcome.resumed));
    out.insert("clean".into(), OutputValue::Bool(outcome.clean));
    Ok(out)
}

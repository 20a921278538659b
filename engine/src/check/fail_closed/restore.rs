//! A stage that restores a conversation from a store fails closed to a fresh review (seed 000:
//! "fail closed means a fresh review"). A store that cannot be listed, a blob that does not open,
//! a key that is not set: each must leave the review to start afresh, not fail the run or skip
//! the review. A warning: nothing leaks, but every store hiccup costs a review.

use super::ID;
use crate::check::Context;
use crate::contract::Role;
use crate::finding::{Confidence, Finding, Label, Severity};
use crate::model::{OnError, OnMissing, Value};

pub(super) fn availability(cx: &Context<'_>, out: &mut Vec<Finding>) {
    let p = cx.pipeline;
    for (i, stage) in p.stages.iter().enumerate() {
        let Some(contract) = cx.registry.get(&stage.uses.value) else {
            continue;
        };
        // Restores: reads a store (a data child naming one) with a key.
        let reads_store = stage.children.iter().any(|c| {
            contract.child_spec(&c.name.value).map(|s| s.role) == Some(Role::Data)
                && c.values().any(|v| matches!(v.value, Value::Store(_)))
        });
        let keys: Vec<_> = stage
            .children
            .iter()
            .filter(|c| {
                contract.child_spec(&c.name.value).map(|s| s.role) == Some(Role::SecretSlot)
            })
            .flat_map(|c| c.values())
            .filter_map(|v| match &v.value {
                Value::Secret(s) => p.secret(s),
                _ => None,
            })
            .collect();
        if !reads_store || keys.is_empty() {
            continue;
        }
        let name = &stage.name.value;
        let readers: Vec<String> = cx
            .dag
            .consumers(i)
            .filter(|(_, e)| !e.data.is_empty())
            .map(|(c, _)| format!("`{}`", p.stages[c].name.value))
            .collect();
        let at = if stage.on_error.span.len > 0 {
            stage.on_error.span
        } else {
            stage.name.span
        };
        let fix = format!(
            "write `on-error=\"fallback\"` on `{name}`: any error then gives no conversation and a fresh review, with the reason in one status line"
        );
        match stage.on_error.value {
            OnError::Fail => out.push(
                Finding::new(
                    ID,
                    Severity::Warning,
                    format!(
                        "`{name}` fails the run when the store cannot be read or the blob does not open (on-error=\"fail\"): fail closed means a fresh review, not a failed one"
                    ),
                    Label::new(at, "any store error fails the run"),
                )
                .help(fix.clone())
                .confidence(Confidence::High)
                .stage(name),
            ),
            OnError::Skip => {
                let who = if readers.is_empty() {
                    String::new()
                } else {
                    format!(" and so is {}, which reads its conversation", super::join_and(&readers))
                };
                out.push(
                    Finding::new(
                        ID,
                        Severity::Warning,
                        format!(
                            "if the store cannot be read, `{name}` is skipped (on-error=\"skip\"){who}: no review instead of a fresh one"
                        ),
                        Label::new(at, "any store error skips what reads it"),
                    )
                    .help(fix.clone())
                    .confidence(Confidence::High)
                    .stage(name),
                );
            }
            OnError::Fallback => {}
        }
        for secret in keys {
            if secret.on_missing.value != OnMissing::Fail {
                continue;
            }
            let at = if secret.on_missing.span.len > 0 {
                secret.on_missing.span
            } else {
                secret.name.span
            };
            let holders: Vec<String> = p
                .stages
                .iter()
                .filter(|s| {
                    s.secrets_named()
                        .iter()
                        .any(|n| n.value == secret.name.value)
                })
                .map(|s| format!("`{}`", s.name.value))
                .collect();
            let holders = super::join_and(&holders);
            out.push(
                Finding::new(
                    ID,
                    Severity::Warning,
                    format!(
                        "without secret `{}` the run fails before any stage (on-missing=\"fail\"): `{name}` only resumes a conversation with it, and fail closed means a fresh review, nothing sealed",
                        secret.name.value
                    ),
                    Label::new(at, "a missing key fails the run"),
                )
                .related(Label::new(stage.name.span, format!("`{name}` restores with it")))
                .help(format!(
                    "write `on-missing=\"disable\"` on secret `{}`: without it {holders} then take their fallbacks (a fresh review, nothing sealed) and the run warns",
                    secret.name.value
                ))
                .confidence(Confidence::High)
                .stage(name),
            );
        }
    }
}

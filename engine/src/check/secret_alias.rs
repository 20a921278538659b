//! `secret-alias`: two secrets read from one environment variable are one value under two names.
//! Every proof about scopes holds per name, so a stage that may see one of them holds the other,
//! whatever the other's `visible-to` says.

use super::{Check, Context};
use crate::finding::{Confidence, Finding, Label, Severity};
use crate::model::Secret;

pub struct SecretAlias;

/// The stages that may see `a` and not `b`.
fn beyond<'a>(a: &'a Secret, b: &Secret) -> impl Iterator<Item = &'a str> {
    a.visible_to
        .iter()
        .map(|v| v.value.as_str())
        .filter(|s| !b.visible_to.iter().any(|w| w.value == *s))
}

/// `"seal" "restore"`, the stages of both scopes, each once, in declaration order.
fn union(a: &Secret, b: &Secret) -> String {
    let mut names: Vec<&str> = Vec::new();
    for v in a.visible_to.iter().chain(&b.visible_to) {
        if !names.contains(&v.value.as_str()) {
            names.push(&v.value);
        }
    }
    names
        .iter()
        .map(|n| format!("\"{n}\""))
        .collect::<Vec<_>>()
        .join(" ")
}

/// A variable name for secret `name`: `cache-key` → `CACHE_KEY`.
fn variable_for(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_uppercase()
            } else {
                '_'
            }
        })
        .collect()
}

fn scope(secret: &Secret) -> Label {
    let names: Vec<&str> = secret.visible_to.iter().map(|v| v.value.as_str()).collect();
    let text = if names.is_empty() {
        format!("`{}` is visible to no stage", secret.name.value)
    } else {
        format!(
            "`{}` is visible only to {}",
            secret.name.value,
            names.join(", ")
        )
    };
    Label::new(secret.visible_to_span.unwrap_or(secret.name.span), text)
}

impl Check for SecretAlias {
    fn principle(&self) -> super::Principle {
        super::Principle::UnknownAuthority
    }
    fn id(&self) -> &'static str {
        "secret-alias"
    }
    fn severity(&self) -> Severity {
        Severity::Error
    }
    fn summary(&self) -> &'static str {
        "no two secrets are read from the same environment variable"
    }
    fn run(&self, cx: &Context<'_>, out: &mut Vec<Finding>) {
        let secrets = &cx.pipeline.secrets;
        for (j, b) in secrets.iter().enumerate() {
            // Each later declaration is reported against the first one of its variable.
            let Some(a) = secrets[..j].iter().find(|a| a.env.value == b.env.value) else {
                continue;
            };
            let (an, bn, env) = (&a.name.value, &b.name.value, &b.env.value);
            // The later declaration is usually the one that widened the value's reach: say first
            // what a stage of its scope holds.
            let leak = beyond(b, a)
                .map(|s| (s, bn, an))
                .chain(beyond(a, b).map(|s| (s, an, bn)))
                .next();
            let message = match leak {
                Some((stage, seen, held)) => format!(
                    "secrets `{an}` and `{bn}` are both read from `${env}`: `{stage}` may see `{seen}`, so it holds `{held}`, outside that secret's `visible-to`"
                ),
                None => format!(
                    "secrets `{an}` and `{bn}` are both read from `${env}`: one value under two names, each scoped as if it were its own"
                ),
            };
            out.push(
                Finding::new(
                    self.id(),
                    self.severity(),
                    message,
                    Label::new(b.env.span, format!("`{bn}` is read from `${env}`")),
                )
                .related(Label::new(a.env.span, format!("so is `{an}`")))
                .related(scope(a))
                .related(scope(b))
                .help(match key_meets_program(cx, an, bn) {
                    // Declaring it once would hand a key to a stage that runs a program: offer
                    // only the fix that keeps `secret-scope`'s promise.
                    Some((key_user, program)) => format!(
                        "read `{bn}` from a variable of its own (`env=\"{}\"`) holding a credential of its own; do not merge the two: `{key_user}` uses this value as a key, and `{program}` runs a program",
                        variable_for(bn),
                    ),
                    None => format!(
                        "if `{bn}` is meant to be a credential of its own, read it from a variable of its own (`env=\"{}\"`); if it is the same credential, declare it once: keep `{an}`{}, name `{an}` where `{bn}` is named, and remove `{bn}`",
                        variable_for(bn),
                        match union(a, b) {
                            u if u.is_empty() => String::new(),
                            u => format!(", give it `visible-to {u}`"),
                        }
                    ),
                })
                .confidence(Confidence::High),
            );
        }
    }
}

/// A stage that uses `a` or `b` as a key (it runs no program: `std/seal`, `std/restore`) and a
/// stage that runs a program and uses the other name or the same: merging the two secrets would
/// hand the key to the program.
fn key_meets_program(cx: &Context<'_>, a: &str, b: &str) -> Option<(String, String)> {
    use crate::contract::Effect;
    let mut key_user = None;
    let mut program = None;
    for stage in &cx.pipeline.stages {
        let runs_program = cx
            .registry
            .get(&stage.uses.value)
            .is_some_and(|c| c.opaque || c.has_effect(Effect::Executes));
        if !stage
            .secrets_named()
            .iter()
            .any(|n| n.value == a || n.value == b)
        {
            continue;
        }
        if runs_program {
            program.get_or_insert_with(|| stage.name.value.clone());
        } else {
            key_user.get_or_insert_with(|| stage.name.value.clone());
        }
    }
    key_user.zip(program)
}

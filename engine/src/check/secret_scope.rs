//! `secret-scope`: a stage that names a secret is in that secret's `visible-to`; a stage that
//! talks to the forge may see the forge's token; a secret is visible only to stages that use
//! it; a secret nobody uses is a finding too.

use super::{Check, Context};
use crate::finding::{Confidence, Finding, Label, Severity};
use crate::flow::{forge_token, uses_forge};
use crate::model::Secret;

pub struct SecretScope;

fn scope_label(secret: &Secret) -> Label {
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

impl Check for SecretScope {
    fn principle(&self) -> super::Principle {
        super::Principle::AllowLists
    }
    fn id(&self) -> &'static str {
        "secret-scope"
    }
    fn severity(&self) -> Severity {
        Severity::Error
    }
    fn summary(&self) -> &'static str {
        "each secret is visible to exactly the stages that use it"
    }
    fn run(&self, cx: &Context<'_>, out: &mut Vec<Finding>) {
        let p = cx.pipeline;
        let token = forge_token(p);
        let visible =
            |secret: &Secret, stage: &str| secret.visible_to.iter().any(|v| v.value == stage);
        let mut used = vec![false; p.secrets.len()];
        for stage in &p.stages {
            let name = stage.name.value.as_str();
            for named in stage.secrets_named() {
                let Some(k) = p.secret_position(named.value) else {
                    continue;
                };
                used[k] = true;
                let secret = &p.secrets[k];
                if !visible(secret, name) {
                    out.push(
                        Finding::new(
                            self.id(),
                            self.severity(),
                            format!("stage `{name}` names secret `{}`, which it may not see", secret.name.value),
                            Label::new(named.span, format!("`{name}` names `{}` here", secret.name.value)),
                        )
                        .related(scope_label(secret))
                        .help(format!(
                            "if `{name}` must hold it, add \"{name}\" to the `visible-to` of `{}`; otherwise remove the use",
                            secret.name.value
                        ))
                        .confidence(Confidence::High)
                        .stage(name),
                    );
                }
            }
            let Some(contract) = cx.registry.get(&stage.uses.value) else {
                continue;
            };
            if let Some(token) = token
                && uses_forge(contract)
                && let Some(k) = p.secret_position(token)
            {
                used[k] = true;
                let secret = &p.secrets[k];
                if !visible(secret, name) {
                    out.push(
                                Finding::new(
                                    self.id(),
                                    self.severity(),
                                    format!("stage `{name}` ({}) talks to the forge, whose token `{token}` it may not see", contract.kind),
                                    Label::new(stage.uses.span, "reads or writes the forge"),
                                )
                                .related(scope_label(secret))
                                .help(format!("add \"{name}\" to the `visible-to` of `{token}`"))
                                .stage(name),
                            );
                }
            }
        }
        self.keys_held_by_programs(cx, out);
        for (k, secret) in p.secrets.iter().enumerate() {
            if !used[k] && token != Some(secret.name.value.as_str()) {
                out.push(
                    Finding::new(
                        self.id(),
                        Severity::Warning,
                        format!("secret `{}` is used by no stage", secret.name.value),
                        Label::new(secret.name.span, "declared here"),
                    )
                    .help("remove the secret, or name it in the stage that needs it")
                    .confidence(Confidence::High),
                );
            }
            for v in &secret.visible_to {
                let Some(stage) = p.stage(&v.value) else {
                    continue;
                };
                let names_it = stage
                    .secrets_named()
                    .iter()
                    .any(|n| n.value == secret.name.value);
                let forge_use = token == Some(secret.name.value.as_str())
                    && cx.registry.get(&stage.uses.value).is_some_and(uses_forge);
                if !names_it && !forge_use {
                    out.push(
                        Finding::new(
                            self.id(),
                            self.severity(),
                            format!("secret `{}` is visible to `{}`, which never uses it", secret.name.value, v.value),
                            Label::new(v.span, "needlessly in scope"),
                        )
                        .related(Label::new(stage.name.span, format!("`{}` does not name `{}`", v.value, secret.name.value)))
                        .help(format!("remove \"{}\" from `visible-to`: every stage in scope is one that could leak it", v.value))
                        .confidence(Confidence::High)
                        .stage(&v.value),
                    );
                }
            }
        }
    }
}

impl SecretScope {
    /// A secret that a stage running no program uses as a key (`std/seal`, `std/restore`) must
    /// not also be held by a stage that runs one (a reviewer, a `run` command): the program reads
    /// the change, and the change can ask it for the key.
    fn keys_held_by_programs(&self, cx: &Context<'_>, out: &mut Vec<Finding>) {
        use crate::contract::Effect;
        let p = cx.pipeline;
        // One pass over the stages: per secret, the first stage that uses it as a key, and the
        // uses by stages that run a program.
        let mut key_user: Vec<Option<usize>> = vec![None; p.secrets.len()];
        let mut program_uses: Vec<(usize, usize, crate::span::Span)> = Vec::new();
        for (i, s) in p.stages.iter().enumerate() {
            let runs_program = cx
                .registry
                .get(&s.uses.value)
                .is_some_and(|c| c.opaque || c.has_effect(Effect::Executes));
            for named in s.secrets_named() {
                let Some(k) = p.secret_position(named.value) else {
                    continue;
                };
                if runs_program {
                    program_uses.push((k, i, named.span));
                } else if key_user[k].is_none() {
                    key_user[k] = Some(i);
                }
            }
        }
        for (k, i, span) in program_uses {
            let Some(u) = key_user[k] else { continue };
            let (secret, s, user) = (&p.secrets[k], &p.stages[i], &p.stages[u]);
            let name = secret.name.value.as_str();
            if !secret.visible_to.iter().any(|v| v.value == s.name.value) {
                continue; // reported as out of scope
            }
            out.push(
                Finding::new(
                    self.id(),
                    self.severity(),
                    format!(
                        "`{}` runs a program and holds `{name}`, the key `{}` uses",
                        s.name.value, user.name.value
                    ),
                    Label::new(span, format!("`{}` holds the key here", s.name.value)),
                )
                .related(Label::new(user.name.span, format!("`{}` keeps its blobs with `{name}`", user.name.value)))
                .related(scope_label(secret))
                .help(format!(
                    "give `{}` its own secret; keep `{name}` visible only to the stages that seal and restore",
                    s.name.value
                ))
                .confidence(Confidence::High)
                .stage(&s.name.value),
            );
        }
    }
}

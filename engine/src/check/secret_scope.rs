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

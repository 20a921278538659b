//! `reviewer-held-key`: a reviewer holds no model's key. A key given under a variable a model's
//! clients read (a credential of the contract's reviewers) stays with the run, which gives the
//! reviewer a stand-in and the model's API through a proxy; under any other name a `command`
//! reviewer's program holds the key, and a prompt injection in what it reads can make it
//! publish the key in a form no redactor recognises (reversed, encoded). A model's key is known
//! by the variable the secret comes from. A reviewer whose kind has credentials of its own is
//! `reviewer-credential`'s to check, and a secret the stage may not see `secret-scope`'s.

use super::reviewer::{StageReviewer, either};
use super::{Check, Context};
use crate::contract::Role;
use crate::finding::{Confidence, Finding, Label, Severity};
use crate::model::Value;

pub struct ReviewerHeldKey;

impl Check for ReviewerHeldKey {
    fn id(&self) -> &'static str {
        "reviewer-held-key"
    }
    fn severity(&self) -> Severity {
        Severity::Warning
    }
    fn summary(&self) -> &'static str {
        "a reviewer is given a model's key only under that model's credential variable, so it holds a stand-in, never the key"
    }
    fn run(&self, cx: &Context<'_>, out: &mut Vec<Finding>) {
        let p = cx.pipeline;
        for stage in &p.stages {
            let Some(reviewer) = StageReviewer::of(cx, stage) else {
                continue;
            };
            if !reviewer.kind.credentials.is_empty() {
                continue;
            }
            let kinds = reviewer.contract.reviewers();
            let proxied: Vec<&str> = kinds
                .iter()
                .flat_map(|k| k.credentials.iter().copied())
                .collect();
            let name = stage.name.value.as_str();
            let kind = reviewer.kind.name;
            for child in &stage.children {
                let slot = reviewer
                    .contract
                    .child_spec(&child.name.value)
                    .is_some_and(|s| s.role == Role::SecretSlot);
                if !slot {
                    continue;
                }
                let Some(var) = child
                    .args
                    .iter()
                    .find(|a| matches!(a.value, Value::String(_)))
                else {
                    continue;
                };
                let Some(secret) = child.args.iter().find_map(|a| match &a.value {
                    Value::Secret(s) => Some(s.as_str()),
                    _ => None,
                }) else {
                    continue;
                };
                let var_name = var.value.as_str().unwrap_or_default();
                if proxied.contains(&var_name) {
                    continue;
                }
                let Some(declared) = p.secret(secret) else {
                    continue;
                };
                if !declared.visible_to.iter().any(|v| v.value == name) {
                    continue;
                }
                let source = declared.env.value.as_str();
                let Some(owner) = kinds.iter().find(|k| k.credentials.contains(&source)) else {
                    continue;
                };
                out.push(
                    Finding::new(
                        self.id(),
                        self.severity(),
                        format!(
                            "the `{kind}` reviewer of `{name}` holds the model key `{secret}` (given as `{var_name}`): a prompt injection can make it publish the key in a form no redactor recognises"
                        ),
                        Label::new(
                            var.span,
                            format!("`{var_name}` is no model's credential: the program gets the key itself"),
                        ),
                    )
                    .related(Label::new(
                        declared.env.span,
                        format!("`{secret}` comes from `{source}`, a credential of `{}`", owner.name),
                    ))
                    .help(format!(
                        "give it as `{source}` (`{}` reads {}): the program then gets a stand-in, and reaches the model's API through the run's proxy, which alone holds the key",
                        owner.name,
                        either(owner.credentials)
                    ))
                    .confidence(Confidence::High)
                    .stage(name),
                );
            }
        }
    }
}

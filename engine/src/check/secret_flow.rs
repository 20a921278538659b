//! `secret-flow`: a value derived from a secret (an output of an opaque stage holding it)
//! reaches a stage outside that secret's scope. The path is printed. A folder a stage holding the
//! secret may write is such a value for every other stage that names it (`flow::Folder`); where
//! the reader may write the folder too, the flow also runs the other way, and `untrusted-input`
//! reports the folder once, on the stage that left the secret there (when it holds a secret or a
//! write permission, as `untrusted-input` asks).

use super::{Check, Context};
use crate::finding::{Confidence, Finding, Label, Severity};
use crate::flow::Kind;

pub struct SecretFlow;

impl Check for SecretFlow {
    fn principle(&self) -> super::Principle {
        super::Principle::Labels
    }
    fn id(&self) -> &'static str {
        "secret-flow"
    }
    fn severity(&self) -> Severity {
        Severity::Error
    }
    fn summary(&self) -> &'static str {
        "no value derived from a secret reaches a stage outside the secret's scope"
    }
    fn run(&self, cx: &Context<'_>, out: &mut Vec<Finding>) {
        let Some(flow) = cx.flow else { return };
        let p = cx.pipeline;
        for (i, stage) in p.stages.iter().enumerate() {
            if dead_end(cx, stage) {
                continue;
            }
            let mut reported = Vec::new();
            for input in &flow.inputs[i] {
                for k in input.labels.secrets() {
                    let secret = &p.secrets[k];
                    let in_scope = secret
                        .visible_to
                        .iter()
                        .any(|v| v.value == stage.name.value);
                    if in_scope || reported.contains(&k) {
                        continue;
                    }
                    // Through a folder: the stage that may have left the secret there.
                    let writer = input.folder.as_ref().and_then(|f| {
                        let w = flow.writer_with(&f.input, i, Kind::Secret(k))?;
                        let granted = flow.writers(&f.input).iter().find(|(x, _)| *x == w)?.1;
                        Some((f, w, granted))
                    });
                    if let Some((folder, w, _)) = writer
                        && folder.both_write
                        && has_power(cx, flow, w)
                    {
                        // Both may write it, and `untrusted-input` reports the folder on `w`.
                        continue;
                    }
                    reported.push(k);
                    let path = flow.path(p, cx.dag, i, input, Kind::Secret(k));
                    if let Some((folder, w, granted)) = writer {
                        let writer = &p.stages[w].name.value;
                        let holding = if flow.held[w].contains(&k) {
                            "while holding"
                        } else {
                            "with what it read of"
                        };
                        out.push(
                            Finding::new(
                                self.id(),
                                self.severity(),
                                format!(
                                    "`{{{}}}` names a folder that `{writer}` may write {holding} secret `{}`, and `{}`, outside the secret's scope, reads it",
                                    folder.input, secret.name.value, stage.name.value
                                ),
                                Label::new(input.span, format!("a folder `{writer}` may write")),
                            )
                            .related(Label::new(
                                granted,
                                format!("`{writer}` may write what `{{{}}}` names", folder.input),
                            ))
                            .related(Label::new(
                                secret.visible_to_span.unwrap_or(secret.name.span),
                                format!("`{}` is in scope only here", secret.name.value),
                            ))
                            .flow(path)
                            .help(format!(
                                "what a stage may write is data for every stage that names it: let `{writer}` write only its own folder, keep `{{{}}}` out of `{}`, or give input `{}` a `pattern=` that cannot name a folder (one that cannot start with `/`)",
                                folder.input, stage.name.value, folder.input
                            ))
                            .confidence(Confidence::Medium)
                            .stage(&stage.name.value),
                        );
                        continue;
                    }
                    let origin = flow.origin(p, cx.dag, i, input, Kind::Secret(k));
                    // A secret its origin may not hold at all is that holding's finding.
                    if origin
                        .is_some_and(|o| super::held::reported_holding(cx, flow, o, k).is_some())
                    {
                        continue;
                    }
                    let reviewer = origin
                        .and_then(|o| cx.registry.get(&p.stages[o].uses.value))
                        .is_some_and(|c| !c.reviewer_kinds.is_empty());
                    let help = if reviewer {
                        let env = secret.env.value.as_str();
                        let model_key = cx
                            .registry
                            .contracts()
                            .flat_map(|c| c.reviewers())
                            .any(|r| r.credentials.contains(&env));
                        let name = &secret.name.value;
                        let fix = if model_key {
                            format!(
                                "give `{name}` under its own variable (`secret-env \"{env}\" \"{name}\"`), which the run keeps behind its proxy, or take it out of the reviewer"
                            )
                        } else {
                            format!(
                                "take `{name}` out of the reviewer; a model's key given under its model's own variable (`secret-env \"ANTHROPIC_API_KEY\" \"…\"`) stays behind the run's proxy"
                            )
                        };
                        format!(
                            "labels never vanish silently: a reviewer's comment and findings carry every secret its program holds, and a prompt injection in what it reads can make it write one reversed or encoded, which no redactor recognises; {fix}"
                        )
                    } else {
                        "a `run` stage's outputs carry every secret it holds: give the secret to a stage whose outputs are declared, or keep the consumer in scope".to_string()
                    };
                    out.push(
                        Finding::new(
                            self.id(),
                            self.severity(),
                            format!(
                                "`{}` carries secret `{}` into `{}`, outside the secret's scope",
                                input.reference, secret.name.value, stage.name.value
                            ),
                            Label::new(input.span, format!("derived from `{}`", secret.name.value)),
                        )
                        .related(Label::new(
                            secret.visible_to_span.unwrap_or(secret.name.span),
                            format!("`{}` is in scope only here", secret.name.value),
                        ))
                        .flow(path)
                        .help(help)
                        .confidence(Confidence::Medium)
                        .stage(&stage.name.value),
                    );
                }
            }
        }
    }
}

/// Whether `untrusted-input` reports what reaches stage `stage`'s command: it holds a secret or
/// a write permission.
fn has_power(cx: &Context<'_>, flow: &crate::flow::Flow, stage: usize) -> bool {
    !flow.held[stage].is_empty()
        || cx.pipeline.stages[stage]
            .permissions
            .iter()
            .any(|w| w.value.access == crate::model::Access::Write)
}

/// A stage whose outputs carry none of its inputs' labels, that runs no program and that neither
/// publishes nor keeps (a guard such as `std/scan`, which reads a value only to judge it): a
/// secret-derived value stops there.
fn dead_end(cx: &Context<'_>, stage: &crate::model::Stage) -> bool {
    use crate::contract::{Effect, LabelAdd, Propagate};
    let Some(c) = cx.registry.get(&stage.uses.value) else {
        return false;
    };
    !c.opaque
        && !c.has_effect(Effect::Executes)
        && !c.has_effect(Effect::Publishes)
        && !c.has_effect(Effect::Keeps)
        && c.outputs.iter().all(|o| {
            matches!(o.labels.propagate, Propagate::None)
                && !o.labels.adding.contains(&LabelAdd::HeldSecrets)
                && !o.labels.adding.contains(&LabelAdd::ProgramSecrets)
        })
}

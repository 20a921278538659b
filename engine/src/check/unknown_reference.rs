//! `unknown-reference`: a reference to a stage, output, secret or store that does not exist.

use super::{Check, Context};
use crate::finding::{Finding, Label, Severity};
use crate::model::Value;
use crate::span::Span;
use crate::suggest::{did_you_mean, help_text};

pub struct UnknownReference;

impl UnknownReference {
    fn unknown(
        &self,
        what: &str,
        name: &str,
        span: Span,
        candidates: Vec<String>,
        stage: Option<&str>,
    ) -> Finding {
        let mut f = Finding::new(
            self.id(),
            self.severity(),
            format!("unknown {what} `{name}`"),
            Label::new(span, format!("no {what} of this name")),
        )
        .maybe_help(help_text(&candidates));
        if let Some(s) = stage {
            f = f.stage(s);
        }
        f
    }
}

impl Check for UnknownReference {
    fn principle(&self) -> super::Principle {
        super::Principle::AllowLists
    }
    fn id(&self) -> &'static str {
        "unknown-reference"
    }
    fn severity(&self) -> Severity {
        Severity::Error
    }
    fn summary(&self) -> &'static str {
        "every reference names a declared stage, output, secret or store"
    }
    fn run(&self, cx: &Context<'_>, out: &mut Vec<Finding>) {
        let p = cx.pipeline;
        let stage_names = || p.stages.iter().map(|s| s.name.value.as_str());
        for stage in &p.stages {
            let own = Some(stage.name.value.as_str());
            for need in &stage.needs {
                if p.stage(&need.value).is_none() {
                    out.push(self.unknown(
                        "stage",
                        &need.value,
                        need.span,
                        did_you_mean(&need.value, stage_names()),
                        own,
                    ));
                }
            }
            for r in stage.references() {
                match p.stage(&r.stage) {
                    None => out.push(self.unknown(
                        "stage",
                        &r.stage,
                        r.span,
                        did_you_mean(&r.stage, stage_names()),
                        own,
                    )),
                    Some(producer) => {
                        let outputs = cx.outputs_of(&r.stage);
                        if cx.registry.get(&producer.uses.value).is_some()
                            && !outputs.iter().any(|(n, _)| *n == r.output)
                        {
                            let names: Vec<&str> =
                                outputs.iter().map(|(n, _)| n.as_str()).collect();
                            let mut f = Finding::new(
                                self.id(),
                                self.severity(),
                                format!(
                                    "stage `{}` ({}) has no output `{}`",
                                    producer.name.value, producer.uses.value, r.output
                                ),
                                Label::new(r.span, "no such output"),
                            )
                            .related(Label::new(producer.name.span, "the stage is declared here"))
                            .stage(&stage.name.value);
                            let candidates = did_you_mean(&r.output, names.iter().copied());
                            f = f.help(
                                help_text(&candidates).unwrap_or_else(|| outputs_help(&names)),
                            );
                            out.push(f);
                        }
                    }
                }
            }
            for child in &stage.children {
                for v in child.values() {
                    match &v.value {
                        Value::Secret(name) if p.secret(name).is_none() => out.push(self.unknown(
                            "secret",
                            name,
                            v.span,
                            did_you_mean(name, p.secrets.iter().map(|s| s.name.value.as_str())),
                            own,
                        )),
                        Value::Store(name) if p.store(name).is_none() => out.push(self.unknown(
                            "store",
                            name,
                            v.span,
                            did_you_mean(name, p.stores.iter().map(|s| s.name.value.as_str())),
                            own,
                        )),
                        _ => {}
                    }
                }
            }
        }
        for secret in &p.secrets {
            for s in &secret.visible_to {
                if p.stage(&s.value).is_none() {
                    out.push(self.unknown(
                        "stage",
                        &s.value,
                        s.span,
                        did_you_mean(&s.value, stage_names()),
                        None,
                    ));
                }
            }
        }
        if let Some(forge) = &p.forge
            && let Some(token) = &forge.token
            && p.secret(&token.value).is_none()
        {
            out.push(self.unknown(
                "secret",
                &token.value,
                token.span,
                did_you_mean(
                    &token.value,
                    p.secrets.iter().map(|s| s.name.value.as_str()),
                ),
                None,
            ));
        }
    }
}

/// What a stage does have, when the output named is not close to any: "its only output is
/// `ok`", "its outputs are `a`, `b`", or "it has no outputs".
fn outputs_help(names: &[&str]) -> String {
    match names {
        [] => "it has no outputs".into(),
        [one] => format!("its only output is `{one}`"),
        many => {
            let list: Vec<String> = many.iter().map(|n| format!("`{n}`")).collect();
            format!("its outputs are {}", list.join(", "))
        }
    }
}

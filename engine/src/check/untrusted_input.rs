//! `untrusted-input`: data from the change (diff, title, body, branch names, restored
//! conversations) reaches a command line or an environment variable of a stage that holds a
//! secret or a write permission, where it could steer the command.

use super::{Check, Context};
use crate::contract::Role;
use crate::finding::{Confidence, Finding, Label, Severity};
use crate::flow::Kind;
use crate::model::Access;

pub struct UntrustedInput;

impl Check for UntrustedInput {
    fn id(&self) -> &'static str {
        "untrusted-input"
    }
    fn severity(&self) -> Severity {
        Severity::Error
    }
    fn summary(&self) -> &'static str {
        "untrusted data never reaches a command line or environment that holds a secret or write permission"
    }
    fn run(&self, cx: &Context<'_>, out: &mut Vec<Finding>) {
        let Some(flow) = cx.flow else { return };
        let p = cx.pipeline;
        for (i, stage) in p.stages.iter().enumerate() {
            let secret = flow.held[i]
                .first()
                .map(|&k| p.secrets[k].name.value.as_str());
            let write = stage
                .permissions
                .iter()
                .find(|w| w.value.access == Access::Write);
            let power = match (secret, write) {
                (Some(k), _) => format!("holds secret `{k}`"),
                (None, Some(w)) => format!("has `{}`", w.value),
                (None, None) => continue,
            };
            for input in &flow.inputs[i] {
                if !input.labels.untrusted {
                    continue;
                }
                let place = match input.role {
                    Role::CommandLine => "the command line",
                    Role::Environment => "an environment variable",
                    Role::Path => "a path",
                    _ => continue,
                };
                let path = flow.path(p, cx.dag, i, input, Kind::Untrusted);
                out.push(
                    Finding::new(
                        self.id(),
                        self.severity(),
                        format!(
                            "untrusted `{}` reaches {place} of `{}`, which {power}",
                            input.reference, stage.name.value
                        ),
                        Label::new(input.span, "untrusted data here"),
                    )
                    .related(Label::new(stage.name.span, format!("`{}` {power}", stage.name.value)))
                    .flow(path)
                    .help("pass it on stdin or in a file the command reads, or run the command in a stage without the secret")
                    .confidence(Confidence::High)
                    .stage(&stage.name.value),
                );
            }
        }
    }
}

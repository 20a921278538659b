//! `private-egress`: a private value (a model conversation, a restored plaintext) leaves the run
//! (published, kept in a store, or handed to an arbitrary command) without passing a
//! declassifier (`std/seal`).

use super::{Check, Context};
use crate::contract::Role;
use crate::finding::{Confidence, Finding, Label, Severity};
use crate::flow::Kind;

pub struct PrivateEgress;

impl Check for PrivateEgress {
    fn id(&self) -> &'static str {
        "private-egress"
    }
    fn severity(&self) -> Severity {
        Severity::Error
    }
    fn summary(&self) -> &'static str {
        "private data leaves the run only sealed"
    }
    fn run(&self, cx: &Context<'_>, out: &mut Vec<Finding>) {
        let Some(flow) = cx.flow else { return };
        let p = cx.pipeline;
        for (i, stage) in p.stages.iter().enumerate() {
            let Some(contract) = cx.registry.get(&stage.uses.value) else {
                continue;
            };
            for input in &flow.inputs[i] {
                if !input.labels.private {
                    continue;
                }
                let how = match input.role {
                    Role::Publish => "is published by",
                    Role::Keep => "is kept in a store by",
                    _ if contract.opaque => "is handed to the command of",
                    _ => continue,
                };
                let path = flow.path(p, cx.dag, i, input, Kind::Private);
                out.push(
                    Finding::new(
                        self.id(),
                        self.severity(),
                        format!(
                            "private `{}` {how} `{}` unsealed",
                            input.reference, stage.name.value
                        ),
                        Label::new(input.span, "private data leaves the run here"),
                    )
                    .flow(path)
                    .help("seal it first (a `std/seal` stage) and keep or publish the sealed blob")
                    .confidence(Confidence::High)
                    .stage(&stage.name.value),
                );
            }
        }
    }
}

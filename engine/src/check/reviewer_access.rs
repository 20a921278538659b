//! `reviewer-access`: a reviewer given shell and edit tools (`access="write"`) reads nothing the
//! change's author wrote. A prompt injection in the diff would otherwise run commands in the
//! review's environment and edit the checkout later stages read.

use super::reviewer::{ACCESS, StageReviewer, WRITE};
use super::{Check, Context};
use crate::finding::{Confidence, Finding, Label, Severity};
use crate::flow::Kind;

pub struct ReviewerAccess;

impl Check for ReviewerAccess {
    fn principle(&self) -> super::Principle {
        super::Principle::UnknownIsUntrusted
    }
    fn id(&self) -> &'static str {
        "reviewer-access"
    }
    fn severity(&self) -> Severity {
        Severity::Error
    }
    fn summary(&self) -> &'static str {
        "a reviewer that can run commands and write files reads no untrusted data"
    }
    fn run(&self, cx: &Context<'_>, out: &mut Vec<Finding>) {
        let Some(flow) = cx.flow else { return };
        let p = cx.pipeline;
        for (i, stage) in p.stages.iter().enumerate() {
            let Some(reviewer) = StageReviewer::of(cx, stage) else {
                continue;
            };
            let Some(access) = reviewer.child.prop(ACCESS) else {
                continue;
            };
            if access.value.as_str() != Some(WRITE) {
                continue;
            }
            let untrusted: Vec<_> = flow.inputs[i]
                .iter()
                .filter(|input| input.labels.untrusted)
                .collect();
            let Some(first) = untrusted.first() else {
                continue;
            };
            let name = stage.name.value.as_str();
            let kind = reviewer.kind.name;
            let mut read: Vec<String> = Vec::new();
            for input in &untrusted {
                let r = format!("`{}`", input.reference);
                if !read.contains(&r) {
                    read.push(r);
                }
            }
            let path = flow.path(p, cx.dag, i, first, Kind::Untrusted);
            out.push(
                Finding::new(
                    self.id(),
                    self.severity(),
                    format!(
                        "the `{kind}` reviewer of `{name}` can run commands and write files, and reads text an attacker wrote: {}",
                        read.join(", ")
                    ),
                    Label::new(access.span, "shell and edit tools"),
                )
                .related(Label::new(first.span, format!("`{}` carries text from the change", first.reference)))
                .flow(path)
                .help(format!(
                    "drop `{ACCESS}=\"{WRITE}\"` (read-only is the default): an instruction hidden in the change could make the reviewer run it; or give `{name}` only trusted inputs"
                ))
                .confidence(Confidence::High)
                .stage(name),
            );
        }
    }
}

//! `reviewer-access`: a reviewer given shell and edit tools (`access="write"`) reads nothing the
//! change's author wrote. A prompt injection in the diff would otherwise run commands in the
//! review's environment and edit the checkout later stages read.

use super::reviewer::{ACCESS, StageReviewer, WRITE};
use super::{Check, Context};
use crate::finding::Suppression;
use crate::finding::{Confidence, Finding, Label, Severity};
use crate::flow::{Flow, Kind, World};
use crate::span::Span;

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
        "a reviewer that can run commands and write files reads nothing the change wrote, and one that reads untrusted text has no network"
    }
    fn run(&self, cx: &Context<'_>, out: &mut Vec<Finding>) {
        let Some(flow) = cx.flow else { return };
        let p = cx.pipeline;
        for (i, stage) in p.stages.iter().enumerate() {
            let Some(reviewer) = StageReviewer::of(cx, stage) else {
                continue;
            };
            // Principle 1: a reviewer reads the change's words as instructions; with the
            // host's network it can be told to send what it reads anywhere.
            if !stage.network.is_empty() {
                out.extend(self.networked(cx, flow, i, reviewer.kind.name));
            }
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
            let name = stage.name.value.as_str();
            let kind = reviewer.kind.name;
            let Some(first) = untrusted.first() else {
                // Principle 1: the tree it works in is read at will, as its inputs are.
                if let Some(world) = flow.worlds[i].as_ref() {
                    out.extend(self.world(cx, flow, i, world, access.span, kind));
                }
                continue;
            };
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

impl ReviewerAccess {
    /// A reviewer that declares `network` and reads untrusted text (an input, or the tree it
    /// works in).
    fn networked(&self, cx: &Context<'_>, flow: &Flow, i: usize, kind: &str) -> Option<Finding> {
        let stage = &cx.pipeline.stages[i];
        let name = stage.name.value.as_str();
        let read = flow.inputs[i]
            .iter()
            .find(|x| x.labels.untrusted)
            .map(|x| format!("`{}`", x.reference))
            .or_else(|| flow.untrusted_world(i).map(World::describe))?;
        let port = stage.network.first()?;
        let (has, to, label) = if stage.host_network() {
            (
                "has the host's network",
                "any host",
                "the host's network".to_owned(),
            )
        } else {
            let hosts: Vec<String> = stage.network.iter().map(|e| e.value.to_string()).collect();
            let hosts = hosts.join(", ");
            (
                "has network",
                "the hosts it names",
                format!("reaches {hosts}"),
            )
        };
        Some(
            Finding::new(
                self.id(),
                self.severity(),
                format!(
                    "the `{kind}` reviewer of `{name}` reads text an attacker wrote ({read}) and {has} (`network`): an instruction in the change can make it send what it reads (the checkout, the conversation, the diff of a private repository) to {to} (principle 1, unknown is untrusted)"
                ),
                Label::new(port.span, label),
            )
            .related(Label::new(stage.name.span, format!("`{name}` reads {read}")))
            .help(
                "drop `network`: a model reviewer reaches its model's API through the run's proxy, its only network; what a reviewer must fetch, a stage before it fetches and hands on as a declared output",
            )
            .confidence(Confidence::High)
            .stage(name),
        )
    }

    /// A reviewer with tools that reads no untrusted input but works in a tree the change wrote:
    /// a `workspace` commit's, or the checkout. Shown as allowed when the pipeline vouches for
    /// the checkout it works in.
    fn world(
        &self,
        cx: &Context<'_>,
        flow: &Flow,
        i: usize,
        world: &World,
        access: Span,
        kind: &str,
    ) -> Option<Finding> {
        let stage = &cx.pipeline.stages[i];
        let name = stage.name.value.as_str();
        let lifted = match flow.untrusted_world(i) {
            Some(_) => None,
            None => {
                let t = cx.registry.checkout_vouched(cx.pipeline)?;
                Some(Suppression {
                    span: t.span,
                    reason: format!("trusted checkout: {}", t.reason.value.trim()),
                })
            }
        };
        let tree = world.describe();
        let place = stage
            .children
            .iter()
            .find(|c| c.name.value == "workspace")
            .map_or(stage.name.span, |c| {
                c.args.first().map_or(c.name.span, |a| a.span)
            });
        let mut finding = Finding::new(
            self.id(),
            self.severity(),
            format!(
                "the `{kind}` reviewer of `{name}` can run commands and write files, and works in {tree}, whose files the change's author wrote: an instruction in any of them is text the model reads (principle 1, unknown is untrusted)"
            ),
            Label::new(access, "shell and edit tools"),
        )
        .related(Label::new(place, format!("`{name}` works in {tree}")))
        .help(format!(
            "drop `{ACCESS}=\"{WRITE}\"` (read-only is the default): a file of the change could make the reviewer run what it says; a reviewer with tools may work only in a tree the pipeline's owners wrote (a checkout of the base, vouched for with `trusted \"checkout\" reason=\"…\"`)"
        ))
        .confidence(Confidence::High)
        .stage(name);
        finding.suppressed = lifted;
        Some(finding)
    }
}

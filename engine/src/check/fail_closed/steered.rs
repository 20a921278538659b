//! A review that the change can call off is no review: a stage that reviews untrusted data
//! (it fences a value for its program, as `std/review`'s `untrusted` does) must not be gated by
//! a value that a program chose after reading untrusted data.
//!
//! A reviewer's `clean` or `commented`, a `run` stage's `bool` or its `ok` are bits its program
//! chooses, and a program that read the change (its diff, its files, its title) chooses them as
//! the change tells it: a triage pass that a prompt injection makes report nothing, and the full
//! review it gates never runs. What the publishing stage then shows is "not reviewed" at best,
//! and nothing at all when it is gated on the review (principle 4: a verdict covers what it
//! claims; principle 1: the change's text is the attacker's). One finding per gated stage, on
//! the first such value its `when` reads.

use super::ID;
use crate::check::Context;
use crate::contract::Effect;
use crate::finding::{Confidence, Finding, Label, Severity};
use crate::model::{Reference, Value};

pub(super) fn steered_reviews(cx: &Context<'_>, out: &mut Vec<Finding>) {
    let Some(flow) = cx.flow else { return };
    let p = cx.pipeline;
    for stage in &p.stages {
        let Some(when) = &stage.when else { continue };
        let Some(contract) = cx.registry.get(&stage.uses.value) else {
            continue;
        };
        // What it reviews: the values it fences for its program.
        let reviewed: Vec<String> = stage
            .children
            .iter()
            .filter(|c| contract.child_spec(&c.name.value).is_some_and(|s| s.fences))
            .flat_map(|c| c.args.iter())
            .flat_map(|a| match &a.value {
                Value::Reference(r) => vec![r],
                Value::Template(t) => t.references().collect(),
                _ => Vec::new(),
            })
            .map(|r| format!("`{r}`"))
            .collect();
        if reviewed.is_empty() {
            continue;
        }
        let mut refs: Vec<&Reference> = Vec::new();
        when.value.collect_references(&mut refs);
        let steered = refs.into_iter().find_map(|r| {
            let g = cx.dag.stage_index(&r.stage)?;
            let guard = cx.registry.get(&p.stages[g].uses.value)?;
            if !(guard.opaque || guard.has_effect(Effect::Executes)) {
                return None;
            }
            let read = flow.inputs[g]
                .iter()
                .find(|x| x.labels.untrusted)
                .map(|x| format!("untrusted `{}`", x.reference))
                .or_else(|| {
                    flow.untrusted_world(g)
                        .map(|_| "the files of the tree it works in".to_owned())
                })
                .or_else(|| {
                    flow.runs_untrusted_checkout(g)
                        .then(|| "a program of the checkout".to_owned())
                })?;
            Some((r, g, read))
        });
        let Some((r, g, read)) = steered else {
            continue;
        };
        let name = &stage.name.value;
        let guard = &p.stages[g].name.value;
        out.push(
            Finding::new(
                ID,
                Severity::Error,
                format!(
                    "whether `{name}` reviews {} is decided by `{r}`, which `{guard}`'s program chooses after reading {read}: the change can call its own review off (principle 4: a verdict covers what it claims)",
                    reviewed.join(", ")
                ),
                Label::new(r.span, "chosen by a program that read untrusted data"),
            )
            .related(Label::new(
                p.stages[g].name.span,
                format!("`{guard}` reads {read}"),
            ))
            .help(format!(
                "run `{name}` whatever `{guard}` says (let a triage rank or route findings, never skip the review), or gate it on what no program that read the change chooses (`gather.changed`)"
            ))
            .confidence(Confidence::High)
            .stage(name),
        );
    }
}

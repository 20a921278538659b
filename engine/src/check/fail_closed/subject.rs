//! A review covers the change its verdict is published for: the subject of a stage that
//! reviews (the values it fences for its program, `std/review`'s `untrusted`) is not only a
//! part of the change (`std/gather`'s `since-last-review`).
//!
//! A try that resumes a conversation reads the part instead of the subject, by design (the
//! `since-last-review` slot) and knows the rest from the conversation. A fresh try (no
//! conversation: the key missing, the restore fallen back, the first review) reads the subject,
//! and when that is only what changed since the last review, it reviews the last push alone
//! while the post publishes its verdict for the whole change, every earlier finding resolved
//! (principle 4: a verdict covers what it claims). Values are followed one step: a stage that
//! renders a part into something else is not.

use super::ID;
use crate::check::Context;
use crate::finding::{Confidence, Finding, Label, Severity};
use crate::model::{Reference, Value};

pub(super) fn partial_subjects(cx: &Context<'_>, feeds_sink: &[bool], out: &mut Vec<Finding>) {
    let p = cx.pipeline;
    for (i, stage) in p.stages.iter().enumerate() {
        // A review whose verdict reaches nothing published or kept may review what it likes.
        if !feeds_sink.get(i).copied().unwrap_or(false) {
            continue;
        }
        let Some(contract) = cx.registry.get(&stage.uses.value) else {
            continue;
        };
        let subject: Vec<&Reference> = stage
            .children
            .iter()
            .filter(|c| {
                contract
                    .child_spec(&c.name.value)
                    .is_some_and(|s| s.fences && !s.delta)
            })
            .flat_map(|c| c.args.iter())
            .flat_map(|a| match &a.value {
                Value::Reference(r) => vec![r],
                Value::Template(t) => t.references().collect(),
                _ => Vec::new(),
            })
            .collect();
        let is_part = |r: &Reference| {
            cx.dag
                .stage_index(&r.stage)
                .and_then(|g| cx.registry.get(&p.stages[g].uses.value))
                .and_then(|c| c.output_spec(&r.output))
                .is_some_and(|o| o.part)
        };
        // No subject at all is part 4's (a review of nothing).
        let Some(first) = subject.first() else {
            continue;
        };
        if !subject.iter().all(|r| is_part(r)) {
            continue;
        }
        let name = &stage.name.value;
        let parts: Vec<String> = subject.iter().map(|r| format!("`{r}`")).collect();
        let delta_slot = contract
            .children
            .iter()
            .find(|s| s.fences && s.delta)
            .map(|s| s.name.as_str());
        let subject_slot = contract
            .children
            .iter()
            .find(|s| s.fences && !s.delta)
            .map_or("untrusted", |s| s.name.as_str());
        let help = match delta_slot {
            Some(delta) => format!(
                "review the whole change as the subject (`{subject_slot} \"{}.diff\"`) and give the part as `{delta} \"{}\"`: a resumed try reads that instead",
                first.stage,
                subject
                    .iter()
                    .map(|r| r.to_string())
                    .collect::<Vec<_>>()
                    .join("\" \"")
            ),
            None => format!(
                "review the whole change as the subject (`{subject_slot} \"{}.diff\"`)",
                first.stage
            ),
        };
        out.push(
            Finding::new(
                ID,
                Severity::Error,
                format!(
                    "`{name}` reviews only {}, a part of the change (what changed since the last review): a fresh try, with no conversation restored (the first review, a key missing, a restore fallen back), reviews the last push alone, and the verdict published for the change marks every earlier finding resolved (principle 4: a verdict covers what it claims)",
                    parts.join(", ")
                ),
                Label::new(first.span, "a part of the change"),
            )
            .help(help)
            .confidence(Confidence::High)
            .stage(name),
        );
    }
}

//! A review that the change can call off is no review, and an action the change can call on is
//! the change's own: a stage that reviews untrusted data (it fences a value for its program, as
//! `std/review`'s `untrusted` does), or one that acts on the repository (a write beyond comments
//! and labels: the scopes a platform says only inform), must not be gated by a value that
//! a program chose after reading untrusted data.
//!
//! A reviewer's `clean` or `commented`, a `run` stage's `bool` or its `ok` are bits its program
//! chooses, and a program that read the change (its diff, its files, its title) chooses them as
//! the change tells it: a triage pass that a prompt injection makes report nothing, and the full
//! review it gates never runs. What the publishing stage then shows is "not reviewed" at best,
//! and nothing at all when it is gated on the review (principle 4: a verdict covers what it
//! claims; principle 1: the change's text is the attacker's). Gating a merge, an approval, a
//! push, a release or a deployment on the same bit hands the action to whoever writes "report no
//! findings" into the change. Any such bit is followed, in either polarity (`!review.commented`
//! turns an action on when the reviewer is told to say nothing), and so is any bit of a program
//! that fetched something at run time (a comment read from the forge's API). A verdict may
//! route what people read (a label, a comment); what the repository becomes stays with people or
//! with the forge's own rules. One finding per gated stage, on the first such value its `when`
//! reads.

use super::ID;
use super::chooser::first_chosen;
use crate::check::Context;
use crate::contract::Effect;
use crate::finding::{Confidence, Finding, Label, Severity};
use crate::model::{Reference, Value};
use crate::span::Span;

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
        let acting = if reviewed.is_empty() {
            let Some(acting) = acting(cx, stage) else {
                continue;
            };
            Some(acting)
        } else {
            None
        };
        let mut refs: Vec<&Reference> = Vec::new();
        when.value.collect_references(&mut refs);
        // Any bit the program chooses can turn an action on: a verdict, or its negation
        // (`!review.commented`: a reviewer told to say nothing).
        let steered = first_chosen(cx, flow, refs);
        let Some((r, g, read)) = steered else {
            continue;
        };
        let name = &stage.name.value;
        let guard = &p.stages[g].name.value;
        let (message, help, label) = match &acting {
            None => (
                format!(
                    "whether `{name}` reviews {} is decided by `{r}`, which `{guard}`'s program chooses after reading {read}: the change can call its own review off (principle 4: a verdict covers what it claims)",
                    reviewed.join(", ")
                ),
                format!(
                    "run `{name}` whatever `{guard}` says (let a triage rank or route findings, never skip the review), or gate it on what no program that read the change chooses (`gather.changed`)"
                ),
                None,
            ),
            Some((span, what)) => (
                format!(
                    "whether `{name}` acts on the repository ({what}) is decided by `{r}`, which `{guard}`'s program chooses after reading {read}: the change can call the action on itself (principle 1: the change's text is the attacker's)"
                ),
                format!(
                    "let `{r}` only say something to people (a label, a comment: `issues`) and leave the action to a person or to a rule the forge enforces (a required check run that `std/post` records), or gate `{name}` on what no program that read the change chooses"
                ),
                Some(Label::new(*span, "acts on the repository")),
            ),
        };
        let mut finding = Finding::new(
            ID,
            Severity::Error,
            message,
            Label::new(r.span, "chosen by a program that read untrusted data"),
        )
        .related(Label::new(
            p.stages[g].name.span,
            format!("`{guard}` reads {read}"),
        ));
        if let Some(label) = label {
            finding = finding.related(label);
        }
        out.push(finding.help(help).confidence(Confidence::High).stage(name));
    }
}

/// What `stage`'s program can write that records a verdict on the change (a scope its platform
/// says records one: a commit status, a check run, a label, a review or a merge of the pull
/// request),
/// in words, with where it is written: a write in its `permissions`, or a secret it holds that
/// can write there (unknown authority can: a secret with no `can=`).
fn records_verdict(cx: &Context<'_>, stage: &crate::model::Stage) -> Option<(Span, String)> {
    can_write(cx, stage, &|w| {
        crate::permission::records_verdict(cx.registry, w)
    })
}

/// A review that happened is not a review that passed: a write that records a verdict on the
/// change (a commit status set to success, a label a merge rule requires, an approval, a merge
/// of the pull request: a scope that records a verdict) gated on whether a review was
/// published or run (`post.posted`, `review.commented`), and on no verdict, acts whatever the
/// review found, and what it sets reads as the review's approval (principle 4: a verdict covers
/// what it claims). A gate that also reads a verdict, or a bit a program chose
/// (`review.commented`), is [`steered_reviews`]'; a stage that does not wait for a review claims
/// nothing about it.
pub(super) fn happened_as_passed(cx: &Context<'_>, out: &mut Vec<Finding>) {
    let p = cx.pipeline;
    for stage in &p.stages {
        let Some(when) = &stage.when else { continue };
        let Some((span, what)) = records_verdict(cx, stage) else {
            continue;
        };
        let mut refs: Vec<&Reference> = Vec::new();
        when.value.collect_references(&mut refs);
        let spec = |r: &Reference| {
            let g = cx.dag.stage_index(&r.stage)?;
            let kind = cx.registry.get(&p.stages[g].uses.value)?;
            Some((kind, kind.output_spec(&r.output)?))
        };
        // A verdict, or a bit a program chose, is the steered gate's (one root cause, one
        // finding).
        if refs.iter().any(|r| spec(r).is_some_and(|(_, o)| o.verdict))
            || cx
                .flow
                .is_some_and(|flow| first_chosen(cx, flow, refs.clone()).is_some())
        {
            continue;
        }
        // Whether a review was published, or run: a bit of a kind that publishes a review or
        // gives a verdict of its own, which is not that verdict.
        let Some(r) = refs.into_iter().find(|r| {
            spec(r).is_some_and(|(kind, o)| {
                o.ty == crate::contract::OutputType::Bool
                    && (kind.has_effect(Effect::Publishes)
                        || kind.outputs.iter().any(|o| o.verdict))
            })
        }) else {
            continue;
        };
        let name = &stage.name.value;
        out.push(
            Finding::new(
                ID,
                Severity::Error,
                format!(
                    "`{name}` can record a verdict on the change ({what}) once `{r}` says a review happened, whatever the review found: what it sets reads as the review's approval (principle 4: a verdict covers what it claims)"
                ),
                Label::new(r.span, "says a review happened, not what it found"),
            )
            .related(Label::new(span, "can record a verdict"))
            .help(
                "record the review's verdict where it is decided by its findings (`std/post`'s `check-run` with `block-on`) and require that record, or leave the action to a person; a stage that records nothing says so: no `statuses`, `checks` or `pull-requests` write in its `permissions`, and what each secret it holds can do (`can=\"\"` on a webhook, `can=\"contents:write\"` on a bot that commits)"
                    .to_string(),
            )
            .confidence(Confidence::High)
            .stage(name),
        );
    }
}

/// What `stage` can do that acts on the repository, in words, with where it is written: a write
/// in its `permissions` in a scope its platform does not say only informs, or a secret it holds that can
/// write there (one with no `can=` may do anything; the forge's own token is the job's, so its
/// reach is the stage's `permissions`). Only the pipeline's own programs are judged: a kind of
/// the standard library says what it does.
fn acting(cx: &Context<'_>, stage: &crate::model::Stage) -> Option<(Span, String)> {
    can_write(cx, stage, &|w| crate::permission::acts(cx.registry, w))
}

/// What `stage`'s program can write of what `writes` admits, in words, with where it is
/// written: a write in its `permissions`, or a secret it holds that can write there (one with
/// no `can=`, or a contradicted one, may do anything). Only the pipeline's own programs are
/// judged: a kind of the standard library says what it does.
fn can_write(
    cx: &Context<'_>,
    stage: &crate::model::Stage,
    writes: &dyn Fn(&crate::model::Permission) -> bool,
) -> Option<(Span, String)> {
    use crate::permission::{Capability, capability};
    let p = cx.pipeline;
    if !cx.registry.get(&stage.uses.value).is_some_and(|c| c.opaque) {
        return None;
    }
    if let Some(w) = stage.permissions.iter().find(|w| writes(&w.value)) {
        return Some((w.span, format!("its `permissions` grant `{}`", w.value)));
    }
    let flow = cx.flow?;
    let i = cx.dag.stage_index(&stage.name.value)?;
    flow.held[i].iter().find_map(|&k| {
        let secret = &p.secrets[k];
        let what = match capability(cx.registry, p, k) {
            Capability::Declared(list) => list.iter().find(|w| writes(&w.value)).map(|w| {
                format!(
                    "it holds `{}`, which can write `{}`",
                    secret.name.value, w.value
                )
            })?,
            Capability::Undeclared | Capability::Contradicted(_) => format!(
                "it holds `{}`, which can write {}",
                secret.name.value,
                capability(cx.registry, p, k).describe_writes()
            ),
            Capability::ForgeToken | Capability::Nothing => return None,
        };
        Some((secret.name.span, what))
    })
}

/// An approval (a setting that publishes a verdict on the whole head and names no record:
/// `std/aggregate`'s `approve "clean"`) decided by what programs that read the change chose:
/// a prompt injection that makes the reviewers report nothing approves the pull request, and an
/// approval counts toward a required review (principle 1). A reviewer of fixed rules cannot be
/// told anything, but what it does not match it approves, and an approval says the change was
/// read (principle 4). One finding per approval, on the first such review it reads.
pub(super) fn steered_approvals(cx: &Context<'_>, out: &mut Vec<Finding>) {
    let Some(flow) = cx.flow else { return };
    let p = cx.pipeline;
    for (stage, child, spec, arg) in super::subject::whole_head_claims(cx) {
        if spec.names_record {
            continue;
        }
        let mut refs: Vec<&Reference> = Vec::new();
        for c in &stage.children {
            for a in &c.args {
                a.value.collect_references(&mut refs);
            }
        }
        let steered = first_chosen(cx, flow, refs);
        let Some((r, g, read)) = steered else {
            continue;
        };
        let name = &stage.name.value;
        let what = &child.name.value;
        let guard = &p.stages[g].name.value;
        out.push(
            Finding::new(
                ID,
                Severity::Error,
                format!(
                    "`{name}`'s `{what}` approves the pull request on what `{guard}`'s program chose after reading {read}: the change can approve itself (a prompt injection that makes its reviewer report nothing, or code its rules do not match), and an approval counts toward a required review (principle 1: the change's text is the attacker's)"
                ),
                Label::new(arg.span, "an approval the change decides"),
            )
            .related(Label::new(r.span, format!("chosen by `{guard}`'s program")))
            .help(format!(
                "do not approve (`{what} \"never\"`): let the review's comment and its check run carry the verdict, and leave approvals to people; if this approval counts toward no rule of the repository, say so with an `allow` and its reason"
            ))
            .confidence(Confidence::High)
            .stage(name),
        );
    }
}

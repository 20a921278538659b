//! A stage that publishes a review publishes every verdict: it is not gated by the verdict of a
//! review whose comment or findings it publishes.
//!
//! A review's verdict (an output its contract marks as one: `std/review`'s `clean`,
//! `std/aggregate`'s `clean` and `verdict`) is what the publishing stage exists to show. Gated on
//! it, the stage runs for one verdict only: a review with findings publishes nothing, its check
//! run is never recorded, and the comment the forge keeps is the last one that passed, standing
//! as if it were this head's (principle 4: a verdict covers what it claims). `when=
//! "review.commented"` is no verdict: it routes a review that did not happen, whatever it would
//! have said. The reviews followed are those whose outputs reach the stage as data, through any
//! number of stages (a lens through `std/aggregate`). One finding per publishing stage, on the
//! first verdict its `when` reads.
//!
//! Any other verdict or guard read by such a `when` (a verdict of a review it does not publish, a
//! scan's `clean`) gates it the same way: for one outcome nothing is published and the run
//! passes. So does `on-error="skip"` on the stage: a failed publication is a skipped stage, and
//! the run passes with nothing published (`fallback` is not: its `posted` output says so, and
//! the run warns).
//!
//! The same holds for a setting that makes the verdict constant: a check run recorded with
//! `block-on "never"` passes whatever the review found, so a rule that requires it requires
//! nothing (a warning: the choice may be meant, and says so with an `allow`).

use super::ID;
use crate::check::Context;
use crate::contract::Effect;
use crate::finding::{Confidence, Finding, Label, Severity};
use crate::model::Reference;

/// Whether `r` names a verdict (`OutputSpec::verdict`) or a guard's output (`Vets`).
fn is_verdict(cx: &Context<'_>, r: &Reference) -> Option<usize> {
    let g = cx.dag.stage_index(&r.stage)?;
    let contract = cx.registry.get(&cx.pipeline.stages[g].uses.value)?;
    let verdict = contract.output_spec(&r.output).is_some_and(|o| o.verdict)
        || contract.vets.as_ref().is_some_and(|v| v.output == r.output);
    verdict.then_some(g)
}

pub(super) fn selective_publishers(cx: &Context<'_>, out: &mut Vec<Finding>) {
    constant_verdicts(cx, out);
    let p = cx.pipeline;
    for (i, stage) in p.stages.iter().enumerate() {
        if !cx
            .registry
            .get(&stage.uses.value)
            .is_some_and(|c| c.has_effect(Effect::Publishes))
        {
            continue;
        }
        let published = data_ancestors(cx, i);
        let publishes_a_review = published.iter().enumerate().any(|(g, &reads)| {
            reads
                && cx
                    .registry
                    .get(&p.stages[g].uses.value)
                    .is_some_and(|c| c.outputs.iter().any(|o| o.verdict))
        });
        if publishes_a_review && stage.on_error.value == crate::model::OnError::Skip {
            skipped_publisher(stage, out);
        }
        let Some(when) = &stage.when else { continue };
        let refs = refs_of(when);
        let verdict = refs.iter().copied().find_map(|r| {
            let g = cx.dag.stage_index(&r.stage)?;
            if !published[g] {
                return None;
            }
            cx.registry
                .get(&p.stages[g].uses.value)?
                .output_spec(&r.output)
                .is_some_and(|o| o.verdict)
                .then_some((r, g))
        });
        let Some((r, g)) = verdict else {
            if publishes_a_review
                && let Some((r, g)) = refs
                    .iter()
                    .find_map(|&r| Some((r, is_verdict(cx, r)?)))
                    .filter(|&(_, g)| !publishes_what_it_vets(cx, stage, g))
            {
                other_verdict(cx, stage, r, g, out);
            }
            continue;
        };
        let name = &stage.name.value;
        let reviewer = &p.stages[g].name.value;
        out.push(
            Finding::new(
                ID,
                Severity::Error,
                format!(
                    "`{name}` publishes `{reviewer}`'s review only when `{r}` lets it run: a review with the other verdict is never published, no check run records it, and the last published comment stands as this head's (principle 4: a verdict covers what it claims)"
                ),
                Label::new(r.span, format!("`{reviewer}`'s verdict")),
            )
            .related(Label::new(
                p.stages[g].name.span,
                format!("`{name}` publishes what `{reviewer}` found"),
            ))
            .help(format!(
                "publish every verdict: drop `{r}` from `{name}`'s `when` (gate it on `{reviewer}.commented`, which routes a review that did not happen, whatever it found), and let `block-on` or `request-changes-on` decide pass or fail"
            ))
            .confidence(Confidence::High)
            .stage(name),
        );
    }
}

/// Whether `stage` publishes a value guard `g` vouches for (`std/scan`'s `target`): then it must
/// wait for the guard (`vetting`), and the gate is the point.
fn publishes_what_it_vets(cx: &Context<'_>, stage: &crate::model::Stage, g: usize) -> bool {
    let guard = &cx.pipeline.stages[g];
    let Some(vets) = cx
        .registry
        .get(&guard.uses.value)
        .and_then(|c| c.vets.as_ref())
    else {
        return false;
    };
    let mut vetted: Vec<&Reference> = Vec::new();
    for value in guard.children_named(&vets.child).flat_map(|c| c.values()) {
        value.value.collect_references(&mut vetted);
    }
    let mut read: Vec<&Reference> = Vec::new();
    for value in stage.children.iter().flat_map(|c| c.values()) {
        value.value.collect_references(&mut read);
    }
    read.iter().any(|r| {
        vetted
            .iter()
            .any(|v| v.stage == r.stage && v.output == r.output)
    })
}

/// Every reference a `when` reads.
fn refs_of(when: &crate::span::Spanned<crate::model::Expr>) -> Vec<&Reference> {
    let mut refs = Vec::new();
    when.value.collect_references(&mut refs);
    refs
}

/// Publisher `stage` is gated by `r`, a verdict or guard of stage `g` that is not a review it
/// publishes (a scan of the conversation, another review's verdict).
fn other_verdict(
    cx: &Context<'_>,
    stage: &crate::model::Stage,
    r: &Reference,
    g: usize,
    out: &mut Vec<Finding>,
) {
    let name = &stage.name.value;
    let gate = &cx.pipeline.stages[g].name.value;
    out.push(
        Finding::new(
            ID,
            Severity::Error,
            format!(
                "`{name}` publishes the review only when `{r}` lets it run: with `{gate}`'s other outcome nothing is published, no check run records it, the run passes, and the last published comment stands as this head's (principle 4: a verdict covers what it claims)"
            ),
            Label::new(r.span, format!("`{gate}`'s verdict")),
        )
        .related(Label::new(stage.name.span, format!("`{name}` publishes the review")))
        .help(format!(
            "publish every outcome: drop `{r}` from `{name}`'s `when`; gate what must not leave on it instead (`std/seal`'s `when`, an `upload`), or let the review's own verdict decide pass or fail"
        ))
        .confidence(Confidence::High)
        .stage(name),
    );
}

/// Publisher `stage` skips itself on an error: the run passes with nothing published.
fn skipped_publisher(stage: &crate::model::Stage, out: &mut Vec<Finding>) {
    let name = &stage.name.value;
    out.push(
        Finding::new(
            ID,
            Severity::Error,
            format!(
                "`{name}` publishes the review, and its failure reads as a success (on-error=\"skip\"): the run passes with nothing published, no check run records the head, and the last published comment stands as this head's (principle 4: a verdict covers what it claims)"
            ),
            Label::new(stage.on_error.span, "a failed publication is skipped"),
        )
        .help(format!(
            "let `{name}` fail the run (remove `on-error`), or write `on-error=\"fallback\"`, whose `posted` output says the review was not recorded and whose status the run shows as a warning"
        ))
        .confidence(Confidence::High)
        .stage(name),
    );
}

/// The stages whose outputs reach stage `i` as data, directly or through others.
fn data_ancestors(cx: &Context<'_>, i: usize) -> Vec<bool> {
    let mut seen = vec![false; cx.pipeline.stages.len()];
    let mut todo = vec![i];
    while let Some(s) = todo.pop() {
        for (producer, edge) in cx.dag.producers(s) {
            if !edge.data.is_empty() && !seen[producer] {
                seen[producer] = true;
                todo.push(producer);
            }
        }
    }
    seen
}

/// A publisher that records a verdict on the head (a check run: `ChildSpec::claims_whole`) with
/// a setting under which it cannot fail (`ChildSpec::cannot_fail`).
fn constant_verdicts(cx: &Context<'_>, out: &mut Vec<Finding>) {
    use crate::model::Value;
    capped_verdicts(cx, out);
    for stage in &cx.pipeline.stages {
        let Some(contract) = cx.registry.get(&stage.uses.value) else {
            continue;
        };
        let records = stage.children.iter().find(|c| {
            contract
                .child_spec(&c.name.value)
                .is_some_and(|s| s.claims_whole.is_some() && s.names_record)
        });
        let Some(record) = records else { continue };
        for child in &stage.children {
            let Some(spec) = contract.child_spec(&child.name.value) else {
                continue;
            };
            let Some(arg) = child.args.first() else {
                continue;
            };
            let Value::String(word) = &arg.value else {
                continue;
            };
            if !spec.cannot_fail.contains(&word.as_str()) {
                continue;
            }
            let name = &stage.name.value;
            let setting = &child.name.value;
            out.push(
                Finding::new(
                    ID,
                    Severity::Warning,
                    format!(
                        "`{name}` records its `{}` with `{setting} \"{word}\"`, under which it passes whatever the review found: a rule that requires it requires nothing (principle 4: a verdict covers what it claims)",
                        record.name.value
                    ),
                    Label::new(arg.span, "cannot fail"),
                )
                .related(Label::new(record.name.span, "a verdict on the head"))
                .help(format!(
                    "let the findings decide: remove `{setting} \"{word}\"` (the default blocks on errors); to publish findings without blocking, record no `{}`",
                    record.name.value
                ))
                .confidence(Confidence::High)
                .stage(name),
            );
        }
    }
}

/// A publisher that records a verdict on the head (a check run) failed only by findings more
/// severe than any that can reach it: every lens it publishes is capped below its `block-on`
/// ([`ChildSpec::blocks_from`], `lens::most_severe`), so it passes whatever the review found.
///
/// [`ChildSpec::blocks_from`]: crate::contract::ChildSpec::blocks_from
fn capped_verdicts(cx: &Context<'_>, out: &mut Vec<Finding>) {
    use crate::check::lens::{most_severe, reference};
    use crate::contract::{OutputType, REVIEW_SEVERITIES, review_severity_rank};
    use crate::model::Value;
    for stage in &cx.pipeline.stages {
        let Some(contract) = cx.registry.get(&stage.uses.value) else {
            continue;
        };
        let Some(record) = stage.children.iter().find(|c| {
            contract
                .child_spec(&c.name.value)
                .is_some_and(|s| s.claims_whole.is_some() && s.names_record)
        }) else {
            continue;
        };
        let Some((spec, written)) = contract.children.iter().find_map(|s| {
            let blocks = s.blocks_from?;
            Some((
                s,
                (
                    blocks,
                    stage.children.iter().find(|c| c.name.value == s.name),
                ),
            ))
        }) else {
            continue;
        };
        let ((blocks, child), setting) = (written, &spec.name);
        let word = match child.and_then(|c| c.args.first()).map(|a| &a.value) {
            Some(Value::String(w)) => w.as_str(),
            Some(_) => continue,
            None => blocks.default,
        };
        let Some(threshold) = blocks
            .from
            .iter()
            .find(|(w, _)| *w == word)
            .and_then(|(_, s)| review_severity_rank(s))
        else {
            // A word that fails nothing is `cannot_fail`'s.
            continue;
        };
        let published: Vec<&Reference> = stage
            .children
            .iter()
            .filter(|c| {
                contract
                    .child_spec(&c.name.value)
                    .is_some_and(|s| s.accepts.contains(&OutputType::Findings))
            })
            .flat_map(|c| c.args.iter())
            .filter_map(|a| reference(&a.value))
            .collect();
        let Some(most) = published.iter().map(|r| most_severe(cx, r)).max() else {
            continue;
        };
        if most >= threshold {
            continue;
        }
        let name = &stage.name.value;
        // The word that blocks on the most severe finding the lenses may report.
        let fix = blocks
            .from
            .iter()
            .filter_map(|(w, s)| Some((*w, review_severity_rank(s)?)))
            .filter(|(_, rank)| *rank <= most)
            .max_by_key(|(_, rank)| *rank)
            .map_or("any", |(w, _)| w);
        let (most, least) = (REVIEW_SEVERITIES[most], REVIEW_SEVERITIES[threshold]);
        let (span, label) = match child.and_then(|c| c.args.first()) {
            Some(arg) => (arg.span, "cannot fail".to_string()),
            None => (
                record.name.span,
                format!("cannot fail: `{setting}` is `{word}` when left out"),
            ),
        };
        out.push(
            Finding::new(
                ID,
                Severity::Warning,
                format!(
                    "`{name}` records its `{}` failed by a finding of {least} severity at least, but every lens whose findings reach it is capped at {most}: it passes whatever the review found, and a rule that requires it requires nothing (principle 4: a verdict covers what it claims)",
                    record.name.value
                ),
                Label::new(span, label),
            )
            .related(Label::new(published[0].span, "findings of lenses capped below it"))
            .help(format!(
                "block on what the lenses may report (`{setting} \"{fix}\"`), or add a lens that may report {least} findings"
            ))
            .confidence(Confidence::High)
            .stage(name),
        );
    }
}

/// A publisher publishes a review as the review made it: a program between the two (a `run`
/// stage that reads a review's findings or comment and hands the post what it kept or composed:
/// `findings "filter.kept"`, `comment "compose.comment"`) that also reads what the change chose
/// (the files of the checkout it works in, a program of the checkout, what it fetched, another
/// untrusted value such as the description) lets the change choose what is published as the
/// review: which findings, and words in the bot's voice around them (principles 1 and 4). What it
/// reads of the review's own outputs is the review's, and no finding.
pub(super) fn steered_filters(cx: &Context<'_>, out: &mut Vec<Finding>) {
    use crate::contract::{OutputType, Role};
    let Some(flow) = cx.flow else { return };
    let p = cx.pipeline;
    let type_of = |r: &Reference| super::output_type(cx, r);
    // An output of a stage that reviews (a kind with a verdict of its own).
    let of_review = |r: &Reference| {
        cx.dag.stage_index(&r.stage).is_some_and(|g| {
            cx.registry
                .get(&p.stages[g].uses.value)
                .is_some_and(|c| c.outputs.iter().any(|o| o.verdict))
        })
    };
    let mut reported = Vec::new();
    for stage in &p.stages {
        let Some(contract) = cx.registry.get(&stage.uses.value) else {
            continue;
        };
        if !contract.has_effect(Effect::Publishes) {
            continue;
        }
        for child in &stage.children {
            if contract
                .child_spec(&child.name.value)
                .is_none_or(|s| s.role != Role::Publish)
            {
                continue;
            }
            for arg in &child.args {
                let crate::model::Value::Reference(r) = &arg.value else {
                    continue;
                };
                let Some(g) = cx.dag.stage_index(&r.stage) else {
                    continue;
                };
                let filter = &p.stages[g];
                if reported.contains(&g)
                    || !cx
                        .registry
                        .get(&filter.uses.value)
                        .is_some_and(|c| c.opaque)
                {
                    continue;
                }
                // A program that makes what is published from a review's outputs; a program
                // that makes findings of its own is what it is (`unvalidated-findings` reads
                // those).
                let remakes = flow.inputs[g].iter().any(|x| {
                    of_review(&x.reference) || type_of(&x.reference) == Some(OutputType::Findings)
                });
                if !remakes {
                    continue;
                }
                let read = super::chooser::chooser_read_but(cx, flow, g, &|x| {
                    of_review(&x.reference) || type_of(&x.reference) == Some(OutputType::Findings)
                });
                let Some(read) = read else { continue };
                reported.push(g);
                let what = if type_of(r) == Some(OutputType::Findings) {
                    "which findings are published, and the published review claims it found nothing else"
                } else {
                    "what is published as the review, in the pipeline's voice"
                };
                out.push(
                    Finding::new(
                        ID,
                        Severity::Error,
                        format!(
                            "`{}` publishes what `{}` made of the review (`{r}`), and what `{}`'s program makes depends on {read}: the change chooses {what} (principle 1, unknown is untrusted; principle 4, coverage is a promise)",
                            stage.name.value, filter.name.value, filter.name.value
                        ),
                        Label::new(filter.name.span, format!("depends on {read}")),
                    )
                    .related(Label::new(arg.span, "published"))
                    .help(format!(
                        "let `{}` read only the review's outputs and files the change cannot write (an absolute path outside the checkout, `cwd \"{{work}}\"`), or publish the review's own outputs directly",
                        filter.name.value
                    ))
                    .confidence(Confidence::High)
                    .stage(&filter.name.value),
                );
            }
        }
    }
}

//! `fail-closed`: a failure never reads as a success. Nine parts, each reporting a root cause
//! once, labelled where it is written:
//!
//! - guards ([`guards`]): a stage that keeps or publishes, or whose output is kept or
//!   published, must not be opened by a guard's failure. For each guard its `when` reads, every
//!   outcome other than success (a fallback, a skip, a missing secret) is tried with the same
//!   semantics the executor uses (`policy`); if the condition can still be true, the outcome
//!   that opens it is reported (at the `fallback` override that reads as success, when that is
//!   what opens it);
//! - vetting ([`vetting`]): data that a guard vouches for (`std/scan`'s targets) reaches a
//!   keeping or publishing stage only through a stage that waits for the guard; the finding is
//!   labelled on the first stage that reads the vouched data without waiting (the seal, not the
//!   upload), and says what its condition really lets through; and a publisher that waits for a
//!   guard publishes only what the guard read ([`vetting::Vetting::uncovered`]);
//! - unscanned seals ([`vetting`]): a private value that is sealed and then kept or published has
//!   been cleared by a scan;
//! - narrowed guards ([`vetting::narrowed`]): a verdict that gates keeping or publishing covers
//!   what its name promises (a scan runs every detector);
//! - publishing ([`publish`]): a review that falls back, is gated out or disabled never reaches
//!   a publishing stage as a review with no findings, nor as "not reviewed" with a run that
//!   passes (unless the publisher fails it itself, `not-reviewed "fail"`);
//! - restoring ([`restore`]): a stage that restores a conversation fails closed to a fresh
//!   review, not to a failed run (a warning);
//! - steered reviews ([`steered`]): a stage that reviews untrusted data is not gated by a bit
//!   that a program chose after reading untrusted data;
//! - partial subjects ([`subject`]): a review whose verdict is published reviews the change,
//!   not only what changed since the last review, when it cannot resume, and a verdict on the
//!   whole head (an approval, a check run) comes from a review of the whole change, not one
//!   cut by `path`, and the ranges a publisher keeps its findings by are those of the diff the
//!   review read;
//! - selective publishers ([`selective`]): a stage that publishes a review is not gated by that
//!   review's verdict.
//!
//! A stage keeps or publishes by what it can do, not by its kind alone: the pipeline's own
//! program (a `run` stage) that may write the forge (a write in its `permissions`, or a secret
//! that writes) publishes ([`writes_outward`]).

mod authors;
mod chooser;
mod expr;
mod publish;
mod restore;
mod selective;
mod steered;
pub(super) mod subject;
mod vetting;

use std::collections::{BTreeMap, BTreeSet};

use super::{Check, Context};
use crate::contract::Effect;
use crate::finding::{Confidence, Finding, Label, Severity};
use crate::model::Reference;
use crate::policy::{bad_outcomes, can_be_true, requires};

pub struct FailClosed;

/// The check's id, for the parts in submodules.
const ID: &str = "fail-closed";

impl Check for FailClosed {
    fn principle(&self) -> super::Principle {
        super::Principle::Coverage
    }
    fn id(&self) -> &'static str {
        ID
    }
    fn severity(&self) -> Severity {
        Severity::Error
    }
    fn summary(&self) -> &'static str {
        "no failure, fallback, skip or missing secret opens a gate, or publishes a review that did not happen"
    }
    fn run(&self, cx: &Context<'_>, out: &mut Vec<Finding>) {
        let Some(order) = &cx.dag.order else { return };
        let feeds_sink = feeds_sink(cx, order);
        let vetting = vetting::Vetting::compute(cx, order);
        guards(cx, order, &feeds_sink, &vetting, out);
        vetting.report(cx, out);
        vetting.unscanned(cx, &feeds_sink, out);
        vetting.uncovered(cx, out);
        vetting::narrowed(cx, &feeds_sink, out);
        publish::not_reviewed(cx, order, out);
        selective::selective_publishers(cx, out);
        selective::steered_filters(cx, out);
        steered::steered_reviews(cx, out);
        steered::steered_approvals(cx, out);
        steered::happened_as_passed(cx, out);
        subject::partial_subjects(cx, &feeds_sink, out);
        subject::cut_verdicts(cx, &feeds_sink, out);
        subject::steered_subjects(cx, &feeds_sink, out);
        subject::unbounded_approvals(cx, out);
        subject::mismatched_ranges(cx, out);
        restore::availability(cx, out);
        authors::unvouched_authors(cx, out);
        authors::unbelieved_records(cx, out);
    }
}

/// The type of the output `r` names: a `run` stage's outputs are typed by the file, a kind's by
/// its contract.
fn output_type(cx: &Context<'_>, r: &Reference) -> Option<crate::contract::OutputType> {
    let g = cx.dag.stage_index(&r.stage)?;
    crate::graph::outputs_of(&cx.pipeline.stages[g], cx.registry)
        .into_iter()
        .find(|(name, _)| *name == r.output)
        .map(|(_, ty)| ty)
}

/// Stages that keep or publish, or whose outputs reach one that does, directly or downstream.
fn feeds_sink(cx: &Context<'_>, order: &[usize]) -> Vec<bool> {
    let p = cx.pipeline;
    let mut feeds = vec![false; p.stages.len()];
    for &i in order.iter().rev() {
        let Some(contract) = cx.registry.get(&p.stages[i].uses.value) else {
            continue;
        };
        feeds[i] |= contract.has_effect(Effect::Keeps)
            || contract.has_effect(Effect::Publishes)
            || writes_outward(cx, i);
        if feeds[i] {
            for (producer, edge) in cx.dag.producers(i) {
                if !edge.data.is_empty() {
                    feeds[producer] = true;
                }
            }
        }
    }
    feeds
}

/// Whether stage `i` runs the pipeline's own program and may write the forge: a write in its
/// `permissions` (the job's token in an exported workflow), or a secret it holds that can write
/// (`permission::capability`). Such a stage publishes, whatever its kind is called (principle 2:
/// a stage is what it can do).
pub(super) fn writes_outward(cx: &Context<'_>, i: usize) -> bool {
    let p = cx.pipeline;
    let stage = &p.stages[i];
    if !cx.registry.get(&stage.uses.value).is_some_and(|c| c.opaque) {
        return false;
    }
    stage
        .permissions
        .iter()
        .any(|w| w.value.access == crate::model::Access::Write)
        || cx.flow.is_some_and(|flow| {
            flow.held[i]
                .iter()
                .any(|&k| crate::permission::capability(cx.registry, p, k).writes())
        })
}

/// One way a guard's failure opens a gate.
struct Opening {
    description: String,
    /// "`scan.clean` reads true", in the order the condition names them.
    values: Vec<String>,
    /// The other references and the values that open it with this outcome.
    witness: Vec<(String, bool)>,
    /// The guard's `fallback` override (its index) that reads as success and opens it.
    by_override: Option<usize>,
}

impl Opening {
    fn text(&self) -> String {
        let mut s = self.values.join(", ");
        if !self.witness.is_empty() {
            let others: Vec<String> = self
                .witness
                .iter()
                .map(|(n, b)| format!("{n}={b}"))
                .collect();
            s.push_str(&format!(" (with {})", others.join(", ")));
        }
        s
    }
}

/// `when` conditions that a guard's failure opens.
fn guards(
    cx: &Context<'_>,
    order: &[usize],
    feeds_sink: &[bool],
    vetting: &vetting::Vetting,
    out: &mut Vec<Finding>,
) {
    let p = cx.pipeline;
    // A `fallback` override that reads as success is one root cause, whatever it opens:
    // (guard, override index) → the stages it opens, each with how.
    let mut overrides: BTreeMap<(usize, usize), Vec<(usize, Opening)>> = BTreeMap::new();
    for &i in order {
        let stage = &p.stages[i];
        let Some(when) = &stage.when else { continue };
        if !feeds_sink[i] {
            continue;
        }
        let mut guards: Vec<&Reference> = Vec::new();
        when.value.collect_references(&mut guards);
        let mut seen = BTreeSet::new();
        for r in guards {
            if !seen.insert(r.stage.clone()) {
                continue;
            }
            let Some(gi) = cx.dag.stage_index(&r.stage) else {
                continue;
            };
            // A guard whose vouched data this stage reads without waiting for it is reported
            // once, by `vetting`, with what the condition really lets through.
            if vetting.is_root(i, gi) {
                continue;
            }
            let g = &p.stages[gi];
            let Some(gc) = cx.registry.get(&g.uses.value) else {
                continue;
            };
            // Which guard outputs the condition reads.
            let mut refs: Vec<&Reference> = Vec::new();
            when.value.collect_references(&mut refs);
            let read: Vec<&str> = refs
                .iter()
                .filter(|x| x.stage == g.name.value)
                .map(|x| x.output.as_str())
                .collect();
            let mut openings: Vec<Opening> = Vec::new();
            for outcome in bad_outcomes(p, g, gc) {
                let fixed = |x: &Reference| {
                    (x.stage == g.name.value)
                        .then(|| outcome.outputs.get(&x.output).copied().flatten())
                };
                let Some(witness) = can_be_true(&when.value, &fixed) else {
                    continue;
                };
                let mut values: Vec<String> = Vec::new();
                for x in refs.iter().filter(|x| x.stage == g.name.value) {
                    let v = match outcome.outputs.get(&x.output).copied().flatten() {
                        Some(b) => format!("`{x}` reads {b}"),
                        None => format!("`{x}` is absent"),
                    };
                    if !values.contains(&v) {
                        values.push(v);
                    }
                }
                // An override of the stage's `fallback` that reads as success, read here.
                let by_override = g.fallback.iter().position(|o| {
                    o.value.value
                        && read.contains(&o.output.value.as_str())
                        && outcome.outputs.get(&o.output.value).copied().flatten() == Some(true)
                });
                openings.push(Opening {
                    description: outcome.description,
                    values,
                    witness,
                    by_override,
                });
            }
            let (by_override, openings): (Vec<Opening>, Vec<Opening>) =
                openings.into_iter().partition(|o| o.by_override.is_some());
            for o in by_override {
                let list = overrides
                    .entry((gi, o.by_override.unwrap_or_default()))
                    .or_default();
                if !list.iter().any(|(s, _)| *s == i) {
                    list.push((i, o));
                }
            }
            if openings.is_empty() {
                continue;
            }
            let positive = read.iter().any(|o| requires(stage, &g.name.value, o));
            let first = &openings[0];
            let mut message = format!(
                "if `{}` {}, `{}` still runs: {}",
                g.name.value,
                first.description,
                stage.name.value,
                first.text()
            );
            for other in &openings[1..] {
                message.push_str(&format!("; likewise if it {}", other.description));
            }
            let help = if positive {
                format!(
                    "make `{}` fail the run (on-error=\"fail\"), or test its outputs so that absence closes the gate",
                    g.name.value
                )
            } else {
                let ok = expr::reference(&g.name.value, "ok");
                format!(
                    "the condition lets `{}` run without `{}` having succeeded: require it, `when=\"{}\"`",
                    stage.name.value,
                    g.name.value,
                    expr::conjunction(&[ok], Some(&when.value))
                )
            };
            out.push(
                Finding::new(
                    ID,
                    Severity::Error,
                    message,
                    Label::new(when.span, "this condition opens"),
                )
                .related(Label::new(
                    g.name.span,
                    format!("the guard `{}`", g.name.value),
                ))
                .help(help)
                .confidence(Confidence::High)
                .stage(&stage.name.value),
            );
        }
    }
    for ((gi, o), opened) in overrides {
        let g = &p.stages[gi];
        let o = &g.fallback[o];
        let names: Vec<String> = opened
            .iter()
            .map(|(i, _)| format!("`{}`", p.stages[*i].name.value))
            .collect();
        let (first_stage, first) = &opened[0];
        let runs = if names.len() == 1 { "runs" } else { "run" };
        let message = format!(
            "if `{}` {}, {} still {runs}: {}",
            g.name.value,
            first.description,
            join_and(&names),
            first.text()
        );
        let mut f = Finding::new(
            ID,
            Severity::Error,
            message,
            Label::new(
                o.output.span,
                format!(
                    "a failed `{}` reads `{}` as true",
                    g.name.value, o.output.value
                ),
            ),
        );
        for (i, _) in &opened {
            let s = &p.stages[*i];
            if let Some(w) = &s.when {
                f = f.related(Label::new(
                    w.span,
                    format!("the condition of `{}` opens", s.name.value),
                ));
            }
        }
        out.push(
            f.help(format!(
                "a failed guard must read as failed: remove `fallback {}=#true` from `{}` (the contract's fallback keeps the gate shut)",
                o.output.value, g.name.value
            ))
            .confidence(Confidence::High)
            .stage(&p.stages[*first_stage].name.value),
        );
    }
}

/// "`a`", "`a` and `b`", "`a`, `b` and `c`".
fn join_and(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

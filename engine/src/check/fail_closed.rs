//! `fail-closed`: a stage that keeps or publishes, or whose output is kept or published, must
//! not be opened by a guard's failure. For each guard its `when` reads, every outcome other than
//! success (a fallback, a skip, a missing secret) is tried with the same semantics the executor
//! uses (`policy`); if the condition can still be true, the outcome that opens it is reported.
//! And data that a guard vouches for (`std/scan`'s targets) may reach a keeping or publishing
//! child only through a stage that waits for the guard.

use std::collections::{BTreeSet, HashMap};

use super::{Check, Context};
use crate::contract::{Effect, Role};
use crate::finding::{Confidence, Finding, Label, Severity};
use crate::model::Reference;
use crate::policy::{bad_outcomes, can_be_true, requires};

pub struct FailClosed;

impl Check for FailClosed {
    fn id(&self) -> &'static str {
        "fail-closed"
    }
    fn severity(&self) -> Severity {
        Severity::Error
    }
    fn summary(&self) -> &'static str {
        "no failure, fallback, skip or missing secret of a guard lets a keeping stage run"
    }
    fn run(&self, cx: &Context<'_>, out: &mut Vec<Finding>) {
        let Some(order) = &cx.dag.order else { return };
        let p = cx.pipeline;
        let n = p.stages.len();
        // Stages whose outputs reach a keeping or publishing child, directly or downstream.
        let mut feeds_sink = vec![false; n];
        for &i in order.iter().rev() {
            let stage = &p.stages[i];
            let Some(contract) = cx.registry.get(&stage.uses.value) else {
                continue;
            };
            let keeps =
                contract.has_effect(Effect::Keeps) || contract.has_effect(Effect::Publishes);
            feeds_sink[i] |= keeps;
            if feeds_sink[i] {
                for (producer, edge) in cx.dag.producers(i) {
                    if !edge.data.is_empty() {
                        feeds_sink[producer] = true;
                    }
                }
            }
        }
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
                let Some(g) = p.stage(&r.stage) else { continue };
                let Some(gc) = cx.registry.get(&g.uses.value) else {
                    continue;
                };
                for outcome in bad_outcomes(p, g, gc) {
                    let fixed = |x: &Reference| {
                        (x.stage == g.name.value)
                            .then(|| outcome.outputs.get(&x.output).copied().flatten())
                    };
                    let Some(witness) = can_be_true(&when.value, &fixed) else {
                        continue;
                    };
                    let values: Vec<String> = {
                        let mut refs = Vec::new();
                        when.value.collect_references(&mut refs);
                        let mut v: Vec<String> = refs
                            .iter()
                            .filter(|x| x.stage == g.name.value)
                            .map(
                                |x| match outcome.outputs.get(&x.output).copied().flatten() {
                                    Some(b) => format!("`{x}` reads {b}"),
                                    None => format!("`{x}` is absent"),
                                },
                            )
                            .collect();
                        v.sort();
                        v.dedup();
                        v
                    };
                    let others: Vec<String> =
                        witness.iter().map(|(n, b)| format!("{n}={b}")).collect();
                    let mut message = format!(
                        "if `{}` {}, `{}` still runs: {}",
                        g.name.value,
                        outcome.description,
                        stage.name.value,
                        values.join(", ")
                    );
                    if !others.is_empty() {
                        message.push_str(&format!(" (with {})", others.join(", ")));
                    }
                    let mut f = Finding::new(
                        self.id(),
                        self.severity(),
                        message,
                        Label::new(when.span, "this condition opens"),
                    )
                    .related(Label::new(
                        g.name.span,
                        format!("the guard `{}`", g.name.value),
                    ))
                    .confidence(Confidence::High)
                    .stage(&stage.name.value);
                    // Which guard outputs the condition reads, and whether it needs any of them true.
                    let mut read: Vec<&Reference> = Vec::new();
                    when.value.collect_references(&mut read);
                    let read: Vec<&str> = read
                        .iter()
                        .filter(|x| x.stage == g.name.value)
                        .map(|x| x.output.as_str())
                        .collect();
                    let positive = read.iter().any(|o| requires(stage, &g.name.value, o));
                    let opened_by_override = g
                        .fallback
                        .iter()
                        .find(|o| o.value.value && read.contains(&o.output.value.as_str()));
                    if let Some(o) = opened_by_override {
                        f = f.related(Label::new(
                            o.output.span,
                            "the fallback that reads as success",
                        ));
                        f = f.help(format!(
                            "a failed guard must read as failed: remove this `fallback` override of `{}`",
                            g.name.value
                        ));
                    } else if !positive {
                        f = f.help(format!(
                            "the condition lets `{}` run without `{}` having succeeded: require it, e.g. `when=\"{}.ok && …\"`",
                            stage.name.value, g.name.value, g.name.value
                        ));
                    } else {
                        f = f.help(format!(
                            "make `{}` fail the run (on-error=\"fail\"), or test its outputs so that absence closes the gate",
                            g.name.value
                        ));
                    }
                    out.push(f);
                }
            }
        }
        unvetted(cx, order, out);
    }
}

/// Data a guard vouches for must reach a keeping or publishing child only through a stage
/// that waits for the guard.
fn unvetted(cx: &Context<'_>, order: &[usize], out: &mut Vec<Finding>) {
    let p = cx.pipeline;
    // (producer index, output) → the guards vouching for it.
    let mut vetted_by: HashMap<(usize, String), Vec<usize>> = HashMap::new();
    for (s, stage) in p.stages.iter().enumerate() {
        let Some(vets) = cx
            .registry
            .get(&stage.uses.value)
            .and_then(|c| c.vets.as_ref())
        else {
            continue;
        };
        for child in stage.children_named(&vets.child) {
            for v in child.values() {
                let mut refs = Vec::new();
                v.value.collect_references(&mut refs);
                for r in refs {
                    if let Some(pi) = cx.dag.stage_index(&r.stage) {
                        vetted_by.entry((pi, r.output.clone())).or_default().push(s);
                    }
                }
            }
        }
    }
    if vetted_by.is_empty() {
        return;
    }
    // Guards still owed by each stage's outputs.
    let mut owed: Vec<BTreeSet<usize>> = vec![BTreeSet::new(); p.stages.len()];
    for &i in order {
        let stage = &p.stages[i];
        let Some(contract) = cx.registry.get(&stage.uses.value) else {
            continue;
        };
        let mut owed_here: BTreeSet<usize> = BTreeSet::new();
        let mut sinks: Vec<(&Reference, BTreeSet<usize>)> = Vec::new();
        for child in &stage.children {
            let role = contract
                .child_spec(&child.name.value)
                .map_or(Role::Data, |s| s.role);
            for v in child.values() {
                let mut refs = Vec::new();
                v.value.collect_references(&mut refs);
                for r in refs {
                    let Some(pi) = cx.dag.stage_index(&r.stage) else {
                        continue;
                    };
                    let mut needed: BTreeSet<usize> = owed[pi].clone();
                    if let Some(guards) = vetted_by.get(&(pi, r.output.clone())) {
                        needed.extend(guards.iter().copied().filter(|&g| g != i));
                    }
                    if matches!(role, Role::Keep | Role::Publish) {
                        sinks.push((r, needed.clone()));
                    }
                    owed_here.extend(needed);
                }
            }
        }
        let waits = |g: usize| {
            let guard = &p.stages[g];
            let output = cx
                .registry
                .get(&guard.uses.value)
                .and_then(|c| c.vets.as_ref())
                .map_or("ok", |v| v.output.as_str());
            requires(stage, &guard.name.value, output)
        };
        owed_here.retain(|&g| !waits(g));
        for (r, needed) in sinks {
            for g in needed {
                if waits(g) {
                    continue;
                }
                let guard = &p.stages[g];
                let output = cx
                    .registry
                    .get(&guard.uses.value)
                    .and_then(|c| c.vets.as_ref())
                    .map_or("ok", |v| v.output.as_str());
                out.push(
                    Finding::new(
                        FailClosed.id(),
                        FailClosed.severity(),
                        format!(
                            "`{}` keeps or publishes `{r}`, which `{}` vouches for, without waiting for `{}.{output}`",
                            stage.name.value, guard.name.value, guard.name.value
                        ),
                        Label::new(r.span, "kept whatever the guard says"),
                    )
                    .related(Label::new(guard.name.span, format!("the guard `{}`", guard.name.value)))
                    .help(format!(
                        "add `when=\"{}.{output}\"` to `{}` (or to the stage that produces what it keeps)",
                        guard.name.value, stage.name.value
                    ))
                    .flow(owed_path(cx, &owed, &vetted_by, g, r, &stage.name.value))
                    .confidence(Confidence::High)
                    .stage(&stage.name.value),
                );
            }
        }
        owed[i] = if contract.vets.is_some() {
            BTreeSet::new()
        } else {
            owed_here
        };
    }
}

/// How a value the guard `g` vouches for travels to the sink `sink`: the vouched value first.
fn owed_path(
    cx: &Context<'_>,
    owed: &[BTreeSet<usize>],
    vetted_by: &HashMap<(usize, String), Vec<usize>>,
    g: usize,
    sink: &Reference,
    sink_stage: &str,
) -> Vec<Label> {
    let p = cx.pipeline;
    let mut steps = vec![Label::new(
        sink.span,
        format!("`{sink_stage}` keeps `{sink}`"),
    )];
    let mut current = sink.clone();
    for _ in 0..p.stages.len() {
        let Some(pi) = cx.dag.stage_index(&current.stage) else {
            break;
        };
        if vetted_by
            .get(&(pi, current.output.clone()))
            .is_some_and(|v| v.contains(&g))
        {
            steps.push(Label::new(
                p.stages[pi].name.span,
                format!(
                    "`{current}` is what `{}` vouches for",
                    p.stages[g].name.value
                ),
            ));
            break;
        }
        // Follow an input of the producer that still owes the guard.
        let producer = &p.stages[pi];
        let next = producer.references().into_iter().find(|r| {
            cx.dag.stage_index(&r.stage).is_some_and(|q| {
                owed[q].contains(&g)
                    || vetted_by
                        .get(&(q, r.output.clone()))
                        .is_some_and(|v| v.contains(&g))
            })
        });
        let Some(next) = next else { break };
        steps.push(Label::new(
            next.span,
            format!("`{}` reads `{next}`", producer.name.value),
        ));
        current = next.clone();
    }
    steps.reverse();
    steps
}

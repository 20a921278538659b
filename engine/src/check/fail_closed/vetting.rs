//! Data a guard vouches for (`std/scan`'s `target`s, read through the contract's `vets`) reaches
//! a keeping or publishing stage only through a stage that waits for the guard's verdict
//! (`when="scan.clean"`); and a private value that is sealed and then kept has been vouched for
//! at all.
//!
//! The root of a missing wait is the first stage that reads the vouched value without waiting:
//! for a conversation that is sealed and uploaded, the seal. That is where the finding is
//! labelled and where the fix goes: a `when` on the seal keeps the conversation out of the store
//! without dropping the review comment that the same upload stage posts.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::expr;
use super::{ID, join_and};
use crate::check::Context;
use crate::contract::{LabelKind, Role};
use crate::finding::{Confidence, Finding, Label, Severity};
use crate::model::Reference;
use crate::policy::{can_be_true, requires};

/// A value kept or published while a guard that vouches for it has not been waited for.
struct Debt {
    /// The keeping or publishing stage, and the reference it keeps.
    sink: usize,
    reference: Reference,
    role: Role,
    guard: usize,
    /// The stages that read the vouched value directly without waiting for the guard.
    roots: BTreeSet<usize>,
}

pub(super) struct Vetting {
    /// (producer, output) → the guards vouching for it.
    vetted_by: HashMap<(usize, String), Vec<usize>>,
    /// What each stage's outputs still owe: guard → the roots that skipped it.
    owed: Vec<BTreeMap<usize, BTreeSet<usize>>>,
    debts: Vec<Debt>,
    /// (root, guard): reported here, so `guards` leaves them alone.
    roots: BTreeSet<(usize, usize)>,
}

/// The output a guard's verdict is read from (`clean`).
fn verdict<'a>(cx: &'a Context<'_>, guard: usize) -> &'a str {
    cx.registry
        .get(&cx.pipeline.stages[guard].uses.value)
        .and_then(|c| c.vets.as_ref())
        .map_or("ok", |v| v.output.as_str())
}

/// Whether input `reference` of stage `stage` carries the `private` label: keeping or publishing
/// it unsealed is `private-egress`'s finding, not this one.
fn private(cx: &Context<'_>, stage: usize, reference: &Reference) -> bool {
    cx.flow.is_some_and(|f| {
        f.inputs[stage]
            .iter()
            .any(|i| i.span == reference.span && i.labels.private)
    })
}

impl Vetting {
    pub fn compute(cx: &Context<'_>, order: &[usize]) -> Self {
        let p = cx.pipeline;
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
        let mut owed: Vec<BTreeMap<usize, BTreeSet<usize>>> = vec![BTreeMap::new(); p.stages.len()];
        let mut debts = Vec::new();
        if !vetted_by.is_empty() {
            for &i in order {
                let stage = &p.stages[i];
                let Some(contract) = cx.registry.get(&stage.uses.value) else {
                    continue;
                };
                let mut owed_here: BTreeMap<usize, BTreeSet<usize>> = BTreeMap::new();
                let mut sinks: Vec<(Reference, Role, BTreeMap<usize, BTreeSet<usize>>)> =
                    Vec::new();
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
                            let mut needed = owed[pi].clone();
                            if let Some(guards) = vetted_by.get(&(pi, r.output.clone())) {
                                for &g in guards.iter().filter(|&&g| g != i) {
                                    needed.entry(g).or_default().insert(i);
                                }
                            }
                            if matches!(role, Role::Keep | Role::Publish) {
                                sinks.push((r.clone(), role, needed.clone()));
                            }
                            for (g, roots) in needed {
                                owed_here.entry(g).or_default().extend(roots);
                            }
                        }
                    }
                }
                let waits = |g: usize| requires(stage, &p.stages[g].name.value, verdict(cx, g));
                owed_here.retain(|&g, _| !waits(g));
                for (reference, role, needed) in sinks {
                    for (guard, roots) in needed {
                        if !waits(guard) {
                            debts.push(Debt {
                                sink: i,
                                reference: reference.clone(),
                                role,
                                guard,
                                roots,
                            });
                        }
                    }
                }
                owed[i] = if contract.vets.is_some() {
                    BTreeMap::new()
                } else {
                    owed_here
                };
            }
        }
        let roots = debts
            .iter()
            .flat_map(|d| d.roots.iter().map(move |&r| (r, d.guard)))
            .collect();
        Self {
            vetted_by,
            owed,
            debts,
            roots,
        }
    }

    /// A publisher that waits for a guard's verdict (`when="scan.clean"`) publishes only what
    /// the guard read: the wait says the text it publishes was found clean (principle 4). Text of
    /// the change or of a reviewer (labelled untrusted) that the publisher also publishes, and
    /// no guard it waits for reads, reaches the forge whatever the guard finds in the rest: a
    /// credential quoted in a finding's message is published when the scan read only the
    /// comment. One finding per publisher, at its `when`; a wait on a guard that reads none of
    /// what the stage publishes is part 9's (the review is gated, not the text).
    pub fn uncovered(&self, cx: &Context<'_>, out: &mut Vec<Finding>) {
        let Some(flow) = cx.flow else { return };
        let p = cx.pipeline;
        let guards: BTreeSet<usize> = self.vetted_by.values().flatten().copied().collect();
        for (i, stage) in p.stages.iter().enumerate() {
            let Some(when) = &stage.when else { continue };
            let waited: Vec<usize> = guards
                .iter()
                .copied()
                .filter(|&g| g != i && requires(stage, &p.stages[g].name.value, verdict(cx, g)))
                .collect();
            let Some(&guard) = waited.first() else {
                continue;
            };
            let mut unread: Vec<&Reference> = Vec::new();
            // A wait on a guard that reads none of what the stage publishes gates the review
            // itself: part 9's (selective publishers), whose fix is not to scan more.
            let mut covers_some = false;
            for input in &flow.inputs[i] {
                if input.role != Role::Publish || input.folder.is_some() {
                    continue;
                }
                let r = &input.reference;
                let Some(pi) = cx.dag.stage_index(&r.stage) else {
                    continue;
                };
                let read = self
                    .vetted_by
                    .get(&(pi, r.output.clone()))
                    .is_some_and(|gs| gs.iter().any(|g| waited.contains(g)));
                covers_some |= read;
                let steered = input.labels.untrusted && !input.labels.private;
                if steered && !read && !unread.iter().any(|u| **u == *r) {
                    unread.push(r);
                }
            }
            let Some(first) = unread.first().filter(|_| covers_some) else {
                continue;
            };
            let gname = &p.stages[guard].name.value;
            let verdict = verdict(cx, guard);
            let listed: Vec<String> = unread.iter().map(|r| format!("`{r}`")).collect();
            let word = if unread.len() == 1 { "it" } else { "them" };
            out.push(
                Finding::new(
                    ID,
                    Severity::Error,
                    format!(
                        "`{}` waits for `{gname}.{verdict}` but also publishes {}, which `{gname}` does not read: a credential in {word} is published whatever `{gname}` finds (principle 4: a verdict covers what it claims)",
                        stage.name.value,
                        join_and(&listed)
                    ),
                    Label::new(when.span, format!("waits for `{gname}.{verdict}`")),
                )
                .related(Label::new(first.span, "published unread"))
                .help(format!(
                    "give `{gname}` {} as targets too",
                    join_and(&listed)
                ))
                .confidence(Confidence::High)
                .stage(&stage.name.value),
            );
        }
    }

    /// Whether `stage` reads data `guard` vouches for without waiting for it, with the result
    /// kept or published: reported by [`Vetting::report`].
    pub fn is_root(&self, stage: usize, guard: usize) -> bool {
        self.roots.contains(&(stage, guard))
    }

    /// The vouched value `stage` reads directly, of `guard`.
    fn vouched<'a>(
        &self,
        cx: &'a Context<'_>,
        stage: usize,
        guard: usize,
    ) -> Option<&'a Reference> {
        cx.pipeline.stages[stage]
            .references()
            .into_iter()
            .find(|r| {
                cx.dag.stage_index(&r.stage).is_some_and(|pi| {
                    self.vetted_by
                        .get(&(pi, r.output.clone()))
                        .is_some_and(|g| g.contains(&guard))
                })
            })
    }

    /// One finding per root and guard: the stage that reads vouched data without waiting.
    pub fn report(&self, cx: &Context<'_>, out: &mut Vec<Finding>) {
        let p = cx.pipeline;
        let mut groups: BTreeMap<(usize, usize), Vec<&Debt>> = BTreeMap::new();
        for d in &self.debts {
            if private(cx, d.sink, &d.reference) {
                continue;
            }
            for &root in &d.roots {
                groups.entry((root, d.guard)).or_default().push(d);
            }
        }
        for ((root, g), debts) in groups {
            let stage = &p.stages[root];
            let guard = &p.stages[g];
            let gname = guard.name.value.as_str();
            let o = verdict(cx, g);
            let Some(vouched) = self.vouched(cx, root, g) else {
                continue;
            };
            let verb = |role: Role| match role {
                Role::Publish => "publishes",
                _ => "keeps",
            };
            let first = debts[0];
            let when = stage.when.as_ref();
            let direct = debts.iter().all(|d| d.sink == root);
            let (message, primary) = if direct {
                (
                    format!(
                        "`{}` {} `{vouched}`, which `{gname}` vouches for, without waiting for `{gname}.{o}`",
                        stage.name.value,
                        verb(first.role)
                    ),
                    Label::new(
                        first.reference.span,
                        format!(
                            "{} whatever `{gname}` finds",
                            match first.role {
                                Role::Publish => "published",
                                _ => "kept",
                            }
                        ),
                    ),
                )
            } else if let Some(w) = when.filter(|w| expr::mentions(&w.value, gname)) {
                // The condition reads the guard but lets a verdict other than clean through.
                let found = |x: &Reference| {
                    (x.stage == gname).then(|| match x.output.as_str() {
                        out if out == o => Some(false),
                        "ok" => Some(true),
                        _ => None,
                    })
                };
                let message = match can_be_true(&w.value, &found) {
                    Some(witness) => {
                        let mut m = format!(
                            "`{}` runs even when `{gname}` finds a credential (or fails): `{}` is true with `{gname}.{o}` false",
                            stage.name.value, w.value
                        );
                        if !witness.is_empty() {
                            let others: Vec<String> =
                                witness.iter().map(|(n, b)| format!("{n}={b}")).collect();
                            m.push_str(&format!(" and {}", others.join(", ")));
                        }
                        m
                    }
                    None => format!(
                        "`{}` runs when `{gname}` fails: `{}` can be true without `{gname}.{o}`",
                        stage.name.value, w.value
                    ),
                };
                (
                    message,
                    Label::new(w.span, format!("true when `{gname}` is not clean")),
                )
            } else {
                let sink = &p.stages[first.sink];
                (
                    format!(
                        "`{}` reads `{vouched}`, which `{gname}` vouches for, without waiting for `{gname}.{o}`: `{}` {} what it makes whatever `{gname}` finds",
                        stage.name.value,
                        sink.name.value,
                        verb(first.role)
                    ),
                    Label::new(
                        when.map_or(stage.name.span, |w| w.span),
                        format!("does not wait for `{gname}.{o}`"),
                    ),
                )
            };
            let rest = when.and_then(|w| expr::without(&w.value, gname));
            let fix = expr::conjunction(&[expr::reference(gname, o)], rest.as_ref());
            let mut f = Finding::new(ID, Severity::Error, message, primary)
                .related(Label::new(guard.name.span, format!("the guard `{gname}`")));
            if !direct {
                f = f.related(Label::new(
                    vouched.span,
                    format!(
                        "`{}` reads `{vouched}`, which `{gname}` vouches for",
                        stage.name.value
                    ),
                ));
                let mut shown: Vec<(usize, String)> = Vec::new();
                for d in &debts {
                    let key = (d.sink, d.reference.to_string());
                    if shown.contains(&key) {
                        continue;
                    }
                    shown.push(key);
                    f = f.related(Label::new(
                        d.reference.span,
                        format!(
                            "`{}` {} `{}`",
                            p.stages[d.sink].name.value,
                            verb(d.role),
                            d.reference
                        ),
                    ));
                }
            }
            out.push(
                f.help(format!(
                    "wait for a clean verdict: `when=\"{fix}\"` on `{}`",
                    stage.name.value
                ))
                .flow(self.path(cx, g, &first.reference, first.sink))
                .confidence(Confidence::High)
                .stage(&stage.name.value),
            );
        }
    }

    /// A private value sealed (by a stage whose output drops `private`, bound by a `bind`) and then kept or
    /// published, which no guard vouches for.
    pub fn unscanned(&self, cx: &Context<'_>, feeds_sink: &[bool], out: &mut Vec<Finding>) {
        let Some(flow) = cx.flow else { return };
        let p = cx.pipeline;
        for (i, stage) in p.stages.iter().enumerate() {
            let Some(contract) = cx.registry.get(&stage.uses.value) else {
                continue;
            };
            // A sealer: an output that drops `private`, bound to the review it belongs to (the
            // reviewer's comment drops `private` too, but it is a summary, not the conversation).
            let seals = contract
                .outputs
                .iter()
                .any(|o| o.labels.removing.contains(&LabelKind::Private))
                && contract.children.iter().any(|c| c.role == Role::Binding);
            if !seals || !feeds_sink[i] {
                continue;
            }
            for input in &flow.inputs[i] {
                if !input.labels.private || input.role != Role::Data {
                    continue;
                }
                let Some(pi) = cx.dag.stage_index(&input.reference.stage) else {
                    continue;
                };
                let vouched = self
                    .vetted_by
                    .contains_key(&(pi, input.reference.output.clone()))
                    || !self.owed[pi].is_empty();
                if vouched {
                    continue;
                }
                let r = &input.reference;
                let name = &stage.name.value;
                // Who keeps or publishes what this stage makes.
                let mut sinks: Vec<Label> = Vec::new();
                let mut sink_names: Vec<String> = Vec::new();
                for (si, s) in p.stages.iter().enumerate() {
                    let Some(sc) = cx.registry.get(&s.uses.value) else {
                        continue;
                    };
                    for child in &s.children {
                        let role = sc.child_spec(&child.name.value).map(|c| c.role);
                        if !matches!(role, Some(Role::Keep | Role::Publish)) {
                            continue;
                        }
                        for v in child.values() {
                            let mut refs = Vec::new();
                            v.value.collect_references(&mut refs);
                            for k in refs.into_iter().filter(|k| k.stage == *name) {
                                sinks.push(Label::new(
                                    k.span,
                                    format!("`{}` keeps `{k}`", s.name.value),
                                ));
                                let n = format!("`{}`", p.stages[si].name.value);
                                if !sink_names.contains(&n) {
                                    sink_names.push(n);
                                }
                            }
                        }
                    }
                }
                let kept = if sink_names.is_empty() {
                    "and kept".to_string()
                } else {
                    format!("and {} keeps it", join_and(&sink_names))
                };
                // A scan that exists already takes one more target; otherwise a new one.
                let scan_kind = cx
                    .registry
                    .kinds()
                    .find(|k| cx.registry.get(k).is_some_and(|c| c.vets.is_some()))
                    .unwrap_or("std/scan");
                let existing = p.stages.iter().find(|s| s.uses.value == scan_kind);
                let (scan, how) = match existing {
                    Some(s) => (
                        s.name.value.clone(),
                        format!("add `{r}` to the targets of `{}`", s.name.value),
                    ),
                    None => (
                        "scan".to_string(),
                        format!(
                            "scan it first (`stage \"scan\" uses=\"{scan_kind}\" on-error=\"fallback\" {{ target \"{r}\" }}`)"
                        ),
                    ),
                };
                let fix = expr::conjunction(
                    &[expr::reference(&scan, verdict_of_kind(cx, scan_kind))],
                    stage.when.as_ref().map(|w| &w.value),
                );
                let mut f = Finding::new(
                    ID,
                    Severity::Error,
                    format!(
                        "private `{r}` is sealed by `{name}` {kept} without a credential scan: a conversation that holds a credential is kept with it"
                    ),
                    Label::new(input.span, "sealed whatever it holds"),
                );
                for s in sinks {
                    f = f.related(s);
                }
                out.push(
                    f.help(format!(
                        "{how}, and seal only a clean one: `when=\"{fix}\"` on `{name}`"
                    ))
                    .flow(flow.path(p, cx.dag, i, input, crate::flow::Kind::Private))
                    .confidence(Confidence::High)
                    .stage(name),
                );
            }
        }
    }

    /// How a value the guard `g` vouches for travels to the sink: the vouched value first.
    fn path(&self, cx: &Context<'_>, g: usize, sink: &Reference, sink_stage: usize) -> Vec<Label> {
        let p = cx.pipeline;
        let mut steps = vec![Label::new(
            sink.span,
            format!("`{}` keeps `{sink}`", p.stages[sink_stage].name.value),
        )];
        let mut current = sink.clone();
        for _ in 0..p.stages.len() {
            let Some(pi) = cx.dag.stage_index(&current.stage) else {
                break;
            };
            if self
                .vetted_by
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
                    self.owed[q].contains_key(&g)
                        || self
                            .vetted_by
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
}

/// The verdict output of the vetting kind `kind` (`clean`).
fn verdict_of_kind<'a>(cx: &'a Context<'_>, kind: &str) -> &'a str {
    cx.registry
        .get(kind)
        .and_then(|c| c.vets.as_ref())
        .map_or("clean", |v| v.output.as_str())
}

/// A guard whose verdict gates a stage that keeps or publishes, with fewer of the words that
/// choose what the verdict covers than it runs by default (`detect "jwt"` of `std/scan`): the
/// verdict says clean of less than its name promises (principle 4). One finding per guard, at
/// the narrowing child.
pub(super) fn narrowed(cx: &Context<'_>, feeds_sink: &[bool], out: &mut Vec<Finding>) {
    let p = cx.pipeline;
    let mut gated: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for (i, stage) in p.stages.iter().enumerate() {
        let Some(when) = &stage.when else { continue };
        if !feeds_sink.get(i).copied().unwrap_or(false) {
            continue;
        }
        let mut refs = Vec::new();
        when.value.collect_references(&mut refs);
        for r in refs {
            let Some(g) = cx.dag.stage_index(&r.stage) else {
                continue;
            };
            if r.output == verdict(cx, g) && !gated.entry(g).or_default().contains(&i) {
                gated.entry(g).or_default().push(i);
            }
        }
    }
    for (g, stages) in gated {
        let guard = &p.stages[g];
        let Some(contract) = cx.registry.get(&guard.uses.value) else {
            continue;
        };
        let Some(vets) = &contract.vets else { continue };
        let Some(child_name) = &vets.narrowed_by else {
            continue;
        };
        let Some(crate::contract::ValueType::Enum(all)) =
            contract.child_spec(child_name).and_then(|s| s.args.first())
        else {
            continue;
        };
        let children: Vec<_> = guard.children_named(child_name).collect();
        let Some(first) = children.first() else {
            continue;
        };
        let written: Vec<&str> = children
            .iter()
            .flat_map(|c| c.values())
            .filter_map(|v| v.value.as_str())
            .collect();
        let missing: Vec<String> = all
            .iter()
            .filter(|w| !written.contains(&w.as_str()))
            .map(|w| format!("`{w}`"))
            .collect();
        if missing.is_empty() {
            continue;
        }
        let mut targets: Vec<String> = Vec::new();
        for c in guard.children_named(&vets.child) {
            for v in c.values() {
                let mut refs = Vec::new();
                v.value.collect_references(&mut refs);
                targets.extend(refs.iter().map(|r| format!("`{r}`")));
            }
        }
        let names: Vec<String> = stages
            .iter()
            .map(|&i| format!("`{}`", p.stages[i].name.value))
            .collect();
        let kept = if names.len() == 1 {
            "keeps or publishes"
        } else {
            "keep or publish"
        };
        let written_list: Vec<String> = written.iter().map(|w| format!("`{w}`")).collect();
        let mut f = Finding::new(
            ID,
            Severity::Error,
            format!(
                "coverage is a promise: `{}.{}` gates {}, which {kept} what it vouches for, but `{child_name}` narrows it to {}: a credential only {} would find in {} reads as clean",
                guard.name.value,
                vets.output,
                join_and(&names),
                join_and(&written_list),
                join_or(&missing),
                join_and(&targets),
            ),
            Label::new(first.name.span, "fewer than the default set"),
        );
        for &i in &stages {
            if let Some(w) = &p.stages[i].when {
                f = f.related(Label::new(
                    w.span,
                    format!("`{}` trusts the verdict here", p.stages[i].name.value),
                ));
            }
        }
        let every: Vec<String> = all.iter().map(|w| format!("\"{w}\"")).collect();
        out.push(
            f.help(format!(
                "remove `{child_name}` from `{}` to run every one (the default), or list them all: `{child_name} {}`",
                guard.name.value,
                every.join(" ")
            ))
            .confidence(Confidence::High)
            .stage(&guard.name.value),
        );
    }
}

/// "`a`", "`a` or `b`", "`a`, `b` or `c`".
fn join_or(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} or {last}", rest.join(", ")),
    }
}

//! A review that did not happen is never published as a review with no findings.
//!
//! A publishing stage (`std/post`) publishes what its `comment` and `findings` are given. When
//! the stage that produced them fell back (`on-error="fallback"`), was gated out by its own
//! `when`, or was disabled by a missing secret (`on-missing="disable"`), the values are absent
//! and the stage goes on running (the executor does not skip the consumers of such a stage).
//! `std/post` then says "not reviewed", but the run succeeds and its check run does not block:
//! a change nobody reviewed gets through. A program publishing them (a `run` stage) shows an
//! empty review. The same holds along
//! the way: a `run` stage that formats the findings, and the change a reviewer reviews (its
//! `untrusted` inputs: without the diff it reviews nothing and reports nothing). What a reviewer
//! may do without (`resume`, `since-last-review`, other `input`s: a fresh review is still a
//! review) is not followed.
//!
//! The "not reviewed" outcome is routed explicitly when the publishing stage does not run under
//! it: its `when` is false then (`when="review.commented"`), or the outcome cannot happen (the
//! stage fails the run: `on-error="fail"`, no `when`, no secret it can be disabled by), or it is
//! `on-error="skip"` (the executor then skips every stage that reads it, the publisher
//! included); or when a built-in publisher fails it (`not-reviewed "fail"`), reading the absent
//! value straight from the stage that fell back or was disabled. One finding per root (a stage's `on-error`, its `when`, a secret's `on-missing`),
//! labelled there.

use std::collections::{BTreeMap, VecDeque};

use super::expr;
use super::{ID, join_and};
use crate::check::Context;
use crate::contract::{Effect, Role, StageContract};
use crate::finding::{Confidence, Finding, Label, Severity};
use crate::model::{Expr, OnError, OnMissing, Reference, Secret, Stage};
use crate::policy::{Outputs, can_be_true, fallback_outputs};

/// The child of a reviewer stage that holds the change it reviews.
const REVIEWED: &str = "untrusted";

/// Why a stage did not produce its result.
enum Root<'a> {
    /// `on-error="fallback"`.
    Fallback,
    /// Its own `when` was false.
    Gated,
    /// A secret it holds is missing, under `on-missing="disable"`.
    Disabled(&'a Secret),
}

struct Outcome<'a> {
    root: Root<'a>,
    /// Completes "if `review` …".
    description: String,
    outputs: Outputs,
}

/// The outcomes of `stage` other than success under which its consumers still run: those of
/// `policy::bad_outcomes` but `on-error="skip"`, which skips them.
fn outcomes<'a>(cx: &'a Context<'_>, stage: &Stage, contract: &StageContract) -> Vec<Outcome<'a>> {
    let mut out = Vec::new();
    if stage.on_error.value == OnError::Fallback {
        out.push(Outcome {
            root: Root::Fallback,
            description: "fails (on-error=\"fallback\")".into(),
            outputs: fallback_outputs(stage, contract),
        });
    }
    if stage
        .when
        .as_ref()
        .is_some_and(|w| !w.value.eq(&Expr::Const { value: true }))
    {
        out.push(Outcome {
            root: Root::Gated,
            description: "is skipped (its `when` is false)".into(),
            outputs: Outputs::new(),
        });
    }
    for name in stage.secrets_named() {
        let Some(secret) = cx.pipeline.secret(name.value) else {
            continue;
        };
        if secret.on_missing.value == OnMissing::Disable && !misplaced(cx, stage, contract, secret)
        {
            out.push(Outcome {
                root: Root::Disabled(secret),
                description: format!(
                    "is disabled because secret `{}` is missing (on-missing=\"disable\")",
                    secret.name.value
                ),
                outputs: fallback_outputs(stage, contract),
            });
        }
    }
    out
}

/// A secret `stage` should not hold at all, which `secret-scope` reports: one it may not see, or
/// the key of a stage that runs no program held by one that runs a program. Its absence is not a
/// way the stage is meant to end.
fn misplaced(cx: &Context<'_>, stage: &Stage, contract: &StageContract, secret: &Secret) -> bool {
    if !secret
        .visible_to
        .iter()
        .any(|v| v.value == stage.name.value)
    {
        return true;
    }
    let runs_program = |c: &StageContract| c.opaque || c.has_effect(Effect::Executes);
    runs_program(contract)
        && cx.pipeline.stages.iter().any(|s| {
            s.secrets_named()
                .iter()
                .any(|n| n.value == secret.name.value)
                && cx
                    .registry
                    .get(&s.uses.value)
                    .is_some_and(|c| !runs_program(c))
        })
}

/// The references of `stage` whose absence leaves it with nothing to report.
fn needed<'a>(stage: &'a Stage, contract: &StageContract) -> Vec<&'a Reference> {
    let reviewer = !contract.reviewers().is_empty();
    let mut out = Vec::new();
    for child in &stage.children {
        let role = contract
            .child_spec(&child.name.value)
            .map_or(Role::Data, |s| s.role);
        let follow = if reviewer {
            child.name.value == REVIEWED
        } else if contract.opaque {
            matches!(
                role,
                Role::Data | Role::CommandLine | Role::Environment | Role::Stdin
            )
        } else {
            role == Role::Data
        };
        if follow {
            for v in child.values() {
                v.value.collect_references(&mut out);
            }
        }
    }
    out
}

/// Whether `stage`'s `when` is exactly `!producer.output` for an output its producer declares
/// [`crate::contract::OutputSpec::skip_reported`]: any other condition may gate it off for a
/// reason nobody reports.
fn reported_gate(cx: &Context<'_>, stage: &Stage) -> bool {
    let Some(Expr::Not { expr }) = stage.when.as_ref().map(|w| &w.value) else {
        return false;
    };
    let Expr::Ref { reference } = expr.as_ref() else {
        return false;
    };
    cx.output_spec(reference).is_some_and(|o| o.skip_reported)
}

/// Whether `stage` is written to fail a review that did not run
/// ([`crate::contract::ChildSpec::fails_not_reviewed`]).
fn fails_not_reviewed(stage: &Stage, contract: &StageContract) -> bool {
    stage.children.iter().any(|child| {
        contract.child_spec(&child.name.value).is_some_and(|spec| {
            child
                .args
                .first()
                .and_then(|a| a.value.as_str())
                .is_some_and(|w| spec.fails_not_reviewed.contains(&w))
        })
    })
}

/// One publishing stage that publishes a stage's fallen-back result.
struct Publisher {
    stage: usize,
    /// How the result reaches it: labels, the source first.
    path: Vec<Label>,
    /// The references it publishes, read straight from the source (empty when the source is
    /// further upstream).
    direct: Vec<Reference>,
    /// The first hop from the source: who reads what of it.
    first: (usize, Reference),
}

pub(super) fn not_reviewed(cx: &Context<'_>, order: &[usize], out: &mut Vec<Finding>) {
    let p = cx.pipeline;
    // (source, outcome index) → the stages publishing its result.
    let mut reports: BTreeMap<(usize, usize), Vec<Publisher>> = BTreeMap::new();
    for (pi, publisher) in p.stages.iter().enumerate() {
        let Some(pc) = cx.registry.get(&publisher.uses.value) else {
            continue;
        };
        if !pc.has_effect(Effect::Publishes) {
            continue;
        }
        let mut published: Vec<&Reference> = Vec::new();
        for child in &publisher.children {
            if pc.child_spec(&child.name.value).map(|s| s.role) == Some(Role::Publish) {
                for v in child.values() {
                    v.value.collect_references(&mut published);
                }
            }
        }
        let fails = fails_not_reviewed(publisher, pc);
        // Every stage the published values come from: stage → (its consumer, what it reads).
        let mut via: BTreeMap<usize, (usize, Reference)> = BTreeMap::new();
        let mut queue: VecDeque<usize> = VecDeque::new();
        for r in &published {
            if let Some(q) = cx.dag.stage_index(&r.stage)
                && q != pi
                && !via.contains_key(&q)
            {
                via.insert(q, (pi, (*r).clone()));
                queue.push_back(q);
            }
        }
        while let Some(x) = queue.pop_front() {
            let stage = &p.stages[x];
            let Some(contract) = cx.registry.get(&stage.uses.value) else {
                continue;
            };
            for r in needed(stage, contract) {
                if let Some(q) = cx.dag.stage_index(&r.stage)
                    && q != pi
                    && !via.contains_key(&q)
                {
                    via.insert(q, (x, r.clone()));
                    queue.push_back(q);
                }
            }
        }
        let mut sources: Vec<usize> = Vec::new();
        for &x in order {
            if !via.contains_key(&x) {
                continue;
            }
            let stage = &p.stages[x];
            let Some(contract) = cx.registry.get(&stage.uses.value) else {
                continue;
            };
            for (k, outcome) in outcomes(cx, stage, contract).into_iter().enumerate() {
                // Gated off by `!producer.output` where the producer declares that skip reported
                // (`skip_reported`), a built-in publisher (not a program) says "not reviewed" and
                // why: the outcome is routed.
                if matches!(outcome.root, Root::Gated) && !pc.opaque && reported_gate(cx, stage) {
                    continue;
                }
                // A stage gated on a source already reported is that source's consequence.
                if matches!(outcome.root, Root::Gated)
                    && stage.when.as_ref().is_some_and(|w| {
                        sources
                            .iter()
                            .any(|&s| expr::mentions(&w.value, &p.stages[s].name.value))
                    })
                {
                    continue;
                }
                // A built-in publisher that fails a review that did not run (`not-reviewed
                // "fail"`), reading an output this outcome leaves absent straight from the
                // stage, publishes "not reviewed" and fails the run: the outcome is routed, as by
                // a stage that fails the run itself. A skip is the pipeline's choice, which the
                // post does not fail: a gate is judged on its own.
                if !pc.opaque
                    && fails
                    && !matches!(outcome.root, Root::Gated)
                    && published.iter().any(|r| {
                        r.stage == stage.name.value
                            && outcome.outputs.get(&r.output).copied().flatten().is_none()
                    })
                {
                    continue;
                }
                let fixed = |r: &Reference| {
                    (r.stage == stage.name.value)
                        .then(|| outcome.outputs.get(&r.output).copied().flatten())
                };
                // Gated out, the stage's own `when` is false: a post gated the same way does not
                // run either.
                let runs = publisher.when.as_ref().is_none_or(|w| {
                    let condition = match (&outcome.root, &stage.when) {
                        (Root::Gated, Some(own)) => Expr::And {
                            left: Box::new(w.value.clone()),
                            right: Box::new(Expr::Not {
                                expr: Box::new(own.value.clone()),
                            }),
                        },
                        _ => w.value.clone(),
                    };
                    can_be_true(&condition, &fixed).is_some()
                });
                if !runs {
                    continue;
                }
                if !sources.contains(&x) {
                    sources.push(x);
                }
                reports.entry((x, k)).or_default().push(Publisher {
                    stage: pi,
                    path: path(cx, &via, x, pi),
                    direct: published
                        .iter()
                        .filter(|r| r.stage == stage.name.value)
                        .map(|r| (*r).clone())
                        .collect(),
                    first: via[&x].clone(),
                });
            }
        }
    }
    for ((x, k), publishers) in reports {
        let stage = &p.stages[x];
        let Some(contract) = cx.registry.get(&stage.uses.value) else {
            continue;
        };
        let Some(outcome) = outcomes(cx, stage, contract).into_iter().nth(k) else {
            continue;
        };
        out.push(finding(cx, stage, contract, &outcome, &publishers));
    }
}

/// How the result of `source` reaches `publisher`, the source first.
fn path(
    cx: &Context<'_>,
    via: &BTreeMap<usize, (usize, Reference)>,
    source: usize,
    publisher: usize,
) -> Vec<Label> {
    let p = cx.pipeline;
    let mut steps = Vec::new();
    let mut current = source;
    for _ in 0..p.stages.len() {
        let Some((consumer, r)) = via.get(&current) else {
            break;
        };
        let verb = if *consumer == publisher {
            "publishes"
        } else {
            "reads"
        };
        steps.push(Label::new(
            r.span,
            format!("`{}` {verb} `{r}`", p.stages[*consumer].name.value),
        ));
        if *consumer == publisher {
            break;
        }
        current = *consumer;
    }
    // A long chain shows its two ends: where the result is lost, and where it is published.
    if steps.len() > 2 * PATH_ENDS {
        steps.drain(PATH_ENDS..steps.len() - PATH_ENDS);
    }
    steps
}

/// How many steps of each end of a long path a finding shows.
const PATH_ENDS: usize = 4;

fn quoted(refs: &[Reference]) -> String {
    let mut names: Vec<String> = Vec::new();
    for r in refs {
        let n = format!("`{r}`");
        if !names.contains(&n) {
            names.push(n);
        }
    }
    join_and(&names)
}

fn finding(
    cx: &Context<'_>,
    stage: &Stage,
    contract: &StageContract,
    outcome: &Outcome<'_>,
    publishers: &[Publisher],
) -> Finding {
    let p = cx.pipeline;
    let name = &stage.name.value;
    let names: Vec<String> = publishers
        .iter()
        .map(|x| format!("`{}`", p.stages[x.stage].name.value))
        .collect();
    let publish = if names.len() == 1 {
        "publishes"
    } else {
        "publish"
    };
    let first = &publishers[0];
    let message = if first.direct.is_empty() {
        let (consumer, r) = &first.first;
        format!(
            "if `{name}` {}, `{}` runs without `{r}` and {} still {publish} its result: a review of nothing, with no findings",
            outcome.description,
            p.stages[*consumer].name.value,
            join_and(&names)
        )
    } else {
        let they = if first.direct.len() == 1 {
            "it reads"
        } else {
            "they read"
        };
        let builtin = cx
            .registry
            .get(&p.stages[first.stage].uses.value)
            .is_some_and(|c| !c.opaque);
        // A built-in publisher says "not reviewed" of an absent result, but the run goes on to
        // succeed, and a verdict that does not fail lets a change nobody reviewed through.
        let reads = if builtin {
            "absent, the review is published as \"not reviewed\" and the run does not fail"
                .to_owned()
        } else {
            format!("absent, {they} as a review with no findings")
        };
        format!(
            "if `{name}` {}, {} still {publish} {}: {reads}",
            outcome.description,
            join_and(&names),
            quoted(&first.direct)
        )
    };
    let primary = match outcome.root {
        Root::Fallback => Label::new(
            if stage.on_error.span.len > 0 {
                stage.on_error.span
            } else {
                stage.name.span
            },
            format!("`{name}` falls back to no result here"),
        ),
        Root::Gated => Label::new(
            stage.when.as_ref().map_or(stage.name.span, |w| w.span),
            format!("`{name}` does not run when this is false"),
        ),
        Root::Disabled(secret) => Label::new(
            if secret.on_missing.span.len > 0 {
                secret.on_missing.span
            } else {
                secret.name.span
            },
            format!("a missing `{}` disables `{name}`", secret.name.value),
        ),
    };
    // The gate that closes under every outcome of the source: whether the reviewer commented,
    // else whether the stage succeeded.
    let all = outcomes(cx, stage, contract);
    let flag = if !contract.reviewers().is_empty()
        && contract.output_spec("commented").is_some()
        && all
            .iter()
            .all(|o| o.outputs.get("commented").copied().flatten() != Some(true))
    {
        "commented"
    } else {
        "ok"
    };
    let gate = expr::reference(name, flag);
    let mut fixes: Vec<String> = Vec::new();
    for x in publishers {
        let s = &p.stages[x.stage];
        let fix = format!(
            "`when=\"{}\"` on `{}`",
            expr::conjunction(
                std::slice::from_ref(&gate),
                s.when.as_ref().map(|w| &w.value)
            ),
            s.name.value
        );
        if !fixes.contains(&fix) {
            fixes.push(fix);
        }
    }
    let mut help = format!("publish only a review that ran: {}", fixes.join(" and "));
    match outcome.root {
        Root::Fallback => help.push_str(&format!(
            "; or let `{name}` fail the run (remove `on-error=\"fallback\"`): a failed run is not a pass"
        )),
        Root::Gated => {}
        Root::Disabled(secret) => help.push_str(&format!(
            "; or let a missing `{}` fail the run (`on-missing=\"fail\"`): a failed run is not a pass",
            secret.name.value
        )),
    }
    // A built-in publisher that reads the result straight can fail the outcome itself.
    let mut failers: Vec<String> = Vec::new();
    for x in publishers.iter().filter(|x| !x.direct.is_empty()) {
        let s = &p.stages[x.stage];
        let Some(pc) = cx.registry.get(&s.uses.value) else {
            continue;
        };
        if pc.opaque || fails_not_reviewed(s, pc) {
            continue;
        }
        if let Some(spec) = pc
            .children
            .iter()
            .find(|c| !c.fails_not_reviewed.is_empty())
        {
            let fix = format!(
                "`{} \"{}\"` on `{}`",
                spec.name, spec.fails_not_reviewed[0], s.name.value
            );
            if !failers.contains(&fix) {
                failers.push(fix);
            }
        }
    }
    if !failers.is_empty() {
        help.push_str(&format!(
            "; or fail a review that did not run where it is published: {}",
            failers.join(" and ")
        ));
    }
    let mut f = Finding::new(ID, Severity::Error, message, primary);
    for x in publishers {
        let s = &p.stages[x.stage];
        if let Some(last) = x.path.last() {
            f = f.related(Label::new(
                last.span,
                format!("`{}` publishes it as the review", s.name.value),
            ));
        }
    }
    if first.path.len() > 1 {
        f = f.flow(first.path.clone());
    }
    f.help(help)
        .confidence(Confidence::High)
        .stage(&p.stages[first.stage].name.value)
}

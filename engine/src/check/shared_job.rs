//! `shared-job`: a stage that runs a program or a model never has to share a platform's job
//! with a stage that can write. `reviewflow export` keeps the two ends of an edge that
//! carries a private value, a secret or a diff in one job, and a stage caught between two stages
//! of a job joins it (`export::partition`); when those joins put a program beside a write token,
//! the job boundary between them is lost (reviewflow's own isolation still stands).
//!
//! One root cause is one finding: an edge another check already reports (a conversation kept
//! unsealed, the diff in a token holder's environment) is taken as gone, as fixing that finding
//! removes it. The pair is reported only if it would still share a job without every such edge,
//! and the finding names the chain of joins that remains. That is why this check runs after the
//! flow checks in `check::ALL`: it reads their findings.

use std::collections::{HashSet, VecDeque};

use super::{Check, Context};
use crate::contract::{Effect, OutputType};
use crate::export::{Carries, Partition, Reason, partition};
use crate::finding::{Confidence, Finding, Label, Severity};
use crate::graph::Dag;
use crate::model::{Access, Pipeline, Reference};
use crate::permission::capability;
use crate::span::Span;

pub struct SharedJob;

pub const ID: &str = "shared-job";

/// The most joins a finding names: a hostile file can chain a thousand.
const SHOWN: usize = 6;

impl Check for SharedJob {
    fn principle(&self) -> super::Principle {
        super::Principle::Labels
    }
    fn id(&self) -> &'static str {
        ID
    }
    fn severity(&self) -> Severity {
        Severity::Warning
    }
    fn summary(&self) -> &'static str {
        "a stage that runs a program never has to share a CI job with a token that can write"
    }
    fn run(&self, cx: &Context<'_>, out: &mut Vec<Finding>) {
        let Some(flow) = cx.flow else { return };
        let p = cx.pipeline;
        // Only a pipeline a platform runs as jobs is exported: its forge names the platform.
        let Some(platform) = cx.registry.platform_of(p) else {
            return;
        };
        let platform = platform.title();
        // A write that another check reports as an error (not needed, not backed) is taken as
        // gone: fixing that finding removes it.
        let errors: HashSet<Span> = out
            .iter()
            .filter(|f| f.check != ID && f.severity == Severity::Error)
            .map(|f| f.primary.span)
            .collect();
        let writes: Vec<Vec<Power>> = (0..p.stages.len())
            .map(|i| {
                let mut powers = powers(cx, i);
                powers.retain(|w| !errors.contains(&w.span));
                powers
            })
            .collect();
        let programs: Vec<usize> = (0..p.stages.len())
            .filter(|&i| runs_program(cx, i) && writes[i].is_empty())
            .collect();
        if programs.is_empty() || writes.iter().all(Vec::is_empty) {
            return;
        }
        let Some(full) = partition(p, cx.registry, cx.dag, flow) else {
            return;
        };
        let with_writer = |parts: &Partition| {
            let mut jobs = vec![false; parts.jobs.len()];
            for (w, _) in writes.iter().enumerate().filter(|(_, w)| !w.is_empty()) {
                jobs[parts.job_of[w]] = true;
            }
            jobs
        };
        let beside = with_writer(&full);
        if !programs.iter().any(|&r| beside[full.job_of[r]]) {
            return;
        }
        // The partition as it would be with every edge another check reports fixed.
        let reduced_dag = without_reported(cx, out);
        let Some(parts) = partition(p, cx.registry, &reduced_dag, flow) else {
            return;
        };
        let shared = with_writer(&parts);
        let mut joins = Joins::new(&parts);
        let mut found = Vec::new();
        for &r in programs.iter().filter(|&&r| shared[parts.job_of[r]]) {
            let Some((w, chain)) = joins.nearest_writer(r, &writes) else {
                continue;
            };
            found.push(finding(cx, platform, &parts, r, w, &writes[w], &chain));
        }
        out.extend(found);
    }
}

/// How a stage can write: a declared permission (the job's token gets it), or a secret that
/// can write.
struct Power {
    span: Span,
    /// The permission (`` `pull-requests:write` ``), or the secret and what it can write
    /// (`` secret `label-token` (pull-requests:write) ``).
    what: String,
    secret: bool,
}

fn powers(cx: &Context<'_>, i: usize) -> Vec<Power> {
    let p = cx.pipeline;
    let stage = &p.stages[i];
    let mut out: Vec<Power> = stage
        .permissions
        .iter()
        .filter(|perm| perm.value.access == Access::Write)
        .map(|perm| Power {
            span: perm.span,
            what: format!("`{}`", perm.value),
            secret: false,
        })
        .collect();
    let held = cx
        .flow
        .and_then(|f| f.held.get(i))
        .map_or(&[][..], Vec::as_slice);
    for &k in held {
        let secret = &p.secrets[k];
        let can = capability(cx.registry, p, k);
        // The job's own token: its power is the job's permissions, what its stages declare.
        if crate::permission::job_token(cx.registry, &secret.env.value) || !can.writes() {
            continue;
        }
        out.push(Power {
            span: secret.can.as_ref().map_or(secret.name.span, |c| c.span),
            what: format!("secret `{}` ({})", secret.name.value, can.describe_writes()),
            secret: true,
        });
    }
    out
}

/// A stage that runs a program or a model: a `run` command, a `std/review` reviewer.
fn runs_program(cx: &Context<'_>, i: usize) -> bool {
    cx.registry
        .get(&cx.pipeline.stages[i].uses.value)
        .is_some_and(|c| c.opaque || c.has_effect(Effect::Executes))
}

/// The DAG with every output another check reports on an edge taken off that edge (the edge
/// stays: the consumer still runs after the producer, reading something public instead).
///
/// An output must stay on one machine for each of its reasons (private, each secret it carries,
/// a diff); each is explained, at each place the consumer reads it, by a finding of another check
/// on that reference, or, for a diff (untrusted), by `write-token-injection`'s finding on the
/// consumer, or, for a secret outside the consumer's scope, by `secret-flow`'s, or, for a secret
/// the producer may not hold at all, by the finding on that holding. An output all
/// of whose reasons are explained everywhere it is read no longer joins.
fn without_reported(cx: &Context<'_>, reported: &[Finding]) -> Dag {
    let p = cx.pipeline;
    let mut dag = cx.dag.clone();
    let Some(flow) = cx.flow else { return dag };
    let on_reference: HashSet<Span> = reported
        .iter()
        .filter(|f| f.check != ID)
        .map(|f| f.primary.span)
        .collect();
    let stages_of = |check: &str| -> HashSet<&str> {
        reported
            .iter()
            .filter(|f| f.check == check)
            .filter_map(|f| f.stage.as_deref())
            .collect()
    };
    let injection = stages_of(super::write_token_injection::ID);
    let leaks = stages_of(super::secret_flow::SecretFlow.id());
    let edges: Vec<_> = dag.graph.edge_indices().collect();
    for e in edges {
        let Some((from, to)) = dag.graph.edge_endpoints(e) else {
            continue;
        };
        let (producer, consumer) = (dag.graph[from], dag.graph[to]);
        let producer_name = p.stages[producer].name.value.as_str();
        let consumer_name = p.stages[consumer].name.value.as_str();
        let info = &dag.graph[e];
        let mut gone: Vec<String> = Vec::new();
        for output in info.data.iter().chain(&info.guard) {
            let Some(labels) = flow.output(producer, output) else {
                continue;
            };
            let diff = cx
                .outputs
                .get(producer)
                .is_some_and(|o| o.iter().any(|(n, t)| n == output && *t == OutputType::Diff));
            if !labels.private && !diff && labels.secrets().next().is_none() {
                continue;
            }
            // A secret the producer may not hold at all is explained by the finding on that
            // holding (`check::held`), wherever it goes.
            let secrets: Vec<usize> = labels
                .secrets()
                .filter(|&k| {
                    !(flow.held[producer].contains(&k)
                        && super::held::reported_holding(cx, flow, producer, k).is_some())
                })
                .collect();
            if !labels.private && !diff && secrets.is_empty() {
                if !gone.contains(output) {
                    gone.push(output.clone());
                }
                continue;
            }
            let in_scope = |k: usize| {
                p.secrets[k]
                    .visible_to
                    .iter()
                    .any(|v| v.value == consumer_name)
            };
            let spans: Vec<Span> = flow
                .inputs
                .get(consumer)
                .into_iter()
                .flatten()
                .filter(|i| i.reference.stage == producer_name && &i.reference.output == output)
                .map(|i| i.span)
                .chain(
                    guard_references(p, consumer)
                        .into_iter()
                        .filter(|r| r.stage == producer_name && &r.output == output)
                        .map(|r| r.span),
                )
                .collect();
            let explained = !spans.is_empty()
                && spans.iter().all(|&span| {
                    on_reference.contains(&span)
                        || (!labels.private
                            && (!diff || injection.contains(consumer_name))
                            && secrets
                                .iter()
                                .all(|&k| !in_scope(k) && leaks.contains(consumer_name)))
                });
            if explained && !gone.contains(output) {
                gone.push(output.clone());
            }
        }
        if gone.is_empty() {
            continue;
        }
        let info = &mut dag.graph[e];
        info.data.retain(|o| !gone.contains(o));
        info.guard.retain(|o| !gone.contains(o));
    }
    dag
}

fn guard_references(p: &Pipeline, stage: usize) -> Vec<&Reference> {
    let mut refs = Vec::new();
    if let Some(when) = &p.stages[stage].when {
        when.value.collect_references(&mut refs);
    }
    refs
}

/// Joins, by index into `Partition::reasons`, in the order a finding names them.
type Chain = Vec<usize>;

/// The joins of a partition as a graph over stages: a `Private` join links its two ends, a
/// `Between` join links the stage to each of the two it sits between. Every search is a
/// breadth-first walk of it, so a finding costs time linear in the joins of its job.
struct Joins<'a> {
    parts: &'a Partition,
    /// Each stage's neighbours, with the join that links them.
    links: Vec<Vec<(usize, usize)>>,
    /// For each `Between` join, once worked out: the joins that put its two ends in one job.
    between: Vec<Option<Chain>>,
    /// `Between` joins being worked out (a join is not explained by itself).
    busy: Vec<bool>,
}

impl<'a> Joins<'a> {
    fn new(parts: &'a Partition) -> Self {
        let mut links = vec![Vec::new(); parts.job_of.len()];
        for (i, reason) in parts.reasons.iter().enumerate() {
            match *reason {
                Reason::Private {
                    producer, consumer, ..
                } => {
                    links[producer].push((consumer, i));
                    links[consumer].push((producer, i));
                }
                Reason::Between {
                    stage,
                    after,
                    before,
                } => {
                    for end in [after, before] {
                        links[stage].push((end, i));
                        links[end].push((stage, i));
                    }
                }
                Reason::Tangled {
                    after,
                    entry,
                    exit,
                    before,
                } => {
                    for (a, b) in [(after, entry), (exit, before)] {
                        links[a].push((b, i));
                        links[b].push((a, i));
                    }
                }
            }
        }
        let n = parts.reasons.len();
        Joins {
            parts,
            links,
            between: vec![None; n],
            busy: vec![false; n],
        }
    }

    /// The nearest stage from `from` that `wanted` accepts, and the joins on the way, without
    /// the join `skip`.
    fn walk(
        &self,
        from: usize,
        wanted: impl Fn(usize) -> bool,
        skip: Option<usize>,
    ) -> Option<(usize, Chain)> {
        let mut via: Vec<Option<(usize, usize)>> = vec![None; self.links.len()];
        let mut seen = vec![false; self.links.len()];
        seen[from] = true;
        let mut queue = VecDeque::from([from]);
        while let Some(s) = queue.pop_front() {
            if s != from && wanted(s) {
                let mut path = Vec::new();
                let mut at = s;
                while let Some((before, reason)) = via[at] {
                    if path.last() != Some(&reason) {
                        path.push(reason);
                    }
                    at = before;
                }
                path.reverse();
                return Some((s, path));
            }
            for &(next, reason) in &self.links[s] {
                if !seen[next] && Some(reason) != skip {
                    seen[next] = true;
                    via[next] = Some((s, reason));
                    queue.push_back(next);
                }
            }
        }
        None
    }

    /// The path's joins, each `Between` preceded by the joins that put its two ends in one job.
    fn explain(&mut self, path: &[usize]) -> Chain {
        let mut named = vec![false; self.parts.reasons.len()];
        let mut chain = Vec::new();
        for &reason in path {
            if let Reason::Between { .. } = self.parts.reasons[reason] {
                for inner in self.between(reason) {
                    if !std::mem::replace(&mut named[inner], true) {
                        chain.push(inner);
                    }
                }
            }
            if !std::mem::replace(&mut named[reason], true) {
                chain.push(reason);
            }
        }
        chain
    }

    /// What joins the two stages a `Between` join sits between, worked out once.
    fn between(&mut self, reason: usize) -> Chain {
        if let Some(chain) = &self.between[reason] {
            return chain.clone();
        }
        let Reason::Between { after, before, .. } = self.parts.reasons[reason] else {
            return Vec::new();
        };
        if std::mem::replace(&mut self.busy[reason], true) {
            return Vec::new();
        }
        let chain = match self.walk(after, |s| s == before, Some(reason)) {
            Some((_, path)) => self.explain(&path),
            None => Vec::new(),
        };
        self.busy[reason] = false;
        self.between[reason] = Some(chain.clone());
        chain
    }

    /// The stage that can write reached from `r` by the fewest joins, and the joins that
    /// explain it. A writer of the job the joins do not reach (the partition joined a group of
    /// stages whose members each sit on only one side) is explained by every join of the job.
    fn nearest_writer(&mut self, r: usize, writes: &[Vec<Power>]) -> Option<(usize, Chain)> {
        let job = self.parts.job_of[r];
        let writer = |s: usize| !writes[s].is_empty() && self.parts.job_of[s] == job;
        if let Some((w, path)) = self.walk(r, writer, None) {
            return Some((w, self.explain(&path)));
        }
        let w = *self.parts.jobs[job]
            .stages
            .iter()
            .find(|&&s| s != r && !writes[s].is_empty())?;
        let all = (0..self.parts.reasons.len())
            .filter(|&i| match self.parts.reasons[i] {
                Reason::Private { consumer, .. } => self.parts.job_of[consumer] == job,
                Reason::Between { stage, .. } => self.parts.job_of[stage] == job,
                Reason::Tangled { entry, .. } => self.parts.job_of[entry] == job,
            })
            .collect();
        Some((w, all))
    }
}

fn finding(
    cx: &Context<'_>,
    platform: &str,
    parts: &Partition,
    r: usize,
    w: usize,
    powers: &[Power],
    chain: &Chain,
) -> Finding {
    let p = cx.pipeline;
    let name = |i: usize| p.stages[i].name.value.as_str();
    let program = match cx.registry.get(&p.stages[r].uses.value) {
        Some(c) if !c.reviewer_kinds.is_empty() => "runs a reviewer",
        _ => "runs a program",
    };
    let token: Vec<&str> = powers
        .iter()
        .filter(|w| !w.secret)
        .map(|w| w.what.as_str())
        .collect();
    let mut can: Vec<String> = powers
        .iter()
        .filter(|w| w.secret)
        .map(|w| w.what.clone())
        .collect();
    if !token.is_empty() {
        can.insert(0, format!("the job's token ({})", token.join(", ")));
    }
    let mut why: Vec<String> = Vec::new();
    let mut labels: Vec<Label> = Vec::new();
    // A long chain is named by its ends: the joins at the program and at the writer say what to
    // change, and the exported workflow's comment lists every join of the job.
    let skipped = chain.len().saturating_sub(SHOWN);
    let shown: Vec<Option<usize>> = if skipped == 0 {
        chain.iter().copied().map(Some).collect()
    } else {
        let head = SHOWN / 2;
        let tail = chain.len() - (SHOWN - head);
        chain[..head]
            .iter()
            .copied()
            .map(Some)
            .chain([None])
            .chain(chain[tail..].iter().copied().map(Some))
            .collect()
    };
    for step in shown {
        let Some(i) = step else {
            why.push(format!("{skipped} more joins"));
            continue;
        };
        match &parts.reasons[i] {
            Reason::Private {
                producer,
                consumer,
                outputs,
            } => {
                for (output, carries) in outputs {
                    let what = match carries {
                        Carries::Private => "is private".to_owned(),
                        Carries::Diff => "is a diff".to_owned(),
                        Carries::Secret => {
                            let secrets: Vec<String> = cx
                                .flow
                                .and_then(|f| f.output(*producer, output))
                                .into_iter()
                                .flat_map(|l| l.secrets())
                                .filter_map(|k| p.secrets.get(k))
                                .map(|s| format!("`{}`", s.name.value))
                                .collect();
                            format!("carries secret {}", secrets.join(", "))
                        }
                    };
                    let edge = format!("`{}.{output}` → `{}`", name(*producer), name(*consumer));
                    why.push(format!("{edge} {what}"));
                    labels.push(Label::new(
                        reference_span(cx, *producer, *consumer, output),
                        format!(
                            "`{}.{output}` {what}: it never crosses a job boundary, so `{}` and `{}` share a job",
                            name(*producer),
                            name(*producer),
                            name(*consumer)
                        ),
                    ));
                }
            }
            Reason::Between {
                stage,
                after,
                before,
            } => {
                why.push(format!(
                    "`{}` sits between `{}` and `{}`",
                    name(*stage),
                    name(*after),
                    name(*before)
                ));
                labels.push(Label::new(
                    p.stages[*stage].name.span,
                    format!(
                        "`{}` runs after `{}` and before `{}`, which share a job: in a job of its own it would make the jobs a cycle",
                        name(*stage),
                        name(*after),
                        name(*before)
                    ),
                ));
            }
            Reason::Tangled {
                after,
                entry,
                exit,
                before,
            } => {
                why.push(format!(
                    "`{}` → `{}` and `{}` → `{}` would make two jobs wait for each other",
                    name(*after),
                    name(*entry),
                    name(*exit),
                    name(*before)
                ));
                labels.push(Label::new(
                    p.stages[*entry].name.span,
                    format!(
                        "the job of `{}` and `{}` runs after `{}` and before `{}`, whose job would wait for it: the two are one job",
                        name(*entry),
                        name(*exit),
                        name(*after),
                        name(*before)
                    ),
                ));
            }
        }
    }
    let mut f = Finding::new(
        ID,
        Severity::Warning,
        format!(
            "`{}` {program} in one {platform} job with `{}`, which can write with {}: {}",
            name(r),
            name(w),
            can.join(" and "),
            why.join("; ")
        ),
        Label::new(
            p.stages[r].name.span,
            format!(
                "`{}` {program} on the machine that holds `{}`'s token",
                name(r),
                name(w)
            ),
        ),
    );
    for label in labels {
        f = f.related(label);
    }
    for power in powers {
        f = f.related(Label::new(
            power.span,
            format!("`{}` can write with this", name(w)),
        ));
    }
    // Where the writer is caught between two stages, the fix is to stop the later one waiting.
    let waits = chain.iter().find_map(|&i| match parts.reasons[i] {
        Reason::Between { stage, before, .. } if stage == w => Some(before),
        _ => None,
    });
    let fix = match waits {
        Some(before) => format!(
            "let `{}` not wait for `{}` (through a `needs`, a `when` or a value it reads), and `{}` gets a job of its own",
            name(before),
            name(w),
            name(w)
        ),
        None => "make each edge named here carry a public value instead (a head, a comment, findings, a sealed blob, a `bool`): those cross between jobs".to_owned(),
    };
    f.help(format!(
        "what is lost is the job boundary, not reviewflow's isolation, which still keeps `{}`'s token from `{}`'s {}: {fix}",
        name(w),
        name(r),
        if program == "runs a reviewer" { "reviewer" } else { "command" },
    ))
    .confidence(Confidence::High)
    .stage(name(r))
}

/// Where `consumer` reads `producer.output`: in a child, else in its `when`, else its name.
fn reference_span(cx: &Context<'_>, producer: usize, consumer: usize, output: &str) -> Span {
    let p = cx.pipeline;
    let producer_name = p.stages[producer].name.value.as_str();
    let is = |r: &Reference| r.stage == producer_name && r.output == output;
    cx.flow
        .and_then(|f| f.inputs.get(consumer))
        .into_iter()
        .flatten()
        .find(|i| is(&i.reference))
        .map(|i| i.span)
        .or_else(|| {
            guard_references(p, consumer)
                .into_iter()
                .find(|r| is(r))
                .map(|r| r.span)
        })
        .unwrap_or(p.stages[consumer].name.span)
}

#[cfg(test)]
mod tests {
    use super::super::ALL;

    /// It reads the findings of the checks before it (any finding on a reference, an error on a
    /// permission): every check that reports one must run first. `suppression` reports only
    /// `allow`s.
    #[test]
    fn runs_after_every_check_it_reads() {
        let own = ALL
            .iter()
            .position(|c| c.id() == super::ID)
            .expect("registered");
        let after: Vec<&str> = ALL[own + 1..].iter().map(|c| c.id()).collect();
        assert_eq!(after, [super::super::suppression::ID]);
    }
}

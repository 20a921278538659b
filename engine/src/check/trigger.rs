//! `trigger`: the events the exported workflow runs on (`trigger`; without one, nothing is exported)
//! fit what the pipeline needs from them.
//!
//! - On `pull_request` the workflow is the pull request's own: a fork's run gets no secret, and
//!   a branch's run uses a workflow its author wrote. A stage that holds a secret other than the
//!   workflow's own token then either lacks it or holds it under a workflow nobody reviewed, and
//!   a verdict it records on the head (a check run) is the change's own word.
//! - A store the pipeline both keeps blobs in and reads them from believes only the producers its
//!   `trust` rules name. When no rule names an event the pipeline runs on, `restore` never reads
//!   back what the pipeline's own runs keep.

use super::{Check, Context};
use crate::contract::Role;
use crate::finding::{Confidence, Finding, Label, Severity};
use crate::model::Value;
use crate::platform::{Event, EventRuns, Words};
use crate::span::Span;

pub struct Trigger;

/// The events the pipeline runs on, as their platform describes them, with where each is
/// written: without a `trigger` (not exported), the one a review of a change with secrets
/// needs ([`crate::registry::Registry::change_event`]).
fn events(cx: &Context<'_>) -> Vec<(&'static Event, Option<Span>)> {
    if cx.pipeline.triggers.is_empty() {
        return cx
            .registry
            .change_event()
            .map(|e| (e, None))
            .into_iter()
            .collect();
    }
    cx.pipeline
        .triggers
        .iter()
        .filter_map(|t| Some((cx.registry.event(&t.event.value)?, Some(t.event.span))))
        .collect()
}

/// The name of the event a review of a change with secrets runs on, for a fix: one of the
/// platform the pipeline's first known trigger is on ([`crate::registry::Registry::base_event_beside`]).
fn change_event(cx: &Context<'_>) -> &'static str {
    let event = match cx
        .pipeline
        .triggers
        .iter()
        .find_map(|t| cx.registry.event(&t.event.value))
    {
        Some(e) => cx.registry.base_event_beside(e.name),
        None => cx.registry.change_event(),
    };
    event.map_or("an event whose job runs the base's configuration", |e| {
        e.name
    })
}

impl Check for Trigger {
    fn principle(&self) -> super::Principle {
        super::Principle::AllowLists
    }
    fn id(&self) -> &'static str {
        "trigger"
    }
    fn severity(&self) -> Severity {
        Severity::Warning
    }
    fn summary(&self) -> &'static str {
        "the events the workflow runs on give the stages their secrets and let restore read what the pipeline keeps"
    }
    fn run(&self, cx: &Context<'_>, out: &mut Vec<Finding>) {
        self.pull_request_secrets(cx, out);
        self.records_of_the_changes_workflow(cx, out);
        self.every_branch(cx, out);
        self.unread_store(cx, out);
        self.unreviewed_pushes(cx, out);
        self.unreviewed_ready(cx, out);
    }
}

/// The pipeline's trigger whose job runs the change's own configuration (`pull_request`), if it
/// has one.
fn changes_own<'p>(cx: &Context<'p>) -> Option<&'p crate::model::Trigger> {
    cx.pipeline.triggers.iter().find(|t| {
        cx.registry
            .event(&t.event.value)
            .is_some_and(|e| e.runs == EventRuns::Change)
    })
}

/// Whether a `branches` filter admits every base branch: none written, or a pattern of
/// wildcards alone (`**`, `*`) among those it admits (`!` patterns only take away).
fn admits_every_branch(branches: Option<&[String]>) -> bool {
    let Some(patterns) = branches else {
        return true;
    };
    patterns
        .iter()
        .filter(|p| !p.starts_with('!'))
        .any(|p| p.chars().all(|c| matches!(c, '*' | '/' | '?' | '+')))
}

/// The first pattern of a `branches` filter that admits branches it does not name (a wildcard
/// in it; `!` patterns only take away).
fn unnamed(patterns: &[String]) -> Option<&str> {
    patterns
        .iter()
        .filter(|p| !p.starts_with('!'))
        .find(|p| p.contains(['*', '?', '+', '[']))
        .map(String::as_str)
}

impl Trigger {
    /// Principle 3: `pull_request_target` runs the base branch's workflow with the
    /// repository's secrets; without a `branches` filter that names the branches whose workflow
    /// was reviewed, a pull request into any other branch runs that branch's copy.
    fn every_branch(&self, cx: &Context<'_>, out: &mut Vec<Finding>) {
        let p = cx.pipeline;
        let Some(flow) = cx.flow else { return };
        if p.secrets.is_empty() && flow.held.iter().all(Vec::is_empty) {
            return;
        }
        for t in &p.triggers {
            let Some(event) = cx.registry.event(&t.event.value) else {
                continue;
            };
            if event.runs != EventRuns::Base || !event.about_a_change() {
                continue;
            }
            let name = event.name;
            let w = cx.registry.words_of(name);
            let branches = t.branches.as_ref().map(|b| b.value.as_slice());
            if !admits_every_branch(branches) {
                // A pattern admits branches the file does not name: a release branch of three
                // years ago keeps the workflow it had then.
                if let (Some(b), Some(pattern)) = (&t.branches, branches.and_then(unnamed)) {
                    out.push(
                        Finding::new(
                            self.id(),
                            Severity::Warning,
                            format!(
                                "`{name}` runs on a {} into any branch `{pattern}` admits, with {}: a branch the file does not name (an old one, or one created later) runs its own copy of the {} and the pipeline (principle 3, allow-lists)",
                                w.change, w.secrets, w.configuration
                            ),
                            Label::new(b.span, "admits branches the file does not name"),
                        )
                        .help(format!(
                            "name the branches whose {} was reviewed (`branches=\"main release/2.x\"`), and keep the secrets in an environment restricted to them",
                            w.configuration
                        ))
                        .confidence(Confidence::Medium),
                    );
                }
                continue;
            }
            let (span, what) = match &t.branches {
                Some(b) => (b.span, "admits every branch"),
                None => (t.event.span, "no `branches`: every base branch"),
            };
            out.push(
                Finding::new(
                    self.id(),
                    self.severity(),
                    format!(
                        "`{name}` runs on a {change} into any branch, with {}: a {change} into a branch nobody reviewed runs that branch's copy of the {} and the pipeline (principle 3, allow-lists)",
                        w.secrets,
                        w.configuration,
                        change = w.change
                    ),
                    Label::new(span, what),
                )
                .help(format!(
                    "name the branches whose {} was reviewed: `branches=\"main\"`, and keep the secrets in an environment restricted to them",
                    w.configuration
                ))
                .confidence(Confidence::High),
            );
        }
    }

    /// Principle 4: a pipeline that publishes a review says which head it reviewed; with
    /// `types` that leave out `synchronize`, a push after the pull request was opened starts no
    /// review, and the verdict on the earlier head stays up beside the new one.
    fn unreviewed_pushes(&self, cx: &Context<'_>, out: &mut Vec<Finding>) {
        let p = cx.pipeline;
        let publishes = p.stages.iter().any(|s| {
            cx.registry
                .get(&s.uses.value)
                .is_some_and(|c| c.has_effect(crate::contract::Effect::Publishes))
        });
        if !publishes {
            return;
        }
        for (types, event, push) in lacking(cx, |e| e.push_type) {
            out.push(
                Finding::new(
                    self.id(),
                    self.severity(),
                    format!(
                        "`{}` starts no review when the {} is pushed to (`types` leaves out `{push}`): the review published for an earlier head stays up while the new commits go unreviewed (principle 4, coverage is a promise)",
                        event.name,
                        cx.registry.words_of(event.name).change
                    ),
                    Label::new(types.span, format!("no `{push}`")),
                )
                .help(format!(
                    "add `{push}` to `types` (the default types have it: `{}`)",
                    event.default_types.join(" ")
                ))
                .confidence(Confidence::High),
            );
        }
    }

    /// Principle 4: a stage gated off on a draft (its `when` reads an output whose skip is
    /// reported: `gather.draft`) is reviewed when the change is marked ready; with `types` that
    /// leave out the event's ready type, that starts no run, and the draft stays unreviewed
    /// until the next push.
    fn unreviewed_ready(&self, cx: &Context<'_>, out: &mut Vec<Finding>) {
        let p = cx.pipeline;
        let gates_on_draft = p.stages.iter().any(|s| {
            let mut refs = Vec::new();
            if let Some(w) = &s.when {
                w.value.collect_references(&mut refs);
            }
            refs.iter()
                .any(|r| cx.output_spec(r).is_some_and(|o| o.skip_reported))
        });
        if !gates_on_draft {
            return;
        }
        for (types, event, ready) in lacking(cx, |e| e.ready_type) {
            out.push(
                Finding::new(
                    self.id(),
                    self.severity(),
                    format!(
                        "`{}` starts no review when a draft {} is marked ready (`types` leaves out `{ready}`): a draft the pipeline skipped stays unreviewed until the next push (principle 4, coverage is a promise)",
                        event.name,
                        cx.registry.words_of(event.name).change
                    ),
                    Label::new(types.span, format!("no `{ready}`")),
                )
                .help(format!(
                    "add `{ready}` to `types` (the default types have it: `{}`)",
                    event.default_types.join(" ")
                ))
                .confidence(Confidence::High),
            );
        }
    }

    fn pull_request_secrets(&self, cx: &Context<'_>, out: &mut Vec<Finding>) {
        let p = cx.pipeline;
        let Some(trigger) = changes_own(cx) else {
            return;
        };
        let w = cx.registry.words_of(&trigger.event.value);
        let Some(flow) = cx.flow else { return };
        let mut held: Vec<usize> = flow.held.iter().flatten().copied().collect();
        held.sort_unstable();
        held.dedup();
        held.retain(|&k| !crate::permission::job_token(cx.registry, &p.secrets[k].env.value));
        let Some(&first) = held.first() else { return };
        let names: Vec<String> = held
            .iter()
            .map(|&k| format!("`{}`", p.secrets[k].name.value))
            .collect();
        out.push(
            Finding::new(
                self.id(),
                self.severity(),
                format!(
                    "on `{}` the {configuration} is the {}'s own: a fork's run gets no {}, and a branch's run hands {} to a {configuration} its author wrote",
                    trigger.event.value,
                    w.change,
                    names.join(" or "),
                    if held.len() == 1 { "it" } else { "them" },
                    configuration = w.configuration,
                ),
                Label::new(
                    trigger.event.span,
                    format!("runs the {}'s {}", w.change, w.configuration),
                ),
            )
            .related(Label::new(
                p.secrets[first].name.span,
                format!("a secret other than {}", w.token),
            ))
            .help(format!(
                "run on `{}`, whose {} is the base branch's, and keep the secrets in an environment restricted to that branch",
                change_event(cx),
                w.configuration
            ))
            .confidence(Confidence::High),
        );
    }

    /// A verdict recorded on the head (a check run, an approval: the contracts' `claims_whole`)
    /// by a pipeline that runs on an event whose job runs the change's own configuration
    /// (`EventRuns::Change`), which the change's branch brings itself, is the change's own word:
    /// its author can rewrite what records it, so a rule that requires it requires nothing
    /// (principle 4). An event started by hand on any ref (`EventRuns::Chosen`) is started by
    /// someone with write access, and the platform's docs restrict the job's environment to the
    /// default branch: judged, and left.
    fn records_of_the_changes_workflow(&self, cx: &Context<'_>, out: &mut Vec<Finding>) {
        let Some(trigger) = changes_own(cx) else {
            return;
        };
        let event = trigger.event.value.as_str();
        let w = cx.registry.words_of(event);
        let instead = change_event(cx);
        for (stage, child, _, arg) in super::fail_closed::subject::whole_head_claims(cx) {
            out.push(
                Finding::new(
                    self.id(),
                    self.severity(),
                    format!(
                        "`{}`'s `{}` records a verdict on the head, but the pipeline runs on `{event}`, whose {} and pipeline file a {}'s branch brings itself: its author can rewrite what records the verdict, so a rule that requires it requires nothing (principle 4: a verdict covers what it claims)",
                        stage.name.value, child.name.value, w.configuration, w.change
                    ),
                    Label::new(arg.span, "a verdict on the head"),
                )
                .related(Label::new(
                    trigger.event.span,
                    format!("runs the branch's own {}", w.configuration),
                ))
                .help(format!(
                    "record verdicts that a rule requires from a pipeline on `{instead}` alone, whose {} is the base branch's; on `{event}`, publish a comment only",
                    w.configuration
                ))
                .confidence(Confidence::High)
                .stage(&stage.name.value),
            );
        }
    }

    fn unread_store(&self, cx: &Context<'_>, out: &mut Vec<Finding>) {
        let p = cx.pipeline;
        let events = events(cx);
        let mut reported: Vec<&str> = Vec::new();
        for stage in &p.stages {
            let Some(contract) = cx.registry.get(&stage.uses.value) else {
                continue;
            };
            for child in &stage.children {
                if contract.child_spec(&child.name.value).map(|s| s.role) != Some(Role::Data) {
                    continue;
                }
                for v in child.values() {
                    let Value::Store(name) = &v.value else {
                        continue;
                    };
                    let Some(store) = p.store(name) else { continue };
                    let Some(kind) = cx.registry.store(&store.kind.value) else {
                        continue;
                    };
                    if reported.contains(&name.as_str()) || !kind.lookups || !p.keeps_in(name) {
                        continue;
                    }
                    // Rules without an event are the `trust` check's; only a full set is judged.
                    let named: Vec<&str> = store
                        .trust
                        .iter()
                        .filter_map(|r| r.setting("event").and_then(|e| e.value.as_str()))
                        .collect();
                    // So are rules the kind judges flawed (a run of the pull request's own
                    // workflow): the fix of that finding is the rule this one would ask for.
                    if named.is_empty()
                        || named.len() < store.trust.len()
                        || kind
                            .rule_judge
                            .is_some_and(|judge| !judge(name, &store.trust).is_empty())
                    {
                        continue;
                    }
                    if events.iter().any(|(e, _)| named.contains(&e.name)) {
                        continue;
                    }
                    reported.push(name);
                    let runs_on: Vec<String> = events
                        .iter()
                        .map(|(e, _)| format!("`{}`", e.name))
                        .collect();
                    let mut finding = Finding::new(
                        self.id(),
                        self.severity(),
                        format!(
                            "store `{name}` believes only runs of {}, and the pipeline runs on {}: `{}` never reads back what this pipeline keeps",
                            quoted(&named),
                            runs_on.join(" and "),
                            stage.name.value
                        ),
                        Label::new(store.name.span, "trusts none of the pipeline's runs"),
                    )
                    .related(Label::new(v.span, format!("`{}` reads it here", stage.name.value)))
                    .help(rule_help(
                        &events,
                        &named,
                        change_event(cx),
                        cx.registry
                            .words_of(events.first().map_or("", |(e, _)| e.name)),
                    ))
                    .confidence(Confidence::High)
                    .stage(&stage.name.value);
                    if let Some(span) = events[0].1 {
                        finding = finding.related(Label::new(span, "the pipeline runs on this"));
                    }
                    out.push(finding);
                }
            }
        }
    }
}

/// A rule for the pipeline's own runs, unless those runs are `pull_request` ones, which a rule
/// must not name (the `trust` check): then a trigger the rules name.
fn rule_help(
    events: &[(&Event, Option<Span>)],
    named: &[&str],
    instead: &str,
    words: &Words,
) -> String {
    match events.iter().find(|(e, _)| e.runs != EventRuns::Change) {
        // An event started on any ref: the rule names the branch whose configuration is reviewed.
        Some((e, _)) if e.runs == EventRuns::Chosen => format!(
            "add a rule for the pipeline's own runs: `trust workflow=\"<the exported workflow>\" event=\"{}\" branch=\"main\"`",
            e.name
        ),
        Some((e, _)) => format!(
            "add a rule for the pipeline's own runs: `trust workflow=\"<the exported workflow>\" event=\"{}\"`",
            e.name
        ),
        None => format!(
            "run on an event the rules name (`trigger \"{}\"`): a rule for `{}` runs would believe what any {} uploads",
            named.first().copied().unwrap_or(instead),
            events.first().map_or("such", |(e, _)| e.name),
            words.change
        ),
    }
}

fn quoted(events: &[&str]) -> String {
    let mut list: Vec<String> = events.iter().map(|e| format!("`{e}`")).collect();
    list.dedup();
    list.join(" and ")
}

/// The triggers whose `types` leave out the type `wanted` picks of their event (the event's
/// push, its ready-for-review), with their `types`, their event and that type.
fn lacking<'a>(
    cx: &'a Context<'_>,
    wanted: impl Fn(&crate::platform::Event) -> Option<&'static str> + 'a,
) -> impl Iterator<
    Item = (
        &'a crate::span::Spanned<Vec<String>>,
        &'static crate::platform::Event,
        &'static str,
    ),
> + 'a {
    cx.pipeline.triggers.iter().filter_map(move |t| {
        let types = t.types.as_ref()?;
        let event = cx.registry.event(&t.event.value)?;
        let ty = wanted(event)?;
        (!types.value.iter().any(|have| have == ty)).then_some((types, event, ty))
    })
}

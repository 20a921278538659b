//! `trust`: a stage that reads a store must know whose blobs it may believe: the store needs a
//! `trust` rule, and caps on the tries over trusted blobs (`max-tries`) and, for artifacts, on
//! producer look-ups (`max-run-lookups`), so that a flood of planted blobs costs nothing. A cap
//! above its bound is the compiler's (`limit`): a limit that does not limit is none.
//!
//! Where producers are GitHub workflow runs, each rule must also admit only runs that the author
//! of a pull request cannot start with a workflow file of their own: a rule that names a
//! `pull_request` event, no workflow, no event, or a `push`/`workflow_dispatch` event on any
//! branch is satisfied by a run whose workflow file the pull request (or an unreviewed branch)
//! wrote, and such a run can upload an artifact of any name.

use super::{Check, Context};
use crate::contract::Role;
use crate::finding::{Confidence, Finding, Label, Severity};
use crate::model::{Store, TrustRule, Value};
use crate::span::Span;

pub struct Trust;

/// Events whose runs use the workflow file as the pull request's head has it (a merge queue's
/// run uses the merge group's commit, which holds the pull request's changes).
pub(super) const PULL_REQUEST_CODE: &[&str] = &[
    "pull_request",
    "pull_request_review",
    "pull_request_review_comment",
    "merge_group",
];

/// Events whose runs use the workflow file of the branch they were started on.
const BRANCH_CODE: &[&str] = &["push", "workflow_dispatch"];

/// Events whose runs use the default (or base) branch's workflow file, whatever started them.
/// With [`BRANCH_CODE`] on a named branch, the only events a rule may admit (principle 3: an
/// event not known to run a reviewed workflow file is reported, one never seen included).
const REVIEWED_CODE: &[&str] = &["pull_request_target", "schedule", "workflow_run"];

/// The workflow a fix names when the rule names none.
const EXAMPLE_WORKFLOW: &str = ".github/workflows/review.yaml";

/// A fact of a rule, with where it is written.
struct Fact<'a> {
    value: &'a str,
    span: Span,
}

fn fact<'a>(rule: &'a TrustRule, name: &str) -> Option<Fact<'a>> {
    let v = rule.setting(name)?;
    Some(Fact {
        value: v.value.as_str()?,
        span: v.span,
    })
}

/// `trust workflow="…" event="…" branch="…" repository="…"`, the facts that are set.
fn rule_text(facts: &[(&str, Option<&str>)]) -> String {
    let mut out = String::from("trust");
    for (name, value) in facts {
        if let Some(v) = value {
            out.push_str(&format!(" {name}=\"{v}\""));
        }
    }
    out
}

/// Why a workflow-run rule admits a run that a pull request's author can start with a workflow
/// file of their own: the place, the message, the label and the fix.
struct Flaw {
    span: Span,
    message: String,
    label: String,
    help: String,
}

/// `known`: a workflow another rule of the store names, for a fix of a rule that names none.
fn judge(store: &str, rule: &TrustRule, known: Option<&str>) -> Option<Flaw> {
    let workflow = fact(rule, "workflow");
    let event = fact(rule, "event");
    let branch = fact(rule, "branch");
    let repository = fact(rule, "repository");
    let repo = repository.as_ref().map(|r| r.value);
    let wf = workflow
        .as_ref()
        .map(|w| w.value)
        .or(known)
        .unwrap_or(EXAMPLE_WORKFLOW);
    let name_wf = if workflow.is_some() || known.is_some() {
        String::new()
    } else {
        " (the workflow file of the job that seals the blobs)".to_string()
    };
    // The two rules the review's own blobs come from: its runs on pull requests, with the base
    // branch's workflow file, and runs started on a reviewed branch.
    let on_target = rule_text(&[
        ("workflow", Some(wf)),
        ("event", Some("pull_request_target")),
        ("repository", repo),
    ]);
    let on_branch = |event: &str| {
        rule_text(&[
            ("workflow", Some(wf)),
            ("event", Some(event)),
            ("branch", Some(branch.as_ref().map_or("main", |b| b.value))),
            ("repository", repo),
        ])
    };
    if let Some(e) = &event
        && PULL_REQUEST_CODE.contains(&e.value)
    {
        return Some(Flaw {
            span: e.span,
            message: format!(
                "a trust rule of store `{store}` admits `{}` runs, which run the workflow file as the pull request has it: whoever pushes to a pull request's branch decides what such a run uploads, an artifact of any name included",
                e.value
            ),
            label: format!("`{}` runs the pull request's own workflow", e.value),
            help: format!(
                "run the job that seals the blobs on `pull_request_target`, which always runs the base branch's workflow file, and trust that: `{on_target}`{name_wf}"
            ),
        });
    }
    let Some(workflow) = workflow else {
        let (span, message, label) = match (&branch, &event) {
            (Some(b), None) => (
                b.span,
                format!(
                    "a trust rule of store `{store}` names a branch but no workflow or event: a head branch is named by whoever pushes it (a fork's pull request can come from a branch called `{}`), and a run of any of the repository's workflows for it is believed",
                    b.value
                ),
                "a branch name alone proves nothing".to_string(),
            ),
            (_, Some(e)) => (
                rule.span,
                format!(
                    "a trust rule of store `{store}` names no workflow: a `{}` run of any of the repository's workflows is believed, one that builds or tests the pull request's code included",
                    e.value
                ),
                "no `workflow`".to_string(),
            ),
            (None, None) => (
                rule.span,
                format!(
                    "a trust rule of store `{store}` names no workflow and no event: a run of any of the repository's workflows, on any event, is believed"
                ),
                "no `workflow`, no `event`".to_string(),
            ),
        };
        let fixed = match &event {
            Some(e) if BRANCH_CODE.contains(&e.value) => format!("`{}`", on_branch(e.value)),
            Some(e) if e.value != "pull_request_target" => format!(
                "`{}`",
                rule_text(&[
                    ("workflow", Some(wf)),
                    ("event", Some(e.value)),
                    ("branch", branch.as_ref().map(|b| b.value)),
                    ("repository", repo),
                ])
            ),
            Some(_) => format!("`{on_target}`"),
            None => format!(
                "`{on_target}` for its runs on pull requests, or `{}` for runs started on a reviewed branch",
                on_branch("workflow_dispatch")
            ),
        };
        return Some(Flaw {
            span,
            message,
            label,
            help: format!(
                "name the workflow file and the event of the job that seals the blobs: {fixed}"
            ),
        });
    };
    let Some(event) = event else {
        return Some(Flaw {
            span: rule.span,
            message: format!(
                "a trust rule of store `{store}` names no event, so it admits `pull_request` runs of `{}`, which run the workflow file as the pull request has it: an edited copy of it can upload an artifact of any name",
                workflow.value
            ),
            label: "no `event`".into(),
            help: format!(
                "name the event: `{on_target}` for the job's runs on pull requests, or `{}` for runs started on a reviewed branch",
                on_branch("workflow_dispatch")
            ),
        });
    };
    if !(REVIEWED_CODE.contains(&event.value) || BRANCH_CODE.contains(&event.value)) {
        return Some(Flaw {
            span: event.span,
            message: format!(
                "a trust rule of store `{store}` admits `{}` runs, an event not known to run a reviewed workflow file: a rule admits only the events whose runs use the base branch's workflow file ({}) or a named branch's ({} with `branch=`)",
                event.value,
                REVIEWED_CODE.join(", "),
                BRANCH_CODE.join(", ")
            ),
            label: format!("`{}`: not known to run a reviewed workflow", event.value),
            help: format!(
                "trust the job that seals the blobs on an event whose workflow file is reviewed: `{on_target}`{name_wf}"
            ),
        });
    }
    if BRANCH_CODE.contains(&event.value) && branch.is_none() {
        return Some(Flaw {
            span: event.span,
            message: format!(
                "a trust rule of store `{store}` admits `{}` runs on any branch: such a run uses the workflow file of the branch it was started on, so a run on an unreviewed branch, with its own `{}`, can upload an artifact of any name",
                event.value, workflow.value
            ),
            label: format!("`{}` on any branch", event.value),
            help: format!(
                "name the branch whose workflow file is reviewed (the default branch): `{}`",
                on_branch(event.value)
            ),
        });
    }
    None
}

impl Trust {
    /// The flaws of the store's trust rules, if its producers are workflow runs.
    fn rule_flaws(
        &self,
        cx: &Context<'_>,
        store: &Store,
        reads: &Label,
        stage: &str,
        out: &mut Vec<Finding>,
    ) {
        if !cx
            .registry
            .store(&store.kind.value)
            .is_some_and(|k| k.workflow_runs)
        {
            return;
        }
        let known = store
            .trust
            .iter()
            .find_map(|r| r.setting("workflow").and_then(|v| v.value.as_str()));
        for rule in &store.trust {
            let Some(flaw) = judge(&store.name.value, rule, known) else {
                continue;
            };
            out.push(
                Finding::new(
                    self.id(),
                    self.severity(),
                    flaw.message,
                    Label::new(flaw.span, flaw.label),
                )
                .related(reads.clone())
                .help(flaw.help)
                .confidence(Confidence::High)
                .stage(stage),
            );
        }
    }
}

impl Check for Trust {
    fn principle(&self) -> super::Principle {
        super::Principle::UnknownIsUntrusted
    }
    fn id(&self) -> &'static str {
        "trust"
    }
    fn severity(&self) -> Severity {
        Severity::Error
    }
    fn summary(&self) -> &'static str {
        "a store that is read has trust rules a pull request cannot satisfy, and caps"
    }
    fn run(&self, cx: &Context<'_>, out: &mut Vec<Finding>) {
        let p = cx.pipeline;
        let mut reported = Vec::new();
        for stage in &p.stages {
            let Some(contract) = cx.registry.get(&stage.uses.value) else {
                continue;
            };
            for child in &stage.children {
                let role = contract.child_spec(&child.name.value).map(|s| s.role);
                if role != Some(Role::Data) {
                    continue;
                }
                for v in child.values() {
                    let Value::Store(name) = &v.value else {
                        continue;
                    };
                    let Some(store) = p.store(name) else { continue };
                    if reported.contains(name) {
                        continue;
                    }
                    reported.push(name.clone());
                    let reads = Label::new(v.span, format!("`{}` reads it here", stage.name.value));
                    let kind = cx.registry.store(&store.kind.value);
                    if store.trust.is_empty() {
                        let example = kind.map_or("trust …", |k| k.trust_example.as_str());
                        out.push(
                            Finding::new(
                                self.id(),
                                self.severity(),
                                format!("store `{name}` is read with no `trust` rule: a blob from any producer would be believed"),
                                Label::new(store.name.span, "no trust rule"),
                            )
                            .related(reads.clone())
                            .help(format!("name the producers it may believe: `{example}`"))
                            .confidence(Confidence::High)
                            .stage(&stage.name.value),
                        );
                    }
                    self.rule_flaws(cx, store, &reads, &stage.name.value, out);
                    let mut missing = Vec::new();
                    if store.max_tries.is_none() {
                        missing.push("max-tries");
                    }
                    if kind.is_some_and(|k| k.lookups) && store.max_run_lookups.is_none() {
                        missing.push("max-run-lookups");
                    }
                    if !missing.is_empty() {
                        out.push(
                            Finding::new(
                                self.id(),
                                Severity::Warning,
                                format!("store `{name}` is read without {}", missing.join(" or ")),
                                Label::new(store.name.span, "uncapped"),
                            )
                            .related(reads)
                            .help(format!(
                                "cap the work a flood of blobs can cause: {}",
                                missing
                                    .iter()
                                    .map(|m| format!("`{m} 10`"))
                                    .collect::<Vec<_>>()
                                    .join(", ")
                            ))
                            .stage(&stage.name.value),
                        );
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    //! The rules of a made-up store kind whose producers are workflow runs.

    use crate::contract::{ChildSpec, Role, StageContract, StoreContract, ValueType};
    use crate::registry::Registry;
    use crate::{CheckOptions, Source, compile, run_checks};

    fn registry(workflow_runs: bool) -> Registry {
        let mut r = Registry::with_builtins();
        let mut store = StoreContract::new("runs", "artifacts of runs")
            .trust("workflow", ValueType::String, "workflow")
            .trust("event", ValueType::String, "event")
            .trust("branch", ValueType::String, "branch")
            .trust("repository", ValueType::String, "repository");
        if workflow_runs {
            store = store.workflow_runs();
        }
        r.register_store(store);
        r.register(
            StageContract::new("x/restore", "reads a store")
                .child(ChildSpec::new("from", Role::Data, "the store").arg(ValueType::Store)),
        );
        r
    }

    /// The `trust` errors of a store read with these rules.
    fn errors(rules: &[&str], workflow_runs: bool) -> Vec<String> {
        let rules: String = rules.iter().map(|r| format!("    {r}\n")).collect();
        let text = format!(
            "pipeline \"p\"\nstore \"s\" kind=\"runs\" {{\n{rules}    max-tries 10\n}}\nstage \"restore\" uses=\"x/restore\" {{\n    from \"s\"\n}}\n"
        );
        let registry = registry(workflow_runs);
        let compiled =
            compile(Source::new("t.kdl", text), &registry, &Default::default()).expect("compiles");
        run_checks(&compiled, &registry, CheckOptions::default())
            .into_iter()
            .filter(|f| f.check == "trust" && f.severity == crate::finding::Severity::Error)
            .map(|f| format!("{} | {}", f.message, f.help.unwrap_or_default()))
            .collect()
    }

    const WF: &str = "workflow=\".github/workflows/build.yaml\"";

    #[test]
    fn sound_rules_pass() {
        let target = format!("trust {WF} event=\"pull_request_target\"");
        let dispatch = format!("trust {WF} event=\"workflow_dispatch\" branch=\"main\"");
        let push = format!("trust {WF} event=\"push\" branch=\"main\"");
        let schedule = format!("trust {WF} event=\"schedule\"");
        let after = format!("trust {WF} event=\"workflow_run\"");
        assert_eq!(
            errors(&[&target, &dispatch, &push, &schedule, &after], true),
            Vec::<String>::new()
        );
    }

    #[test]
    fn an_event_not_known_to_run_a_reviewed_workflow_is_reported() {
        // A merge queue's run uses the merge group's commit: the pull request's workflow file.
        let queue = errors(&[&format!("trust {WF} event=\"merge_group\"")], true);
        assert_eq!(queue.len(), 1, "{queue:?}");
        assert!(queue[0].contains("as the pull request has it"), "{queue:?}");
        // An event never seen is reported too (principle 3).
        for event in ["issues", "release", "deployment", "not_an_event"] {
            let e = errors(&[&format!("trust {WF} event=\"{event}\"")], true);
            assert_eq!(e.len(), 1, "{event}: {e:?}");
            assert!(
                e[0].contains("not known to run a reviewed workflow file"),
                "{e:?}"
            );
        }
    }

    #[test]
    fn a_pull_request_event_is_reported_with_the_target_rule_as_fix() {
        for event in [
            "pull_request",
            "pull_request_review",
            "pull_request_review_comment",
        ] {
            let e = errors(&[&format!("trust {WF} event=\"{event}\"")], true);
            assert_eq!(e.len(), 1, "{event}: {e:?}");
            assert!(e[0].contains(&format!("admits `{event}` runs")), "{e:?}");
            assert!(
                e[0].contains(
                    "`trust workflow=\".github/workflows/build.yaml\" event=\"pull_request_target\"`"
                ),
                "{e:?}"
            );
        }
    }

    #[test]
    fn a_branch_alone_no_workflow_or_no_event_is_reported() {
        let branch = errors(&["trust branch=\"main\""], true);
        assert_eq!(branch.len(), 1, "{branch:?}");
        assert!(
            branch[0].contains("names a branch but no workflow"),
            "{branch:?}"
        );
        assert!(branch[0].contains("a branch called `main`"), "{branch:?}");
        let no_wf = errors(&["trust event=\"pull_request_target\""], true);
        assert!(no_wf[0].contains("names no workflow"), "{no_wf:?}");
        let no_event = errors(&[&format!("trust {WF}")], true);
        assert!(no_event[0].contains("names no event"), "{no_event:?}");
        let repo_only = errors(&["trust repository=\"o/r\""], true);
        assert!(
            repo_only[0].contains("no workflow and no event"),
            "{repo_only:?}"
        );
        assert!(repo_only[0].contains("repository=\"o/r\""), "{repo_only:?}");
    }

    #[test]
    fn a_branch_event_without_a_branch_is_reported_with_the_branch_as_fix() {
        for event in ["workflow_dispatch", "push"] {
            let e = errors(&[&format!("trust {WF} event=\"{event}\"")], true);
            assert_eq!(e.len(), 1, "{event}: {e:?}");
            assert!(e[0].contains("on any branch"), "{e:?}");
            assert!(
                e[0].contains(&format!("event=\"{event}\" branch=\"main\"`")),
                "{e:?}"
            );
        }
    }

    #[test]
    fn each_bad_rule_is_reported_once() {
        let e = errors(
            &[
                &format!("trust {WF} event=\"pull_request\""),
                "trust branch=\"main\"",
                &format!("trust {WF} event=\"pull_request_target\""),
            ],
            true,
        );
        assert_eq!(e.len(), 2, "{e:?}");
    }

    #[test]
    fn rules_of_other_stores_are_not_judged() {
        assert_eq!(
            errors(&["trust branch=\"main\""], false),
            Vec::<String>::new()
        );
    }
}

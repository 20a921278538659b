//! The `trust` rules of a `github-artifacts` store, judged for `check` (`trust`,
//! docs/checks.md): a rule must admit only runs whose workflow file the author of a pull
//! request cannot write. A rule that names a pull request's own event, no workflow, no event,
//! an event that runs after another run (`workflow_run`), an event whose provenance is not
//! known, or a branch's event on any branch is satisfied by a run that author can start, and
//! such a run can upload an artifact of any name.

use reviewflow_engine::contract::RuleFlaw;
use reviewflow_engine::model::TrustRule;
use reviewflow_engine::span::Span;

use crate::platform::github::events::{self, Provenance};

/// The flaws of a store's rules, one at most per rule.
pub fn judge_rules(store: &str, rules: &[TrustRule]) -> Vec<RuleFlaw> {
    let known = rules
        .iter()
        .find_map(|r| r.setting("workflow").and_then(|v| v.value.as_str()));
    rules
        .iter()
        .filter_map(|rule| judge(store, rule, known))
        .collect()
}

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

/// `known`: a workflow another rule of the store names, for a fix of a rule that names none.
fn judge(store: &str, rule: &TrustRule, known: Option<&str>) -> Option<RuleFlaw> {
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
    let provenance = event.as_ref().and_then(|e| events::provenance(e.value));
    if let Some(e) = &event
        && provenance == Some(Provenance::PullRequest)
    {
        return Some(RuleFlaw {
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
    if let Some(e) = &event
        && provenance == Some(Provenance::AfterAnotherRun)
    {
        return Some(RuleFlaw {
            span: e.span,
            message: format!(
                "a trust rule of store `{store}` admits `{}` runs, which start when another run ends (a pull request's own run included) to act on its artifacts: what such a run uploads, the run that started it chose",
                e.value
            ),
            label: format!("`{}` acts on another run's artifacts", e.value),
            help: format!(
                "trust only the job that seals the blobs, on the event it runs on: `{on_target}`{name_wf}"
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
            Some(e) if events::provenance(e.value) == Some(Provenance::Branch) => {
                format!("`{}`", on_branch(e.value))
            }
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
        return Some(RuleFlaw {
            span,
            message,
            label,
            help: format!(
                "name the workflow file and the event of the job that seals the blobs: {fixed}"
            ),
        });
    };
    let Some(event) = event else {
        return Some(RuleFlaw {
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
    let provenance = events::provenance(event.value);
    if !matches!(provenance, Some(Provenance::Base | Provenance::Branch)) {
        return Some(RuleFlaw {
            span: event.span,
            message: format!(
                "a trust rule of store `{store}` admits `{}` runs, an event not known to run a reviewed workflow file: a rule admits only the events whose runs use the base branch's workflow file ({}) or a named branch's ({} with `branch=`)",
                event.value,
                events::with(Provenance::Base).join(", "),
                events::with(Provenance::Branch).join(", ")
            ),
            label: format!("`{}`: not known to run a reviewed workflow", event.value),
            help: format!(
                "trust the job that seals the blobs on an event whose workflow file is reviewed: `{on_target}`{name_wf}"
            ),
        });
    }
    if provenance == Some(Provenance::Branch) && branch.is_none() {
        return Some(RuleFlaw {
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

#[cfg(test)]
mod tests {
    //! The rules of a `github-artifacts` store read by `restore`, as `check` reports them.

    use reviewflow_engine::{CheckOptions, Source, compile, run_checks};

    /// The `trust` errors of a store read with these rules.
    fn errors(rules: &[&str]) -> Vec<String> {
        let rules: String = rules.iter().map(|r| format!("    {r}\n")).collect();
        let text = format!(
            "pipeline \"p\"\nforge \"github\"\nstore \"s\" kind=\"github-artifacts\" name=\"r-{{change}}\" {{\n{rules}    max-tries 10\n    max-run-lookups 10\n}}\nsecret \"k\" env=\"K\" {{\n    visible-to \"restore\"\n}}\nstage \"restore\" uses=\"std/restore\" {{\n    from \"s\"\n    key \"k\"\n    bind change=\"{{change}}\"\n}}\n"
        );
        let registry = crate::registry();
        let compiled =
            compile(Source::new("t.kdl", text), &registry, &Default::default()).expect("compiles");
        run_checks(&compiled, &registry, CheckOptions::default())
            .into_iter()
            .filter(|f| {
                f.check == "trust" && f.severity == reviewflow_engine::finding::Severity::Error
            })
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
        assert_eq!(
            errors(&[&target, &dispatch, &push, &schedule]),
            Vec::<String>::new()
        );
    }

    #[test]
    fn a_run_after_another_run_is_reported_with_the_target_rule_as_fix() {
        let e = errors(&[&format!("trust {WF} event=\"workflow_run\"")]);
        assert_eq!(e.len(), 1, "{e:?}");
        assert!(e[0].contains("admits `workflow_run` runs"), "{e:?}");
        assert!(
            e[0].contains("(a pull request's own run included)"),
            "{e:?}"
        );
        assert!(
            e[0].contains(
                "`trust workflow=\".github/workflows/build.yaml\" event=\"pull_request_target\"`"
            ),
            "{e:?}"
        );
        // Without a workflow it is still the event that condemns the rule, reported once.
        let e = errors(&["trust event=\"workflow_run\""]);
        assert_eq!(e.len(), 1, "{e:?}");
        assert!(e[0].contains("admits `workflow_run` runs"), "{e:?}");
    }

    #[test]
    fn an_event_not_known_to_run_a_reviewed_workflow_is_reported() {
        // A merge queue's run uses the merge group's commit: the pull request's workflow file.
        let queue = errors(&[&format!("trust {WF} event=\"merge_group\"")]);
        assert_eq!(queue.len(), 1, "{queue:?}");
        assert!(queue[0].contains("as the pull request has it"), "{queue:?}");
        // An event never seen is reported too (principle 3).
        for event in ["issues", "release", "deployment", "not_an_event"] {
            let e = errors(&[&format!("trust {WF} event=\"{event}\"")]);
            assert_eq!(e.len(), 1, "{event}: {e:?}");
            assert!(
                e[0].contains("not known to run a reviewed workflow file"),
                "{e:?}"
            );
            assert!(e[0].contains("(pull_request_target, schedule)"), "{e:?}");
        }
    }

    #[test]
    fn a_pull_request_event_is_reported_with_the_target_rule_as_fix() {
        for event in [
            "pull_request",
            "pull_request_review",
            "pull_request_review_comment",
        ] {
            let e = errors(&[&format!("trust {WF} event=\"{event}\"")]);
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
        let branch = errors(&["trust branch=\"main\""]);
        assert_eq!(branch.len(), 1, "{branch:?}");
        assert!(
            branch[0].contains("names a branch but no workflow"),
            "{branch:?}"
        );
        assert!(branch[0].contains("a branch called `main`"), "{branch:?}");
        let no_wf = errors(&["trust event=\"pull_request_target\""]);
        assert!(no_wf[0].contains("names no workflow"), "{no_wf:?}");
        let no_event = errors(&[&format!("trust {WF}")]);
        assert!(no_event[0].contains("names no event"), "{no_event:?}");
        let repo_only = errors(&["trust repository=\"o/r\""]);
        assert!(
            repo_only[0].contains("no workflow and no event"),
            "{repo_only:?}"
        );
        assert!(repo_only[0].contains("repository=\"o/r\""), "{repo_only:?}");
    }

    #[test]
    fn a_branch_event_without_a_branch_is_reported_with_the_branch_as_fix() {
        for event in ["workflow_dispatch", "push"] {
            let e = errors(&[&format!("trust {WF} event=\"{event}\"")]);
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
        let e = errors(&[
            &format!("trust {WF} event=\"pull_request\""),
            "trust branch=\"main\"",
            &format!("trust {WF} event=\"pull_request_target\""),
        ]);
        assert_eq!(e.len(), 2, "{e:?}");
    }
}

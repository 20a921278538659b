//! The `trust` rules of a `gitlab-artifacts` store, judged for `check` (`trust`,
//! docs/checks.md): a rule must admit only pipelines whose configuration the author of a merge
//! request cannot write, which on GitLab is a pipeline on a protected branch from a source the
//! change cannot start. A rule that names no branch, a branch by wildcard, no source, or a
//! source that runs the change's own configuration (`merge_request_event`) or is not known to
//! run a reviewed one is satisfied by a pipeline that author can start.

use reviewflow_engine::contract::RuleFlaw;
use reviewflow_engine::model::TrustRule;

use super::gitlab_artifacts::TRUSTED_SOURCES;

/// The flaws of a store's rules, one at most per rule.
pub fn judge_rules(store: &str, rules: &[TrustRule]) -> Vec<RuleFlaw> {
    rules.iter().filter_map(|rule| judge(store, rule)).collect()
}

fn text<'a>(rule: &'a TrustRule, name: &str) -> Option<(&'a str, reviewflow_engine::span::Span)> {
    let v = rule.setting(name)?;
    Some((v.value.as_str()?, v.span))
}

fn judge(store: &str, rule: &TrustRule) -> Option<RuleFlaw> {
    let git_ref = text(rule, "ref");
    let source = text(rule, "source");
    let branch = git_ref.map_or("main", |(r, _)| r);
    let fixed = |source: &str| {
        let job = text(rule, "job").map_or(String::new(), |(j, _)| format!(" job=\"{j}\""));
        format!("trust ref=\"{branch}\" source=\"{source}\"{job}")
    };
    let sources = TRUSTED_SOURCES
        .iter()
        .map(|s| format!("`{s}`"))
        .collect::<Vec<_>>()
        .join(", ");
    if let Some((s, span)) = source
        && !TRUSTED_SOURCES.contains(&s)
    {
        let (message, label) = if s == "merge_request_event" {
            (
                format!(
                    "a trust rule of store `{store}` admits `merge_request_event` pipelines, which run the merge request's own .gitlab-ci.yml: whoever pushes to the merge request decides what such a pipeline keeps, under any name"
                ),
                "`merge_request_event` runs the change's configuration".to_string(),
            )
        } else {
            (
                format!(
                    "a trust rule of store `{store}` admits `{s}` pipelines, a source a rule may not name: the sources a rule admits are an allow-list ({sources}), the ones that start the review's own pipelines, and a source outside it is not believed (principle 3)"
                ),
                format!("`{s}`: not a source a rule admits"),
            )
        };
        return Some(RuleFlaw {
            span,
            message,
            label,
            help: format!(
                "keep the blobs in the review's own pipeline on the protected default branch, and trust that: `{}`",
                fixed("trigger")
            ),
        });
    }
    let Some((r, ref_span)) = git_ref else {
        return Some(RuleFlaw {
            span: rule.span,
            message: format!(
                "a trust rule of store `{store}` names no branch (`ref`): a pipeline on any branch, one the change pushed included, runs that branch's own .gitlab-ci.yml and is believed"
            ),
            label: "no `ref`".into(),
            help: format!(
                "name the protected branch the review's pipeline runs on: `{}`",
                fixed(source.map_or("trigger", |(s, _)| s))
            ),
        });
    };
    if r.contains('*') || r.is_empty() {
        return Some(RuleFlaw {
            span: ref_span,
            message: format!(
                "a trust rule of store `{store}` names the branch `{r}` by a pattern: the store asks GitLab whether the one branch named is protected, and a pattern names none"
            ),
            label: "a branch pattern".into(),
            help: format!(
                "name the one protected branch the review's pipeline runs on: `trust ref=\"main\" source=\"{}\"`",
                source.map_or("trigger", |(s, _)| s)
            ),
        });
    }
    if source.is_none() {
        return Some(RuleFlaw {
            span: rule.span,
            message: format!(
                "a trust rule of store `{store}` names no pipeline source: a `merge_request_event` pipeline on `{r}` (a merge request between protected branches) runs the change's own .gitlab-ci.yml and would be believed"
            ),
            label: "no `source`".into(),
            help: format!(
                "name the source the review's pipeline runs on ({sources}): `{}`",
                fixed("trigger")
            ),
        });
    }
    None
}

#[cfg(test)]
mod tests {
    //! The rules of a `gitlab-artifacts` store read by `restore`, as `check` reports them.

    use reviewflow_engine::{CheckOptions, Source, compile, run_checks};

    /// The `trust` errors of a store read with these rules.
    fn errors(rules: &[&str]) -> Vec<String> {
        let rules: String = rules.iter().map(|r| format!("    {r}\n")).collect();
        let text = format!(
            "pipeline \"p\"\nforge \"gitlab\" token=\"t\"\nsecret \"t\" env=\"T\" {{\n    visible-to \"restore\"\n}}\nstore \"s\" kind=\"gitlab-artifacts\" name=\"r-{{change}}\" {{\n{rules}    max-tries 10\n    max-run-lookups 10\n}}\nsecret \"k\" env=\"K\" {{\n    visible-to \"restore\"\n}}\nstage \"restore\" uses=\"std/restore\" {{\n    from \"s\"\n    key \"k\"\n    bind change=\"{{change}}\"\n}}\n"
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

    #[test]
    fn sound_rules_pass() {
        let rules: Vec<String> = super::TRUSTED_SOURCES
            .iter()
            .map(|s| format!("trust ref=\"main\" source=\"{s}\" job=\"post\""))
            .collect();
        let rules: Vec<&str> = rules.iter().map(String::as_str).collect();
        assert_eq!(errors(&rules), Vec::<String>::new());
    }

    #[test]
    fn a_merge_request_pipeline_is_reported_with_the_trigger_rule_as_fix() {
        let e = errors(&["trust ref=\"main\" source=\"merge_request_event\" job=\"post\""]);
        assert_eq!(e.len(), 1, "{e:?}");
        assert!(e[0].contains("merge request's own .gitlab-ci.yml"), "{e:?}");
        assert!(
            e[0].contains("`trust ref=\"main\" source=\"trigger\" job=\"post\"`"),
            "{e:?}"
        );
    }

    #[test]
    fn other_sources_are_reported() {
        for source in [
            "push",
            "parent_pipeline",
            "external",
            "chat",
            "not_a_source",
        ] {
            let e = errors(&[&format!("trust ref=\"main\" source=\"{source}\"")]);
            assert_eq!(e.len(), 1, "{source}: {e:?}");
            assert!(e[0].contains("a source a rule may not name"), "{e:?}");
        }
    }

    #[test]
    fn a_rule_without_a_branch_or_a_source_or_with_a_pattern_is_reported() {
        let no_ref = errors(&["trust source=\"schedule\""]);
        assert_eq!(no_ref.len(), 1, "{no_ref:?}");
        assert!(no_ref[0].contains("names no branch"), "{no_ref:?}");
        let no_source = errors(&["trust ref=\"main\""]);
        assert_eq!(no_source.len(), 1, "{no_source:?}");
        assert!(
            no_source[0].contains("names no pipeline source"),
            "{no_source:?}"
        );
        let pattern = errors(&["trust ref=\"release/*\" source=\"web\""]);
        assert_eq!(pattern.len(), 1, "{pattern:?}");
        assert!(pattern[0].contains("by a pattern"), "{pattern:?}");
    }
}

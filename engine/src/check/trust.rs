//! `trust`: a stage that reads a store must know whose blobs it may believe: the store needs a
//! `trust` rule, and caps on the tries over trusted blobs (`max-tries`) and, for artifacts, on
//! producer look-ups (`max-run-lookups`), so that a flood of planted blobs costs nothing. A cap
//! above its bound is the compiler's (`limit`): a limit that does not limit is none.
//!
//! Where a store kind can tell which producers the change's author can start (a store of
//! workflow runs' artifacts: a run of the pull request's own workflow file), it judges each rule
//! (`StoreContract::rule_judge`), and each flaw it finds is reported here: such a producer can
//! keep a blob of any name.

use super::{Check, Context};
use crate::contract::Role;
use crate::finding::{Confidence, Finding, Label, Severity};
use crate::model::{Store, Value};

pub struct Trust;

impl Trust {
    /// The flaws of the store's trust rules, as its kind judges them.
    fn rule_flaws(
        &self,
        cx: &Context<'_>,
        store: &Store,
        reads: &Label,
        stage: &str,
        out: &mut Vec<Finding>,
    ) {
        let Some(judge) = cx
            .registry
            .store(&store.kind.value)
            .and_then(|k| k.rule_judge)
        else {
            return;
        };
        for flaw in judge(&store.name.value, &store.trust) {
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
    //! A made-up store kind whose judge finds a flaw in every rule naming `event="bad"`: the check
    //! reports what the kind judges, once a rule, and nothing for a kind without a judge.

    use crate::contract::{ChildSpec, Role, RuleFlaw, StageContract, StoreContract, ValueType};
    use crate::model::TrustRule;
    use crate::registry::Registry;
    use crate::{CheckOptions, Source, compile, run_checks};

    fn judge(store: &str, rules: &[TrustRule]) -> Vec<RuleFlaw> {
        rules
            .iter()
            .filter_map(|r| r.setting("event"))
            .filter(|e| e.value.as_str() == Some("bad"))
            .map(|e| RuleFlaw {
                span: e.span,
                message: format!("store `{store}` trusts a bad event"),
                label: "bad".into(),
                help: "trust a good one".into(),
            })
            .collect()
    }

    fn registry(judged: bool) -> Registry {
        let mut r = Registry::with_builtins();
        let mut store = StoreContract::new("runs", "artifacts of runs")
            .trust("event", ValueType::String, "event")
            .trust("branch", ValueType::String, "branch");
        if judged {
            store = store.rule_judge(judge);
        }
        r.register_store(store);
        r.register(
            StageContract::new("x/restore", "reads a store")
                .child(ChildSpec::new("from", Role::Data, "the store").arg(ValueType::Store)),
        );
        r
    }

    /// The `trust` errors of a store read with these rules.
    fn errors(rules: &[&str], judged: bool) -> Vec<String> {
        let rules: String = rules.iter().map(|r| format!("    {r}\n")).collect();
        let text = format!(
            "pipeline \"p\"\nstore \"s\" kind=\"runs\" {{\n{rules}    max-tries 10\n}}\nstage \"restore\" uses=\"x/restore\" {{\n    from \"s\"\n}}\n"
        );
        let registry = registry(judged);
        let compiled =
            compile(Source::new("t.kdl", text), &registry, &Default::default()).expect("compiles");
        run_checks(&compiled, &registry, CheckOptions::default())
            .into_iter()
            .filter(|f| f.check == "trust" && f.severity == crate::finding::Severity::Error)
            .map(|f| format!("{} | {}", f.message, f.help.unwrap_or_default()))
            .collect()
    }

    #[test]
    fn each_flaw_the_kind_judges_is_reported_once_with_its_fix() {
        let e = errors(
            &[
                "trust event=\"bad\"",
                "trust event=\"good\"",
                "trust event=\"bad\" branch=\"main\"",
            ],
            true,
        );
        assert_eq!(
            e,
            [
                "store `s` trusts a bad event | trust a good one",
                "store `s` trusts a bad event | trust a good one"
            ]
        );
    }

    #[test]
    fn rules_of_a_kind_without_a_judge_are_not_judged() {
        assert_eq!(
            errors(&["trust event=\"bad\""], false),
            Vec::<String>::new()
        );
    }
}

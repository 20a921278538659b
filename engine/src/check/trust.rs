//! `trust`: a stage that reads a store must know whose blobs it may believe: the store needs a
//! `trust` rule, and caps on the tries over trusted blobs (`max-tries`) and, for artifacts, on
//! producer look-ups (`max-run-lookups`), so that a flood of planted blobs costs nothing.

use super::{Check, Context};
use crate::contract::Role;
use crate::finding::{Confidence, Finding, Label, Severity};
use crate::model::Value;

pub struct Trust;

impl Check for Trust {
    fn id(&self) -> &'static str {
        "trust"
    }
    fn severity(&self) -> Severity {
        Severity::Error
    }
    fn summary(&self) -> &'static str {
        "a store that is read has trust rules and caps"
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

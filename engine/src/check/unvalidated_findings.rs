//! `unvalidated-findings`: in a pipeline that declares a lens, every findings value a stage
//! publishes comes from an aggregate. A lens's ceiling and verdict mode are applied there, and
//! there its findings are cross-validated: forged notes stripped, findings on files outside the
//! change dropped. Published straight from a review, a prompt-injected lens's findings would go
//! out at any severity. The same holds for anything else a lens writes: its comment carries the
//! verdict readers see, and published in place of the aggregate's it says what the lens likes
//! ("approved by both lenses"), so nothing of a lens stage is published but through an
//! aggregate.

use super::lens::{contract_of, is_aggregate, lenses, reference};
use super::{Check, Context};
use crate::contract::{OutputType, Role};
use crate::finding::{Confidence, Finding, Label, Severity};

pub struct UnvalidatedFindings;

impl Check for UnvalidatedFindings {
    fn principle(&self) -> super::Principle {
        super::Principle::Coverage
    }
    fn id(&self) -> &'static str {
        "unvalidated-findings"
    }
    fn severity(&self) -> Severity {
        Severity::Error
    }
    fn summary(&self) -> &'static str {
        "with lenses, only an aggregate's findings and comment are published"
    }
    fn run(&self, cx: &Context<'_>, out: &mut Vec<Finding>) {
        let all = lenses(cx);
        let Some(first) = all.first() else { return };
        for stage in &cx.pipeline.stages {
            let Some(contract) = cx.registry.get(&stage.uses.value) else {
                continue;
            };
            for child in &stage.children {
                let Some(spec) = contract.child_spec(&child.name.value) else {
                    continue;
                };
                if spec.role != Role::Publish {
                    continue;
                }
                let findings = spec.accepts.contains(&OutputType::Findings);
                for arg in &child.args {
                    let Some(r) = reference(&arg.value) else {
                        continue;
                    };
                    let Some(producer) = contract_of(cx, &r.stage) else {
                        continue;
                    };
                    if is_aggregate(producer) {
                        continue;
                    }
                    // Findings come from an aggregate whoever wrote them; anything else is
                    // followed from a lens's own stage.
                    if !findings && !all.iter().any(|l| l.stage.name.value == r.stage) {
                        continue;
                    }
                    let name = stage.name.value.as_str();
                    out.push(
                        Finding::new(
                            self.id(),
                            self.severity(),
                            format!(
                                "`{name}` publishes `{r}`, which no aggregate validated, in a pipeline with lenses"
                            ),
                            Label::new(arg.span, "published unvalidated"),
                        )
                        .related(Label::new(
                            first.span,
                            format!("`{}` reviews through a lens", first.stage.name.value),
                        ))
                        .help(
                            "publish what a `std/aggregate` stage that reads every lens writes (`findings \"aggregate.findings\"`, `comment \"aggregate.comment\"`): it applies the lenses' ceilings, drops findings outside the change and writes the verdict",
                        )
                        .confidence(Confidence::High)
                        .stage(name),
                    );
                }
            }
        }
    }
}

//! `type-mismatch`: a value of the wrong type (an integer where a string is expected, a
//! duration that is not one, an unknown permission, a condition on a non-boolean output).

use super::{Check, Context};
use crate::contract::OutputType;
use crate::finding::{Finding, Label, Severity};
use crate::lower::Fact;

pub struct TypeMismatch;

impl Check for TypeMismatch {
    fn id(&self) -> &'static str {
        "type-mismatch"
    }
    fn severity(&self) -> Severity {
        Severity::Error
    }
    fn summary(&self) -> &'static str {
        "every value has the type its place expects"
    }
    fn run(&self, cx: &Context<'_>, out: &mut Vec<Finding>) {
        for fact in cx.facts {
            if let Fact::TypeMismatch {
                span,
                what,
                expected,
                found,
                help,
            } = fact
            {
                out.push(
                    Finding::new(
                        self.id(),
                        self.severity(),
                        format!("{what} expects {expected}"),
                        Label::new(*span, format!("found {found}")),
                    )
                    .maybe_help(help.clone()),
                );
            }
        }
        for stage in &cx.pipeline.stages {
            let Some(when) = &stage.when else { continue };
            let mut refs = Vec::new();
            when.value.collect_references(&mut refs);
            for r in refs {
                let Some(producer) = cx.pipeline.stage(&r.stage) else {
                    continue;
                };
                let outputs = cx.outputs_of(&producer.name.value);
                let Some((_, ty)) = outputs.iter().find(|(n, _)| *n == r.output) else {
                    continue;
                };
                if *ty != OutputType::Bool {
                    out.push(
                        Finding::new(
                            self.id(),
                            self.severity(),
                            format!(
                                "`when` of stage `{}` expects boolean outputs",
                                stage.name.value
                            ),
                            Label::new(r.span, format!("`{r}` is of type {}", ty.name())),
                        )
                        .help(format!(
                            "test `{}.ok` to ask whether the stage succeeded",
                            r.stage
                        ))
                        .stage(&stage.name.value),
                    );
                }
            }
        }
        for stage in &cx.pipeline.stages {
            let Some(contract) = cx.registry.get(&stage.uses.value) else {
                continue;
            };
            for o in &stage.fallback {
                match contract.output_spec(&o.output.value) {
                    Some(spec) if spec.ty == OutputType::Bool => {}
                    Some(spec) => out.push(
                        Finding::new(
                            self.id(),
                            self.severity(),
                            format!(
                                "`fallback` sets only boolean outputs; `{}` is of type {}",
                                o.output.value,
                                spec.ty.name()
                            ),
                            Label::new(o.output.span, "not a boolean output"),
                        )
                        .stage(&stage.name.value),
                    ),
                    None => {
                        let names = contract.outputs.iter().map(|o| o.name.as_str());
                        out.push(
                            Finding::new(
                                self.id(),
                                self.severity(),
                                format!(
                                    "`{}` ({}) has no output `{}`",
                                    stage.name.value, contract.kind, o.output.value
                                ),
                                Label::new(o.output.span, "no such output"),
                            )
                            .maybe_help(crate::suggest::help_text(&crate::suggest::did_you_mean(
                                &o.output.value,
                                names,
                            )))
                            .stage(&stage.name.value),
                        );
                    }
                }
            }
        }
    }
}

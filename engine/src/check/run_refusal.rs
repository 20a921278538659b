//! `run-refusal`: what `run` would refuse before anything runs, for a reason the file alone
//! decides, reported by `check` with `run`'s own words (principle 7: one source of truth). It
//! calls the functions `run` calls: an input's `default` against its `type` and `pattern`
//! (`run::inputs::validate`), and each stage kind's refusals of its settings, which the kind
//! registers with its contract ([`crate::contract::StageContract::refusals`]) and calls itself
//! when it starts. A refusal that depends on the environment (a variable that is not set, a
//! key's length, the kernel's layers) is `run`'s alone (docs/checks.md).

use super::{Check, Context};
use crate::finding::{Confidence, Finding, Label, Severity};

pub struct RunRefusal;

impl Check for RunRefusal {
    fn principle(&self) -> super::Principle {
        super::Principle::OneSourceOfTruth
    }
    fn id(&self) -> &'static str {
        "run-refusal"
    }
    fn severity(&self) -> Severity {
        Severity::Error
    }
    fn summary(&self) -> &'static str {
        "nothing `run` refuses for a reason written in the file passes `check`"
    }
    fn run(&self, cx: &Context<'_>, out: &mut Vec<Finding>) {
        let p = cx.pipeline;
        for input in p.inputs.iter().filter(|i| !i.builtin) {
            let Some(default) = &input.default else {
                continue;
            };
            // A pattern that is no regular expression is `type-mismatch`'s: one cause, one error.
            if crate::run::compile_input_pattern(input).is_err() {
                continue;
            }
            if let Err(e) =
                crate::run::validate_input(input, &default.value, "its default".to_owned())
            {
                out.push(
                    Finding::new(
                        self.id(),
                        self.severity(),
                        format!("`run` refuses to start: {e}"),
                        Label::new(default.span, "the default"),
                    )
                    .help(
                        "give the input a default its `type` and `pattern` accept, or no default (then the environment must set it)",
                    )
                    .confidence(Confidence::High),
                );
            }
        }
        for stage in &p.stages {
            let Some(refusals) = cx.registry.get(&stage.uses.value).and_then(|c| c.refusals) else {
                continue;
            };
            for (span, why) in refusals(stage) {
                out.push(
                    Finding::new(
                        self.id(),
                        self.severity(),
                        format!(
                            "`{}` refuses its settings when it starts: {why}",
                            stage.name.value
                        ),
                        Label::new(span, "refused"),
                    )
                    .help("remove or change this setting: the stage would fail before running anything")
                    .confidence(Confidence::High)
                    .stage(&stage.name.value),
                );
            }
        }
    }
}

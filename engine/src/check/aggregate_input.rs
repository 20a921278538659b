//! `aggregate-input`: an aggregate reads reviews. Each `from` names a review's findings (a stage
//! whose kind runs a reviewer), and its `lens=` that same review's lens; a review with a lens is
//! read with its `lens=`, or its ceiling and verdict mode would not apply. Findings from any other
//! stage (a `run` step's output, another aggregate) carry no lens and were never a reviewer's.
//!
//! Where a pipeline aggregates, every review with a lens is read by an aggregate: the aggregate's
//! verdict speaks for the lenses it reads (its `clean`: every lens ran), so a lens that runs and
//! is left out (a `/-` on its `from`) makes the published review read as one its lenses did
//! together while one of them found nothing that reaches anyone (principle 4).

use super::lens::{FROM, FROM_LENS, LENS, contract_of, is_aggregate, is_review, lenses, reference};
use super::{Check, Context};
use crate::finding::{Confidence, Finding, Label, Severity};

pub struct AggregateInput;

impl Check for AggregateInput {
    fn principle(&self) -> super::Principle {
        super::Principle::Coverage
    }
    fn id(&self) -> &'static str {
        "aggregate-input"
    }
    fn severity(&self) -> Severity {
        Severity::Error
    }
    fn summary(&self) -> &'static str {
        "an aggregate reads reviews' findings, each with that review's lens"
    }
    fn run(&self, cx: &Context<'_>, out: &mut Vec<Finding>) {
        self.every_lens_read(cx, out);
        for stage in &cx.pipeline.stages {
            if !cx.registry.get(&stage.uses.value).is_some_and(is_aggregate) {
                continue;
            }
            let name = stage.name.value.as_str();
            for from in stage.children_named(FROM) {
                let Some(arg) = from.args.first() else {
                    continue;
                };
                let Some(r) = reference(&arg.value) else {
                    continue;
                };
                // An unknown stage is `unknown-reference`'s.
                let Some(producer) = contract_of(cx, &r.stage) else {
                    continue;
                };
                let mut push = |span, message: String, label: &str, help: &str| {
                    out.push(
                        Finding::new(self.id(), self.severity(), message, Label::new(span, label))
                            .help(help)
                            .confidence(Confidence::High)
                            .stage(name),
                    );
                };
                if !is_review(producer) {
                    push(
                        arg.span,
                        format!(
                            "`{name}` aggregates `{r}`, which is not a review's: `{}` is a `{}` stage",
                            r.stage, producer.kind
                        ),
                        "not a review's findings",
                        "give the aggregate the findings of review stages (`from \"review.findings\" lens=\"review.lens\"`)",
                    );
                    continue;
                }
                match from.prop(FROM_LENS) {
                    Some(lens) => {
                        if let Some(l) = reference(&lens.value)
                            && l.stage != r.stage
                        {
                            push(
                                lens.span,
                                format!(
                                    "`{name}` reads the findings of `{}` with the lens of `{}`",
                                    r.stage, l.stage
                                ),
                                "another stage's lens",
                                "pair each review's findings with its own lens: `from \"x.findings\" lens=\"x.lens\"`",
                            );
                        }
                    }
                    None => {
                        let lensed = cx
                            .pipeline
                            .stage(&r.stage)
                            .is_some_and(|s| s.children_named(LENS).next().is_some());
                        if lensed {
                            push(
                                arg.span,
                                format!(
                                    "`{name}` reads the findings of `{}` without its lens: its ceiling and verdict mode do not apply",
                                    r.stage
                                ),
                                "no `lens=`",
                                &format!("add `lens=\"{}.lens\"`", r.stage),
                            );
                        }
                    }
                }
            }
        }
    }
}

impl AggregateInput {
    /// Every review with a lens is read by an aggregate, where the pipeline has one.
    fn every_lens_read(&self, cx: &Context<'_>, out: &mut Vec<Finding>) {
        let aggregates: Vec<&crate::model::Stage> = cx
            .pipeline
            .stages
            .iter()
            .filter(|s| cx.registry.get(&s.uses.value).is_some_and(is_aggregate))
            .collect();
        let Some(first) = aggregates.first() else {
            return;
        };
        let read: Vec<&str> = aggregates
            .iter()
            .flat_map(|a| a.children_named(FROM))
            .filter_map(|f| f.args.first())
            .filter_map(|a| reference(&a.value))
            .map(|r| r.stage.as_str())
            .collect();
        for lens in lenses(cx) {
            let name = lens.stage.name.value.as_str();
            if read.contains(&name) {
                continue;
            }
            out.push(
                Finding::new(
                    self.id(),
                    self.severity(),
                    format!(
                        "`{name}` reviews through a lens, but no aggregate reads its findings: `{}`'s verdict speaks for the lenses it reads, and what `{name}` finds reaches no one",
                        first.name.value
                    ),
                    Label::new(lens.span, "a lens no aggregate reads"),
                )
                .related(Label::new(first.name.span, "aggregates the other lenses"))
                .help(format!(
                    "read it in the aggregate: `from \"{name}.findings\" lens=\"{name}.lens\"`, or remove the stage"
                ))
                .confidence(Confidence::High)
                .stage(name),
            );
        }
    }
}

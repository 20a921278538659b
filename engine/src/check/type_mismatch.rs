//! `type-mismatch`: a value of the wrong type (an integer where a string is expected, a
//! duration that is not one, an unknown permission, a condition on a non-boolean output, a
//! reference to an output of another type than its slot takes).

use super::{Check, Context};
use crate::contract::{ChildSpec, OutputType, Role};
use crate::finding::{Finding, Label, Severity};
use crate::lower::Fact;
use crate::model::{Reference, Stage, Value};
use crate::span::Span;

pub struct TypeMismatch;

/// "a blob", "text or json".
fn describe_types(types: &[OutputType]) -> String {
    let words: Vec<&str> = types.iter().map(|t| t.describe()).collect();
    match words.as_slice() {
        [] => "any output".into(),
        [one] => (*one).into(),
        [rest @ .., last] => format!("{} or {last}", rest.join(", ")),
    }
}

/// A private value published or kept (`upload "review.conversation"`): the root cause is that
/// it leaves the run unsealed, `private-egress`'s finding, whose fix (seal it, keep the blob)
/// is this slot's too. One mistake is reported once.
fn private_egress(cx: &Context<'_>, stage: &Stage, spec: &ChildSpec, span: Span) -> bool {
    if !matches!(spec.role, Role::Publish | Role::Keep) {
        return false;
    }
    let Some(i) = cx.dag.stage_index(&stage.name.value) else {
        return false;
    };
    cx.flow.and_then(|f| f.inputs.get(i)).is_some_and(|inputs| {
        inputs
            .iter()
            .any(|input| input.span == span && input.labels.private)
    })
}

impl TypeMismatch {
    /// Each reference a typed slot (`upload`, `std/seal`'s `input`, `comment`, …) holds names an
    /// output of a type the slot takes; the help names the outputs that fit.
    fn slots(&self, cx: &Context<'_>, stage: &Stage, out: &mut Vec<Finding>) {
        let Some(contract) = cx.registry.get(&stage.uses.value) else {
            return;
        };
        for child in &stage.children {
            let Some(spec) = contract.child_spec(&child.name.value) else {
                continue;
            };
            if spec.accepts.is_empty() {
                continue;
            }
            for v in &child.args {
                let Value::Reference(r) = &v.value else {
                    continue;
                };
                let Some((_, ty)) = cx.outputs_of(&r.stage).iter().find(|(n, _)| *n == r.output)
                else {
                    continue;
                };
                if spec.takes(*ty) || private_egress(cx, stage, spec, v.span) {
                    continue;
                }
                out.push(
                    Finding::new(
                        self.id(),
                        self.severity(),
                        format!(
                            "`{}` of stage `{}` ({}) takes {}, not {}",
                            spec.name,
                            stage.name.value,
                            contract.kind,
                            describe_types(&spec.accepts),
                            ty.describe()
                        ),
                        Label::new(r.span, format!("`{r}` is {}", ty.describe())),
                    )
                    .help(self.slot_help(cx, stage, spec, r))
                    .stage(&stage.name.value),
                );
            }
        }
    }

    /// What the slot is for, and the outputs of this pipeline that fit it (or the kind of stage
    /// that makes one).
    fn slot_help(
        &self,
        cx: &Context<'_>,
        stage: &Stage,
        spec: &ChildSpec,
        wrong: &Reference,
    ) -> String {
        // Outputs that fit; when some are likelier, only those: one named like the slot
        // (`gather.head` for `require-head`), then another output of the stage the reference
        // named (`review.comment` for `review.findings`).
        let mut fits: Vec<(u8, String)> = Vec::new();
        for other in &cx.pipeline.stages {
            if other.name.value == stage.name.value {
                continue;
            }
            for (output, ty) in cx.outputs_of(&other.name.value) {
                if spec.accepts.contains(ty) {
                    let score = if spec.name.split('-').any(|w| w == output.as_str()) {
                        2
                    } else {
                        u8::from(other.name.value == wrong.stage)
                    };
                    fits.push((score, format!("`{}.{output}`", other.name.value)));
                }
            }
        }
        let best = fits.iter().map(|(score, _)| *score).max().unwrap_or(0);
        let mut fits: Vec<String> = fits
            .into_iter()
            .filter(|(score, _)| *score == best)
            .map(|(_, name)| name)
            .collect();
        let types = describe_types(&spec.accepts);
        let what = format!("`{}`: {}", spec.name, spec.doc);
        if !fits.is_empty() {
            fits.truncate(3);
            let names = match fits.as_slice() {
                [one] => one.clone(),
                [rest @ .., last] => format!("{} or {last}", rest.join(", ")),
                [] => unreachable!(),
            };
            return format!("name {types} instead of `{wrong}`: {names} ({what})");
        }
        let makers: Vec<String> = cx
            .registry
            .contracts()
            .flat_map(|c| {
                c.outputs
                    .iter()
                    .filter(|o| spec.accepts.contains(&o.ty))
                    .map(move |o| format!("the `{}` of a `{}` stage", o.name, c.kind))
            })
            .take(2)
            .collect();
        match makers.as_slice() {
            [] => format!("no output of this pipeline is {types} ({what})"),
            _ => format!(
                "no stage here makes {types}: add one ({} is {types}) and name it instead of `{wrong}` ({what})",
                makers.join(", or ")
            ),
        }
    }
}

impl Check for TypeMismatch {
    fn principle(&self) -> super::Principle {
        super::Principle::OneSourceOfTruth
    }
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
            self.slots(cx, stage, out);
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

#[cfg(test)]
mod tests {
    //! Typed slots against made-up stage kinds.

    use crate::contract::{ChildSpec, LabelRule, OutputType, Role, StageContract, ValueType};
    use crate::registry::Registry;
    use crate::{CheckOptions, Source, compile, run_checks};

    fn registry() -> Registry {
        let mut r = Registry::with_builtins();
        r.register(
            StageContract::new("x/review", "reviews")
                .output("comment", OutputType::Text, "the comment", LabelRule::all())
                .output(
                    "talk",
                    OutputType::Conversation,
                    "the talk",
                    LabelRule::all(),
                ),
        );
        r.register(
            StageContract::new("x/seal", "seals")
                .child(
                    ChildSpec::new("input", Role::Data, "the value to seal")
                        .arg(ValueType::Reference)
                        .accepts(&[OutputType::Conversation]),
                )
                .output("blob", OutputType::Blob, "sealed", LabelRule::all()),
        );
        r.register(
            StageContract::new("x/keep", "keeps")
                .child(
                    ChildSpec::new("upload", Role::Keep, "keep a sealed blob")
                        .arg(ValueType::Reference)
                        .accepts(&[OutputType::Blob])
                        .repeatable(),
                )
                .child(ChildSpec::new("any", Role::Data, "anything").many(ValueType::Reference)),
        );
        r
    }

    /// The `type-mismatch` findings: message, help.
    fn findings(stages: &str) -> Vec<(String, String)> {
        let registry = registry();
        let text = format!("pipeline \"p\"\nstage \"review\" uses=\"x/review\"\n{stages}");
        let compiled =
            compile(Source::new("t.kdl", text), &registry, &Default::default()).expect("compiles");
        run_checks(&compiled, &registry, CheckOptions::default())
            .into_iter()
            .filter(|f| f.check == "type-mismatch")
            .map(|f| (f.message, f.help.unwrap_or_default()))
            .collect()
    }

    #[test]
    fn a_slot_takes_its_type_and_an_untyped_one_anything() {
        let f = findings(
            "stage \"seal\" uses=\"x/seal\" {\n    input \"review.talk\"\n}\nstage \"keep\" uses=\"x/keep\" {\n    upload \"seal.blob\"\n    any \"review.comment\" \"seal.blob\" \"review.ok\"\n}\n",
        );
        assert!(f.is_empty(), "{f:?}");
    }

    #[test]
    fn a_wrong_type_names_the_output_that_fits() {
        let f = findings(
            "stage \"seal\" uses=\"x/seal\" {\n    input \"review.talk\"\n}\nstage \"keep\" uses=\"x/keep\" {\n    upload \"review.comment\"\n}\n",
        );
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(
            f[0].0,
            "`upload` of stage `keep` (x/keep) takes a blob, not text"
        );
        assert!(f[0].1.contains("`seal.blob`"), "{f:?}");
        let f = findings("stage \"seal\" uses=\"x/seal\" {\n    input \"review.comment\"\n}\n");
        assert_eq!(
            f[0].0,
            "`input` of stage `seal` (x/seal) takes a conversation, not text"
        );
        assert!(f[0].1.contains("`review.talk`"), "{f:?}");
    }

    #[test]
    fn with_no_output_that_fits_the_help_names_a_kind_that_makes_one() {
        let f = findings("stage \"keep\" uses=\"x/keep\" {\n    upload \"review.comment\"\n}\n");
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(f[0].1.contains("the `blob` of a `x/seal` stage"), "{f:?}");
    }

    #[test]
    fn a_slot_of_a_run_output_reads_its_declared_type() {
        let f = findings(
            "stage \"make\" uses=\"run\" {\n    command \"make\"\n    output \"pack\" file=\"p.bin\" type=\"file\"\n}\nstage \"keep\" uses=\"x/keep\" {\n    upload \"make.pack\"\n}\n",
        );
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(f[0].0.ends_with("takes a blob, not a file"), "{f:?}");
    }
}

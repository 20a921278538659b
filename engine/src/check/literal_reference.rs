//! `literal-reference`: a string where a template is taken spells exactly `stage.output` of an
//! existing stage, without braces. It is passed as the literal text, which is almost never what
//! was meant (`stdin "gather.title"` sends the words, not the title).

use super::{Check, Context};
use crate::finding::{Confidence, Finding, Label, Severity};
use crate::model::{Reference, Segment, Value};

pub struct LiteralReference;

impl Check for LiteralReference {
    fn principle(&self) -> super::Principle {
        super::Principle::OneSourceOfTruth
    }
    fn id(&self) -> &'static str {
        "literal-reference"
    }
    fn severity(&self) -> Severity {
        Severity::Warning
    }
    fn summary(&self) -> &'static str {
        "a string that names an output is written as an interpolation"
    }
    fn run(&self, cx: &Context<'_>, out: &mut Vec<Finding>) {
        let p = cx.pipeline;
        for stage in &p.stages {
            for child in &stage.children {
                for v in child.values() {
                    let Value::Template(t) = &v.value else {
                        continue;
                    };
                    let [Segment::Literal { text }] = t.segments.as_slice() else {
                        continue;
                    };
                    let Some(r) = Reference::parse(text, v.span) else {
                        continue;
                    };
                    let Some(producer) = p.stage(&r.stage) else {
                        continue;
                    };
                    if !cx
                        .outputs_of(&producer.name.value)
                        .iter()
                        .any(|(n, _)| *n == r.output)
                    {
                        continue;
                    }
                    out.push(
                        Finding::new(
                            self.id(),
                            self.severity(),
                            format!(
                                "\"{text}\" is passed as the literal text, not the output `{r}`"
                            ),
                            Label::new(v.span, "a literal string"),
                        )
                        .help(format!("to read the output write \"{{{text}}}\""))
                        .confidence(Confidence::Medium)
                        .stage(&stage.name.value),
                    );
                }
            }
        }
    }
}

//! `unreachable-stage`: a stage that can never run: its `when` is false whatever happens, or
//! it needs a stage that can never run.

use super::{Check, Context};
use crate::finding::{Finding, Label, Severity};
use crate::model::Expr;

pub struct UnreachableStage;

impl Check for UnreachableStage {
    fn principle(&self) -> super::Principle {
        super::Principle::Coverage
    }
    fn id(&self) -> &'static str {
        "unreachable-stage"
    }
    fn severity(&self) -> Severity {
        Severity::Warning
    }
    fn summary(&self) -> &'static str {
        "every stage can run under some outcome"
    }
    fn run(&self, cx: &Context<'_>, out: &mut Vec<Finding>) {
        let Some(order) = &cx.dag.order else { return };
        let stages = &cx.pipeline.stages;
        let mut dead = vec![false; stages.len()];
        for &i in order {
            let stage = &stages[i];
            if let Some(when) = &stage.when
                && never_true(&when.value)
            {
                dead[i] = true;
                out.push(
                    Finding::new(
                        self.id(),
                        self.severity(),
                        format!(
                            "stage `{}` never runs: its condition is always false",
                            stage.name.value
                        ),
                        Label::new(when.span, "always false"),
                    )
                    .help("remove the stage, or fix its `when`")
                    .stage(&stage.name.value),
                );
                continue;
            }
            let blocked = cx
                .dag
                .producers(i)
                .find(|(p, e)| dead[*p] && (e.needs || !e.data.is_empty()));
            if let Some((p, _)) = blocked {
                dead[i] = true;
                out.push(
                    Finding::new(
                        self.id(),
                        self.severity(),
                        format!(
                            "stage `{}` never runs: it needs `{}`, which never runs",
                            stage.name.value, stages[p].name.value
                        ),
                        Label::new(stage.name.span, "never runs"),
                    )
                    .related(Label::new(stages[p].name.span, "never runs"))
                    .stage(&stage.name.value),
                );
            }
        }
    }
}

/// True when the condition is false under every assignment of its references (checked by
/// enumeration up to 12 distinct references, beyond which it is not reported).
fn never_true(expr: &Expr) -> bool {
    let mut refs = Vec::new();
    expr.collect_references(&mut refs);
    let mut names: Vec<String> = refs.iter().map(|r| r.to_string()).collect();
    names.sort();
    names.dedup();
    if names.len() > 12 {
        return false;
    }
    (0u32..(1 << names.len())).all(|bits| {
        !expr.eval(&mut |r| {
            let i = names.iter().position(|n| *n == r.to_string())?;
            Some(bits & (1 << i) != 0)
        })
    })
}

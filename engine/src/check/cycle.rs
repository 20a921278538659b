//! `cycle`: stages that wait on each other can never run. The cycle is printed as a path.

use super::{Check, Context};
use crate::finding::{Finding, Label, Severity};

pub struct Cycle;

impl Check for Cycle {
    fn id(&self) -> &'static str {
        "cycle"
    }
    fn severity(&self) -> Severity {
        Severity::Error
    }
    fn summary(&self) -> &'static str {
        "the stages form a DAG"
    }
    fn run(&self, cx: &Context<'_>, out: &mut Vec<Finding>) {
        let stages = &cx.pipeline.stages;
        for cycle in &cx.dag.cycles {
            let names: Vec<&str> = cycle
                .iter()
                .map(|&i| stages[i].name.value.as_str())
                .collect();
            let first = cycle[0];
            let mut f = Finding::new(
                self.id(),
                self.severity(),
                format!(
                    "stages depend on each other in a cycle: {}",
                    names.join(" → ")
                ),
                Label::new(
                    stages[first].name.span,
                    "this stage waits on itself through the cycle",
                ),
            )
            .help("remove one of the references or `needs` on the path")
            .stage(&stages[first].name.value);
            for pair in cycle.windows(2) {
                let (from, to) = (pair[0], pair[1]);
                f = f.related(Label::new(
                    dependency_span(cx, from, to),
                    format!(
                        "`{}` waits on `{}` here",
                        stages[to].name.value, stages[from].name.value
                    ),
                ));
            }
            out.push(f);
        }
    }
}

/// Where stage `to` refers to stage `from` (a reference, a `needs`, or its name).
fn dependency_span(cx: &Context<'_>, from: usize, to: usize) -> crate::span::Span {
    let stages = &cx.pipeline.stages;
    let target = &stages[from].name.value;
    let consumer = &stages[to];
    if let Some(r) = consumer
        .references()
        .into_iter()
        .find(|r| &r.stage == target)
    {
        return r.span;
    }
    if let Some(n) = consumer.needs.iter().find(|n| &n.value == target) {
        return n.span;
    }
    consumer.name.span
}

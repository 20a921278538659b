//! `cycle`: stages that wait on each other can never run. The cycle is printed as a path (its
//! first stages and its end, with the count, when it is long: a generated file can hold a cycle
//! of thousands of stages).

use super::{Check, Context};
use crate::finding::{Finding, Label, Severity};

pub struct Cycle;

impl Check for Cycle {
    fn principle(&self) -> super::Principle {
        super::Principle::OneSourceOfTruth
    }
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
                format!("stages depend on each other in a cycle: {}", path(&names)),
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

/// Stages named in a cycle's message; a longer cycle is cut in the middle.
const MAX_NAMED: usize = 8;

/// `a → b → a`, or `a → b → … → a (N stages)` for a long cycle (`names` ends where it starts).
fn path(names: &[&str]) -> String {
    if names.len() <= MAX_NAMED {
        return names.join(" → ");
    }
    format!(
        "{} → … → {} ({} stages)",
        names[..MAX_NAMED - 2].join(" → "),
        names[names.len() - 1],
        names.len() - 1
    )
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_cycle_is_named_by_its_start_and_counted() {
        assert_eq!(path(&["a", "b", "a"]), "a → b → a");
        let names: Vec<String> = (0..100)
            .map(|i| format!("s{i}"))
            .chain(["s0".into()])
            .collect();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        assert_eq!(
            path(&names),
            "s0 → s1 → s2 → s3 → s4 → s5 → … → s0 (100 stages)"
        );
    }
}

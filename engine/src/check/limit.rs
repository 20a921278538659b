//! `limit`: principle 4, coverage is a promise, and a limit that does not limit is none. Every
//! integer and duration a stage, forge or store takes is declared with its range
//! ([`crate::contract::Bound`]): a setting without one does not build, so the rule reaches
//! settings no one has listed. The compiler reports a value outside it, and this check turns the
//! fact into a finding: `run` compiles with the same compiler, so it refuses the same file with
//! the same words.

use super::{Check, Context};
use crate::finding::{Confidence, Finding, Label, Severity};
use crate::lower::Fact;
use crate::span::Span;

pub struct Limit;

/// The stage one of whose settings is at `span`, so that an `allow` on the stage reaches the
/// finding; `None` for a forge's or a store's.
fn stage_holding<'a>(cx: &Context<'a>, span: Span) -> Option<&'a str> {
    cx.pipeline
        .stages
        .iter()
        .find(|stage| {
            stage.children.iter().any(|c| {
                c.args.iter().any(|a| a.span == span)
                    || c.props.iter().any(|p| p.value.span == span)
            })
        })
        .map(|stage| stage.name.value.as_str())
}

impl Check for Limit {
    fn principle(&self) -> super::Principle {
        super::Principle::Coverage
    }
    fn id(&self) -> &'static str {
        "limit"
    }
    fn severity(&self) -> Severity {
        Severity::Error
    }
    fn summary(&self) -> &'static str {
        "every number the file sets lies in the range its setting declares: a limit limits"
    }
    fn run(&self, cx: &Context<'_>, out: &mut Vec<Finding>) {
        for fact in cx.facts {
            let Fact::OutOfBound {
                span,
                what,
                found,
                bound,
            } = fact
            else {
                continue;
            };
            let (side, label) = if *found > bound.max {
                (
                    format!("must be at most {}", bound.show(bound.max)),
                    "limits nothing",
                )
            } else {
                (
                    format!("must be at least {}", bound.show(bound.min)),
                    "below its range",
                )
            };
            let mut finding = Finding::new(
                    self.id(),
                    self.severity(),
                    format!(
                        "coverage is a promise, and a limit that does not limit is none: {what} is {}, and {side}: {}",
                        bound.show(*found),
                        bound.why
                    ),
                    Label::new(*span, label),
                )
                .help(format!(
                    "write a value {} in {what}, or leave it out for its default",
                    bound.range()
                ))
            .confidence(Confidence::High);
            if let Some(stage) = stage_holding(cx, *span) {
                finding = finding.stage(stage);
            }
            out.push(finding);
        }
    }
}

//! `missing-required`: a required node, property, child or argument is absent.

use super::{Check, Context};
use crate::finding::{Finding, Label, Severity};
use crate::lower::Fact;

pub struct MissingRequired;

impl Check for MissingRequired {
    fn principle(&self) -> super::Principle {
        super::Principle::OneSourceOfTruth
    }
    fn id(&self) -> &'static str {
        "missing-required"
    }
    fn severity(&self) -> Severity {
        Severity::Error
    }
    fn summary(&self) -> &'static str {
        "everything a node requires is given"
    }
    fn run(&self, cx: &Context<'_>, out: &mut Vec<Finding>) {
        for fact in cx.facts {
            if let Fact::Missing {
                span,
                what,
                node,
                help,
            } = fact
            {
                out.push(
                    Finding::new(
                        self.id(),
                        self.severity(),
                        format!("{node} needs {what}"),
                        Label::new(*span, format!("{what} missing")),
                    )
                    .maybe_help(help.clone()),
                );
            }
        }
    }
}

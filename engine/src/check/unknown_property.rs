//! `unknown-property`: a property a node does not take.

use super::{Check, Context};
use crate::finding::{Finding, Label, Severity};
use crate::lower::Fact;
use crate::suggest::help_text;

pub struct UnknownProperty;

impl Check for UnknownProperty {
    fn principle(&self) -> super::Principle {
        super::Principle::AllowLists
    }
    fn id(&self) -> &'static str {
        "unknown-property"
    }
    fn severity(&self) -> Severity {
        Severity::Error
    }
    fn summary(&self) -> &'static str {
        "every property is one its node takes"
    }
    fn run(&self, cx: &Context<'_>, out: &mut Vec<Finding>) {
        for fact in cx.facts {
            if let Fact::UnknownProperty {
                span,
                name,
                node,
                candidates,
            } = fact
            {
                out.push(
                    Finding::new(
                        self.id(),
                        self.severity(),
                        format!("{node} has no property `{name}`"),
                        Label::new(*span, "unknown property"),
                    )
                    .maybe_help(help_text(candidates)),
                );
            }
        }
    }
}

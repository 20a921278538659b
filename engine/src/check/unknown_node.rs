//! `unknown-node`: a node the language or the stage's contract does not know. Never ignored:
//! a misspelt `scan` guard that was silently dropped would open the gate it was meant to close.

use super::{Check, Context};
use crate::finding::{Finding, Label, Severity};
use crate::lower::Fact;
use crate::suggest::help_text;

pub struct UnknownNode;

impl Check for UnknownNode {
    fn principle(&self) -> super::Principle {
        super::Principle::AllowLists
    }
    fn id(&self) -> &'static str {
        "unknown-node"
    }
    fn severity(&self) -> Severity {
        Severity::Error
    }
    fn summary(&self) -> &'static str {
        "every node is one the language or the stage's contract knows"
    }
    fn run(&self, cx: &Context<'_>, out: &mut Vec<Finding>) {
        for fact in cx.facts {
            if let Fact::UnknownNode {
                span,
                name,
                context,
                candidates,
            } = fact
            {
                out.push(
                    Finding::new(
                        self.id(),
                        self.severity(),
                        format!("unknown node `{name}` in {context}"),
                        Label::new(*span, "not known here"),
                    )
                    .maybe_help(help_text(candidates)),
                );
            }
        }
    }
}

//! `unknown-stage-kind`: `uses=` names no registered stage kind.

use super::{Check, Context};
use crate::finding::{Finding, Label, Severity};
use crate::lower::Fact;
use crate::suggest::help_text;

pub struct UnknownStageKind;

impl Check for UnknownStageKind {
    fn principle(&self) -> super::Principle {
        super::Principle::AllowLists
    }
    fn id(&self) -> &'static str {
        "unknown-stage-kind"
    }
    fn severity(&self) -> Severity {
        Severity::Error
    }
    fn summary(&self) -> &'static str {
        "every stage uses a known kind"
    }
    fn run(&self, cx: &Context<'_>, out: &mut Vec<Finding>) {
        for fact in cx.facts {
            if let Fact::UnknownStageKind {
                span,
                name,
                candidates,
            } = fact
            {
                let kinds: Vec<&str> = cx.registry.kinds().collect();
                let help = help_text(candidates)
                    .unwrap_or_else(|| format!("the known kinds are {}", kinds.join(", ")));
                out.push(
                    Finding::new(
                        self.id(),
                        self.severity(),
                        format!("unknown stage kind `{name}`"),
                        Label::new(*span, "no stage kind of this name"),
                    )
                    .help(help),
                );
            }
        }
    }
}

//! `duplicate-name`: two declarations with one name, a property given twice, or a child given
//! twice where one is allowed. KDL keeps the last of a repeated property, so the first would be
//! silently lost.

use super::{Check, Context};
use crate::finding::{Finding, Label, Severity};
use crate::lower::Fact;

pub struct DuplicateName;

impl Check for DuplicateName {
    fn principle(&self) -> super::Principle {
        super::Principle::OneSourceOfTruth
    }
    fn id(&self) -> &'static str {
        "duplicate-name"
    }
    fn severity(&self) -> Severity {
        Severity::Error
    }
    fn summary(&self) -> &'static str {
        "names are declared once; properties and single children are given once"
    }
    fn run(&self, cx: &Context<'_>, out: &mut Vec<Finding>) {
        for fact in cx.facts {
            if let Fact::Duplicate {
                span, first, what, ..
            } = fact
            {
                let mut f = Finding::new(
                    self.id(),
                    self.severity(),
                    format!("{what} is given more than once"),
                    Label::new(*span, "given again here"),
                )
                .help("remove one, or give it another name");
                if first != span {
                    f = f.related(Label::new(*first, "first given here"));
                }
                out.push(f);
            }
        }
    }
}

//! `duplicate-lens`: no two lenses of a pipeline share a name. A finding carries its lens's name
//! (its rule's prefix, the aggregate's `(lenses: …)`), so two lenses of one name — two files with
//! one stem, a file named like a built-in next to that built-in, one lens twice — make findings
//! whose origin cannot be told, and a file could pass for the built-in it shadows.

use super::lens::lenses;
use super::{Check, Context};
use crate::finding::{Confidence, Finding, Label, Severity};

pub struct DuplicateLens;

impl Check for DuplicateLens {
    fn principle(&self) -> super::Principle {
        super::Principle::Coverage
    }
    fn id(&self) -> &'static str {
        "duplicate-lens"
    }
    fn severity(&self) -> Severity {
        Severity::Error
    }
    fn summary(&self) -> &'static str {
        "no two lenses of a pipeline have one name"
    }
    fn run(&self, cx: &Context<'_>, out: &mut Vec<Finding>) {
        let all = lenses(cx);
        for (i, later) in all.iter().enumerate() {
            let Some(name) = later.name() else { continue };
            let Some(first) = all[..i].iter().find(|l| l.name() == Some(name)) else {
                continue;
            };
            out.push(
                Finding::new(
                    self.id(),
                    self.severity(),
                    format!(
                        "the lens {:?} of `{}` has the name `{name}`, as the lens {:?} of `{}`",
                        later.spec, later.stage.name.value, first.spec, first.stage.name.value
                    ),
                    Label::new(later.span, format!("a second lens named `{name}`")),
                )
                .related(Label::new(first.span, format!("the first lens named `{name}`")))
                .help(
                    "give each lens its own name (a lens file's name is its stem; built-in names are reserved), and run each lens once",
                )
                .confidence(Confidence::High)
                .stage(&later.stage.name.value),
            );
        }
    }
}

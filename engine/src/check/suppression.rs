//! `suppression`: an `allow` must name a known check and say why. An `allow` without a reason
//! suppresses nothing.

use super::{Check, Context};
use crate::finding::{Finding, Label, Severity};
use crate::model::Allow;
use crate::suggest::{did_you_mean, help_text};

pub struct Suppression;

impl Suppression {
    fn check_allow(&self, allow: &Allow, out: &mut Vec<Finding>) {
        if super::by_id(&allow.check.value).is_none() {
            let ids = super::ALL.iter().map(|c| c.id());
            out.push(
                Finding::new(
                    self.id(),
                    self.severity(),
                    format!("`allow` names no check: `{}`", allow.check.value),
                    Label::new(allow.check.span, "unknown check id"),
                )
                .maybe_help(help_text(&did_you_mean(&allow.check.value, ids))),
            );
        }
        if allow
            .reason
            .as_ref()
            .is_none_or(|r| r.value.trim().is_empty())
        {
            out.push(
                Finding::new(
                    self.id(),
                    self.severity(),
                    format!(
                        "`allow \"{}\"` has no reason, so it suppresses nothing",
                        allow.check.value
                    ),
                    Label::new(allow.span, "reason missing"),
                )
                .help("say why the finding is acceptable: `reason=\"…\"`"),
            );
        }
    }
}

impl Check for Suppression {
    fn id(&self) -> &'static str {
        "suppression"
    }
    fn severity(&self) -> Severity {
        Severity::Error
    }
    fn summary(&self) -> &'static str {
        "every `allow` names a known check and gives a reason"
    }
    fn run(&self, cx: &Context<'_>, out: &mut Vec<Finding>) {
        for allow in &cx.pipeline.allows {
            self.check_allow(allow, out);
        }
        for stage in &cx.pipeline.stages {
            for allow in &stage.allows {
                self.check_allow(allow, out);
            }
        }
    }
}

//! `unbudgeted-reviewer`: a stage that runs a model reviewer says the most it may spend. A
//! model's cost is known only once it is spent, and a change pushed again and again, or a
//! reviewer talked into reading everything, spends without end: unknown cost is unbounded cost.
//!
//! A model reviewer is one whose kind runs a vendor's model (its contract names the vendor), one
//! that says whose model it runs (`vendor=`), or one given a model key (a reviewer kind's
//! credential variable); a stage kind that can bound it has a `budget` child in its contract. The engine names no reviewer and no vendor.

use super::reviewer::{REVIEWER, StageReviewer};
use super::{Check, Context};
use crate::finding::{Confidence, Finding, Label, Severity};

/// The child that bounds what a model reviewer may spend.
const BUDGET: &str = "budget";

pub struct UnbudgetedReviewer;

impl Check for UnbudgetedReviewer {
    fn principle(&self) -> super::Principle {
        super::Principle::UnknownAuthority
    }
    fn id(&self) -> &'static str {
        "unbudgeted-reviewer"
    }
    fn severity(&self) -> Severity {
        Severity::Warning
    }
    fn summary(&self) -> &'static str {
        "a stage that runs a model reviewer bounds what it may spend"
    }
    fn run(&self, cx: &Context<'_>, out: &mut Vec<Finding>) {
        for stage in &cx.pipeline.stages {
            let Some(reviewer) = StageReviewer::of(cx, stage) else {
                continue;
            };
            // A stage kind with no budget to give cannot be told to keep one.
            if reviewer.contract.child_spec(BUDGET).is_none() {
                continue;
            }
            // A model key given is a model run too, whatever the kind says of itself.
            let runs_a_model = reviewer.kind.vendor.is_some()
                || reviewer.declared_vendor().is_some()
                || !reviewer.keys.is_empty();
            if !runs_a_model {
                continue;
            }
            let budget = stage.children_named(BUDGET).next();
            // A budget of no limit bounds nothing either.
            if budget.is_some_and(|b| !b.props.is_empty()) {
                continue;
            }
            let name = stage.name.value.as_str();
            let kind = reviewer.kind.name;
            let what = match budget {
                Some(_) => "a budget that names no limit",
                None => "no budget",
            };
            let mut finding = Finding::new(
                self.id(),
                self.severity(),
                format!(
                    "the review stage `{name}` runs a model with {what}: unknown cost is unbounded cost"
                ),
                Label::new(
                    reviewer.name_span,
                    format!("`{REVIEWER} \"{kind}\"` runs a model that is paid per token"),
                ),
            )
            .help(format!(
                "say the most it may spend: `{BUDGET} change-tokens=2000000` (also `run-tokens`, `run-usd`, `change-usd`); a run over it is \"not reviewed: budget spent\"{}",
                if reviewer.kind.vendor.is_none() && reviewer.keys.is_empty() {
                    // Its spend is counted only by the proxy of a model key it is given.
                    "; a reviewer of no vendor's own is counted through the model key it is given, so give it the key under its model's variable (`secret-env`) first"
                } else {
                    ""
                }
            ))
            .confidence(Confidence::High)
            .stage(name);
            if let Some(b) = budget {
                finding = finding.related(Label::new(b.name.span, "a budget with no limit"));
            }
            out.push(finding);
        }
    }
}

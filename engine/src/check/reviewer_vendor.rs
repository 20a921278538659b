//! `reviewer-vendor`: a stage that says its reviewer must be another vendor's than the model that
//! wrote the work (`reviewer-vendor-differs-from "anthropic"`) runs a reviewer that provably is:
//! the value names a known vendor (or a reviewer of one), and the reviewer's vendor is known and
//! differs. A value interpolated at run time is the stage's to check then; only a reviewer of
//! unknown vendor is reported for it.

use super::reviewer::{StageReviewer, either, literal};
use super::{Check, Context};
use crate::finding::{Confidence, Finding, Label, Severity};
use crate::suggest::{did_you_mean, help_text};

/// The child that names the vendor whose model wrote the work.
const DIFFERS_FROM: &str = "reviewer-vendor-differs-from";

pub struct ReviewerVendor;

impl Check for ReviewerVendor {
    fn principle(&self) -> super::Principle {
        super::Principle::Coverage
    }
    fn id(&self) -> &'static str {
        "reviewer-vendor"
    }
    fn severity(&self) -> Severity {
        Severity::Error
    }
    fn summary(&self) -> &'static str {
        "a reviewer that must be another vendor's than the work's author provably is"
    }
    fn run(&self, cx: &Context<'_>, out: &mut Vec<Finding>) {
        for stage in &cx.pipeline.stages {
            let Some(differs) = stage.children_named(DIFFERS_FROM).next() else {
                continue;
            };
            let Some(value) = differs.args.first() else {
                continue;
            };
            let Some(reviewer) = StageReviewer::of(cx, stage) else {
                continue;
            };
            let name = stage.name.value.as_str();
            let kind = reviewer.kind.name;
            let contract = reviewer.contract;
            let written = literal(&value.value);
            // The vendor that wrote the work, when the file says it literally.
            let author = match &written {
                None => None,
                Some(word) => match contract.vendor_named(word) {
                    Some(v) => Some(v),
                    None => {
                        let mut known = contract.vendors();
                        known.extend(
                            contract
                                .reviewers()
                                .iter()
                                .filter(|k| k.vendor.is_some())
                                .map(|k| k.name),
                        );
                        let help = help_text(&did_you_mean(word, known.iter().copied()))
                            .unwrap_or_else(|| {
                                format!(
                                    "name a vendor ({}) or a reviewer of one ({})",
                                    either(&contract.vendors()),
                                    either(&reviewer.others(None)),
                                )
                            });
                        out.push(
                            Finding::new(
                                self.id(),
                                self.severity(),
                                format!("`{DIFFERS_FROM}` of `{name}` names `{word}`, which is no known vendor: no reviewer can be proven to differ from it, and the stage refuses every run"),
                                Label::new(value.span, "no known vendor or reviewer"),
                            )
                            .help(help)
                            .confidence(Confidence::High)
                            .stage(name),
                        );
                        continue;
                    }
                },
            };
            let wrote = match author {
                Some(v) => format!("the work was written by {v}'s model"),
                None => "the work's vendor is known at run time".to_string(),
            };
            match reviewer.vendor() {
                None => {
                    let others = reviewer.others(author);
                    let (at, fix) = match reviewer.declared_vendor() {
                        Some(declared) => {
                            let known = contract.vendors();
                            let fix =
                                help_text(&did_you_mean(declared.value, known.iter().copied()))
                                    .unwrap_or_else(|| {
                                        format!(
                                            "name a known vendor in `vendor=` ({})",
                                            either(&known)
                                        )
                                    });
                            (
                                Label::new(
                                    declared.span,
                                    format!("`{}` is no known vendor", declared.value),
                                ),
                                fix,
                            )
                        }
                        None if reviewer.moved_api.is_some() => {
                            let var = reviewer.kind.api_url.unwrap_or("…");
                            let at = reviewer.moved_api.unwrap_or(reviewer.name_span);
                            let own = reviewer.kind.vendor.unwrap_or("…");
                            (
                                Label::new(
                                    at,
                                    format!(
                                        "`{var}` moves `{kind}`'s API to another host, which chooses whose model answers"
                                    ),
                                ),
                                format!(
                                    "say whose model the host runs: `{} \"{kind}\" vendor=\"{own}\"` (the run refuses when it is the work's vendor), or leave `{var}` out so that `{kind}` talks to {own}'s own API",
                                    super::reviewer::REVIEWER,
                                ),
                            )
                        }
                        None => {
                            let other = contract
                                .vendors()
                                .into_iter()
                                .find(|v| Some(*v) != author)
                                .unwrap_or("…");
                            (
                                Label::new(
                                    reviewer.name_span,
                                    format!("`{kind}` declares no vendor"),
                                ),
                                format!(
                                    "if `{kind}` runs a model, name its vendor: `{} \"{kind}\" vendor=\"{other}\"`",
                                    super::reviewer::REVIEWER,
                                ),
                            )
                        }
                    };
                    // Through a gateway the fix is the declaration, not another reviewer.
                    let help = match (
                        others.is_empty() || reviewer.moved_api.is_some(),
                        fix.ends_with('?'),
                    ) {
                        (true, _) => fix,
                        (false, true) => format!(
                            "{fix} Or use a reviewer whose vendor is known: {}",
                            either(&others)
                        ),
                        (false, false) => format!(
                            "{fix}, or use a reviewer whose vendor is known: {}",
                            either(&others)
                        ),
                    };
                    out.push(
                        Finding::new(
                            self.id(),
                            self.severity(),
                            format!("the `{kind}` reviewer of `{name}` has no known vendor, so it cannot be proven to be another vendor's than the work's"),
                            at,
                        )
                        .related(Label::new(value.span, wrote))
                        .help(help)
                        .confidence(Confidence::High)
                        .stage(name),
                    );
                }
                Some(vendor) if Some(vendor.value) == author => {
                    let v = vendor.value;
                    let others = reviewer.others(Some(v));
                    let mut help = if others.is_empty() {
                        "use a reviewer of another vendor's model".to_string()
                    } else {
                        format!("use a reviewer of another vendor: {}", either(&others))
                    };
                    if reviewer.kind.vendor.is_none() {
                        help = format!(
                            "run another vendor's model behind `{kind}` and say which in `vendor=`, or {help}"
                        );
                    }
                    let at = if let Some((_, var, _)) = reviewer.contradicted() {
                        help = format!(
                            "give the reviewer the key of the model it runs: `vendor=` is not believed while the only model key it holds is {v}'s (principle 2: a declaration the stage's own settings contradict is not believed); or {help}"
                        );
                        format!(
                            "`{var}` is {v}'s key: `vendor=` says otherwise, and is not believed"
                        )
                    } else if reviewer.kind.vendor.is_some() {
                        format!("`{kind}` runs {v}'s model")
                    } else {
                        format!("the `{kind}` reviewer runs {v}'s model")
                    };
                    out.push(
                        Finding::new(
                            self.id(),
                            self.severity(),
                            format!("in `{name}`, work written by {v}'s model would be reviewed by {v}'s model"),
                            Label::new(vendor.span, at),
                        )
                        .related(Label::new(value.span, wrote))
                        .help(help)
                        .confidence(Confidence::High)
                        .stage(name),
                    );
                }
                Some(_) => {}
            }
        }
    }
}

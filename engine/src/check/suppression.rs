//! `suppression`: an `allow` must name a known check and say why. An `allow` without a reason,
//! or with a blank one, suppresses nothing; and nothing suppresses a `suppression` finding, so an
//! `allow "suppression"` cannot hide a wrong `allow` (it is reported itself).

use super::{Check, Context};
use crate::finding::{Finding, Label, Severity};
use crate::model::Allow;
use crate::suggest::{did_you_mean, help_text};

pub const ID: &str = "suppression";

pub struct Suppression;

/// The reason an `allow` gives, trimmed; a missing or blank reason is none.
pub fn reason(allow: &Allow) -> Option<&str> {
    allow
        .reason
        .as_ref()
        .map(|r| r.value.trim())
        .filter(|r| !r.is_empty())
}

/// Whether `allow` suppresses findings of `check`: it names the check, gives a reason, and the
/// check is not `suppression` itself.
pub fn covers(allow: &Allow, check: &str) -> bool {
    check != ID && allow.check.value == check && reason(allow).is_some()
}

impl Suppression {
    fn check_allow(&self, allow: &Allow, out: &mut Vec<Finding>) {
        if allow.check.value == ID {
            out.push(
                Finding::new(
                    self.id(),
                    self.severity(),
                    "`allow \"suppression\"` suppresses nothing: a `suppression` finding is a wrong `allow`, and a wrong `allow` cannot be allowed",
                    Label::new(allow.check.span, "cannot be allowed"),
                )
                .help("remove this `allow`, and correct the `allow`s the other `suppression` findings name"),
            );
            return;
        }
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
        match &allow.reason {
            None => out.push(
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
            ),
            Some(r) if reason(allow).is_none() => out.push(
                Finding::new(
                    self.id(),
                    self.severity(),
                    format!(
                        "`allow \"{}\"` has a blank reason, so it suppresses nothing",
                        allow.check.value
                    ),
                    Label::new(r.span, "no words in the reason"),
                )
                .help("say in the reason why the finding is acceptable, or fix what it reports"),
            ),
            Some(_) => {}
        }
    }
}

impl Check for Suppression {
    fn principle(&self) -> super::Principle {
        super::Principle::NarrowSuppressions
    }
    fn id(&self) -> &'static str {
        ID
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

#[cfg(test)]
mod tests {
    use crate::finding::Finding;
    use crate::registry::Registry;
    use crate::report::{Style, render_human};
    use crate::{CheckOptions, Source, compile, run_checks};

    /// A `run` stage that never runs: one `unreachable-stage` warning to allow.
    const NEVER: &str =
        "stage \"nightly\" uses=\"run\" when=\"false\" {\n    command \"true\"\n}\n";

    fn check(text: &str) -> (Source, Vec<Finding>) {
        let registry = Registry::with_builtins();
        let source = Source::new("t.kdl", text);
        let compiled = compile(source.clone(), &registry, &Default::default()).expect("compiles");
        let findings = run_checks(&compiled, &registry, CheckOptions::default());
        (source, findings)
    }

    fn of<'a>(findings: &'a [Finding], check: &str) -> Vec<&'a Finding> {
        findings.iter().filter(|f| f.check == check).collect()
    }

    #[test]
    fn a_blank_reason_suppresses_nothing_and_is_reported() {
        for reason in ["", " ", "\t\n"] {
            let text = format!(
                "pipeline \"p\"\nallow \"unreachable-stage\" reason=\"{}\"\n{NEVER}",
                reason.escape_default()
            );
            let (source, findings) = check(&text);
            let live = of(&findings, "unreachable-stage");
            assert_eq!(live.len(), 1, "{reason:?}: {findings:#?}");
            assert!(live[0].suppressed.is_none(), "{reason:?} suppressed it");
            let blank = of(&findings, "suppression");
            assert_eq!(blank.len(), 1, "{reason:?}: {findings:#?}");
            assert!(
                blank[0].message.contains("blank reason"),
                "{}",
                blank[0].message
            );
            let human = render_human(&source, &findings, Style::Plain);
            assert!(!human.contains("(allowed:"), "{human}");
        }
    }

    #[test]
    fn a_stage_level_blank_reason_suppresses_nothing() {
        let text = "pipeline \"p\"\nstage \"nightly\" uses=\"run\" when=\"false\" {\n    allow \"unreachable-stage\" reason=\"  \"\n    command \"true\"\n}\n";
        let (_, findings) = check(text);
        assert!(of(&findings, "unreachable-stage")[0].suppressed.is_none());
        assert_eq!(of(&findings, "suppression").len(), 1, "{findings:#?}");
    }

    #[test]
    fn a_reason_is_shown_trimmed_and_never_empty() {
        let text = format!(
            "pipeline \"p\"\nallow \"unreachable-stage\" reason=\"  switched off  \"\n{NEVER}"
        );
        let (source, findings) = check(&text);
        let allowed = of(&findings, "unreachable-stage");
        let reason = &allowed[0].suppressed.as_ref().expect("allowed").reason;
        assert_eq!(reason, "switched off");
        let human = render_human(&source, &findings, Style::Plain);
        assert!(human.contains("(allowed: switched off)"), "{human}");
        assert!(!human.contains("(allowed: )"), "{human}");
    }

    #[test]
    fn allow_suppression_cannot_hide_a_suppression_finding() {
        for at_stage in [false, true] {
            let text = if at_stage {
                "pipeline \"p\"\nstage \"nightly\" uses=\"run\" when=\"false\" {\n    allow \"suppression\" reason=\"we read our allows\"\n    allow \"unreachable-stage\"\n    command \"true\"\n}\n".to_string()
            } else {
                format!(
                    "pipeline \"p\"\nallow \"suppression\" reason=\"we read our allows\"\nallow \"unreachable-stage\"\nallow \"unreachable-stages\" reason=\"a typo\"\n{NEVER}"
                )
            };
            let (_, findings) = check(&text);
            let found = of(&findings, "suppression");
            assert!(
                found.iter().all(|f| f.suppressed.is_none()),
                "at stage {at_stage}: {findings:#?}"
            );
            let messages: Vec<&str> = found.iter().map(|f| f.message.as_str()).collect();
            assert!(
                messages
                    .iter()
                    .any(|m| m.starts_with("`allow \"suppression\"` suppresses nothing")),
                "{messages:?}"
            );
            assert!(
                messages.iter().any(|m| m.contains("has no reason")),
                "{messages:?}"
            );
            assert!(of(&findings, "unreachable-stage")[0].suppressed.is_none());
        }
    }
}

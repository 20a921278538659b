//! `suppression`: an `allow` must name a known check, the one finding it hides, and say why
//! (principle 6, suppressions are narrow). An `allow` without a reason, or with a blank one,
//! suppresses nothing; nothing suppresses a `suppression` finding, so an `allow "suppression"`
//! cannot hide a wrong `allow` (it is reported itself). An `allow` names its finding by id
//! ([`Finding::id`]), so it can never hide a finding its author did not see: [`apply`] hides the
//! findings and reports the `allow`s that name none, or a finding that is gone. A `trusted` that
//! lifts nothing is reported by the check itself.

use super::{Check, Context};
use crate::finding::{Finding, Label, Severity};
use crate::model::{Allow, Pipeline, TrustedSource};
use crate::suggest::{did_you_mean, help_text};

/// Ids listed in the help of an `allow` that names no finding.
const MAX_LISTED: usize = 5;

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

/// Whether `allow` is one the static rules accept: it names a check that exists and may be
/// allowed, and gives a reason. Only such an `allow` hides anything or is held to its finding.
fn well_formed(allow: &Allow) -> bool {
    allow.check.value != ID
        && allow.check.value != "syntax"
        && super::by_id(&allow.check.value).is_some()
        && reason(allow).is_some()
}

/// Whether `allow` hides `finding`: it is well formed and names the finding's check and id.
fn hides(allow: &Allow, finding: &Finding, id: &str) -> bool {
    finding.allowable()
        && well_formed(allow)
        && allow.check.value == finding.check
        && allow.finding.as_ref().is_some_and(|f| f.value.trim() == id)
}

/// Hides each finding an `allow` names (when `hide`; `--no-suppress` hides none) and returns
/// the `suppression` findings about the well-formed `allow`s that hide nothing: one without
/// `finding` (an error, whose help lists the ids it could name) and one whose finding is gone
/// or changed (a warning). Both are reported whether or not `hide` is set.
pub fn apply(pipeline: &Pipeline, findings: &mut [Finding], hide: bool) -> Vec<Finding> {
    // Every `allow` with the stage it is written on (none: the file's), stage ones first so a
    // stage's own `allow` is the one shown.
    let scoped: Vec<(Option<&str>, &Allow)> = pipeline
        .stages
        .iter()
        .flat_map(|s| {
            s.allows
                .iter()
                .map(move |a| (Some(s.name.value.as_str()), a))
        })
        .chain(pipeline.allows.iter().map(|a| (None, a)))
        .collect();
    let ids: Vec<String> = findings.iter().map(Finding::id).collect();
    let mut used = vec![false; scoped.len()];
    for (f, id) in findings.iter_mut().zip(&ids) {
        let Some(k) = scoped.iter().position(|(stage, a)| {
            (stage.is_none() || *stage == f.stage.as_deref()) && hides(a, f, id)
        }) else {
            continue;
        };
        used[k] = true;
        let allow = scoped[k].1;
        if hide && let Some(reason) = reason(allow) {
            f.suppressed = Some(crate::finding::Suppression {
                span: allow.span,
                reason: reason.to_string(),
            });
        }
    }
    let mut out = Vec::new();
    for (&(stage, allow), used) in scoped.iter().zip(used) {
        if used || !well_formed(allow) {
            continue;
        }
        // The findings this `allow` could name: its check's, in its scope.
        let candidates = findings
            .iter()
            .zip(&ids)
            .filter(|(f, _)| f.check == allow.check.value)
            .filter(|(f, _)| stage.is_none() || f.stage.as_deref() == stage);
        match &allow.finding {
            None => {
                let listed: Vec<String> = candidates
                    .take(MAX_LISTED)
                    .map(|(f, id)| {
                        format!(
                            "`finding=\"{id}\"` ({})",
                            crate::render::escape::bounded(&f.message, 100)
                        )
                    })
                    .collect();
                let help = if listed.is_empty() {
                    format!(
                        "no `{}` finding is reported {}: remove this `allow`",
                        allow.check.value,
                        where_(stage)
                    )
                } else {
                    format!(
                        "name the one finding it hides, as the finding's last line gives it: {}",
                        listed.join("; ")
                    )
                };
                out.push(
                    Finding::new(
                        ID,
                        Severity::Error,
                        format!(
                            "`allow \"{}\"` names no finding, so it hides nothing: an `allow` hides exactly the finding its author saw (principle 6, suppressions are narrow)",
                            allow.check.value
                        ),
                        Label::new(allow.span, "no `finding=\"…\"`"),
                    )
                    .help(help),
                );
            }
            Some(named) => {
                let now: Vec<String> = candidates
                    .take(MAX_LISTED)
                    .map(|(_, id)| format!("`{id}`"))
                    .collect();
                let help = if now.is_empty() {
                    format!(
                        "no `{}` finding is reported {} now: remove this `allow`",
                        allow.check.value,
                        where_(stage)
                    )
                } else {
                    format!(
                        "read the `{}` finding{} reported {} now ({}): if one is the finding this `allow` was written for, changed, decide again and name its new id, else remove this `allow`",
                        allow.check.value,
                        if now.len() == 1 { "" } else { "s" },
                        where_(stage),
                        now.join(", ")
                    )
                };
                out.push(
                    Finding::new(
                        ID,
                        Severity::Warning,
                        format!(
                            "`allow \"{}\"` hides nothing: no finding has the id `{}` (gone, or changed since the `allow` was written; principle 6, suppressions are narrow)",
                            allow.check.value,
                            crate::render::escape::bounded(named.value.trim(), 40)
                        ),
                        Label::new(named.span, "matches no finding"),
                    )
                    .help(help),
                );
            }
        }
    }
    out
}

fn where_(stage: Option<&str>) -> String {
    match stage {
        Some(s) => format!("on stage `{s}`"),
        None => "in this file".to_owned(),
    }
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
        // A `trusted "checkout"` where no stage runs a file of the checkout lifts nothing now,
        // and would lift whatever stage later came to: the same hole as an `allow` that hides
        // nothing.
        // What the pipeline runs on may say the checkout is the change itself: the declaration
        // then lifts nothing ([`crate::registry::Registry::checkout_contradiction`]), and says why.
        if let Some(t) = cx.pipeline.trusts(TrustedSource::Checkout)
            && let Some(contradiction) = cx.registry.checkout_contradiction(cx.pipeline)
        {
            out.push(self.contradicted(cx.registry, t, &contradiction));
        }
        if let (Some(t), Some(flow)) = (cx.pipeline.trusts(TrustedSource::Checkout), cx.flow)
            && cx.registry.checkout_contradiction(cx.pipeline).is_none()
            && flow.checkout_runs.iter().all(Vec::is_empty)
            // A reviewer in the checkout whose outputs the checkout alone makes untrusted.
            && !flow.worlds.iter().enumerate().any(|(i, w)| {
                *w == Some(crate::flow::World::Checkout)
                    && !flow.inputs[i].iter().any(|x| x.labels.untrusted)
            })
        {
            out.push(
                Finding::new(
                    self.id(),
                    Severity::Warning,
                    "`trusted \"checkout\"` lifts nothing: no stage runs a file of the checkout or runs a reviewer there that reads nothing else untrusted (a reviewer's `prompt` and `lens` files are read from the base revision, never from the checkout) (principle 6, suppressions are narrow)",
                    Label::new(t.source.span, "vouches for nothing"),
                )
                .help("remove it; a stage added later that runs a file of the checkout is then reported, and read, before the checkout is trusted again"),
            );
        }
        if let Some(flow) = cx.flow {
            for t in &cx.pipeline.trusted {
                self.check_trusted_input(cx, flow, t, out);
            }
        }
        for stage in &cx.pipeline.stages {
            for allow in &stage.allows {
                self.check_allow(allow, out);
            }
        }
    }
}

impl Suppression {
    /// A `trusted "checkout"` that what the pipeline runs on contradicts: it cannot hold.
    fn contradicted(
        &self,
        registry: &crate::registry::Registry,
        t: &crate::model::Trusted,
        contradiction: &crate::model::CheckoutContradiction<'_>,
    ) -> Finding {
        use crate::model::CheckoutContradiction;
        match contradiction {
            CheckoutContradiction::Trigger(trigger) => {
                let event = &trigger.event.value;
                let checks_out = registry
                    .event(event)
                    .map_or("what no platform says", |e| e.checks_out);
                let instead = match registry.base_event_beside(event) {
                    Some(e) => format!(
                        "run the review on `{}` alone, which checks out {}, and remove `{event}`",
                        e.name, e.checks_out
                    ),
                    None => format!("remove `{event}`"),
                };
                Finding::new(
                    self.id(),
                    self.severity(),
                    format!(
                        "`trusted \"checkout\"` is contradicted by the trigger `{event}`: on that event the job checks out {checks_out}, so it vouches for nothing (principle 6, suppressions are narrow)",
                    ),
                    Label::new(t.source.span, "cannot hold"),
                )
                .related(Label::new(trigger.event.span, "checks out what the base did not choose"))
                .help(format!(
                    "{instead}; or remove `trusted \"checkout\"` and fix what it was lifting"
                ))
            }
            CheckoutContradiction::Forge { kind, span } => {
                let named = if span.is_some() {
                    ""
                } else {
                    ", the default one"
                };
                let finding = Finding::new(
                    self.id(),
                    self.severity(),
                    format!(
                        "`trusted \"checkout\"` cannot hold on the `{kind}` forge{named}: its checkout is the change under review itself (the working tree the run reviews), so it vouches for nothing (principle 6, suppressions are narrow)"
                    ),
                    Label::new(t.source.span, "cannot hold"),
                )
                .help("remove it and fix what it was lifting: run nothing from the checkout in a stage that holds a secret or write permission; a reviewer's `prompt` and `lens` files need no declaration, they are read from the base revision");
                match span {
                    Some(span) => finding.related(Label::new(*span, "reviews the checkout itself")),
                    None => finding,
                }
            }
        }
    }

    /// A `trusted "input"` must name a declared input, and lift something: the input is read
    /// from the environment, can hold more than a name, and some stage reads it.
    fn check_trusted_input(
        &self,
        cx: &Context<'_>,
        flow: &crate::flow::Flow,
        t: &crate::model::Trusted,
        out: &mut Vec<Finding>,
    ) {
        let (TrustedSource::Input, Some(name)) = (t.source.value, &t.input) else {
            return;
        };
        let declared = cx
            .pipeline
            .inputs
            .iter()
            .find(|i| !i.builtin && i.name.value == name.value);
        let Some(input) = declared else {
            let names = cx
                .pipeline
                .inputs
                .iter()
                .filter(|i| !i.builtin)
                .map(|i| i.name.value.as_str());
            out.push(
                Finding::new(
                    self.id(),
                    self.severity(),
                    format!(
                        "`trusted \"input\"` names no declared input: `{}`",
                        name.value
                    ),
                    Label::new(name.span, "no such input"),
                )
                .maybe_help(help_text(&did_you_mean(&name.value, names))),
            );
            return;
        };
        let authored = cx
            .registry
            .forge_of(cx.pipeline)
            .zip(input.env.as_ref())
            .filter(|(c, env)| c.authored.contains(&env.value))
            .map(|(c, env)| (c.kind.clone(), env.value.clone()));
        let why = if input.env.is_none() {
            Some(
                "it is not read from the environment (its value is written in the file)".to_owned(),
            )
        } else if let Some((forge, env)) = authored {
            Some(format!(
                "`${env}` is set by the `{forge}` forge's runner from what the change's author wrote, which no declaration makes the pipeline's (principle 2: a declaration the forge's own facts contradict is not believed)"
            ))
        } else if flow.outside(&name.value).is_none() {
            Some("its type and pattern admit only names, which are not attacker text".to_owned())
        } else if !flow
            .inputs
            .iter()
            .flatten()
            .any(|x| x.outside.as_ref().is_some_and(|o| o.input == name.value))
        {
            Some("no stage reads it".to_owned())
        } else {
            None
        };
        if let Some(why) = why {
            out.push(
                Finding::new(
                    self.id(),
                    Severity::Warning,
                    format!(
                        "`trusted \"input\" name=\"{}\"` lifts nothing: {why} (principle 6, suppressions are narrow)",
                        name.value
                    ),
                    Label::new(name.span, "vouches for nothing"),
                )
                .help("remove it; if the input later needs it, it is reported, and read, then"),
            );
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
    const NEVER: &str = "stage \"nightly\" uses=\"run\" when=\"false\" {\n    cwd \"{work}\"\n    command \"true\"\n}\n";

    /// The engine's kinds, and a default forge whose job chooses what it checks out (where a
    /// `trusted "checkout"` can hold), as a hosted forge's does.
    fn registry() -> Registry {
        let mut registry = Registry::with_builtins();
        registry.register_forge(
            crate::contract::ForgeContract::new("hosted", "a job that checks out what it says")
                .checkout_may_be_base(),
        );
        registry.register_forge(crate::contract::ForgeContract::new(
            "folder",
            "the checkout is the change",
        ));
        registry.set_default_forge("hosted");
        registry.register_platform(std::sync::Arc::new(crate::platform::testing::TestPlatform));
        registry
    }

    fn check(text: &str) -> (Source, Vec<Finding>) {
        let registry = registry();
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

    /// The id of the one `check` finding of `text` without its `allow`s.
    fn id_of(text: &str, check_id: &str) -> String {
        let (_, findings) = check(text);
        let found = of(&findings, check_id);
        assert_eq!(found.len(), 1, "{findings:#?}");
        found[0].id()
    }

    #[test]
    fn a_reason_is_shown_trimmed_and_never_empty() {
        let id = id_of(&format!("pipeline \"p\"\n{NEVER}"), "unreachable-stage");
        let text = format!(
            "pipeline \"p\"\nallow \"unreachable-stage\" finding=\"{id}\" reason=\"  switched off  \"\n{NEVER}"
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

    #[test]
    fn an_allow_hides_the_finding_it_names_and_a_worse_one_stays_live() {
        // One secret on a command line, allowed by id; a second secret on the same stage is a
        // finding its author never saw: it stays live, and so does a changed first finding.
        let head = "pipeline \"p\"\nsecret \"a\" env=\"A\" can=\"\" {\n    visible-to \"s\"\n}\nsecret \"b\" env=\"B\" can=\"\" {\n    visible-to \"s\"\n}\n";
        let one = "stage \"s\" uses=\"run\" {\n    command \"sh\" \"-c\" \"tool $TA\"\n    secret-env \"TA\" \"a\"\n    secret-env \"TB\" \"b\"\n    ALLOW\n}\n";
        let id = id_of(
            &format!("{head}{}", one.replace("ALLOW", "")),
            "secret-on-argv",
        );
        let allow = format!(
            "allow \"secret-on-argv\" finding=\"{id}\" reason=\"the tool reads no argv of others\""
        );
        let (_, findings) = check(&format!("{head}{}", one.replace("ALLOW", &allow)));
        assert!(
            of(&findings, "secret-on-argv")
                .iter()
                .all(|f| f.suppressed.is_some()),
            "{findings:#?}"
        );
        assert!(of(&findings, "suppression").is_empty(), "{findings:#?}");

        let two = "stage \"s\" uses=\"run\" {\n    command \"sh\" \"-c\" \"tool $TA $TB\"\n    secret-env \"TA\" \"a\"\n    secret-env \"TB\" \"b\"\n    ALLOW\n}\n";
        let (_, findings) = check(&format!("{head}{}", two.replace("ALLOW", &allow)));
        let live: Vec<_> = of(&findings, "secret-on-argv")
            .into_iter()
            .filter(|f| f.suppressed.is_none())
            .collect();
        assert!(
            !live.is_empty(),
            "the worse finding was hidden: {findings:#?}"
        );
        assert!(live.iter().all(|f| f.message.contains("`b`")), "{live:#?}");
    }

    #[test]
    fn an_allow_whose_finding_changed_hides_nothing_and_is_reported() {
        let (_, findings) = check(&format!(
            "pipeline \"p\"\nallow \"unreachable-stage\" finding=\"000000000000\" reason=\"written for another finding\"\n{NEVER}"
        ));
        let live = of(&findings, "unreachable-stage");
        assert!(live[0].suppressed.is_none(), "{findings:#?}");
        let stale = of(&findings, "suppression");
        assert_eq!(stale.len(), 1, "{findings:#?}");
        assert_eq!(stale[0].severity, crate::finding::Severity::Warning);
        assert!(
            stale[0].message.contains("hides nothing"),
            "{}",
            stale[0].message
        );
        let help = stale[0].help.as_deref().unwrap_or_default();
        assert!(help.contains(&live[0].id()), "{help}");
    }

    #[test]
    fn an_allow_without_a_finding_hides_nothing_and_lists_the_ids() {
        for text in [
            format!("pipeline \"p\"\nallow \"unreachable-stage\" reason=\"switched off\"\n{NEVER}"),
            "pipeline \"p\"\nstage \"nightly\" uses=\"run\" when=\"false\" {\n    allow \"unreachable-stage\" reason=\"switched off\"\n    command \"true\"\n}\n".to_string(),
        ] {
            let (_, findings) = check(&text);
            let live = of(&findings, "unreachable-stage");
            assert!(live[0].suppressed.is_none(), "{findings:#?}");
            let wrong = of(&findings, "suppression");
            assert_eq!(wrong.len(), 1, "{findings:#?}");
            assert_eq!(wrong[0].severity, crate::finding::Severity::Error);
            assert!(wrong[0].message.contains("names no finding"), "{}", wrong[0].message);
            let help = wrong[0].help.as_deref().unwrap_or_default();
            assert!(help.contains(&format!("finding=\"{}\"", live[0].id())), "{help}");
        }
    }

    #[test]
    fn an_allow_on_a_stage_hides_no_finding_of_another_stage() {
        let two = "stage \"a\" uses=\"run\" when=\"false\" {\n    command \"true\"\nALLOW}\nstage \"b\" uses=\"run\" when=\"false\" {\n    command \"true\"\n}\n";
        let (_, findings) = check(&format!("pipeline \"p\"\n{}", two.replace("ALLOW", "")));
        let b = of(&findings, "unreachable-stage")
            .into_iter()
            .find(|f| f.stage.as_deref() == Some("b"))
            .expect("b")
            .id();
        let allow =
            format!("    allow \"unreachable-stage\" finding=\"{b}\" reason=\"b's id, on a\"\n");
        let (_, findings) = check(&format!("pipeline \"p\"\n{}", two.replace("ALLOW", &allow)));
        assert!(
            of(&findings, "unreachable-stage")
                .iter()
                .all(|f| f.suppressed.is_none()),
            "{findings:#?}"
        );
        assert_eq!(of(&findings, "suppression").len(), 1, "{findings:#?}");
    }

    #[test]
    fn the_id_ignores_where_the_lines_are_and_no_suppress_still_audits() {
        let a = id_of(&format!("pipeline \"p\"\n{NEVER}"), "unreachable-stage");
        let b = id_of(
            &format!("pipeline \"p\"\n\n// moved down\n\n{NEVER}"),
            "unreachable-stage",
        );
        assert_eq!(a, b);
        let registry = registry();
        let text = format!(
            "pipeline \"p\"\nallow \"unreachable-stage\" finding=\"{a}\" reason=\"off\"\nallow \"unreachable-stage\" reason=\"off\"\n{NEVER}"
        );
        let compiled =
            compile(Source::new("t.kdl", &text), &registry, &Default::default()).expect("compiles");
        let findings = run_checks(&compiled, &registry, CheckOptions { no_suppress: true });
        assert!(findings.iter().all(|f| f.suppressed.is_none()));
        assert_eq!(of(&findings, "suppression").len(), 1, "{findings:#?}");
    }

    #[test]
    fn a_trusted_checkout_that_lifts_nothing_is_reported() {
        let (_, findings) = check(&format!(
            "pipeline \"p\"\ntrusted \"checkout\" reason=\"the base branch only\"\n{NEVER}"
        ));
        let found = of(&findings, "suppression");
        assert_eq!(found.len(), 1, "{findings:#?}");
        assert!(
            found[0].message.contains("lifts nothing"),
            "{}",
            found[0].message
        );
        let (_, findings) = check(
            "pipeline \"p\"\ntrusted \"checkout\" reason=\"the base branch only\"\nstage \"lint\" uses=\"run\" {\n    command \"sh\" \"scripts/lint.sh\"\n}\n",
        );
        assert!(of(&findings, "suppression").is_empty(), "{findings:#?}");
    }

    #[test]
    fn a_trusted_checkout_a_pull_request_trigger_contradicts_lifts_nothing() {
        let stage = "secret \"t\" env=\"T\" can=\"\" {\n    visible-to \"lint\"\n}\nstage \"lint\" uses=\"run\" {\n    command \"sh\" \"scripts/lint.sh\"\n    secret-env \"T\" \"t\"\n}\n";
        for (trigger, holds) in [("change-base", true), ("change-own", false)] {
            let (_, findings) = check(&format!(
                "pipeline \"p\"\ntrigger \"{trigger}\"\ntrusted \"checkout\" reason=\"the base branch only\"\n{stage}"
            ));
            let lifted = of(&findings, "untrusted-input");
            assert_eq!(lifted.len(), 1, "{findings:#?}");
            assert_eq!(
                lifted[0].suppressed.is_some(),
                holds,
                "{trigger}: {findings:#?}"
            );
            let wrong = of(&findings, "suppression");
            assert_eq!(wrong.len(), usize::from(!holds), "{trigger}: {findings:#?}");
        }
    }

    #[test]
    fn a_trusted_checkout_on_a_forge_whose_checkout_is_the_change_lifts_nothing() {
        let stage = "secret \"t\" env=\"T\" can=\"\" {\n    visible-to \"lint\"\n}\nstage \"lint\" uses=\"run\" {\n    command \"sh\" \"scripts/lint.sh\"\n    secret-env \"T\" \"t\"\n}\n";
        for (forge, holds) in [("forge \"hosted\"\n", true), ("forge \"folder\"\n", false)] {
            let (_, findings) = check(&format!(
                "pipeline \"p\"\n{forge}trusted \"checkout\" reason=\"the base branch only\"\n{stage}"
            ));
            let lifted = of(&findings, "untrusted-input");
            assert_eq!(lifted.len(), 1, "{forge}: {findings:#?}");
            assert_eq!(
                lifted[0].suppressed.is_some(),
                holds,
                "{forge}: {findings:#?}"
            );
            let wrong: Vec<_> = of(&findings, "suppression")
                .into_iter()
                .filter(|f| f.message.contains("cannot hold"))
                .collect();
            assert_eq!(wrong.len(), usize::from(!holds), "{forge}: {findings:#?}");
            // The help offers the declaration only where it can hold.
            let help = lifted[0].help.as_deref().unwrap_or_default();
            assert_eq!(help.contains("trusted \"checkout\""), holds, "{help}");
        }
        // The default forge, named nowhere, is the one the finding names.
        let mut registry = registry();
        registry.set_default_forge("folder");
        let text = format!(
            "pipeline \"p\"\ntrusted \"checkout\" reason=\"the base branch only\"\n{stage}"
        );
        let compiled =
            compile(Source::new("t.kdl", &text), &registry, &Default::default()).expect("compiles");
        let findings = run_checks(&compiled, &registry, CheckOptions::default());
        let wrong = of(&findings, "suppression");
        assert_eq!(wrong.len(), 1, "{findings:#?}");
        assert!(
            wrong[0]
                .message
                .contains("cannot hold on the `folder` forge, the default one"),
            "{}",
            wrong[0].message
        );
    }
}

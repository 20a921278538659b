//! Lowering of `trigger` (the events an exported pipeline runs on, as its platform lists them:
//! `Registry::event`) and of a secret's `environment=`. Both are written into a platform's
//! configuration by `export`, so what is accepted here is what it can hold without quoting
//! tricks.

use kdl::KdlNode;

use super::entries::truncate;
use super::{Fact, Lowerer};
use crate::model::Trigger;
use crate::platform::Syntax;
use crate::span::Spanned;
use crate::suggest::did_you_mean;

impl Lowerer<'_> {
    pub(super) fn lower_trigger(&mut self, node: &KdlNode) {
        // The event decides which properties are known, so it is read before the entries.
        let event_text = node
            .entries()
            .iter()
            .find(|e| e.name().is_none())
            .and_then(|e| e.value().as_string());
        let event = event_text.and_then(|t| self.registry.event(t));
        let known: &[&str] = match event {
            Some(e) if !e.about_a_change() => &[],
            _ => &["types", "branches"],
        };
        let what = match event {
            Some(e) => format!("`trigger \"{}\"`", e.name),
            None => "`trigger`".into(),
        };
        let entries = self.entries(node, &what, known);
        self.no_children(node, "`trigger` (it takes no children)");
        let Some(arg) = self.single_arg(node, &entries.args, "trigger") else {
            return;
        };
        let Some(text) = self.expect_string(arg, "the event of `trigger`") else {
            return;
        };
        let Some(event) = event else {
            // Principle 3: only an event a registered platform lists (none, without one).
            let names: Vec<&str> = self.registry.events().map(|e| e.name).collect();
            let expected = match names.split_last() {
                None => "an event of a registered platform (none is registered)".to_string(),
                Some((last, [])) => format!("\"{last}\""),
                Some((last, rest)) => format!(
                    "{} or \"{last}\"",
                    rest.iter()
                        .map(|n| format!("\"{n}\""))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            };
            self.fact(Fact::TypeMismatch {
                span: text.span,
                what: "the event of `trigger`".into(),
                expected,
                found: format!("\"{}\"", truncate(&text.value, 64)),
                help: did_you_mean(&text.value, names.iter().copied())
                    .first()
                    .map(|c| format!("did you mean `{c}`?")),
            });
            return;
        };
        let types = entries
            .prop("types")
            .and_then(|e| self.expect_string(e, "`types`"))
            .map(|t| self.trigger_types(&t, event.types));
        let branches = entries
            .prop("branches")
            .and_then(|e| self.expect_string(e, "`branches`"))
            .map(|b| self.trigger_branches(&b, self.registry.event_syntax(event.name)));
        let name = Spanned::new(event.name.to_string(), text.span);
        if self.declare("trigger", &name) {
            self.pipeline.triggers.push(Trigger {
                event: name.clone(),
                types,
                branches,
            });
        }
    }

    fn trigger_types(
        &mut self,
        text: &Spanned<String>,
        known: &'static [&'static str],
    ) -> Spanned<Vec<String>> {
        self.word_list(
            text,
            |word| known.contains(&word),
            |word| Fact::TypeMismatch {
                span: text.span,
                what: "an activity type in `types`".into(),
                expected: format!(
                    "one of the event's activity types ({}, …)",
                    known
                        .iter()
                        .take(5)
                        .map(|t| format!("`{t}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                found: format!("\"{}\"", truncate(word, 64)),
                help: did_you_mean(word, known.iter().copied())
                    .first()
                    .map(|c| format!("did you mean `{c}`?")),
            },
            (
                "`types`",
                "at least one activity type",
                "leave `types` out for the default activity types",
            ),
        )
    }

    /// `branches`, as the event's platform reads a pattern (none: its configuration holds none,
    /// and every pattern is refused).
    fn trigger_branches(
        &mut self,
        text: &Spanned<String>,
        syntax: Option<&'static Syntax>,
    ) -> Spanned<Vec<String>> {
        let rule = syntax.map_or("none: the event's platform holds no branch filter", |s| {
            s.branch_pattern_rule
        });
        let branches = self.word_list(
            text,
            |word| syntax.is_some_and(|s| (s.branch_pattern)(word)),
            |word| Fact::TypeMismatch {
                span: text.span,
                what: "a pattern in `branches`".into(),
                expected: format!("a branch pattern of {rule}"),
                found: format!("{:?}", truncate(word, 64)),
                help: None,
            },
            (
                "`branches`",
                "at least one branch pattern",
                "leave `branches` out to run for every base branch",
            ),
        );
        if let Some(why) = syntax.and_then(|s| s.negations_only)
            && !branches.value.is_empty()
            && branches.value.iter().all(|b| b.starts_with('!'))
        {
            self.fact(Fact::TypeMismatch {
                span: text.span,
                what: "`branches`".into(),
                expected: format!("at least one pattern without `!` ({why})"),
                found: "only negations".into(),
                help: Some(format!(
                    "name the branches first: `branches=\"main {}\"`",
                    truncate(text.value.trim(), 64)
                )),
            });
        }
        branches
    }

    /// The space-separated words of `text` that `valid` accepts, duplicates dropped. Only the
    /// first word it refuses is a finding (`refused`), with a count of the others, so a hostile
    /// list of many words is one finding, read in linear time; an empty list is a finding too
    /// (`empty`: what, expected, help).
    fn word_list(
        &mut self,
        text: &Spanned<String>,
        valid: impl Fn(&str) -> bool,
        refused: impl Fn(&str) -> Fact,
        empty: (&str, &str, &str),
    ) -> Spanned<Vec<String>> {
        let mut words: Vec<String> = Vec::new();
        let mut seen: rustc_hash::FxHashSet<&str> = rustc_hash::FxHashSet::default();
        let mut first_bad: Option<&str> = None;
        let mut more_bad = 0usize;
        for word in text.value.split_whitespace() {
            if !valid(word) {
                match first_bad {
                    None => first_bad = Some(word),
                    Some(_) => more_bad += 1,
                }
            } else if seen.insert(word) {
                words.push(word.to_string());
            }
        }
        if let Some(word) = first_bad {
            let mut fact = refused(word);
            if let Fact::TypeMismatch { found, .. } = &mut fact
                && more_bad > 0
            {
                found.push_str(&format!(" (and {more_bad} more)"));
            }
            self.fact(fact);
        }
        if text.value.split_whitespace().next().is_none() {
            let (what, expected, help) = empty;
            self.fact(Fact::TypeMismatch {
                span: text.span,
                what: what.into(),
                expected: expected.into(),
                found: "none".into(),
                help: Some(help.into()),
            });
        }
        Spanned::new(words, text.span)
    }

    /// Each secret's `environment="NAME"`, checked to be a name the configuration of the
    /// platform the pipeline runs on holds unquoted (its forge's platform, else the first
    /// registered one; none registered: no name is). Checked once the whole file is lowered,
    /// since the `forge` may come after the secrets; a refused name is dropped.
    pub(super) fn environment_names(&mut self) {
        let registry = self.registry;
        let syntax = registry
            .platform_of(&self.pipeline)
            .and_then(|p| p.syntax())
            .or_else(|| registry.syntax());
        let mut refused = Vec::new();
        for secret in &mut self.pipeline.secrets {
            let Some(value) = secret
                .environment
                .take_if(|v| !syntax.is_some_and(|s| (s.environment)(&v.value)))
            else {
                continue;
            };
            refused.push(Fact::TypeMismatch {
                span: value.span,
                what: "`environment`".into(),
                expected: format!(
                    "an environment name: {}",
                    syntax.map_or("none: no registered platform holds environments", |s| {
                        s.environment_rule
                    })
                ),
                found: format!("{:?}", truncate(&value.value, 64)),
                help: None,
            });
        }
        for fact in refused {
            self.fact(fact);
        }
    }
}

#[cfg(test)]
mod tests {
    /// The messages of what compiling `text` refuses, with the test platform registered or not.
    fn refusals(text: &str, platform: bool) -> Vec<String> {
        let mut registry = crate::registry::Registry::with_builtins();
        if platform {
            registry.register_platform(std::sync::Arc::new(crate::platform::testing::TestPlatform));
        }
        let source = crate::Source::new("t.kdl", format!("pipeline \"p\"\n{text}\n"));
        let findings = match crate::compile(source, &registry, &Default::default()) {
            Ok(c) => crate::run_checks(&c, &registry, crate::CheckOptions::default()),
            Err(u) => u.findings,
        };
        findings
            .into_iter()
            .filter(|f| f.severity == crate::finding::Severity::Error)
            .map(|f| f.message)
            .collect()
    }

    #[test]
    fn an_event_is_one_a_registered_platform_lists() {
        assert_eq!(
            refusals("trigger \"change-base\" types=\"opened pushed\"", true),
            Vec::<String>::new()
        );
        let unknown = refusals("trigger \"change-bass\"", true);
        assert_eq!(unknown.len(), 1, "{unknown:?}");
        assert!(
            unknown[0].contains("\"change-base\", \"change-own\" or \"by-hand\""),
            "{unknown:?}"
        );
        // Without a platform no event is known: default deny.
        let none = refusals("trigger \"change-base\"", false);
        assert!(none[0].contains("none is registered"), "{none:?}");
    }

    #[test]
    fn types_are_the_events_own_and_an_event_about_no_change_takes_none() {
        let wrong = refusals("trigger \"change-own\" types=\"opened merged\"", true);
        assert_eq!(wrong.len(), 1, "{wrong:?}");
        assert!(
            wrong[0].contains("`opened`, `pushed`, `closed`"),
            "{wrong:?}"
        );
        assert_eq!(
            refusals("trigger \"by-hand\" types=\"opened\"", true).len(),
            1
        );
        assert_eq!(refusals("trigger \"by-hand\"", true), Vec::<String>::new());
    }

    #[test]
    fn branches_and_environments_are_what_the_platform_holds() {
        let ok = "trigger \"change-base\" branches=\"main rel*\"\nsecret \"k\" env=\"K\" environment=\"review\"";
        assert_eq!(refusals(ok, true), Vec::<String>::new());
        let bad = refusals("trigger \"change-base\" branches=\"Main\"", true);
        assert!(bad[0].contains("lower-case letters"), "{bad:?}");
        let negations = refusals("trigger \"change-base\" branches=\"!old\"", true);
        assert!(
            negations[0].contains("a pattern to negate from"),
            "{negations:?}"
        );
        let env = refusals("secret \"k\" env=\"K\" environment=\"re-view\"", true);
        assert!(env[0].contains("an environment name: letters"), "{env:?}");
        // Without a platform, no configuration holds either (default deny).
        let none = refusals("secret \"k\" env=\"K\" environment=\"review\"", false);
        assert!(none[0].contains("no registered platform"), "{none:?}");
    }
}

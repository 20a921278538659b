//! `reviewer-held-key`: a reviewer holds no model's key. A key given under a variable a model's
//! clients read (a credential of the contract's reviewers) stays with the run, which gives the
//! reviewer a stand-in and the model's API through a proxy; under any other name a `command`
//! reviewer's program holds the key, and a prompt injection in what it reads can make it
//! publish the key in a form no redactor recognises (reversed, encoded). A model's key is known
//! by the variable the secret comes from. A reviewer whose kind has credentials of its own is
//! `reviewer-credential`'s to check, and a secret the stage may not see `secret-scope`'s.

use super::reviewer::{StageReviewer, either};
use super::{Check, Context};
use crate::contract::Role;
use crate::finding::{Confidence, Finding, Label, Severity};
use crate::model::Value;

pub struct ReviewerHeldKey;

impl Check for ReviewerHeldKey {
    fn principle(&self) -> super::Principle {
        super::Principle::Labels
    }
    fn id(&self) -> &'static str {
        "reviewer-held-key"
    }
    fn severity(&self) -> Severity {
        Severity::Warning
    }
    fn summary(&self) -> &'static str {
        "a reviewer is given a model's key only under that model's credential variable, so it holds a stand-in, never the key"
    }
    fn run(&self, cx: &Context<'_>, out: &mut Vec<Finding>) {
        let p = cx.pipeline;
        for stage in &p.stages {
            let Some(reviewer) = StageReviewer::of(cx, stage) else {
                continue;
            };
            if !reviewer.kind.credentials.is_empty() {
                continue;
            }
            let kinds = reviewer.contract.reviewers();
            let proxied: Vec<&str> = kinds
                .iter()
                .flat_map(|k| k.credentials.iter().copied())
                .collect();
            let name = stage.name.value.as_str();
            let kind = reviewer.kind.name;
            for child in &stage.children {
                let slot = reviewer
                    .contract
                    .child_spec(&child.name.value)
                    .is_some_and(|s| s.role == Role::SecretSlot);
                if !slot {
                    continue;
                }
                let Some(var) = child
                    .args
                    .iter()
                    .find(|a| matches!(a.value, Value::String(_)))
                else {
                    continue;
                };
                let Some(secret) = child.args.iter().find_map(|a| match &a.value {
                    Value::Secret(s) => Some(s.as_str()),
                    _ => None,
                }) else {
                    continue;
                };
                let var_name = var.value.as_str().unwrap_or_default();
                if proxied.contains(&var_name) {
                    continue;
                }
                let Some(declared) = p.secret(secret) else {
                    continue;
                };
                if !declared.visible_to.iter().any(|v| v.value == name) {
                    continue;
                }
                let source = declared.env.value.as_str();
                let Some(owner) = kinds.iter().find(|k| k.credentials.contains(&source)) else {
                    continue;
                };
                out.push(
                    Finding::new(
                        self.id(),
                        self.severity(),
                        format!(
                            "the `{kind}` reviewer of `{name}` holds the model key `{secret}` (given as `{var_name}`): a prompt injection can make it publish the key in a form no redactor recognises"
                        ),
                        Label::new(
                            var.span,
                            format!("`{var_name}` is no model's credential: the program gets the key itself"),
                        ),
                    )
                    .related(Label::new(
                        declared.env.span,
                        format!("`{secret}` comes from `{source}`, a credential of `{}`", owner.name),
                    ))
                    .help(format!(
                        "give it as `{source}` (`{}` reads {}): the program then gets a stand-in, and reaches the model's API through the run's proxy, which alone holds the key",
                        owner.name,
                        either(owner.credentials)
                    ))
                    .confidence(Confidence::High)
                    .stage(name),
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    //! Against a made-up stage kind: the check reads the model credentials from the contract's
    //! reviewers and names none of the standard library's.

    use crate::contract::{ChildSpec, Effect, LabelRule, OutputType, ReviewerKind, Role};
    use crate::contract::{StageContract, ValueType};
    use crate::registry::Registry;
    use crate::{CheckOptions, Source, compile, run_checks};

    const KINDS: &[ReviewerKind] = &[
        ReviewerKind {
            name: "plain",
            vendor: None,
            credentials: &[],
        },
        ReviewerKind {
            name: "alpha-cli",
            vendor: Some("alpha"),
            credentials: &["ALPHA_KEY", "ALPHA_TOKEN"],
        },
    ];

    fn findings(children: &str, source_var: &str) -> Vec<String> {
        let words = |w: &[&str]| ValueType::Enum(w.iter().map(|s| (*s).to_string()).collect());
        let mut registry = Registry::with_builtins();
        registry.register(
            StageContract::new("x/review", "reviews")
                .child(
                    ChildSpec::new("reviewer", Role::Config, "which")
                        .arg(words(&["plain", "alpha-cli"]))
                        .required(),
                )
                .child(
                    ChildSpec::new("secret-env", Role::SecretSlot, "a secret")
                        .args(vec![ValueType::String, ValueType::Secret])
                        .repeatable(),
                )
                .output("comment", OutputType::Text, "the comment", LabelRule::all())
                .effect(Effect::Executes)
                .reviewer_kinds(KINDS),
        );
        let text = format!(
            "pipeline \"p\"\nsecret \"s\" env=\"{source_var}\" {{\n    visible-to \"r\"\n}}\nstage \"r\" uses=\"x/review\" {{\n{children}\n}}\n"
        );
        let compiled =
            compile(Source::new("t.kdl", text), &registry, &Default::default()).expect("compiles");
        run_checks(&compiled, &registry, CheckOptions::default())
            .into_iter()
            .filter(|f| f.check == "reviewer-held-key")
            .map(|f| f.message)
            .collect()
    }

    #[test]
    fn a_model_key_under_another_name_is_held() {
        let held = findings(
            "reviewer \"plain\"\nsecret-env \"LLM_KEY\" \"s\"",
            "ALPHA_KEY",
        );
        assert_eq!(
            held,
            [
                "the `plain` reviewer of `r` holds the model key `s` (given as `LLM_KEY`): a prompt injection can make it publish the key in a form no redactor recognises"
            ]
        );
        // Under a model's variable, any model's, the run proxies it.
        for var in ["ALPHA_KEY", "ALPHA_TOKEN"] {
            let given = format!("reviewer \"plain\"\nsecret-env \"{var}\" \"s\"");
            assert!(findings(&given, "ALPHA_KEY").is_empty(), "{var}");
        }
        // A secret that is no model's key, by where it comes from, is not this check's.
        assert!(
            findings(
                "reviewer \"plain\"\nsecret-env \"LLM_KEY\" \"s\"",
                "TRACKER"
            )
            .is_empty()
        );
        // A reviewer with credentials of its own is reviewer-credential's.
        assert!(
            findings(
                "reviewer \"alpha-cli\"\nsecret-env \"LLM_KEY\" \"s\"",
                "ALPHA_KEY"
            )
            .is_empty()
        );
    }
}

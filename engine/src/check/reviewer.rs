//! What the reviewer checks share: a stage's reviewer, found through its contract. A stage kind
//! that runs reviewers lists them (`StageContract::reviewer_kinds`); the stage names one with the
//! first argument of its `reviewer` child. The engine names no reviewer and no vendor.

use super::Context;
use crate::contract::{ReviewerKind, Role, StageContract};
use crate::model::{Child, Segment, Stage, Template, Value};
use crate::span::{Span, Spanned};

/// The child that names the reviewer: `reviewer "claude" model="…" access="…" vendor="…"`.
pub const REVIEWER: &str = "reviewer";
/// Its property that lets a model reviewer use shell and edit tools (`access="write"`).
pub const ACCESS: &str = "access";
/// The `access` that does.
pub const WRITE: &str = "write";
/// Its property naming the vendor of the model behind a reviewer of no fixed vendor.
pub const VENDOR: &str = "vendor";

/// A stage's reviewer.
pub struct StageReviewer<'a> {
    pub contract: &'a StageContract,
    pub child: &'a Child,
    pub kind: &'static ReviewerKind,
    /// The reviewer's name in the file (`"claude"`).
    pub name_span: Span,
    /// The `env` child that moves the reviewer's model API to another host (its kind's
    /// [`ReviewerKind::api_url`]), if the stage has one: then the kind no longer says whose
    /// model answers.
    pub moved_api: Option<Span>,
    /// The base URL that `env` child gives, when it gives one.
    pub moved_to: Option<&'a Spanned<Value>>,
    /// The model keys the stage gives its reviewer, known by their variables (a reviewer kind's
    /// credentials): each key's variable and where it is given.
    pub keys: Vec<(&'a str, Span)>,
}

impl<'a> StageReviewer<'a> {
    /// The reviewer of `stage`, when its kind runs reviewers and names a known one.
    pub fn of(cx: &Context<'a>, stage: &'a Stage) -> Option<Self> {
        let contract = cx.registry.get(&stage.uses.value)?;
        if contract.reviewers().is_empty() {
            return None;
        }
        let child = stage.children_named(REVIEWER).next()?;
        let name = child.args.first()?;
        let kind = contract.reviewer_kind(name.value.as_str()?)?;
        let moved = kind.api_url.and_then(|var| {
            stage
                .children
                .iter()
                .filter(|c| {
                    contract
                        .child_spec(&c.name.value)
                        .is_some_and(|s| s.role == Role::Environment)
                })
                .find(|c| c.args.first().and_then(|a| a.value.as_str()) == Some(var))
        });
        let keys = stage
            .children
            .iter()
            .filter(|c| {
                contract
                    .child_spec(&c.name.value)
                    .is_some_and(|s| s.role == Role::SecretSlot)
            })
            .filter_map(|c| {
                let var = c.args.first()?.value.as_str()?;
                contract.keys_vendor([var])?;
                Some((var, c.args.first()?.span))
            })
            .collect();
        Some(Self {
            contract,
            child,
            kind,
            name_span: name.span,
            moved_api: moved.map(|c| c.name.span),
            moved_to: moved.and_then(|c| c.args.get(1)),
            keys,
        })
    }

    /// Principle 2: a `vendor=` the stage's own model keys contradict is not believed. The
    /// keys the stage gives its reviewer are one vendor's, and not the declared one's: the
    /// key's vendor, its variable and where it is given.
    pub fn contradicted(&self) -> Option<(&'static str, &'a str, Span)> {
        let declared = self.declared_vendor()?;
        let declared = self.contract.vendor_named(declared.value)?;
        let vendor = self
            .contract
            .keys_vendor(self.keys.iter().map(|(var, _)| *var))?;
        let &(var, span) = self.keys.first()?;
        (vendor != declared).then_some((vendor, var, span))
    }

    /// The vendor of the reviewer's model: its kind's while its API is the vendor's own, else
    /// the one `vendor=` declares (a reviewer's name means that reviewer's vendor), with the
    /// span that says so. `None` when neither is known, as the stage decides at run time.
    pub fn vendor(&self) -> Option<Spanned<&'static str>> {
        if let Some(v) = self.kind.vendor
            && self.moved_api.is_none()
        {
            return Some(Spanned::new(v, self.name_span));
        }
        if let Some((vendor, _, span)) = self.contradicted() {
            return Some(Spanned::new(vendor, span));
        }
        let declared = self.declared_vendor()?;
        let vendor = self.contract.vendor_named(declared.value)?;
        Some(Spanned::new(vendor, declared.span))
    }

    /// The `vendor=` of the reviewer, as written.
    pub fn declared_vendor(&self) -> Option<Spanned<&'a str>> {
        let declared = self.child.prop(VENDOR)?;
        Some(Spanned::new(declared.value.as_str()?, declared.span))
    }

    /// The reviewers of another vendor than `vendor` (all whose vendor is known, for `None`).
    pub fn others(&self, vendor: Option<&str>) -> Vec<&'static str> {
        self.contract
            .reviewers()
            .iter()
            .filter(|k| k.vendor.is_some() && k.vendor != vendor)
            .map(|k| k.name)
            .collect()
    }
}

/// The text of a template without interpolations; `None` when it interpolates anything.
pub fn literal(value: &Value) -> Option<String> {
    let Value::Template(Template { segments }) = value else {
        return value.as_str().map(str::to_string);
    };
    let mut text = String::new();
    for segment in segments {
        match segment {
            Segment::Literal { text: t } => text.push_str(t),
            _ => return None,
        }
    }
    Some(text)
}

/// `` `a` ``, `` `a` or `b` ``, `` `a`, `b` or `c` ``.
pub fn either(words: &[&str]) -> String {
    let quoted: Vec<String> = words.iter().map(|w| format!("`{w}`")).collect();
    match quoted.as_slice() {
        [] => String::new(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} or {last}", rest.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    //! The three reviewer checks against a made-up stage kind: nothing in them may depend on the
    //! names of the standard library's reviewers or vendors.

    use crate::contract::{ChildSpec, Effect, LabelAdd, LabelRule, OutputType, ReviewerKind, Role};
    use crate::contract::{StageContract, ValueType};
    use crate::registry::Registry;
    use crate::{CheckOptions, Source, compile, run_checks};

    const KINDS: &[ReviewerKind] = &[
        ReviewerKind {
            name: "plain",
            vendor: None,
            credentials: &[],
            api_url: None,
            settings: None,
        },
        ReviewerKind {
            name: "alpha-cli",
            vendor: Some("alpha"),
            credentials: &["ALPHA_KEY"],
            api_url: None,
            settings: None,
        },
        ReviewerKind {
            name: "beta-cli",
            vendor: Some("beta"),
            credentials: &["BETA_KEY", "BETA_TOKEN"],
            api_url: None,
            settings: None,
        },
    ];

    fn registry() -> Registry {
        let words = |w: &[&str]| ValueType::Enum(w.iter().map(|s| (*s).to_string()).collect());
        let mut r = Registry::with_builtins();
        r.register(StageContract::new("x/source", "reads the change").output(
            "text",
            OutputType::Text,
            "the change's text",
            LabelRule::none().adding(LabelAdd::Untrusted),
        ));
        r.register(
            StageContract::new("x/keep", "keeps with a key")
                .child(ChildSpec::new("key", Role::SecretSlot, "the key").arg(ValueType::Secret)),
        );
        r.register(
            StageContract::new("x/review", "reviews")
                .child(
                    ChildSpec::new("reviewer", Role::Config, "which")
                        .arg(words(&["plain", "alpha-cli", "beta-cli"]))
                        .prop("access", words(&["read-only", "write"]), false, "tools")
                        .prop("vendor", ValueType::String, false, "vendor")
                        .required(),
                )
                .child(
                    ChildSpec::new(
                        "reviewer-vendor-differs-from",
                        Role::Config,
                        "the author's vendor",
                    )
                    .arg(ValueType::Template),
                )
                .child(ChildSpec::new("input", Role::Data, "inputs").many(ValueType::Reference))
                .child(
                    ChildSpec::new("secret-env", Role::SecretSlot, "a secret")
                        .args(vec![ValueType::String, ValueType::Secret])
                        .repeatable(),
                )
                .output("comment", OutputType::Text, "the comment", LabelRule::all())
                .effect(Effect::Executes)
                .reviewer_kinds(KINDS),
        );
        r
    }

    /// The findings of `check` in `text`, as messages.
    fn findings(check: &str, text: &str) -> Vec<String> {
        let registry = registry();
        let compiled =
            compile(Source::new("t.kdl", text), &registry, &Default::default()).expect("compiles");
        run_checks(&compiled, &registry, CheckOptions::default())
            .into_iter()
            .filter(|f| f.check == check)
            .map(|f| f.message)
            .collect()
    }

    fn review(children: &str) -> String {
        format!(
            "pipeline \"p\"\ninput \"who\" env=\"WHO\"\nstage \"src\" uses=\"x/source\"\nstage \"r\" uses=\"x/review\" {{\n{children}\n}}\n"
        )
    }

    #[test]
    fn vendor_is_read_from_the_contract() {
        let vendor = |c: &str| findings("reviewer-vendor", &review(c));
        assert_eq!(
            vendor("reviewer \"beta-cli\"\nreviewer-vendor-differs-from \"alpha\""),
            Vec::<String>::new()
        );
        assert_eq!(
            vendor("reviewer \"beta-cli\"\nreviewer-vendor-differs-from \"alpha-cli\""),
            Vec::<String>::new()
        );
        let same = vendor("reviewer \"alpha-cli\"\nreviewer-vendor-differs-from \"alpha-cli\"");
        assert_eq!(
            same,
            ["in `r`, work written by alpha's model would be reviewed by alpha's model"]
        );
        assert_eq!(
            vendor("reviewer \"plain\" vendor=\"alpha\"\nreviewer-vendor-differs-from \"alpha\"")
                .len(),
            1
        );
        assert!(
            vendor("reviewer \"plain\" vendor=\"beta\"\nreviewer-vendor-differs-from \"alpha\"")
                .is_empty()
        );
        let typo = vendor("reviewer \"beta-cli\"\nreviewer-vendor-differs-from \"alhpa\"");
        assert!(
            typo[0].contains("names `alhpa`, which is no known vendor"),
            "{typo:?}"
        );
        // A vendor-less reviewer cannot be proven, with a literal or an interpolation.
        assert_eq!(
            vendor("reviewer \"plain\"\nreviewer-vendor-differs-from \"alpha\"").len(),
            1
        );
        assert_eq!(
            vendor("reviewer \"plain\"\nreviewer-vendor-differs-from \"{who}\"").len(),
            1
        );
        // An interpolation against a known vendor is the stage's to check at run time.
        assert!(
            vendor("reviewer \"alpha-cli\"\nreviewer-vendor-differs-from \"{who}\"").is_empty()
        );
        assert!(vendor("reviewer \"plain\"").is_empty());
    }

    #[test]
    fn write_access_over_untrusted_data_is_reported() {
        let access = |c: &str| findings("reviewer-access", &review(c));
        let bad = access("reviewer \"alpha-cli\" access=\"write\"\ninput \"src.text\"");
        assert_eq!(
            bad,
            [
                "the `alpha-cli` reviewer of `r` can run commands and write files, and reads text an attacker wrote: `src.text`"
            ]
        );
        assert!(access("reviewer \"alpha-cli\"\ninput \"src.text\"").is_empty());
        assert!(
            access("reviewer \"alpha-cli\" access=\"read-only\"\ninput \"src.text\"").is_empty()
        );
        // It reads no input, but works in the checkout, which is the change's (principle 1).
        assert_eq!(
            access("reviewer \"alpha-cli\" access=\"write\""),
            [
                "the `alpha-cli` reviewer of `r` can run commands and write files, and works in the checkout, whose files the change's author wrote: an instruction in any of them is text the model reads (principle 1, unknown is untrusted)"
            ]
        );
    }

    #[test]
    fn only_the_kinds_credentials_reach_it() {
        let secrets = "secret \"s\" env=\"S\" {\n    visible-to \"r\"\n}\n";
        let cred = |c: &str| findings("reviewer-credential", &format!("{secrets}{}", review(c)));
        assert!(cred("reviewer \"beta-cli\"\nsecret-env \"BETA_TOKEN\" \"s\"").is_empty());
        assert_eq!(
            cred("reviewer \"beta-cli\"\nsecret-env \"ALPHA_KEY\" \"s\"").len(),
            1
        );
        assert_eq!(
            cred("reviewer \"alpha-cli\"\nsecret-env \"OTHER\" \"s\"").len(),
            1
        );
        // A reviewer that lists no credentials is not checked.
        assert!(cred("reviewer \"plain\"\nsecret-env \"OTHER\" \"s\"").is_empty());
        // Out of scope, or a keeping stage's key: secret-scope's finding, not this one's.
        for visible in ["\"k\"", "\"k\" \"r\""] {
            let key = format!(
                "secret \"t\" env=\"T\" {{\n    visible-to {visible}\n}}\nstage \"k\" uses=\"x/keep\" {{\n    key \"t\"\n}}\n"
            );
            let text = format!(
                "{key}{}",
                review("reviewer \"alpha-cli\"\nsecret-env \"T\" \"t\"")
            );
            assert!(
                findings("reviewer-credential", &text).is_empty(),
                "{visible}"
            );
            assert!(!findings("secret-scope", &text).is_empty(), "{visible}");
        }
    }
}

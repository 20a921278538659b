//! Lowering of the declarations: `pipeline`, `input`, `secret`, `forge`, `store`, `allow`.

use kdl::KdlNode;

use super::{Fact, Lowerer};
use crate::contract::{Bound, MAX_TRIES, PropSpec, RETAIN_AGE, RETAIN_COUNT, quote_list};
use crate::duration::parse_duration_ms;
use crate::model::{
    Allow, Forge, Input, InputType, IsolationLevel, OnMissing, Secret, Setting, Store, TrustRule,
    Trusted, TrustedSource, parse_template,
};
use crate::span::{Span, Spanned};
use crate::suggest::did_you_mean;

impl Lowerer<'_> {
    pub(super) fn lower_pipeline(&mut self, node: &KdlNode) {
        let entries = self.entries(node, &"`pipeline`", &[]);
        if let Some(name) = self.name_arg(node, &entries.args, "the pipeline") {
            self.pipeline.name = Some(name);
        }
        self.no_children(node, "`pipeline` (it takes no children)");
    }

    pub(super) fn lower_input(&mut self, node: &KdlNode) {
        let entries = self.entries(node, &"`input`", &["env", "type", "pattern", "default"]);
        let name = self.name_arg(node, &entries.args, "an input");
        let env = entries
            .prop("env")
            .and_then(|e| self.expect_string(e, "`env`"));
        let ty = match entries.prop("type") {
            None => Spanned::new(InputType::String, Span::default()),
            Some(e) => {
                let span = self.value_span(e);
                match self
                    .expect_string(e, "`type`")
                    .as_deref()
                    .map(String::as_str)
                {
                    Some("string") => Spanned::new(InputType::String, span),
                    Some("int") => Spanned::new(InputType::Int, span),
                    Some("bool") => Spanned::new(InputType::Bool, span),
                    Some("sha") => Spanned::new(InputType::Sha, span),
                    Some(other) => {
                        self.fact(Fact::TypeMismatch {
                            span,
                            what: "`type` of an input".into(),
                            expected: "one of \"string\", \"int\", \"bool\" or \"sha\"".into(),
                            found: format!("\"{other}\""),
                            help: None,
                        });
                        Spanned::new(InputType::String, span)
                    }
                    None => Spanned::new(InputType::String, span),
                }
            }
        };
        let pattern = entries
            .prop("pattern")
            .and_then(|e| self.expect_string(e, "`pattern`"));
        if let Some(p) = &pattern
            && let Err(e) = crate::inputs::regex(&p.value)
        {
            self.fact(Fact::TypeMismatch {
                span: p.span,
                what: "`pattern`".into(),
                expected: "a regular expression".into(),
                found: format!(
                    "an invalid one ({})",
                    e.to_string().lines().last().unwrap_or("")
                ),
                help: None,
            });
        }
        let default = entries
            .prop("default")
            .and_then(|e| self.expect_string(e, "`default`"));
        self.no_children(node, "`input` (it takes no children)");
        let Some(name) = name else { return };
        let work = name.value == crate::model::WORK;
        if work || super::BUILTIN_INPUTS.iter().any(|(b, _)| *b == name.value) {
            self.fact(Fact::Duplicate {
                span: name.span,
                first: name.span,
                what: if work {
                    "input `work`: `{work}` is each stage's own work folder".into()
                } else {
                    format!("input `{}`, which the forge sets", name.value)
                },
                name: name.value.clone(),
            });
            return;
        }
        if env.is_none() && default.is_none() {
            self.fact(Fact::Missing {
                span: name.span,
                what: "property `env` or `default`".into(),
                node: format!("input `{}`", name.value),
                help: Some(format!(
                    "say where the value comes from: `input \"{}\" env=\"VARIABLE\"`",
                    name.value
                )),
            });
        }
        if self.declare("input", &name) {
            self.pipeline.inputs.push(Input {
                name,
                env,
                ty,
                pattern,
                default,
                builtin: false,
            });
        }
    }

    pub(super) fn lower_secret(&mut self, node: &KdlNode) {
        let entries = self.entries(
            node,
            &"`secret`",
            &["env", "min-bytes", "on-missing", "can", "environment"],
        );
        let name = self.name_arg(node, &entries.args, "a secret");
        let env = entries
            .prop("env")
            .and_then(|e| self.expect_string(e, "`env`"));
        let min_bytes = entries
            .prop("min-bytes")
            .and_then(|e| self.expect_count(e, "`min-bytes`"));
        let on_missing = match entries.prop("on-missing") {
            None => Spanned::new(OnMissing::Fail, Span::default()),
            Some(e) => {
                let span = self.value_span(e);
                match self
                    .expect_string(e, "`on-missing`")
                    .as_deref()
                    .map(String::as_str)
                {
                    Some("fail") => Spanned::new(OnMissing::Fail, span),
                    Some("disable") => Spanned::new(OnMissing::Disable, span),
                    Some(other) => {
                        self.fact(Fact::TypeMismatch {
                            span,
                            what: "`on-missing`".into(),
                            expected: "\"fail\" or \"disable\"".into(),
                            found: format!("\"{other}\""),
                            help: None,
                        });
                        Spanned::new(OnMissing::Fail, span)
                    }
                    None => Spanned::new(OnMissing::Fail, span),
                }
            }
        };
        let can = entries
            .prop("can")
            .and_then(|e| self.permission_list(e, "`can`"));
        let environment = entries
            .prop("environment")
            .and_then(|e| self.expect_string(e, "`environment`"));
        let mut visible_to = Vec::new();
        let mut visible_to_span = None;
        if let Some(children) = node.children() {
            for child in children.nodes() {
                let child_span: Span = child.name().span().into();
                if child.name().value() != "visible-to" {
                    self.fact(Fact::UnknownNode {
                        span: child_span,
                        name: child.name().value().into(),
                        context: "`secret`".into(),
                        candidates: did_you_mean(child.name().value(), ["visible-to"]),
                    });
                    continue;
                }
                if let Some(first) = visible_to_span {
                    self.fact(Fact::Duplicate {
                        span: child_span,
                        first,
                        what: "`visible-to` list".into(),
                        name: "visible-to".into(),
                    });
                    continue;
                }
                visible_to_span = Some(child.span().into());
                let list = self.entries(child, &"`visible-to`", &[]);
                for arg in list.args {
                    if let Some(stage) = self.expect_string(arg, "a stage in `visible-to`") {
                        visible_to.push(stage);
                    }
                }
            }
        }
        let Some(name) = name else { return };
        let Some(env) = env else {
            self.fact(Fact::Missing {
                span: name.span,
                what: "property `env`".into(),
                node: format!("secret `{}`", name.value),
                help: Some(
                    "name the environment variable that holds it: `env=\"VARIABLE\"`".into(),
                ),
            });
            return;
        };
        if self.declare("secret", &name) {
            self.pipeline.secrets.push(Secret {
                name,
                env,
                min_bytes,
                on_missing,
                visible_to,
                visible_to_span,
                can,
                environment,
            });
        }
    }

    pub(super) fn lower_forge(&mut self, node: &KdlNode) {
        let span: Span = node.name().span().into();
        if let Some(first) = self.pipeline.forge.as_ref().map(|f| f.kind.span) {
            self.fact(Fact::Duplicate {
                span,
                first,
                what: "`forge` node".into(),
                name: "forge".into(),
            });
            return;
        }
        // The kind decides which properties the node takes: read it first.
        let first_arg = node.entries().iter().find(|e| e.name().is_none());
        let contract = first_arg
            .and_then(|e| e.value().as_string())
            .and_then(|k| self.registry.forge(k));
        let known: Vec<&str> = contract.map_or_else(Vec::new, |c| {
            c.props.iter().map(|p| p.name.as_str()).collect()
        });
        let what = match contract {
            Some(c) => format!("a `{}` forge", c.kind),
            None => "`forge`".to_string(),
        };
        let entries = self.entries(node, &what, &known);
        let Some(kind) = self.name_arg(node, &entries.args, "the forge") else {
            return;
        };
        let Some(contract) = self.registry.forge(&kind.value) else {
            let kinds: Vec<String> = self.registry.forges().map(|f| f.kind.clone()).collect();
            let candidates = did_you_mean(&kind.value, kinds.iter().map(String::as_str));
            self.fact(Fact::TypeMismatch {
                span: kind.span,
                what: "the forge".into(),
                expected: format!("one of {}", quote_list(&kinds)),
                found: format!("\"{}\"", kind.value),
                help: crate::suggest::help_text(&candidates),
            });
            return;
        };
        let token_prop = contract.token.clone();
        let specs = contract.props.clone();
        let mut token = None;
        let mut settings = Vec::new();
        for (name, entry) in &entries.props {
            if token_prop.as_deref() == Some(*name) {
                token = self.expect_string(entry, &format!("`{name}`"));
                continue;
            }
            if let Some(setting) = self.setting(&specs, name, entry) {
                // The forge opens before any stage runs: only inputs can fill its templates.
                if let crate::model::Value::Template(t) = &setting.value.value
                    && let Some(r) = t.references().next()
                {
                    self.fact(Fact::TypeMismatch {
                        span: r.span,
                        what: format!("`{name}` of the forge"),
                        expected: "a string that interpolates inputs only".into(),
                        found: format!("the reference `{{{r}}}`"),
                        help: Some("the forge opens before any stage runs".into()),
                    });
                    continue;
                }
                settings.push(setting);
            }
        }
        self.no_children(node, "`forge` (it takes no children)");
        self.pipeline.forge = Some(Forge {
            kind,
            token,
            settings,
        });
    }

    /// One property typed by a kind's contract.
    fn setting(
        &mut self,
        specs: &[PropSpec],
        name: &str,
        entry: &kdl::KdlEntry,
    ) -> Option<Setting> {
        let spec = specs.iter().find(|p| p.name == name)?;
        let value = self.typed_value(entry, &spec.ty, &format!("`{name}`"))?;
        let name_span = entry.name().map_or(value.span, |n| Span::from(n.span()));
        Some(Setting {
            name: Spanned::new(name.to_string(), name_span),
            value,
        })
    }

    pub(super) fn lower_store(&mut self, node: &KdlNode) {
        // The kind decides which properties and trust facts the node takes: read it first.
        let kind_entry = node
            .entries()
            .iter()
            .find(|e| e.name().is_some_and(|n| n.value() == "kind"));
        let kind = match kind_entry {
            None => self
                .registry
                .default_store()
                .map(|k| Spanned::new(k.to_string(), Span::default())),
            Some(e) => {
                let span = self.value_span(e);
                match self.expect_string(e, "`kind`") {
                    Some(k) if self.registry.store(&k.value).is_some() => {
                        Some(Spanned::new(k.value, span))
                    }
                    Some(k) => {
                        let kinds: Vec<String> =
                            self.registry.stores().map(|s| s.kind.clone()).collect();
                        let candidates = did_you_mean(&k.value, kinds.iter().map(String::as_str));
                        self.fact(Fact::TypeMismatch {
                            span,
                            what: "`kind` of a store".into(),
                            expected: format!("one of {}", quote_list(&kinds)),
                            found: format!("\"{}\"", k.value),
                            help: crate::suggest::help_text(&candidates),
                        });
                        None
                    }
                    None => None,
                }
            }
        };
        let contract = kind
            .as_ref()
            .and_then(|k| self.registry.store(&k.value))
            .cloned();
        let mut known = vec!["kind", "name"];
        if let Some(c) = &contract {
            known.extend(c.props.iter().map(|p| p.name.as_str()));
        }
        let entries = self.entries(node, &"`store`", &known);
        let name = self.name_arg(node, &entries.args, "a store");
        let blob_name = entries.prop("name").and_then(|e| {
            let text = self.expect_string(e, "`name`")?;
            let content = self.string_content_span(e);
            let t = self.template(&text.value, content, text.span, "`name` of a store")?;
            // The name is resolved before any stage runs: only inputs can fill it.
            if let Some(r) = t.value.references().next() {
                self.fact(Fact::TypeMismatch {
                    span: r.span,
                    what: "`name` of a store".into(),
                    expected: "a string that interpolates inputs only".into(),
                    found: format!("the reference `{{{r}}}`"),
                    help: Some("a store's name is fixed before any stage runs".into()),
                });
                return None;
            }
            Some(t)
        });
        let mut settings = Vec::new();
        if let Some(c) = &contract {
            for (name, entry) in &entries.props {
                if let Some(setting) = self.setting(&c.props, name, entry) {
                    settings.push(setting);
                }
            }
        }
        let children_known: Vec<&'static str> = contract.as_ref().map_or_else(
            || vec!["trust", "max-tries", "max-run-lookups", "retain"],
            |c| c.children(),
        );
        let mut store = Store {
            name: Spanned::new(String::new(), Span::default()),
            kind: kind.unwrap_or_else(|| Spanned::new(String::new(), Span::default())),
            blob_name,
            settings,
            trust: Vec::new(),
            max_tries: None,
            max_run_lookups: None,
            retain_count: None,
            retain_age: None,
        };
        if let Some(children) = node.children() {
            let mut seen: Vec<(&str, Span)> = Vec::new();
            for child in children.nodes() {
                let child_name = child.name().value();
                let child_span: Span = child.name().span().into();
                if child_name != "trust" {
                    if let Some((_, first)) = seen.iter().find(|(n, _)| *n == child_name) {
                        self.fact(Fact::Duplicate {
                            span: child_span,
                            first: *first,
                            what: format!("`{child_name}` of a store"),
                            name: child_name.into(),
                        });
                        continue;
                    }
                    seen.push((child_name, child_span));
                }
                if !children_known.contains(&child_name) {
                    self.fact(Fact::UnknownNode {
                        span: child_span,
                        name: child_name.into(),
                        context: match &contract {
                            Some(c) => format!("a `{}` store", c.kind),
                            None => "`store`".into(),
                        },
                        candidates: did_you_mean(child_name, children_known.iter().copied()),
                    });
                    continue;
                }
                match child_name {
                    "trust" => {
                        let trust_specs: Vec<PropSpec> =
                            contract.as_ref().map_or_else(Vec::new, |c| c.trust.clone());
                        let known: Vec<&str> =
                            trust_specs.iter().map(|p| p.name.as_str()).collect();
                        let e = self.entries(child, &"`trust`", &known);
                        if e.props.is_empty() {
                            self.fact(Fact::Missing {
                                span: child_span,
                                what: format!(
                                    "a producer ({})",
                                    known
                                        .iter()
                                        .map(|k| format!("`{k}`"))
                                        .collect::<Vec<_>>()
                                        .join(", ")
                                ),
                                node: "`trust`".into(),
                                help: Some("an empty rule would trust every producer".into()),
                            });
                            continue;
                        }
                        let mut props = Vec::new();
                        for (key, entry) in &e.props {
                            if let Some(setting) = self.setting(&trust_specs, key, entry) {
                                props.push(setting);
                            }
                        }
                        store.trust.push(TrustRule {
                            span: child.span().into(),
                            props,
                        });
                    }
                    "max-tries" | "max-run-lookups" => {
                        let e = self.entries(child, &format_args!("`{child_name}`"), &[]);
                        let what = format!("`{child_name}`");
                        let value = self
                            .single_arg(child, &e.args, child_name)
                            .and_then(|a| self.expect_count(a, &what));
                        // Look-ups are the kind's to bound (it takes the child only if it
                        // looks producers up, so it has one).
                        let bound = if child_name == "max-tries" {
                            Some(MAX_TRIES)
                        } else {
                            contract.as_ref().and_then(|c| c.lookup_bound)
                        };
                        if let (Some(v), Some(bound)) = (&value, bound) {
                            self.bounded(v.value, v.span, &bound, &what);
                        }
                        if child_name == "max-tries" {
                            store.max_tries = value;
                        } else {
                            store.max_run_lookups = value;
                        }
                    }
                    "retain" => {
                        let e = self.entries(child, &"`retain`", &["count", "age"]);
                        store.retain_count = e
                            .prop("count")
                            .and_then(|v| self.expect_count(v, "`count`"));
                        store.retain_age = e.prop("age").and_then(|v| {
                            let text = self.expect_string(v, "`age`")?;
                            self.duration(&text, "`age`")
                        });
                        if let Some(c) = &store.retain_count {
                            self.bounded(c.value, c.span, &RETAIN_COUNT, "`count`");
                        }
                        if let Some(a) = &store.retain_age {
                            self.bounded(a.value, a.span, &RETAIN_AGE, "`age`");
                        }
                    }
                    // Every other name was reported above.
                    _ => {}
                }
            }
        }
        let Some(name) = name else { return };
        store.name = name;
        if self.declare("store", &store.name) {
            self.pipeline.stores.push(store);
        }
    }

    /// `isolation "strict"` or `isolation "best-effort"`.
    pub(super) fn lower_isolation(&mut self, node: &KdlNode) {
        let span: Span = node.name().span().into();
        if let Some(first) = self.pipeline.isolation.as_ref().map(|i| i.span) {
            self.fact(Fact::Duplicate {
                span,
                first,
                what: "`isolation` node".into(),
                name: "isolation".into(),
            });
            return;
        }
        let entries = self.entries(node, &"`isolation`", &[]);
        self.no_children(node, "`isolation` (it takes no children)");
        let Some(arg) = self.single_arg(node, &entries.args, "isolation") else {
            return;
        };
        let Some(text) = self.expect_string(arg, "`isolation`") else {
            return;
        };
        let level = match text.value.as_str() {
            "strict" => IsolationLevel::Strict,
            "best-effort" => IsolationLevel::BestEffort,
            other => {
                self.fact(Fact::TypeMismatch {
                    span: text.span,
                    what: "`isolation`".into(),
                    expected: "\"strict\" or \"best-effort\"".into(),
                    found: format!("\"{other}\""),
                    help: None,
                });
                return;
            }
        };
        self.pipeline.isolation = Some(Spanned::new(level, text.span));
    }

    pub(super) fn lower_allow(&mut self, node: &KdlNode) -> Option<Allow> {
        let entries = self.entries(node, &"`allow`", &["finding", "reason"]);
        let span: Span = node.span().into();
        let check = self
            .single_arg(node, &entries.args, "allow")
            .and_then(|a| self.expect_string(a, "the check id of `allow`"));
        let finding = entries
            .prop("finding")
            .and_then(|e| self.expect_string(e, "`finding`"));
        let reason = entries
            .prop("reason")
            .and_then(|e| self.expect_string(e, "`reason`"));
        self.no_children(node, "`allow` (it takes no children)");
        Some(Allow {
            span,
            check: check?,
            finding,
            reason,
        })
    }

    /// `trusted "checkout" reason="…"`, `trusted "input" name="…" reason="…"`: the reason is
    /// mandatory, and a blank one is none; an input is named, the checkout is not.
    pub(super) fn lower_trusted(&mut self, node: &KdlNode) -> Option<Trusted> {
        let entries = self.entries(node, &"`trusted`", &["name", "reason"]);
        let span: Span = node.span().into();
        self.no_children(node, "`trusted` (it takes no children)");
        let source = self
            .single_arg(node, &entries.args, "trusted")
            .and_then(|a| self.expect_string(a, "what `trusted` names"));
        let reason = entries
            .prop("reason")
            .and_then(|e| self.expect_string(e, "`reason`"))
            .filter(|r| !r.value.trim().is_empty());
        let input = entries
            .prop("name")
            .and_then(|e| self.expect_string(e, "the input `trusted` names"));
        let source = source?;
        let source = match source.value.as_str() {
            "checkout" => Spanned::new(TrustedSource::Checkout, source.span),
            "input" => Spanned::new(TrustedSource::Input, source.span),
            other => {
                self.fact(Fact::TypeMismatch {
                    span: source.span,
                    what: "what `trusted` names".into(),
                    expected: "\"checkout\" or \"input\"".into(),
                    found: format!("\"{other}\""),
                    help: None,
                });
                return None;
            }
        };
        match (source.value, &input) {
            (TrustedSource::Input, None) => {
                self.fact(Fact::Missing {
                    span,
                    what: "the input it vouches for (`name=\"…\"`)".into(),
                    node: "`trusted \"input\"`".into(),
                    help: Some(
                        "name one input read from the environment: `trusted \"input\" name=\"branch\" reason=\"…\"`"
                            .into(),
                    ),
                });
                return None;
            }
            (TrustedSource::Checkout, Some(name)) => {
                self.fact(Fact::TypeMismatch {
                    span: name.span,
                    what: "`name` of `trusted \"checkout\"`".into(),
                    expected: "no `name` (it names an input: `trusted \"input\" name=…`)".into(),
                    found: format!("\"{}\"", name.value),
                    help: None,
                });
                return None;
            }
            _ => {}
        }
        let Some(reason) = reason else {
            self.fact(Fact::Missing {
                span,
                what: "a reason (`reason=\"…\"`, not blank)".into(),
                node: "`trusted`".into(),
                help: Some(
                    "say why what it names is the pipeline's own: `trusted \"checkout\" reason=\"the job checks out the base branch\"`"
                        .into(),
                ),
            });
            return None;
        };
        Some(Trusted {
            span,
            source,
            input,
            reason,
        })
    }

    /// The one argument of a node such as `max-tries 10`.
    pub(super) fn single_arg<'a>(
        &mut self,
        node: &KdlNode,
        args: &[&'a kdl::KdlEntry],
        what: &str,
    ) -> Option<&'a kdl::KdlEntry> {
        match args {
            [one] => Some(*one),
            [] => {
                self.fact(Fact::Missing {
                    span: node.name().span().into(),
                    what: "an argument".into(),
                    node: format!("`{what}`"),
                    help: None,
                });
                None
            }
            [first, rest @ ..] => {
                for extra in rest {
                    let span = self.value_span(extra);
                    self.fact(Fact::TypeMismatch {
                        span,
                        what: format!("`{what}`"),
                        expected: "one argument".into(),
                        found: "another argument".into(),
                        help: None,
                    });
                }
                Some(*first)
            }
        }
    }

    pub(super) fn duration(&mut self, text: &Spanned<String>, what: &str) -> Option<Spanned<u64>> {
        match parse_duration_ms(&text.value) {
            Some(ms) => Some(Spanned::new(ms, text.span)),
            None => {
                self.fact(Fact::TypeMismatch {
                    span: text.span,
                    what: what.into(),
                    expected: "a duration such as \"90s\", \"45m\" or \"1h30m\"".into(),
                    found: format!("\"{}\"", text.value),
                    help: None,
                });
                None
            }
        }
    }

    /// Reports `value` when `bound` does not admit it; the value is kept either way, so that an
    /// `allow` of the finding runs with what the file says.
    pub(super) fn bounded(&mut self, value: u64, span: Span, bound: &Bound, what: &str) {
        if !bound.admits(value) {
            self.fact(Fact::OutOfBound {
                span,
                what: what.into(),
                found: value,
                bound: *bound,
            });
        }
    }

    pub(super) fn template(
        &mut self,
        text: &str,
        content: Span,
        whole: Span,
        what: &str,
    ) -> Option<Spanned<crate::model::Template>> {
        match parse_template(text, content) {
            Ok(t) => Some(Spanned::new(t, whole)),
            Err(e) => {
                self.fact(Fact::TypeMismatch {
                    span: e.span,
                    what: what.into(),
                    expected: "a string with `{input}` or `{stage.output}` interpolations".into(),
                    found: e.message,
                    help: None,
                });
                None
            }
        }
    }
}

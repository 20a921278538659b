//! Lowering of `stage` nodes: the common properties, then each child typed by the stage's
//! contract.

use kdl::{KdlEntry, KdlNode, KdlValue};

use super::{Fact, Lowerer};
use crate::contract::{StageContract, ValueType, quote_list};
use crate::model::{
    Child, FallbackOverride, NetEntry, OnError, Permission, Prop, Reference, Stage, Value,
    parse_expr,
};
use crate::permission::parse_scoped;
use crate::span::{Span, Spanned};
use crate::suggest::did_you_mean;

const STAGE_PROPS: &[&str] = &[
    "uses",
    "when",
    "on-error",
    "timeout",
    "permissions",
    "network",
];
const COMMON_CHILDREN: &[&str] = &["needs", "allow", "fallback"];

impl<'s> Lowerer<'s> {
    pub(super) fn lower_stage(&mut self, node: &KdlNode) {
        self.stage_needs.clear();
        let entries = self.entries(node, &"`stage`", STAGE_PROPS);
        let head: Span = node.name().span().into();
        let name = self.name_arg(node, &entries.args, "a stage");
        let label = StageLabel {
            name: name.as_ref().map(|n| n.value.as_str()),
            kind: None,
        };

        let registry: &'s crate::registry::Registry = self.registry;
        let mut contract: Option<&'s StageContract> = None;
        let uses = match entries.prop("uses") {
            None => {
                self.fact(Fact::Missing {
                    span: name.as_ref().map_or(head, |n| n.span),
                    what: "property `uses`".into(),
                    node: label.to_string(),
                    help: Some(format!(
                        "say what kind of stage it is, e.g. `uses=\"std/review\"` (kinds: {})",
                        registry.kinds().collect::<Vec<_>>().join(", ")
                    )),
                });
                None
            }
            Some(e) => self.expect_string(e, "`uses`").inspect(|uses| {
                contract = registry.get(&uses.value);
                if contract.is_none() {
                    self.fact(Fact::UnknownStageKind {
                        span: uses.span,
                        name: uses.value.clone(),
                        candidates: did_you_mean(&uses.value, registry.kinds()),
                    });
                }
            }),
        };

        let when = entries.prop("when").and_then(|e| {
            let text = self.expect_string(e, "`when`")?;
            let content = self.string_content_span(e);
            match parse_expr(&text.value, content) {
                Ok(expr) => Some(Spanned::new(expr, text.span)),
                Err(err) => {
                    self.fact(Fact::TypeMismatch {
                        span: err.span,
                        what: "`when`".into(),
                        expected: "a condition such as \"scan.clean && review.commented\"".into(),
                        found: err.message,
                        help: None,
                    });
                    None
                }
            }
        });
        let on_error = match entries.prop("on-error") {
            None => Spanned::new(OnError::Fail, Span::default()),
            Some(e) => {
                let span = self.value_span(e);
                let value = match self
                    .expect_string(e, "`on-error`")
                    .as_deref()
                    .map(String::as_str)
                {
                    Some("fail") | None => OnError::Fail,
                    Some("fallback") => OnError::Fallback,
                    Some("skip") => OnError::Skip,
                    Some(other) => {
                        self.fact(Fact::TypeMismatch {
                            span,
                            what: "`on-error`".into(),
                            expected: "\"fail\", \"fallback\" or \"skip\"".into(),
                            found: format!("\"{other}\""),
                            help: None,
                        });
                        OnError::Fail
                    }
                };
                Spanned::new(value, span)
            }
        };
        let timeout_ms = entries.prop("timeout").and_then(|e| {
            let text = self.expect_string(e, "`timeout`")?;
            let d = self.duration(&text, "`timeout`")?;
            if d.value == 0 {
                self.fact(Fact::TypeMismatch {
                    span: d.span,
                    what: "`timeout`".into(),
                    expected: "a duration longer than zero".into(),
                    found: format!("\"{}\"", text.value),
                    help: Some("leave `timeout` out for no limit".into()),
                });
                return None;
            }
            Some(d)
        });
        let permissions = entries
            .prop("permissions")
            .and_then(|e| self.permission_list(e, "`permissions`"))
            .map(|list| list.value)
            .unwrap_or_default();

        let network = entries
            .prop("network")
            .map(|e| self.network(e))
            .unwrap_or_default();
        let mut stage = Stage {
            name: name
                .clone()
                .unwrap_or_else(|| Spanned::new(String::new(), head)),
            span: head,
            uses: uses.unwrap_or_else(|| Spanned::new(String::new(), head)),
            needs: Vec::new(),
            when,
            on_error,
            timeout_ms,
            network,
            permissions,
            fallback: Vec::new(),
            allows: Vec::new(),
            children: Vec::new(),
        };
        if let Some(children) = node.children() {
            let context = StageLabel {
                kind: contract.map(|c| c.kind.as_str()),
                ..label
            };
            let mut seen: Vec<(&str, Span)> = Vec::new();
            for child in children.nodes() {
                self.lower_stage_child(child, contract, &context, &mut stage, &mut seen);
            }
        }
        if let Some(child_name) = contract.and_then(|c| c.outputs_from_child.as_deref()) {
            self.check_declared_outputs(&stage, child_name);
        }
        if let Some(contract) = contract {
            for spec in contract.children.iter().filter(|c| c.required) {
                if !stage.children.iter().any(|c| c.name.value == spec.name) {
                    self.fact(Fact::Missing {
                        span: stage.name.span,
                        what: format!("child `{}`", spec.name),
                        node: StageLabel {
                            kind: Some(contract.kind.as_str()),
                            ..label
                        }
                        .to_string(),
                        help: Some(format!("{}: {}", spec.name, spec.doc)),
                    });
                }
            }
        }
        let Some(name) = name else { return };
        if self.declare("stage", &name) {
            self.pipeline.stages.push(stage);
        }
    }

    fn lower_stage_child<'d>(
        &mut self,
        child: &'d KdlNode,
        contract: Option<&StageContract>,
        context: &StageLabel<'_>,
        stage: &mut Stage,
        seen: &mut Vec<(&'d str, Span)>,
    ) {
        let child_name = child.name().value();
        let child_span: Span = child.name().span().into();
        match child_name {
            "needs" => {
                let e = self.entries(child, &"`needs`", &[]);
                if e.args.is_empty() {
                    self.fact(Fact::Missing {
                        span: child_span,
                        what: "the name of a stage".into(),
                        node: "`needs`".into(),
                        help: None,
                    });
                }
                for arg in e.args {
                    if let Some(s) = self.expect_string(arg, "a stage in `needs`") {
                        if let Some(&first) = self.stage_needs.get(&s.value) {
                            self.fact(Fact::Duplicate {
                                span: s.span,
                                first,
                                what: format!("stage `{}` in `needs`", s.value),
                                name: s.value.clone(),
                            });
                            continue;
                        }
                        self.stage_needs.insert(s.value.clone(), s.span);
                        stage.needs.push(s);
                    }
                }
                self.no_children(child, "`needs`");
                return;
            }
            "allow" => {
                if let Some(allow) = self.lower_allow(child) {
                    stage.allows.push(allow);
                }
                return;
            }
            "fallback" => {
                let e = self.entries_any(child, "`fallback`");
                for (key, entry) in e {
                    let key_span: Span = entry.name().map_or(child_span, |n| n.span().into());
                    if let Some(first) = stage.fallback.iter().find(|o| o.output.value == key) {
                        self.fact(Fact::Duplicate {
                            span: key_span,
                            first: first.output.span,
                            what: format!("fallback `{key}`"),
                            name: key.into(),
                        });
                        continue;
                    }
                    if let Some(value) = self.expect_bool(entry, &format!("fallback `{key}`")) {
                        stage.fallback.push(FallbackOverride {
                            output: Spanned::new(key.to_string(), key_span),
                            value,
                        });
                    }
                }
                self.no_children(child, "`fallback`");
                return;
            }
            _ => {}
        }
        let Some(contract) = contract else {
            // Without a contract the child cannot be typed; the unknown kind is reported already.
            return;
        };
        let Some(spec) = contract.child_spec(child_name) else {
            let names = contract
                .children
                .iter()
                .map(|c| c.name.as_str())
                .chain(COMMON_CHILDREN.iter().copied());
            self.fact(Fact::UnknownNode {
                span: child_span,
                name: child_name.into(),
                context: context.to_string(),
                candidates: did_you_mean(child_name, names),
            });
            return;
        };
        if !spec.repeatable
            && let Some((_, first)) = seen.iter().find(|(n, _)| *n == child_name)
        {
            self.fact(Fact::Duplicate {
                span: child_span,
                first: *first,
                what: format!("`{child_name}` of {context}"),
                name: child_name.into(),
            });
            return;
        }
        seen.push((child_name, child_span));
        let mut known: Vec<&str> = spec.props.iter().map(|p| p.name.as_str()).collect();
        if spec.open_props.is_some() {
            known.extend(
                child
                    .entries()
                    .iter()
                    .filter_map(|e| e.name())
                    .map(|n| n.value()),
            );
        }
        let e = self.entries(child, &format_args!("`{child_name}`"), &known);
        let mut lowered = Child {
            name: Spanned::new(child_name.into(), child_span),
            args: Vec::new(),
            props: Vec::new(),
        };
        if e.args.len() < spec.min_args {
            self.fact(Fact::Missing {
                span: child_span,
                what: match spec.min_args - e.args.len() {
                    1 => "an argument".into(),
                    n => format!("{n} arguments"),
                },
                node: format!("`{child_name}`"),
                help: Some(format!("{child_name}: {}", spec.doc)),
            });
        }
        for (index, arg) in e.args.iter().enumerate() {
            let Some(ty) = spec.arg_type(index) else {
                let span = self.value_span(arg);
                self.fact(Fact::TypeMismatch {
                    span,
                    what: format!("`{child_name}`"),
                    expected: match spec.max_args {
                        Some(0) => "no arguments".into(),
                        Some(1) => "one argument".into(),
                        Some(n) => format!("at most {n} arguments"),
                        None => "fewer arguments".into(),
                    },
                    found: "another argument".into(),
                    help: None,
                });
                continue;
            };
            if let Some(v) = self.typed_value(arg, ty, &format!("`{child_name}`")) {
                lowered.args.push(v);
            }
        }
        for spec_prop in &spec.props {
            match e.prop(&spec_prop.name) {
                Some(entry) => {
                    let key_span: Span = entry.name().map_or(child_span, |n| n.span().into());
                    let what = format!("`{}` of `{child_name}`", spec_prop.name);
                    if let Some(value) = self.typed_value(entry, &spec_prop.ty, &what) {
                        lowered.props.push(Prop {
                            name: Spanned::new(spec_prop.name.clone(), key_span),
                            value,
                        });
                    }
                }
                None if spec_prop.required => self.fact(Fact::Missing {
                    span: child_span,
                    what: format!("property `{}`", spec_prop.name),
                    node: format!("`{child_name}`"),
                    help: Some(format!("{}: {}", spec_prop.name, spec_prop.doc)),
                }),
                None => {}
            }
        }
        if let Some(ty) = &spec.open_props {
            for (key, entry) in &e.props {
                if spec.prop_spec(key).is_some() {
                    continue;
                }
                let key_span: Span = entry.name().map_or(child_span, |n| n.span().into());
                let what = format!("`{key}` of `{child_name}`");
                if let Some(value) = self.typed_value(entry, ty, &what) {
                    lowered.props.push(Prop {
                        name: Spanned::new((*key).to_string(), key_span),
                        value,
                    });
                }
            }
        }
        self.no_children(child, &format!("`{child_name}`"));
        stage.children.push(lowered);
    }

    /// Outputs declared by children (`run`'s `output "name"`): unique, referable, not `ok`.
    fn check_declared_outputs(&mut self, stage: &Stage, child_name: &str) {
        let mut declared: Vec<&Spanned<Value>> = Vec::new();
        for c in stage.children_named(child_name) {
            let Some(arg) = c.args.first() else { continue };
            let Value::String(out) = &arg.value else {
                continue;
            };
            let builtin = crate::contract::BUILTIN_OUTPUTS
                .iter()
                .any(|(n, _, _)| n == out);
            if builtin || !super::is_identifier(out) {
                self.fact(Fact::TypeMismatch {
                    span: arg.span,
                    what: "the name of an output".into(),
                    expected: "a name of letters, digits, `-` and `_`, other than `ok`".into(),
                    found: format!("\"{out}\""),
                    help: builtin.then(|| "`ok` is every stage's builtin output".to_string()),
                });
                continue;
            }
            if let Some(first) = declared.iter().find(|d| d.value == arg.value) {
                self.fact(Fact::Duplicate {
                    span: arg.span,
                    first: first.span,
                    what: format!("output `{out}`"),
                    name: out.clone(),
                });
                continue;
            }
            declared.push(arg);
        }
    }

    /// All properties of a node whose keys are free (`fallback clean=#false`), checking only
    /// that none is given twice and that there are no arguments.
    fn entries_any<'a>(&mut self, node: &'a KdlNode, what: &str) -> Vec<(&'a str, &'a KdlEntry)> {
        let mut out: Vec<(&'a str, &'a KdlEntry)> = Vec::new();
        for entry in node.entries() {
            match entry.name() {
                None => {
                    let span = self.value_span(entry);
                    self.fact(Fact::TypeMismatch {
                        span,
                        what: what.into(),
                        expected: "properties `output=#true|#false`".into(),
                        found: "an argument".into(),
                        help: None,
                    });
                }
                Some(name) => {
                    if let Some((_, first)) = out.iter().find(|(n, _)| *n == name.value()) {
                        self.fact(Fact::Duplicate {
                            span: name.span().into(),
                            first: first.span().into(),
                            what: format!("property `{}` of {what}", name.value()),
                            name: name.value().into(),
                        });
                        continue;
                    }
                    out.push((name.value(), entry));
                }
            }
        }
        out
    }

    /// `network="443 8443"`: the TCP ports a stage's child may connect to, in the host's network;
    /// or `network="api.example.com:443"`: hosts and ports it reaches through reviewflow's egress
    /// proxy (docs/egress.md). One stage, one way out: the two forms do not mix.
    fn network(&mut self, entry: &KdlEntry) -> Vec<Spanned<NetEntry>> {
        let Some(text) = self.expect_string(entry, "`network`") else {
            return Vec::new();
        };
        let mut entries: Vec<Spanned<NetEntry>> = Vec::new();
        for word in text.value.split_whitespace() {
            match parse_net_entry(word) {
                Some(e) => entries.push(Spanned::new(e, text.span)),
                None => self.fact(Fact::TypeMismatch {
                    span: text.span,
                    what: "`network`".into(),
                    expected: "TCP ports (\"443\") or hosts with their port (\"api.example.com:443\"), separated by spaces".into(),
                    found: format!("\"{word}\""),
                    help: Some("leave `network` out for no network at all".into()),
                }),
            }
        }
        let hosts = entries.iter().filter(|e| e.value.host.is_some()).count();
        if hosts > 0 && hosts < entries.len() {
            self.fact(Fact::TypeMismatch {
                span: text.span,
                what: "`network`".into(),
                expected: "either TCP ports to any host (\"443\") or hosts with their port (\"api.example.com:443\"), not both".into(),
                found: format!("\"{}\"", text.value),
                help: Some("a bare port shares the host's network, which makes the hosts no limit: name the host of every port".into()),
            });
        }
        entries
    }

    /// Converts one KDL value to the contract's type, reporting a mismatch.
    pub(super) fn typed_value(
        &mut self,
        entry: &KdlEntry,
        ty: &ValueType,
        what: &str,
    ) -> Option<Spanned<Value>> {
        let span = self.value_span(entry);
        let value = match ty {
            // Every integer a stage takes is a count or a size, within its bound.
            ValueType::Int(bound) => {
                let n = self.expect_count(entry, what)?;
                self.bounded(n.value, n.span, bound, what);
                Value::Int(i64::try_from(n.value).unwrap_or(i64::MAX))
            }
            ValueType::Bool => Value::Bool(self.expect_bool(entry, what)?.value),
            ValueType::String => Value::String(self.expect_string(entry, what)?.value),
            ValueType::Secret => Value::Secret(self.expect_string(entry, what)?.value),
            ValueType::Store => Value::Store(self.expect_string(entry, what)?.value),
            ValueType::Duration(bound) => {
                let text = self.expect_string(entry, what)?;
                let ms = self.duration(&text, what)?;
                self.bounded(ms.value, ms.span, bound, what);
                Value::Duration(ms.value)
            }
            ValueType::Template => {
                let text = self.expect_string(entry, what)?;
                let content = self.string_content_span(entry);
                Value::Template(self.template(&text.value, content, span, what)?.value)
            }
            ValueType::Reference => {
                let text = self.expect_string(entry, what)?;
                match Reference::parse(&text.value, span) {
                    Some(r) => Value::Reference(r),
                    None => {
                        self.fact(Fact::TypeMismatch {
                            span,
                            what: what.into(),
                            expected: ty.describe(),
                            found: format!("\"{}\"", text.value),
                            help: Some(
                                "name a stage and one of its outputs, e.g. \"gather.diff\"".into(),
                            ),
                        });
                        return None;
                    }
                }
            }
            ValueType::Enum(words) => {
                let text = self.expect_string(entry, what)?;
                if !words.contains(&text.value) {
                    let candidates = did_you_mean(&text.value, words.iter().map(String::as_str));
                    self.fact(Fact::TypeMismatch {
                        span,
                        what: what.into(),
                        expected: format!("one of {}", quote_list(words)),
                        found: format!("\"{}\"", text.value),
                        help: crate::suggest::help_text(&candidates),
                    });
                    return None;
                }
                Value::String(text.value)
            }
        };
        if matches!(entry.value(), KdlValue::Null) {
            return None;
        }
        Some(Spanned::new(value, span))
    }
}

/// "stage `name` (kind)", formatted only when a finding needs it.
#[derive(Clone, Copy)]
struct StageLabel<'a> {
    name: Option<&'a str>,
    kind: Option<&'a str>,
}

impl std::fmt::Display for StageLabel<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.name {
            Some(n) => write!(f, "stage `{n}`")?,
            None => f.write_str("stage")?,
        }
        if let Some(k) = self.kind {
            write!(f, " ({k})")?;
        }
        Ok(())
    }
}

impl Lowerer<'_> {
    /// A `permissions`-style string: `scope:access` words separated by spaces, each checked
    /// (a bad one is a `type-mismatch` and is left out). `None` when the value is not a string;
    /// the span is the value's.
    pub(super) fn permission_list(
        &mut self,
        entry: &KdlEntry,
        what: &str,
    ) -> Option<Spanned<Vec<Spanned<Permission>>>> {
        let text = self.expect_string(entry, what)?;
        let content = self.string_content_span(entry);
        let mut permissions = Vec::new();
        let mut offset = 0;
        for word in text.value.split(' ') {
            let span = if offset + word.len() <= content.len {
                content.sub(offset, word.len())
            } else {
                text.span
            };
            offset += word.len() + 1;
            if word.is_empty() {
                continue;
            }
            match parse_scoped(self.registry, word) {
                Ok(p) => permissions.push(Spanned::new(p, span)),
                Err(message) => self.fact(Fact::TypeMismatch {
                    span,
                    what: what.into(),
                    expected:
                        "space-separated permissions such as \"pull-requests:write checks:write\""
                            .into(),
                    found: format!("`{word}`"),
                    help: Some(message),
                }),
            }
        }
        Some(Spanned::new(permissions, text.span))
    }
}

/// One word of `network`: a port (1 to 65535), or `host:port` where the host is a name of
/// letters, digits, `-` and `.`, or an address (`[::1]:443` for IPv6).
fn parse_net_entry(word: &str) -> Option<NetEntry> {
    let port = |p: &str| p.parse::<u16>().ok().filter(|&p| p > 0);
    if let Some(p) = port(word) {
        return Some(NetEntry {
            host: None,
            port: p,
        });
    }
    let (host, p) = if let Some(rest) = word.strip_prefix('[') {
        let (host, p) = rest.split_once("]:")?;
        host.parse::<std::net::Ipv6Addr>().ok()?;
        (host, p)
    } else {
        word.rsplit_once(':')?
    };
    let name = |h: &str| {
        !h.is_empty()
            && h.len() <= 253
            && h.split('.').all(|l| {
                !l.is_empty()
                    && l.len() <= 63
                    && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
                    && !l.starts_with('-')
            })
    };
    if !(name(host) || host.parse::<std::net::Ipv6Addr>().is_ok()) {
        return None;
    }
    Some(NetEntry {
        host: Some(host.to_ascii_lowercase()),
        port: port(p)?,
    })
}

#[cfg(test)]
mod tests {
    use super::parse_net_entry;

    #[test]
    fn network_words_are_ports_or_hosts_with_their_port() {
        let e = |w: &str| parse_net_entry(w).map(|e| e.to_string());
        assert_eq!(e("443").as_deref(), Some("443"));
        assert_eq!(
            e("API.example.com:443").as_deref(),
            Some("api.example.com:443")
        );
        assert_eq!(e("127.0.0.1:8080").as_deref(), Some("127.0.0.1:8080"));
        assert_eq!(e("[::1]:443").as_deref(), Some("[::1]:443"));
        for bad in [
            "0",
            "65536",
            "api.example.com",
            "api.example.com:0",
            ":443",
            "-evil.com:443",
            "a..b:443",
            "host/path:443",
            "https://api.example.com:443",
            "[not-v6]:443",
            "*.example.com:443",
        ] {
            assert_eq!(e(bad), None, "{bad}");
        }
    }

    #[test]
    fn ports_and_hosts_do_not_mix_in_one_stage() {
        let registry = crate::Registry::with_builtins();
        let text = "pipeline \"p\"\nstage \"a\" uses=\"run\" network=\"443 api.example.com:443\" {\n    command \"true\"\n}\n";
        let compiled = crate::compile(
            crate::Source::new("t.kdl", text.to_owned()),
            &registry,
            &Default::default(),
        );
        let findings = match compiled {
            Ok(c) => crate::run_checks(&c, &registry, crate::CheckOptions::default()),
            Err(e) => e.findings,
        };
        assert!(
            findings
                .iter()
                .any(|f| f.check == "type-mismatch" && f.message.contains("not both")),
            "{findings:?}"
        );
    }
}

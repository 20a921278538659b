//! The identity of a run: what it really worked on. A resume is admitted only when the parent's
//! identity matches, field by field.
//!
//! The digest is SHA-256 of [`IDENTITY_FORMAT`], a NUL, and the identity's canonical JSON: the
//! struct's fields in declaration order, every map sorted by key, every value typed. A change of
//! format changes the salt, so identities of two formats never compare equal.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::digest::sha256;
use crate::model::{Pipeline, Value};

/// The salt of the digest, and the `format` field.
pub const IDENTITY_FORMAT: &str = "reviewflow-identity/v2";

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Identity {
    /// [`IDENTITY_FORMAT`].
    pub format: String,
    /// Digest of the canonical pipeline (spans dropped, reviewer provider/model removed).
    pub pipeline: String,
    /// Resolved inputs, except `repo` (the `repository` field) and `run` (differs per run).
    pub inputs: BTreeMap<String, String>,
    /// Resolved commits, by role (`base`, `head`), as the forge resolved them.
    pub commits: BTreeMap<String, String>,
    /// The forge repository.
    pub repository: String,
    /// How the run was started (`local`, `ci`).
    pub mode: String,
    /// Each reviewer's provider and model, by stage.
    pub reviewers: BTreeMap<String, Reviewer>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Reviewer {
    pub provider: String,
    pub model: Option<String>,
}

impl std::fmt::Display for Reviewer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.model {
            Some(m) => write!(f, "{}/{m}", self.provider),
            None => write!(f, "{}", self.provider),
        }
    }
}

/// A field that differs between two identities.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Difference {
    /// `pipeline`, `inputs.project`, `commits.head`, `repository`, `mode`, `reviewers.review`.
    pub field: String,
    pub parent: Option<String>,
    pub current: Option<String>,
}

impl Difference {
    /// Only a reviewer's provider/model: admitted with `--allow-model-change`.
    pub fn is_model_change(&self) -> bool {
        self.field.starts_with("reviewers.")
    }
}

impl std::fmt::Display for Difference {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let show = |v: &Option<String>| v.clone().unwrap_or_else(|| "(none)".into());
        write!(
            f,
            "{}: {} → {}",
            self.field,
            show(&self.parent),
            show(&self.current)
        )
    }
}

impl Identity {
    pub fn new(
        pipeline: &Pipeline,
        inputs: &BTreeMap<String, String>,
        commits: BTreeMap<String, String>,
        mode: &str,
    ) -> Self {
        let mut inputs = inputs.clone();
        let repository = inputs.remove("repo").unwrap_or_default();
        inputs.remove("run");
        Self {
            format: IDENTITY_FORMAT.into(),
            pipeline: pipeline_digest(pipeline),
            inputs,
            commits,
            repository,
            mode: mode.into(),
            reviewers: reviewers(pipeline),
        }
    }

    pub fn digest(&self) -> String {
        let json = serde_json::to_string(self).unwrap_or_default();
        let mut bytes = Vec::with_capacity(json.len() + IDENTITY_FORMAT.len() + 1);
        bytes.extend_from_slice(IDENTITY_FORMAT.as_bytes());
        bytes.push(0);
        bytes.extend_from_slice(json.as_bytes());
        sha256(&bytes)
    }

    /// Every field of `self` (the parent's) that differs in `current`.
    pub fn differences(&self, current: &Identity) -> Vec<Difference> {
        let mut out = Vec::new();
        let mut one = |field: &str, a: Option<String>, b: Option<String>| {
            if a != b {
                out.push(Difference {
                    field: field.into(),
                    parent: a,
                    current: b,
                });
            }
        };
        one(
            "format",
            Some(self.format.clone()),
            Some(current.format.clone()),
        );
        one(
            "pipeline",
            Some(self.pipeline.clone()),
            Some(current.pipeline.clone()),
        );
        one(
            "repository",
            Some(self.repository.clone()),
            Some(current.repository.clone()),
        );
        one("mode", Some(self.mode.clone()), Some(current.mode.clone()));
        map_diff("inputs", &self.inputs, &current.inputs, &mut one);
        map_diff("commits", &self.commits, &current.commits, &mut one);
        let a: BTreeMap<String, String> = self
            .reviewers
            .iter()
            .map(|(k, v)| (k.clone(), v.to_string()))
            .collect();
        let b: BTreeMap<String, String> = current
            .reviewers
            .iter()
            .map(|(k, v)| (k.clone(), v.to_string()))
            .collect();
        map_diff("reviewers", &a, &b, &mut one);
        out
    }
}

fn map_diff(
    prefix: &str,
    a: &BTreeMap<String, String>,
    b: &BTreeMap<String, String>,
    one: &mut impl FnMut(&str, Option<String>, Option<String>),
) {
    let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
    keys.sort();
    keys.dedup();
    for k in keys {
        one(
            &format!("{prefix}.{k}"),
            a.get(k).cloned(),
            b.get(k).cloned(),
        );
    }
}

/// Each stage's `reviewer` child: its first argument is the provider, `model=` the model.
pub fn reviewers(pipeline: &Pipeline) -> BTreeMap<String, Reviewer> {
    let mut out = BTreeMap::new();
    for stage in &pipeline.stages {
        if let Some(child) = stage.children_named("reviewer").next() {
            let provider = child
                .args
                .first()
                .and_then(|a| a.value.as_str().map(str::to_string))
                .unwrap_or_default();
            let model = child.prop("model").and_then(|m| match &m.value {
                Value::String(s) => Some(s.clone()),
                Value::Template(t) => Some(t.source_text()),
                _ => None,
            });
            out.insert(stage.name.value.clone(), Reviewer { provider, model });
        }
    }
    out
}

/// Digest of the pipeline's model with every span dropped (layout and comments do not count)
/// and each reviewer's provider and model removed (they are the `reviewers` field).
///
/// The model is hashed part by part (the top-level fields, then each stage's own fields, each
/// child's name, each argument and each property), every part as span-stripped canonical JSON
/// with its length before it. So memory is that of the largest single value, not of the whole
/// model as JSON (which cost about 3 KB per argument).
pub fn pipeline_digest(pipeline: &Pipeline) -> String {
    use sha2::{Digest as _, Sha256};
    let mut hasher = Sha256::new();
    let mut feed = |label: &str, part: serde_json::Value| {
        let mut part = part;
        strip_spans(&mut part);
        let text = canonical(&part);
        for piece in [label.as_bytes(), text.as_bytes()] {
            hasher.update((piece.len() as u64).to_le_bytes());
            hasher.update(piece);
        }
    };
    // Destructured so that a new field cannot be left out of the digest unnoticed.
    let Pipeline {
        name,
        inputs,
        secrets,
        forge,
        stores,
        stages,
        allows,
        isolation,
        // The events that may start a run do not change what the run does.
        triggers: _,
        // What `check` is told to trust does not change what the run does (as `triggers`).
        trusted: _,
        ..
    } = pipeline;
    feed("name", json(name));
    feed("inputs", json(inputs));
    feed("secrets", json(secrets));
    feed("forge", json(forge));
    feed("stores", json(stores));
    feed("allows", json(allows));
    feed("isolation", json(isolation));
    for stage in stages {
        let crate::model::Stage {
            name,
            span: _,
            uses,
            needs,
            when,
            on_error,
            timeout_ms,
            permissions,
            network,
            fallback,
            allows,
            children,
        } = stage;
        feed("stage", json(name));
        feed("uses", json(uses));
        feed("needs", json(needs));
        feed("when", json(when));
        feed("on_error", json(on_error));
        feed("timeout_ms", json(timeout_ms));
        feed("permissions", json(permissions));
        feed("network", json(network));
        feed("fallback", json(fallback));
        feed("allows", json(allows));
        for child in children {
            let crate::model::Child { name, args, props } = child;
            let reviewer = name.value == "reviewer";
            feed("child", json(name));
            for (i, arg) in args.iter().enumerate() {
                if !(reviewer && i == 0) {
                    feed("arg", json(arg));
                }
            }
            for prop in props {
                if !(reviewer && prop.name.value == "model") {
                    feed("prop", json(prop));
                }
            }
        }
    }
    format!("sha256:{}", crate::hex::encode(&hasher.finalize()))
}

/// A part of the model as JSON (the model's types always serialise; `Null` is never reached).
fn json<T: Serialize>(part: &T) -> serde_json::Value {
    serde_json::to_value(part).unwrap_or_default()
}

/// `Spanned` serializes as `{value, span}`: keep the value; drop other `span` fields.
fn strip_spans(v: &mut serde_json::Value) {
    match v {
        serde_json::Value::Object(map) => {
            map.retain(|k, _| k != "span" && !k.ends_with("_span"));
            if map.len() == 1
                && let Some(inner) = map.remove("value")
            {
                *v = inner;
                strip_spans(v);
                return;
            }
            for (_, x) in map.iter_mut() {
                strip_spans(x);
            }
        }
        serde_json::Value::Array(a) => a.iter_mut().for_each(strip_spans),
        _ => {}
    }
}

/// JSON with object keys sorted, whatever map serde_json was built with.
fn canonical(v: &serde_json::Value) -> String {
    let mut out = Vec::new();
    write_canonical(v, &mut out);
    // Only JSON was written: always UTF-8.
    String::from_utf8(out).unwrap_or_default()
}

/// [`canonical`], written into one buffer.
fn write_canonical(v: &serde_json::Value, out: &mut Vec<u8>) {
    match v {
        serde_json::Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push(b'{');
            for (n, k) in keys.into_iter().enumerate() {
                if n > 0 {
                    out.push(b',');
                }
                // Writing a string or a value into a Vec cannot fail.
                let _ = serde_json::to_writer(&mut *out, k);
                out.push(b':');
                write_canonical(&map[k], out);
            }
            out.push(b'}');
        }
        serde_json::Value::Array(a) => {
            out.push(b'[');
            for (n, x) in a.iter().enumerate() {
                if n > 0 {
                    out.push(b',');
                }
                write_canonical(x, out);
            }
            out.push(b']');
        }
        other => {
            let _ = serde_json::to_writer(&mut *out, other);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn digest(text: &str) -> String {
        let compiled = crate::compile::compile(
            crate::Source::new("p.kdl", text),
            &crate::Registry::with_builtins(),
            &crate::syntax::Limits::default(),
        )
        .expect("compiles");
        pipeline_digest(&compiled.pipeline)
    }

    /// The digest is kept in manifests and compared across runs: the text it hashes is the
    /// same as that of the earlier form of `canonical`, which built a string per value.
    #[test]
    fn canonical_text_is_that_of_the_earlier_form() {
        fn earlier(v: &serde_json::Value) -> String {
            match v {
                serde_json::Value::Object(map) => {
                    let mut keys: Vec<&String> = map.keys().collect();
                    keys.sort();
                    let parts: Vec<String> = keys
                        .iter()
                        .map(|k| {
                            format!(
                                "{}:{}",
                                serde_json::Value::String((*k).clone()),
                                earlier(&map[*k])
                            )
                        })
                        .collect();
                    format!("{{{}}}", parts.join(","))
                }
                serde_json::Value::Array(a) => {
                    format!("[{}]", a.iter().map(earlier).collect::<Vec<_>>().join(","))
                }
                other => other.to_string(),
            }
        }
        let value = serde_json::json!({
            "z": [1, -2.5, true, null, "é \"q\" \\ \n\u{1}"],
            "a": {"b\"k": [], "a": {}, "c": [{"y": 1, "x": [[]]}]},
            "": "",
            "m": 18446744073709551615u64,
        });
        assert_eq!(canonical(&value), earlier(&value));
    }

    #[test]
    fn the_digest_ignores_layout_and_sees_every_value() {
        let base =
            digest("pipeline \"p\"\nstage \"a\" uses=\"run\" {\n  command \"echo\" \"x\"\n}\n");
        let relaid = digest(
            "// a comment\npipeline \"p\"\n\n\nstage \"a\"   uses=\"run\" {\n    command \"echo\"    \"x\" /* why */\n}\n",
        );
        assert_eq!(base, relaid);
        for changed in [
            "pipeline \"q\"\nstage \"a\" uses=\"run\" {\n  command \"echo\" \"x\"\n}\n",
            "pipeline \"p\"\nstage \"b\" uses=\"run\" {\n  command \"echo\" \"x\"\n}\n",
            "pipeline \"p\"\nstage \"a\" uses=\"run\" {\n  command \"echo\" \"y\"\n}\n",
            "pipeline \"p\"\nstage \"a\" uses=\"run\" {\n  command \"echo\" \"x\" \"\"\n}\n",
            "pipeline \"p\"\nstage \"a\" uses=\"run\" on-error=\"skip\" {\n  command \"echo\" \"x\"\n}\n",
            "pipeline \"p\"\nstage \"a\" uses=\"run\" {\n  command \"echo\"\n  command \"x\"\n}\n",
        ] {
            assert_ne!(base, digest(changed), "{changed}");
        }
    }

    #[test]
    fn the_reviewer_provider_and_model_are_left_out() {
        use crate::model::{Child, Prop};
        use crate::span::{Span, Spanned};
        fn at<T>(value: T) -> Spanned<T> {
            Spanned::new(value, Span::new(0, 0))
        }
        let with = |provider: &str, model: &str, vendor: &str| {
            let mut compiled = crate::compile::compile(
                crate::Source::new(
                    "p.kdl",
                    "pipeline \"p\"\nstage \"a\" uses=\"run\" {\n  command \"true\"\n}\n",
                ),
                &crate::Registry::with_builtins(),
                &crate::syntax::Limits::default(),
            )
            .expect("compiles");
            let prop = |name: &str, value: &str| Prop {
                name: at(name.to_owned()),
                value: at(Value::String(value.to_owned())),
            };
            compiled.pipeline.stages[0].children.push(Child {
                name: at("reviewer".to_owned()),
                args: vec![at(Value::String(provider.to_owned()))],
                props: vec![prop("model", model), prop("vendor", vendor)],
            });
            pipeline_digest(&compiled.pipeline)
        };
        assert_eq!(with("claude", "opus", "v"), with("codex", "gpt", "v"));
        assert_ne!(with("claude", "opus", "v"), with("claude", "opus", "w"));
    }
}

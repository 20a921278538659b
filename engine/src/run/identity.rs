//! The identity of a run: what it really worked on. A resume is admitted only when the parent's
//! identity matches, field by field.
//!
//! The digest is SHA-256 of [`IDENTITY_FORMAT`], a NUL, and the identity's canonical JSON: the
//! struct's fields in declaration order, every map sorted by key, every value typed. A change of
//! format changes the salt, so identities of two formats never compare equal.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::value::sha256;
use crate::model::{Pipeline, Value};

/// The salt of the digest, and the `format` field.
pub const IDENTITY_FORMAT: &str = "reviewflow-identity/v1";

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
pub fn pipeline_digest(pipeline: &Pipeline) -> String {
    let mut value = serde_json::to_value(pipeline).unwrap_or_default();
    strip_spans(&mut value);
    if let Some(stages) = value.get_mut("stages").and_then(|s| s.as_array_mut()) {
        for stage in stages {
            let Some(children) = stage.get_mut("children").and_then(|c| c.as_array_mut()) else {
                continue;
            };
            for child in children {
                if child.get("name") == Some(&serde_json::json!("reviewer")) {
                    if let Some(args) = child.get_mut("args").and_then(|a| a.as_array_mut())
                        && !args.is_empty()
                    {
                        args.remove(0);
                    }
                    if let Some(props) = child.get_mut("props").and_then(|p| p.as_array_mut()) {
                        props.retain(|p| p.get("name") != Some(&serde_json::json!("model")));
                    }
                }
            }
        }
    }
    // to_string of a Value orders object keys by the map's order; make it canonical by sorting.
    sha256(canonical(&value).as_bytes())
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
                        canonical(&map[*k])
                    )
                })
                .collect();
            format!("{{{}}}", parts.join(","))
        }
        serde_json::Value::Array(a) => {
            format!(
                "[{}]",
                a.iter().map(canonical).collect::<Vec<_>>().join(",")
            )
        }
        other => other.to_string(),
    }
}

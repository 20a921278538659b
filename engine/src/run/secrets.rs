//! The run's secrets: read once from the environment, checked against `min-bytes`, and scoped
//! to the stages that may hold them.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt as _;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::exec::redact::{RedactError, Redactor};
use crate::exec::secret::SecretValue;
use crate::flow::Flow;
use crate::model::{Input, OnMissing, Pipeline, Secret};

/// Whether a secret was available (never its value).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum SecretState {
    Present,
    Missing,
    /// Set, but shorter than its `min-bytes`: treated as missing.
    TooShort,
    /// Set, but empty (whatever its `min-bytes`, `0` included): treated as missing.
    Empty,
}

impl SecretState {
    /// How a message says this state after the secret's name: `secret `k` is set but empty`.
    pub fn says(self) -> &'static str {
        match self {
            SecretState::Present => "is set",
            SecretState::Missing => "is not set",
            SecretState::TooShort => "is too short",
            SecretState::Empty => "is set but empty",
        }
    }
}

/// Every secret of the run. `Debug` shows names and states only.
pub struct RunSecrets {
    values: BTreeMap<String, SecretValue>,
    /// The values of secrets treated as missing (too short) whose variable an input reads: no
    /// stage holds them as secrets, but the input carries them, so they are redacted all the same.
    read_by_inputs: BTreeMap<String, SecretValue>,
    pub states: BTreeMap<String, SecretState>,
}

impl std::fmt::Debug for RunSecrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map().entries(self.states.iter()).finish()
    }
}

impl RunSecrets {
    pub fn read(pipeline: &Pipeline, lookup: &dyn Fn(&str) -> Option<OsString>) -> Self {
        let mut values = BTreeMap::new();
        let mut read_by_inputs = BTreeMap::new();
        let mut states = BTreeMap::new();
        for secret in &pipeline.secrets {
            let name = secret.name.value.clone();
            let value = lookup(&secret.env.value).map(|v| SecretValue::new(v.into_vec()));
            let min = secret.min_bytes.as_ref().map_or(0, |m| m.value);
            // An empty value is never a secret; it is said as "empty", not as "shorter than
            // `min-bytes`", which `min-bytes=0` would contradict.
            let state = match &value {
                None => SecretState::Missing,
                Some(v) if v.is_empty() => SecretState::Empty,
                Some(v) if (v.len() as u64) < min => SecretState::TooShort,
                Some(_) => SecretState::Present,
            };
            match (state, value) {
                (SecretState::Present, Some(v)) => {
                    values.insert(name.clone(), v);
                }
                (_, Some(v)) if input_reading(pipeline, secret).is_some() => {
                    read_by_inputs.insert(name.clone(), v);
                }
                _ => {}
            }
            states.insert(name, state);
        }
        Self {
            values,
            read_by_inputs,
            states,
        }
    }

    /// Secrets that are missing under `on-missing="fail"`: the run cannot start.
    pub fn missing_required(&self, pipeline: &Pipeline) -> Vec<String> {
        pipeline
            .secrets
            .iter()
            .filter(|s| s.on_missing.value == OnMissing::Fail && !self.present(&s.name.value))
            .map(|s| s.name.value.clone())
            .collect()
    }

    pub fn present(&self, name: &str) -> bool {
        self.values.contains_key(name)
    }

    /// A redactor of every present value, and of the value of a secret treated as missing whose
    /// variable an input reads.
    pub fn redactor(&self) -> Result<Redactor, RedactError> {
        Redactor::new(
            self.values
                .iter()
                .chain(&self.read_by_inputs)
                .map(|(n, v)| (n.clone(), v.expose_secret().to_vec())),
        )
    }

    /// Every value the redactor searches, for `::add-mask::`.
    pub fn values(&self) -> impl Iterator<Item = &SecretValue> {
        self.values.values().chain(self.read_by_inputs.values())
    }

    /// What the run's records (`manifest.json`, the identity, an input error) show of input
    /// `name`'s `value`. An input that reads a secret's variable, or whose value is a secret's,
    /// shows as that secret's marker; any other shows with every secret in it redacted. The
    /// stages still get the real value.
    pub fn shown_input(
        &self,
        pipeline: &Pipeline,
        redactor: &Redactor,
        name: &str,
        value: &str,
    ) -> String {
        let variable = pipeline
            .input(name)
            .and_then(|i| i.env.as_ref())
            .and_then(|env| pipeline.secrets.iter().find(|s| s.env.value == env.value));
        if let Some(secret) = variable {
            return Redactor::marker(&secret.name.value);
        }
        let trimmed = value.as_bytes().trim_ascii();
        let equal = self
            .values
            .iter()
            .chain(&self.read_by_inputs)
            .find(|(_, v)| !trimmed.is_empty() && v.expose_secret().trim_ascii() == trimmed);
        if let Some((secret, _)) = equal {
            return Redactor::marker(secret);
        }
        String::from_utf8_lossy(&redactor.redact(value.as_bytes())).into_owned()
    }

    /// [`Self::shown_input`] of every input.
    pub fn shown_inputs(
        &self,
        pipeline: &Pipeline,
        redactor: &Redactor,
        inputs: &BTreeMap<String, String>,
    ) -> BTreeMap<String, String> {
        inputs
            .iter()
            .map(|(n, v)| (n.clone(), self.shown_input(pipeline, redactor, n, v)))
            .collect()
    }

    /// The secrets stage `i` holds (`Flow::held`: named in a secret slot, or the forge token of a
    /// stage that talks to the forge), filtered by `visible-to`, and whether any of them is
    /// missing (the stage is then disabled).
    pub fn for_stage(
        &self,
        pipeline: &Pipeline,
        flow: &Flow,
        i: usize,
    ) -> (StageSecrets, Vec<String>) {
        let stage = &pipeline.stages[i];
        let mut scope = StageSecrets::default();
        let mut missing = Vec::new();
        for &k in flow.held.get(i).map(Vec::as_slice).unwrap_or_default() {
            let secret = &pipeline.secrets[k];
            let visible = secret
                .visible_to
                .iter()
                .any(|v| v.value == stage.name.value);
            if !visible {
                continue;
            }
            match self.values.get(&secret.name.value) {
                Some(v) => scope.insert(&secret.name.value, v.clone()),
                None => missing.push(secret.name.value.clone()),
            }
        }
        (scope, missing)
    }
}

/// The secrets in a stage's scope, by secret name. `Debug` shows names only.
#[derive(Clone, Default)]
pub struct StageSecrets {
    values: BTreeMap<String, SecretValue>,
}

impl StageSecrets {
    pub(crate) fn insert(&mut self, name: &str, value: SecretValue) {
        self.values.insert(name.into(), value);
    }

    pub fn get(&self, name: &str) -> Option<&SecretValue> {
        self.values.get(name)
    }

    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.values.keys().map(String::as_str)
    }
}

impl std::fmt::Debug for StageSecrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.values.keys()).finish()
    }
}

/// The first input that reads `secret`'s variable.
fn input_reading<'a>(pipeline: &'a Pipeline, secret: &Secret) -> Option<&'a Input> {
    pipeline
        .inputs
        .iter()
        .find(|i| i.env.as_ref().is_some_and(|e| e.value == secret.env.value))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::Registry;
    use crate::source::Source;
    use crate::syntax::Limits;

    fn states(min: &str, value: Option<&'static str>) -> SecretState {
        let text = format!(
            "pipeline \"p\"\nsecret \"key\" env=\"KEY\" {min} on-missing=\"disable\" {{\n    visible-to \"s\"\n}}\nstage \"s\" uses=\"run\" {{\n    command \"true\"\n    secret-env \"K\" \"key\"\n}}\n"
        );
        let compiled = crate::compile(
            Source::new("p.kdl", text),
            &Registry::with_builtins(),
            &Limits::default(),
        )
        .map_err(|_| "compile")
        .unwrap();
        let lookup = move |name: &str| {
            (name == "KEY")
                .then_some(value)
                .flatten()
                .map(OsString::from)
        };
        RunSecrets::read(&compiled.pipeline, &lookup).states["key"]
    }

    #[test]
    fn an_empty_value_is_set_but_empty_whatever_min_bytes_says() {
        for min in ["", "min-bytes=0", "min-bytes=1", "min-bytes=32"] {
            let state = states(min, Some(""));
            assert_eq!(state, SecretState::Empty, "{min}");
            assert_eq!(state.says(), "is set but empty");
        }
    }

    #[test]
    fn shorter_than_min_bytes_is_too_short_and_nothing_is_missing() {
        assert_eq!(states("min-bytes=32", Some("short")), SecretState::TooShort);
        assert_eq!(states("min-bytes=0", Some("x")), SecretState::Present);
        assert_eq!(states("", Some("x")), SecretState::Present);
        assert_eq!(states("min-bytes=0", None), SecretState::Missing);
        assert_eq!(SecretState::TooShort.says(), "is too short");
        assert_eq!(SecretState::Missing.says(), "is not set");
    }
}

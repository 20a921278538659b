//! Pipeline inputs: from their `env` variable or their `default`, validated against `type` and
//! `pattern` before anything runs.

use std::collections::BTreeMap;
use std::ffi::OsString;

use crate::model::{InputType, Pipeline};

/// Why an input cannot be used (exit 2).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InputError {
    #[error("input `{input}` is not set: set the environment variable {env}")]
    Missing { input: String, env: String },
    #[error("input `{input}` has no value: it names no environment variable and has no default")]
    NoSource { input: String },
    #[error("input `{input}` (from {source_name}) is not UTF-8")]
    NotUtf8 { input: String, source_name: String },
    #[error("input `{input}` (from {source_name}) is not {expected}: {value:?}")]
    BadType {
        input: String,
        source_name: String,
        expected: &'static str,
        value: String,
    },
    #[error("input `{input}` (from {source_name}) does not match `{pattern}`: {value:?}")]
    NoMatch {
        input: String,
        source_name: String,
        pattern: String,
        value: String,
    },
    #[error("input `{input}` has a pattern that is not a regular expression: {message}")]
    BadPattern { input: String, message: String },
}

impl InputError {
    /// The same error, its value (if it has one) replaced by `show(input, value)`: a record
    /// never shows what the redactor would hide.
    pub fn redacted(self, show: impl Fn(&str, &str) -> String) -> Self {
        match self {
            Self::BadType {
                input,
                source_name,
                expected,
                value,
            } => Self::BadType {
                value: show(&input, &value),
                input,
                source_name,
                expected,
            },
            Self::NoMatch {
                input,
                source_name,
                pattern,
                value,
            } => Self::NoMatch {
                value: show(&input, &value),
                input,
                source_name,
                pattern,
            },
            other => other,
        }
    }
}

/// Resolves every input: builtin ones from `builtins`, declared ones from `lookup` (the
/// environment) or their default.
pub fn resolve_inputs(
    pipeline: &Pipeline,
    builtins: &BTreeMap<String, String>,
    lookup: &dyn Fn(&str) -> Option<OsString>,
) -> Result<BTreeMap<String, String>, Vec<InputError>> {
    let mut out = BTreeMap::new();
    let mut errors = Vec::new();
    for input in &pipeline.inputs {
        let name = input.name.value.clone();
        if input.builtin {
            out.insert(
                name.clone(),
                builtins.get(&name).cloned().unwrap_or_default(),
            );
            continue;
        }
        let from_env = input
            .env
            .as_ref()
            .and_then(|e| lookup(&e.value).map(|v| (e, v)));
        let (value, source_name) = match (from_env, &input.default) {
            (Some((env, v)), _) => match v.into_string() {
                Ok(v) => (v, format!("${}", env.value)),
                Err(_) => {
                    errors.push(InputError::NotUtf8 {
                        input: name,
                        source_name: format!("${}", env.value),
                    });
                    continue;
                }
            },
            (None, Some(d)) => (d.value.clone(), "its default".to_string()),
            (None, None) => {
                errors.push(match &input.env {
                    Some(env) => InputError::Missing {
                        input: name,
                        env: env.value.clone(),
                    },
                    None => InputError::NoSource { input: name },
                });
                continue;
            }
        };
        if let Err(e) = validate(input, &value, source_name) {
            errors.push(e);
            continue;
        }
        out.insert(name, value);
    }
    if errors.is_empty() {
        Ok(out)
    } else {
        Err(errors)
    }
}

/// Whether `value`, from `source_name`, is one `input` accepts: its `type`, then its `pattern`.
/// What `run` refuses an input for, and what `check` reports of a `default` (`run-refusal`):
/// one rule, one wording.
pub fn validate(
    input: &crate::model::Input,
    value: &str,
    source_name: String,
) -> Result<(), InputError> {
    validate_compiled(input, compile_pattern(input)?.as_ref(), value, source_name)
}

/// [`validate`] with the input's pattern compiled beforehand ([`compile_pattern`]), for a caller
/// that tries many values: compiling a pattern costs more than matching it.
pub fn validate_compiled(
    input: &crate::model::Input,
    pattern: Option<&regex::Regex>,
    value: &str,
    source_name: String,
) -> Result<(), InputError> {
    let name = input.name.value.clone();
    if let Some(expected) = type_error(input.ty.value, value) {
        return Err(InputError::BadType {
            input: name,
            source_name,
            expected,
            value: value.to_owned(),
        });
    }
    if let (Some(pattern), Some(re)) = (&input.pattern, pattern)
        && !re.is_match(value)
    {
        return Err(InputError::NoMatch {
            input: name,
            source_name,
            pattern: pattern.value.clone(),
            value: value.to_owned(),
        });
    }
    Ok(())
}

/// `input`'s `pattern`, compiled; a pattern that is no regular expression is refused whatever
/// the value.
pub fn compile_pattern(input: &crate::model::Input) -> Result<Option<regex::Regex>, InputError> {
    input
        .pattern
        .as_ref()
        .map(|pattern| {
            regex(&pattern.value).map_err(|e| InputError::BadPattern {
                input: input.name.value.clone(),
                message: e.to_string(),
            })
        })
        .transpose()
}

/// `pattern` compiled, from a cache of the process: compiling a pattern costs far more than
/// matching it, and `check` meets one input's pattern in lowering, in `binding` and in
/// `run-refusal`. The cache keeps at most [`CACHED_PATTERNS`] patterns, so a hostile file with
/// many distinct patterns costs what it did without it.
pub fn regex(pattern: &str) -> Result<regex::Regex, regex::Error> {
    use std::collections::HashMap;
    use std::sync::{Mutex, OnceLock};
    static CACHE: OnceLock<Mutex<HashMap<String, regex::Regex>>> = OnceLock::new();
    let cache = CACHE.get_or_init(|| Mutex::new(HashMap::new()));
    // A poisoned lock only means another thread panicked mid-insert: the map is still sound.
    if let Some(re) = cache
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .get(pattern)
    {
        return Ok(re.clone());
    }
    let re = regex::Regex::new(pattern)?;
    let mut map = cache
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if map.len() < CACHED_PATTERNS {
        map.insert(pattern.to_owned(), re.clone());
    }
    Ok(re)
}

/// The most patterns [`regex`] keeps.
const CACHED_PATTERNS: usize = 64;

/// What `value` should have been, when it is not of type `ty`.
fn type_error(ty: InputType, value: &str) -> Option<&'static str> {
    let ok = match ty {
        InputType::String => true,
        InputType::Int => value.parse::<i64>().is_ok(),
        InputType::Bool => matches!(value, "true" | "false"),
        InputType::Sha => {
            matches!(value.len(), 40 | 64)
                && value
                    .bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        }
    };
    (!ok).then_some(match ty {
        InputType::String => "a string",
        InputType::Int => "an integer",
        InputType::Bool => "`true` or `false`",
        InputType::Sha => "a commit SHA (40 or 64 lowercase hex digits)",
    })
}

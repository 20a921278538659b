//! Typed values of children and properties.

use schemars::JsonSchema;
use serde::Serialize;

use super::Template;
use crate::span::Span;

/// A value, typed by the contract that accepts it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case", tag = "type", content = "value")]
pub enum Value {
    String(String),
    Int(i64),
    Bool(bool),
    /// Milliseconds.
    Duration(u64),
    Template(Template),
    Reference(Reference),
    Secret(String),
    Store(String),
}

/// `stage.output`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Reference {
    pub stage: String,
    pub output: String,
    pub span: Span,
}

impl std::fmt::Display for Reference {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // No stage: a pipeline input, as a template writes it (`flow::Outside`).
        if self.stage.is_empty() {
            return write!(f, "{{{}}}", self.output);
        }
        write!(f, "{}.{}", self.stage, self.output)
    }
}

impl Reference {
    /// Splits `"stage.output"` at its first dot.
    pub fn parse(text: &str, span: Span) -> Option<Self> {
        let (stage, output) = text.split_once('.')?;
        let ok = |s: &str| {
            !s.is_empty()
                && s.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        };
        (ok(stage) && ok(output)).then(|| Self {
            stage: stage.into(),
            output: output.into(),
            span,
        })
    }
}

impl Value {
    pub fn collect_references<'a>(&'a self, out: &mut Vec<&'a Reference>) {
        match self {
            Self::Reference(r) => out.push(r),
            Self::Template(t) => out.extend(t.references()),
            _ => {}
        }
    }

    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Self::Bool(b) => Some(*b),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Self::String(s) | Self::Secret(s) | Self::Store(s) => Some(s),
            _ => None,
        }
    }
}

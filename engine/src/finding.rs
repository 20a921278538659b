//! Findings: what a check reports, with the spans that explain it.

use schemars::JsonSchema;
use serde::Serialize;

use crate::span::Span;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Severity {
    Info,
    Warning,
    Error,
}

impl Severity {
    pub fn name(self) -> &'static str {
        match self {
            Self::Info => "info",
            Self::Warning => "warning",
            Self::Error => "error",
        }
    }
}

/// How sure a check is that a finding is real.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Confidence {
    Low,
    Medium,
    High,
}

/// A span with what it shows.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Label {
    pub span: Span,
    pub message: String,
}

impl Label {
    pub fn new(span: Span, message: impl Into<String>) -> Self {
        Self {
            span,
            message: message.into(),
        }
    }
}

/// An allowed finding: who allowed it, and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Suppression {
    pub span: Span,
    pub reason: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Finding {
    /// The check's id, e.g. `unknown-reference`.
    pub check: &'static str,
    pub severity: Severity,
    pub confidence: Option<Confidence>,
    pub message: String,
    /// The place the finding is about.
    pub primary: Label,
    /// Places that explain it (a declaration, the source of a flow).
    pub related: Vec<Label>,
    /// A flow path, source first, sink last (empty when the finding is not about a flow).
    pub flow: Vec<Label>,
    pub help: Option<String>,
    /// The stage the finding is about, if any (for stage-level suppression).
    pub stage: Option<String>,
    pub suppressed: Option<Suppression>,
    /// Made by judging several files together (`check::folder`): no one file's `allow` can
    /// hide it, since the fix lies in one of the two files.
    #[serde(skip)]
    #[schemars(skip)]
    pub across_files: bool,
}

impl Finding {
    pub fn new(
        check: &'static str,
        severity: Severity,
        message: impl Into<String>,
        primary: Label,
    ) -> Self {
        Self {
            check,
            severity,
            confidence: None,
            message: message.into(),
            primary,
            related: Vec::new(),
            flow: Vec::new(),
            help: None,
            stage: None,
            suppressed: None,
            across_files: false,
        }
    }

    /// A finding across files, which no `allow` hides ([`Finding::across_files`]).
    pub fn across_files(mut self) -> Self {
        self.across_files = true;
        self
    }

    pub fn related(mut self, label: Label) -> Self {
        self.related.push(label);
        self
    }

    pub fn help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }

    pub fn maybe_help(mut self, help: Option<String>) -> Self {
        self.help = help;
        self
    }

    pub fn confidence(mut self, c: Confidence) -> Self {
        self.confidence = Some(c);
        self
    }

    pub fn stage(mut self, name: &str) -> Self {
        self.stage = Some(name.into());
        self
    }

    pub fn flow(mut self, steps: Vec<Label>) -> Self {
        self.flow = steps;
        self
    }

    /// The id an `allow` names to hide exactly this finding (principle 6): a digest of what the
    /// finding says (check, severity, confidence, stage, message), never of where its lines are,
    /// so an edit elsewhere keeps it and a finding that gets worse gets another.
    pub fn id(&self) -> String {
        use sha2::{Digest, Sha256};
        let mut hasher = Sha256::new();
        let confidence = match self.confidence {
            None => "",
            Some(Confidence::Low) => "low",
            Some(Confidence::Medium) => "medium",
            Some(Confidence::High) => "high",
        };
        let stage = self.stage.as_deref().unwrap_or("");
        for field in [
            self.check,
            self.severity.name(),
            confidence,
            stage,
            &self.message,
        ] {
            // Length-prefixed, so no two field lists share a digest.
            hasher.update((field.len() as u64).to_le_bytes());
            hasher.update(field.as_bytes());
        }
        crate::hex::encode(&hasher.finalize()[..ID_BYTES])
    }

    /// Whether an `allow` may hide this finding: a `syntax` finding never reaches the
    /// suppressions, and a `suppression` finding is a wrong `allow`.
    pub fn allowable(&self) -> bool {
        self.check != "syntax" && self.check != "suppression" && !self.across_files
    }
}

/// Bytes of the digest in a finding's id: 12 hex digits, short enough to copy and long enough
/// that no two findings of a file share one.
const ID_BYTES: usize = 6;

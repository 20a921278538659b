//! Lenses: a rubric a reviewer applies (a prompt), the most severe finding it may report (its
//! ceiling) and whether its findings count towards a verdict. docs/lenses.md.
//!
//! A lens is named `builtin:NAME` (compiled in: no file of the checkout is ever read for it) or
//! by a path relative to the top of the repository, opened without following a link.

mod format;
mod resolve;

use serde::{Deserialize, Serialize};

pub use format::{LensFormatError, MAX_LENS_BYTES, parse};
pub use resolve::{BUILTIN_PREFIX, LensError, builtin, builtin_names, load, name_of, register};

use crate::rules::Severity;

/// Whether a lens's findings count towards the verdict.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum VerdictMode {
    /// Listed, never deciding the verdict (a lens still being calibrated).
    FindingsOnly,
    /// Counted: an included finding can request changes.
    Included,
}

impl VerdictMode {
    pub fn as_str(self) -> &'static str {
        match self {
            VerdictMode::FindingsOnly => "findings-only",
            VerdictMode::Included => "included",
        }
    }
}

/// What travels with a lens's findings: `std/review`'s `lens` output, `std/aggregate`'s input.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LensMeta {
    pub name: String,
    pub ceiling: Severity,
    pub verdict: VerdictMode,
}

/// A lens: its metadata and its prompt.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lens {
    pub meta: LensMeta,
    /// The prompt, markdown, added to the reviewer's instructions.
    pub prompt: String,
}

impl Lens {
    /// The reviewer's instructions with the lens's prompt added under its own heading.
    pub fn instructions(&self, base: &str) -> String {
        let mut out = String::with_capacity(base.len() + self.prompt.len() + 32);
        out.push_str(base.trim_end());
        if !out.is_empty() {
            out.push_str("\n\n");
        }
        out.push_str("## Lens: ");
        out.push_str(&self.meta.name);
        out.push_str("\n\n");
        out.push_str(self.prompt.trim());
        out.push('\n');
        out
    }

    /// The rule a finding of this lens carries: `NAME/rule`, or `NAME` for a finding with none.
    pub fn rule(&self, rule: Option<&str>) -> String {
        match rule {
            Some(r) => format!("{}/{r}", self.meta.name),
            None => self.meta.name.clone(),
        }
    }
}

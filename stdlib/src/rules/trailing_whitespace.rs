//! `trailing-whitespace`: added lines that end in spaces or tabs.

use super::text::extension;
use super::{Context, Finding, Rule, RuleId, Severity};
use crate::diff::FileDiff;

pub struct TrailingWhitespace;

/// Formats where trailing spaces mean something (a Markdown hard line break) or are content.
const EXEMPT: &[&str] = &["md", "markdown", "diff", "patch"];

impl Rule for TrailingWhitespace {
    fn id(&self) -> RuleId {
        RuleId::TrailingWhitespace
    }

    fn severity(&self) -> Severity {
        Severity::Info
    }

    fn description(&self) -> &'static str {
        "an added line ends in whitespace"
    }

    fn check(&self, file: &FileDiff, _: &Context<'_>, out: &mut Vec<Finding>) {
        if extension(file.path()).is_some_and(|e| EXEMPT.contains(&e.as_str())) {
            return;
        }
        for (n, l) in file.added() {
            // Content excludes the line ending, so a CRLF line is not flagged for its `\r`.
            if matches!(l.content.last(), Some(b' ' | b'\t')) {
                out.push(self.finding(file, Some(n), "trailing whitespace".into()));
            }
        }
    }
}

//! `trailing-whitespace`: added lines that end in spaces or tabs.

use super::text::extension;
use super::{Context, Finding, Rule, RuleId, Severity};
use crate::diff::FileDiff;

pub struct TrailingWhitespace;

/// Formats where trailing spaces mean something (a Markdown hard line break) or are content.
const EXEMPT: &[&str] = &["md", "markdown", "diff", "patch"];

/// The line without its trailing spaces and tabs: the whole fix, known exactly. None where the
/// line is whitespace alone (its fix, an empty line, is the one text a suggestion cannot say:
/// an empty suggestion deletes the line), is not UTF-8, or is no valid suggestion (a control
/// character, past the caps), or holds what a credential detector finds: the fix repeats the
/// line, and a finding never repeats a credential.
fn fix(content: &[u8], ctx: &Context<'_>) -> Option<String> {
    let end = content.iter().rposition(|b| !matches!(b, b' ' | b'\t'))?;
    let kept = &content[..=end];
    let text = std::str::from_utf8(kept).ok()?;
    crate::reviewer::result::check_suggestion(Some(1), text).ok()?;
    let every = crate::detect::DetectorId::ALL;
    if !crate::detect::scan(kept, ctx.secrets, &every).is_empty() {
        return None;
    }
    Some(text.to_owned())
}

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

    fn check(&self, file: &FileDiff, ctx: &Context<'_>, out: &mut Vec<Finding>) {
        if extension(file.path()).is_some_and(|e| EXEMPT.contains(&e.as_str())) {
            return;
        }
        for (n, l) in file.added() {
            // Content excludes the line ending, so a CRLF line is not flagged for its `\r`.
            if matches!(l.content.last(), Some(b' ' | b'\t')) {
                let mut finding = self.finding(file, Some(n), "trailing whitespace".into());
                finding.suggestion = fix(&l.content, ctx);
                out.push(finding);
            }
        }
    }
}

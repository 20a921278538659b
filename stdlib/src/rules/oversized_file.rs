//! `oversized-file`: one file adds more lines than a reviewer reads with care.

use super::{Context, Finding, Rule, RuleId, Severity};
use crate::diff::FileDiff;

pub struct OversizedFile;

impl Rule for OversizedFile {
    fn id(&self) -> RuleId {
        RuleId::OversizedFile
    }

    fn severity(&self) -> Severity {
        Severity::Warning
    }

    fn description(&self) -> &'static str {
        "a file adds more lines than the configured limit"
    }

    fn check(&self, file: &FileDiff, ctx: &Context<'_>, out: &mut Vec<Finding>) {
        let added = file.added_lines();
        let max = ctx.config.max_added_lines;
        if added > max {
            out.push(self.finding(file, None, format!("{added} lines added, more than {max}")));
        }
    }
}

//! `binary-file`: a binary file added, which no reviewer can read in the diff.

use super::{Context, Finding, Rule, RuleId, Severity};
use crate::diff::{FileDiff, FileStatus};

pub struct BinaryFile;

impl Rule for BinaryFile {
    fn id(&self) -> RuleId {
        RuleId::BinaryFile
    }

    fn severity(&self) -> Severity {
        Severity::Warning
    }

    fn description(&self) -> &'static str {
        "a binary file was added"
    }

    fn check(&self, file: &FileDiff, _: &Context<'_>, out: &mut Vec<Finding>) {
        if file.binary && file.status == FileStatus::Added {
            out.push(self.finding(file, None, "binary file added".into()));
        }
    }
}

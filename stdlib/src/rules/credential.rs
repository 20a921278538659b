//! `credential`: the credential detectors over the added lines of each file.
//!
//! The added lines of a file are scanned as one text (joined by newlines), so that a private key
//! block added over several lines is seen whole.

use super::{Context, Finding, Rule, RuleId, Severity};
use crate::detect;
use crate::diff::FileDiff;

pub struct Credential;

impl Rule for Credential {
    fn id(&self) -> RuleId {
        RuleId::Credential
    }

    fn severity(&self) -> Severity {
        Severity::Error
    }

    fn security(&self) -> bool {
        true
    }

    fn description(&self) -> &'static str {
        "an added line holds a credential or the value of one of the run's secrets"
    }

    fn check(&self, file: &FileDiff, ctx: &Context<'_>, out: &mut Vec<Finding>) {
        let mut text = Vec::new();
        // (offset in `text`, new-side line) of each added line, in order.
        let mut starts: Vec<(usize, u32)> = Vec::new();
        for (n, l) in file.added() {
            starts.push((text.len(), n));
            text.extend_from_slice(&l.content);
            text.push(b'\n');
        }
        if text.is_empty() {
            return;
        }
        for hit in detect::scan(&text, ctx.secrets, &ctx.config.detectors) {
            let i = starts.partition_point(|&(off, _)| off <= hit.byte_range.start);
            let line = i
                .checked_sub(1)
                .and_then(|i| starts.get(i))
                .map(|&(_, n)| n);
            let message = match (&hit.secret_name, hit.detector) {
                (Some(name), _) => format!("added line holds the value of secret `{name}`"),
                (None, id) => format!(
                    "added line holds what looks like {} (detector `{id}`)",
                    detect::label(id)
                ),
            };
            out.push(self.finding(file, line, message));
        }
    }
}

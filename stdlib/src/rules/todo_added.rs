//! `todo-added`: TODO, FIXME and XXX notes added by the change.

use std::sync::LazyLock;

use regex::bytes::Regex;

use super::{Context, Finding, Rule, RuleId, Severity};
use crate::diff::FileDiff;

static RE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?-u)\b(TODO|FIXME|XXX)\b").expect("static pattern compiles"));

pub struct TodoAdded;

impl Rule for TodoAdded {
    fn id(&self) -> RuleId {
        RuleId::TodoAdded
    }

    fn severity(&self) -> Severity {
        Severity::Info
    }

    fn description(&self) -> &'static str {
        "a TODO, FIXME or XXX note was added"
    }

    fn check(&self, file: &FileDiff, _: &Context<'_>, out: &mut Vec<Finding>) {
        for (n, l) in file.added() {
            if let Some(m) = RE.find(&l.content) {
                let word = String::from_utf8_lossy(m.as_bytes());
                out.push(self.finding(file, Some(n), format!("`{word}` added")));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::RE;

    #[test]
    fn words_only() {
        for yes in ["// TODO: x", "# FIXME", "XXX remove", "(TODO)"] {
            assert!(RE.is_match(yes.as_bytes()), "{yes}");
        }
        for no in ["todo list", "TODOS", "MAXXXX", "_TODO_x"] {
            assert!(!RE.is_match(no.as_bytes()), "{no}");
        }
    }
}

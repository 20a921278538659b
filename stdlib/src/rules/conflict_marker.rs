//! `conflict-marker`: merge conflict markers left in added lines.

use super::{Context, Finding, Rule, RuleId, Severity};
use crate::diff::FileDiff;

pub struct ConflictMarker;

/// Markers that mean a conflict on their own (git's default marker size is 7).
const MARKERS: [&[u8]; 3] = [b"<<<<<<<", b">>>>>>>", b"|||||||"];

fn strong(content: &[u8]) -> bool {
    MARKERS.iter().any(|m| {
        content.starts_with(m) && matches!(content.get(m.len()), None | Some(b' ' | b'\t'))
    })
}

fn separator(content: &[u8]) -> bool {
    content.trim_ascii_end() == b"======="
}

impl Rule for ConflictMarker {
    fn id(&self) -> RuleId {
        RuleId::ConflictMarker
    }

    fn severity(&self) -> Severity {
        Severity::Error
    }

    fn description(&self) -> &'static str {
        "a merge conflict marker was added"
    }

    fn check(&self, file: &FileDiff, _: &Context<'_>, out: &mut Vec<Finding>) {
        // A bare ======= is a Markdown underline unless the file also gains a real marker.
        let conflicted = file.added().any(|(_, l)| strong(&l.content));
        for (n, l) in file.added() {
            if strong(&l.content) || (conflicted && separator(&l.content)) {
                out.push(self.finding(file, Some(n), "merge conflict marker".into()));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers() {
        assert!(strong(b"<<<<<<< HEAD"));
        assert!(strong(b">>>>>>> feature/x"));
        assert!(strong(b"|||||||"));
        assert!(!strong(b"<<<<<<<< eight"));
        assert!(!strong(b" <<<<<<< indented"));
        assert!(!strong(b"<<<<<<<x"));
        assert!(separator(b"======= "));
        assert!(!separator(b"========"));
    }
}

//! Cross-checking findings against the diff they claim to be about.
//!
//! A reviewer reads untrusted text, so its findings can be forged: a prompt injection can make
//! it report a file the change never touched, or a line the reader cannot see in the diff.
//!
//! - A finding whose path is not a file of the diff (its new path, or the old path of a deleted
//!   file; compared exactly) is **dropped**.
//! - A finding on a file of the diff whose line lies outside every hunk (the new-side lines a
//!   hunk shows, context included: the lines a pull-request review can comment on) is
//!   **demoted** to a file-level finding: its line and end line are removed, its message stays.
//! - An end line outside the hunks, or before the line, is removed; the line stays.
//! - A suggested fix is kept only when every line it replaces (the finding's `line`..=`end_line`
//!   as the finding came) is a line the change added, and it is still a valid suggestion
//!   ([`check_suggestion`]); otherwise it is **removed** and the finding stays, with the reason
//!   in [`Filtered::unsuggested`]. A suggestion on a line the change did not write would have
//!   the author apply a model's rewrite of code nobody reviewed in this change.

use super::ranges::{FileRanges, ranges_of};
use super::review::ReviewFinding;
use crate::diff::Diff;
use crate::reviewer::result::check_suggestion;

/// What [`filter_findings`] kept, and how many it dropped or demoted.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Filtered {
    /// The findings kept, demoted ones included, in input order.
    pub kept: Vec<ReviewFinding>,
    /// Findings on a path outside the diff.
    pub dropped: usize,
    /// Findings whose line was outside the hunks and was removed.
    pub demoted: usize,
    /// The suggestions removed from kept findings, each as `path:line: why`.
    pub unsuggested: Vec<String>,
}

/// Filters `findings` against `diff` (see the [module documentation](self)).
pub fn filter_findings(findings: Vec<ReviewFinding>, diff: &Diff) -> Filtered {
    filter_findings_in(findings, &ranges_of(diff))
}

/// Like [`filter_findings`], against the ranges `std/gather` produced.
pub fn filter_findings_in(findings: Vec<ReviewFinding>, ranges: &[FileRanges]) -> Filtered {
    let mut out = Filtered::default();
    for mut finding in findings {
        let Some(file) = ranges.iter().find(|r| r.path == finding.path) else {
            out.dropped += 1;
            continue;
        };
        // The lines the suggestion replaces are the ones the finding came with.
        let (line, end_line) = (finding.line, finding.end_line);
        if let Some(why) = finding
            .suggestion
            .as_deref()
            .and_then(|text| suggestion_refusal(file, line, end_line, text))
        {
            finding.suggestion = None;
            let at = line.map_or_else(String::new, |l| format!(":{l}"));
            out.unsuggested.push(format!("{}{at}: {why}", finding.path));
        }
        match finding.line {
            Some(line) if !file.in_hunk(line) => {
                finding.line = None;
                finding.end_line = None;
                out.demoted += 1;
            }
            Some(line) => {
                if finding
                    .end_line
                    .is_some_and(|end| end < line || !file.in_hunk(end))
                {
                    finding.end_line = None;
                }
            }
            None => finding.end_line = None,
        }
        out.kept.push(finding);
    }
    out
}

/// Why a suggestion on `line`..=`end_line` of `file` is refused, or `None` when it stands.
fn suggestion_refusal(
    file: &FileRanges,
    line: Option<u32>,
    end_line: Option<u32>,
    text: &str,
) -> Option<String> {
    if let Err(problem) = check_suggestion(line, text) {
        return Some(format!("suggestion removed: {problem}"));
    }
    let line = line?;
    let end = end_line.unwrap_or(line);
    if end < line {
        return Some("suggestion removed: its end line is before its line".into());
    }
    // Every replaced line must be an added one; a range past the hunks fails on its first line
    // outside them, so the walk is bounded by the diff.
    (line..=end).find(|&l| !file.is_changed(l)).map(|l| {
        format!(
            "suggestion removed: line {l} is not a line the change added (a suggestion replaces only added lines)"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diff::LineRange;
    use crate::rules::Severity;

    /// `a.rs`: hunk 10..=20, added 12..=14.
    fn ranges() -> Vec<FileRanges> {
        vec![FileRanges {
            path: "a.rs".into(),
            old_path: None,
            changed: vec![LineRange { start: 12, end: 14 }],
            hunks: vec![LineRange { start: 10, end: 20 }],
        }]
    }

    fn suggested(line: Option<u32>, end_line: Option<u32>, text: &str) -> ReviewFinding {
        ReviewFinding {
            rule: "r".into(),
            severity: Severity::Warning,
            path: "a.rs".into(),
            line,
            end_line,
            message: "m".into(),
            fingerprint: None,
            state: None,
            dialogue: None,
            suggestion: Some(text.into()),
        }
    }

    #[test]
    fn a_suggestion_stands_only_on_added_lines() {
        let out = filter_findings_in(
            vec![
                suggested(Some(12), Some(14), "a\nb"), // all added
                suggested(Some(13), Some(15), "a\nb"), // 15 is context
                suggested(Some(11), None, "a"),        // context
                suggested(Some(30), None, "a"),        // off the hunks: demoted
                suggested(None, None, "a"),            // the whole file
                suggested(Some(12), None, "a\rb"),     // a control character
            ],
            &ranges(),
        );
        let kept: Vec<_> = out.kept.iter().map(|f| f.suggestion.is_some()).collect();
        assert_eq!(kept, [true, false, false, false, false, false]);
        // Every finding stays; only its suggestion goes, each with a reason naming it.
        assert_eq!((out.kept.len(), out.dropped), (6, 0));
        assert_eq!(
            out.unsuggested,
            [
                "a.rs:13: suggestion removed: line 15 is not a line the change added (a suggestion replaces only added lines)",
                "a.rs:11: suggestion removed: line 11 is not a line the change added (a suggestion replaces only added lines)",
                "a.rs:30: suggestion removed: line 30 is not a line the change added (a suggestion replaces only added lines)",
                "a.rs: suggestion removed: given without a line: a suggestion replaces the finding's lines",
                "a.rs:12: suggestion removed: holds the control character U+000D",
            ]
        );
    }

    #[test]
    fn a_huge_range_is_refused_without_walking_it() {
        let out = filter_findings_in(vec![suggested(Some(12), Some(u32::MAX), "a")], &ranges());
        assert_eq!(out.kept[0].suggestion, None);
        assert_eq!(out.unsuggested.len(), 1);
    }
}

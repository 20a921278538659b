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

use super::ranges::{FileRanges, ranges_of};
use super::review::ReviewFinding;
use crate::diff::Diff;

/// What [`filter_findings`] kept, and how many it dropped or demoted.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Filtered {
    /// The findings kept, demoted ones included, in input order.
    pub kept: Vec<ReviewFinding>,
    /// Findings on a path outside the diff.
    pub dropped: usize,
    /// Findings whose line was outside the hunks and was removed.
    pub demoted: usize,
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

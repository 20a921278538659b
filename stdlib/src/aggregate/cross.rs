//! Cross-validation against the diff: `std/post`'s filter ([`filter_findings_in`]) over the
//! change's ranges with each hunk widened by the tolerance, and the declared context paths as
//! files with no hunk (a finding there keeps no line).

use crate::diff::LineRange;
use crate::forge::{FileRanges, Filtered, ReviewFinding, filter_findings_in};

/// The ranges a finding is validated against.
pub struct Validation {
    ranges: Vec<FileRanges>,
}

impl Validation {
    /// `ranges` widened by `tolerance` lines on each side of every hunk, plus `context` files.
    pub fn new(ranges: &[FileRanges], context: &[String], tolerance: u32) -> Self {
        let mut out: Vec<FileRanges> = ranges
            .iter()
            .map(|r| FileRanges {
                hunks: widen(&r.hunks, tolerance),
                ..r.clone()
            })
            .collect();
        for path in context {
            if !out.iter().any(|r| &r.path == path) {
                out.push(FileRanges {
                    path: path.clone(),
                    old_path: None,
                    changed: Vec::new(),
                    hunks: Vec::new(),
                });
            }
        }
        Self { ranges: out }
    }

    /// Drops findings outside the change and demotes those outside its (widened) hunks.
    pub fn filter(&self, findings: Vec<ReviewFinding>) -> Filtered {
        filter_findings_in(findings, &self.ranges)
    }
}

/// Sorted, merged ranges each grown by `by` on both sides (line 1 at least).
fn widen(hunks: &[LineRange], by: u32) -> Vec<LineRange> {
    let mut out: Vec<LineRange> = Vec::with_capacity(hunks.len());
    for h in hunks {
        let r = LineRange {
            start: h.start.saturating_sub(by).max(1),
            end: h.end.saturating_add(by),
        };
        match out.last_mut() {
            Some(last) if r.start <= last.end.saturating_add(1) => last.end = last.end.max(r.end),
            _ => out.push(r),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hunks_widen_and_merge() {
        let r = |start, end| LineRange { start, end };
        assert_eq!(widen(&[r(2, 3), r(9, 9)], 3), vec![r(1, 12)]);
        assert_eq!(widen(&[r(10, 10), r(30, 31)], 2), vec![r(8, 12), r(28, 33)]);
    }
}

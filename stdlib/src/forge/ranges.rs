//! Changed-line ranges per file: what a diff lets a finding point at.

use serde::{Deserialize, Serialize};

use crate::diff::{Diff, FileDiff, LineRange};

/// One file of a diff, by the lines a finding may name.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileRanges {
    /// New path (old path for a deleted file).
    pub path: String,
    /// The old path of a renamed or copied file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub old_path: Option<String>,
    /// New-side lines the change added, sorted and merged.
    pub changed: Vec<LineRange>,
    /// New-side lines the hunks cover (added and context), sorted and merged.
    pub hunks: Vec<LineRange>,
}

impl FileRanges {
    pub fn of(file: &FileDiff) -> Self {
        let mut hunks: Vec<LineRange> = file.hunks.iter().filter_map(|h| h.new_range()).collect();
        hunks.sort_unstable();
        let mut merged: Vec<LineRange> = Vec::with_capacity(hunks.len());
        for r in hunks {
            match merged.last_mut() {
                Some(last) if r.start <= last.end.saturating_add(1) => {
                    last.end = last.end.max(r.end)
                }
                _ => merged.push(r),
            }
        }
        FileRanges {
            path: file.path().to_owned(),
            old_path: file
                .old_path
                .clone()
                .filter(|old| file.new_path.as_deref().is_some_and(|new| new != old)),
            changed: file.changed.clone(),
            hunks: merged,
        }
    }

    /// Whether new-side `line` lies inside a hunk.
    pub fn in_hunk(&self, line: u32) -> bool {
        contains(&self.hunks, line)
    }

    /// Whether new-side `line` was added by the change.
    pub fn is_changed(&self, line: u32) -> bool {
        contains(&self.changed, line)
    }
}

/// The ranges of every file of `diff`, in diff order.
pub fn ranges_of(diff: &Diff) -> Vec<FileRanges> {
    diff.files.iter().map(FileRanges::of).collect()
}

fn contains(sorted: &[LineRange], line: u32) -> bool {
    let i = sorted.partition_point(|r| r.start <= line);
    i > 0 && sorted[i - 1].contains(line)
}

//! One file of a diff: its paths, status, hunks and the new-side lines it adds.

use std::ops::Range;

use serde::{Deserialize, Serialize};

/// What happened to a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FileStatus {
    Added,
    Modified,
    Deleted,
    Renamed,
    Copied,
}

/// The kind of a line inside a hunk.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LineKind {
    Context,
    Added,
    Deleted,
}

/// How a line of content ended in the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Eol {
    Lf,
    CrLf,
    /// The last line of a file without a final newline (`\ No newline at end of file`).
    None,
}

/// One line of a hunk.
#[derive(Clone, PartialEq, Eq)]
pub struct Line {
    pub kind: LineKind,
    /// Line number in the old file; `None` for an added line.
    pub old_line: Option<u32>,
    /// Line number in the new file; `None` for a deleted line.
    pub new_line: Option<u32>,
    /// The content without the leading marker and without the line ending.
    pub content: Vec<u8>,
    pub eol: Eol,
}

impl std::fmt::Debug for Line {
    // Content as lossy text: byte arrays make test failures unreadable.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Line")
            .field("kind", &self.kind)
            .field("old_line", &self.old_line)
            .field("new_line", &self.new_line)
            .field("content", &String::from_utf8_lossy(&self.content))
            .field("eol", &self.eol)
            .finish()
    }
}

/// One `@@ -a,b +c,d @@ context` block.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hunk {
    pub old_start: u32,
    pub old_count: u32,
    pub new_start: u32,
    pub new_count: u32,
    /// The text after the closing `@@` (often the enclosing function), without the leading space.
    pub context: String,
    pub lines: Vec<Line>,
}

impl Hunk {
    /// The new-side lines this hunk covers, as an inclusive range; `None` when it covers none.
    pub fn new_range(&self) -> Option<LineRange> {
        (self.new_count > 0).then(|| LineRange {
            start: self.new_start,
            end: self
                .new_start
                .saturating_add(self.new_count.saturating_sub(1)),
        })
    }
}

/// An inclusive range of line numbers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct LineRange {
    pub start: u32,
    pub end: u32,
}

impl LineRange {
    pub fn contains(&self, line: u32) -> bool {
        self.start <= line && line <= self.end
    }
}

/// One file of a diff.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileDiff {
    /// Path before the change, without the `a/` prefix; `None` for an added file.
    pub old_path: Option<String>,
    /// Path after the change, without the `b/` prefix; `None` for a deleted file.
    pub new_path: Option<String>,
    pub status: FileStatus,
    /// Git reported the content as binary: there are no hunks to read.
    pub binary: bool,
    /// Octal modes as written (`100644`), when the diff states them.
    pub old_mode: Option<String>,
    pub new_mode: Option<String>,
    /// `similarity index` of a rename or copy, in percent.
    pub similarity: Option<u8>,
    pub hunks: Vec<Hunk>,
    /// New-side line ranges of added lines, sorted and merged: what this change wrote.
    pub changed: Vec<LineRange>,
    /// Byte range of this file's section in the parsed text, headers included.
    pub span: Range<usize>,
}

impl FileDiff {
    /// The path a reviewer speaks of: the new path, or the old one for a deleted file.
    pub fn path(&self) -> &str {
        self.new_path
            .as_deref()
            .or(self.old_path.as_deref())
            .unwrap_or("")
    }

    pub fn added_lines(&self) -> u32 {
        self.count(LineKind::Added)
    }

    pub fn deleted_lines(&self) -> u32 {
        self.count(LineKind::Deleted)
    }

    fn count(&self, kind: LineKind) -> u32 {
        let n = self
            .hunks
            .iter()
            .flat_map(|h| &h.lines)
            .filter(|l| l.kind == kind)
            .count();
        u32::try_from(n).unwrap_or(u32::MAX)
    }

    /// Added lines with their new-side line numbers.
    pub fn added(&self) -> impl Iterator<Item = (u32, &Line)> {
        self.hunks
            .iter()
            .flat_map(|h| &h.lines)
            .filter_map(|l| match (l.kind, l.new_line) {
                (LineKind::Added, Some(n)) => Some((n, l)),
                _ => None,
            })
    }

    /// True when new-side `line` was added by this change.
    pub fn is_changed_line(&self, line: u32) -> bool {
        // `changed` is sorted and disjoint: find the last range starting at or before `line`.
        let i = self.changed.partition_point(|r| r.start <= line);
        i > 0 && self.changed[i - 1].contains(line)
    }

    /// True when new-side `line` lies inside a hunk (added or context).
    pub fn in_hunk(&self, line: u32) -> bool {
        self.hunks
            .iter()
            .filter_map(Hunk::new_range)
            .any(|r| r.contains(line))
    }

    /// Computes [`FileDiff::changed`] from the hunks.
    pub(crate) fn compute_changed(&mut self) {
        let mut ranges: Vec<LineRange> = Vec::new();
        let mut lines: Vec<u32> = self.added().map(|(n, _)| n).collect();
        lines.sort_unstable();
        for n in lines {
            match ranges.last_mut() {
                Some(r) if n <= r.end.saturating_add(1) => r.end = r.end.max(n),
                _ => ranges.push(LineRange { start: n, end: n }),
            }
        }
        self.changed = ranges;
    }
}

//! What the diff parser could not read. Problems name input lines, never their text: the text
//! comes from the change under review and is untrusted.

use thiserror::Error;

/// One unreadable part of a diff. `line` is the 1-based line of the diff text.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum DiffProblem {
    #[error("line {line}: unreadable hunk header")]
    BadHunkHeader { line: usize },
    #[error("line {line}: hunk before any file header")]
    HunkOutsideFile { line: usize },
    #[error("line {line}: hunk ends early ({missing_old} old and {missing_new} new lines missing)")]
    TruncatedHunk {
        line: usize,
        missing_old: u32,
        missing_new: u32,
    },
    #[error("line {line}: unreadable path")]
    BadPath { line: usize },
    #[error("line {line}: unexpected line between files")]
    UnexpectedLine { line: usize },
    #[error("line {line}: combined diff (from a merge) is not supported; file skipped")]
    CombinedDiff { line: usize },
    #[error("{more} further problems not listed")]
    TooManyProblems { more: usize },
}

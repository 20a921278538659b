//! Unified git diffs, read as data: which files changed, how, and on which lines.
//!
//! [`parse`] reads the output of `git diff --no-ext-diff --no-textconv` (and plain unified diffs
//! without `diff --git` headers) into a [`Diff`]. It never panics and never gives up: what it
//! cannot read is listed in [`Diff::problems`] next to everything it could read, so that a caller
//! can decide whether a partly readable diff is good enough.
//!
//! What it understands: `diff --git` headers, `new file mode` / `deleted file mode` / mode
//! changes, `rename from`/`to` and `copy from`/`to`, `similarity index`, `Binary files … differ`
//! and `GIT binary patch` blocks, `--- a/x` / `+++ b/x` (with the tab git appends to names that
//! hold a space), C-quoted paths (`"a/tab\there"`, octal escapes for non-ASCII bytes), hunk
//! headers with or without counts and with the function context, `\ No newline at end of file`,
//! and CRLF content (the `\r` is taken off the content and recorded in [`Eol`]). Paths are read
//! with the default `a/` and `b/` prefixes in mind; a path that is not valid UTF-8 is kept lossily.
//! Combined diffs (`diff --cc`, from merges) are reported as a problem and skipped.
//!
//! [`cut_to_path`] keeps only the files under a path prefix, as text, so the cut is still a diff.
//!
//! [`tier`] sorts a change into a size tier. Default thresholds ([`Thresholds::default`]), each
//! an inclusive upper bound; the tier of a change is the worse of its line tier and file tier:
//!
//! | tier   | lines changed (added + deleted) | files changed |
//! |--------|---------------------------------|---------------|
//! | green  | ≤ 200                           | ≤ 10          |
//! | yellow | ≤ 400                           | ≤ 25          |
//! | orange | ≤ 800                           | ≤ 50          |
//! | red    | ≤ 1500                          | ≤ 100         |
//! | black  | more                            | more          |

mod cut;
mod file;
mod parse;
mod path;
mod problem;
mod tier;

#[cfg(test)]
mod tests;

pub use cut::cut_to_path;
pub use file::{Eol, FileDiff, FileStatus, Hunk, Line, LineKind, LineRange};
pub use parse::parse;
pub use problem::DiffProblem;
pub use tier::{Thresholds, Tier, tier};

use serde::{Deserialize, Serialize};

/// A parsed diff: every file that could be read, and what could not.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Diff {
    /// Files in the order the diff lists them.
    pub files: Vec<FileDiff>,
    /// What the parser could not read, in input order. Empty for a well-formed diff.
    pub problems: Vec<DiffProblem>,
}

/// Size of a change.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Totals {
    /// Files listed in the diff, binary ones and pure renames included.
    pub files: u64,
    /// Added lines over all files.
    pub added: u64,
    /// Deleted lines over all files.
    pub deleted: u64,
}

impl Totals {
    /// Added plus deleted lines: the measure [`tier`] takes.
    pub fn lines_changed(&self) -> u64 {
        self.added.saturating_add(self.deleted)
    }
}

impl Diff {
    /// True when the whole input was understood.
    pub fn is_clean(&self) -> bool {
        self.problems.is_empty()
    }

    /// Counts of files and of added and deleted lines.
    pub fn totals(&self) -> Totals {
        self.files.iter().fold(Totals::default(), |t, f| Totals {
            files: t.files.saturating_add(1),
            added: t.added.saturating_add(u64::from(f.added_lines())),
            deleted: t.deleted.saturating_add(u64::from(f.deleted_lines())),
        })
    }

    /// The file whose new path (or, for a deleted file, old path) is `path`.
    pub fn file(&self, path: &str) -> Option<&FileDiff> {
        self.files.iter().find(|f| f.path() == path)
    }
}

//! The diff parser: one pass over the lines, a file builder, and a hunk counter.
//!
//! Hunk bodies are read by their counts, not by the look of their lines: a deleted line `-- x`
//! looks like a `---` header and an added `+++` line like a `+++` header. When a hunk ends
//! before its counts are met, the line that broke it is read again as a header.

use std::ops::Range;

use super::file::{Eol, FileDiff, FileStatus, Hunk, Line, LineKind};
use super::path::{bare_path, git_header_paths, marker_path};
use super::{Diff, DiffProblem};

/// Past this many problems only a count is kept, so that garbage input stays cheap.
const MAX_PROBLEMS: usize = 100;

/// Parses a unified diff. Never panics; see [`Diff::problems`] for what was not understood.
pub fn parse(text: &[u8]) -> Diff {
    Parser::new(text).run()
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Skip {
    No,
    /// Inside a `GIT binary patch` block.
    BinaryPatch,
    /// Inside a combined diff, which is not read.
    Combined,
    /// After a hunk header that could not be read: its body is dropped.
    BadHunk,
    /// After a `-- ` mail signature (format-patch output).
    Trailer,
}

struct HunkState {
    old_left: u32,
    new_left: u32,
    old_next: u32,
    new_next: u32,
}

#[derive(Default)]
struct Builder {
    start: usize,
    header: Option<(String, String)>,
    /// From `---`/`+++`: `Some(None)` is `/dev/null`.
    minus: Option<Option<String>>,
    plus: Option<Option<String>>,
    rename_from: Option<String>,
    rename_to: Option<String>,
    copy_from: Option<String>,
    copy_to: Option<String>,
    new_file: bool,
    deleted_file: bool,
    old_mode: Option<String>,
    new_mode: Option<String>,
    similarity: Option<u8>,
    binary: bool,
    hunks: Vec<Hunk>,
}

struct Parser<'a> {
    text: &'a [u8],
    lines: Vec<Range<usize>>,
    files: Vec<FileDiff>,
    problems: Vec<DiffProblem>,
    suppressed: usize,
    cur: Option<Builder>,
    hunk: Option<HunkState>,
    skip: Skip,
}

impl<'a> Parser<'a> {
    fn new(text: &'a [u8]) -> Self {
        let mut lines = Vec::new();
        let mut start = 0;
        for (i, &b) in text.iter().enumerate() {
            if b == b'\n' {
                lines.push(start..i);
                start = i + 1;
            }
        }
        if start < text.len() {
            lines.push(start..text.len());
        }
        Parser {
            text,
            lines,
            files: Vec::new(),
            problems: Vec::new(),
            suppressed: 0,
            cur: None,
            hunk: None,
            skip: Skip::No,
        }
    }

    fn run(mut self) -> Diff {
        let mut i = 0;
        while i < self.lines.len() {
            i = self.step(i);
        }
        if let Some(h) = self.hunk.take()
            && (h.old_left > 0 || h.new_left > 0)
        {
            self.problem(DiffProblem::TruncatedHunk {
                line: self.lines.len(),
                missing_old: h.old_left,
                missing_new: h.new_left,
            });
        }
        self.finish(self.text.len());
        if self.suppressed > 0 {
            self.problems.push(DiffProblem::TooManyProblems {
                more: self.suppressed,
            });
        }
        Diff {
            files: self.files,
            problems: self.problems,
        }
    }

    fn line(&self, i: usize) -> &'a [u8] {
        let text: &'a [u8] = self.text;
        self.lines.get(i).map_or(&[], |r| &text[r.clone()])
    }

    /// Reads line `i`; returns the index of the next line to read.
    fn step(&mut self, i: usize) -> usize {
        let raw = self.line(i);
        // When the hunk is over (complete, or broken and reported) the line is read as a header.
        if self.hunk.is_some() && self.hunk_line(i, raw) {
            return i + 1;
        }
        let hdr = raw.strip_suffix(b"\r").unwrap_or(raw);
        if hdr.first() == Some(&b'\\') {
            self.no_newline(i);
            return i + 1;
        }
        if self.skip != Skip::No {
            let resumes = hdr.starts_with(b"diff ")
                || (self.skip == Skip::BadHunk && hdr.starts_with(b"@@ "));
            if !resumes {
                return i + 1;
            }
            self.skip = Skip::No;
        }
        let line_start = self.lines[i].start;
        if let Some(rest) = hdr.strip_prefix(b"diff --git ") {
            self.finish(line_start);
            let header = git_header_paths(rest);
            if header.is_none() {
                self.problem(DiffProblem::BadPath { line: i + 1 });
            }
            self.cur = Some(Builder {
                start: line_start,
                header,
                ..Builder::default()
            });
            return i + 1;
        }
        if hdr.starts_with(b"diff --cc ") || hdr.starts_with(b"diff --combined ") {
            self.finish(line_start);
            self.problem(DiffProblem::CombinedDiff { line: i + 1 });
            self.skip = Skip::Combined;
            return i + 1;
        }
        if hdr.starts_with(b"@@ ") {
            self.hunk_header(i, hdr);
            return i + 1;
        }
        if let Some(minus) = hdr.strip_prefix(b"--- ") {
            let next = self.line(i + 1);
            let next = next.strip_suffix(b"\r").unwrap_or(next);
            if let Some(plus) = next.strip_prefix(b"+++ ") {
                self.markers(i, line_start, minus, plus);
                return i + 2;
            }
        }
        match self.cur.as_mut() {
            // Text before the first file (a commit message, a mail header) is not part of the diff.
            None => {}
            Some(b) if b.hunks.is_empty() => {
                if extended_header(b, hdr) {
                    if hdr.starts_with(b"GIT binary patch") {
                        self.skip = Skip::BinaryPatch;
                    }
                } else {
                    self.problem(DiffProblem::UnexpectedLine { line: i + 1 });
                }
            }
            Some(_) if hdr == b"-- " => self.skip = Skip::Trailer,
            Some(_) => self.problem(DiffProblem::UnexpectedLine { line: i + 1 }),
        }
        i + 1
    }

    /// Reads one line of a hunk body. Returns false when the line does not belong to the hunk.
    fn hunk_line(&mut self, i: usize, raw: &[u8]) -> bool {
        let Some(h) = self.hunk.as_mut() else {
            return false;
        };
        if h.old_left == 0 && h.new_left == 0 {
            self.hunk = None;
            return false;
        }
        let (kind, content) = match raw.first() {
            // Some tools strip the space of an empty context line; git apply accepts that too.
            None if h.old_left > 0 && h.new_left > 0 => (LineKind::Context, raw),
            Some(b' ') if h.old_left > 0 && h.new_left > 0 => (LineKind::Context, &raw[1..]),
            Some(b'-') if h.old_left > 0 => (LineKind::Deleted, &raw[1..]),
            Some(b'+') if h.new_left > 0 => (LineKind::Added, &raw[1..]),
            Some(b'\\') => {
                self.no_newline(i);
                return true;
            }
            _ => {
                let (missing_old, missing_new) = (h.old_left, h.new_left);
                self.hunk = None;
                self.problem(DiffProblem::TruncatedHunk {
                    line: i + 1,
                    missing_old,
                    missing_new,
                });
                return false;
            }
        };
        let (content, eol) = match content.strip_suffix(b"\r") {
            Some(c) => (c, Eol::CrLf),
            None => (content, Eol::Lf),
        };
        let (old_line, new_line) = match kind {
            LineKind::Context => {
                h.old_left -= 1;
                h.new_left -= 1;
                (Some(bump(&mut h.old_next)), Some(bump(&mut h.new_next)))
            }
            LineKind::Deleted => {
                h.old_left -= 1;
                (Some(bump(&mut h.old_next)), None)
            }
            LineKind::Added => {
                h.new_left -= 1;
                (None, Some(bump(&mut h.new_next)))
            }
        };
        let line = Line {
            kind,
            old_line,
            new_line,
            content: content.to_vec(),
            eol,
        };
        if let Some(hunk) = self.cur.as_mut().and_then(|b| b.hunks.last_mut()) {
            hunk.lines.push(line);
        }
        true
    }

    /// `\ No newline at end of file`: the line before it has no line ending.
    fn no_newline(&mut self, i: usize) {
        let last = self
            .cur
            .as_mut()
            .and_then(|b| b.hunks.last_mut())
            .and_then(|h| h.lines.last_mut());
        match last {
            Some(l) => l.eol = Eol::None,
            None => self.problem(DiffProblem::UnexpectedLine { line: i + 1 }),
        }
    }

    fn hunk_header(&mut self, i: usize, hdr: &[u8]) {
        let Some(b) = self.cur.as_mut() else {
            self.problem(DiffProblem::HunkOutsideFile { line: i + 1 });
            self.skip = Skip::BadHunk;
            return;
        };
        match parse_hunk_header(hdr) {
            Some(h) => {
                self.hunk = Some(HunkState {
                    old_left: h.old_count,
                    new_left: h.new_count,
                    old_next: h.old_start,
                    new_next: h.new_start,
                });
                b.hunks.push(h);
            }
            None => {
                self.problem(DiffProblem::BadHunkHeader { line: i + 1 });
                self.skip = Skip::BadHunk;
            }
        }
    }

    /// A `---`/`+++` pair. It opens a new file unless it completes the current file's header.
    fn markers(&mut self, i: usize, line_start: usize, minus: &[u8], plus: &[u8]) {
        let opens_file = match &self.cur {
            None => true,
            Some(b) => !b.hunks.is_empty() || b.binary || b.minus.is_some(),
        };
        if opens_file {
            self.finish(line_start);
            self.cur = Some(Builder {
                start: line_start,
                ..Builder::default()
            });
        }
        let minus = marker_path(minus, b"a/");
        let plus = marker_path(plus, b"b/");
        if minus.is_err() {
            self.problem(DiffProblem::BadPath { line: i + 1 });
        }
        if plus.is_err() {
            self.problem(DiffProblem::BadPath { line: i + 2 });
        }
        if let Some(b) = self.cur.as_mut() {
            b.minus = minus.ok();
            b.plus = plus.ok();
        }
    }

    /// Closes the current file; its section ends where `end` starts.
    fn finish(&mut self, end: usize) {
        self.hunk = None;
        if let Some(b) = self.cur.take() {
            self.files.push(b.build(end));
        }
    }

    fn problem(&mut self, p: DiffProblem) {
        if self.problems.len() < MAX_PROBLEMS {
            self.problems.push(p);
        } else {
            self.suppressed += 1;
        }
    }
}

/// Returns the current value and advances it.
fn bump(n: &mut u32) -> u32 {
    let v = *n;
    *n = n.saturating_add(1);
    v
}

/// Reads an extended header line into the builder. False when the line is not one.
fn extended_header(b: &mut Builder, hdr: &[u8]) -> bool {
    let text = |s: &[u8]| String::from_utf8_lossy(s).into_owned();
    if let Some(m) = hdr.strip_prefix(b"old mode ") {
        b.old_mode = Some(text(m));
    } else if let Some(m) = hdr.strip_prefix(b"new mode ") {
        b.new_mode = Some(text(m));
    } else if let Some(m) = hdr.strip_prefix(b"deleted file mode ") {
        b.deleted_file = true;
        b.old_mode = Some(text(m));
    } else if let Some(m) = hdr.strip_prefix(b"new file mode ") {
        b.new_file = true;
        b.new_mode = Some(text(m));
    } else if let Some(s) = hdr
        .strip_prefix(b"similarity index ")
        .or_else(|| hdr.strip_prefix(b"dissimilarity index "))
    {
        let digits = s.strip_suffix(b"%").unwrap_or(s);
        b.similarity = std::str::from_utf8(digits)
            .ok()
            .and_then(|d| d.parse().ok());
    } else if let Some(p) = hdr.strip_prefix(b"rename from ") {
        b.rename_from = bare_path(p).ok();
    } else if let Some(p) = hdr.strip_prefix(b"rename to ") {
        b.rename_to = bare_path(p).ok();
    } else if let Some(p) = hdr.strip_prefix(b"copy from ") {
        b.copy_from = bare_path(p).ok();
    } else if let Some(p) = hdr.strip_prefix(b"copy to ") {
        b.copy_to = bare_path(p).ok();
    } else if hdr.starts_with(b"index ") {
        // Blob ids say nothing a reviewer needs.
    } else if hdr.starts_with(b"Binary files ") && hdr.ends_with(b" differ") {
        b.binary = true;
        // Plain diffs have no mode lines: /dev/null is then the only sign of an add or delete.
        if hdr.starts_with(b"Binary files /dev/null and ") {
            b.new_file = true;
        }
        if hdr.ends_with(b" and /dev/null differ") {
            b.deleted_file = true;
        }
    } else if hdr.starts_with(b"GIT binary patch") {
        b.binary = true;
    } else {
        return false;
    }
    true
}

/// `@@ -a[,b] +c[,d] @@[ context]`.
fn parse_hunk_header(hdr: &[u8]) -> Option<Hunk> {
    let rest = hdr.strip_prefix(b"@@ -")?;
    let (old_start, old_count, rest) = range(rest)?;
    let rest = rest.strip_prefix(b" +")?;
    let (new_start, new_count, rest) = range(rest)?;
    let rest = rest.strip_prefix(b" @@")?;
    let context = rest.strip_prefix(b" ").unwrap_or(rest);
    Some(Hunk {
        old_start,
        old_count,
        new_start,
        new_count,
        context: String::from_utf8_lossy(context).into_owned(),
        lines: Vec::new(),
    })
}

/// `start[,count]`; the count defaults to 1.
fn range(s: &[u8]) -> Option<(u32, u32, &[u8])> {
    let (start, rest) = number(s)?;
    match rest.strip_prefix(b",") {
        Some(rest) => {
            let (count, rest) = number(rest)?;
            Some((start, count, rest))
        }
        None => Some((start, 1, rest)),
    }
}

fn number(s: &[u8]) -> Option<(u32, &[u8])> {
    let len = s.iter().take_while(|b| b.is_ascii_digit()).count();
    if len == 0 {
        return None;
    }
    let mut n: u32 = 0;
    for &d in &s[..len] {
        n = n.checked_mul(10)?.checked_add(u32::from(d - b'0'))?;
    }
    Some((n, &s[len..]))
}

impl Builder {
    fn build(self, end: usize) -> FileDiff {
        let renamed = self.rename_from.is_some() || self.rename_to.is_some();
        let copied = self.copy_from.is_some() || self.copy_to.is_some();
        let (header_old, header_new) = match self.header {
            Some((a, b)) => (Some(a), Some(b)),
            None => (None, None),
        };
        let added = self.new_file || matches!(self.minus, Some(None));
        let deleted = self.deleted_file || matches!(self.plus, Some(None));
        let status = if renamed {
            FileStatus::Renamed
        } else if copied {
            FileStatus::Copied
        } else if added {
            FileStatus::Added
        } else if deleted {
            FileStatus::Deleted
        } else {
            FileStatus::Modified
        };
        let old_path = match self.rename_from.or(self.copy_from) {
            Some(p) => Some(p),
            None => self.minus.unwrap_or(header_old.clone()),
        };
        let new_path = match self.rename_to.or(self.copy_to) {
            Some(p) => Some(p),
            None => self.plus.unwrap_or(header_new.clone()),
        };
        // A `---` of /dev/null on a file that is not added would lose the header's name.
        let old_path = match status {
            FileStatus::Added => None,
            _ => old_path.or(header_old),
        };
        let new_path = match status {
            FileStatus::Deleted => None,
            _ => new_path.or(header_new),
        };
        let mut file = FileDiff {
            old_path,
            new_path,
            status,
            binary: self.binary,
            old_mode: self.old_mode,
            new_mode: self.new_mode,
            similarity: self.similarity,
            hunks: self.hunks,
            changed: Vec::new(),
            span: self.start..end,
        };
        file.compute_changed();
        file
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hunk_headers() {
        let h = parse_hunk_header(b"@@ -1,7 +2 @@ fn main() {").unwrap();
        assert_eq!(
            (h.old_start, h.old_count, h.new_start, h.new_count),
            (1, 7, 2, 1)
        );
        assert_eq!(h.context, "fn main() {");
        let h = parse_hunk_header(b"@@ -0,0 +1,3 @@").unwrap();
        assert_eq!((h.old_count, h.new_start, h.new_count), (0, 1, 3));
        for bad in [
            &b"@@ -1 +1"[..],
            b"@@ -x +1 @@",
            b"@@ -1, +1 @@",
            b"@@ -99999999999 +1 @@",
            b"@@ +1 -1 @@",
        ] {
            assert!(parse_hunk_header(bad).is_none(), "{bad:?}");
        }
    }
}

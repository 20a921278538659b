//! Byte spans into a source file, and the line index that turns them into 1-based positions.

use schemars::JsonSchema;
use serde::Serialize;

/// A byte range of the source file: every model element keeps one so that a finding can point
/// into the file.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, JsonSchema,
)]
pub struct Span {
    /// Byte offset of the first byte.
    pub offset: usize,
    /// Length in bytes.
    pub len: usize,
}

impl Span {
    pub const fn new(offset: usize, len: usize) -> Self {
        Self { offset, len }
    }

    pub fn end(self) -> usize {
        self.offset + self.len
    }

    /// A sub-span, `start..start+len` relative to this span's start.
    pub fn sub(self, start: usize, len: usize) -> Self {
        Self::new(self.offset + start, len)
    }
}

impl From<miette::SourceSpan> for Span {
    fn from(s: miette::SourceSpan) -> Self {
        Self::new(s.offset(), s.len())
    }
}

impl From<Span> for miette::SourceSpan {
    fn from(s: Span) -> Self {
        miette::SourceSpan::new(s.offset.into(), s.len)
    }
}

/// A value with the span it was read from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Spanned<T> {
    pub value: T,
    pub span: Span,
}

impl<T> Spanned<T> {
    pub fn new(value: T, span: Span) -> Self {
        Self { value, span }
    }
}

impl<T> std::ops::Deref for Spanned<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.value
    }
}

/// A 1-based line and column (the column counts UTF-8 characters, as editors do).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Position {
    pub line: usize,
    pub column: usize,
}

/// Offsets of line starts, for turning byte offsets into positions in O(log n).
#[derive(Clone, Debug)]
pub struct LineIndex {
    starts: Vec<usize>,
    /// Every byte is a character: a column is then a subtraction, not a count along the line
    /// (a file of one long line and many findings would be quadratic).
    ascii: bool,
}

impl LineIndex {
    pub fn new(text: &str) -> Self {
        let mut starts = vec![0];
        starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        Self {
            starts,
            ascii: text.is_ascii(),
        }
    }

    /// The offset of the start of the line `offset` is on.
    pub fn line_start(&self, offset: usize) -> usize {
        let line = self
            .starts
            .partition_point(|&s| s <= offset)
            .saturating_sub(1);
        self.starts[line]
    }

    pub fn position(&self, text: &str, offset: usize) -> Position {
        let offset = offset.min(text.len());
        let line = self
            .starts
            .partition_point(|&s| s <= offset)
            .saturating_sub(1);
        let start = self.starts[line];
        let column = match self.ascii {
            true => offset - start,
            false => text
                .get(start..offset)
                .map_or(offset - start, |s| s.chars().count()),
        } + 1;
        Position {
            line: line + 1,
            column,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_are_one_based() {
        let text = "ab\ncdé\nf";
        let idx = LineIndex::new(text);
        assert_eq!(idx.position(text, 0), Position { line: 1, column: 1 });
        assert_eq!(idx.position(text, 3), Position { line: 2, column: 1 });
        assert_eq!(idx.position(text, 7), Position { line: 2, column: 4 });
        assert_eq!(idx.position(text, 8), Position { line: 3, column: 1 });
    }

    /// An ASCII text takes the subtraction; both ways agree, and the line start is the one a
    /// search back along the line finds.
    #[test]
    fn an_ascii_column_is_the_same_as_a_counted_one() {
        let text = "pipeline \"p\"\n  needs \"a\" \"b\"\n\nx";
        let idx = LineIndex::new(text);
        for offset in 0..=text.len() {
            let start = text[..offset].rfind('\n').map_or(0, |i| i + 1);
            assert_eq!(idx.line_start(offset), start, "{offset}");
            assert_eq!(
                idx.position(text, offset).column,
                text[start..offset].chars().count() + 1,
                "{offset}"
            );
        }
    }
}

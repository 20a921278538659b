//! A pipeline file as read from disk: its name, its text, and its line index.

use std::sync::Arc;

use crate::span::{LineIndex, Position, Span};

/// One source file. Cheap to clone (the text is shared).
#[derive(Clone, Debug)]
pub struct Source {
    name: Arc<str>,
    text: Arc<str>,
    lines: Arc<LineIndex>,
}

impl Source {
    pub fn new(name: impl Into<String>, text: impl Into<String>) -> Self {
        let text: String = text.into();
        let lines = LineIndex::new(&text);
        Self {
            name: Arc::from(name.into()),
            text: Arc::from(text),
            lines: Arc::new(lines),
        }
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn text(&self) -> &str {
        &self.text
    }

    pub fn position(&self, offset: usize) -> Position {
        self.lines.position(&self.text, offset)
    }

    /// The offset of the start of the line `offset` is on.
    pub fn line_start(&self, offset: usize) -> usize {
        self.lines.line_start(offset.min(self.text.len()))
    }

    /// The text a span covers, or "" when the span is out of range.
    pub fn slice(&self, span: Span) -> &str {
        self.text.get(span.offset..span.end()).unwrap_or("")
    }

    pub fn named_source(&self) -> miette::NamedSource<String> {
        miette::NamedSource::new(&self.name, self.text.to_string())
    }
}

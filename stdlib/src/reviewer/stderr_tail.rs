//! The last lines a reviewer program wrote on standard error: they explain a failed try.

use std::collections::VecDeque;

/// Lines kept.
const LINES: usize = 3;
/// Longest line kept, in characters.
const LINE_CHARS: usize = 200;

/// The last non-blank stderr lines, trimmed and cut.
#[derive(Default)]
pub(crate) struct StderrTail(VecDeque<String>);

impl StderrTail {
    pub(crate) fn push(&mut self, line: &str) {
        let line = line.trim();
        if line.is_empty() {
            return;
        }
        if self.0.len() == LINES {
            self.0.pop_front();
        }
        self.0.push_back(line.chars().take(LINE_CHARS).collect());
    }

    pub(crate) fn into_lines(self) -> Vec<String> {
        self.0.into()
    }
}

/// `: a / b / c` after a failure's first words, or nothing.
pub(crate) fn tail(lines: &[String]) -> String {
    if lines.is_empty() {
        String::new()
    } else {
        format!(": {}", lines.join(" / "))
    }
}

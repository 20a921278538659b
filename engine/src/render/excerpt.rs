//! Bounded source excerpts for human findings.
//!
//! miette prints one excerpt from the first label to the last, so a finding with a label at the
//! top of a file and another at the bottom printed everything in between, and a label over a
//! long multi-line value printed all of it. Here an excerpt shows only the labelled lines with
//! [`CONTEXT_LINES`] of context each; labels more than [`MERGE_GAP`] hidden lines apart are
//! printed as separate parts of one excerpt, joined by a `...` line; a label over more than
//! [`MAX_LABEL_LINES`] lines is drawn on its first line and says which lines it covers.
//!
//! A line longer than [`MAX_LINE_CHARS`] is clipped to the parts around its labels, the rest
//! shown as `…`, and control characters are escaped ([`super::escape`]): miette would print a
//! 1 MB line whole for every finding on it (and panics past column 65 535), and would send a
//! file's escape sequences to the terminal.
//!
//! How: miette does not read the file but an [`Excerpt`], built per finding from the lines it
//! shows only (so the work per finding does not grow with the file): those lines, clipped and
//! escaped, with the labels moved to match. It reports the lines' real numbers, and counts only
//! the lines it holds, so miette keeps far-apart labels in separate snippets instead of one;
//! [`stitch`] then joins those snippets into one excerpt with an elision line between them.

use std::collections::BTreeMap;

use miette::{
    GraphicalTheme, MietteError, MietteSpanContents, SourceCode, SourceSpan, SpanContents,
};

use super::escape;
use crate::source::Source;
use crate::span::Span;

/// Lines shown before and after each labelled line.
pub const CONTEXT_LINES: usize = 1;
/// Labels whose snippets are at most this many lines apart share one snippet: hiding one or two
/// lines behind a `...` line saves nothing.
pub const MERGE_GAP: usize = 2;
/// A label over more lines than this is drawn on its first line only.
pub const MAX_LABEL_LINES: usize = 3;
/// A longer line is clipped around its labels.
pub const MAX_LINE_CHARS: usize = 400;
/// Characters kept on each side of a label's ends on a clipped line.
const CLIP_MARGIN: usize = 30;
/// A label over more characters than this is drawn over its first ones.
const MAX_LABEL_CHARS: usize = 80;

/// A label to draw: where in the file, and what it says.
pub struct Mark {
    pub span: Span,
    pub message: String,
}

/// The lines of one finding's excerpt as miette reads them, and its labels in their coordinates.
pub struct Excerpt {
    name: String,
    text: String,
    lines: Vec<Line>,
    /// The labels, in [`Excerpt::text`] coordinates, in the order given.
    pub labels: Vec<(SourceSpan, String)>,
    /// Each label's start, with its 0-based column in the file, for miette's `[file:line:col]`.
    columns: Vec<(usize, usize)>,
}

struct Line {
    /// Offset of the line in [`Excerpt::text`]; it ends at the next line's start.
    start: usize,
    /// 0-based line number in the file.
    number: usize,
}

impl Excerpt {
    /// The excerpt of `marks` (spans already bounded with [`bound_label`], messages escaped) in
    /// `source`.
    pub fn new(source: &Source, marks: &[Mark]) -> Self {
        let text = source.text();
        let spans: Vec<Span> = marks.iter().map(|m| clamp_label(text, m.span)).collect();
        // The lines to show, by 0-based number: (start, end without the newline).
        let mut shown: BTreeMap<usize, (usize, usize)> = BTreeMap::new();
        for span in &spans {
            let first = line_start(text, span.offset);
            let number = source.position(first).line - 1;
            let (mut start, mut n) = (first, number);
            for _ in 0..CONTEXT_LINES {
                if start == 0 {
                    break;
                }
                start = line_start(text, start - 1);
                n -= 1;
            }
            let last_byte = span
                .end()
                .max(span.offset + 1)
                .min(text.len())
                .saturating_sub(1);
            let last = line_start(text, last_byte).max(first);
            let mut end_of_context = 0;
            loop {
                // The empty "line" after a final newline is no context worth showing.
                if start == text.len() && start > last {
                    break;
                }
                let end = line_end(text, start);
                shown.insert(n, (start, end));
                if start >= last {
                    end_of_context += 1;
                }
                if end >= text.len() || end_of_context > CONTEXT_LINES {
                    break;
                }
                start = end + 1;
                n += 1;
            }
        }
        // Fill gaps miette would join anyway, so its line numbers stay right.
        let numbers: Vec<(usize, usize)> = shown.iter().map(|(&n, &(_, e))| (n, e)).collect();
        for pair in numbers.windows(2) {
            let ((a, a_end), (b, _)) = (pair[0], pair[1]);
            if b > a + 1 && b - a - 1 <= MERGE_GAP {
                let mut start = a_end + 1;
                for n in a + 1..b {
                    let end = line_end(text, start);
                    shown.insert(n, (start, end));
                    start = end + 1;
                }
            }
        }
        // Draw each line, recording where each kept byte of the file went.
        let mut out = String::new();
        let mut lines = Vec::new();
        let mut map: Vec<(usize, usize)> = Vec::new();
        for (&number, &(start, end)) in &shown {
            lines.push(Line {
                start: out.len(),
                number,
            });
            let points: Vec<usize> = spans
                .iter()
                .flat_map(|s| [s.offset, s.end()])
                .filter(|&p| start <= p && p <= end)
                .collect();
            let parts = segments(text, start, end, &points);
            for (n, &(from, to)) in parts.iter().enumerate() {
                if n > 0 || from > start {
                    out.push(escape::ELLIPSIS);
                }
                for (i, c) in text[from..to].char_indices() {
                    map.push((from + i, out.len()));
                    escape::push_char(&mut out, c);
                }
                map.push((to, out.len()));
            }
            if parts.last().is_some_and(|&(_, to)| to < end) {
                out.push(escape::ELLIPSIS);
            }
            out.push('\n');
        }
        let at = |offset: usize| -> usize {
            let i = map.partition_point(|&(o, _)| o <= offset);
            map.get(i.saturating_sub(1)).map_or(0, |&(_, v)| v)
        };
        let mut labels = Vec::new();
        let mut columns = Vec::new();
        for (span, mark) in spans.iter().zip(marks) {
            let (from, to) = (at(span.offset), at(span.end()));
            labels.push((
                SourceSpan::new(from.into(), to.max(from) - from),
                mark.message.clone(),
            ));
            columns.push((from, source.position(span.offset).column - 1));
        }
        Self {
            name: escape::escaped(source.name()),
            text: out,
            lines,
            labels,
            columns,
        }
    }

    fn line_end(&self, i: usize) -> usize {
        self.lines.get(i + 1).map_or(self.text.len(), |l| l.start)
    }
}

impl SourceCode for Excerpt {
    fn read_span<'a>(
        &'a self,
        span: &SourceSpan,
        context_lines_before: usize,
        context_lines_after: usize,
    ) -> Result<Box<dyn SpanContents<'a> + 'a>, MietteError> {
        let offset = span.offset().min(self.text.len());
        let end = (offset + span.len()).min(self.text.len());
        let line_of = |o: usize| {
            self.lines
                .partition_point(|l| l.start <= o)
                .saturating_sub(1)
        };
        let (mut first, mut last) = (line_of(offset), line_of(end.saturating_sub(1).max(offset)));
        if self.lines.is_empty() {
            return Err(MietteError::OutOfBounds);
        }
        // Context within the lines shown next to each other only.
        let next_to = |a: usize, b: usize| self.lines[b].number == self.lines[a].number + 1;
        for _ in 0..context_lines_before {
            if first == 0 || !next_to(first - 1, first) {
                break;
            }
            first -= 1;
        }
        for _ in 0..context_lines_after {
            if last + 1 >= self.lines.len() || !next_to(last, last + 1) {
                break;
            }
            last += 1;
        }
        let (from, to) = (self.lines[first].start, self.line_end(last));
        let line = line_of(offset);
        let column = self
            .columns
            .iter()
            .find(|&&(at, _)| at == offset)
            .map_or_else(
                || {
                    self.text
                        .get(self.lines[line].start..offset)
                        .map_or(0, |s| s.chars().count())
                },
                |&(_, column)| column,
            );
        Ok(Box::new(MietteSpanContents::new_named(
            self.name.clone(),
            &self.text.as_bytes()[from..to],
            SourceSpan::new(from.into(), to - from),
            self.lines[first].number,
            column,
            // miette joins two snippets when the first one's `line + line_count` reaches the
            // second one's first line: the lines held, plus the gap worth showing.
            last - first + 1 + MERGE_GAP,
        )))
    }
}

/// The start of the line holding `offset`.
fn line_start(text: &str, offset: usize) -> usize {
    text.get(..offset)
        .and_then(|t| t.rfind('\n'))
        .map_or(0, |i| i + 1)
}

/// The end (the newline, or the end of the text) of the line starting at `start`.
fn line_end(text: &str, start: usize) -> usize {
    text.get(start..)
        .and_then(|t| t.find('\n'))
        .map_or(text.len(), |i| start + i)
}

/// A label inside the file, over at most [`MAX_LABEL_CHARS`] characters.
fn clamp_label(text: &str, span: Span) -> Span {
    let offset = floor_char(text, span.offset.min(text.len()));
    let end = ceil_char(text, span.end().clamp(offset, text.len()));
    let end = text[offset..end]
        .char_indices()
        .nth(MAX_LABEL_CHARS)
        .map_or(end, |(i, _)| offset + i);
    Span::new(offset, ceil_char(text, end) - offset)
}

fn floor_char(text: &str, mut i: usize) -> usize {
    while !text.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn ceil_char(text: &str, mut i: usize) -> usize {
    while !text.is_char_boundary(i) {
        i += 1;
    }
    i
}

/// The parts of the line `start..end` to show: all of it when it is short, else the parts
/// around `points` (label ends), [`CLIP_MARGIN`] characters either side, merged when they meet.
fn segments(text: &str, start: usize, end: usize, points: &[usize]) -> Vec<(usize, usize)> {
    let line = &text[start..end];
    if line.len() <= MAX_LINE_CHARS || line.chars().nth(MAX_LINE_CHARS).is_none() {
        return vec![(start, end)];
    }
    let mut points = points.to_vec();
    if points.is_empty() {
        points.push(start);
    }
    points.sort_unstable();
    let back = |p: usize| {
        text[start..p]
            .char_indices()
            .rev()
            .nth(CLIP_MARGIN - 1)
            .map_or(start, |(i, _)| start + i)
    };
    let forward = |p: usize| {
        text[p..end]
            .char_indices()
            .nth(CLIP_MARGIN)
            .map_or(end, |(i, _)| p + i)
    };
    let mut out: Vec<(usize, usize)> = Vec::new();
    for p in points {
        let (from, to) = (back(p), forward(p));
        match out.last_mut() {
            Some(last) if from <= last.1 => last.1 = last.1.max(to),
            _ => out.push((from, to)),
        }
    }
    out
}

/// A label as drawn: `span` unchanged, or, over more than [`MAX_LABEL_LINES`] lines, cut to the
/// end of its first line with the lines it covers added to `message`.
pub fn bound_label(source: &Source, span: Span, message: &str) -> (Span, String) {
    let text = source.text();
    let start = span.offset.min(text.len());
    let end = span.end().clamp(start, text.len());
    let covered = text.get(start..end).unwrap_or("");
    let trimmed = covered.trim_end_matches('\n');
    if trimmed.matches('\n').take(MAX_LABEL_LINES).count() < MAX_LABEL_LINES {
        return (span, message.to_string());
    }
    let first = covered.split('\n').next().unwrap_or("").trim_end();
    let (from, to) = (
        source.position(start).line,
        source.position(start + trimmed.len()).line,
    );
    let message = if message.is_empty() {
        format!("lines {from}-{to}")
    } else {
        format!("{message} (lines {from}-{to})")
    };
    (Span::new(start, first.len().max(1)), message)
}

/// Removes ANSI colour sequences (`ESC [ … letter`).
fn plain(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' && chars.peek() == Some(&'[') {
            chars.next();
            for c in chars.by_ref() {
                if ('@'..='~').contains(&c) {
                    break;
                }
            }
            continue;
        }
        out.push(c);
    }
    out
}

/// One snippet of a rendered report: the lines of its header, body and footer.
struct Snippet {
    header: usize,
    footer: usize,
    /// The width miette gave its line numbers.
    width: usize,
}

/// Joins the snippets miette printed for one report into one excerpt: one header (the snippet
/// holding `primary_line`, 1-based, names the place), every part's lines at one width, and a
/// `...` line between parts. A report with one snippet, or one this cannot read, is returned as
/// it is.
pub fn stitch(rendered: &str, theme: &GraphicalTheme, primary_line: usize) -> String {
    let c = &theme.characters;
    let header_start = format!("{}{}[", c.ltop, c.hbar);
    let footer = format!("{}{}", c.lbot, c.hbar.to_string().repeat(4));
    let lines: Vec<&str> = rendered.lines().collect();
    let mut snippets: Vec<Snippet> = Vec::new();
    let mut open: Option<(usize, usize)> = None;
    for (i, line) in lines.iter().enumerate() {
        let bare = plain(line);
        if bare.trim_start().starts_with(&header_start) {
            if open.is_some() {
                return rendered.to_string();
            }
            let indent = bare.len() - bare.trim_start().len();
            open = Some((i, indent.saturating_sub(2)));
        } else if bare.trim() == footer {
            let Some((header, width)) = open.take() else {
                return rendered.to_string();
            };
            snippets.push(Snippet {
                header,
                footer: i,
                width,
            });
        }
    }
    if snippets.len() < 2 || open.is_some() {
        return rendered.to_string();
    }
    if snippets
        .windows(2)
        .any(|pair| pair[1].header != pair[0].footer + 1)
    {
        return rendered.to_string();
    }
    let number = |line: &str| -> Option<usize> {
        let bare = plain(line);
        let (digits, rest) = bare.trim_start().split_once(' ')?;
        rest.starts_with(c.vbar).then(|| digits.parse().ok())?
    };
    let holds_primary = snippets
        .iter()
        .position(|s| {
            let numbers: Vec<usize> = lines[s.header + 1..s.footer]
                .iter()
                .filter_map(|l| number(l))
                .collect();
            numbers.first().is_some_and(|&a| a <= primary_line)
                && numbers.last().is_some_and(|&b| primary_line <= b)
        })
        .unwrap_or(0);
    let marker = "...";
    let width = snippets
        .iter()
        .map(|s| s.width)
        .max()
        .unwrap_or(0)
        .max(marker.len());
    let pad = |s: &Snippet| " ".repeat(width - s.width);
    let mut out: Vec<String> = lines[..snippets[0].header]
        .iter()
        .map(|l| (*l).to_string())
        .collect();
    let chosen = &snippets[holds_primary];
    out.push(format!("{}{}", pad(chosen), lines[chosen.header]));
    for (n, s) in snippets.iter().enumerate() {
        if n > 0 {
            out.push(format!(" {marker:>width$} {}", c.vbar_break));
        }
        for line in &lines[s.header + 1..s.footer] {
            out.push(format!("{}{line}", pad(s)));
        }
    }
    let last = &snippets[snippets.len() - 1];
    out.push(format!("{}{}", pad(last), lines[last.footer]));
    out.extend(lines[last.footer + 1..].iter().map(|l| (*l).to_string()));
    let mut text = out.join("\n");
    if rendered.ends_with('\n') {
        text.push('\n');
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_label_is_kept() {
        let source = Source::new("f", "a\nb\nc\n");
        assert_eq!(
            bound_label(&source, Span::new(0, 3), "here"),
            (Span::new(0, 3), "here".to_string())
        );
    }

    #[test]
    fn a_long_label_is_cut_to_its_first_line() {
        let text = "x\nstage {\n  a\n  b\n  c\n}\n";
        let source = Source::new("f", text);
        let (span, message) = bound_label(&source, Span::new(2, text.len() - 3), "this stage");
        assert_eq!(&text[span.offset..span.end()], "stage {");
        assert_eq!(message, "this stage (lines 2-6)");
    }

    fn excerpt(text: &str, spans: &[Span]) -> Excerpt {
        let marks: Vec<Mark> = spans
            .iter()
            .map(|&span| Mark {
                span,
                message: "m".into(),
            })
            .collect();
        Excerpt::new(&Source::new("f", text), &marks)
    }

    #[test]
    fn an_excerpt_holds_the_labelled_lines_and_their_context() {
        let text = "l1\nl2\nl3\nl4\nl5\nl6\nl7\nl8\nl9\nl10\n";
        let at = text.find("l8").unwrap();
        let e = excerpt(text, &[Span::new(3, 2), Span::new(at, 2)]);
        // l1-l3 around l2, then l7-l9 around l8; l4-l6 are three hidden lines.
        assert_eq!(e.text, "l1\nl2\nl3\nl7\nl8\nl9\n");
        let numbers: Vec<usize> = e.lines.iter().map(|l| l.number).collect();
        assert_eq!(numbers, [0, 1, 2, 6, 7, 8]);
        let (span, _) = &e.labels[1];
        assert_eq!(&e.text[span.offset()..span.offset() + span.len()], "l8");
        // Two hidden lines are shown instead.
        let at = text.find("l6").unwrap();
        let e = excerpt(text, &[Span::new(3, 2), Span::new(at, 2)]);
        assert_eq!(e.text, "l1\nl2\nl3\nl4\nl5\nl6\nl7\n");
    }

    #[test]
    fn a_long_line_is_clipped_around_its_labels() {
        let text = format!("pipeline \"x\"{}a=1\n", " ".repeat(65_536));
        let at = text.find("a=1").unwrap();
        let e = excerpt(&text, &[Span::new(at, 1)]);
        assert_eq!(e.text, format!("…{}a=1\n", " ".repeat(30)));
        let (span, _) = &e.labels[0];
        assert_eq!(&e.text[span.offset()..span.offset() + span.len()], "a");
        // miette's header names the column in the file.
        let read = e.read_span(span, 0, 0).unwrap();
        assert_eq!((read.line(), read.column()), (0, at));
    }

    #[test]
    fn control_characters_are_escaped_and_labels_follow() {
        let text = "stage \"\u{1b}[2J\" uses=\"x\"\n";
        let at = text.find("uses").unwrap();
        let e = excerpt(text, &[Span::new(at, 4)]);
        assert_eq!(e.text, "stage \"\\u{1b}[2J\" uses=\"x\"\n");
        let (span, _) = &e.labels[0];
        assert_eq!(&e.text[span.offset()..span.offset() + span.len()], "uses");
    }

    #[test]
    fn one_snippet_is_left_alone() {
        let theme = GraphicalTheme::none();
        let one = "x\n   ,-[f:1:1]\n 1 | a\n   `----\nhelp\n";
        assert_eq!(stitch(one, &theme, 1), one);
    }

    #[test]
    fn snippets_are_joined_with_an_elision() {
        let theme = GraphicalTheme::none();
        let two = "  x m\n   ,-[f:2:1]\n 1 | a\n 2 | b\n   :  `-- one\n   `----\n    ,-[f:30:1]\n 30 | z\n    :  `-- two\n    `----\n  help: h\n";
        assert_eq!(
            stitch(two, &theme, 30),
            "  x m\n     ,-[f:30:1]\n   1 | a\n   2 | b\n     :  `-- one\n ... :\n  30 | z\n     :  `-- two\n     `----\n  help: h\n"
        );
    }
}

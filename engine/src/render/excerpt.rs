//! Bounded source excerpts for human findings.
//!
//! miette prints one excerpt from the first label to the last, so a finding with a label at the
//! top of a file and another at the bottom printed everything in between, and a label over a
//! long multi-line value printed all of it. Here an excerpt shows only the labelled lines with
//! [`CONTEXT_LINES`] of context each; labels more than [`MERGE_GAP`] hidden lines apart are
//! printed as separate parts of one excerpt, joined by a `...` line; a label over more than
//! [`MAX_LABEL_LINES`] lines is drawn on its first line and says which lines it covers.
//!
//! How: [`ExcerptSource`] reads spans like miette's own `str` source but reports the number of
//! lines it actually read, so miette keeps far-apart labels in separate snippets instead of one;
//! [`stitch`] then joins those snippets into one excerpt with an elision line between them.

use miette::{
    GraphicalTheme, MietteError, MietteSpanContents, SourceCode, SourceSpan, SpanContents,
};

use crate::span::Span;

/// Lines shown before and after each labelled line.
pub const CONTEXT_LINES: usize = 1;
/// Labels whose snippets are at most this many lines apart share one snippet: hiding one or two
/// lines behind a `...` line saves nothing.
pub const MERGE_GAP: usize = 2;
/// A label over more lines than this is drawn on its first line only.
pub const MAX_LABEL_LINES: usize = 3;

/// The source of one file as miette reads it, with honest line counts.
pub struct ExcerptSource<'a> {
    pub name: &'a str,
    pub text: &'a str,
}

impl SourceCode for ExcerptSource<'_> {
    fn read_span<'a>(
        &'a self,
        span: &SourceSpan,
        context_lines_before: usize,
        context_lines_after: usize,
    ) -> Result<Box<dyn SpanContents<'a> + 'a>, MietteError> {
        let inner = self
            .text
            .read_span(span, context_lines_before, context_lines_after)?;
        let data = inner.data();
        // miette joins two snippets when the first one's `line + line_count` reaches the second
        // one's first line; its `str` source counts every line from the top of the file there,
        // which joins nearly everything. Report the lines read, plus the gap worth showing.
        let lines = data.iter().filter(|&&b| b == b'\n').count()
            + usize::from(!data.is_empty() && !data.ends_with(b"\n"));
        Ok(Box::new(MietteSpanContents::new_named(
            self.name.to_string(),
            data,
            *inner.span(),
            inner.line(),
            inner.column(),
            lines + MERGE_GAP,
        )))
    }
}

/// A label as drawn: `span` unchanged, or, over more than [`MAX_LABEL_LINES`] lines, cut to the
/// end of its first line with the lines it covers added to `message`.
pub fn bound_label(text: &str, span: Span, message: &str) -> (Span, String) {
    let start = span.offset.min(text.len());
    let end = span.end().min(text.len());
    let covered = text.get(start..end).unwrap_or("");
    let lines = covered.trim_end_matches('\n').matches('\n').count() + 1;
    if lines <= MAX_LABEL_LINES {
        return (span, message.to_string());
    }
    let first = covered.split('\n').next().unwrap_or("").trim_end();
    let line_of = |offset: usize| {
        text.get(..offset)
            .map_or(0, |before| before.matches('\n').count())
            + 1
    };
    let (from, to) = (
        line_of(start),
        line_of(start + covered.trim_end_matches('\n').len()),
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
        let text = "a\nb\nc\n";
        assert_eq!(
            bound_label(text, Span::new(0, 3), "here"),
            (Span::new(0, 3), "here".to_string())
        );
    }

    #[test]
    fn a_long_label_is_cut_to_its_first_line() {
        let text = "x\nstage {\n  a\n  b\n  c\n}\n";
        let (span, message) = bound_label(text, Span::new(2, text.len() - 3), "this stage");
        assert_eq!(&text[span.offset..span.end()], "stage {");
        assert_eq!(message, "this stage (lines 2-6)");
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

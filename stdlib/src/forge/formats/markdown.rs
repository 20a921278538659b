//! `review.md`: the review comment as the reviewer wrote it, then the findings as a list.
//!
//! The comment is the reviewer's markdown and is kept as is. Finding fields are escaped: a
//! path or rule sits in a code span that no backtick inside can close, and a message is one
//! line with markdown and HTML punctuation backslash-escaped, so a finding cannot open a link,
//! an image, a heading or raw HTML.

use std::fmt::Write as _;

use super::super::review::{Review, ReviewFinding};

pub(super) fn render(review: &Review) -> String {
    let mut out = String::new();
    out.push_str("# Review\n\n");
    let _ = write!(
        out,
        "Reviewer: {} · base {} · head {} · run {}",
        escape(&review.reviewer),
        code(review.base.short()),
        code(review.head.short()),
        code(&review.run_id),
    );
    out.push_str("\n\n");
    let comment = review.comment.trim();
    if comment.is_empty() {
        out.push_str("_No comment._\n");
    } else {
        out.push_str(comment);
        out.push('\n');
    }
    let _ = write!(out, "\n## Findings ({})\n\n", review.findings.len());
    if review.findings.is_empty() {
        out.push_str("None.\n");
    }
    for f in &review.findings {
        out.push_str(&item(f));
        out.push('\n');
    }
    out
}

fn item(f: &ReviewFinding) -> String {
    let location = match (f.line, f.end_line) {
        (Some(line), Some(end)) if end > line => format!("{}:{line}-{end}", f.path),
        (Some(line), _) => format!("{}:{line}", f.path),
        (None, _) => f.path.clone(),
    };
    format!(
        "- **{}** {} {}: {}",
        f.severity,
        code(&location),
        code(&f.rule),
        escape(&f.message)
    )
}

/// `text` as a code span: the fence is one backtick longer than the longest run inside, and
/// line breaks become spaces.
fn code(text: &str) -> String {
    let text: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let mut longest = 0;
    let mut run = 0;
    for c in text.chars() {
        run = if c == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    let fence = "`".repeat(longest + 1);
    let pad = if text.starts_with('`') || text.ends_with('`') || text.is_empty() {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{text}{pad}{fence}")
}

/// One line of text with markdown and HTML punctuation escaped.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\\' | '`' | '*' | '_' | '{' | '}' | '[' | ']' | '(' | ')' | '#' | '+' | '-' | '.'
            | '!' | '|' | '~' | '>' | '<' | '&' => {
                out.push('\\');
                out.push(c);
            }
            c if c.is_control() => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn code_spans_cannot_be_closed_from_inside() {
        assert_eq!(code("a.rs"), "`a.rs`");
        assert_eq!(code("a`b"), "``a`b``");
        assert_eq!(code("`x"), "`` `x ``");
        assert_eq!(code("a\nb"), "`a b`");
    }

    #[test]
    fn messages_stay_text() {
        assert_eq!(
            escape("see [x](http://e) <img>\n# h"),
            "see \\[x\\]\\(http://e\\) \\<img\\> \\# h"
        );
    }
}

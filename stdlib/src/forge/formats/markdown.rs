//! `review.md`: the review comment as the reviewer wrote it, then the findings as a list, one
//! line per finding, so that the file reads the same on GitHub and in a terminal.
//!
//! The comment is the reviewer's markdown and is kept as is, except for the findings table the
//! built-in `rules` reviewer puts in its comment (for forges that post only the comment): here
//! the list below holds the same findings, so the table is left out and each finding is listed
//! once. With an earlier review to compare with, the findings heading counts the new,
//! persisting and resolved findings, each finding is marked `new` or `persisting`, and the
//! resolved ones follow (`docs/findings.md`).
//!
//! Finding fields are escaped only where markdown would not keep them as text: a path or rule
//! sits in a code span that no backtick inside can close; a message is one line of inline
//! markdown, rendered as the reviewer wrote it (code spans, emphasis, its own backslash
//! escapes), except that every `<` (raw HTML, autolinks) and `[` (links, images) outside a code
//! span is backslash-escaped. Nothing from a finding starts a line, so it cannot open a heading,
//! a quote, a list or a table, and `|` needs no escape outside a table.

use std::borrow::Cow;
use std::fmt::Write as _;

use super::super::review::{FindingState, Review, ReviewFinding};

/// The header row of the findings table the `rules` reviewer writes in its comment
/// (`reviewer::summary`), and its delimiter row.
const RULES_TABLE_HEADER: &str = "| severity | location | rule | message |";
const RULES_TABLE_DELIMITER: &str = "|---|---|---|---|";

pub(super) fn render(review: &Review) -> String {
    let mut out = String::new();
    out.push_str("# Review\n\n");
    let _ = write!(
        out,
        "Reviewer: {} · base {} · head {} · run {}",
        inline(&review.reviewer),
        code(review.base.short()),
        code(review.head.short()),
        code(&review.run_id),
    );
    out.push_str("\n\n");
    let comment = without_findings_listed(&review.comment);
    let comment = comment.trim();
    if comment.is_empty() {
        out.push_str("_No comment._\n");
    } else {
        out.push_str(comment);
        out.push('\n');
    }
    out.push('\n');
    out.push_str(&findings_section(review));
    out
}

/// The review comment as a forge posts it with the findings (the GitHub comment): the comment
/// without what lists the findings again (the `rules` reviewer's table, the aggregate's list),
/// then [`findings_section`].
pub(crate) fn comment_with_findings(review: &Review) -> String {
    let comment = without_findings_listed(&review.comment);
    let comment = comment.trim();
    let mut out = String::new();
    if !comment.is_empty() {
        out.push_str(comment);
        out.push_str("\n\n");
    }
    out.push_str(&findings_section(review));
    out
}

/// `## Findings (n)`, with the counts of each state when there was an earlier review to compare
/// with (`docs/findings.md`), one list item per finding marked `new` or `persisting`, then
/// `## Resolved (k)` and the findings of the last review this one no longer has.
pub(crate) fn findings_section(review: &Review) -> String {
    let mut out = String::new();
    let _ = write!(out, "## Findings ({})", review.findings.len());
    if let Some(c) = review.state_counts() {
        let _ = write!(out, ": {}", c.phrase());
    }
    out.push_str("\n\n");
    if review.findings.is_empty() {
        out.push_str("None.\n");
    }
    for f in &review.findings {
        out.push_str(&item(f));
        out.push('\n');
    }
    if !review.resolved.is_empty() {
        let _ = write!(out, "\n## Resolved ({})\n\n", review.resolved.len());
        for f in &review.resolved {
            out.push_str(&item(f));
            out.push('\n');
        }
    }
    out
}

fn item(f: &ReviewFinding) -> String {
    if f.path.is_empty() {
        // A resolved finding whose details the baseline could not keep.
        return format!(
            "- **{}** {}: a finding of the last review (its details were not kept)",
            f.severity,
            code(f.fingerprint.as_deref().unwrap_or_default())
        );
    }
    let location = match (f.line, f.end_line) {
        (Some(line), Some(end)) if end > line => format!("{}:{line}-{end}", f.path),
        (Some(line), _) => format!("{}:{line}", f.path),
        (None, _) => f.path.clone(),
    };
    let state = match f.state {
        Some(FindingState::Resolved) | None => String::new(),
        Some(s) => format!(" _{}_", s.as_str()),
    };
    // The id the author answers with (docs/findings.md, "Answering a finding").
    let id = match &f.fingerprint {
        Some(print) => format!(" {}", code(&crate::forge::finding_id(print))),
        None => String::new(),
    };
    let mut out = format!(
        "- **{}**{state}{id} {} {}: {}",
        f.severity,
        code(&location),
        code(&f.rule),
        inline(&f.message)
    );
    if let Some(d) = f.dialogue.as_ref().filter(|d| d.state.is_some()) {
        out.push_str(&dialogue_line(d));
    }
    out
}

/// The dialogue under its finding, on one line: who refuted it and why, and the reviewer's
/// answer when there is one. The author's words are quoted as text, never as markdown.
fn dialogue_line(d: &crate::forge::Dialogue) -> String {
    let mut out = String::from("\n  - refuted");
    if !d.by.is_empty() {
        let _ = write!(out, " by {}", code(&d.by));
    }
    if !d.reason.is_empty() {
        let _ = write!(out, ": {}", code(&d.reason));
    }
    match d.state {
        Some(FindingState::Accepted) => out.push_str(" — the reviewer accepted"),
        Some(FindingState::Upheld) => out.push_str(" — the reviewer upheld the finding"),
        _ => out.push_str(" — awaiting the reviewer's answer"),
    }
    if !d.answer.is_empty() {
        let _ = write!(out, ": {}", inline(&d.answer));
    }
    out
}

/// `comment` without the `rules` reviewer's findings table: its header and delimiter rows, the
/// rows after them, the blank line before, and the `… and N more.` line that may follow.
fn without_findings_table(comment: &str) -> Cow<'_, str> {
    let lines: Vec<&str> = comment.lines().collect();
    let Some(start) = lines.windows(2).position(|w| {
        w[0].trim_end() == RULES_TABLE_HEADER && w[1].trim_end() == RULES_TABLE_DELIMITER
    }) else {
        return Cow::Borrowed(comment);
    };
    let mut end = start + 2;
    while lines.get(end).is_some_and(|l| l.starts_with('|')) {
        end += 1;
    }
    if lines.get(end).is_some_and(|l| l.trim().is_empty())
        && lines
            .get(end + 1)
            .is_some_and(|l| l.starts_with("… and ") && l.ends_with(" more."))
    {
        end += 2;
    }
    let start = if start > 0 && lines[start - 1].trim().is_empty() {
        start - 1
    } else {
        start
    };
    let mut out: Vec<&str> = lines[..start].to_vec();
    out.extend_from_slice(&lines[end..]);
    Cow::Owned(out.join("\n"))
}

/// `comment` without what lists the findings the findings section lists again: the `rules`
/// reviewer's table and the aggregate's marked list. Each finding is listed once.
fn without_findings_listed(comment: &str) -> String {
    without_findings_list(&without_findings_table(comment)).into_owned()
}

/// `comment` without the aggregate's marked list of findings (the lines between
/// `FINDINGS_LIST_START` and `FINDINGS_LIST_END`, each a list item): the findings section lists
/// them. A block holding anything but list items is kept whole, so the markers cannot hide a
/// reviewer's own text.
fn without_findings_list(comment: &str) -> Cow<'_, str> {
    use crate::stages::aggregate::{FINDINGS_LIST_END, FINDINGS_LIST_START};
    let lines: Vec<&str> = comment.lines().collect();
    let Some(start) = lines
        .iter()
        .position(|l| l.trim_end() == FINDINGS_LIST_START)
    else {
        return Cow::Borrowed(comment);
    };
    let Some(len) = lines[start + 1..]
        .iter()
        .position(|l| l.trim_end() == FINDINGS_LIST_END)
    else {
        return Cow::Borrowed(comment);
    };
    let end = start + 1 + len;
    if !lines[start + 1..end].iter().all(|l| l.starts_with("- ")) {
        return Cow::Borrowed(comment);
    }
    let mut out: Vec<&str> = lines[..start].to_vec();
    let mut rest = &lines[end + 1..];
    // One blank line where the list was, not two.
    if out.last().is_some_and(|l| l.trim().is_empty())
        && rest.first().is_some_and(|l| l.trim().is_empty())
    {
        rest = &rest[1..];
    }
    out.extend_from_slice(rest);
    Cow::Owned(out.join("\n"))
}

/// `text` as a code span: the fence is one backtick longer than the longest run inside, and
/// line breaks become spaces.
fn code(text: &str) -> String {
    let text = one_line(text);
    let mut longest = 0;
    let mut run = 0;
    for c in text.chars() {
        run = if c == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    let fence = "`".repeat(longest + 1);
    // A space at each end is stripped by markdown, so one is added where the text needs its own
    // (or starts or ends with a backtick, which would join the fence).
    let pad = if text.starts_with('`')
        || text.ends_with('`')
        || text.is_empty()
        || (text.starts_with(' ') && text.ends_with(' '))
    {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{text}{pad}{fence}")
}

/// Control characters (line breaks included) as spaces.
fn one_line(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

/// `text` (inline markdown, as a reviewer writes a message) as one line that renders as written,
/// code spans, emphasis and the reviewer's own backslash escapes included, but opens no raw
/// HTML, autolink, link or image: outside code spans, every `<` and `[` not already escaped is
/// escaped. Code spans are found as CommonMark finds them, left to right: a backslash escape is
/// two characters of text, and a run of backticks opens a span up to the next run of the same
/// length (a run with no match is literal backticks). Inside a code span nothing is escaped,
/// since markdown shows it literally.
fn inline(text: &str) -> String {
    let chars: Vec<char> = one_line(text).trim_end().chars().collect();
    let mut out = String::with_capacity(text.len() + 8);
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '\\' && chars.get(i + 1).is_some_and(char::is_ascii_punctuation) {
            // The reviewer's own escape: the character after it is text already.
            out.extend(&chars[i..i + 2]);
            i += 2;
            continue;
        }
        if c == '`' {
            let run = backtick_run(&chars, i);
            match closing_run(&chars, i + run, run) {
                Some(close) => {
                    out.extend(&chars[i..close + run]);
                    i = close + run;
                }
                None => {
                    out.extend(&chars[i..i + run]);
                    i += run;
                }
            }
            continue;
        }
        if c == '<' || c == '[' {
            out.push('\\');
        }
        out.push(c);
        i += 1;
    }
    out
}

/// The length of the run of backticks at `at`.
fn backtick_run(chars: &[char], at: usize) -> usize {
    chars[at..].iter().take_while(|c| **c == '`').count()
}

/// Where the next run of exactly `len` backticks from `from` starts.
fn closing_run(chars: &[char], from: usize, len: usize) -> Option<usize> {
    let mut i = from;
    while i < chars.len() {
        if chars[i] == '`' {
            let run = backtick_run(chars, i);
            if run == len {
                return Some(i);
            }
            i += run;
        } else {
            i += 1;
        }
    }
    None
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
        assert_eq!(code(" a "), "`  a  `");
    }

    #[test]
    fn messages_keep_code_spans_and_escape_only_what_would_not_stay_text() {
        // Code spans render as code: no backslash before a backtick.
        assert_eq!(inline("`TODO` added"), "`TODO` added");
        assert_eq!(inline("use ``a`b`` here"), "use ``a`b`` here");
        // An unmatched backtick is literal as it is.
        assert_eq!(inline("a ` b"), "a ` b");
        // Pipes, emphasis, `#`, `>` and `&` are text (or markup) in a list item.
        assert_eq!(inline("a | b *c* # d > e & f"), "a | b *c* # d > e & f");
        // Links, images, raw HTML and autolinks are not opened.
        assert_eq!(
            inline("see [x](http://e) ![i](y) <img> <http://e>"),
            "see \\[x](http://e) !\\[i](y) \\<img> \\<http://e>"
        );
        // Inside a code span HTML is literal text, so it is left as is.
        assert_eq!(
            inline("`<script>` and <script>"),
            "`<script>` and \\<script>"
        );
        // The reviewer's own escapes are kept: an escaped backtick opens no code span, and an
        // escaped `<` is not escaped twice (which would turn it back into HTML).
        assert_eq!(inline("C:\\dir \\* \\`x`"), "C:\\dir \\* \\`x`");
        assert_eq!(inline("\\<b> \\\\<b>"), "\\<b> \\\\\\<b>");
        assert_eq!(inline("\\``<b>`"), "\\``<b>`");
        // One line.
        assert_eq!(inline("a\n# h\r\n"), "a # h");
    }

    #[test]
    fn an_html_tag_cannot_reach_over_a_code_span() {
        // The `<` before the code span is escaped, so no tag can swallow its backtick.
        assert_eq!(inline("<a title=\"`\">x</a>`"), "\\<a title=\"`\">x</a>`");
    }

    #[test]
    fn states_are_counted_and_marked_and_resolved_findings_listed() {
        use crate::forge::review::FindingState;
        use crate::rules::Severity;
        let finding = |line: u32, state: Option<FindingState>| ReviewFinding {
            rule: "todo-added".into(),
            severity: Severity::Info,
            path: "a.rs".into(),
            line: Some(line),
            end_line: None,
            message: "`TODO` added".into(),
            fingerprint: Some("a".repeat(32)),
            state,
            dialogue: None,
            suggestion: None,
        };
        let sha = crate::git::Sha::parse(&"1".repeat(40)).unwrap();
        let mut review = Review {
            comment: String::new(),
            findings: vec![
                finding(1, Some(FindingState::New)),
                finding(2, Some(FindingState::Persisting)),
            ],
            base: sha.clone(),
            head: sha,
            run_id: "r".into(),
            conversation_id: None,
            reviewer: "rules".into(),
            resolved: vec![finding(3, Some(FindingState::Resolved))],
        };
        let bare = ReviewFinding {
            path: String::new(),
            line: None,
            ..finding(0, Some(FindingState::Resolved))
        };
        review.resolved.push(bare);
        assert_eq!(
            findings_section(&review),
            "## Findings (2): 1 new, 1 persisting, 2 resolved\n\n\
             - **info** _new_ `rf-aaaaaaaa` `a.rs:1` `todo-added`: `TODO` added\n\
             - **info** _persisting_ `rf-aaaaaaaa` `a.rs:2` `todo-added`: `TODO` added\n\
             \n## Resolved (2)\n\n\
             - **info** `rf-aaaaaaaa` `a.rs:3` `todo-added`: `TODO` added\n\
             - **info** `aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa`: a finding of the last review (its details were not kept)\n"
        );
        // No earlier review: no counts, no marks.
        review.resolved.clear();
        for f in &mut review.findings {
            f.state = None;
        }
        assert!(
            findings_section(&review)
                .starts_with("## Findings (2)\n\n- **info** `rf-aaaaaaaa` `a.rs:1`")
        );
    }

    #[test]
    fn the_aggregates_list_is_left_out_of_the_comment_and_only_a_list() {
        use crate::stages::aggregate::{FINDINGS_LIST_END, FINDINGS_LIST_START};
        let comment = format!(
            "**Verdict: comment**\n\n{FINDINGS_LIST_START}\n- **error** `a.rs:1`: x\n{FINDINGS_LIST_END}\n\n1 finding received."
        );
        assert_eq!(
            without_findings_listed(&comment),
            "**Verdict: comment**\n\n1 finding received."
        );
        // Markers around a reviewer's own prose hide nothing.
        let prose =
            format!("{FINDINGS_LIST_START}\nthe real conclusion\n{FINDINGS_LIST_END}\nmore");
        assert_eq!(without_findings_listed(&prose), prose);
    }

    #[test]
    fn the_rules_findings_table_is_left_out_of_the_comment() {
        let comment = "## reviewflow rules review\n\n**1 finding** in 1 file (+1 −0): 1 info.\n\n\
                       | severity | location | rule | message |\n|---|---|---|---|\n\
                       | info | `a.rs:1` | `todo-added` | `TODO` added |\n\n… and 3 more.\n\n\
                       _Continues the conversation of 1 earlier review._\n";
        assert_eq!(
            without_findings_table(comment),
            "## reviewflow rules review\n\n**1 finding** in 1 file (+1 −0): 1 info.\n\n\
             _Continues the conversation of 1 earlier review._"
        );
        let other = "| a | b |\n|---|---|\n| 1 | 2 |\n";
        assert_eq!(without_findings_table(other), other);
    }
}

//! Discussions on changed lines: the GitHub forge's filter modes choose the findings
//! ([`crate::forge::github::inline`]), and each becomes one thread whose `position` names the
//! merge request's three commits and the line. A thread is placed only on a line the change
//! added: GitLab places a thread on an unchanged line only with its old-side number too, which
//! the changed-line ranges do not keep, so such a finding stays in the note alone.
//!
//! A thread sits on the comment's last line, so a suggested fix is written in GitLab's syntax
//! for the lines above it: ```` ```suggestion:-N+0 ```` replaces the commented line and the N
//! lines above it (GitLab's "Suggest changes", multi-line suggestions), the same lines the
//! GitHub comment names with `start_line`.

use crate::forge::FileRanges;
use crate::forge::github::{InlineComment, suggestion_block};
use crate::gitlab::Position;

/// The most threads one post opens: each is one API call.
pub const MAX_DISCUSSIONS: usize = 50;

/// A thread to open.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Placed {
    pub body: String,
    pub position: Position,
}

/// The threads for `comments` (at most [`MAX_DISCUSSIONS`]) and how many were left to the note.
pub fn place(
    comments: &[InlineComment],
    ranges: &[FileRanges],
    base: &str,
    start: &str,
    head: &str,
) -> (Vec<Placed>, usize) {
    let mut placed = Vec::new();
    let mut left = 0;
    for c in comments {
        let file = ranges.iter().find(|r| r.path == c.path);
        let Some(file) = file.filter(|f| f.is_changed(c.line)) else {
            left += 1;
            continue;
        };
        if placed.len() == MAX_DISCUSSIONS {
            left += 1;
            continue;
        }
        placed.push(Placed {
            body: body(c),
            position: Position {
                position_type: "text".into(),
                base_sha: base.into(),
                start_sha: start.into(),
                head_sha: head.into(),
                old_path: file.old_path.clone().unwrap_or_else(|| file.path.clone()),
                new_path: file.path.clone(),
                new_line: Some(c.line),
                old_line: None,
            },
        });
    }
    (placed, left)
}

/// The thread's text: the comment, its suggestion (if any) in GitLab's syntax.
fn body(c: &InlineComment) -> String {
    match &c.suggested {
        Some(s) => {
            let above = c.line - c.start_line.unwrap_or(c.line).min(c.line);
            let block = suggestion_block(&format!("suggestion:-{above}+0"), &s.replacement);
            format!("{}\n\n{block}", s.text)
        }
        None => c.body.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diff::LineRange;
    use crate::forge::github::Side;

    fn comment(path: &str, line: u32) -> InlineComment {
        InlineComment {
            path: path.into(),
            line,
            start_line: None,
            start_side: None,
            side: Side::Right,
            body: format!("{path}:{line}"),
            suggested: None,
        }
    }

    #[test]
    fn threads_go_on_added_lines_with_the_three_commits() {
        let ranges = vec![FileRanges {
            path: "src/new.rs".into(),
            old_path: Some("src/old.rs".into()),
            changed: vec![LineRange { start: 3, end: 5 }],
            hunks: vec![LineRange { start: 1, end: 8 }],
        }];
        let (placed, left) = place(
            &[
                comment("src/new.rs", 4),
                comment("src/new.rs", 7),
                comment("x", 1),
            ],
            &ranges,
            "b",
            "s",
            "h",
        );
        assert_eq!(left, 2);
        assert_eq!(placed.len(), 1);
        let p = &placed[0].position;
        assert_eq!(
            (
                p.base_sha.as_str(),
                p.start_sha.as_str(),
                p.head_sha.as_str()
            ),
            ("b", "s", "h")
        );
        assert_eq!(
            (p.old_path.as_str(), p.new_path.as_str()),
            ("src/old.rs", "src/new.rs")
        );
        assert_eq!(p.new_line, Some(4));
        let json = serde_json::to_value(p).unwrap();
        assert_eq!(json["position_type"], "text");
        assert!(json.get("old_line").is_none());
    }

    #[test]
    fn a_flood_of_findings_opens_a_bounded_number_of_threads() {
        let ranges = vec![FileRanges {
            path: "f".into(),
            old_path: None,
            changed: vec![LineRange {
                start: 1,
                end: 1000,
            }],
            hunks: vec![LineRange {
                start: 1,
                end: 1000,
            }],
        }];
        let comments: Vec<_> = (1..=300).map(|l| comment("f", l)).collect();
        let (placed, left) = place(&comments, &ranges, "b", "s", "h");
        assert_eq!(
            (placed.len(), left),
            (MAX_DISCUSSIONS, 300 - MAX_DISCUSSIONS)
        );
    }

    #[test]
    fn a_suggestion_is_written_in_gitlab_s_syntax_for_the_lines_above() {
        use crate::forge::github::{FilterMode, inline};
        use crate::forge::review::ReviewFinding;
        let ranges = vec![FileRanges {
            path: "f".into(),
            old_path: None,
            changed: vec![LineRange { start: 1, end: 9 }],
            hunks: vec![LineRange { start: 1, end: 9 }],
        }];
        let finding = |line, end_line: Option<u32>, fix: &str| ReviewFinding {
            rule: "r".into(),
            severity: crate::rules::Severity::Warning,
            path: "f".into(),
            line: Some(line),
            end_line,
            message: "m".into(),
            fingerprint: None,
            state: None,
            dialogue: None,
            suggestion: Some(fix.into()),
        };
        let comments = inline(
            &[
                finding(2, Some(4), "a\nb"),
                finding(7, None, "c ``` d"),
                finding(8, None, ""),
            ],
            &ranges,
            FilterMode::Added,
        )
        .comments;
        let (placed, _) = place(&comments, &ranges, "b", "s", "h");
        let got: Vec<_> = placed
            .iter()
            .map(|p| (p.position.new_line, p.body.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                (
                    Some(4),
                    "**warning** · r\n\nm\n\n```suggestion:-2+0\na\nb\n```"
                ),
                (
                    Some(7),
                    "**warning** · r\n\nm\n\n````suggestion:-0+0\nc ``` d\n````"
                ),
                (Some(8), "**warning** · r\n\nm\n\n```suggestion:-0+0\n```"),
            ]
        );
    }
}

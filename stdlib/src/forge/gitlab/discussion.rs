//! Discussions on changed lines: the GitHub forge's filter modes choose the findings
//! ([`crate::forge::github::inline`]), and each becomes one thread whose `position` names the
//! merge request's three commits and the line. A thread is placed only on a line the change
//! added: GitLab places a thread on an unchanged line only with its old-side number too, which
//! the changed-line ranges do not keep, so such a finding stays in the note alone.

use crate::forge::FileRanges;
use crate::forge::github::InlineComment;
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
            body: c.body.clone(),
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
}

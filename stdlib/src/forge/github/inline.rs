//! Optional inline review comments: findings placed on the lines of the pull request's diff.
//!
//! GitHub accepts a review comment only on a line the diff shows (a hunk line, added or
//! context); one anywhere else makes it refuse the whole review (422). So whatever the filter
//! mode lets through, only hunk lines become inline comments; the rest is returned as
//! [`Inline::not_inline`] for the review's summary comment.
//!
//! The filter modes are reviewdog's (`-filter-mode`), with the same names.
//!
//! A finding's suggested fix becomes a ```` ```suggestion ```` block at the end of its comment,
//! which GitHub offers to apply in one click. GitHub replaces exactly the lines the comment is on
//! (`start_line`..=`line`), so the block is written only when those are the finding's lines;
//! and only when it fits the comment whole, since a cut suggestion would be wrong code.

use serde::Serialize;

use super::body::{COMMENT_MAX_CHARS, fit, fit_line};
use crate::diff::LineRange;
use crate::forge::{FileRanges, FindingState, ReviewFinding};
use crate::git::Sha;

/// Which findings may become inline comments.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum FilterMode {
    /// Only findings on a line the change added (reviewdog's default).
    #[default]
    Added,
    /// Findings on any line of a hunk, context lines included.
    DiffContext,
    /// Findings on any line of a file in the diff.
    File,
    /// Every finding.
    NoFilter,
}

impl FilterMode {
    pub const ALL: [FilterMode; 4] = [
        FilterMode::Added,
        FilterMode::DiffContext,
        FilterMode::File,
        FilterMode::NoFilter,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            FilterMode::Added => "added",
            FilterMode::DiffContext => "diff-context",
            FilterMode::File => "file",
            FilterMode::NoFilter => "nofilter",
        }
    }
}

impl std::fmt::Display for FilterMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for FilterMode {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        FilterMode::ALL
            .into_iter()
            .find(|m| m.as_str() == s)
            .ok_or_else(|| {
                format!("unknown filter mode `{s}` (added, diff-context, file, nofilter)")
            })
    }
}

/// The side of the diff a comment is on. Findings name new-side lines, so always `RIGHT`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum Side {
    #[serde(rename = "RIGHT")]
    Right,
}

/// One element of a review's `comments`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct InlineComment {
    pub path: String,
    /// The (last) line commented on.
    pub line: u32,
    /// The first line of a multi-line comment (always before `line`, in the same hunk).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_line: Option<u32>,
    /// `RIGHT` with `start_line`: GitHub wants the start's side of a multi-line comment.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_side: Option<Side>,
    pub side: Side,
    pub body: String,
    /// The comment without its suggestion block, and the suggested fix it ends with: how
    /// another forge writes the same comment in its own syntax (GitLab's
    /// ```` ```suggestion:-N+0 ````). Not sent to GitHub: `body` holds the block.
    #[serde(skip)]
    pub suggested: Option<Suggested>,
}

/// A comment's suggested fix.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Suggested {
    /// The comment's text before its suggestion block.
    pub text: String,
    /// The replacement for the commented lines, without the last line's ending.
    pub replacement: String,
}

/// What [`inline`] made of the findings.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Inline {
    /// Comments on hunk lines, in input order.
    pub comments: Vec<InlineComment>,
    /// Findings the mode lets through that cannot be inline (a whole-file finding, a line
    /// outside the hunks, a file outside the diff): for the summary comment.
    pub not_inline: Vec<ReviewFinding>,
    /// Findings the mode filtered out.
    pub filtered: usize,
}

/// Sorts `findings` into inline comments and the rest, under `mode`, against the diff's
/// `ranges` (paths compared exactly, as [`crate::forge::filter_findings_in`] does).
///
/// - `added`: a finding whose line the change added; anything else is filtered out,
///   whole-file findings included.
/// - `diff-context`: a finding on a hunk line; likewise.
/// - `file`: any finding on a file of the diff; those off the hunks (or about the whole file)
///   are `not_inline`.
/// - `nofilter`: every finding; those that cannot be inline are `not_inline`.
///
/// A finding with an end line after its line becomes a multi-line comment (`start_line` =
/// line, `line` = end line) only when both lie in one hunk; otherwise it is a single-line
/// comment on its line.
pub fn inline(findings: &[ReviewFinding], ranges: &[FileRanges], mode: FilterMode) -> Inline {
    let mut out = Inline::default();
    // An accepted finding no longer counts: nothing to say on its line.
    for f in findings
        .iter()
        .filter(|f| f.state.is_none_or(FindingState::fails))
    {
        let file = ranges.iter().find(|r| r.path == f.path);
        let line = f.line.filter(|&l| l > 0);
        let passes = match mode {
            FilterMode::Added => file.zip(line).is_some_and(|(r, l)| r.is_changed(l)),
            FilterMode::DiffContext => file.zip(line).is_some_and(|(r, l)| r.in_hunk(l)),
            FilterMode::File => file.is_some(),
            FilterMode::NoFilter => true,
        };
        if !passes {
            out.filtered += 1;
            continue;
        }
        let hunk = file.zip(line).and_then(|(r, l)| hunk_of(&r.hunks, l));
        match (line, hunk) {
            (Some(line), Some(hunk)) => out.comments.push(comment(f, line, hunk)),
            _ => out.not_inline.push(f.clone()),
        }
    }
    out
}

fn comment(f: &ReviewFinding, line: u32, hunk: LineRange) -> InlineComment {
    let end = f.end_line.filter(|&e| e > line && hunk.contains(e));
    let text = comment_body(f);
    // GitHub applies a suggestion to the commented lines: only the finding's own.
    let covers_the_finding = f.end_line.unwrap_or(line).max(line) == end.unwrap_or(line);
    let with_block = f
        .suggestion
        .as_deref()
        .filter(|_| covers_the_finding)
        .map(|s| {
            (
                format!("{text}\n\n{}", suggestion_block("suggestion", s)),
                s,
            )
        })
        // A block that does not fit whole is left out rather than cut.
        .filter(|(body, _)| body.chars().count() <= COMMENT_MAX_CHARS);
    let (body, suggested) = match with_block {
        Some((body, s)) => (
            body,
            Some(Suggested {
                text,
                replacement: s.strip_suffix('\n').unwrap_or(s).to_owned(),
            }),
        ),
        None => (text, None),
    };
    InlineComment {
        path: f.path.clone(),
        line: end.unwrap_or(line),
        start_line: end.map(|_| line),
        start_side: end.map(|_| Side::Right),
        side: Side::Right,
        body,
        suggested,
    }
}

/// A suggestion block as the forges read it: the fence, `info` (`suggestion`, GitLab's
/// `suggestion:-1+0`), the replacement's lines, the fence. The fence is longer than any run of
/// backticks in the replacement (at least three), so no line of it can close the block; an
/// empty replacement is an empty block, which deletes the lines. The shape of reviewdog's
/// GitHub suggestions (service/github/github.go, `buildSingleSuggestion`).
pub fn suggestion_block(info: &str, replacement: &str) -> String {
    let text = replacement.strip_suffix('\n').unwrap_or(replacement);
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest.max(2) + 1);
    let mut out = format!("{fence}{info}\n");
    if !text.is_empty() {
        out.push_str(text);
        out.push('\n');
    }
    out.push_str(&fence);
    out
}

/// `**warning** · rule · rf-3f2a9c1b` then the message, within GitHub's comment limit. The id
/// is how a reply in the comment's thread is matched to its finding.
fn comment_body(f: &ReviewFinding) -> String {
    let rule = fit_line(&f.rule, 200);
    let id = match &f.fingerprint {
        Some(print) => format!(" · `{}`", crate::forge::finding_id(print)),
        None => String::new(),
    };
    let text = format!("**{}** · {rule}{id}\n\n{}", f.severity, f.message);
    fit(&text, COMMENT_MAX_CHARS).into_owned()
}

/// The finding id an inline comment [`comment_body`] wrote names on its first line
/// (`**warning** · rule · `rf-3f2a9c1b``): how a reply in its thread is matched to its finding.
/// GitLab's threads open with the same line.
pub fn thread_finding(body: &str) -> Option<String> {
    let first = body.lines().next()?;
    let (_, last) = first.rsplit_once(" · ")?;
    crate::forge::response::parse_id(last.trim().trim_matches('`'))
}

/// The merged hunk range holding `line`.
fn hunk_of(sorted: &[LineRange], line: u32) -> Option<LineRange> {
    let i = sorted.partition_point(|r| r.start <= line);
    let r = sorted.get(i.checked_sub(1)?)?;
    r.contains(line).then_some(*r)
}

/// The event of a review reviewflow posts: always a plain comment, never an approval or a
/// request for changes (the check run carries the verdict).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum ReviewEvent {
    #[serde(rename = "COMMENT")]
    Comment,
}

/// The body of `POST /repos/{owner}/{repo}/pulls/{number}/reviews`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ReviewRequest<'a> {
    /// The commit the line numbers are of: the head the review is of. A later push makes
    /// GitHub show the comments as outdated, or refuse lines that left the diff.
    pub commit_id: &'a Sha,
    /// The review's text; GitHub requires one for `COMMENT`.
    pub body: &'a str,
    pub event: ReviewEvent,
    pub comments: &'a [InlineComment],
}

impl<'a> ReviewRequest<'a> {
    /// A `COMMENT` review, or `None` when there is nothing to post (no comments) or it would be
    /// refused (an empty body, which GitHub rejects for `COMMENT`). `body` should be short:
    /// the full review is the summary comment.
    pub fn comment(
        commit_id: &'a Sha,
        body: &'a str,
        comments: &'a [InlineComment],
    ) -> Option<ReviewRequest<'a>> {
        if comments.is_empty() || body.trim().is_empty() {
            return None;
        }
        Some(ReviewRequest {
            commit_id,
            body,
            event: ReviewEvent::Comment,
            comments,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::Severity;

    fn range(start: u32, end: u32) -> LineRange {
        LineRange { start, end }
    }

    /// `src/a.rs`: hunks 10..=20 and 40..=45; added 12..=13 and 41.
    fn ranges() -> Vec<FileRanges> {
        vec![FileRanges {
            path: "src/a.rs".into(),
            old_path: None,
            changed: vec![range(12, 13), range(41, 41)],
            hunks: vec![range(10, 20), range(40, 45)],
        }]
    }

    fn finding(path: &str, line: Option<u32>, end: Option<u32>) -> ReviewFinding {
        ReviewFinding {
            rule: "rule-x".into(),
            severity: Severity::Warning,
            path: path.into(),
            line,
            end_line: end,
            message: "msg".into(),
            fingerprint: None,
            state: None,
            dialogue: None,
            suggestion: None,
        }
    }

    fn all() -> Vec<ReviewFinding> {
        vec![
            finding("src/a.rs", Some(12), None), // added
            finding("src/a.rs", Some(15), None), // context
            finding("src/a.rs", Some(30), None), // file, off the hunks
            finding("src/a.rs", None, None),     // whole file
            finding("other.rs", Some(1), None),  // not in the diff
        ]
    }

    fn lines(i: &Inline) -> Vec<u32> {
        i.comments.iter().map(|c| c.line).collect()
    }

    #[test]
    fn filter_mode_parses_reviewdog_words() {
        for m in FilterMode::ALL {
            assert_eq!(m.as_str().parse(), Ok(m));
        }
        assert!("diff_context".parse::<FilterMode>().is_err());
        assert_eq!(FilterMode::default(), FilterMode::Added);
    }

    #[test]
    fn modes() {
        let r = ranges();
        let added = inline(&all(), &r, FilterMode::Added);
        assert_eq!(
            (lines(&added), added.not_inline.len(), added.filtered),
            (vec![12], 0, 4)
        );
        let ctx = inline(&all(), &r, FilterMode::DiffContext);
        assert_eq!(
            (lines(&ctx), ctx.not_inline.len(), ctx.filtered),
            (vec![12, 15], 0, 3)
        );
        let file = inline(&all(), &r, FilterMode::File);
        assert_eq!(lines(&file), vec![12, 15]);
        let off: Vec<_> = file.not_inline.iter().map(|f| f.line).collect();
        assert_eq!((off, file.filtered), (vec![Some(30), None], 1));
        let none = inline(&all(), &r, FilterMode::NoFilter);
        assert_eq!(
            (lines(&none), none.not_inline.len(), none.filtered),
            (vec![12, 15], 3, 0)
        );
    }

    #[test]
    fn multi_line_only_within_one_hunk() {
        let r = ranges();
        let fs = [
            finding("src/a.rs", Some(12), Some(18)), // one hunk: multi-line
            finding("src/a.rs", Some(12), Some(41)), // two hunks: single
            finding("src/a.rs", Some(13), Some(13)), // same line: single
            finding("src/a.rs", Some(13), Some(2)),  // end before: single
        ];
        let out = inline(&fs, &r, FilterMode::DiffContext);
        let got: Vec<_> = out
            .comments
            .iter()
            .map(|c| (c.start_line, c.line, c.start_side))
            .collect();
        assert_eq!(
            got,
            [
                (Some(12), 18, Some(Side::Right)),
                (None, 12, None),
                (None, 13, None),
                (None, 13, None)
            ]
        );
    }

    #[test]
    fn comment_body_names_severity_and_rule() {
        let out = inline(&all()[..1], &ranges(), FilterMode::Added);
        assert_eq!(out.comments[0].body, "**warning** · rule-x\n\nmsg");
        let mut long = finding("src/a.rs", Some(12), None);
        long.message = "m".repeat(70_000);
        let out = inline(&[long], &ranges(), FilterMode::Added);
        assert!(out.comments[0].body.chars().count() <= COMMENT_MAX_CHARS);
    }

    #[test]
    fn review_request_matches_githubs_shape() {
        let sha = Sha::parse(&"a".repeat(40)).unwrap();
        let fs = [
            finding("src/a.rs", Some(12), Some(13)),
            finding("src/a.rs", Some(41), None),
        ];
        let out = inline(&fs, &ranges(), FilterMode::Added);
        let req = ReviewRequest::comment(&sha, "2 findings", &out.comments).unwrap();
        let json = serde_json::to_value(&req).unwrap();
        assert_eq!(
            json,
            serde_json::json!({
                "commit_id": "a".repeat(40),
                "body": "2 findings",
                "event": "COMMENT",
                "comments": [
                    {"path": "src/a.rs", "line": 13, "start_line": 12, "start_side": "RIGHT",
                     "side": "RIGHT", "body": "**warning** · rule-x\n\nmsg"},
                    {"path": "src/a.rs", "line": 41, "side": "RIGHT",
                     "body": "**warning** · rule-x\n\nmsg"}
                ]
            })
        );
        assert!(ReviewRequest::comment(&sha, " ", &out.comments).is_none());
        assert!(ReviewRequest::comment(&sha, "x", &[]).is_none());
    }

    #[test]
    fn a_two_line_suggestion_replaces_exactly_the_commented_lines() {
        let mut f = finding("src/a.rs", Some(12), Some(13));
        f.suggestion = Some("let a = 1;\nlet b = 2;".into());
        let out = inline(&[f], &ranges(), FilterMode::Added);
        let c = &out.comments[0];
        assert_eq!((c.start_line, c.line), (Some(12), 13));
        assert_eq!(
            c.body,
            "**warning** · rule-x\n\nmsg\n\n```suggestion\nlet a = 1;\nlet b = 2;\n```"
        );
        let s = c.suggested.as_ref().expect("suggested");
        assert_eq!(
            (s.text.as_str(), s.replacement.as_str()),
            ("**warning** · rule-x\n\nmsg", "let a = 1;\nlet b = 2;")
        );
        // The block is GitHub's own: not a key of the API's comment.
        let json = serde_json::to_value(c).unwrap();
        assert!(json.get("suggested").is_none(), "{json}");
    }

    #[test]
    fn the_fence_outgrows_every_backtick_run_and_an_empty_fix_deletes() {
        assert_eq!(
            suggestion_block("suggestion", "x = ```y``` + ````z\n"),
            "`````suggestion\nx = ```y``` + ````z\n`````"
        );
        assert_eq!(
            suggestion_block("suggestion", "a `b`"),
            "```suggestion\na `b`\n```"
        );
        assert_eq!(suggestion_block("suggestion", ""), "```suggestion\n```");
    }

    #[test]
    fn no_block_where_the_comment_is_not_on_the_finding_s_lines_or_it_would_be_cut() {
        // Lines 12 to 41 span two hunks: the comment is on line 12 alone.
        let mut two_hunks = finding("src/a.rs", Some(12), Some(41));
        two_hunks.suggestion = Some("x".into());
        let mut long = finding("src/a.rs", Some(12), None);
        long.message = "m".repeat(COMMENT_MAX_CHARS - 40);
        long.suggestion = Some("y".repeat(100));
        let out = inline(&[two_hunks, long], &ranges(), FilterMode::DiffContext);
        for c in &out.comments {
            assert!(!c.body.contains("```suggestion"), "{}", c.body);
            assert_eq!(c.suggested, None);
        }
    }
}

//! A model's answer turned into a review: the markdown comment, and the findings from the one
//! ```` ```reviewflow-findings ```` block the prompt asks it to end with.
//!
//! The answer is the model's free text, so it is checked as strictly as a `command` reviewer's
//! `result.json` (the same caps and rules, [`ReviewResult::parse`]): an answer without the block,
//! with a block that is not a JSON array of findings, or with a blank comment is no review.

use serde::Deserialize;

use crate::reviewer::result::{ResultError, ReviewFinding, ReviewResult};
use crate::rules::Severity;

/// The fence's info string.
pub const FINDINGS_FENCE: &str = "```reviewflow-findings";
/// The info string of the optional block of decisions on refutations, before the findings.
pub const DECISIONS_FENCE: &str = "```reviewflow-decisions";

/// Why an answer is not a review.
#[derive(Debug, thiserror::Error)]
pub enum AnswerError {
    #[error("the answer has no ```reviewflow-findings block")]
    NoBlock,
    #[error("a ```reviewflow-findings or ```reviewflow-decisions block is not closed")]
    Unclosed,
    #[error("the findings block is not a JSON array of findings: {0}")]
    Json(String),
    #[error(transparent)]
    Invalid(#[from] ResultError),
}

/// A finding as a model writes it: `line` may be left out (the file as a whole).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ModelFinding {
    path: String,
    #[serde(default)]
    line: Option<u32>,
    #[serde(default)]
    end_line: Option<u32>,
    severity: Severity,
    #[serde(default)]
    rule: Option<String>,
    message: String,
    /// The replacement text for the finding's lines, validated as in a `result.json`.
    #[serde(default)]
    suggestion: Option<String>,
}

/// The comment (the answer without its findings block) and the findings.
#[derive(Debug, PartialEq, Eq)]
pub struct Answer {
    pub comment: String,
    pub findings: Vec<ReviewFinding>,
    pub decisions: Vec<crate::forge::Decision>,
}

/// Reads `text`: the last findings block is the findings, everything before it the comment.
pub fn parse_answer(text: &str) -> Result<Answer, AnswerError> {
    let start = last_fence_line(text, FINDINGS_FENCE).ok_or(AnswerError::NoBlock)?;
    let body_start = text[start..]
        .find('\n')
        .map_or(text.len(), |i| start + i + 1);
    let body_len = closing_fence(&text[body_start..]).ok_or(AnswerError::Unclosed)?;
    let body = &text[body_start..body_start + body_len];
    let findings: Vec<ModelFinding> =
        serde_json::from_str(body).map_err(|e| AnswerError::Json(e.to_string()))?;
    let findings: Vec<ReviewFinding> = findings
        .into_iter()
        .map(|f| ReviewFinding {
            path: f.path,
            line: f.line,
            end_line: f.end_line,
            severity: f.severity,
            rule: f.rule,
            message: f.message,
            suggestion: f.suggestion,
        })
        .collect();
    let (comment, decisions) = decisions_of(&text[..start])?;
    // The same validation as a `result.json`: caps, paths, control characters, a comment.
    let json = serde_json::json!({
        "version": 1,
        "comment": comment.trim(),
        "findings": findings,
        "conversation": null,
        "resumed": false,
        "decisions": decisions,
    });
    let checked = ReviewResult::parse(json.to_string().as_bytes())?;
    Ok(Answer {
        comment: checked.comment,
        findings: checked.findings,
        decisions: checked.decisions,
    })
}

/// The comment without its decisions block, and the decisions: the last block of the comment
/// part, when there is one.
fn decisions_of(text: &str) -> Result<(String, Vec<crate::forge::Decision>), AnswerError> {
    let Some(start) = last_fence_line(text, DECISIONS_FENCE) else {
        return Ok((text.to_owned(), Vec::new()));
    };
    let body_start = text[start..]
        .find('\n')
        .map_or(text.len(), |i| start + i + 1);
    let body_len = closing_fence(&text[body_start..]).ok_or(AnswerError::Unclosed)?;
    let body = &text[body_start..body_start + body_len];
    let decisions = serde_json::from_str(body)
        .map_err(|e| AnswerError::Json(format!("the decisions block: {e}")))?;
    let after = text[body_start + body_len..]
        .split_once('\n')
        .map_or("", |(_, rest)| rest);
    Ok((format!("{}{after}", &text[..start]), decisions))
}

/// The byte offset of the last line that opens a block of `fence`.
fn last_fence_line(text: &str, fence: &str) -> Option<usize> {
    let mut found = None;
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        if line.trim() == fence {
            found = Some(offset);
        }
        offset += line.len();
    }
    found
}

/// The length of the block's body: up to the first line that is only a closing fence.
fn closing_fence(body: &str) -> Option<usize> {
    let mut offset = 0;
    for line in body.split_inclusive('\n') {
        if line.trim() == "```" {
            return Some(offset);
        }
        offset += line.len();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_comment_and_its_findings() {
        let text = "### Review\n\nOne problem.\n\n```reviewflow-findings\n\
                    [{\"path\": \"src/lib.rs\", \"line\": 3, \"severity\": \"error\", \"message\": \"off by one\"},\n\
                     {\"path\": \"README.md\", \"severity\": \"info\", \"message\": \"stale\"}]\n```\n";
        let answer = parse_answer(text).unwrap();
        assert_eq!(answer.comment, "### Review\n\nOne problem.");
        assert_eq!(answer.findings.len(), 2);
        assert_eq!(answer.findings[0].line, Some(3));
        assert_eq!(answer.findings[1].line, None);
    }

    #[test]
    fn a_finding_may_carry_a_suggestion_checked_as_in_a_result() {
        let text = "Review.\n```reviewflow-findings\n\
                    [{\"path\": \"a.rs\", \"line\": 3, \"end_line\": 4, \"severity\": \"warning\", \"message\": \"m\", \"suggestion\": \"x\\ny\"}]\n```\n";
        let answer = parse_answer(text).unwrap();
        assert_eq!(answer.findings[0].suggestion.as_deref(), Some("x\ny"));
        // A suggestion without a line replaces nothing: the answer is refused, naming it.
        let bad = text.replace("\"line\": 3, \"end_line\": 4, ", "");
        let e = parse_answer(&bad).unwrap_err().to_string();
        assert!(e.contains("findings[0].suggestion"), "{e}");
    }

    #[test]
    fn the_last_block_counts_and_an_empty_array_is_clean() {
        let text = "Quoting the format:\n```reviewflow-findings\n[bogus]\n```\nNo findings.\n\
                    ```reviewflow-findings\n[]\n```";
        let answer = parse_answer(text).unwrap();
        assert!(answer.findings.is_empty());
        assert!(answer.comment.ends_with("No findings."));
    }

    #[test]
    fn decisions_come_before_the_findings_and_leave_the_comment() {
        let text = "Round 2.\n\n```reviewflow-decisions\n\
                    [{\"finding\": \"rf-3f2a9c1b\", \"decision\": \"accepted\", \"reason\": \"the caller checks\"}]\n```\n\
                    Still one problem.\n```reviewflow-findings\n[]\n```\n";
        let answer = parse_answer(text).unwrap();
        assert_eq!(answer.comment, "Round 2.\n\nStill one problem.");
        assert_eq!(answer.decisions.len(), 1);
        assert_eq!(
            answer.decisions[0].decision,
            crate::forge::Verdict::Accepted
        );
        let bad = text.replace("rf-3f2a9c1b", "3f2a9c1b");
        assert!(matches!(parse_answer(&bad), Err(AnswerError::Invalid(_))));
        let unknown = text.replace("accepted", "maybe");
        assert!(matches!(parse_answer(&unknown), Err(AnswerError::Json(_))));
    }

    #[test]
    fn what_is_not_a_review() {
        assert!(matches!(
            parse_answer("Looks good."),
            Err(AnswerError::NoBlock)
        ));
        assert!(matches!(
            parse_answer("x\n```reviewflow-findings\n[]"),
            Err(AnswerError::Unclosed)
        ));
        assert!(matches!(
            parse_answer("x\n```reviewflow-findings\n{\"a\": 1}\n```"),
            Err(AnswerError::Json(_))
        ));
        // A blank comment: no review was written.
        assert!(matches!(
            parse_answer("```reviewflow-findings\n[]\n```"),
            Err(AnswerError::Invalid(_))
        ));
        // A path that leaves the repository.
        assert!(matches!(
            parse_answer(
                "x\n```reviewflow-findings\n[{\"path\": \"../etc/passwd\", \"severity\": \"error\", \"message\": \"m\"}]\n```"
            ),
            Err(AnswerError::Invalid(_))
        ));
        // A key the format does not have.
        assert!(matches!(
            parse_answer(
                "x\n```reviewflow-findings\n[{\"path\": \"a\", \"severity\": \"error\", \"message\": \"m\", \"fix\": 1}]\n```"
            ),
            Err(AnswerError::Json(_))
        ));
    }
}

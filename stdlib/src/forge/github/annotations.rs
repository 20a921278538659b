//! Check-run annotations from a review's findings.
//!
//! GitHub shows annotations on the check run and in the pull request's "Files changed" tab. It
//! takes at most [`MAX_ANNOTATIONS_PER_REQUEST`] per request: the first batch goes with the
//! create (`POST …/check-runs`), every further batch with its own `PATCH …/check-runs/{id}`,
//! which appends ([`batches`]).

use serde::Serialize;

use super::body::{ANNOTATION_TITLE_MAX_CHARS, fit_line};
use crate::forge::ReviewFinding;
use crate::rules::Severity;

/// GitHub's cap on annotations per create or update request.
pub const MAX_ANNOTATIONS_PER_REQUEST: usize = 50;
/// Longest annotation `message` ("The maximum size is 64 KB"), counted here in bytes, which is
/// never fewer than characters, so the cap holds however GitHub counts.
pub const ANNOTATION_MESSAGE_MAX_BYTES: usize = 64 * 1024;

/// `annotation_level` of an annotation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum AnnotationLevel {
    Notice,
    Warning,
    Failure,
}

impl From<Severity> for AnnotationLevel {
    fn from(s: Severity) -> Self {
        match s {
            Severity::Info => AnnotationLevel::Notice,
            Severity::Warning => AnnotationLevel::Warning,
            Severity::Error => AnnotationLevel::Failure,
        }
    }
}

/// One element of a check run's `output.annotations`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Annotation {
    pub path: String,
    /// 1-based; 1 for a finding about the whole file.
    pub start_line: u32,
    pub end_line: u32,
    pub annotation_level: AnnotationLevel,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub raw_details: Option<String>,
}

/// The annotations of `findings`, most severe first (a stable sort, so the order within a
/// level is the input's): when the caller cannot send every batch (a rate limit, an error),
/// the ones already sent matter most.
///
/// A finding without a line (or with line 0, which GitHub rejects) is about the whole file:
/// it is put on line 1 and its title says "(whole file)". An end line before the line is
/// ignored. The title is the rule, at most 255 characters; the message is cut to 64 KiB.
/// Paths are not checked against the diff here: filter the findings first
/// ([`crate::forge::filter_findings_in`]).
/// An accepted finding (docs/findings.md) no longer counts and gets none.
pub fn annotations(findings: &[ReviewFinding]) -> Vec<Annotation> {
    let mut out: Vec<Annotation> = findings
        .iter()
        .filter(|f| f.state.is_none_or(crate::forge::FindingState::fails))
        .map(annotation)
        .collect();
    out.sort_by_key(|a| std::cmp::Reverse(a.annotation_level));
    out
}

fn annotation(f: &ReviewFinding) -> Annotation {
    let (start_line, end_line, title) = match f.line.filter(|&l| l > 0) {
        Some(line) => {
            let end = f.end_line.filter(|&e| e >= line).unwrap_or(line);
            (line, end, f.rule.clone())
        }
        None => (1, 1, format!("{} (whole file)", f.rule)),
    };
    Annotation {
        path: f.path.clone(),
        start_line,
        end_line,
        annotation_level: f.severity.into(),
        message: cap_bytes(&f.message, ANNOTATION_MESSAGE_MAX_BYTES),
        title: Some(fit_line(&title, ANNOTATION_TITLE_MAX_CHARS).into_owned())
            .filter(|t| !t.is_empty()),
        raw_details: None,
    }
}

/// `text` cut at a character boundary to at most `max` bytes, a final `…` included.
fn cap_bytes(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let ellipsis = '…';
    let mut end = max.saturating_sub(ellipsis.len_utf8());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let mut out = text[..end].to_owned();
    out.push(ellipsis);
    out
}

/// Annotations split into requests.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Batches<'a> {
    /// Sent with the create (`POST`); empty when there are no annotations.
    pub create: &'a [Annotation],
    /// Each sent with its own `PATCH`, in order.
    pub updates: Vec<&'a [Annotation]>,
}

/// `annotations` in chunks of at most `size`, itself clamped to
/// 1..=[`MAX_ANNOTATIONS_PER_REQUEST`] so that no request can exceed GitHub's cap.
pub fn batches(annotations: &[Annotation], size: usize) -> Batches<'_> {
    let size = size.clamp(1, MAX_ANNOTATIONS_PER_REQUEST);
    let mut chunks = annotations.chunks(size);
    Batches {
        create: chunks.next().unwrap_or(&[]),
        updates: chunks.collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finding(severity: Severity, line: Option<u32>, end: Option<u32>) -> ReviewFinding {
        ReviewFinding {
            rule: "no-todo".into(),
            severity,
            path: "src/a.rs".into(),
            line,
            end_line: end,
            message: "a message".into(),
            fingerprint: None,
            state: None,
            dialogue: None,
            suggestion: None,
        }
    }

    #[test]
    fn line_and_file_findings() {
        let out = annotations(&[
            finding(Severity::Warning, Some(3), Some(5)),
            finding(Severity::Info, None, Some(9)),
            finding(Severity::Warning, Some(7), Some(2)),
            finding(Severity::Warning, Some(0), None),
        ]);
        assert_eq!((out[0].start_line, out[0].end_line), (3, 5));
        assert_eq!(out[0].title.as_deref(), Some("no-todo"));
        assert_eq!((out[1].start_line, out[1].end_line), (7, 7));
        assert_eq!((out[2].start_line, out[2].end_line), (1, 1));
        assert_eq!(out[2].title.as_deref(), Some("no-todo (whole file)"));
        assert_eq!((out[3].start_line, out[3].end_line), (1, 1));
        assert_eq!(out[3].annotation_level, AnnotationLevel::Notice);
    }

    #[test]
    fn most_severe_first_stable() {
        let mut a = finding(Severity::Info, Some(1), None);
        a.message = "first info".into();
        let mut b = finding(Severity::Info, Some(2), None);
        b.message = "second info".into();
        let out = annotations(&[a, finding(Severity::Error, Some(9), None), b]);
        let levels: Vec<_> = out.iter().map(|a| a.annotation_level).collect();
        assert_eq!(
            levels,
            [
                AnnotationLevel::Failure,
                AnnotationLevel::Notice,
                AnnotationLevel::Notice
            ]
        );
        assert_eq!(out[1].message, "first info");
    }

    #[test]
    fn serializes_as_github_expects() {
        let out = annotations(&[finding(Severity::Error, Some(4), None)]);
        let json = serde_json::to_value(&out[0]).unwrap();
        assert_eq!(
            json,
            serde_json::json!({
                "path": "src/a.rs", "start_line": 4, "end_line": 4,
                "annotation_level": "failure", "message": "a message", "title": "no-todo"
            })
        );
    }

    #[test]
    fn caps_message_and_title() {
        let mut f = finding(Severity::Error, Some(1), None);
        f.message = "é".repeat(40_000);
        f.rule = "r".repeat(300);
        let out = annotations(&[f]);
        assert!(out[0].message.len() <= ANNOTATION_MESSAGE_MAX_BYTES);
        assert!(out[0].message.ends_with('…'));
        let title = out[0].title.as_deref().unwrap();
        assert_eq!(title.chars().count(), ANNOTATION_TITLE_MAX_CHARS);
    }

    #[test]
    fn batches_of_fifty() {
        let all = annotations(&vec![finding(Severity::Warning, Some(1), None); 120]);
        let b = batches(&all, 50);
        assert_eq!(b.create.len(), 50);
        let sizes: Vec<usize> = b.updates.iter().map(|u| u.len()).collect();
        assert_eq!(sizes, [50, 20]);
        let b = batches(&all, 500);
        assert_eq!((b.create.len(), b.updates.len()), (50, 2));
        let b = batches(&all[..3], 0);
        assert_eq!((b.create.len(), b.updates.len()), (1, 2));
        let b = batches(&[], 50);
        assert!(b.create.is_empty() && b.updates.is_empty());
    }
}

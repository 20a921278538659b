//! The result a reviewer writes (`result.json`, protocol version 1) and its strict validation.
//!
//! [`ReviewResult::parse`] checks the bytes (shape, caps, paths, text); [`read_result`] also
//! checks the file itself and the conversation the result names. Unknown keys and repeated keys
//! are rejected: a misspelt key must fail loudly, not read as "no findings". Any failure means
//! the try ended without a review, and the error names the field.

use std::io;
use std::path::{Path, PathBuf};

use reviewflow_engine::beneath::{self, Folder, Why};

use serde::{Deserialize, Deserializer, Serialize};

use super::conversation::{ConversationError, check_tree};
use crate::rules::Severity;

/// The protocol version this module reads.
pub const RESULT_VERSION: u64 = 1;
/// Largest `result.json`, in bytes.
pub const MAX_RESULT_BYTES: u64 = 1024 * 1024;
/// Largest comment, in bytes.
pub const MAX_COMMENT_BYTES: usize = 256 * 1024;
/// Most findings in one result.
pub const MAX_FINDINGS: usize = 1000;
/// Largest finding message, in bytes.
pub const MAX_MESSAGE_BYTES: usize = 4096;
/// Largest path, in bytes.
pub const MAX_PATH_BYTES: usize = 4096;
/// Longest rule id, in characters.
pub const MAX_RULE_CHARS: usize = 128;
/// Largest suggested fix, in bytes: with a message at its cap it still fits one GitHub comment
/// (65,536 characters), so a suggestion is never cut.
pub const MAX_SUGGESTION_BYTES: usize = 32 * 1024;
/// Most lines of a suggested fix.
pub const MAX_SUGGESTION_LINES: usize = 500;

/// A finding as reviewers report it and `std/review` outputs it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReviewFinding {
    /// Relative to the repository root.
    pub path: String,
    /// First new-side line; `None` for the whole file. The key is required (as `null`).
    #[serde(deserialize_with = "nullable")]
    pub line: Option<u32>,
    /// Last line of a range.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_line: Option<u32>,
    pub severity: Severity,
    /// A stable rule id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
    pub message: String,
    /// The replacement text for the finding's lines (`line`..=`end_line`), without the last
    /// line's ending; empty deletes them (`docs/reviewers.md`, "Suggested fixes"). Never applied
    /// by reviewflow.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suggestion: Option<String>,
}

impl From<&crate::rules::Finding> for ReviewFinding {
    fn from(f: &crate::rules::Finding) -> Self {
        ReviewFinding {
            path: f.path.clone(),
            line: f.line,
            end_line: None,
            severity: f.severity,
            rule: Some(f.rule.as_str().to_owned()),
            message: f.message.clone(),
            suggestion: f.suggestion.clone(),
        }
    }
}

/// A valid `result.json`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReviewResult {
    pub version: u64,
    pub comment: String,
    pub findings: Vec<ReviewFinding>,
    /// Relative to the conversation-out folder; the key is required (as `null` for none).
    #[serde(deserialize_with = "nullable")]
    pub conversation: Option<String>,
    pub resumed: bool,
    /// The reviewer's answer to each refutation it was given (`docs/findings.md`, "Answering a
    /// finding"); optional.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub decisions: Vec<crate::forge::Decision>,
}

/// Deserializes an `Option` whose key must be present: with `deserialize_with`, serde reports a
/// missing key instead of defaulting it to `None`.
fn nullable<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(d)
}

/// Why a result is refused.
#[derive(Debug, thiserror::Error)]
pub enum ResultError {
    #[error("the reviewer wrote no result file")]
    Missing,
    #[error("the result is not a regular file (a link or a folder)")]
    NotAFile,
    #[error("the result is larger than {MAX_RESULT_BYTES} bytes")]
    TooLarge,
    #[error("the result cannot be read: {source}")]
    Io {
        #[source]
        source: io::Error,
    },
    #[error("the result is not valid JSON of protocol version 1: {message}")]
    Json { message: String },
    #[error("the result has protocol version {found}; this reviewflow reads version 1")]
    Version { found: String },
    #[error("invalid result: {field}: {problem}")]
    Invalid { field: String, problem: String },
    #[error("invalid result: conversation: {source}")]
    Conversation {
        #[source]
        source: ConversationError,
    },
}

fn invalid(field: impl Into<String>, problem: impl Into<String>) -> ResultError {
    ResultError::Invalid {
        field: field.into(),
        problem: problem.into(),
    }
}

/// Reads just the version, so that a result of another version is named as such rather than
/// refused for its unknown keys.
#[derive(Deserialize)]
struct VersionOnly {
    version: serde_json::Value,
}

impl ReviewResult {
    /// Parses and validates the bytes of a `result.json` (everything but the file system).
    pub fn parse(bytes: &[u8]) -> Result<Self, ResultError> {
        let json = |e: serde_json::Error| ResultError::Json {
            message: e.to_string(),
        };
        let version: VersionOnly = serde_json::from_slice(bytes).map_err(json)?;
        if version.version.as_u64() != Some(RESULT_VERSION) {
            let mut found = version.version.to_string();
            found.truncate(32);
            return Err(ResultError::Version { found });
        }
        let result: ReviewResult = serde_json::from_slice(bytes).map_err(json)?;
        result.validate()?;
        Ok(result)
    }

    fn validate(&self) -> Result<(), ResultError> {
        if self.comment.len() > MAX_COMMENT_BYTES {
            return Err(invalid(
                "comment",
                format!("longer than {MAX_COMMENT_BYTES} bytes"),
            ));
        }
        if self.comment.trim().is_empty() {
            return Err(invalid("comment", "blank: no review was written"));
        }
        check_text("comment", &self.comment, true)?;
        if self.findings.len() > MAX_FINDINGS {
            return Err(invalid(
                "findings",
                format!("more than {MAX_FINDINGS} findings"),
            ));
        }
        for (i, finding) in self.findings.iter().enumerate() {
            check_finding(i, finding)?;
        }
        if let Some(path) = &self.conversation {
            check_relative_path("conversation", path)?;
        }
        check_decisions(&self.decisions)
    }
}

/// Each decision names a finding by its id, once, with a reason of one line.
pub fn check_decisions(decisions: &[crate::forge::Decision]) -> Result<(), ResultError> {
    use crate::forge::response::{MAX_REASON_CHARS, MAX_RESPONSES, parse_id};
    if decisions.len() > MAX_RESPONSES {
        return Err(invalid(
            "decisions",
            format!("more than {MAX_RESPONSES} decisions"),
        ));
    }
    let mut seen = std::collections::BTreeSet::new();
    for (i, d) in decisions.iter().enumerate() {
        let field = |name: &str| format!("decisions[{i}].{name}");
        let Some(id) = parse_id(&d.finding) else {
            return Err(invalid(
                field("finding"),
                "not a finding id (`rf-` and 8 hex digits)",
            ));
        };
        if !seen.insert(id) {
            return Err(invalid(field("finding"), "decided twice"));
        }
        if d.reason.trim().is_empty() {
            return Err(invalid(field("reason"), "empty"));
        }
        if d.reason.chars().count() > MAX_REASON_CHARS {
            return Err(invalid(
                field("reason"),
                format!("longer than {MAX_REASON_CHARS} characters"),
            ));
        }
        check_text(&field("reason"), &d.reason, false)?;
    }
    Ok(())
}

fn check_finding(i: usize, f: &ReviewFinding) -> Result<(), ResultError> {
    let field = |name: &str| format!("findings[{i}].{name}");
    check_relative_path(&field("path"), &f.path)?;
    match (f.line, f.end_line) {
        (Some(0), _) => return Err(invalid(field("line"), "lines count from 1")),
        (None, Some(_)) => {
            return Err(invalid(field("end_line"), "given without a line"));
        }
        (Some(line), Some(end)) if end < line => {
            return Err(invalid(field("end_line"), "before the line"));
        }
        _ => {}
    }
    if let Some(rule) = &f.rule {
        let ok = (1..=MAX_RULE_CHARS).contains(&rule.chars().count())
            && rule
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "._/:-".contains(c));
        if !ok {
            return Err(invalid(
                field("rule"),
                format!("not 1 to {MAX_RULE_CHARS} characters of A-Z a-z 0-9 . _ / : -"),
            ));
        }
    }
    if f.message.trim().is_empty() {
        return Err(invalid(field("message"), "empty"));
    }
    if f.message.len() > MAX_MESSAGE_BYTES {
        return Err(invalid(
            field("message"),
            format!("longer than {MAX_MESSAGE_BYTES} bytes"),
        ));
    }
    check_text(&field("message"), &f.message, false)?;
    match &f.suggestion {
        Some(text) => {
            check_suggestion(f.line, text).map_err(|problem| invalid(field("suggestion"), problem))
        }
        None => Ok(()),
    }
}

/// Why a suggested fix cannot stand, whatever the diff: it needs lines to replace, stays within
/// [`MAX_SUGGESTION_BYTES`] and [`MAX_SUGGESTION_LINES`], and holds no control character but tab
/// and line feed (a carriage return would be written into the file as the author applies it).
/// Whether its lines are lines the change added is checked against the diff, where the diff is
/// known ([`crate::forge::filter_findings_in`]).
pub fn check_suggestion(line: Option<u32>, text: &str) -> Result<(), String> {
    if line.is_none() {
        return Err("given without a line: a suggestion replaces the finding's lines".into());
    }
    if text.len() > MAX_SUGGESTION_BYTES {
        return Err(format!("longer than {MAX_SUGGESTION_BYTES} bytes"));
    }
    if text.strip_suffix('\n').unwrap_or(text).split('\n').count() > MAX_SUGGESTION_LINES {
        return Err(format!("more than {MAX_SUGGESTION_LINES} lines"));
    }
    match text
        .chars()
        .find(|&c| c.is_control() && c != '\t' && c != '\n')
    {
        Some(c) => Err(format!(
            "holds the control character U+{:04X}",
            u32::from(c)
        )),
        None => Ok(()),
    }
}

/// No control characters but tab (and, where `multiline`, line feed and carriage return).
fn check_text(field: &str, text: &str, multiline: bool) -> Result<(), ResultError> {
    let bad = text
        .chars()
        .find(|&c| c.is_control() && c != '\t' && !(multiline && (c == '\n' || c == '\r')));
    match bad {
        Some(c) => Err(invalid(
            field,
            format!("holds the control character U+{:04X}", u32::from(c)),
        )),
        None => Ok(()),
    }
}

/// A path relative to a root that cannot leave it: no leading `/`, no empty, `.` or `..`
/// component, no backslash, no control character, at most [`MAX_PATH_BYTES`].
pub fn check_relative_path(field: &str, path: &str) -> Result<(), ResultError> {
    let problem = if path.is_empty() {
        Some("empty")
    } else if path.len() > MAX_PATH_BYTES {
        Some("too long")
    } else if path.starts_with('/') {
        Some("absolute")
    } else if path.contains('\\') {
        Some("holds a backslash")
    } else if path.chars().any(char::is_control) {
        Some("holds a control character")
    } else if path.split('/').any(|c| c.is_empty()) {
        Some("has an empty component")
    } else if path.split('/').any(|c| c == "." || c == "..") {
        Some("has a `.` or `..` component")
    } else {
        None
    };
    match problem {
        Some(problem) => Err(invalid(field, format!("{problem} path"))),
        None => Ok(()),
    }
}

/// Reads and validates the result at `path`, and the conversation it names under
/// `conversation_out`. Returns the result and the conversation's absolute path. Both were
/// written by the reviewer: they are read through the engine's reader (`beneath`), beneath
/// the try's folder (the parent of `path`, which reviewflow made), no link followed at any
/// component, each file checked on the descriptor it is read from.
pub fn read_result(
    path: &Path,
    conversation_out: &Path,
) -> Result<(ReviewResult, Option<PathBuf>), ResultError> {
    let (Some(root), Some(name)) = (path.parent(), path.file_name()) else {
        return Err(ResultError::Missing);
    };
    let read = Folder::open(root).and_then(|f| f.read(Path::new(name), MAX_RESULT_BYTES));
    let bytes = match read {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(ResultError::Missing),
        Err(e) if e.kind() == io::ErrorKind::FileTooLarge => return Err(ResultError::TooLarge),
        Err(e) if beneath::refused(&e).is_some() => return Err(ResultError::NotAFile),
        Err(source) => return Err(ResultError::Io { source }),
    };
    let result = ReviewResult::parse(&bytes)?;
    let conversation = match &result.conversation {
        None => None,
        Some(relative) => Some(check_conversation(conversation_out, relative)?),
    };
    Ok((result, conversation))
}

/// The conversation at `relative` under `root`: opened beneath `root` with no link at any
/// component, and holding only files and folders within the caps.
fn check_conversation(root: &Path, relative: &str) -> Result<PathBuf, ResultError> {
    let conversation = |source| ResultError::Conversation { source };
    let at = root.join(relative);
    let entry = Folder::open(root)
        .and_then(|f| f.entry(Path::new(relative)))
        .map_err(|source| {
            let error = match beneath::refused(&source).map(|r| (r.why, r.path.clone())) {
                Some((Why::Link, path)) => ConversationError::Symlink { path },
                Some((Why::Special, path)) => ConversationError::Special { path },
                _ => ConversationError::Io {
                    path: at.clone(),
                    source,
                },
            };
            conversation(error)
        })?;
    check_tree(entry, &at).map_err(conversation)?;
    Ok(at)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_paths() {
        for ok in ["a", "src/lib.rs", "a b/c-d_e.f", "é/ü"] {
            assert!(check_relative_path("p", ok).is_ok(), "{ok}");
        }
        for bad in [
            "",
            "/etc/passwd",
            "../x",
            "a/../b",
            "a/./b",
            ".",
            "a//b",
            "a/",
            "a\\b",
            "a\nb",
        ] {
            assert!(check_relative_path("p", bad).is_err(), "{bad:?}");
        }
        assert!(check_relative_path("p", &"a".repeat(MAX_PATH_BYTES + 1)).is_err());
    }
}

#[cfg(test)]
mod reads {
    use super::*;
    use std::os::unix::fs::symlink;

    const RESULT: &str = r#"{"version": 1, "comment": "c", "findings": [], "conversation": "s/session.jsonl", "resumed": false}"#;

    /// A try folder with `result.json` and `conversation-out/s/session.jsonl`, and a folder
    /// outside it holding the same names.
    fn try_folder() -> (tempfile::TempDir, tempfile::TempDir) {
        let root = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        for dir in [root.path(), outside.path()] {
            std::fs::create_dir_all(dir.join("conversation-out/s")).unwrap();
            std::fs::write(dir.join("conversation-out/s/session.jsonl"), "{}\n").unwrap();
            std::fs::write(dir.join("result.json"), RESULT).unwrap();
        }
        (root, outside)
    }

    fn read(root: &Path) -> Result<(ReviewResult, Option<PathBuf>), ResultError> {
        read_result(&root.join("result.json"), &root.join("conversation-out"))
    }

    #[test]
    fn what_the_reviewer_wrote_is_read_beneath_its_folder_only() {
        let (root, _outside) = try_folder();
        let (_, conversation) = read(root.path()).unwrap();
        assert_eq!(
            conversation.unwrap(),
            root.path().join("conversation-out/s/session.jsonl")
        );

        // A folder on the way to the conversation swapped for a link.
        let (root, outside) = try_folder();
        let s = root.path().join("conversation-out/s");
        std::fs::remove_dir_all(&s).unwrap();
        symlink(outside.path().join("conversation-out/s"), &s).unwrap();
        let e = read(root.path()).unwrap_err();
        assert!(
            matches!(&e, ResultError::Conversation { source: ConversationError::Symlink { path } } if path == &s),
            "{e}"
        );

        // The conversation folder itself a link.
        let (root, outside) = try_folder();
        let out = root.path().join("conversation-out");
        std::fs::remove_dir_all(&out).unwrap();
        symlink(outside.path().join("conversation-out"), &out).unwrap();
        assert!(read(root.path()).is_err());

        // The result a FIFO: refused, not waited on.
        let (root, _outside) = try_folder();
        let result = root.path().join("result.json");
        std::fs::remove_file(&result).unwrap();
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &result,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        assert!(matches!(read(root.path()), Err(ResultError::NotAFile)));
    }
}

#[cfg(test)]
mod suggestions {
    use super::*;

    fn result_with(finding: &str) -> Result<ReviewResult, ResultError> {
        let text = format!(
            r#"{{"version": 1, "comment": "c", "findings": [{finding}], "conversation": null, "resumed": false}}"#
        );
        ReviewResult::parse(text.as_bytes())
    }

    fn refusal(finding: &str) -> String {
        match result_with(finding) {
            Err(ResultError::Invalid { field, problem }) => format!("{field}: {problem}"),
            other => panic!("not refused: {other:?}"),
        }
    }

    #[test]
    fn a_suggestion_is_optional_and_read_when_given() {
        let r = result_with(
            r#"{"path": "a.rs", "line": 2, "end_line": 3, "severity": "info", "message": "m", "suggestion": "let a = 1;\n\tlet b = 2;"}"#,
        )
        .unwrap();
        assert_eq!(
            r.findings[0].suggestion.as_deref(),
            Some("let a = 1;\n\tlet b = 2;")
        );
        let r = result_with(r#"{"path": "a.rs", "line": 2, "severity": "info", "message": "m"}"#)
            .unwrap();
        assert_eq!(r.findings[0].suggestion, None);
        // An empty suggestion deletes the lines: it is one.
        let r = result_with(
            r#"{"path": "a.rs", "line": 2, "severity": "info", "message": "m", "suggestion": ""}"#,
        )
        .unwrap();
        assert_eq!(r.findings[0].suggestion.as_deref(), Some(""));
    }

    #[test]
    fn a_suggestion_past_the_caps_or_without_a_line_is_refused_by_field() {
        let f = |line: &str, text: &str| {
            format!(
                r#"{{"path": "a.rs", "line": {line}, "severity": "info", "message": "m", "suggestion": {}}}"#,
                serde_json::to_string(text).unwrap()
            )
        };
        assert_eq!(
            refusal(&f("null", "x")),
            "findings[0].suggestion: given without a line: a suggestion replaces the finding's lines"
        );
        assert_eq!(
            refusal(&f("1", &"x".repeat(MAX_SUGGESTION_BYTES + 1))),
            format!("findings[0].suggestion: longer than {MAX_SUGGESTION_BYTES} bytes")
        );
        assert!(result_with(&f("1", &"x".repeat(MAX_SUGGESTION_BYTES))).is_ok());
        let lines = |n: usize| vec!["x"; n].join("\n");
        assert_eq!(
            refusal(&f("1", &lines(MAX_SUGGESTION_LINES + 1))),
            format!("findings[0].suggestion: more than {MAX_SUGGESTION_LINES} lines")
        );
        // A final line ending is no line of its own.
        assert!(result_with(&f("1", &format!("{}\n", lines(MAX_SUGGESTION_LINES)))).is_ok());
        for (bad, code) in [
            ("a\rb", "000D"),
            ("a\u{1b}[31m", "001B"),
            ("\u{7f}", "007F"),
        ] {
            assert_eq!(
                refusal(&f("1", bad)),
                format!("findings[0].suggestion: holds the control character U+{code}")
            );
        }
        // A suggestion that is not a string is no result at all.
        assert!(matches!(
            result_with(
                r#"{"path": "a.rs", "line": 1, "severity": "info", "message": "m", "suggestion": 1}"#
            ),
            Err(ResultError::Json { .. })
        ));
    }
}

//! Findings as a GitLab Code Quality report (`--format gitlab`): a JSON array with one object per
//! finding, which a job hands to GitLab as `artifacts: reports: codequality:` and GitLab shows in
//! the merge request.
//!
//! - `description`: the finding's message, then `help: …` on a new line when it has help (as in
//!   the SARIF log).
//! - `check_name`: `reviewflow/<check id>`, so that reports of several tools do not mix their
//!   names.
//! - `fingerprint`: the SARIF log's recipe ([`crate::sarif::fingerprint`]): SHA-256
//!   over the file's URI, the check id, the stage, the message and the text of the primary span,
//!   lines left out so that a finding moved by an edit elsewhere keeps it; `:<n>` numbers equal
//!   ones from 1 in the report's order, so that two identical findings stay two (GitLab keeps one
//!   finding per fingerprint).
//! - `severity`: error → `critical`, warning → `minor`, info → `info`. `blocker` and `major` are
//!   not used: an error is what fails `check` by default, which `critical` says; `blocker` is
//!   left to what blocks a merge by itself.
//! - `location.path`: the file's path from the repository's top (the folder holding `.git` from
//!   the current folder up, as for SARIF), `/`-separated: the SARIF URI, decoded; `location.lines.begin`:
//!   the 1-based line of the finding's primary span.
//! - Allowed (suppressed) findings are left out: the report has no way to say a finding was
//!   allowed, and SARIF and JSON keep them.

use crate::sarif::SrcRoot;
use crate::sarif::fingerprint::{Numbering, Occurrences};
use reviewflow_engine::Source;
use reviewflow_engine::finding::{Finding, Severity};
use serde_json::{Value, json};

/// The key the report's fingerprints are numbered under.
const KEY: &str = "codequality";

/// The report of the unsuppressed findings of every file, file names taken from the current
/// folder's repository top.
pub fn report(files: &[(&Source, &[Finding])]) -> String {
    report_at(files, &SrcRoot::current())
}

/// The report, file names taken from `root`: a JSON array, pretty-printed, newline-terminated
/// (`[]` without findings).
pub fn report_at(files: &[(&Source, &[Finding])], root: &SrcRoot) -> String {
    let mut occurrences = Occurrences::default();
    let mut issues = Vec::new();
    for (source, findings) in files {
        let uri = root.uri(source.name());
        let path = decoded(&uri);
        for finding in findings.iter().filter(|f| f.suppressed.is_none()) {
            let hash = crate::sarif::fingerprint(&uri, source, finding);
            issues.push(issue(
                source,
                finding,
                &path,
                occurrences.tag(KEY, &hash, Numbering::Always),
            ));
        }
    }
    let mut out =
        serde_json::to_string_pretty(&Value::Array(issues)).unwrap_or_else(|_| "[]".into());
    out.push('\n');
    out
}

/// A URI reference as [`SrcRoot::uri`] writes it, its `%XX` decoded: the path it names, which
/// is what GitLab reads (`a%20b.kdl` → `a b.kdl`).
fn decoded(uri: &str) -> String {
    let bytes = uri.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let byte = bytes[i];
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (byte, hex) {
            (b'%', Some(value)) => {
                out.push(value);
                i += 3;
            }
            _ => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// GitLab's name of a finding's severity.
pub fn severity(severity: Severity) -> &'static str {
    match severity {
        Severity::Error => "critical",
        Severity::Warning => "minor",
        Severity::Info => "info",
    }
}

fn issue(source: &Source, finding: &Finding, path: &str, fingerprint: String) -> Value {
    let description = match &finding.help {
        Some(help) => format!("{}\nhelp: {help}", finding.message),
        None => finding.message.clone(),
    };
    json!({
        "description": description,
        "check_name": format!("reviewflow/{}", finding.check),
        "fingerprint": fingerprint,
        "severity": severity(finding.severity),
        "location": {
            "path": path,
            "lines": { "begin": source.position(finding.primary.span.offset).line },
        },
    })
}

#[cfg(test)]
mod tests {
    use reviewflow_engine::finding::{Label, Suppression};
    use reviewflow_engine::span::Span;

    use super::*;

    fn finding(check: &'static str, severity: Severity, at: usize, len: usize) -> Finding {
        Finding::new(
            check,
            severity,
            "a message",
            Label::new(Span::new(at, len), "here"),
        )
    }

    fn parse(text: &str) -> Vec<Value> {
        match serde_json::from_str(text) {
            Ok(Value::Array(items)) => items,
            other => panic!("not an array: {other:?}"),
        }
    }

    #[test]
    fn each_finding_is_one_issue_with_a_numbered_fingerprint() {
        let source = Source::new(
            "ci/review.kdl",
            "pipeline \"p\"\nstage \"a\"\nstage \"a\"\n",
        );
        let findings = [
            finding("duplicate", Severity::Error, 13, 9).help("rename one"),
            finding("duplicate", Severity::Error, 13, 9),
            finding("style", Severity::Warning, 23, 9),
            finding("note", Severity::Info, 0, 0),
        ];
        let items = parse(&report_at(&[(&source, &findings)], &SrcRoot::filesystem()));
        assert_eq!(items.len(), 4);
        assert_eq!(items[0]["description"], "a message\nhelp: rename one");
        assert_eq!(items[0]["check_name"], "reviewflow/duplicate");
        assert_eq!(items[0]["severity"], "critical");
        assert_eq!(items[0]["location"]["path"], "ci/review.kdl");
        assert_eq!(items[0]["location"]["lines"]["begin"], 2);
        assert_eq!(items[2]["severity"], "minor");
        assert_eq!(items[2]["location"]["lines"]["begin"], 3);
        assert_eq!(items[3]["severity"], "info");
        assert_eq!(items[3]["location"]["lines"]["begin"], 1);
        // The same finding twice: one hash, two fingerprints.
        let fp = |i: usize| {
            items[i]["fingerprint"]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        };
        let hash = crate::sarif::fingerprint("ci/review.kdl", &source, &findings[1]);
        assert_eq!(fp(0), format!("{hash}:1"));
        assert_eq!(fp(1), format!("{hash}:2"));
        let mut all: Vec<String> = (0..4).map(fp).collect();
        all.sort();
        all.dedup();
        assert_eq!(all.len(), 4, "unique: {all:?}");
    }

    #[test]
    fn the_path_is_the_uri_decoded() {
        assert_eq!(decoded("ci/a%20b%25%3A%C3%A9.kdl"), "ci/a b%:\u{e9}.kdl");
        assert_eq!(decoded("a%2"), "a%2");
        assert_eq!(decoded("a%zz"), "a%zz");
        let source = Source::new("ci/a b.kdl", "stage \"a\"\n");
        let one = [finding("style", Severity::Warning, 0, 9)];
        let items = parse(&report_at(&[(&source, &one)], &SrcRoot::filesystem()));
        assert_eq!(items[0]["location"]["path"], "ci/a b.kdl");
    }

    #[test]
    fn a_fingerprint_survives_an_edit_above_it() {
        let before = Source::new("r.kdl", "stage \"a\"\n");
        let after = Source::new("r.kdl", "// a comment\n\nstage \"a\"\n");
        let one = [finding("style", Severity::Warning, 0, 9)];
        let two = [finding("style", Severity::Warning, 14, 9)];
        let a = parse(&report_at(&[(&before, &one)], &SrcRoot::filesystem()));
        let b = parse(&report_at(&[(&after, &two)], &SrcRoot::filesystem()));
        assert_eq!(a[0]["fingerprint"], b[0]["fingerprint"]);
        assert_ne!(a[0]["location"], b[0]["location"]);
    }

    #[test]
    fn allowed_findings_are_left_out_and_no_finding_is_an_empty_array() {
        let source = Source::new("r.kdl", "stage \"a\"\n");
        let mut allowed = finding("style", Severity::Warning, 0, 9);
        allowed.suppressed = Some(Suppression {
            reason: "reviewed".into(),
            span: Span::new(0, 1),
        });
        let text = report_at(&[(&source, &[allowed])], &SrcRoot::filesystem());
        assert_eq!(text, "[]\n");
        assert_eq!(report_at(&[], &SrcRoot::filesystem()), "[]\n");
    }
}

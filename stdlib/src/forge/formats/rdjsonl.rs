//! `review.rdjsonl`: one reviewdog `Diagnostic` per line (`reviewdog -f=rdjsonl`), in the order of
//! `review.json`'s `findings`.
//!
//! Only fields reviewdog's `Diagnostic` declares: it reads each line with `protojson.Unmarshal`,
//! which refuses any other, so the finding's identity (fingerprint and state) is not here but in
//! `review.json` (line n is its finding n) and `review.sarif` (`docs/findings.md`).
//!
//! - lines only, no columns: findings name lines; a finding about a whole file is on line 1, as
//!   in `review.sarif`;
//! - `code.value` is the rule id; `source.name` is `reviewflow`;
//! - `original_output`, which reviewdog's local reporter prints as the whole line, is the
//!   finding as one line of text: `<path>:<line>: <severity>: <message> [<rule>]`;
//! - a suggested fix is one `suggestions` entry replacing whole lines the way reviewdog writes
//!   them itself (parser/diff.go) and turns them into a GitHub suggestion
//!   (service/github/github.go, `buildSingleSuggestion`): a range of lines only, no columns,
//!   from the finding's line to its last line (inclusive, as reviewdog compares it with the
//!   comment's lines), and the new lines joined by `\n` without a final one; empty deletes.

use serde_json::{Value, json};

use super::super::LocalForgeError;
use super::super::review::{Review, ReviewFinding};
use crate::rules::Severity;

pub(super) fn render(review: &Review) -> Result<Vec<u8>, LocalForgeError> {
    let mut out = Vec::new();
    // reviewdog reads every diagnostic as live: an accepted finding is not one.
    let counted = review.findings.iter().filter(|f| {
        f.state
            .is_none_or(super::super::review::FindingState::fails)
    });
    for finding in counted {
        serde_json::to_writer(&mut out, &diagnostic(finding)).map_err(|source| {
            LocalForgeError::Encode {
                what: "rdjsonl diagnostic",
                source,
            }
        })?;
        out.push(b'\n');
    }
    Ok(out)
}

fn diagnostic(f: &ReviewFinding) -> Value {
    // A whole-file finding sits on line 1, where `review.sarif` puts it: code scanning shows
    // no result without a line, and the two formats name one place.
    let line = f.line.unwrap_or(1).max(1);
    let mut range = json!({ "start": { "line": line } });
    if let (Some(start), Some(end)) = (f.line, f.end_line)
        && end > start
    {
        range["end"] = json!({ "line": end });
    }
    let mut d = json!({
        "message": f.message,
        "location": { "path": f.path, "range": range },
        "severity": severity(f.severity),
        "source": { "name": "reviewflow" },
        "code": { "value": f.rule },
        "original_output": original_output(f, line),
    });
    if let (Some(text), Some(start)) = (&f.suggestion, f.line) {
        let end = f.end_line.unwrap_or(start).max(start);
        d["suggestions"] = json!([{
            "range": { "start": { "line": start }, "end": { "line": end } },
            "text": text.strip_suffix('\n').unwrap_or(text),
        }]);
    }
    d
}

/// The finding as the line a linter prints, which is what reviewdog shows for it.
fn original_output(f: &ReviewFinding, line: u32) -> String {
    let whole = if f.line.is_none() {
        " (the whole file)"
    } else {
        ""
    };
    use super::super::review::FindingState;
    // The dialogue's state, which no field of reviewdog's can carry.
    let state = match f.state {
        Some(s @ (FindingState::Refuted | FindingState::Upheld)) => format!(" ({})", s.as_str()),
        _ => String::new(),
    };
    format!(
        "{}:{line}: {}: {}{whole} [{}]{state}",
        f.path,
        f.severity.as_str(),
        f.message,
        f.rule
    )
}

fn severity(s: Severity) -> &'static str {
    match s {
        Severity::Error => "ERROR",
        Severity::Warning => "WARNING",
        Severity::Info => "INFO",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::forge::review::FindingState;
    use crate::git::Sha;

    /// The fields of reviewdog's `Diagnostic` (proto/rdf/reviewdog.proto) and of the messages
    /// under it. reviewdog reads each line with `protojson.Unmarshal`, which refuses a field the
    /// proto does not declare: a line with one more field fails the whole file.
    fn known(path: &str) -> &'static [&'static str] {
        match path {
            "" => &[
                "message",
                "location",
                "severity",
                "source",
                "code",
                "suggestions",
                "original_output",
                "related_locations",
            ],
            "location" => &["path", "range"],
            "location.range" => &["start", "end"],
            "location.range.start"
            | "location.range.end"
            | "suggestions.range.start"
            | "suggestions.range.end" => &["line", "column"],
            "suggestions" => &["range", "text"],
            "suggestions.range" => &["start", "end"],
            "source" => &["name", "url"],
            "code" => &["value", "url"],
            _ => &[],
        }
    }

    fn only_known_fields(value: &Value, path: &str) -> Vec<String> {
        if let Some(items) = value.as_array() {
            return items
                .iter()
                .flat_map(|v| only_known_fields(v, path))
                .collect();
        }
        let Some(map) = value.as_object() else {
            return Vec::new();
        };
        let mut unknown = Vec::new();
        for (key, inner) in map {
            let at = if path.is_empty() {
                key.clone()
            } else {
                format!("{path}.{key}")
            };
            if !known(path).contains(&key.as_str()) {
                unknown.push(at.clone());
            }
            unknown.extend(only_known_fields(inner, &at));
        }
        unknown
    }

    fn finding(line: Option<u32>, state: Option<FindingState>) -> ReviewFinding {
        ReviewFinding {
            rule: "todo-added".into(),
            severity: Severity::Info,
            path: "src/a.rs".into(),
            line,
            end_line: None,
            message: "`TODO` added".into(),
            fingerprint: Some("f".repeat(32)),
            state,
            dialogue: None,
            suggestion: None,
        }
    }

    fn lines(findings: Vec<ReviewFinding>) -> Vec<Value> {
        let sha = Sha::parse(&"a".repeat(40)).expect("sha");
        let review = Review {
            comment: String::new(),
            findings,
            base: sha.clone(),
            head: sha,
            run_id: "run-1".into(),
            conversation_id: None,
            reviewer: "rules".into(),
            resolved: Vec::new(),
        };
        let bytes = render(&review).expect("renders");
        String::from_utf8(bytes)
            .expect("utf-8")
            .lines()
            .map(|l| serde_json::from_str(l).expect("a diagnostic"))
            .collect()
    }

    #[test]
    fn what_reviewdog_prints_is_where_and_what() {
        let d = &lines(vec![finding(Some(7), Some(FindingState::New))])[0];
        // reviewdog's local reporter prints `original_output` as the whole line.
        assert_eq!(
            d["original_output"],
            "src/a.rs:7: info: `TODO` added [todo-added]"
        );
        let text = d.to_string();
        assert!(!text.contains("fingerprint"), "{text}");
        assert!(!text.contains("state="), "{text}");
    }

    #[test]
    fn every_field_is_one_reviewdog_reads() {
        for d in lines(vec![
            finding(Some(7), Some(FindingState::Persisting)),
            finding(None, None),
        ]) {
            assert_eq!(only_known_fields(&d, ""), Vec::<String>::new(), "{d}");
        }
    }

    #[test]
    fn a_whole_file_finding_is_on_line_1_as_in_sarif() {
        let d = &lines(vec![finding(None, None)])[0];
        assert_eq!(d["location"]["range"], json!({ "start": { "line": 1 } }));
        assert_eq!(
            d["original_output"],
            "src/a.rs:1: info: `TODO` added (the whole file) [todo-added]"
        );
    }

    #[test]
    fn a_suggestion_replaces_whole_lines_as_reviewdog_reads_them() {
        let mut two = finding(Some(7), None);
        two.end_line = Some(8);
        two.suggestion = Some("let a = 1;\nlet b = 2;\n".into());
        let mut one = finding(Some(3), None);
        one.suggestion = Some(String::new());
        let got = lines(vec![two, one, finding(Some(4), None)]);
        assert_eq!(
            got[0]["suggestions"],
            json!([{
                "range": { "start": { "line": 7 }, "end": { "line": 8 } },
                "text": "let a = 1;\nlet b = 2;"
            }])
        );
        // An empty text deletes the line; a finding without a fix has no `suggestions`.
        assert_eq!(
            got[1]["suggestions"],
            json!([{ "range": { "start": { "line": 3 }, "end": { "line": 3 } }, "text": "" }])
        );
        assert!(got[2].get("suggestions").is_none());
        for d in &got {
            assert_eq!(only_known_fields(d, ""), Vec::<String>::new(), "{d}");
        }
    }
}

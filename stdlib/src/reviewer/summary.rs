//! The comment of the `rules` reviewer: counts by severity and a table of findings.

use std::fmt::Write as _;

use super::result::ReviewFinding;
use crate::diff::Totals;
use crate::rules::Severity;

/// Rows shown in the table; the rest are counted.
pub const MAX_ROWS: usize = 200;

/// What the comment says besides the findings.
pub struct SummaryContext {
    pub totals: Totals,
    /// Parts of the diff that could not be read.
    pub unreadable: usize,
    /// Reviews this one continues (0 for a fresh review).
    pub earlier_reviews: usize,
}

/// The markdown comment for `findings` (sorted as the rules sort them).
pub fn comment(findings: &[ReviewFinding], ctx: &SummaryContext) -> String {
    let mut out = String::from("## reviewflow rules review\n\n");
    let t = &ctx.totals;
    let files = plural(t.files, "file", "files");
    if findings.is_empty() {
        let _ = writeln!(out, "No findings in {files} (+{} −{}).", t.added, t.deleted);
    } else {
        let counts: Vec<String> = [Severity::Error, Severity::Warning, Severity::Info]
            .into_iter()
            .filter_map(|s| {
                let n = findings.iter().filter(|f| f.severity == s).count();
                // "2 warnings", "1 error"; "info" has no plural.
                (n > 0).then(|| match s {
                    Severity::Info => format!("{n} info"),
                    _ => plural(n as u64, &s.to_string(), &format!("{s}s")),
                })
            })
            .collect();
        let _ = writeln!(
            out,
            "**{}** in {files} (+{} −{}): {}.",
            plural(findings.len() as u64, "finding", "findings"),
            t.added,
            t.deleted,
            counts.join(", ")
        );
        out.push_str("\n| severity | location | rule | message |\n|---|---|---|---|\n");
        for f in findings.iter().take(MAX_ROWS) {
            let location = match f.line {
                Some(line) => format!("{}:{line}", f.path),
                None => f.path.clone(),
            };
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} |",
                f.severity,
                code(&location),
                f.rule.as_deref().map(code).unwrap_or_default(),
                cell(&f.message)
            );
        }
        if findings.len() > MAX_ROWS {
            let _ = writeln!(out, "\n… and {} more.", findings.len() - MAX_ROWS);
        }
    }
    if ctx.unreadable > 0 {
        let _ = writeln!(
            out,
            "\n{} of the diff could not be read.",
            plural(ctx.unreadable as u64, "part", "parts")
        );
    }
    if ctx.earlier_reviews > 0 {
        let _ = writeln!(
            out,
            "\n_Continues the conversation of {}._",
            plural(
                ctx.earlier_reviews as u64,
                "earlier review",
                "earlier reviews"
            )
        );
    }
    out
}

fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// A code span that holds `text` whatever backticks it contains, safe in a table cell.
fn code(text: &str) -> String {
    let text = cell(text);
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest + 1);
    if longest > 0 {
        format!("{fence} {text} {fence}")
    } else {
        format!("{fence}{text}{fence}")
    }
}

/// Text that stays inside one table cell.
fn cell(text: &str) -> String {
    text.replace(['\n', '\r'], " ").replace('|', "\\|")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn severity_counts_agree_in_number() {
        let f = |severity| ReviewFinding {
            path: "a.rs".into(),
            line: Some(1),
            end_line: None,
            severity,
            rule: None,
            message: "m".into(),
            suggestion: None,
        };
        let findings = [
            f(Severity::Warning),
            f(Severity::Warning),
            f(Severity::Error),
        ];
        let ctx = SummaryContext {
            totals: Default::default(),
            unreadable: 0,
            earlier_reviews: 0,
        };
        let text = comment(&findings, &ctx);
        assert!(text.contains("1 error, 2 warnings."), "{text}");
    }

    #[test]
    fn code_spans_survive_backticks_and_pipes() {
        assert_eq!(code("a.rs"), "`a.rs`");
        assert_eq!(code("a`b"), "`` a`b ``");
        assert_eq!(cell("a|b\nc"), "a\\|b c");
    }
}

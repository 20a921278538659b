//! Findings for people (miette) and for machines (`--format json`).

use miette::{Diagnostic, GraphicalReportHandler, GraphicalTheme, LabeledSpan};
use schemars::JsonSchema;
use serde::Serialize;

use crate::finding::{Confidence, Finding, Severity};
use crate::render::escape;
use crate::render::excerpt::{self, Excerpt, Mark, bound_label};
use crate::source::Source;
use crate::span::Span;

/// The version of the findings JSON.
pub const FINDINGS_FORMAT_VERSION: u32 = 1;

/// How a terminal report looks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Style {
    /// Unicode and colour, for a terminal.
    Color,
    /// ASCII, no colour: logs, pipes, `NO_COLOR`, snapshots.
    Plain,
}

/// At most this many findings of one file are drawn; a line counts the others.
pub const MAX_RENDERED: usize = 50;
/// At most this many labels of one finding are drawn (the primary one first); its help counts
/// the others.
pub const MAX_LABELS: usize = 8;
/// Longest message, label or suppression reason drawn, in characters.
const MAX_MESSAGE_CHARS: usize = 300;
/// Longest help drawn, in characters.
const MAX_HELP_CHARS: usize = 2_000;

/// One finding as miette draws it: every text escaped and bounded, the source an [`Excerpt`].
struct Report {
    check: &'static str,
    severity: miette::Severity,
    message: String,
    help: Option<String>,
    code: Excerpt,
}

impl std::fmt::Debug for Report {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::fmt::Display for Report {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Report {}

impl Diagnostic for Report {
    fn code<'b>(&'b self) -> Option<Box<dyn std::fmt::Display + 'b>> {
        Some(Box::new(self.check))
    }

    fn severity(&self) -> Option<miette::Severity> {
        Some(self.severity)
    }

    fn help<'b>(&'b self) -> Option<Box<dyn std::fmt::Display + 'b>> {
        self.help
            .as_ref()
            .map(|h| Box::new(h) as Box<dyn std::fmt::Display>)
    }

    fn source_code(&self) -> Option<&dyn miette::SourceCode> {
        Some(&self.code)
    }

    fn labels(&self) -> Option<Box<dyn Iterator<Item = LabeledSpan> + '_>> {
        let labels = self.code.labels.iter().enumerate().map(|(i, (span, m))| {
            if i == 0 {
                LabeledSpan::new_primary_with_span(Some(m.clone()), *span)
            } else {
                LabeledSpan::new_with_span(Some(m.clone()), *span)
            }
        });
        Some(Box::new(labels))
    }
}

impl Report {
    fn new(source: &Source, finding: &Finding) -> Self {
        let mut message = finding.message.clone();
        if let Some(s) = &finding.suppressed {
            message.push_str(&format!(" (allowed: {})", s.reason));
        }
        let mut help = finding.help.clone().unwrap_or_default();
        if !finding.flow.is_empty() {
            let path: Vec<&str> = finding.flow.iter().map(|l| l.message.as_str()).collect();
            if !help.is_empty() {
                help.push('\n');
            }
            help.push_str(&format!("path: {}", path.join(" → ")));
        }
        // Principle 6: the one line that would hide exactly this finding, and nothing later.
        if finding.suppressed.is_none() && finding.allowable() {
            if !help.is_empty() {
                help.push('\n');
            }
            help.push_str(&format!(
                "allow: allow \"{}\" finding=\"{}\" reason=\"…\"",
                finding.check,
                finding.id()
            ));
        }
        let hidden = finding.related.len().saturating_sub(MAX_LABELS - 1);
        if hidden > 0 {
            if !help.is_empty() {
                help.push('\n');
            }
            let s = if hidden == 1 { "" } else { "s" };
            help.push_str(&format!(
                "{hidden} more related place{s} not drawn: `reviewflow check --format json` \
                 lists them all"
            ));
        }
        let marks: Vec<Mark> = std::iter::once(&finding.primary)
            .chain(finding.related.iter().take(MAX_LABELS - 1))
            .map(|l| {
                let (span, message) = bound_label(source, l.span, &l.message);
                Mark {
                    span,
                    message: escape::bounded(&message, MAX_MESSAGE_CHARS),
                }
            })
            .collect();
        Self {
            check: finding.check,
            severity: match finding.severity {
                Severity::Error if finding.suppressed.is_none() => miette::Severity::Error,
                Severity::Error | Severity::Warning => miette::Severity::Warning,
                Severity::Info => miette::Severity::Advice,
            },
            message: escape::bounded(&message, MAX_MESSAGE_CHARS),
            help: (!help.is_empty()).then(|| escape::bounded(&help, MAX_HELP_CHARS)),
            code: Excerpt::new(source, &marks),
        }
    }
}

/// Renders findings of one file as miette reports, at most [`MAX_RENDERED`] of them. Each
/// excerpt shows the labelled lines with a line of context, far-apart parts joined by a `...`
/// line, long lines clipped and control characters escaped ([`excerpt`]).
pub fn render_human(source: &Source, findings: &[Finding], style: Style) -> String {
    let theme = match style {
        Style::Color => GraphicalTheme::unicode(),
        Style::Plain => GraphicalTheme::none(),
    };
    let handler = GraphicalReportHandler::new_themed(theme.clone())
        .with_width(100)
        .with_links(false)
        .with_context_lines(excerpt::CONTEXT_LINES);
    let mut out = String::new();
    for finding in findings.iter().take(MAX_RENDERED) {
        let report = Report::new(source, finding);
        let mut one = String::new();
        if handler.render_report(&mut one, &report).is_err() {
            out.push_str(&format!("{}: {}\n", finding.check, report.message));
        } else {
            let (span, _) = bound_label(source, finding.primary.span, "");
            let line = source.position(span.offset.min(source.text().len())).line;
            out.push_str(&excerpt::stitch(&one, &theme, line));
        }
        out.push('\n');
    }
    if let Some(more) = findings.len().checked_sub(MAX_RENDERED).filter(|&n| n > 0) {
        let s = if more == 1 { "" } else { "s" };
        out.push_str(&format!(
            "... and {more} more finding{s}: `reviewflow check --format json` lists them all\n\n"
        ));
    }
    out
}

/// `text` as a terminal may print it: control characters escaped ([`escape`]).
pub fn terminal_text(text: &str) -> String {
    escape::escaped(text)
}

/// `N errors, N warnings (N allowed)` for the end of a human report.
pub fn summary_line(findings: &[Finding]) -> String {
    let live = |s: Severity| {
        findings
            .iter()
            .filter(|f| f.severity == s && f.suppressed.is_none())
            .count()
    };
    let allowed = findings.iter().filter(|f| f.suppressed.is_some()).count();
    let plural = |n: usize, w: &str| format!("{n} {w}{}", if n == 1 { "" } else { "s" });
    let mut line = format!(
        "{}, {}",
        plural(live(Severity::Error), "error"),
        plural(live(Severity::Warning), "warning")
    );
    if allowed > 0 {
        line.push_str(&format!(" ({allowed} allowed)"));
    }
    line
}

/// The findings JSON (`reviewflow check --format json`).
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct FindingsReport {
    /// Format version; bumped on any incompatible change.
    pub version: u32,
    pub files: Vec<FileFindings>,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct FileFindings {
    pub path: String,
    /// The file could not be used at all (syntax, encoding, limits).
    pub unusable: bool,
    pub findings: Vec<FindingJson>,
    /// With `--emit model`: the compiled model, as `reviewflow check --emit model` prints it
    /// alone (schema/model.schema.json). Absent for an unusable file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<serde_json::Value>,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct FindingJson {
    /// What `allow … finding="…"` names to hide exactly this finding.
    pub id: String,
    pub check: String,
    pub severity: Severity,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub confidence: Option<Confidence>,
    pub message: String,
    pub location: Location,
    pub related: Vec<LabelJson>,
    /// Source first, sink last.
    pub flow: Vec<LabelJson>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub help: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stage: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub suppressed: Option<SuppressionJson>,
}

/// 1-based lines and columns (columns count characters); `end_*` is exclusive.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct Location {
    pub line: usize,
    pub column: usize,
    pub end_line: usize,
    pub end_column: usize,
    /// Byte offset and length in the file.
    pub offset: usize,
    pub length: usize,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct LabelJson {
    pub message: String,
    pub location: Location,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct SuppressionJson {
    pub reason: String,
    pub location: Location,
}

pub fn location(source: &Source, span: Span) -> Location {
    let start = source.position(span.offset);
    let end = source.position(span.end());
    Location {
        line: start.line,
        column: start.column,
        end_line: end.line,
        end_column: end.column,
        offset: span.offset,
        length: span.len,
    }
}

pub fn file_findings(source: &Source, findings: &[Finding], unusable: bool) -> FileFindings {
    let label = |l: &crate::finding::Label| LabelJson {
        message: l.message.clone(),
        location: location(source, l.span),
    };
    FileFindings {
        path: source.name().to_string(),
        unusable,
        model: None,
        findings: findings
            .iter()
            .map(|f| FindingJson {
                id: f.id(),
                check: f.check.to_string(),
                severity: f.severity,
                confidence: f.confidence,
                message: f.message.clone(),
                location: location(source, f.primary.span),
                related: f.related.iter().map(label).collect(),
                flow: f.flow.iter().map(label).collect(),
                help: f.help.clone(),
                stage: f.stage.clone(),
                suppressed: f.suppressed.as_ref().map(|s| SuppressionJson {
                    reason: s.reason.clone(),
                    location: location(source, s.span),
                }),
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::finding::Label;

    fn finding(source: &Source, at: &str, message: &str) -> Finding {
        let offset = source.text().find(at).unwrap_or(0);
        Finding::new(
            "syntax",
            Severity::Error,
            message.to_string(),
            Label::new(Span::new(offset, at.len()), "here"),
        )
    }

    #[test]
    fn a_long_line_is_clipped_around_the_label() {
        let source = Source::new(
            "f.kdl",
            format!("pipeline \"x\"{}a=1\n", " ".repeat(65_536)),
        );
        let f = finding(&source, "a=1", "a property of nothing");
        insta::assert_snapshot!(render_human(&source, &[f], Style::Plain));
    }

    #[test]
    fn control_characters_are_escaped() {
        let source = Source::new(
            "f\u{1b}[2J.kdl",
            "pipeline \"x\"\nstage \"a\" uses=\"\u{1b}]0;pwned\u{7}\u{1b}[2J\"\n",
        );
        let f = finding(
            &source,
            "uses",
            "unknown stage kind `\u{1b}]0;pwned\u{7}\u{1b}[2J`",
        );
        let out = render_human(&source, &[f], Style::Plain);
        assert!(!out.contains('\u{1b}') && !out.contains('\u{7}'), "{out}");
        insta::assert_snapshot!(out);
    }

    #[test]
    fn findings_past_the_bound_are_counted() {
        let text: String = std::iter::once("pipeline \"x\"\n".to_string())
            .chain((0..60).map(|i| format!("bogus{i} 1\n")))
            .collect();
        let source = Source::new("f.kdl", text);
        let findings: Vec<Finding> = (0..60)
            .map(|i| finding(&source, &format!("bogus{i} "), "unknown node"))
            .collect();
        let out = render_human(&source, &findings, Style::Plain);
        assert_eq!(out.matches("unknown node").count(), MAX_RENDERED);
        let lines: Vec<&str> = out.lines().collect();
        insta::assert_snapshot!(lines[lines.len() - 8..].join("\n"));
    }

    #[test]
    fn labels_past_the_bound_are_counted_in_the_help() {
        let text: String = std::iter::once("pipeline \"x\"\n".to_string())
            .chain((0..20).map(|i| format!("s{i} 1\n")))
            .collect();
        let source = Source::new("f.kdl", text);
        let mut f = finding(&source, "pipeline", "a cycle");
        for i in 0..20 {
            let at = source.text().find(&format!("s{i} ")).unwrap_or(0);
            f = f.related(Label::new(Span::new(at, 2), format!("s{i}")));
        }
        insta::assert_snapshot!(render_human(&source, &[f], Style::Plain));
    }
}

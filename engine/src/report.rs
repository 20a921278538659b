//! Findings for people (miette) and for machines (`--format json`).

use miette::{Diagnostic, GraphicalReportHandler, GraphicalTheme, LabeledSpan};
use schemars::JsonSchema;
use serde::Serialize;

use crate::finding::{Confidence, Finding, Severity};
use crate::render::excerpt::{self, ExcerptSource};
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

struct Report<'a> {
    finding: &'a Finding,
    source: &'a Source,
    code: ExcerptSource<'a>,
}

impl std::fmt::Debug for Report<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.finding.message)
    }
}

impl std::fmt::Display for Report<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.finding.message)?;
        if let Some(s) = &self.finding.suppressed {
            write!(f, " (allowed: {})", s.reason)?;
        }
        Ok(())
    }
}

impl std::error::Error for Report<'_> {}

impl Diagnostic for Report<'_> {
    fn code<'b>(&'b self) -> Option<Box<dyn std::fmt::Display + 'b>> {
        Some(Box::new(self.finding.check))
    }

    fn severity(&self) -> Option<miette::Severity> {
        Some(match self.finding.severity {
            Severity::Error if self.finding.suppressed.is_none() => miette::Severity::Error,
            Severity::Error | Severity::Warning => miette::Severity::Warning,
            Severity::Info => miette::Severity::Advice,
        })
    }

    fn help<'b>(&'b self) -> Option<Box<dyn std::fmt::Display + 'b>> {
        let mut help = self.finding.help.clone().unwrap_or_default();
        if !self.finding.flow.is_empty() {
            let path: Vec<String> = self
                .finding
                .flow
                .iter()
                .map(|l| l.message.clone())
                .collect();
            if !help.is_empty() {
                help.push('\n');
            }
            help.push_str(&format!("path: {}", path.join(" → ")));
        }
        (!help.is_empty()).then(|| Box::new(help) as Box<dyn std::fmt::Display>)
    }

    fn source_code(&self) -> Option<&dyn miette::SourceCode> {
        Some(&self.code)
    }

    fn labels(&self) -> Option<Box<dyn Iterator<Item = LabeledSpan> + '_>> {
        let primary = {
            let (span, message) = drawn(self.source, &self.finding.primary);
            LabeledSpan::new_primary_with_span(Some(message), span)
        };
        let related = self.finding.related.iter().map(move |l| {
            let (span, message) = drawn(self.source, l);
            LabeledSpan::new_with_span(Some(message), span)
        });
        Some(Box::new(std::iter::once(primary).chain(related)))
    }
}

/// A label as drawn: inside the file, and bounded ([`excerpt::bound_label`]).
fn drawn(source: &Source, label: &crate::finding::Label) -> (miette::SourceSpan, String) {
    let text = source.text();
    let offset = label.span.offset.min(text.len());
    let span = Span::new(offset, label.span.len.min(text.len() - offset));
    let (span, message) = excerpt::bound_label(text, span, &label.message);
    (
        miette::SourceSpan::new(span.offset.into(), span.len),
        message,
    )
}

/// Renders findings of one file as miette reports. Each excerpt shows the labelled lines with a
/// line of context, far-apart parts joined by a `...` line ([`excerpt`]).
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
    for finding in findings {
        let report = Report {
            finding,
            source,
            code: ExcerptSource {
                name: source.name(),
                text: source.text(),
            },
        };
        let mut one = String::new();
        if handler.render_report(&mut one, &report).is_err() {
            out.push_str(&format!("{}: {}\n", finding.check, finding.message));
        } else {
            let (span, _) = drawn(source, &finding.primary);
            let line = source.position(span.offset()).line;
            out.push_str(&excerpt::stitch(&one, &theme, line));
        }
        out.push('\n');
    }
    out
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

//! Check findings as one SARIF log (`reviewflow check --format sarif`), through [`LogBuilder`].
//!
//! - `tool.driver.rules` lists every registered check in [`check::ALL`] order, so a result's
//!   `ruleIndex` is stable for a given version and its `ruleId` (the check id) is stable across
//!   versions; each rule carries `shortDescription` (the check's summary), `fullDescription`
//!   and `help` (its `docs/checks.md` section: what it proves, severity, fix);
//! - one result per finding, suppressed ones included: an allowed finding carries
//!   `suppressions: [{kind: "inSource", justification, location}]` and code scanning shows it as
//!   dismissed instead of losing it;
//! - `message.text` is the finding's message, then `help: …` on a new line when it has help
//!   (a rule's help is generic; a finding's is about this place); the primary label's message
//!   is the location's message; confidence and stage go in `properties`;
//! - related labels become `relatedLocations` (ids from 1, in order), a flow path becomes one
//!   `codeFlows[0].threadFlows[0]` whose locations run source first, sink last;
//! - `partialFingerprints["reviewflow/check/v2"]` identifies a finding by what it is, not where
//!   it is (see [`fingerprint`]), numbered among equal ones;
//! - each rule's `properties` say how code scanning files its alerts (tags, security severity,
//!   precision: [`super::taxonomy`]);
//! - at most [`MAX_RESULTS`](super::cap::MAX_RESULTS) results, GitHub's limit for a run: the
//!   most severe are kept, live before allowed, and the run says how many were left out
//!   ([`results_left_out`]).
//!
//! Columns and `charOffset`/`charLength` count UTF-16 code units, SARIF's default `columnKind`
//! (stated explicitly in the run): spans are byte ranges, so each position is converted from the
//! bytes of its line. A span that does not fall on character boundaries is widened to the
//! characters it touches; one past the end of the file is clamped to the end.
//!
//! Artifact URIs are the file names relative to the repository's top ([`SrcRoot`]).

use std::collections::HashMap;

use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use super::cap::Quota;
use super::fingerprint::Numbering;
use super::log::{
    Analysis, Fingerprint, Level, LogBuilder, Rule, SarifResult, docs_url, location,
    physical_location,
};
use super::taxonomy;
use super::uri::SrcRoot;
use reviewflow_engine::check::{self, Check};
use reviewflow_engine::finding::{Confidence, Finding, Label, Severity};
use reviewflow_engine::source::Source;
use reviewflow_engine::span::Span;

/// The checks' documentation, whose sections (`## <check-id>`) give each rule its description
/// and help.
const CHECKS_DOC: &str = include_str!("../../../docs/checks.md");

/// Where the tool is described (`tool.driver.informationUri`): the docs, if configured.
pub fn information_uri() -> Option<String> {
    docs_url().map(str::to_string)
}

/// The documentation link of one check (its section of `checks.md`), if docs are configured.
pub fn help_uri(check_id: &str) -> Option<String> {
    docs_url().map(|base| format!("{base}/checks.md#{check_id}"))
}

/// A check's description and help, from its section of `docs/checks.md`: the `**Proves:**`,
/// `**Principle:**`, `**Severity:**` and `**Fix:**` paragraphs. Falls back on the check's summary.
#[derive(Clone)]
pub struct RuleDoc {
    /// What the check proves, as plain text (`fullDescription`).
    pub full: String,
    /// Proves, principle, severity, fix and suppress, as plain text (`help.text`).
    pub help_text: String,
    /// The same as Markdown (`help.markdown`).
    pub help_markdown: String,
}

/// The documentation of `check`.
pub fn rule_doc(check: &dyn Check) -> RuleDoc {
    let paragraphs = doc_section(check.id())
        .map(|section| {
            ["**Proves:**", "**Principle:**", "**Severity:**", "**Fix:**"]
                .iter()
                .filter_map(|head| {
                    section
                        .split("\n\n")
                        .map(str::trim)
                        .find(|p| p.starts_with(head))
                })
                .collect::<Vec<_>>()
        })
        .unwrap_or_default();
    let Some(proves) = paragraphs.first().filter(|p| p.starts_with("**Proves:**")) else {
        let summary = format!("{}.", check.summary());
        return RuleDoc {
            full: summary.clone(),
            help_text: summary.clone(),
            help_markdown: summary,
        };
    };
    let plain = |p: &str| {
        p.replace("**", "")
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    };
    RuleDoc {
        full: plain(proves.trim_start_matches("**Proves:**")),
        help_text: paragraphs
            .iter()
            .map(|p| plain(p))
            .collect::<Vec<_>>()
            .join("\n\n"),
        help_markdown: paragraphs.join("\n\n"),
    }
}

/// [`rule_doc`] of a registered check, read from the documentation once per process: every log
/// describes every check, and searching the documentation for each was most of a log's cost.
fn cached_rule_doc(check: &dyn Check) -> RuleDoc {
    static DOCS: std::sync::OnceLock<HashMap<&'static str, RuleDoc>> = std::sync::OnceLock::new();
    DOCS.get_or_init(|| check::ALL.iter().map(|c| (c.id(), rule_doc(*c))).collect())
        .get(check.id())
        .cloned()
        .unwrap_or_else(|| rule_doc(check))
}

/// The text of `## <id>` in `docs/checks.md`, up to the next `## ` heading.
fn doc_section(id: &str) -> Option<&'static str> {
    let head = format!("\n## {id}\n");
    let start = CHECKS_DOC.find(&head)? + head.len();
    let rest = &CHECKS_DOC[start..];
    Some(&rest[..rest.find("\n## ").unwrap_or(rest.len())])
}

/// The key of the fingerprint in `partialFingerprints`; the suffix changes if the recipe does.
pub const FINGERPRINT_KEY: &str = "reviewflow/check/v2";

/// One SARIF log for the findings of every file checked (files without findings included: they
/// are listed as artifacts, and a clean run has an empty `results` array), file names taken as
/// relative to the repository's top ([`SrcRoot::filesystem`]: relative names as they are).
pub fn sarif_log(files: &[(&Source, &[Finding])], tool_version: &str) -> Value {
    sarif_log_at(files, &SrcRoot::filesystem(), tool_version)
}

/// [`sarif_log`] with file names resolved by `root` (`reviewflow check` passes
/// [`SrcRoot::current`]).
pub fn sarif_log_at(files: &[(&Source, &[Finding])], root: &SrcRoot, tool_version: &str) -> Value {
    builder(files, root, tool_version).finish()
}

/// [`sarif_log_at`] as the pretty JSON `reviewflow check --format sarif` prints, with its final
/// newline, written without holding the results as values.
pub fn sarif_text_at(
    files: &[(&Source, &[Finding])],
    root: &SrcRoot,
    tool_version: &str,
) -> String {
    builder(files, root, tool_version).finish_text()
}

/// How many findings of `files` a log leaves out to stay within GitHub's limit
/// ([`MAX_RESULTS`](super::cap::MAX_RESULTS)).
pub fn results_left_out(files: &[(&Source, &[Finding])]) -> usize {
    quota(files).left_out()
}

/// Which findings go first when a log holds too many: live before allowed (code scanning shows
/// an allowed one as dismissed), then errors, warnings, notes. Lower is kept first.
fn rank(finding: &Finding) -> usize {
    let severity = match finding.severity {
        Severity::Error => 0,
        Severity::Warning => 1,
        Severity::Info => 2,
    };
    usize::from(finding.suppressed.is_some()) * 3 + severity
}

fn quota(files: &[(&Source, &[Finding])]) -> Quota {
    Quota::new(files.iter().flat_map(|(_, f)| f.iter()).map(rank))
}

/// The confidence each check's findings in `files` declare, the lowest; `None` for a check with
/// a finding that declares none (and absent for a check without findings).
fn confidences(files: &[(&Source, &[Finding])]) -> HashMap<&'static str, Option<Confidence>> {
    let mut out: HashMap<&'static str, Option<Confidence>> = HashMap::new();
    for finding in files.iter().flat_map(|(_, f)| f.iter()) {
        let entry = out.entry(finding.check).or_insert(finding.confidence);
        *entry = match (*entry, finding.confidence) {
            (Some(a), Some(b)) => Some(taxonomy::lower(a, b)),
            _ => None,
        };
    }
    out
}

fn builder(files: &[(&Source, &[Finding])], root: &SrcRoot, tool_version: &str) -> LogBuilder {
    let mut log = LogBuilder::new(Analysis::Check, tool_version);
    let confidences = confidences(files);
    for c in check::ALL {
        let confidence = confidences.get(c.id()).copied().flatten();
        log.rule(&rule(*c, confidence));
    }
    log.column_kind("utf16CodeUnits");
    let mut quota = quota(files);
    for (source, findings) in files {
        let uri = root.uri(source.name());
        let index = log.artifact(&uri);
        let file = File {
            source,
            uri,
            index,
            ascii: source.text().is_ascii(),
        };
        for finding in findings.iter() {
            if quota.take(rank(finding)) {
                log.result(result(&file, finding));
            }
        }
    }
    let mut properties = Map::new();
    quota.report(
        &mut log,
        &mut properties,
        "the most severe are kept, live findings before allowed ones (`reviewflow check` lists \
         every finding)",
    );
    if !properties.is_empty() {
        log.properties(properties);
    }
    log
}

/// The SARIF level of a severity.
pub fn level(severity: Severity) -> &'static str {
    Level::from(severity).as_str()
}

/// The stable part of a finding's identity: SHA-256 (hex) over the file's URI, the check id, the
/// stage, the message and the text of the primary span, each length-prefixed so that fields
/// cannot run into one another. Lines and columns are left out on purpose, so that a finding
/// moved by an edit elsewhere in the file keeps its fingerprint. The file is in, so that the same
/// finding in two pipelines of one repository stays two alerts (a renamed file starts afresh).
/// The log numbers equal hashes (`<hash>:<n>`), so two identical findings stay two alerts.
///
/// The hash covers the primary span's text. Pipeline files name secrets rather than hold them,
/// so that text is a name or a reference.
pub fn fingerprint(uri: &str, source: &Source, finding: &Finding) -> String {
    let mut hasher = Sha256::new();
    let mut field = |bytes: &[u8]| {
        hasher.update((bytes.len() as u64).to_le_bytes());
        hasher.update(bytes);
    };
    field(uri.as_bytes());
    field(finding.check.as_bytes());
    match &finding.stage {
        Some(stage) => {
            field(b"stage");
            field(stage.as_bytes());
        }
        None => field(b"no-stage"),
    }
    field(finding.message.as_bytes());
    field(source.slice(finding.primary.span).as_bytes());
    reviewflow_engine::hex::encode(&hasher.finalize())
}

fn rule(check: &dyn Check, confidence: Option<Confidence>) -> Rule {
    let id = check.id();
    let doc = cached_rule_doc(check);
    let mut rule = Rule {
        id: id.to_owned(),
        short: check.summary().to_owned(),
        full: doc.full,
        help_text: doc.help_text,
        help_markdown: Some(doc.help_markdown),
        help_uri: None,
        level: Level::from(check.severity()),
        properties: taxonomy::check_rule(check.principle(), check.severity(), confidence),
    };
    if let Some(uri) = help_uri(id) {
        rule.help_text = format!("{}\n\nDocumentation: {uri}", rule.help_text);
        rule.help_markdown = rule
            .help_markdown
            .map(|md| format!("{md}\n\n[Documentation]({uri})"));
        rule.help_uri = Some(uri);
    }
    rule
}

/// A file being written out: its source, its URI and its index in `artifacts`.
struct File<'a> {
    source: &'a Source,
    uri: String,
    index: usize,
    /// ASCII text has as many UTF-16 units as bytes: no counting needed.
    ascii: bool,
}

fn result(file: &File<'_>, finding: &Finding) -> SarifResult {
    let mut extra = Map::new();
    if !finding.related.is_empty() {
        let related: Vec<Value> = finding
            .related
            .iter()
            .enumerate()
            .map(|(i, label)| {
                let mut loc = label_location(file, label);
                loc["id"] = (i + 1).into();
                loc
            })
            .collect();
        extra.insert("relatedLocations".into(), related.into());
    }
    if !finding.flow.is_empty() {
        let steps: Vec<Value> = finding
            .flow
            .iter()
            .map(|label| json!({ "location": label_location(file, label) }))
            .collect();
        extra.insert(
            "codeFlows".into(),
            json!([{ "threadFlows": [{ "locations": steps }] }]),
        );
    }
    if let Some(suppression) = &finding.suppressed {
        extra.insert(
            "suppressions".into(),
            json!([{
                "kind": "inSource",
                "justification": suppression.reason,
                "location": { "physicalLocation": physical(file, suppression.span) },
            }]),
        );
    }
    let mut properties = Map::new();
    properties.insert("id".into(), finding.id().into());
    if let Some(confidence) = finding.confidence {
        properties.insert("confidence".into(), json!(confidence));
    }
    if let Some(stage) = &finding.stage {
        properties.insert("stage".into(), stage.as_str().into());
    }
    if !properties.is_empty() {
        extra.insert("properties".into(), properties.into());
    }
    // The finding's help is specific to it (rule help is generic), so it travels in the message.
    let message = match &finding.help {
        Some(help) => format!("{}\nhelp: {help}", finding.message),
        None => finding.message.clone(),
    };
    SarifResult {
        rule_id: finding.check.to_owned(),
        level: Level::from(finding.severity),
        message,
        location: label_location(file, &finding.primary),
        fingerprint: Fingerprint {
            key: FINGERPRINT_KEY,
            value: fingerprint(&file.uri, file.source, finding),
            numbering: Numbering::Always,
        },
        extra,
    }
}

fn label_location(file: &File<'_>, label: &Label) -> Value {
    let mut loc = location(&file.uri, Some(file.index), region(file, label.span));
    loc["message"] = json!({ "text": label.message });
    loc
}

fn physical(file: &File<'_>, span: Span) -> Value {
    physical_location(&file.uri, Some(file.index), region(file, span))
}

fn region(file: &File<'_>, span: Span) -> Value {
    let text = file.source.text();
    let start = text.floor_char_boundary(span.offset);
    let end = text.ceil_char_boundary(span.offset.saturating_add(span.len).max(start));
    let (start_line, start_column, start_units) = point(file, start);
    let (end_line, end_column, end_units) = point(file, end);
    json!({
        "startLine": start_line,
        "startColumn": start_column,
        "endLine": end_line,
        "endColumn": end_column,
        "charOffset": start_units,
        "charLength": end_units - start_units,
    })
}

/// 1-based line, 1-based UTF-16 column and 0-based UTF-16 offset of a byte offset that lies on a
/// character boundary.
fn point(file: &File<'_>, offset: usize) -> (usize, usize, usize) {
    let text = file.source.text();
    let line = file.source.position(offset).line;
    // From the line index, not a search back along the line: one long line of many findings
    // would be quadratic.
    let line_start = file.source.line_start(offset);
    if file.ascii {
        return (line, offset - line_start + 1, offset);
    }
    let column = utf16_len(&text[line_start..offset]) + 1;
    (line, column, utf16_len(&text[..offset]))
}

fn utf16_len(s: &str) -> usize {
    s.chars().map(char::len_utf16).sum()
}

//! Findings as one SARIF 2.1.0 log (`--format sarif`), for code scanning.
//!
//! Shape of the log:
//! - one run; `tool.driver.rules` lists every registered check in [`check::ALL`] order, so a
//!   result's `ruleIndex` is stable for a given version and its `ruleId` (the check id) is stable
//!   across versions; each rule carries `shortDescription` (the check's summary),
//!   `fullDescription` and `help` (its `docs/checks.md` section: what it proves, severity, fix),
//!   so the log explains itself; `helpUri` and `informationUri` appear only when a real docs
//!   address was configured at build time ([`DOCS_URL`]);
//! - one result per finding, suppressed ones included: an allowed finding carries
//!   `suppressions: [{kind: "inSource", justification, location}]` and code scanning shows it as
//!   dismissed instead of losing it;
//! - `message.text` is the finding's message, then `help: …` on a new line when it has help
//!   (a rule's help is generic; a finding's is about this place); the primary label's message
//!   is the location's message; confidence and stage go in `properties`;
//! - related labels become `relatedLocations` (ids from 1, in order), a flow path becomes one
//!   `codeFlows[0].threadFlows[0]` whose locations run source first, sink last;
//! - `partialFingerprints["reviewflow/v1"]` identifies a finding by what it is, not where it is
//!   (see [`fingerprint`]), so alerts survive lines being inserted above them.
//!
//! Columns and `charOffset`/`charLength` count UTF-16 code units, SARIF's default `columnKind`
//! (stated explicitly in the run): spans are byte ranges, so each position is converted from the
//! bytes of its line. A span that does not fall on character boundaries is widened to the
//! characters it touches; one past the end of the file is clamped to the end.
//!
//! Artifact URIs are the file names as given to [`Source::new`], which callers keep relative to
//! the repository root; backslashes become `/` and characters that a URI reference cannot hold
//! are percent-encoded.

use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use crate::check::{self, Check};
use crate::finding::{Finding, Label, Severity};
use crate::source::Source;
use crate::span::Span;

/// The SARIF version written.
pub const SARIF_VERSION: &str = "2.1.0";

/// The published schema of [`SARIF_VERSION`] (errata 01).
pub const SARIF_SCHEMA: &str =
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json";

/// Where reviewflow's documentation is published, if anywhere: the address of the `docs/`
/// folder, set at build time (`REVIEWFLOW_DOCS_URL=https://…/docs cargo build`). Without it the
/// log links nowhere (no `informationUri`, no `helpUri`): every rule carries its description and
/// help in the log itself, and no address is made up.
pub const DOCS_URL: Option<&str> = option_env!("REVIEWFLOW_DOCS_URL");

/// The checks' documentation, whose sections (`## <check-id>`) give each rule its description
/// and help.
const CHECKS_DOC: &str = include_str!("../../docs/checks.md");

/// The docs address, when one is configured and absolute (SARIF requires absolute URIs).
fn docs_url() -> Option<&'static str> {
    DOCS_URL
        .map(|u| u.trim_end_matches('/'))
        .filter(|u| u.starts_with("https://") || u.starts_with("http://"))
}

/// Where the tool is described (`tool.driver.informationUri`): the docs, if configured.
pub fn information_uri() -> Option<String> {
    docs_url().map(str::to_string)
}

/// The documentation link of one check (its section of `checks.md`), if docs are configured.
pub fn help_uri(check_id: &str) -> Option<String> {
    docs_url().map(|base| format!("{base}/checks.md#{check_id}"))
}

/// A check's description and help, from its section of `docs/checks.md`: the `**Proves:**`,
/// `**Severity:**` and `**Fix:**` paragraphs. Falls back on the check's summary.
pub struct RuleDoc {
    /// What the check proves, as plain text (`fullDescription`).
    pub full: String,
    /// Proves, severity, fix and suppress, as plain text (`help.text`).
    pub help_text: String,
    /// The same as Markdown (`help.markdown`).
    pub help_markdown: String,
}

/// The documentation of `check`.
pub fn rule_doc(check: &dyn Check) -> RuleDoc {
    let paragraphs = doc_section(check.id())
        .map(|section| {
            ["**Proves:**", "**Severity:**", "**Fix:**"]
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

/// The text of `## <id>` in `docs/checks.md`, up to the next `## ` heading.
fn doc_section(id: &str) -> Option<&'static str> {
    let head = format!("\n## {id}\n");
    let start = CHECKS_DOC.find(&head)? + head.len();
    let rest = &CHECKS_DOC[start..];
    Some(&rest[..rest.find("\n## ").unwrap_or(rest.len())])
}

/// The key of the fingerprint in `partialFingerprints`; the suffix changes if the recipe does.
pub const FINGERPRINT_KEY: &str = "reviewflow/v1";

/// One SARIF log for the findings of every file checked (files without findings included: they
/// are listed as artifacts, and a clean run has an empty `results` array).
pub fn sarif_log(files: &[(&Source, &[Finding])], tool_version: &str) -> Value {
    let mut artifacts = Vec::with_capacity(files.len());
    let mut results = Vec::new();
    for (index, (source, findings)) in files.iter().enumerate() {
        let file = File {
            source,
            uri: artifact_uri(source.name()),
            index,
            ascii: source.text().is_ascii(),
        };
        artifacts.push(json!({ "location": { "uri": file.uri } }));
        let fingerprints = fingerprints(source, findings);
        for (finding, fingerprint) in findings.iter().zip(fingerprints) {
            results.push(result(&file, finding, fingerprint));
        }
    }
    let mut log = json!({
        "$schema": SARIF_SCHEMA,
        "version": SARIF_VERSION,
        "runs": [{
            "tool": {
                "driver": {
                    "name": "reviewflow",
                    "version": tool_version,
                    "rules": check::ALL.iter().map(|c| rule(*c)).collect::<Vec<_>>(),
                }
            },
            "columnKind": "utf16CodeUnits",
            "artifacts": artifacts,
            "results": results,
        }]
    });
    if let Some(uri) = information_uri() {
        log["runs"][0]["tool"]["driver"]["informationUri"] = uri.into();
    }
    log
}

/// The SARIF level of a severity.
pub fn level(severity: Severity) -> &'static str {
    match severity {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Info => "note",
    }
}

/// The stable part of a finding's identity: SHA-256 (hex) over the file's URI, the check id, the
/// stage, the message and the text of the primary span, each length-prefixed so that fields
/// cannot run into one another. Lines and columns are left out on purpose, so that a finding
/// moved by an edit elsewhere in the file keeps its fingerprint. The file is in, so that the same
/// finding in two pipelines of one repository stays two alerts (a renamed file starts afresh).
///
/// The hash covers the primary span's text. Pipeline files name secrets rather than hold them,
/// so that text is a name or a reference.
pub fn fingerprint(source: &Source, finding: &Finding) -> String {
    let mut hasher = Sha256::new();
    let mut field = |bytes: &[u8]| {
        hasher.update((bytes.len() as u64).to_le_bytes());
        hasher.update(bytes);
    };
    field(artifact_uri(source.name()).as_bytes());
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
    crate::hex::encode(&hasher.finalize())
}

/// Fingerprints of a file's findings, `<hash>:<n>` where `n` numbers identical hashes in file
/// order, so that two identical findings in one file stay two alerts.
fn fingerprints(source: &Source, findings: &[Finding]) -> Vec<String> {
    let mut seen: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    findings
        .iter()
        .map(|finding| {
            let hash = fingerprint(source, finding);
            let n = seen.entry(hash.clone()).or_insert(0);
            *n += 1;
            format!("{hash}:{n}")
        })
        .collect()
}

fn rule(check: &dyn Check) -> Value {
    let id = check.id();
    let doc = rule_doc(check);
    let mut rule = json!({
        "id": id,
        "shortDescription": { "text": check.summary() },
        "fullDescription": { "text": doc.full },
        "help": { "text": doc.help_text, "markdown": doc.help_markdown },
        "defaultConfiguration": { "level": level(check.severity()) },
    });
    if let Some(uri) = help_uri(id) {
        rule["help"]["text"] = format!("{}\n\nDocumentation: {uri}", doc.help_text).into();
        rule["help"]["markdown"] =
            format!("{}\n\n[Documentation]({uri})", doc.help_markdown).into();
        rule["helpUri"] = uri.into();
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

fn result(file: &File<'_>, finding: &Finding, fingerprint: String) -> Value {
    let mut result = Map::new();
    result.insert("ruleId".into(), finding.check.into());
    if let Some(index) = check::ALL.iter().position(|c| c.id() == finding.check) {
        result.insert("ruleIndex".into(), index.into());
    }
    result.insert("level".into(), level(finding.severity).into());
    // The finding's help is specific to it (rule help is generic), so it travels in the message.
    let text = match &finding.help {
        Some(help) => format!("{}\nhelp: {help}", finding.message),
        None => finding.message.clone(),
    };
    result.insert("message".into(), json!({ "text": text }));
    result.insert(
        "locations".into(),
        json!([location(file, &finding.primary)]),
    );
    if !finding.related.is_empty() {
        let related: Vec<Value> = finding
            .related
            .iter()
            .enumerate()
            .map(|(i, label)| {
                let mut loc = location(file, label);
                loc["id"] = (i + 1).into();
                loc
            })
            .collect();
        result.insert("relatedLocations".into(), related.into());
    }
    if !finding.flow.is_empty() {
        let steps: Vec<Value> = finding
            .flow
            .iter()
            .map(|label| json!({ "location": location(file, label) }))
            .collect();
        result.insert(
            "codeFlows".into(),
            json!([{ "threadFlows": [{ "locations": steps }] }]),
        );
    }
    result.insert(
        "partialFingerprints".into(),
        json!({ FINGERPRINT_KEY: fingerprint }),
    );
    if let Some(suppression) = &finding.suppressed {
        result.insert(
            "suppressions".into(),
            json!([{
                "kind": "inSource",
                "justification": suppression.reason,
                "location": { "physicalLocation": physical(file, suppression.span) },
            }]),
        );
    }
    let mut properties = Map::new();
    if let Some(confidence) = finding.confidence {
        properties.insert("confidence".into(), json!(confidence));
    }
    if let Some(stage) = &finding.stage {
        properties.insert("stage".into(), stage.as_str().into());
    }
    if !properties.is_empty() {
        result.insert("properties".into(), properties.into());
    }
    result.into()
}

fn location(file: &File<'_>, label: &Label) -> Value {
    json!({
        "physicalLocation": physical(file, label.span),
        "message": { "text": label.message },
    })
}

fn physical(file: &File<'_>, span: Span) -> Value {
    json!({
        "artifactLocation": { "uri": file.uri, "index": file.index },
        "region": region(file, span),
    })
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
    let line_start = text[..offset].rfind('\n').map_or(0, |i| i + 1);
    if file.ascii {
        return (line, offset - line_start + 1, offset);
    }
    let column = utf16_len(&text[line_start..offset]) + 1;
    (line, column, utf16_len(&text[..offset]))
}

fn utf16_len(s: &str) -> usize {
    s.chars().map(char::len_utf16).sum()
}

/// A file name as a relative URI reference: `/` separators, and everything outside RFC 3986's
/// unreserved characters and a few safe path characters percent-encoded (`:` included, so that
/// a first segment is never read as a scheme).
fn artifact_uri(name: &str) -> String {
    let mut uri = String::with_capacity(name.len());
    for byte in name.bytes() {
        match byte {
            b'\\' => uri.push('/'),
            b'A'..=b'Z'
            | b'a'..=b'z'
            | b'0'..=b'9'
            | b'-'
            | b'.'
            | b'_'
            | b'~'
            | b'/'
            | b'!'
            | b'$'
            | b'&'
            | b'\''
            | b'('
            | b')'
            | b'*'
            | b'+'
            | b','
            | b';'
            | b'='
            | b'@' => uri.push(char::from(byte)),
            other => uri.push_str(&format!("%{other:02X}")),
        }
    }
    uri
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris_are_relative_references() {
        assert_eq!(artifact_uri(r"ci\review.kdl"), "ci/review.kdl");
        assert_eq!(artifact_uri("a b%:é.kdl"), "a%20b%25%3A%C3%A9.kdl");
    }
}

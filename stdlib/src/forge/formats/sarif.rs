//! `review.sarif`: the findings as one SARIF 2.1.0 run.
//!
//! `ruleId` is the finding's rule and every rule appears once in `tool.driver.rules`, with its
//! description (a built-in rule's one line, or that a model reviewer named it); levels are
//! `error`, `warning` and `note`; a location's URI is the path, percent-encoded, relative to
//! `%SRCROOT%`; a finding without a line has no region. `partialFingerprints` hashes the rule,
//! path and message but not the line, so an alert survives lines moving above it. The reviewed
//! commits are in the run's `properties`.

use std::collections::BTreeSet;

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::super::ForgeError;
use super::super::review::{Review, ReviewFinding};
use crate::rules::{RuleId, Severity, registry};

pub const SCHEMA: &str = "https://json.schemastore.org/sarif-2.1.0.json";
/// The key of our fingerprint in `partialFingerprints`.
pub const FINGERPRINT_KEY: &str = "reviewflow/v1";

pub(super) fn render(review: &Review) -> Result<Vec<u8>, ForgeError> {
    let rules: BTreeSet<&str> = review.findings.iter().map(|f| f.rule.as_str()).collect();
    let doc = json!({
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": { "driver": {
                "name": "reviewflow",
                "version": env!("CARGO_PKG_VERSION"),
                "rules": rules.iter().map(|id| rule(id, &review.reviewer)).collect::<Vec<_>>(),
            }},
            "results": review.findings.iter().map(result).collect::<Vec<_>>(),
            "properties": {
                "reviewer": review.reviewer,
                "base": review.base,
                "head": review.head,
                "runId": review.run_id,
            },
        }],
    });
    let mut bytes = serde_json::to_vec_pretty(&doc).map_err(|source| ForgeError::Encode {
        what: "review as SARIF",
        source,
    })?;
    bytes.push(b'\n');
    Ok(bytes)
}

/// A rule with its description: a built-in rule's (see [`crate::rules`]), or for a rule a
/// reviewer named itself, that it is the reviewer's. No `helpUri`: there is no page to link.
fn rule(id: &str, reviewer: &str) -> Value {
    let builtin = id
        .parse::<RuleId>()
        .ok()
        .and_then(registry::get)
        .map(|r| r.description());
    let text = match builtin {
        Some(description) => description.to_string(),
        None => format!("a finding the reviewer `{reviewer}` reported under this name"),
    };
    json!({
        "id": id,
        "shortDescription": { "text": text },
        "fullDescription": { "text": text },
        "help": { "text": text },
    })
}

fn result(f: &ReviewFinding) -> Value {
    let mut physical = json!({
        "artifactLocation": { "uri": uri(&f.path), "uriBaseId": "%SRCROOT%" },
    });
    if let Some(line) = f.line {
        let mut region = json!({ "startLine": line });
        if let Some(end) = f.end_line {
            region["endLine"] = json!(end);
        }
        physical["region"] = region;
    }
    json!({
        "ruleId": f.rule,
        "level": level(f.severity),
        "message": { "text": f.message },
        "locations": [{ "physicalLocation": physical }],
        "partialFingerprints": { FINGERPRINT_KEY: fingerprint(f) },
    })
}

fn level(s: Severity) -> &'static str {
    match s {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Info => "note",
    }
}

/// A line-independent identity of a finding: 32 hex digits of SHA-256 over rule, path and
/// message, each NUL-terminated so that no two triples hash alike.
pub fn fingerprint(f: &ReviewFinding) -> String {
    let mut hasher = Sha256::new();
    for part in [&f.rule, &f.path, &f.message] {
        hasher.update(part.as_bytes());
        hasher.update([0]);
    }
    reviewflow_engine::hex::encode(&hasher.finalize()[..16])
}

/// A relative path as a URI reference: unreserved characters and `/` stay, other bytes are
/// percent-encoded (a space, `#`, `?`, `%`, non-ASCII).
fn uri(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for b in path.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b'/') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_rule_is_described_and_links_nowhere() {
        for r in registry::RULES {
            let rule = rule(r.id().as_str(), "rules");
            assert_eq!(rule["shortDescription"]["text"], r.description());
            assert_eq!(rule["fullDescription"]["text"], r.description());
            assert_eq!(rule["help"]["text"], r.description());
            assert!(rule.get("helpUri").is_none());
        }
        let own = rule("missing-test", "claude");
        assert_eq!(
            own["shortDescription"]["text"],
            "a finding the reviewer `claude` reported under this name"
        );
    }

    #[test]
    fn uris_are_encoded() {
        assert_eq!(uri("src/a b#?.rs"), "src/a%20b%23%3F.rs");
        assert_eq!(uri("é"), "%C3%A9");
    }
}

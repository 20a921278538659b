//! `review.rdjsonl`: one reviewdog `Diagnostic` per line (`reviewdog -f=rdjsonl`).
//!
//! Lines only, no columns: findings name lines. A finding about a whole file has a location
//! with a path and no range. `code.value` is the rule id; `source.name` is `reviewflow`;
//! `original_output` carries the finding's identity (`docs/findings.md`).

use serde_json::{Value, json};

use super::super::ForgeError;
use super::super::review::{FindingState, Review, ReviewFinding};
use crate::rules::Severity;

pub(super) fn render(review: &Review) -> Result<Vec<u8>, ForgeError> {
    let mut out = Vec::new();
    for finding in &review.findings {
        serde_json::to_writer(&mut out, &diagnostic(finding)).map_err(|source| {
            ForgeError::Encode {
                what: "rdjsonl diagnostic",
                source,
            }
        })?;
        out.push(b'\n');
    }
    Ok(out)
}

fn diagnostic(f: &ReviewFinding) -> Value {
    let mut location = json!({ "path": f.path });
    if let Some(line) = f.line {
        let mut range = json!({ "start": { "line": line } });
        if let Some(end) = f.end_line {
            range["end"] = json!({ "line": end });
        }
        location["range"] = range;
    }
    let mut d = json!({
        "message": f.message,
        "location": location,
        "severity": severity(f.severity),
        "source": { "name": "reviewflow" },
        "code": { "value": f.rule },
    });
    if let Some(identity) = identity(f) {
        d["original_output"] = Value::String(identity);
    }
    d
}

/// `fingerprint=<hex>` and, when compared with an earlier review, ` state=new|persisting`:
/// reviewdog's `Diagnostic` has no field for either, and `original_output` is the one it keeps
/// without interpreting.
fn identity(f: &ReviewFinding) -> Option<String> {
    let print = f.fingerprint.as_deref()?;
    let state = match f.state {
        Some(FindingState::New) => " state=new",
        Some(FindingState::Persisting) => " state=persisting",
        Some(FindingState::Resolved) => " state=resolved",
        None => "",
    };
    Some(format!("fingerprint={print}{state}"))
}

fn severity(s: Severity) -> &'static str {
    match s {
        Severity::Error => "ERROR",
        Severity::Warning => "WARNING",
        Severity::Info => "INFO",
    }
}

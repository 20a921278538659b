//! `review.rdjsonl`: one reviewdog `Diagnostic` per line (`reviewdog -f=rdjsonl`).
//!
//! Lines only, no columns: findings name lines. A finding about a whole file has a location
//! with a path and no range. `code.value` is the rule id; `source.name` is `reviewflow`.

use serde_json::{Value, json};

use super::super::ForgeError;
use super::super::review::{Review, ReviewFinding};
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
    json!({
        "message": f.message,
        "location": location,
        "severity": severity(f.severity),
        "source": { "name": "reviewflow" },
        "code": { "value": f.rule },
    })
}

fn severity(s: Severity) -> &'static str {
    match s {
        Severity::Error => "ERROR",
        Severity::Warning => "WARNING",
        Severity::Info => "INFO",
    }
}

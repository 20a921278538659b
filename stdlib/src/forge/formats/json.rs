//! `review.json`: the whole review, versioned. Each finding carries its `fingerprint` and, with
//! an earlier review to compare with, its `state`; `resolved` and `states` follow the findings.

use serde::Serialize;

use super::super::ForgeError;
use super::super::baseline::StateCounts;
use super::super::review::{Review, ReviewFinding};
use crate::git::Sha;

/// Version of the `review.json` layout.
pub const VERSION: u32 = 1;

#[derive(Serialize)]
struct Document<'a> {
    version: u32,
    change_id: &'a str,
    base: &'a Sha,
    head: &'a Sha,
    run_id: &'a str,
    conversation_id: Option<&'a str>,
    reviewer: &'a str,
    comment: &'a str,
    findings: &'a [ReviewFinding],
    /// Findings of the last posted review this one no longer has (`docs/findings.md`).
    resolved: &'a [ReviewFinding],
    /// How many findings are new, persisting and resolved; `null` with no earlier review.
    states: Option<StateCounts>,
}

pub(super) fn render(change_id: &str, review: &Review) -> Result<Vec<u8>, ForgeError> {
    let doc = Document {
        version: VERSION,
        change_id,
        base: &review.base,
        head: &review.head,
        run_id: &review.run_id,
        conversation_id: review.conversation_id.as_deref(),
        reviewer: &review.reviewer,
        comment: &review.comment,
        findings: &review.findings,
        resolved: &review.resolved,
        states: review.state_counts(),
    };
    let mut bytes = serde_json::to_vec_pretty(&doc).map_err(|source| ForgeError::Encode {
        what: "review as JSON",
        source,
    })?;
    bytes.push(b'\n');
    Ok(bytes)
}

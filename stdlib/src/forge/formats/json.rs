//! `review.json`: the whole review, versioned. Each finding carries its `fingerprint` and, with
//! an earlier review to compare with, its `state`; `resolved` and `states` follow the findings.
//! `schema/review.schema.json` is generated from [`ReviewDocument`] ([`schema`]).

use schemars::JsonSchema;
use serde::Serialize;

use super::super::LocalForgeError;
use super::super::review::StateCounts;
use super::super::review::{Review, ReviewFinding};
use crate::git::Sha;

/// Version of the `review.json` layout.
pub const VERSION: u32 = 1;

/// A review posted by reviewflow's local forge (`review.json`, docs/local-forge.md).
#[derive(Serialize, JsonSchema)]
struct ReviewDocument<'a> {
    /// The layout's version.
    #[schemars(extend("const" = VERSION))]
    version: u32,
    /// The change reviewed (`branch-<name>`, …).
    change_id: &'a str,
    /// The base commit of the change: a full object id.
    #[schemars(with = "String", regex(pattern = r"^([0-9a-f]{40}|[0-9a-f]{64})$"))]
    base: &'a Sha,
    /// The head commit reviewed: a full object id.
    #[schemars(with = "String", regex(pattern = r"^([0-9a-f]{40}|[0-9a-f]{64})$"))]
    head: &'a Sha,
    /// The run that produced it.
    run_id: &'a str,
    /// The reviewer's conversation, for the next run to resume.
    conversation_id: Option<&'a str>,
    /// Who reviewed.
    reviewer: &'a str,
    /// The review comment, markdown.
    comment: &'a str,
    /// The findings, in the order of `review.rdjsonl`'s lines.
    findings: &'a [ReviewFinding],
    /// Findings of the last posted review this one no longer has (`docs/findings.md`).
    resolved: &'a [ReviewFinding],
    /// How many findings are new, persisting and resolved; `null` with no earlier review.
    states: Option<StateCounts>,
}

pub(super) fn render(change_id: &str, review: &Review) -> Result<Vec<u8>, LocalForgeError> {
    let doc = ReviewDocument {
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
    let mut bytes = serde_json::to_vec_pretty(&doc).map_err(|source| LocalForgeError::Encode {
        what: "review as JSON",
        source,
    })?;
    bytes.push(b'\n');
    Ok(bytes)
}

/// The JSON Schema of `review.json` (`schema/review.schema.json`, written by `reviewflow schema`).
pub fn schema() -> serde_json::Value {
    serde_json::to_value(schemars::schema_for!(ReviewDocument<'static>)).unwrap_or_default()
}

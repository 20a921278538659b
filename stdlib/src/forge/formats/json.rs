//! `review.json`: the whole review, versioned.

use serde::Serialize;

use super::super::ForgeError;
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
    };
    let mut bytes = serde_json::to_vec_pretty(&doc).map_err(|source| ForgeError::Encode {
        what: "review as JSON",
        source,
    })?;
    bytes.push(b'\n');
    Ok(bytes)
}

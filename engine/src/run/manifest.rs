//! `manifest.json`: the record of a run, and the only source a resume trusts.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::identity::Identity;
use super::outcome::{Outcome, RunStatus};
use super::secrets::SecretState;
use crate::exec::confine::Isolation;

/// The version of the manifest format.
pub const MANIFEST_FORMAT_VERSION: u32 = 1;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Manifest {
    /// Format version.
    pub version: u32,
    pub run_id: String,
    /// The run this one resumed.
    pub parent: Option<String>,
    /// `false` while the run is going on; a manifest that stays `false` belongs to a run that was
    /// killed, which cannot be resumed.
    #[serde(rename = "final")]
    pub is_final: bool,
    pub status: RunStatus,
    pub exit_code: Option<u8>,
    /// Why the run failed or stopped, when it did.
    pub reason: Option<String>,
    /// The stage that stopped the run (there was nothing left to do) and why; absent when none
    /// did. The run then succeeded without running the stages after it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<RunStop>,
    pub pipeline: PipelineInfo,
    pub identity: Identity,
    pub identity_digest: String,
    /// Resolved inputs (builtin ones included).
    pub inputs: BTreeMap<String, String>,
    /// Whether each secret was available; never a value.
    pub secrets: BTreeMap<String, SecretState>,
    /// Which isolation layers held for the run's children (absent in manifests written before
    /// they were recorded).
    #[serde(default)]
    pub isolation: Option<Isolation>,
    pub started_at: String,
    pub ended_at: Option<String>,
    pub duration_ms: Option<u64>,
    /// Every stage, in file order.
    pub stages: Vec<StageRecord>,
}

/// A stop asked by a stage (docs/executor.md, "A stage that ends the run: stop").
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct RunStop {
    pub stage: String,
    /// One line, redacted: `the head abc1234 was already reviewed: nothing new since`.
    pub reason: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PipelineInfo {
    pub name: Option<String>,
    pub file: String,
    /// SHA-256 of the file's bytes.
    pub source_digest: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct StageRecord {
    pub name: String,
    /// `uses=`.
    pub kind: String,
    pub outcome: Outcome,
    pub started_at: Option<String>,
    pub duration_ms: u64,
    /// Why it fell back, was skipped, failed or was cancelled.
    pub reason: Option<String>,
    /// Outputs that have a value (absent ones are not listed).
    pub outputs: BTreeMap<String, OutputRecord>,
    /// The run whose outputs it reused.
    pub reused_from: Option<String>,
    /// Facts its implementation recorded about what really happened (`reviewer.model`: the model
    /// that answered), redacted; a reused stage keeps those of the run it was reused from.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub facts: BTreeMap<String, String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct OutputRecord {
    /// `bool`, `text`, `bytes`, `json`, `file`.
    #[serde(rename = "type")]
    pub ty: String,
    /// `sha256:<hex>` over the type, a NUL and the bytes.
    pub digest: String,
    /// The kept value, relative to the run directory (all but booleans).
    pub file: Option<String>,
    /// A boolean's value, inline.
    pub value: Option<bool>,
    /// Why the kept value was removed when the run ended (`private`, `diff`, `secret`): its
    /// plaintext must not outlive the run. Its `file` is then absent and its digest stays; a
    /// resume cannot reuse it (docs/executor.md, "Nothing private at rest").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub discarded: Option<String>,
    /// A kept folder's folders that hold nothing, relative to it (names joined by `/`, `.` for
    /// the folder itself). A copy that carries files only (a CI artifact) loses them; a resume
    /// makes them again before it verifies the digest, which covers them (docs/executor.md).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub empty_folders: Vec<String>,
}

impl Manifest {
    pub fn stage(&self, name: &str) -> Option<&StageRecord> {
        self.stages.iter().find(|s| s.name == name)
    }
}

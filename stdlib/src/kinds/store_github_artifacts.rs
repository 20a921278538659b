//! `store kind="github-artifacts"`: sealed blobs kept as artifacts of the review's own workflow
//! runs (see `docs/github.md`).

use reviewflow_engine::contract::{StoreContract, ValueType};

pub fn contract() -> StoreContract {
    StoreContract::new(
        "github-artifacts",
        "artifacts of workflow runs: listed and downloaded by REST, uploaded by the workflow's upload-artifact step",
    )
    .trust(
        "workflow",
        ValueType::String,
        "the producing run's workflow file (`.github/workflows/build.yaml`; an `@ref` is ignored)",
    )
    .trust("event", ValueType::String, "the producing run's event (`pull_request_target`)")
    .trust("branch", ValueType::String, "the producing run's head branch")
    .trust(
        "repository",
        ValueType::String,
        "the producing run's head repository (`owner/name`; default: this repository)",
    )
    .trust_example(
        "trust workflow=\".github/workflows/review.yaml\" event=\"pull_request_target\"",
    )
    .lookups()
}

/// The kind, registered in [`super::STORES`].
pub struct ArtifactsKind;

impl super::StoreKind for ArtifactsKind {
    fn contract(&self) -> StoreContract {
        contract()
    }

    fn open(
        &self,
        _open: &super::StoreOpen<'_>,
    ) -> Result<std::sync::Arc<dyn crate::store::BlobStore>, String> {
        Err("the github-artifacts store is not built yet".to_string())
    }

    fn through_forge(&self) -> bool {
        true
    }
}

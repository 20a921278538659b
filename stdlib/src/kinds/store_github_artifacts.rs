//! `store kind="github-artifacts"`: sealed blobs kept as artifacts of the review's own workflow
//! runs (see `docs/github.md`).

use reviewflow_engine::contract::{Bound, StoreContract, ValueType};

use crate::store::github_artifacts::{ArtifactTrust, ArtifactsConfig, GithubArtifacts};

/// The most producer look-ups a restore may be told to make (`max-run-lookups`).
pub const MAX_RUN_LOOKUPS: Bound = Bound::count(
    0,
    100,
    "each look-up is one API call with the run's token, whose budget in GitHub Actions is 1,000 calls an hour per repository: at 100 a flood spends at most a tenth of it, and the post that follows still has the rest",
);

/// Producer look-ups when the store sets no `max-run-lookups`.
pub const DEFAULT_RUN_LOOKUPS: usize = 50;

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
    .lookups(MAX_RUN_LOOKUPS)
    .outlives_the_job()
    .rule_judge(crate::store::github_artifacts_rules::judge_rules)
    .name_refusal(crate::store::name_refusal)
    .kept_by("github", "artifacts of GitHub runs")
}

/// The kind, registered in [`super::STORES`].
pub struct ArtifactsKind;

impl super::StoreKind for ArtifactsKind {
    fn contract(&self) -> StoreContract {
        contract()
    }

    fn open(
        &self,
        open: &super::StoreOpen<'_>,
    ) -> Result<std::sync::Arc<dyn crate::store::BlobStore>, crate::store::StoreError> {
        let forge = super::store::kept_by::<super::forge_github::Github>(self, open)?;
        let text = super::store::trust_text;
        let trust = open
            .decl
            .trust
            .iter()
            .map(|rule| ArtifactTrust {
                workflow: text(rule, "workflow"),
                event: text(rule, "event"),
                branch: text(rule, "branch"),
                repository: text(rule, "repository"),
            })
            .collect();
        let config = ArtifactsConfig {
            // The runner says which repository the run is of; without it the store asks once.
            repository_id: (open.env)("GITHUB_REPOSITORY_ID").and_then(|v| v.parse().ok()),
            trust,
            max_run_lookups: super::store::run_lookups(open.decl, DEFAULT_RUN_LOOKUPS),
            upload_dir: open.temp_dir.join("reviewflow-upload"),
            github_output: (open.env)("GITHUB_OUTPUT").map(std::path::PathBuf::from),
            base_branch: Some(forge.base_branch().to_owned()),
        };
        Ok(std::sync::Arc::new(GithubArtifacts::new(
            forge.client.clone(),
            config,
        )))
    }
}

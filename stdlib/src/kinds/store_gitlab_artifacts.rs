//! `store kind="gitlab-artifacts"`: sealed blobs kept as job artifacts of the review's own
//! pipelines (see `docs/gitlab.md`, "The store").

use reviewflow_engine::contract::{Bound, StoreContract, ValueType};

use crate::store::gitlab_artifacts::{
    GitlabArtifacts, GitlabArtifactsConfig, PipelineTrust, STORE_DIR,
};

/// The most pipeline look-ups a restore may be told to make (`max-run-lookups`).
pub const MAX_RUN_LOOKUPS: Bound = Bound::count(
    0,
    100,
    "each look-up is one API call with the forge's token, which GitLab rate-limits per user (GitLab.com: 2,000 calls a minute for an authenticated user): at 100 a flood spends a small part of it, and the post that follows still has the rest",
);

/// Pipeline look-ups when the store sets no `max-run-lookups`.
pub const DEFAULT_RUN_LOOKUPS: usize = 50;

pub fn contract() -> StoreContract {
    StoreContract::new(
        "gitlab-artifacts",
        "job artifacts of the review's own GitLab pipelines: read by REST through the gitlab forge, uploaded by the keeping job's `artifacts: paths:`",
    )
    .trust(
        "ref",
        ValueType::String,
        "the producing pipeline's branch, a protected branch named in full (`main`)",
    )
    .trust(
        "source",
        ValueType::String,
        "the producing pipeline's source: `schedule`, `trigger`, `pipeline`, `web` or `api`",
    )
    .trust(
        "job",
        ValueType::String,
        "the name of the job that keeps (default: any successful job of the pipeline)",
    )
    .trust_example("trust ref=\"main\" source=\"trigger\" job=\"post\"")
    .lookups(MAX_RUN_LOOKUPS)
    .outlives_the_job()
    .rule_judge(crate::store::gitlab_artifacts_rules::judge_rules)
    .name_refusal(crate::store::name_refusal)
    .kept_by("gitlab", "job artifacts of GitLab pipelines")
}

/// The kind, registered in [`super::STORES`].
pub struct GitlabArtifactsKind;

impl super::StoreKind for GitlabArtifactsKind {
    fn contract(&self) -> StoreContract {
        contract()
    }

    fn open(
        &self,
        open: &super::StoreOpen<'_>,
    ) -> Result<std::sync::Arc<dyn crate::store::BlobStore>, crate::store::StoreError> {
        let forge = super::store::kept_by::<super::forge_gitlab::Gitlab>(self, open)?;
        let text = super::store::trust_text;
        let trust = open
            .decl
            .trust
            .iter()
            .map(|rule| PipelineTrust {
                git_ref: text(rule, "ref"),
                source: text(rule, "source"),
                job: text(rule, "job"),
            })
            .collect();
        let number = |var: &str| (open.env)(var).and_then(|v| v.trim().parse::<u64>().ok());
        // The job's folder is what GitLab uploads `artifacts: paths:` from.
        let job_dir = (open.env)("CI_PROJECT_DIR")
            .filter(|d| !d.trim().is_empty())
            .map_or_else(|| open.checkout.to_path_buf(), std::path::PathBuf::from);
        let config = GitlabArtifactsConfig {
            // The forge's project, which `project-id` may set: by number, or asked once.
            project_id: forge.client.numeric_project(),
            this_pipeline: number("CI_PIPELINE_ID"),
            trust,
            max_run_lookups: super::store::run_lookups(open.decl, DEFAULT_RUN_LOOKUPS),
            keep_dir: job_dir.join(STORE_DIR),
        };
        Ok(std::sync::Arc::new(GitlabArtifacts::new(
            forge.client.clone(),
            config,
        )))
    }
}

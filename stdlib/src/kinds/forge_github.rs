//! `forge "github"`: a pull request on GitHub or GitHub Enterprise, through the REST API (see
//! `docs/github.md`).

use reviewflow_engine::contract::{ForgeContract, ValueType};

pub fn contract() -> ForgeContract {
    ForgeContract::new(
        "github",
        "a pull request on GitHub: the API from GITHUB_API_URL, the repository from GITHUB_REPOSITORY",
    )
    .token(
        "token",
        "the secret holding the API token (`GITHUB_TOKEN`)",
    )
    .prop(
        "api-url",
        ValueType::String,
        "the API's base URL (default: GITHUB_API_URL, else https://api.github.com)",
    )
    .permission("contents:read")
    .permission("pull-requests:read")
    .permission("pull-requests:write")
    .permission("issues:write")
    .permission("checks:write")
    .permission("actions:read")
}

/// The kind, registered in [`super::FORGES`].
pub struct GithubKind;

impl super::ForgeKind for GithubKind {
    fn contract(&self) -> ForgeContract {
        contract()
    }

    fn open<'a>(
        &'a self,
        _open: &'a super::ForgeOpen<'a>,
    ) -> reviewflow_engine::run::BoxFuture<'a, Result<std::sync::Arc<dyn super::Forge>, String>>
    {
        Box::pin(async { Err("the github forge is not built yet".to_string()) })
    }
}

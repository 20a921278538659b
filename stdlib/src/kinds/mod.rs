//! Every forge and store kind, registered once: each is one file here holding its contract and
//! its implementation, and one line in [`FORGES`] or [`STORES`]. Stage kinds are registered the
//! same way in `stages/`.

pub mod forge;
pub mod forge_error;
pub mod forge_github;
pub mod forge_gitlab;
pub mod forge_local;
pub mod services;
pub mod store;
pub mod store_github_artifacts;
pub mod store_gitlab_artifacts;
pub mod store_local;

pub use forge::{
    ChangeInfo, Forge, ForgeKind, ForgeOpen, PostRequest, PostedMarker, PostedSummary, ReviewState,
};
pub use forge_error::{ApiError, ForgeError};
pub use services::{OpenedStore, PrepareOptions, Prepared, Services, prepare};
pub use store::{StoreKind, StoreOpen};

use reviewflow_engine::Registry;

/// The forge a pipeline without a `forge` node uses, and the store kind without `kind=`.
pub const DEFAULT_FORGE: &str = "local";
pub const DEFAULT_STORE: &str = "local";

/// Every forge kind.
pub static FORGES: &[&dyn ForgeKind] = &[
    &forge_local::LocalKind,
    &forge_github::GithubKind,
    &forge_gitlab::GitlabKind,
];

/// Every store kind.
pub static STORES: &[&dyn StoreKind] = &[
    &store_local::LocalKind,
    &store_github_artifacts::ArtifactsKind,
    &store_gitlab_artifacts::GitlabArtifactsKind,
];

/// Registers the contracts of every forge and store kind.
pub fn register(registry: &mut Registry) {
    for kind in FORGES {
        registry.register_forge(kind.contract());
    }
    for kind in STORES {
        registry.register_store(kind.contract());
    }
    registry.set_default_forge(DEFAULT_FORGE);
    registry.set_default_store(DEFAULT_STORE);
}

pub fn forge_kind(name: &str) -> Option<&'static dyn ForgeKind> {
    FORGES.iter().copied().find(|k| k.contract().kind == name)
}

pub fn store_kind(name: &str) -> Option<&'static dyn StoreKind> {
    STORES.iter().copied().find(|k| k.contract().kind == name)
}

/// Runs blocking work (git, files) off the runtime's threads.
pub(crate) async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, ForgeError> + Send + 'static,
) -> Result<T, ForgeError> {
    tokio::task::spawn_blocking(f).await?
}

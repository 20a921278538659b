//! The platforms a run may happen on (docs/platforms.md), each one registration.

pub mod github;
pub mod gitlab;

use std::sync::Arc;

use reviewflow_engine::Registry;

/// Registers every platform, in the order they are detected.
pub fn register(registry: &mut Registry) {
    registry.register_platform(Arc::new(github::GithubActions));
    registry.register_platform(Arc::new(gitlab::GitlabCi));
}

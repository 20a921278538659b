//! Helpers shared by the integration tests.

pub mod fake_github;
pub mod fake_gitlab;

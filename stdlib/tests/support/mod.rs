//! Helpers shared by the integration tests.

// Each test binary uses its own part of them.
#![allow(dead_code)]

pub mod fake_github;
pub mod fake_gitlab;
pub mod git;
pub mod open;
pub mod request;

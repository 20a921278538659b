//! A registered store kind: its contract and how to open a declared store for one run.

use std::sync::Arc;

use reviewflow_engine::contract::StoreContract;
use reviewflow_engine::model::Store as StoreDecl;

use super::forge::Forge;
use crate::store::{BlobStore, StoreError};

/// What opening a store may use.
pub struct StoreOpen<'a> {
    pub decl: &'a StoreDecl,
    pub checkout: &'a std::path::Path,
    /// The run's forge, for stores kept by the forge (artifacts).
    pub forge: &'a Arc<dyn Forge>,
    /// The forge's kind: a store may need a particular one.
    pub forge_kind: &'a str,
    /// Where the run writes files for later workflow steps.
    pub temp_dir: &'a std::path::Path,
    pub env: &'a (dyn Fn(&str) -> Option<String> + Sync),
}

pub trait StoreKind: Send + Sync {
    fn contract(&self) -> StoreContract;

    fn open(&self, open: &StoreOpen<'_>) -> Result<Arc<dyn BlobStore>, StoreError>;

    /// The store is reached through the forge (with its token), not on this machine.
    fn through_forge(&self) -> bool {
        false
    }
}

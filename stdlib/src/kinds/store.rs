//! A registered store kind: its contract and how to open a declared store for one run.

use std::sync::Arc;

use reviewflow_engine::contract::StoreContract;
use reviewflow_engine::model::{Store as StoreDecl, TrustRule};

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

    /// The store is reached through the forge (with its token), not on this machine: its
    /// contract names the forge it is kept by.
    fn through_forge(&self) -> bool {
        self.contract().kept_by.is_some()
    }
}

/// The run's forge as the one store kind `kind` is kept through (`F`), or `run`'s refusal in
/// the words the contract gives (`StoreContract::forge_refusal`).
pub(crate) fn kept_by<'o, F: 'static>(
    kind: &dyn StoreKind,
    open: &'o StoreOpen<'_>,
) -> Result<&'o F, StoreError> {
    let name = &open.decl.name.value;
    open.forge.as_any().downcast_ref::<F>().ok_or_else(|| {
        StoreError::NeedsForge(
            kind.contract()
                .forge_refusal(name, open.forge_kind)
                .unwrap_or_else(|| format!("store `{name}` found not the forge it is kept by")),
        )
    })
}

/// The text of setting `key` of a `trust` rule, if set.
pub(crate) fn trust_text(rule: &TrustRule, key: &str) -> Option<String> {
    rule.setting(key)
        .and_then(|v| v.value.as_str())
        .map(str::to_string)
}

/// The store's `max-run-lookups`, else `default`.
pub(crate) fn run_lookups(decl: &StoreDecl, default: usize) -> usize {
    decl.max_run_lookups
        .as_ref()
        .map_or(default, |m| m.value as usize)
}

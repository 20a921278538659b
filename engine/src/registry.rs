//! The stage kinds a pipeline may use, by name. The engine registers `run`; the stdlib adds
//! `std/*`.

use std::collections::BTreeMap;

use crate::contract::StageContract;

#[derive(Clone, Debug, Default)]
pub struct Registry {
    contracts: BTreeMap<String, StageContract>,
}

impl Registry {
    /// An empty registry (no kinds at all).
    pub fn empty() -> Self {
        Self::default()
    }

    /// The engine's own kinds: `run`.
    pub fn with_builtins() -> Self {
        let mut r = Self::empty();
        r.register(crate::builtin::run::contract());
        r
    }

    /// Adds or replaces a kind.
    pub fn register(&mut self, contract: StageContract) {
        self.contracts.insert(contract.kind.clone(), contract);
    }

    pub fn get(&self, kind: &str) -> Option<&StageContract> {
        self.contracts.get(kind)
    }

    pub fn kinds(&self) -> impl Iterator<Item = &str> {
        self.contracts.keys().map(String::as_str)
    }

    pub fn contracts(&self) -> impl Iterator<Item = &StageContract> {
        self.contracts.values()
    }
}

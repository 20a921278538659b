//! The runtime side of the registry: which implementation runs each stage kind.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::stage::StageImpl;

#[derive(Clone, Default)]
pub struct Implementations {
    kinds: BTreeMap<String, Arc<dyn StageImpl>>,
}

impl Implementations {
    /// No kinds at all.
    pub fn empty() -> Self {
        Self::default()
    }

    /// The engine's own kinds: `run`.
    pub fn with_builtins() -> Self {
        let mut i = Self::empty();
        i.register("run", Arc::new(crate::builtin::run_impl::RunStage));
        i
    }

    /// Adds or replaces the implementation of `kind`.
    pub fn register(&mut self, kind: &str, implementation: Arc<dyn StageImpl>) {
        self.kinds.insert(kind.into(), implementation);
    }

    pub fn get(&self, kind: &str) -> Option<&Arc<dyn StageImpl>> {
        self.kinds.get(kind)
    }

    pub fn kinds(&self) -> impl Iterator<Item = &str> {
        self.kinds.keys().map(String::as_str)
    }
}

impl std::fmt::Debug for Implementations {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.kinds.keys()).finish()
    }
}

//! A registered store kind: its contract and how to open a declared store for one run.

use std::sync::Arc;

use reviewflow_engine::contract::StoreContract;
use reviewflow_engine::model::Store as StoreDecl;

use super::forge::Forge;
use crate::store::BlobStore;

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

    fn open(&self, open: &StoreOpen<'_>) -> Result<Arc<dyn BlobStore>, String>;

    /// The store is reached through the forge (with its token), not on this machine.
    fn through_forge(&self) -> bool {
        false
    }
}

/// The most trusted blobs a restore may be told to try (`max-tries`). Each try fetches a blob a
/// trusted producer kept, up to restore's `max-bytes` (64 MiB by default), and opens it: at 20
/// a flood costs at most 20 fetches per review (1.3 GiB at the default `max-bytes`), twice the
/// default of 10; past that the number no longer limits anything a run can afford.
pub const MAX_TRIES_BOUND: u64 = 20;

/// The most producer look-ups a restore may be told to make (`max-run-lookups`). Each is one
/// REST call with the run's token, whose budget in GitHub Actions is 1,000 calls an hour per
/// repository: at 100 a flood of planted artifacts spends at most a tenth of it, and the post
/// that follows with the same token still has the rest.
pub const MAX_RUN_LOOKUPS_BOUND: u64 = 100;

/// What `run` refuses of a store's caps before anything runs, and `check` reports with the
/// same words (`trust`): a cap above its bound caps nothing a run can afford (principle 4,
/// coverage is a promise). Registered with every store kind's contract; called when the run
/// opens its stores (`kinds::prepare`).
pub fn cap_refusals(
    store: &reviewflow_engine::model::Store,
) -> Vec<(reviewflow_engine::span::Span, String)> {
    let mut out = Vec::new();
    let mut judge = |cap: &Option<reviewflow_engine::span::Spanned<u64>>,
                     name: &str,
                     bound: u64,
                     what: &str| {
        if let Some(c) = cap
            && c.value > bound
        {
            out.push((
                c.span,
                format!(
                    "`{name} {}` of store `{}` does not cap anything a run can afford: at most {bound} ({what})",
                    c.value, store.name.value
                ),
            ));
        }
    };
    judge(
        &store.max_tries,
        "max-tries",
        MAX_TRIES_BOUND,
        "each try fetches a trusted blob, up to `max-bytes`, and opens it",
    );
    judge(
        &store.max_run_lookups,
        "max-run-lookups",
        MAX_RUN_LOOKUPS_BOUND,
        "each look-up is one API call with the run's token, whose budget is 1,000 calls an hour per repository",
    );
    out
}

#[cfg(test)]
mod tests {
    use reviewflow_engine::{Source, compile};

    /// The cap refusals of the one store of `caps`, written inside a local store.
    fn refusals(kind: &str, caps: &str) -> Vec<String> {
        let text = format!("pipeline \"p\"\nstore \"s\" kind=\"{kind}\" {{\n    {caps}\n}}\n");
        let registry = crate::registry();
        let compiled =
            compile(Source::new("t.kdl", text), &registry, &Default::default()).expect("compiles");
        let store = &compiled.pipeline.stores[0];
        let f = registry
            .store(kind)
            .and_then(|k| k.cap_refusals)
            .expect("registered");
        f(store).into_iter().map(|(_, why)| why).collect()
    }

    #[test]
    fn caps_at_their_bound_pass_and_above_are_refused() {
        assert!(refusals("local", "max-tries 20").is_empty());
        assert!(refusals("github-artifacts", "max-tries 0\n    max-run-lookups 100").is_empty());
        let tries = refusals("local", "max-tries 21");
        assert_eq!(tries.len(), 1, "{tries:?}");
        assert!(
            tries[0].contains("`max-tries 21` of store `s` does not cap"),
            "{tries:?}"
        );
        let both = refusals(
            "github-artifacts",
            "max-tries 100000\n    max-run-lookups 1000000",
        );
        assert_eq!(both.len(), 2, "{both:?}");
        assert!(both[1].contains("at most 100"), "{both:?}");
    }
}

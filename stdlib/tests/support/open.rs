//! A forge opened as a run opens it, from the variables its CI job would have.

use std::collections::BTreeMap;
use std::sync::Arc;

use reviewflow_stdlib::kinds::{Forge, ForgeError, ForgeKind, ForgeOpen};
use zeroize::Zeroizing;

/// Opens `kind` for `pipeline` with `token` and the job variables `vars` (nothing else of the
/// environment), over a throw-away checkout.
pub async fn open_forge(
    kind: &dyn ForgeKind,
    vars: &[(&str, String)],
    token: &str,
    pipeline: &str,
) -> Result<Arc<dyn Forge>, ForgeError> {
    let vars: BTreeMap<String, String> = vars
        .iter()
        .map(|(k, v)| ((*k).to_owned(), v.clone()))
        .collect();
    let env = move |name: &str| vars.get(name).cloned();
    let dir = tempfile::tempdir().map_err(|e| ForgeError::Config(e.to_string()))?;
    let inputs = BTreeMap::new();
    let open = ForgeOpen {
        decl: None,
        checkout: dir.path(),
        token: Some(Zeroizing::new(token.to_owned())),
        pipeline,
        inputs: &inputs,
        env: &env,
        base: None,
        head: None,
        temp_dir: dir.path().join("temp"),
        notes: BTreeMap::new(),
    };
    kind.open(&open).await
}

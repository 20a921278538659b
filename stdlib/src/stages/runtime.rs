//! What the std/* implementations share at run time: the services the command line prepares
//! (the local forge with the change resolved once, the stores the pipeline declares), and small
//! helpers to read inputs.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use reviewflow_engine::model::{Segment, Store, Template};
use reviewflow_engine::run::{
    Implementations, OutputValue, Resolved, ResolvedChild, StageCx, StageError,
};

use crate::forge::{Change, LocalForge};
use crate::store::{LocalStore, StoreName};

/// The services of a run on the local forge, passed to the stages through the executor's
/// extensions.
#[derive(Debug)]
pub struct LocalServices {
    pub checkout: PathBuf,
    pub forge: LocalForge,
    /// The change under review, its SHAs resolved once, at the start.
    pub change: Change,
    /// The stores the pipeline declares, by name.
    pub stores: BTreeMap<String, Store>,
}

/// Opens the change of `checkout` (`base`/`head` override the defaults) and returns the
/// services with the builtin inputs and commits the executor records.
pub type Prepared = (
    LocalServices,
    BTreeMap<String, String>,
    BTreeMap<String, String>,
);

pub fn prepare_local(
    checkout: &Path,
    stores: &[Store],
    base: Option<&str>,
    head: Option<&str>,
) -> Result<Prepared, String> {
    let forge = LocalForge::new(checkout);
    let change = forge
        .open_change(base, head)
        .map_err(|e| format!("cannot open the change under review: {e}"))?;
    let mut inputs = BTreeMap::new();
    inputs.insert("repo".to_string(), change.repo.clone());
    inputs.insert("change".to_string(), change.change_id.clone());
    let mut commits = BTreeMap::new();
    commits.insert("base".to_string(), change.base().to_string());
    commits.insert("head".to_string(), change.head().to_string());
    let services = LocalServices {
        checkout: checkout.to_path_buf(),
        forge,
        change,
        stores: stores
            .iter()
            .map(|s| (s.name.value.clone(), s.clone()))
            .collect(),
    };
    Ok((services, inputs, commits))
}

/// `impl StageImpl for $kind` by an `async fn $run(cx: StageCx<'_>) -> Result<StageOutputs, StageError>`.
macro_rules! stage_impl {
    ($kind:ident, $run:ident) => {
        impl reviewflow_engine::run::StageImpl for $kind {
            fn run<'a>(
                &'a self,
                cx: reviewflow_engine::run::StageCx<'a>,
            ) -> reviewflow_engine::run::BoxFuture<
                'a,
                Result<reviewflow_engine::run::StageOutputs, reviewflow_engine::run::StageError>,
            > {
                Box::pin($run(cx))
            }
        }
    };
}
pub(crate) use stage_impl;

/// Registers every std/* implementation.
pub fn register_implementations(implementations: &mut Implementations) {
    implementations.register("std/gather", Arc::new(super::gather::Gather));
    implementations.register("std/restore", Arc::new(super::restore::Restore));
    implementations.register("std/review", Arc::new(super::review::Review));
    implementations.register("std/scan", Arc::new(super::scan::Scan));
    implementations.register("std/seal", Arc::new(super::seal::Seal));
    implementations.register("std/post", Arc::new(super::post::Post));
}

/// The local services, or a clear failure when the run was prepared for another forge.
pub fn services<'a>(cx: &'a StageCx<'_>) -> Result<&'a LocalServices, StageError> {
    cx.extensions.get::<LocalServices>().ok_or_else(|| {
        StageError::failed("this stage needs the local forge, which this run has not opened")
    })
}

/// The first argument of the first child named `name`.
pub fn arg<'a>(cx: &'a StageCx<'_>, name: &str) -> Option<&'a Resolved> {
    cx.children
        .iter()
        .find(|c| c.name == name)
        .and_then(|c| c.args.first())
}

/// Whether a flag child (`since-last-review`) is present.
pub fn flag(cx: &StageCx<'_>, name: &str) -> bool {
    cx.children.iter().any(|c| c.name == name)
}

/// Text properties of a child, in order (`bind repo=… change=…`).
pub fn text_props(child: &ResolvedChild) -> Vec<(String, String)> {
    child
        .props
        .iter()
        .filter_map(|(k, v)| v.text().map(|t| (k.clone(), t)))
        .collect()
}

/// The bytes of a value (a file is read).
pub async fn value_bytes(value: &OutputValue) -> Result<Vec<u8>, StageError> {
    match value {
        OutputValue::File(p) => tokio::fs::read(p)
            .await
            .map_err(|e| StageError::io(format!("read {}", p.display()), e)),
        OutputValue::Bytes(b) => Ok(b.clone()),
        other => Ok(other.render().into_bytes()),
    }
}

/// Renders a template made of inputs and literals (a store's name).
pub fn render_inputs(t: &Template, inputs: &BTreeMap<String, String>) -> String {
    t.segments
        .iter()
        .map(|s| match s {
            Segment::Literal { text } => text.clone(),
            Segment::Input { name, .. } => inputs.get(name).cloned().unwrap_or_default(),
            Segment::Reference { .. } => String::new(),
        })
        .collect()
}

/// The local store a stage names, and the blob name the store's template gives for this run.
pub fn store_for(
    cx: &StageCx<'_>,
    services: &LocalServices,
    store: &str,
) -> Result<(LocalStore, StoreName, Store), StageError> {
    let decl = services
        .stores
        .get(store)
        .ok_or_else(|| StageError::failed(format!("store `{store}` is not declared")))?;
    if decl.kind.value != reviewflow_engine::model::StoreKind::Local {
        return Err(StageError::failed(format!(
            "store `{store}` is not a local store; this build keeps blobs in local stores only"
        )));
    }
    let root = match &decl.path {
        Some(p) => services.checkout.join(&p.value),
        None => services.checkout.join(crate::store::DEFAULT_DIR),
    };
    let name = match &decl.blob_name {
        Some(t) => render_inputs(&t.value, cx.inputs),
        None => format!("review-{}", services.change.change_id),
    };
    let name = StoreName::new(name.clone()).map_err(|e| {
        StageError::failed(format!(
            "the blob name \"{name}\" of store `{store}` is not usable: {e}"
        ))
    })?;
    Ok((LocalStore::new(root), name, decl.clone()))
}

/// Runs blocking work (git, files, crypto) off the runtime's threads.
pub async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, StageError> + Send + 'static,
) -> Result<T, StageError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| StageError::failed(format!("a worker thread failed: {e}")))?
}

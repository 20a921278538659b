//! Small helpers the std/* implementations share at run time: reading their children and values.
//! The forge and the stores they work on are [`crate::kinds::Services`].

use std::collections::BTreeMap;

use reviewflow_engine::model::{Segment, Template};
use std::path::PathBuf;

use reviewflow_engine::run::{
    FileOutput, MAX_KEPT_BYTES, OutputValue, Resolved, ResolvedChild, StageCx, StageError,
};

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

/// The bytes of a value. A kept file is read through the reader and must still match the digest
/// it was kept with (the bytes checked are the bytes returned).
pub async fn value_bytes(value: &OutputValue) -> Result<Vec<u8>, StageError> {
    match value {
        OutputValue::File(f) => {
            let f = f.clone();
            blocking(move || {
                f.read(MAX_KEPT_BYTES)
                    .map_err(|e| StageError::failed(e.to_string()))
            })
            .await
        }
        OutputValue::Bytes(b) => Ok(b.clone()),
        other => Ok(other.render().into_bytes()),
    }
}

/// A copy of the kept file or folder `f` in the stage's work folder (`<work>/<into>/<name>`),
/// made only if it still matches the digest it was kept with: what the stage then reads is what
/// was checked, and no child of the stage has run on it.
pub async fn kept_copy(
    cx: &StageCx<'_>,
    f: &FileOutput,
    into: &str,
) -> Result<PathBuf, StageError> {
    let dir = cx.work_dir().await?.join(into);
    let name = f
        .path()
        .file_name()
        .map_or_else(|| "kept".into(), ToOwned::to_owned);
    let to = dir.join(name);
    let f = f.clone();
    blocking(move || {
        std::fs::create_dir_all(&dir).map_err(|e| StageError::io("create a folder", e))?;
        f.copy_to(&to)
            .map_err(|e| StageError::failed(e.to_string()))?;
        Ok(to)
    })
    .await
}

/// Renders a template made of inputs and literals (a store's name).
pub fn render_inputs(t: &Template, inputs: &BTreeMap<String, String>) -> String {
    t.segments
        .iter()
        .map(|s| match s {
            Segment::Literal { text } => text.clone(),
            Segment::Input { name, .. } => inputs.get(name).cloned().unwrap_or_default(),
            Segment::Reference { .. } | Segment::Work { .. } => String::new(),
        })
        .collect()
}

/// Runs blocking work (git, files, crypto) off the runtime's threads.
pub async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, StageError> + Send + 'static,
) -> Result<T, StageError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| StageError::failed(format!("a worker thread failed: {e}")))?
}

//! What a stage implementation receives: [`StageCx`].

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::OnceCell;

use super::cancel::CancelSignal;
use super::extensions::Extensions;
use super::reporter::StatusSink;
use super::stage::StageError;
use super::value::OutputValue;
use crate::contract::StageContract;
use crate::exec::redact::Redactor;
use crate::exec::secret::SecretValue;
use crate::model::Stage;

/// One child value, resolved for this run.
#[derive(Clone, Debug, PartialEq)]
pub enum Resolved {
    String(String),
    Int(i64),
    Bool(bool),
    /// Milliseconds.
    Duration(u64),
    /// A template, rendered against the inputs and the producers' outputs.
    Text(String),
    /// A whole reference `stage.output`: its value, or `None` when absent.
    Output(Option<OutputValue>),
    /// The name of a secret (its value, when in scope, is in [`StageCx::secrets`]).
    Secret(String),
    /// The name of a store.
    Store(String),
}

impl Resolved {
    /// The value as a string, for children that take text: strings, rendered templates, and
    /// whole references (absent → empty).
    pub fn text(&self) -> Option<String> {
        match self {
            Self::String(s) | Self::Text(s) => Some(s.clone()),
            Self::Output(v) => Some(v.as_ref().map(OutputValue::render).unwrap_or_default()),
            Self::Int(i) => Some(i.to_string()),
            Self::Bool(b) => Some(b.to_string()),
            Self::Duration(_) | Self::Secret(_) | Self::Store(_) => None,
        }
    }
}

/// One child of the stage with its values resolved, in file order.
#[derive(Clone, Debug, PartialEq)]
pub struct ResolvedChild {
    pub name: String,
    pub args: Vec<Resolved>,
    pub props: Vec<(String, Resolved)>,
}

impl ResolvedChild {
    pub fn prop(&self, name: &str) -> Option<&Resolved> {
        self.props.iter().find(|(n, _)| n == name).map(|(_, v)| v)
    }
}

/// The secrets in a stage's scope, by secret name. `Debug` shows names only.
#[derive(Clone, Default)]
pub struct StageSecrets {
    values: BTreeMap<String, SecretValue>,
}

impl StageSecrets {
    pub(crate) fn insert(&mut self, name: &str, value: SecretValue) {
        self.values.insert(name.into(), value);
    }

    pub fn get(&self, name: &str) -> Option<&SecretValue> {
        self.values.get(name)
    }

    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.values.keys().map(String::as_str)
    }
}

impl std::fmt::Debug for StageSecrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.values.keys()).finish()
    }
}

/// A stage's private temp folder, created on first use (mode 0700) and removed by the executor
/// once the stage has ended and its children are reaped.
#[derive(Debug)]
pub(crate) struct WorkDir {
    parent: PathBuf,
    prefix: String,
    dir: OnceCell<PathBuf>,
}

impl WorkDir {
    pub(crate) fn new(parent: PathBuf, prefix: String) -> Self {
        Self {
            parent,
            prefix,
            dir: OnceCell::new(),
        }
    }

    async fn get(&self) -> Result<&Path, StageError> {
        let dir = self
            .dir
            .get_or_try_init(|| async {
                let parent = self.parent.clone();
                let prefix = self.prefix.clone();
                tokio::task::spawn_blocking(move || {
                    tempfile::Builder::new()
                        .prefix(&prefix)
                        .tempdir_in(parent)
                        .map(tempfile::TempDir::keep)
                })
                .await
                .map_err(|e| StageError::io("create a work folder", std::io::Error::other(e)))?
                .map_err(|e| StageError::io("create a work folder", e))
            })
            .await?;
        Ok(dir)
    }

    /// Removes the folder if it was created.
    pub(crate) async fn remove(&self) {
        if let Some(dir) = self.dir.get() {
            let _ = tokio::fs::remove_dir_all(dir).await;
        }
    }
}

/// Everything a stage implementation may use. It holds only what this stage may see.
pub struct StageCx<'a> {
    /// The run's id.
    pub run_id: &'a str,
    /// The stage as the pipeline declares it.
    pub stage: &'a Stage,
    /// Its kind's contract.
    pub contract: &'a StageContract,
    /// Its children, values resolved.
    pub children: &'a [ResolvedChild],
    /// The pipeline's resolved inputs (builtin ones included).
    pub inputs: &'a BTreeMap<String, String>,
    /// The secrets in this stage's scope, and only those.
    pub secrets: &'a StageSecrets,
    /// Replaces every secret value of the run (not only this stage's).
    pub redactor: &'a Redactor,
    /// The run directory.
    pub run_dir: &'a Path,
    /// The checkout the run reviews.
    pub checkout: &'a Path,
    /// Time between SIGTERM and SIGKILL when a child must be ended.
    pub grace: Duration,
    /// Fires on timeout or interruption.
    pub cancel: CancelSignal,
    /// One-line status messages and child output lines.
    pub status: StatusSink,
    /// Services provided by the stdlib.
    pub extensions: &'a Arc<Extensions>,
    pub(crate) work: &'a WorkDir,
}

impl StageCx<'_> {
    /// The stage's work folder, created on first call.
    pub async fn work_dir(&self) -> Result<&Path, StageError> {
        self.work.get().await
    }

    /// The children named `name`.
    pub fn children_named<'s>(&'s self, name: &'s str) -> impl Iterator<Item = &'s ResolvedChild> {
        self.children.iter().filter(move |c| c.name == name)
    }
}

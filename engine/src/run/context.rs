//! What a stage implementation receives: [`StageCx`].

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::OnceCell;

use super::cancel::CancelSignal;
use super::extensions::Extensions;
use super::facts::StageFacts;
use super::file_output::{FileOutput, ReadBackError};
use super::reporter::StatusSink;
use super::secrets::StageSecrets;
use super::stage_error::StageError;
use super::stop::StopRequest;
use super::value::OutputValue;
use crate::contract::StageContract;
use crate::exec::confine::{ConfineSpec, StageScope};
use crate::exec::redact::Redactor;
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

/// A producer that did not complete ([`StageCx::unfinished`]): `` `review` fell back: … ``.
#[derive(Clone, Debug)]
pub struct Unfinished {
    pub stage: String,
    pub outcome: super::outcome::Outcome,
    /// Its reason, redacted, as the manifest keeps it.
    pub reason: Option<String>,
    /// The facts it recorded before it ended, redacted, as the manifest keeps them: what a
    /// stage that did not finish still did (what a review spent before it fell back).
    pub facts: std::collections::BTreeMap<String, String>,
}

impl std::fmt::Display for Unfinished {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "`{}` {}", self.stage, self.outcome.past())?;
        match &self.reason {
            Some(r) => write!(f, ": {r}"),
            None => Ok(()),
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

/// A stage's private temp folder, created on first use (mode 0700) and removed by the executor
/// once the stage has ended and its children are reaped. Its path is chosen up front, so that
/// `{work}` names it before it exists.
#[derive(Debug)]
pub(crate) struct WorkDir {
    path: PathBuf,
    dir: OnceCell<PathBuf>,
    /// The run's work root is a tmpfs (run/work_root.rs): making a folder there is cheap enough
    /// to do on the runtime's thread.
    in_memory: bool,
    /// The stage's group, which the folder is given to (`exec::confine::groups`).
    group: Option<u32>,
}

impl WorkDir {
    /// A folder named `prefix` and a random suffix in `parent` (the run's own work root, which
    /// only the run writes: nothing else can take the name first).
    pub(crate) fn new(parent: &Path, prefix: &str, in_memory: bool, group: Option<u32>) -> Self {
        Self {
            path: parent.join(format!("{prefix}{}", super::console::random_hex(8))),
            dir: OnceCell::new(),
            in_memory,
            group,
        }
    }

    /// Where the folder is, or will be once a child needs it.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    async fn get(&self) -> Result<&Path, StageError> {
        let dir = self
            .dir
            .get_or_try_init(|| async {
                // A folder already there is an error, never reused.
                let group = self.group;
                let make = move |path: PathBuf| {
                    use std::os::unix::fs::DirBuilderExt as _;
                    std::fs::DirBuilder::new().mode(0o700).create(&path)?;
                    if let Some(group) = group {
                        crate::exec::confine::groups::Groups::give_folder(&path, group)?;
                    }
                    Ok(path)
                };
                let made = if self.in_memory {
                    // In memory, one `mkdir` is cheaper than the hand-off to a blocking thread.
                    make(self.path.clone())
                } else {
                    // On disk it may not be (ext4 without a journal looks at every inode freed
                    // in the last seconds), and the runtime's one thread must not wait on it.
                    let path = self.path.clone();
                    tokio::task::spawn_blocking(move || make(path))
                        .await
                        .unwrap_or_else(|e| Err(std::io::Error::other(e.to_string())))
                };
                made.map_err(|e| StageError::io("create a work folder", e))
            })
            .await?;
        Ok(dir)
    }

    /// Removes the folder if it was created. A folder already gone is not an error.
    pub(crate) async fn remove(&self) -> std::io::Result<()> {
        let Some(dir) = self.dir.get() else {
            return Ok(());
        };
        // Most stages leave nothing: one `rmdir`, no hand-off to a blocking thread.
        match std::fs::remove_dir(dir) {
            Ok(()) => return Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(_) => {}
        }
        match tokio::fs::remove_dir_all(dir).await {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        }
    }

    /// [`Self::remove`], saying as a warning of the stage a folder that could not be removed.
    pub(crate) async fn remove_or_say(&self, status: &StatusSink) {
        if let Err(e) = self.remove().await {
            status.status(format!(
                "{}the work folder {} could not be removed ({e}): what the stage wrote there, plaintext included, may remain",
                super::console::WARNING_PREFIX,
                self.dir.get().map(|d| d.display().to_string()).unwrap_or_default()
            ));
        }
    }

    /// A folder that already exists at `dir` (tests).
    #[cfg(test)]
    pub(crate) fn at(dir: PathBuf) -> Self {
        Self {
            path: dir.clone(),
            dir: OnceCell::new_with(Some(dir)),
            in_memory: false,
            group: None,
        }
    }
}

/// A kept file (or folder) of a producer that the stage reads (a `file` output): where it is in
/// the run directory, which no child may read, and the digest it was kept with.
/// [`StageCx::copy_input_files`] copies it into the stage's own folder.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InputFile {
    pub producer: String,
    pub output: String,
    pub path: FileOutput,
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
    /// The kept files of its producers it reads (paths in the run directory).
    pub input_files: &'a [InputFile],
    /// What really happened (`reviewer.model`), kept redacted under the stage's record in the
    /// manifest whatever its outcome.
    pub facts: &'a StageFacts,
    /// The producers it reads that did not complete (their outputs absent or fallbacks), each
    /// with its outcome and reason: why a value it reads is missing.
    pub unfinished: &'a [Unfinished],
    pub(crate) stop: &'a StopRequest,
    pub(crate) work: &'a WorkDir,
    pub(crate) scope: &'a StageScope,
}

impl StageCx<'_> {
    /// Asks the run to stop once this stage has ended: there is nothing left to do (the head was
    /// already reviewed). The stage then returns its outputs as usual; the request counts only if
    /// it succeeds. Returns false when the run refuses stops (`--force`): a status line says so,
    /// and the stage should produce what a full run needs. `reason` is one line (docs/executor.md,
    /// "A stage that ends the run: stop").
    pub fn request_stop(&self, reason: impl Into<String>) -> bool {
        let reason = reason.into();
        let granted = self.stop.request(&reason);
        if !granted {
            self.status
                .status(format!("{reason}; --force: the run goes on"));
        }
        granted
    }

    /// The stage's work folder, created on first call.
    pub async fn work_dir(&self) -> Result<&Path, StageError> {
        self.work.get().await
    }

    /// The stage's confinement before its folder and what its kind adds (`None` when the run
    /// turned confinement off).
    pub fn scope_confinement(&self) -> Option<&ConfineSpec> {
        self.scope.base()
    }

    /// How a child of this stage is confined: the stage's confinement with its work folder
    /// (created now) as the child's own folder. `None` when the run turned confinement off.
    pub async fn confine(&self) -> Result<Option<ConfineSpec>, StageError> {
        let Some(base) = self.scope.base() else {
            return Ok(None);
        };
        let work = self.work_dir().await?;
        Ok(Some(base.clone().work(work)))
    }

    /// A `file` output at `path`, which must lie in the stage's work folder: kept later by
    /// reading it beneath that folder, never by its path.
    pub async fn output_file(&self, path: &Path) -> Result<OutputValue, StageError> {
        let work = self.work_dir().await?;
        let outside = || {
            StageError::failed(format!(
                "{} is not in the stage's work folder",
                path.display()
            ))
        };
        let rel = path.strip_prefix(work).map_err(|_| outside())?;
        FileOutput::beneath(work, rel)
            .map(OutputValue::File)
            .map_err(|_| outside())
    }

    /// Copies [`Self::input_files`] into `<work folder>/inputs/<producer>/<output>` (a child
    /// may read only its own folder, never the run directory) and returns each kept path with
    /// its copy. Each is read through the reader and must still match the digest it was kept
    /// with: one that changed since fails the stage.
    pub async fn copy_input_files(&self) -> Result<Vec<(PathBuf, PathBuf)>, StageError> {
        if self.input_files.is_empty() {
            return Ok(Vec::new());
        }
        let work = self.work_dir().await?.to_path_buf();
        let files = self.input_files.to_vec();
        tokio::task::spawn_blocking(move || {
            let mut copies = Vec::with_capacity(files.len());
            for f in files {
                let dir = work
                    .join("inputs")
                    .join(super::keep::component(&f.producer));
                let to = dir.join(super::keep::component(&f.output));
                let what = || format!("copy input `{}.{}`", f.producer, f.output);
                std::fs::create_dir_all(&dir).map_err(|e| StageError::io(what(), e))?;
                f.path.copy_to(&to).map_err(|e| match e {
                    ReadBackError::Changed { .. } => StageError::failed(e.to_string()),
                    e => StageError::failed(format!("cannot {}: {e}", what())),
                })?;
                copies.push((f.path.path(), to));
            }
            Ok(copies)
        })
        .await
        .map_err(|e| StageError::failed(format!("a worker thread failed: {e}")))?
    }

    /// The children named `name`.
    pub fn children_named<'s>(&'s self, name: &'s str) -> impl Iterator<Item = &'s ResolvedChild> {
        self.children.iter().filter(move |c| c.name == name)
    }
}

#[cfg(test)]
mod work_dir_tests {
    use super::WorkDir;

    #[tokio::test]
    async fn a_folder_that_cannot_be_removed_is_an_error() {
        // Nothing under /proc can be unlinked, not even by root.
        let work = WorkDir::at("/proc/self/fdinfo".into());
        assert!(work.remove().await.is_err());
    }

    #[tokio::test]
    async fn a_folder_already_gone_is_not() {
        let dir = tempfile::tempdir().expect("tempdir");
        let work = WorkDir::at(dir.path().join("gone"));
        assert!(work.remove().await.is_ok());
        let real = dir.path().join("real");
        std::fs::create_dir_all(real.join("inner")).expect("mkdir");
        let work = WorkDir::at(real.clone());
        assert!(work.remove().await.is_ok());
        assert!(!real.exists());
    }
}

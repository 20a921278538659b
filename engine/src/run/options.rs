//! How to run: everything the command line (or a test) decides.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use super::cancel::CancelSignal;
use super::console::ConsoleMode;
use super::extensions::Extensions;
use crate::exec::confine::Layer;
use crate::exec::process::DEFAULT_GRACE;

/// Reads an environment variable (the process environment, or a test's map).
pub type EnvLookup = Arc<dyn Fn(&str) -> Option<OsString> + Send + Sync>;

#[derive(Clone)]
pub struct RunOptions {
    /// At most this many stages at once.
    pub jobs: usize,
    /// Between SIGTERM and SIGKILL.
    pub grace: Duration,
    /// The checkout under review: the working directory of `run` stages by default.
    pub checkout: PathBuf,
    /// The folder holding run directories (`<checkout>/.reviewflow/runs`).
    pub runs_dir: PathBuf,
    /// Where stage work folders are created.
    pub temp_dir: PathBuf,
    /// The process has a mount namespace of its own: the stages' work folders are a tmpfs in
    /// it (run/work_root.rs). `None`: they are made on disk in `temp_dir`.
    pub private_mounts: Option<super::PrivateMounts>,
    /// The run to resume.
    pub resume: Option<String>,
    /// Admit a resume whose reviewer provider/model changed.
    pub allow_model_change: bool,
    /// `--stages`: run only these stages, taking what is upstream of them from the `resume`
    /// parent (docs/executor.md, "Partial runs").
    pub stages: Option<Vec<String>>,
    /// Refuse every stage's request to stop the run (`--force`): the run goes on even when a
    /// stage finds nothing to do (the head was already reviewed).
    pub force: bool,
    /// The command decides the process's exit after the run (`run --fail-on error|warning`): the
    /// console's end line says how the run ended without an exit code, which the command's own
    /// last line states.
    pub exit_decided_after: bool,
    /// Builtin inputs the forge resolved (`repo`, `change`); `run` is always the run id.
    pub builtin_inputs: BTreeMap<String, String>,
    /// Commits the forge resolved (`base`, `head`): part of the identity.
    pub commits: BTreeMap<String, String>,
    /// `local` or `ci`: part of the identity.
    pub mode: String,
    pub console: ConsoleMode,
    /// The platform the run happens on (docs/platforms.md): its console writes what
    /// [`ConsoleMode::Platform`] prints.
    pub platform: Option<Arc<dyn crate::platform::Platform>>,
    /// Where inputs and secrets are read from.
    pub env: EnvLookup,
    /// Interruption of the whole run (SIGINT, SIGTERM): see [`super::signals::listen`].
    pub cancel: CancelSignal,
    /// Services for stdlib stages.
    pub extensions: Arc<Extensions>,
    /// The file the run's summary is appended to: the platform's (`Platform::summary_file`).
    pub step_summary: Option<PathBuf>,
    /// Isolation layers of the process itself that the caller (the binary) set up: a scrubbed
    /// environment, not dumpable, a watchdog. Recorded in the manifest with the engine's own;
    /// a missing one is a warning, and refuses an `isolation "strict"` pipeline.
    pub process_layers: Vec<Layer>,
    /// Confine stage children (no new privileges, no capabilities, Landlock, parent-death
    /// signal, orphans ended per stage). Only measurements turn it off: the manifest then
    /// records those layers as not held, the run warns, and a strict pipeline is refused.
    pub confine_children: bool,
    /// What the caller found before the run started (how the forge was opened, the checkout's
    /// state): said as the run's first warnings, on the console and in the events log, like
    /// every other run-level warning.
    pub warnings: Vec<String>,
    /// How many run folders of `runs_dir` to keep, this run's among them: older ones are
    /// removed at the start (docs/executor.md, "Run folders").
    pub keep_runs: usize,
}

impl RunOptions {
    /// Defaults for a checkout: jobs = cores, grace 10 s, runs in `.reviewflow/runs`, the
    /// process environment, plain output, no cancellation.
    pub fn new(checkout: impl Into<PathBuf>) -> Self {
        let checkout = checkout.into();
        Self {
            jobs: std::thread::available_parallelism().map_or(2, |n| n.get()),
            grace: DEFAULT_GRACE,
            runs_dir: checkout.join(".reviewflow").join("runs"),
            temp_dir: std::env::temp_dir(),
            private_mounts: None,
            checkout,
            resume: None,
            allow_model_change: false,
            stages: None,
            force: false,
            exit_decided_after: false,
            builtin_inputs: BTreeMap::new(),
            commits: BTreeMap::new(),
            mode: "local".into(),
            console: ConsoleMode::Plain,
            platform: None,
            env: Arc::new(|name| std::env::var_os(name)),
            cancel: CancelSignal::never(),
            extensions: Arc::new(Extensions::new()),
            step_summary: None,
            process_layers: Vec::new(),
            confine_children: true,
            warnings: Vec::new(),
            keep_runs: super::retention::DEFAULT_KEEP_RUNS,
        }
    }
}

impl std::fmt::Debug for RunOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunOptions")
            .field("jobs", &self.jobs)
            .field("grace", &self.grace)
            .field("checkout", &self.checkout)
            .field("runs_dir", &self.runs_dir)
            .field("resume", &self.resume)
            .field("force", &self.force)
            .field("exit_decided_after", &self.exit_decided_after)
            .field("mode", &self.mode)
            .field("console", &self.console)
            .field("process_layers", &self.process_layers)
            .field("confine_children", &self.confine_children)
            .finish_non_exhaustive()
    }
}

//! The executor: runs a checked pipeline (docs/executor.md).
//!
//! [`execute`] gates the run (checks, implementations, inputs, resume admission), creates the run
//! directory, and hands the stages to the scheduler, which starts each as soon as its producers
//! have ended. Stage kinds are implemented behind [`StageImpl`] and registered in
//! [`Implementations`]; a stage sees only a [`StageCx`].

use crate::atomic;
mod blocking;
mod cancel;
mod clock;
mod console;
mod context;
mod digest;
mod error;
mod events;
mod executor;
mod extensions;
mod facts;
mod file_output;
mod git_credentials;
mod identity;
mod implementations;
mod keep;
mod leftovers;
mod manifest;
mod mask;
mod options;
mod outcome;
mod partial;
mod private;
mod reporter;
mod resolve;
mod resume;
mod retention;
mod scheduler;
mod secrets;
mod signals;
mod stage;
mod stage_error;
mod stop;
mod summary;
pub(crate) mod tree;
mod value;
mod work_root;

// The checkout readers live at the engine's top (`check` reads through them too); callers in
// other crates still name them here.
pub use crate::{beneath, nofollow};

pub use crate::inputs::{
    InputError, compile_pattern as compile_input_pattern, resolve_inputs,
    validate as validate_input, validate_compiled as validate_input_compiled,
};
pub use blocking::{execute_blocking, execute_with_signals, runtime, shutdown_grace};
pub use cancel::{CancelReason, CancelSignal, Canceller, cancel_pair};
pub use console::{ConsoleMode, random_hex};
pub use context::{InputFile, Resolved, ResolvedChild, StageCx, Unfinished};
pub use digest::digest;
pub use error::RunError;
pub use events::{
    EVENTS_FORMAT_VERSION, Event, EventLine, ReadEvents, Unreadable, read_tolerant,
    unreadable_lines,
};
pub use executor::{RunReport, execute};
pub use extensions::Extensions;
pub use facts::{MAX_FACT_KEY_LEN, MAX_FACT_VALUE_LEN, MAX_FACTS, StageFacts};
pub use file_output::{FileOutput, Kept, MAX_KEPT_BYTES, ReadBackError};
pub use identity::{Difference, IDENTITY_FORMAT, Identity, Reviewer};
pub use implementations::Implementations;
pub use manifest::{
    MANIFEST_FORMAT_VERSION, Manifest, OutputRecord, PipelineInfo, RunStop, StageRecord,
};
pub use options::{EnvLookup, RunOptions};
pub use outcome::{
    EXIT_FAILED, EXIT_OK, EXIT_SIGINT, EXIT_SIGTERM, EXIT_UNUSABLE, Outcome, RunStatus,
    exit_for_signal,
};
pub use reporter::StatusSink;
pub use resume::{ResumeError, valid_id};
pub use retention::{DEFAULT_KEEP_RUNS, Pruned, prune_runs};
pub use secrets::{SecretState, StageSecrets};
pub use signals::listen as listen_for_signals;
pub use stage::{BoxFuture, StageImpl};
pub use stage_error::StageError;
pub use stop::MAX_STOP_REASON;
pub use value::{OutputValue, StageOutputs};
pub use work_root::{PrivateMounts, thread_count};

/// JSON Schemas of the run directory's files: (file name, schema).
pub fn schemas() -> Vec<(&'static str, serde_json::Value)> {
    vec![
        (
            "manifest.schema.json",
            serde_json::to_value(schemars::schema_for!(Manifest)).unwrap_or_default(),
        ),
        (
            "events.schema.json",
            serde_json::to_value(schemars::schema_for!(EventLine)).unwrap_or_default(),
        ),
    ]
}

//! A blocking entry point for the command line: its own tokio runtime, with SIGINT and SIGTERM
//! wired to the run's cancellation.

use super::error::RunError;
use super::executor::{RunReport, execute};
use super::implementations::Implementations;
use super::options::RunOptions;
use super::signals;
use crate::compile::Compiled;
use crate::registry::Registry;

/// Runs `compiled` on a new runtime ([`runtime`]). The signal handlers are installed before the
/// first stage starts, so an interruption always ends the run cleanly (exit 130/143).
pub fn execute_blocking(
    compiled: &Compiled,
    registry: &Registry,
    implementations: &Implementations,
    options: RunOptions,
) -> Result<RunReport, RunError> {
    let runtime = runtime()?;
    let grace = options.grace;
    let report = runtime.block_on(execute_with_signals(
        compiled,
        registry,
        implementations,
        options,
    ));
    // Dropping a runtime waits for its blocking threads without end: one still stuck in a read
    // must not keep the process alive once the run is over.
    runtime.shutdown_timeout(shutdown_grace(grace));
    report
}

/// How long a finished run's runtime waits for its blocking threads: the grace period, at least
/// one second.
pub fn shutdown_grace(grace: std::time::Duration) -> std::time::Duration {
    grace.max(std::time::Duration::from_secs(1))
}

/// The runtime a run uses. Services the stages share (a forge's HTTP client) must be built on
/// it: their background tasks live as long as it does.
///
/// One thread, the caller's: the engine's own work a stage is small (it waits on its children,
/// and the blocking work goes to the blocking threads), and with every task on the thread that
/// schedules them no stage's start or end has to wake another thread. On 1,000 short stages that
/// is about 6 % less CPU than one worker thread per `--jobs` slot (docs/performance.md). Children
/// are started from this thread, which lives as long as the run (their parent-death signal
/// follows it).
pub fn runtime() -> Result<tokio::runtime::Runtime, RunError> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|source| RunError::Runtime { source })
}

/// [`execute`] with SIGINT and SIGTERM wired to the run's cancellation.
pub async fn execute_with_signals(
    compiled: &Compiled,
    registry: &Registry,
    implementations: &Implementations,
    mut options: RunOptions,
) -> Result<RunReport, RunError> {
    options.cancel = signals::listen().map_err(|source| RunError::Runtime { source })?;
    execute(compiled, registry, implementations, options).await
}

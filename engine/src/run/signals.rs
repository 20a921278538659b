//! SIGINT and SIGTERM end the run the way a timeout ends a stage.

use tokio::signal::unix::{SignalKind, signal};

use super::cancel::{CancelReason, CancelSignal, cancel_pair};

/// Listens for SIGINT and SIGTERM on the current runtime; the signal fires with the first one.
/// Later signals are ignored: children already have their grace period.
pub fn listen() -> std::io::Result<CancelSignal> {
    let mut int = signal(SignalKind::interrupt())?;
    let mut term = signal(SignalKind::terminate())?;
    let (canceller, cancel) = cancel_pair();
    tokio::spawn(async move {
        let sig = tokio::select! {
            _ = int.recv() => libc::SIGINT,
            _ = term.recv() => libc::SIGTERM,
        };
        canceller.cancel(CancelReason::Interrupted(sig));
        // Keep the handlers installed (the default action would kill us mid-cleanup) and the
        // sender alive.
        loop {
            tokio::select! {
                _ = int.recv() => {}
                _ = term.recv() => {}
            }
        }
    });
    Ok(cancel)
}

//! Cancellation of a stage: a timeout, or the whole run being interrupted.

use tokio::sync::watch;

/// Why a stage is being cancelled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CancelReason {
    /// Its `timeout` passed.
    Timeout,
    /// The run was interrupted by this signal (`libc::SIGINT`, `libc::SIGTERM`).
    Interrupted(i32),
}

/// The receiving side, given to a stage in its context. Cheap to clone.
#[derive(Clone, Debug)]
pub struct CancelSignal {
    rx: watch::Receiver<Option<CancelReason>>,
}

/// The sending side, kept by the executor.
#[derive(Debug)]
pub struct Canceller {
    tx: watch::Sender<Option<CancelReason>>,
}

/// A new pair, not cancelled.
pub fn cancel_pair() -> (Canceller, CancelSignal) {
    let (tx, rx) = watch::channel(None);
    (Canceller { tx }, CancelSignal { rx })
}

impl Canceller {
    /// Fires the signal; the first reason given wins.
    pub fn cancel(&self, reason: CancelReason) {
        self.tx.send_if_modified(|r| {
            if r.is_none() {
                *r = Some(reason);
                true
            } else {
                false
            }
        });
    }

    pub fn reason(&self) -> Option<CancelReason> {
        *self.tx.borrow()
    }
}

impl CancelSignal {
    /// A signal that never fires.
    pub fn never() -> Self {
        let (tx, rx) = watch::channel(None);
        // Kept alive forever so `cancelled` stays pending rather than ending on a closed channel.
        std::mem::forget(tx);
        Self { rx }
    }

    /// Whether it has fired, and why.
    pub fn reason(&self) -> Option<CancelReason> {
        *self.rx.borrow()
    }

    /// Resolves once the signal fires (never, if the sender is gone unfired).
    pub async fn cancelled(&self) -> CancelReason {
        let mut rx = self.rx.clone();
        loop {
            if let Some(reason) = *rx.borrow_and_update() {
                return reason;
            }
            if rx.changed().await.is_err() {
                return std::future::pending().await;
            }
        }
    }
}

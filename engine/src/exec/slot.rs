//! The run's slots: at most `--jobs` stages do their work at once (docs/executor.md,
//! "Scheduling"). A stage whose work is one program (the builtin `run`) takes its slot only for
//! the program's life, so that the engine prepares it (its folder, its view, its ruleset) before
//! a slot is free and keeps its outputs after it gave the slot back; every other stage holds its
//! slot for its whole run. A stage's `timeout` counts from when it took its slot.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};

/// One stage's way to the run's slots.
#[derive(Debug)]
pub struct SlotGate {
    slots: Arc<Semaphore>,
    /// The stage takes its slot around its program, not for its whole run.
    per_program: bool,
    taken: AtomicBool,
    notify: Notify,
}

/// A slot held; given back when dropped.
#[derive(Debug)]
pub struct Slot {
    _permit: OwnedSemaphorePermit,
}

impl SlotGate {
    pub fn new(slots: Arc<Semaphore>, per_program: bool) -> Self {
        Self {
            slots,
            per_program,
            taken: AtomicBool::new(false),
            notify: Notify::new(),
        }
    }

    /// Whether the stage's program takes the slot ([`SlotGate::take`] from the child's start).
    pub fn per_program(&self) -> bool {
        self.per_program
    }

    /// Waits for a free slot. `None` when the run's slots were closed (the run is ending).
    pub async fn take(&self) -> Option<Slot> {
        let permit = Arc::clone(&self.slots).acquire_owned().await.ok()?;
        self.taken.store(true, Ordering::Release);
        self.notify.notify_waiters();
        Some(Slot { _permit: permit })
    }

    /// Resolves once the stage has taken a slot: where its `timeout` starts.
    pub async fn taken(&self) {
        loop {
            let notified = self.notify.notified();
            if self.taken.load(Ordering::Acquire) {
                return;
            }
            notified.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn a_slot_is_given_back_when_dropped() {
        let slots = Arc::new(Semaphore::new(1));
        let a = SlotGate::new(Arc::clone(&slots), true);
        let b = SlotGate::new(Arc::clone(&slots), false);
        let held = a.take().await.expect("a slot");
        let waiting = tokio::time::timeout(Duration::from_millis(20), b.take()).await;
        assert!(
            waiting.is_err(),
            "a second slot was given while the only one was held"
        );
        drop(held);
        assert!(b.take().await.is_some(), "the slot was not given back");
    }

    #[tokio::test]
    async fn taken_resolves_only_once_a_slot_is_taken() {
        let gate = Arc::new(SlotGate::new(Arc::new(Semaphore::new(1)), true));
        let waiter = tokio::spawn({
            let gate = Arc::clone(&gate);
            async move { gate.taken().await }
        });
        tokio::task::yield_now().await;
        assert!(!waiter.is_finished(), "taken before any take");
        let _slot = gate.take().await.expect("a slot");
        tokio::time::timeout(Duration::from_secs(5), waiter)
            .await
            .expect("taken resolves")
            .expect("joined");
        // Taken stays true: a later wait returns at once.
        gate.taken().await;
    }
}

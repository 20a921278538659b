//! The run's slots: at most `--jobs` stages are at work at once (docs/executor.md,
//! "Scheduler"). A stage whose work is one program (the builtin `run`) uses its slot only for the
//! program's life, so that the engine prepares it (its folder, its view, its ruleset) while
//! another stage's program runs and keeps its outputs after it gave the slot back; every other
//! stage holds its slot for its whole run. A stage's `timeout` counts from when it took its slot.
//!
//! Slots are handed out in the order stages were started, whenever each comes to take it: a
//! stage queues for its slot when the scheduler starts it, so `--jobs 1` still runs the stages'
//! work one after another in the order they were started.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::{Notify, oneshot};

/// The run's slots.
#[derive(Debug, Clone)]
pub struct Slots {
    inner: Arc<Mutex<Queue>>,
}

#[derive(Debug)]
struct Queue {
    free: usize,
    waiting: VecDeque<oneshot::Sender<Slot>>,
}

/// A slot held; handed to the next stage in line when dropped.
#[derive(Debug)]
pub struct Slot {
    owner: Option<Arc<Mutex<Queue>>>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        let Some(owner) = self.owner.take() else {
            return;
        };
        let mut queue = owner.lock().unwrap_or_else(PoisonError::into_inner);
        while let Some(next) = queue.waiting.pop_front() {
            match next.send(Slot {
                owner: Some(Arc::clone(&owner)),
            }) {
                Ok(()) => return,
                // That stage ended without taking its slot: the next one in line.
                Err(mut unsent) => unsent.owner = None,
            }
        }
        queue.free += 1;
    }
}

impl Slots {
    /// `n` slots (at least one).
    pub fn new(n: usize) -> Self {
        Self {
            inner: Arc::new(Mutex::new(Queue {
                free: n.max(1),
                waiting: VecDeque::new(),
            })),
        }
    }

    /// A place in line for a stage started now, taken through its [`SlotGate`].
    pub fn gate(&self, per_program: bool) -> SlotGate {
        let (send, ticket) = oneshot::channel();
        let mut queue = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        if queue.free > 0 && queue.waiting.is_empty() {
            queue.free -= 1;
            // The receiver is ours: the send cannot fail.
            let _ = send.send(Slot {
                owner: Some(Arc::clone(&self.inner)),
            });
        } else {
            queue.waiting.push_back(send);
        }
        SlotGate {
            ticket: Mutex::new(Some(ticket)),
            per_program,
            taken: AtomicBool::new(false),
            notify: Notify::new(),
        }
    }
}

/// One stage's place in line for a slot.
#[derive(Debug)]
pub struct SlotGate {
    ticket: Mutex<Option<oneshot::Receiver<Slot>>>,
    /// The stage takes its slot around its program, not for its whole run.
    per_program: bool,
    taken: AtomicBool,
    notify: Notify,
}

impl SlotGate {
    /// Whether the stage's program takes the slot ([`SlotGate::take`] at the child's start).
    pub fn per_program(&self) -> bool {
        self.per_program
    }

    /// Waits for the stage's slot. `None` when it was taken already (a stage takes one slot).
    pub async fn take(&self) -> Option<Slot> {
        let ticket = self
            .ticket
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()?;
        let slot = ticket.await.ok()?;
        self.taken.store(true, Ordering::Release);
        self.notify.notify_waiters();
        Some(slot)
    }

    /// Resolves once the stage has taken its slot: where its `timeout` starts.
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
        let slots = Slots::new(1);
        let a = slots.gate(true);
        let b = slots.gate(false);
        let held = a.take().await.expect("a slot");
        let waiting = tokio::time::timeout(Duration::from_millis(20), b.take()).await;
        assert!(
            waiting.is_err(),
            "a second slot was given while the only one was held"
        );
        drop(held);
        let c = slots.gate(false);
        assert!(c.take().await.is_some(), "the slot was not given back");
    }

    #[tokio::test]
    async fn slots_go_in_the_order_stages_were_started_whenever_they_take_them() {
        let slots = Slots::new(1);
        let first = slots.gate(false);
        let held = first.take().await.expect("a slot");
        let second = slots.gate(true);
        let third = slots.gate(false);
        // The third asks first, the second later: the second is ahead in line.
        let third_waits = tokio::spawn(async move { third.take().await.map(|_| ()) });
        tokio::task::yield_now().await;
        drop(held);
        let got = tokio::time::timeout(Duration::from_secs(5), second.take())
            .await
            .expect("the second stage gets the slot");
        assert!(got.is_some());
        assert!(
            !third_waits.is_finished(),
            "the third took the second's place"
        );
        drop(got);
        tokio::time::timeout(Duration::from_secs(5), third_waits)
            .await
            .expect("then the third")
            .expect("joined");
    }

    #[tokio::test]
    async fn a_stage_that_ends_without_its_slot_gives_its_place_to_the_next() {
        let slots = Slots::new(1);
        let first = slots.gate(false);
        let held = first.take().await.expect("a slot");
        let gone = slots.gate(true);
        let next = slots.gate(false);
        drop(gone);
        drop(held);
        let got = tokio::time::timeout(Duration::from_secs(5), next.take()).await;
        assert!(
            matches!(got, Ok(Some(_))),
            "the slot was lost with the stage"
        );
    }

    #[tokio::test]
    async fn taken_resolves_only_once_the_slot_is_taken() {
        let slots = Slots::new(1);
        let gate = Arc::new(slots.gate(true));
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
        gate.taken().await;
    }
}

//! What the answers a proxy passed back reported they cost, and the try's token budget: once
//! the answers add up to it, the proxy forwards nothing more and the try is stopped
//! (`docs/reviewers.md`, "Costs and budgets").
//!
//! Each answer's body is read as it streams past ([`Tapped`]), unchanged and unbuffered; only
//! the usage of its events is kept ([`UsageTap`]).

use std::pin::Pin;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};

use bytes::Bytes;
use hyper::body::{Body, Frame, Incoming, SizeHint};
use tokio::sync::Notify;

use crate::reviewer::usage::{Usage, UsageTap};

/// The usage the answers of one try reported, and its token limit.
#[derive(Debug, Default)]
pub struct Meter {
    /// Tokens the try may spend; `None`: no token budget.
    limit: Mutex<Option<u64>>,
    used: Mutex<Usage>,
    /// Answers that reported their usage.
    answers: std::sync::atomic::AtomicU64,
    spent: AtomicBool,
    notify: Notify,
}

impl Meter {
    /// Limits the try to `tokens` (in and out); at zero nothing is forwarded.
    pub fn limit(&self, tokens: Option<u64>) {
        if let Ok(mut l) = self.limit.lock() {
            *l = tokens;
        }
        self.judge();
    }

    /// What the answers so far reported, tokens only (no API reports its price).
    pub fn used(&self) -> Usage {
        self.used.lock().map(|u| *u).unwrap_or_default()
    }

    /// Answers that reported their usage.
    pub fn answers(&self) -> u64 {
        self.answers.load(Ordering::Relaxed)
    }

    /// Whether the try reached its token limit.
    pub fn is_spent(&self) -> bool {
        self.spent.load(Ordering::Acquire)
    }

    /// Resolves once the try reached its token limit.
    pub async fn spent(&self) {
        loop {
            let notified = self.notify.notified();
            if self.is_spent() {
                return;
            }
            notified.await;
        }
    }

    fn add(&self, usage: Usage) {
        if let Ok(mut used) = self.used.lock() {
            *used = used.plus(&usage);
        }
        self.answers.fetch_add(1, Ordering::Relaxed);
        self.judge();
    }

    fn judge(&self) {
        let limit = self.limit.lock().ok().and_then(|l| *l);
        if limit.is_some_and(|l| self.used().tokens() >= l)
            && !self.spent.swap(true, Ordering::AcqRel)
        {
            self.notify.notify_waiters();
        }
    }
}

/// An answer's body as it streams back, its usage read on the way.
pub struct Tapped {
    inner: Incoming,
    tap: Option<UsageTap>,
    meter: Arc<Meter>,
}

impl Tapped {
    pub fn new(inner: Incoming, meter: Arc<Meter>) -> Self {
        Tapped {
            inner,
            tap: Some(UsageTap::default()),
            meter,
        }
    }

    /// Counts what the answer reported, once: at its end, or when it is dropped cut short.
    fn settle(&mut self) {
        if let Some(usage) = self.tap.take().and_then(UsageTap::finish) {
            self.meter.add(usage);
        }
    }
}

impl Body for Tapped {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        match &polled {
            Poll::Ready(Some(Ok(frame))) => {
                if let (Some(data), Some(tap)) = (frame.data_ref(), self.tap.as_mut()) {
                    tap.feed(data);
                }
            }
            Poll::Ready(None) => self.settle(),
            _ => {}
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

impl Drop for Tapped {
    fn drop(&mut self) {
        self.settle();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_limit_is_reached_by_what_the_answers_reported() {
        let meter = Meter::default();
        meter.limit(Some(100));
        let used = |tokens| Usage {
            input_tokens: tokens,
            ..Usage::default()
        };
        meter.add(used(60));
        assert!(!meter.is_spent());
        let waiting = async { meter.spent().await };
        meter.add(used(40));
        tokio::time::timeout(std::time::Duration::from_secs(5), waiting)
            .await
            .expect("the meter says the budget is spent");
        assert_eq!(meter.used().tokens(), 100);
        assert_eq!(meter.answers(), 2);
        // No limit: never spent.
        let free = Meter::default();
        free.add(used(1_000_000));
        assert!(!free.is_spent());
        // A limit of zero: spent before anything is forwarded.
        let none = Meter::default();
        none.limit(Some(0));
        assert!(none.is_spent());
    }
}

//! A reviewer's accounts: the keys given on one `secret-env` line, tried in order.
//!
//! The pool outlives each try's proxy: an account the API refused for its rate or usage limit
//! (HTTP 429) is skipped for the rest of the run, by every later request and every later try.
//! Only 429 skips one: Anthropic's 529 (`overloaded_error`) says the API is overloaded for
//! everyone, which another account does not change. An account is known by its secret's
//! declared name, never by its value.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::Poll;

use reviewflow_engine::exec::secret::SecretValue;
use tokio::sync::watch;

/// One account: a key, and the name of the secret it was declared as.
#[derive(Clone)]
pub struct Account {
    /// The secret's declared name (`anthropic-key`): what logs and the manifest say.
    pub name: String,
    pub key: SecretValue,
}

impl Account {
    pub fn new(name: impl Into<String>, key: SecretValue) -> Self {
        Self {
            name: name.into(),
            key,
        }
    }
}

impl fmt::Debug for Account {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Account")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// The accounts of one variable, in the order given, and which of them are still usable.
pub struct AccountPool {
    accounts: Vec<Account>,
    /// The first account not skipped: accounts are tried in order, so every one before it was
    /// refused for its limit. `accounts.len()` when all were.
    current: AtomicUsize,
    /// The latest account (in order) whose key the API answered with something else than its
    /// limit.
    answered: Mutex<Option<usize>>,
    /// Set once every account is skipped: a try then stops its reviewer at once.
    exhausted: watch::Sender<bool>,
}

impl AccountPool {
    /// A pool of `accounts` (at least one), none skipped.
    pub fn new(accounts: Vec<Account>) -> Self {
        Self {
            exhausted: watch::Sender::new(accounts.is_empty()),
            accounts,
            current: AtomicUsize::new(0),
            answered: Mutex::new(None),
        }
    }

    /// The account to use now, with its index; `None` when every account was skipped.
    pub fn current(&self) -> Option<(usize, &Account)> {
        let i = self.current.load(Ordering::Acquire);
        self.accounts.get(i).map(|a| (i, a))
    }

    /// How many accounts were skipped so far: the index of the current one.
    pub fn position(&self) -> usize {
        self.current.load(Ordering::Acquire)
    }

    /// What changed since the pool stood at `from` ([`Self::position`]): the accounts skipped
    /// and the one used from here on, by name; `None` when nothing was skipped.
    pub fn switched_since(&self, from: usize) -> Option<String> {
        let now = self.position();
        let skipped: Vec<&str> = self
            .accounts
            .get(from..now.min(self.accounts.len()))?
            .iter()
            .map(|a| a.name.as_str())
            .collect();
        if skipped.is_empty() {
            return None;
        }
        let reached = if skipped.len() == 1 {
            "has reached its rate or usage limit"
        } else {
            "have reached their rate or usage limits"
        };
        let next = match self.current() {
            Some((_, a)) => format!("`{}` from here on", a.name),
            None => "no account left".to_owned(),
        };
        Some(format!(
            "{} {reached} (HTTP 429): {next}",
            say_names(&skipped)
        ))
    }

    /// Skips the account at `index` for the rest of the run (the API answered its key with
    /// 429). Requests under way with the same account skip it once between them.
    pub fn skip(&self, index: usize) {
        let _ = self
            .current
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |c| {
                (c <= index).then_some(index + 1)
            });
        if self.current().is_none() {
            self.exhausted.send_replace(true);
        }
    }

    /// Records that the API answered the key of the account at `index` (not with its limit).
    /// Accounts only move forward: a late answer to a request sent with an account skipped
    /// since does not name it again.
    pub fn answered(&self, index: usize) {
        if let Ok(mut a) = self.answered.lock() {
            *a = Some(a.map_or(index, |was| was.max(index)));
        }
    }

    /// The name of the latest account the API answered, when it answered one.
    pub fn answered_by(&self) -> Option<&str> {
        let i = (*self.answered.lock().ok()?)?;
        self.accounts.get(i).map(|a| a.name.as_str())
    }

    /// True when every account was refused for its limit.
    pub fn is_exhausted(&self) -> bool {
        self.current().is_none()
    }

    /// Resolves once every account is skipped (at once when they already are).
    pub async fn exhausted(&self) {
        let mut rx = self.exhausted.subscribe();
        // The sender lives in `self`: waiting cannot outlive it.
        let _ = rx.wait_for(|e| *e).await;
    }

    /// The accounts' names, in order.
    pub fn names(&self) -> Vec<&str> {
        self.accounts.iter().map(|a| a.name.as_str()).collect()
    }

    /// How many accounts the pool holds.
    pub fn len(&self) -> usize {
        self.accounts.len()
    }

    /// True for a pool of no account.
    pub fn is_empty(&self) -> bool {
        self.accounts.is_empty()
    }

    /// Whether an account after `index` is still usable: a request refused with `index`'s key
    /// can be sent again.
    pub fn has_after(&self, index: usize) -> bool {
        self.current.load(Ordering::Acquire).max(index + 1) < self.accounts.len()
    }
}

impl fmt::Debug for AccountPool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AccountPool")
            .field("accounts", &self.names())
            .field("current", &self.current.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

/// The accounts the API last answered, by their secrets' names (one per pool that was
/// answered): the manifest's `reviewer.account`.
pub fn account_fact(pools: &[(String, Arc<AccountPool>)]) -> Option<String> {
    let names: Vec<&str> = pools.iter().filter_map(|(_, p)| p.answered_by()).collect();
    (!names.is_empty()).then(|| names.join(", "))
}

/// The accounts of every pool whose accounts all reached their limit, by name, for a try's
/// reason; `None` while each pool has one left.
pub fn limited_accounts(pools: &[(String, Arc<AccountPool>)]) -> Option<String> {
    let names: Vec<&str> = pools
        .iter()
        .filter(|(_, p)| p.is_exhausted())
        .flat_map(|(_, p)| p.names())
        .collect();
    (!names.is_empty()).then(|| say_names(&names))
}

/// Resolves once every account of one of `pools` is skipped; never for no pool.
pub async fn any_exhausted<'a>(pools: impl IntoIterator<Item = &'a AccountPool>) {
    type Wait<'a> = Pin<Box<dyn Future<Output = ()> + Send + 'a>>;
    let mut waits: Vec<Wait<'a>> = pools
        .into_iter()
        .map(|p| Box::pin(p.exhausted()) as Wait<'a>)
        .collect();
    std::future::poll_fn(|cx| {
        if waits.iter_mut().any(|w| w.as_mut().poll(cx).is_ready()) {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    })
    .await;
}

/// `a`, `b` and `c`: names of accounts, for a reason.
pub fn say_names(names: &[&str]) -> String {
    let quoted: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
    match quoted.as_slice() {
        [] => String::new(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pool(names: &[&str]) -> AccountPool {
        AccountPool::new(
            names
                .iter()
                .map(|n| Account::new(*n, SecretValue::from(format!("key-{n}"))))
                .collect(),
        )
    }

    #[test]
    fn accounts_are_used_in_order_and_a_skipped_one_stays_skipped() {
        let p = pool(&["a", "b", "c"]);
        assert_eq!(
            p.current().map(|(i, a)| (i, a.name.as_str())),
            Some((0, "a"))
        );
        assert!(p.has_after(0));
        p.skip(0);
        assert_eq!(p.current().map(|(i, _)| i), Some(1));
        // A second request refused with the first account does not skip the second.
        p.skip(0);
        assert_eq!(p.current().map(|(i, _)| i), Some(1));
        assert_eq!(
            p.switched_since(0).as_deref(),
            Some("`a` has reached its rate or usage limit (HTTP 429): `b` from here on")
        );
        assert_eq!(p.switched_since(1), None);
        p.skip(1);
        assert!(!p.has_after(2));
        assert!(!p.is_exhausted());
        p.skip(2);
        assert!(p.is_exhausted());
        assert_eq!(
            p.switched_since(1).as_deref(),
            Some("`b` and `c` have reached their rate or usage limits (HTTP 429): no account left")
        );
        assert_eq!(p.current().map(|(i, _)| i), None);
    }

    #[test]
    fn the_account_answered_is_named_never_its_key() {
        let p = pool(&["first", "second"]);
        assert_eq!(p.answered_by(), None);
        p.answered(1);
        assert_eq!(p.answered_by(), Some("second"));
        p.answered(0);
        assert_eq!(
            p.answered_by(),
            Some("second"),
            "a late answer of the first"
        );
        let shown = format!("{p:?} {:?}", p.current());
        assert!(!shown.contains("key-"), "{shown}");
        assert_eq!(say_names(&["a", "b", "c"]), "`a`, `b` and `c`");
        assert_eq!(say_names(&["a"]), "`a`");
    }

    #[tokio::test]
    async fn exhaustion_is_announced_to_whoever_waits() {
        let p = std::sync::Arc::new(pool(&["a"]));
        let waiting = tokio::spawn({
            let p = std::sync::Arc::clone(&p);
            async move { p.exhausted().await }
        });
        p.skip(0);
        waiting.await.unwrap();
        // Once exhausted, waiting returns at once, for one pool among others too.
        p.exhausted().await;
        let other = pool(&["b"]);
        any_exhausted([&other, &*p]).await;
    }
}

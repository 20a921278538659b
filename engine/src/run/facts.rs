//! Facts a stage implementation records about what really happened (`reviewer.model`: the model
//! that answered), kept under the stage's record in `manifest.json`.

use std::collections::BTreeMap;
use std::sync::{Mutex, PoisonError};

use crate::exec::redact::Redactor;

/// Facts a stage may record.
pub const MAX_FACTS: usize = 32;
/// Characters of a fact's key: `a-z`, `0-9`, `.` and `-`.
pub const MAX_FACT_KEY_LEN: usize = 64;
/// Characters of a fact's value; a longer value is cut.
pub const MAX_FACT_VALUE_LEN: usize = 1024;

/// The facts of one stage: [`StageCx::facts`](super::StageCx::facts). Recording never fails a
/// stage: a fact beyond the limits is dropped or cut.
pub struct StageFacts {
    redactor: Redactor,
    facts: Mutex<BTreeMap<String, String>>,
}

impl Default for StageFacts {
    /// Facts that redact nothing (the executor gives each stage facts with the run's redactor).
    fn default() -> Self {
        Self::new(Redactor::empty())
    }
}

impl std::fmt::Debug for StageFacts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map().entries(self.lock().iter()).finish()
    }
}

impl StageFacts {
    pub(crate) fn new(redactor: Redactor) -> Self {
        Self {
            redactor,
            facts: Mutex::new(BTreeMap::new()),
        }
    }

    /// Records `key` = `value`, replacing an earlier value of `key`. A key is 1 to 64 characters
    /// of `a-z0-9.-` (another is a bug of the implementation: ignored, and a debug assertion); a
    /// value is cut at 1024 characters; a 33rd key is ignored.
    pub fn record(&self, key: impl Into<String>, value: impl Into<String>) {
        let key = key.into();
        let valid = valid_key(&key);
        debug_assert!(valid, "fact key `{key}` is not 1 to 64 of `a-z0-9.-`");
        if valid {
            self.insert(key, value.into());
        }
    }

    /// The value recorded for `key`, as it will be kept.
    pub fn get(&self, key: &str) -> Option<String> {
        self.lock().get(key).cloned()
    }

    /// Takes in facts read back from a manifest (a reused stage's): the same limits, silently.
    pub(crate) fn absorb(&self, facts: &BTreeMap<String, String>) {
        for (k, v) in facts {
            if valid_key(k) {
                self.insert(k.clone(), v.clone());
            }
        }
    }

    /// The facts recorded so far, leaving none.
    pub(crate) fn take(&self) -> BTreeMap<String, String> {
        std::mem::take(&mut *self.lock())
    }

    fn insert(&self, key: String, value: String) {
        // A key that holds a secret value is dropped: a redacted key would not be a key.
        if self.redactor.redact(key.as_bytes()).as_ref() != key.as_bytes() {
            return;
        }
        // Redacted whole before it is cut: a cut first could leave the start of a secret behind.
        let redacted =
            String::from_utf8_lossy(&self.redactor.redact(value.as_bytes())).into_owned();
        let value = match redacted.char_indices().nth(MAX_FACT_VALUE_LEN) {
            Some((end, _)) => redacted[..end].to_string(),
            None => redacted,
        };
        let mut facts = self.lock();
        if facts.len() < MAX_FACTS || facts.contains_key(&key) {
            facts.insert(key, value);
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, String>> {
        // A panic while holding the lock cannot leave the map half-written.
        self.facts.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

fn valid_key(key: &str) -> bool {
    !key.is_empty()
        && key.len() <= MAX_FACT_KEY_LEN
        && key
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'.' | b'-'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn facts_are_replaced_redacted_cut_and_bounded() {
        let facts = StageFacts::new(Redactor::new([("t", "s3cret-value-1234")]).unwrap());
        facts.record("reviewer.model", "a");
        facts.record("reviewer.model", "b");
        facts.record("said", "x s3cret-value-1234");
        facts.record("long", "é".repeat(MAX_FACT_VALUE_LEN + 10));
        facts.record("s3cret-value-1234", "y");
        assert_eq!(facts.get("reviewer.model").as_deref(), Some("b"));
        assert_eq!(facts.get("said").as_deref(), Some("x [redacted:t]"));
        assert_eq!(
            facts.get("long").map(|v| v.chars().count()),
            Some(MAX_FACT_VALUE_LEN)
        );
        assert_eq!(facts.get("s3cret-value-1234"), None);
        for i in 0..MAX_FACTS {
            facts.record(format!("k{i}"), "v");
        }
        facts.record("said", "replaced at the limit");
        let all = facts.take();
        assert_eq!(all.len(), MAX_FACTS);
        assert_eq!(all["said"], "replaced at the limit");
        assert!(facts.take().is_empty());
    }

    #[test]
    fn absorbed_facts_keep_the_limits() {
        let facts = StageFacts::default();
        let read = BTreeMap::from([
            ("ok".to_string(), "v".repeat(2000)),
            ("Bad Key".to_string(), "v".to_string()),
            ("k".repeat(MAX_FACT_KEY_LEN + 1), "v".to_string()),
        ]);
        facts.absorb(&read);
        let all = facts.take();
        assert_eq!(all.len(), 1);
        assert_eq!(all["ok"].len(), MAX_FACT_VALUE_LEN);
    }

    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "is not 1 to 64")]
    fn an_invalid_key_is_a_bug() {
        StageFacts::default().record("Model", "x");
    }

    #[test]
    fn facts_are_shared_between_threads() {
        fn shared<T: Send + Sync>() {}
        shared::<StageFacts>();
    }
}

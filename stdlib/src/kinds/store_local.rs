//! `store kind="local"`: a folder of sealed blobs (by default `.reviewflow/store/`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use reviewflow_engine::contract::{StoreContract, ValueType};
use reviewflow_engine::run::BoxFuture;

use crate::store::{
    BlobSource, BlobStore, Candidate, Entry, EntryKind, Fetched, Judgement, Keep, Kept, LocalStore,
    Producer, StoreError, StoreName,
};

pub fn contract() -> StoreContract {
    StoreContract::new(
        "local",
        "a folder: atomic writes, safe under concurrent runs",
    )
    .prop(
        "path",
        ValueType::String,
        "the folder, relative to the checkout (default `.reviewflow/store`)",
    )
    .trust(
        "local",
        ValueType::Bool,
        "blobs this checkout's own runs kept",
    )
    .trust_example("trust local=#true")
    .retain()
    .name_refusal(crate::store::name_refusal)
}

/// The kind, registered in [`super::STORES`].
pub struct LocalKind;

impl super::StoreKind for LocalKind {
    fn contract(&self) -> StoreContract {
        contract()
    }

    fn open(&self, open: &super::StoreOpen<'_>) -> Result<Arc<dyn BlobStore>, StoreError> {
        // Inside the checkout: no link on the way is followed (docs/local-forge.md).
        let rel = open
            .decl
            .setting("path")
            .and_then(|v| v.value.as_str())
            .unwrap_or(crate::store::DEFAULT_DIR);
        let trusts_local = open
            .decl
            .trust
            .iter()
            .any(|t| t.setting("local").and_then(|v| v.value.as_bool()) == Some(true));
        Ok(Arc::new(Local {
            store: LocalStore::in_checkout(open.checkout, rel),
            trusts_local,
            keep_last: open.decl.retain_count.as_ref().map(|c| c.value as usize),
            max_age: open
                .decl
                .retain_age
                .as_ref()
                .map(|a| Duration::from_millis(a.value)),
            listed: Arc::default(),
        }))
    }
}

impl Local {
    /// `store`, believing the blobs this checkout's runs kept when `trusts_local`; no retention.
    pub fn new(store: LocalStore, trusts_local: bool) -> Self {
        Self {
            store,
            trusts_local,
            keep_last: None,
            max_age: None,
            listed: Arc::default(),
        }
    }
}

/// A local store opened for one run.
pub struct Local {
    pub store: LocalStore,
    /// `trust local=#true`: blobs this checkout's runs kept (producer `forge=local`).
    trusts_local: bool,
    keep_last: Option<usize>,
    max_age: Option<Duration>,
    /// Entries as last listed, by id: a fetch checks the blob against them.
    listed: Arc<Mutex<HashMap<String, Entry>>>,
}

/// The producer key that marks a candidate whose sidecar could not be read (never a key a
/// writer records: it holds a space).
const UNREADABLE: &str = "unreadable sidecar";
/// Unreadable sidecars a listing names; the rest are counted.
const NAMED_UNREADABLE: usize = 3;

fn candidate(entry: &Entry) -> Candidate {
    Candidate {
        id: entry.id.to_string(),
        size: entry.size,
        kind: Some(entry.kind),
        producer: entry.producer.clone(),
    }
}

impl BlobStore for Local {
    fn list<'a>(
        &'a self,
        name: &'a StoreName,
    ) -> BoxFuture<'a, Result<Vec<Candidate>, StoreError>> {
        let store = self.store.clone();
        let name = name.clone();
        let listed = Arc::clone(&self.listed);
        Box::pin(off_thread(move || {
            let listing = store.list_checked(&name)?;
            let mut out: Vec<Candidate> = listing.entries.iter().map(candidate).collect();
            // An unreadable sidecar is a candidate nobody can trust: restore names it in a
            // status line and goes on to the next (older) entry. The newest few are named, the
            // rest counted: planted files must not flood the log.
            let more = listing.skipped.len().saturating_sub(NAMED_UNREADABLE);
            for (i, skipped) in listing.skipped.iter().take(NAMED_UNREADABLE).enumerate() {
                let mut why = skipped.to_string();
                if more > 0 && i + 1 == NAMED_UNREADABLE {
                    why.push_str(&format!("; {more} older unreadable entries not named"));
                }
                out.push(Candidate {
                    id: skipped.id.clone(),
                    size: 0,
                    kind: None,
                    producer: Producer::from([(UNREADABLE.into(), why)]),
                });
            }
            out.sort_by(|a, b| b.id.cmp(&a.id));
            if let Ok(mut map) = listed.lock() {
                map.extend(listing.entries.into_iter().map(|e| (e.id.to_string(), e)));
            }
            Ok(out)
        }))
    }

    fn judge<'a>(&'a self, candidate: &'a Candidate) -> BoxFuture<'a, Judgement> {
        if candidate.kind.is_none()
            && let Some(why) = candidate.producer.get(UNREADABLE)
        {
            return Box::pin(std::future::ready(Judgement::Unknown(format!(
                "its metadata is unreadable ({why}); skipped"
            ))));
        }
        let local = candidate.producer.get("forge").map(String::as_str) == Some("local");
        Box::pin(std::future::ready(if self.trusts_local && local {
            Judgement::Trusted
        } else {
            Judgement::Untrusted("its producer is not trusted".into())
        }))
    }

    fn fetch<'a>(
        &'a self,
        candidate: &'a Candidate,
        max_bytes: u64,
    ) -> BoxFuture<'a, Result<Fetched, StoreError>> {
        let store = self.store.clone();
        let candidate = candidate.clone();
        let listed = Arc::clone(&self.listed);
        Box::pin(off_thread(move || {
            if candidate.kind == Some(EntryKind::Tombstone) {
                return Ok(Fetched::Tombstone(candidate.producer));
            }
            // The entry as listed: its size and digest are what the blob is checked against.
            let entry = listed
                .lock()
                .map_err(|_| StoreError::Remote("the listing cache is poisoned".into()))?
                .get(&candidate.id)
                .cloned()
                .ok_or_else(|| {
                    StoreError::Remote(format!("entry {} was not listed", candidate.id))
                })?;
            Ok(Fetched::Blob(store.get(&entry, max_bytes)?))
        }))
    }

    fn keep<'a>(
        &'a self,
        name: &'a StoreName,
        item: Keep<'a>,
        producer: Producer,
    ) -> BoxFuture<'a, Result<Kept, StoreError>> {
        let store = self.store.clone();
        let name = name.clone();
        let bytes = match item {
            Keep::Blob(b) => Some(b.to_vec()),
            Keep::Tombstone => None,
        };
        let (keep_last, max_age) = (self.keep_last, self.max_age);
        Box::pin(off_thread(move || {
            let mut producer = producer;
            producer.insert("forge".into(), "local".into());
            let entry = match &bytes {
                Some(b) => store.put(&name, BlobSource::Bytes(b), producer)?,
                None => store.put_tombstone(&name, producer)?,
            };
            let mut description = match bytes {
                Some(_) => format!("kept the sealed conversation as {}", entry.id),
                None => "no sealed conversation: kept a tombstone, so the next review starts fresh"
                    .to_string(),
            };
            if keep_last.is_some() || max_age.is_some() {
                // Retention runs after the new entry is kept: it never removes the newest.
                let report = store.retain(&name, keep_last, max_age)?;
                if !report.removed.is_empty() {
                    description.push_str(&format!(
                        "; retention removed {} older entries",
                        report.removed.len()
                    ));
                }
                if let Some(first) = report.skipped.first() {
                    description.push_str(&format!(
                        "; warning: skipped {} unreadable store entr{} (the newest: {first})",
                        report.skipped.len(),
                        if report.skipped.len() == 1 {
                            "y"
                        } else {
                            "ies"
                        }
                    ));
                }
            }
            Ok(Kept {
                id: bytes_kept(&entry),
                description,
            })
        }))
    }
}

/// The id a posted review names: a blob's, never a tombstone's.
fn bytes_kept(entry: &Entry) -> Option<String> {
    (!entry.is_tombstone()).then(|| entry.id.to_string())
}

async fn off_thread<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, StoreError> + Send + 'static,
) -> Result<T, StoreError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| StoreError::Remote(format!("a worker thread failed: {e}")))?
}

//! Finding the conversation to resume: newest first, only from trusted producers, at most
//! `max_tries` trusted blobs opened, each with the key and the binding; only the conversation of
//! the review the posted review names is accepted; a tombstone stops the search. Anything else
//! ends in a fresh review with the reason, never in an error.

use super::bundle::{BundleHeader, read_bundle};
use crate::envelope::{Binding, SealKey};
use crate::store::{Entry, LocalStore, StoreName};

/// Whose blobs are believed.
#[derive(Clone, Debug, Default)]
pub struct TrustPolicy {
    /// Blobs this checkout's own runs kept (`trust local=#true`): producer `forge=local`.
    pub local: bool,
}

impl TrustPolicy {
    pub fn trusts(&self, entry: &Entry) -> bool {
        self.local && entry.producer.get("forge").map(String::as_str) == Some("local")
    }
}

pub struct RestoreRequest<'a> {
    pub secret: &'a [u8],
    pub min_bytes: usize,
    pub binding: &'a Binding,
    /// The largest blob opened, in bytes.
    pub max_bytes: u64,
    /// The most trusted blobs opened.
    pub max_tries: usize,
    /// The head the last posted review names, if any.
    pub posted_head: Option<&'a str>,
    /// Accept only the conversation of that review.
    pub require_posted_head: bool,
    pub trust: &'a TrustPolicy,
}

#[derive(Debug)]
pub enum RestoreOutcome {
    Restored {
        header: BundleHeader,
        conversation: Vec<u8>,
        entry: String,
    },
    Fresh {
        reason: String,
    },
}

fn short(sha: &str) -> &str {
    sha.get(..12).unwrap_or(sha)
}

/// Looks for the conversation to resume; `status` receives one line per skipped blob.
pub fn restore(
    store: &LocalStore,
    name: &StoreName,
    req: &RestoreRequest<'_>,
    status: &mut dyn FnMut(String),
) -> RestoreOutcome {
    let fresh = |reason: String| RestoreOutcome::Fresh { reason };
    if req.require_posted_head && req.posted_head.is_none() {
        return fresh("no posted review of this change names a head".into());
    }
    let key = match SealKey::derive(req.secret, req.min_bytes) {
        Ok(k) => k,
        Err(e) => return fresh(format!("the key is unusable: {e}")),
    };
    let entries = match store.list(name) {
        Ok(e) => e,
        Err(e) => return fresh(format!("the store cannot be listed: {e}")),
    };
    let mut tries = 0;
    for entry in entries {
        if !req.trust.trusts(&entry) {
            status(format!(
                "skipped {}: its producer is not trusted",
                entry.id.as_str()
            ));
            continue;
        }
        if entry.is_tombstone() {
            let of = entry
                .producer
                .get("head")
                .map(|h| format!(" of the review of {}", short(h)))
                .unwrap_or_default();
            return fresh(format!(
                "the conversation{of} was not kept (tombstone {})",
                entry.id.as_str()
            ));
        }
        tries += 1;
        if tries > req.max_tries {
            return fresh(format!(
                "no conversation of the posted review among the {} newest trusted blobs",
                req.max_tries
            ));
        }
        let mut buf = match store.get(&entry, req.max_bytes) {
            Ok(b) => b,
            Err(e) => {
                status(format!("skipped {}: {e}", entry.id.as_str()));
                continue;
            }
        };
        if key
            .open_in_place(req.binding, req.max_bytes as usize, &mut buf)
            .is_err()
        {
            status(format!(
                "skipped {}: it does not open with this key and binding",
                entry.id.as_str()
            ));
            continue;
        }
        let (header, range) = match read_bundle(&buf) {
            Ok(x) => x,
            Err(e) => {
                zeroize::Zeroize::zeroize(&mut buf);
                status(format!("skipped {}: {e}", entry.id.as_str()));
                continue;
            }
        };
        if req.require_posted_head && req.posted_head != Some(header.head.as_str()) {
            status(format!(
                "skipped {}: the conversation of the review of {}, not of the posted review of {}",
                entry.id.as_str(),
                short(&header.head),
                req.posted_head.map(short).unwrap_or("?")
            ));
            zeroize::Zeroize::zeroize(&mut buf);
            continue;
        }
        // Keep the conversation's bytes only: shift them to the front in place.
        buf.drain(..range.start);
        return RestoreOutcome::Restored {
            header,
            conversation: buf,
            entry: entry.id.as_str().to_string(),
        };
    }
    fresh("no sealed conversation of the posted review".into())
}

//! Finding the conversation to resume: newest first, only from trusted producers, at most
//! `max_tries` trusted blobs fetched, each with the key and the binding; with
//! `require_posted_head`, only the blob the posted review names by its digest (its blob id), of
//! the head it names, is accepted; a tombstone stops the search. Anything else ends in a fresh
//! review with the reason, never in an error.

use super::blob_id::{is_blob, parse_blob_id};
use super::bundle::{BundleHeader, read_bundle};
use crate::envelope::{Binding, SealKey};
use crate::store::{BlobStore, EntryKind, Fetched, Judgement, StoreName};

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
    /// The conversation the last posted review names (its blob id, `blob-<sha-256>`), if any.
    pub posted_conversation: Option<&'a str>,
    /// Accept only the blob that review names, and only if it is of that review's head.
    pub require_posted_head: bool,
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

/// Looks for the conversation to resume; `status` receives one line per skipped blob. The
/// store judges each producer (its `trust` rules) before anything is downloaded; untrusted blobs
/// never count toward `max_tries`.
pub async fn restore(
    store: &dyn BlobStore,
    name: &StoreName,
    req: &RestoreRequest<'_>,
    status: &mut (dyn FnMut(String) + Send),
) -> RestoreOutcome {
    let fresh = |reason: String| RestoreOutcome::Fresh { reason };
    let mut posted_digest = None;
    if req.require_posted_head {
        if req.posted_head.is_none() {
            return fresh("no posted review of this change names a head".into());
        }
        let Some(id) = req.posted_conversation else {
            return fresh("the posted review kept no conversation".into());
        };
        // The id was checked against its pattern when the record or marker was read, so it is
        // safe to echo.
        match parse_blob_id(id) {
            Some(digest) => posted_digest = Some(digest),
            None => {
                return fresh(format!(
                    "the posted review names its conversation as `{id}`, not by the digest of its blob (`blob-<sha-256>`)"
                ));
            }
        }
    }
    let key = match SealKey::derive(req.secret, req.min_bytes) {
        Ok(k) => k,
        Err(e) => return fresh(format!("the key is unusable: {e}")),
    };
    let candidates = match store.list(name).await {
        Ok(c) => c,
        Err(e) => return fresh(format!("the store cannot be listed: {e}")),
    };
    let mut tries = 0;
    let mut untrusted = 0usize;
    // The newest untrusted producer's reason, as a sample: enough to debug a trust rule,
    // bounded whatever a flood holds.
    let mut sample: Option<String> = None;
    let summary = |untrusted: usize, sample: &Option<String>| match (untrusted, sample) {
        (0, _) => String::new(),
        (n, Some(first)) => {
            format!(" ({n} blobs from untrusted producers skipped; the newest: {first})")
        }
        (n, None) => format!(" ({n} blobs from untrusted producers skipped)"),
    };
    for candidate in candidates {
        match store.judge(&candidate).await {
            Judgement::Trusted => {}
            Judgement::Untrusted(reason) => {
                // Counted, not narrated: a flood of planted blobs must not flood the log.
                untrusted += 1;
                sample.get_or_insert(reason);
                continue;
            }
            Judgement::Unknown(reason) => {
                status(format!("skipped {}: {reason}", candidate.id));
                continue;
            }
            Judgement::CapReached(reason) => {
                return fresh(format!("{reason}{}", summary(untrusted, &sample)));
            }
        }
        let tombstone_of = |producer: &crate::store::Producer| {
            let of = producer
                .get("head")
                .map(|h| format!(" of the review of {}", short(h)))
                .unwrap_or_default();
            fresh(format!(
                "the conversation{of} was not kept (tombstone {})",
                candidate.id
            ))
        };
        if candidate.kind == Some(EntryKind::Tombstone) {
            return tombstone_of(&candidate.producer);
        }
        tries += 1;
        if tries > req.max_tries {
            return fresh(format!(
                "no conversation of the posted review among the {} newest trusted blobs{}",
                req.max_tries,
                summary(untrusted, &sample)
            ));
        }
        let mut buf = match store.fetch(&candidate, req.max_bytes).await {
            Ok(Fetched::Blob(b)) => b,
            Ok(Fetched::Tombstone(producer)) => return tombstone_of(&producer),
            Err(e) => {
                status(format!("skipped {}: {e}", candidate.id));
                continue;
            }
        };
        // Before opening: a blob the posted review does not name is never decrypted, however new
        // it is and whatever head it claims.
        if let Some(digest) = &posted_digest
            && !is_blob(&buf, digest)
        {
            status(format!(
                "skipped {}: it is not the blob the posted review names",
                candidate.id
            ));
            continue;
        }
        if key
            .open_in_place(req.binding, req.max_bytes as usize, &mut buf)
            .is_err()
        {
            status(format!(
                "skipped {}: it does not open with this key and binding",
                candidate.id
            ));
            continue;
        }
        let (header, range) = match read_bundle(&buf) {
            Ok(x) => x,
            Err(e) => {
                zeroize::Zeroize::zeroize(&mut buf);
                status(format!("skipped {}: {e}", candidate.id));
                continue;
            }
        };
        if req.require_posted_head && req.posted_head != Some(header.head.as_str()) {
            status(format!(
                "skipped {}: the conversation of the review of {}, not of the posted review of {}",
                candidate.id,
                short(&header.head),
                req.posted_head.map(short).unwrap_or("?")
            ));
            zeroize::Zeroize::zeroize(&mut buf);
            continue;
        }
        // Keep the conversation's bytes only: shift them to the front in place.
        buf.drain(..range.start);
        if untrusted > 0 {
            status(format!(
                "{} is restored{}",
                candidate.id,
                summary(untrusted, &sample)
            ));
        }
        return RestoreOutcome::Restored {
            header,
            conversation: buf,
            entry: candidate.id,
        };
    }
    fresh(format!(
        "no sealed conversation of the posted review{}",
        summary(untrusted, &sample)
    ))
}

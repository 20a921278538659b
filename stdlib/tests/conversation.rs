//! Sealing a conversation into the local store and restoring the one the posted review names.

// Test helpers unwrap as the tests do (clippy's allow-unwrap-in-tests covers only the
// `#[test]` functions themselves).
#![allow(clippy::unwrap_used)]

use std::path::Path;

use reviewflow_stdlib::conversation::{
    BUNDLE_VERSION, BundleHeader, Packing, RestoreOutcome, RestoreRequest, SealRequest, blob_id,
    restore, seal_file, seal_tombstone,
};
use reviewflow_stdlib::envelope::Binding;
use reviewflow_stdlib::store::{BlobSource, LocalStore, Producer, StoreName};

const KEY: &[u8] = b"0123456789abcdef0123456789abcdef";
const OTHER_KEY: &[u8] = b"fedcba9876543210fedcba9876543210";

fn binding(change: &str) -> Binding {
    Binding::new()
        .with("repo", "acme/app")
        .unwrap()
        .with("change", change)
        .unwrap()
}

fn head(c: char) -> String {
    c.to_string().repeat(40)
}

fn producer(head: &str) -> Producer {
    [("forge", "local"), ("head", head)]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// Seals `text` as the conversation of the review of `head` and keeps it; returns the blob's
/// id, as a posted review names it.
fn keep(
    store: &LocalStore,
    name: &StoreName,
    dir: &Path,
    head: &str,
    text: &str,
    key: &[u8],
    b: &Binding,
) -> String {
    let conv = dir.join("conversation.json");
    std::fs::write(&conv, text).unwrap();
    let out = dir.join("blob");
    let req = SealRequest {
        secret: key,
        min_bytes: 32,
        binding: b,
        header: BundleHeader {
            version: BUNDLE_VERSION,
            conversation_id: format!("conv-{}", &head[..4]),
            head: head.into(),
            run_id: "run-1".into(),
            file_name: "conversation.json".into(),
            packing: Packing::File,
        },
        max_bytes: 1 << 20,
    };
    seal_file(&req, &conv, &out).unwrap();
    let blob = std::fs::read(&out).unwrap();
    if text.len() >= 8 {
        assert!(
            !blob.windows(text.len()).any(|w| w == text.as_bytes()),
            "no plaintext in the blob"
        );
    }
    store
        .put(name, BlobSource::Bytes(&blob), producer(head))
        .unwrap();
    blob_id(&blob)
}

/// Whose blobs the local store believes (`trust local=#true`).
struct TrustPolicy {
    local: bool,
}

struct Req<'a> {
    req: RestoreRequest<'a>,
    trust: &'a TrustPolicy,
}

/// A restore of the review `posted` names: its head and its blob id.
fn request<'a>(
    b: &'a Binding,
    posted: Option<(&'a str, &'a str)>,
    trust: &'a TrustPolicy,
) -> Req<'a> {
    let req = RestoreRequest {
        secret: KEY,
        min_bytes: 32,
        binding: b,
        max_bytes: 1 << 20,
        max_tries: 10,
        posted_head: posted.map(|p| p.0),
        posted_conversation: posted.map(|p| p.1),
        require_posted_head: true,
    };
    Req { req, trust }
}

fn run(store: &LocalStore, name: &StoreName, req: &Req<'_>) -> (RestoreOutcome, Vec<String>) {
    let store = reviewflow_stdlib::kinds::store_local::Local::new(store.clone(), req.trust.local);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut lines = Vec::new();
    let out = runtime.block_on(restore(&store, name, &req.req, &mut |l| lines.push(l)));
    (out, lines)
}

fn setup() -> (tempfile::TempDir, LocalStore, StoreName) {
    let dir = tempfile::tempdir().unwrap();
    let store = LocalStore::new(dir.path().join("store"));
    (dir, store, StoreName::new("review-branch-x").unwrap())
}

#[test]
fn restores_the_conversation_of_the_posted_review() {
    let (dir, store, name) = setup();
    let b = binding("7");
    keep(
        &store,
        &name,
        dir.path(),
        &head('a'),
        "older conversation",
        KEY,
        &b,
    );
    let posted = keep(
        &store,
        &name,
        dir.path(),
        &head('b'),
        "posted conversation",
        KEY,
        &b,
    );
    keep(
        &store,
        &name,
        dir.path(),
        &head('c'),
        "newer, never posted",
        KEY,
        &b,
    );
    let trust = TrustPolicy { local: true };
    let posted_head = head('b');
    let (out, lines) = run(
        &store,
        &name,
        &request(&b, Some((&posted_head, &posted)), &trust),
    );
    match out {
        RestoreOutcome::Restored {
            header,
            conversation,
            ..
        } => {
            assert_eq!(conversation, b"posted conversation");
            assert_eq!(header.head, head('b'));
        }
        RestoreOutcome::Fresh { reason } => panic!("fresh: {reason}"),
    }
    assert_eq!(
        lines.len(),
        1,
        "the newer blob was skipped with a reason: {lines:?}"
    );
    assert!(lines[0].contains("not the blob the posted review names"));
}

/// Two reviews of the same head each kept a blob; the second was posted. The first's blob,
/// copied in again as the newest entry, is genuine (it opens, its head is the posted head) but
/// is not the blob the posted review names: it is skipped and the posted one restored.
#[test]
fn a_genuine_blob_of_the_same_head_planted_as_newest_is_skipped() {
    let (dir, store, name) = setup();
    let b = binding("7");
    keep(
        &store,
        &name,
        dir.path(),
        &head('b'),
        "first review of b",
        KEY,
        &b,
    );
    let first = store.list(&name).unwrap().remove(0);
    let first_bytes = store.get(&first, 1 << 20).unwrap();
    let posted = keep(
        &store,
        &name,
        dir.path(),
        &head('b'),
        "second review of b",
        KEY,
        &b,
    );
    store
        .put(&name, BlobSource::Bytes(&first_bytes), producer(&head('b')))
        .unwrap();
    let trust = TrustPolicy { local: true };
    let posted_head = head('b');
    let (out, lines) = run(
        &store,
        &name,
        &request(&b, Some((&posted_head, &posted)), &trust),
    );
    let RestoreOutcome::Restored { conversation, .. } = out else {
        panic!("fresh: {lines:?}")
    };
    assert_eq!(conversation, b"second review of b");
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].ends_with(": it is not the blob the posted review names"),
        "{lines:?}"
    );
}

#[test]
fn a_posted_review_that_kept_no_conversation_means_fresh() {
    let (dir, store, name) = setup();
    let b = binding("7");
    keep(&store, &name, dir.path(), &head('a'), "x", KEY, &b);
    let trust = TrustPolicy { local: true };
    let posted_head = head('a');
    let mut req = request(&b, Some((&posted_head, "unused")), &trust);
    req.req.posted_conversation = None;
    let (out, lines) = run(&store, &name, &req);
    let RestoreOutcome::Fresh { reason } = out else {
        panic!("restored a conversation the posted review did not keep")
    };
    assert_eq!(reason, "the posted review kept no conversation");
    assert!(lines.is_empty(), "nothing was fetched: {lines:?}");
}

/// A record written before blob ids named the local entry id: that is not a digest, so nothing
/// is restored on its word.
#[test]
fn a_posted_conversation_that_is_not_a_blob_id_means_fresh() {
    let (dir, store, name) = setup();
    let b = binding("7");
    keep(&store, &name, dir.path(), &head('a'), "x", KEY, &b);
    let entry = store.list(&name).unwrap().remove(0).id.to_string();
    let trust = TrustPolicy { local: true };
    let posted_head = head('a');
    let (out, _) = run(
        &store,
        &name,
        &request(&b, Some((&posted_head, &entry)), &trust),
    );
    let RestoreOutcome::Fresh { reason } = out else {
        panic!("restored by an entry id")
    };
    assert!(
        reason.contains("not by the digest of its blob (`blob-<sha-256>`)"),
        "{reason}"
    );
}

#[test]
fn a_tombstone_stops_the_search() {
    let (dir, store, name) = setup();
    let b = binding("7");
    let posted = keep(
        &store,
        &name,
        dir.path(),
        &head('a'),
        "old conversation",
        KEY,
        &b,
    );
    seal_tombstone(&store, &name, producer(&head('b'))).unwrap();
    let trust = TrustPolicy { local: true };
    let posted_head = head('a');
    let (out, _) = run(
        &store,
        &name,
        &request(&b, Some((&posted_head, &posted)), &trust),
    );
    let RestoreOutcome::Fresh { reason } = out else {
        panic!("an older conversation was resumed")
    };
    assert!(reason.contains("was not kept"), "{reason}");
}

#[test]
fn wrong_key_other_binding_and_untrusted_producers_give_a_fresh_review() {
    let (dir, store, name) = setup();
    let other_key = keep(
        &store,
        &name,
        dir.path(),
        &head('a'),
        "sealed with another key",
        OTHER_KEY,
        &binding("7"),
    );
    let other_change = keep(
        &store,
        &name,
        dir.path(),
        &head('a'),
        "sealed for another change",
        KEY,
        &binding("8"),
    );
    let trust = TrustPolicy { local: true };
    let b = binding("7");
    let posted_head = head('a');
    // Each is the blob the posted review names (as a forged record could say): it still has to
    // open with this key and binding.
    for posted in [&other_key, &other_change] {
        let (out, lines) = run(
            &store,
            &name,
            &request(&b, Some((&posted_head, posted)), &trust),
        );
        assert!(matches!(out, RestoreOutcome::Fresh { .. }));
        assert_eq!(
            lines.iter().filter(|l| l.contains("does not open")).count(),
            1,
            "{lines:?}"
        );
    }
    let untrusting = TrustPolicy { local: false };
    let (out, lines) = run(
        &store,
        &name,
        &request(&b, Some((&posted_head, &other_change)), &untrusting),
    );
    // Untrusted blobs are counted in the reason, never narrated one by one.
    assert!(lines.is_empty(), "{lines:?}");
    let RestoreOutcome::Fresh { reason } = out else {
        unreachable!()
    };
    assert!(
        reason.contains("2 blobs from untrusted producers skipped"),
        "{reason}"
    );
}

#[test]
fn no_posted_review_means_fresh() {
    let (dir, store, name) = setup();
    let b = binding("7");
    keep(&store, &name, dir.path(), &head('a'), "x", KEY, &b);
    let trust = TrustPolicy { local: true };
    let (out, _) = run(&store, &name, &request(&b, None, &trust));
    let RestoreOutcome::Fresh { reason } = out else {
        panic!()
    };
    assert!(reason.contains("no posted review"), "{reason}");
}

#[test]
fn tries_are_capped_over_trusted_blobs() {
    let (dir, store, name) = setup();
    let b = binding("7");
    let posted = keep(
        &store,
        &name,
        dir.path(),
        &head('a'),
        "the posted one",
        KEY,
        &b,
    );
    for _ in 0..3 {
        keep(&store, &name, dir.path(), &head('f'), "flood", KEY, &b);
    }
    let trust = TrustPolicy { local: true };
    let posted_head = head('a');
    let mut req = request(&b, Some((&posted_head, &posted)), &trust);
    req.req.max_tries = 2;
    let (out, _) = run(&store, &name, &req);
    assert!(matches!(out, RestoreOutcome::Fresh { .. }));
    req.req.max_tries = 4;
    let (out, _) = run(&store, &name, &req);
    assert!(matches!(out, RestoreOutcome::Restored { .. }));
}

#[test]
fn a_short_key_is_refused_when_sealing() {
    let dir = tempfile::tempdir().unwrap();
    let conv = dir.path().join("c");
    std::fs::write(&conv, "x").unwrap();
    let b = binding("7");
    let req = SealRequest {
        secret: b"short",
        min_bytes: 32,
        binding: &b,
        header: BundleHeader {
            version: BUNDLE_VERSION,
            conversation_id: "c".into(),
            head: head('a'),
            run_id: "r".into(),
            file_name: "c".into(),
            packing: Packing::File,
        },
        max_bytes: 100,
    };
    let err = seal_file(&req, &conv, &dir.path().join("out")).unwrap_err();
    assert!(
        !err.to_string().contains("short"),
        "the secret never appears: {err}"
    );
    assert!(!dir.path().join("out").exists());
}

/// Untrusted entries are counted, never narrated: when the posted conversation is restored
/// past them, one status line gives their number.
#[test]
fn untrusted_entries_passed_on_the_way_to_a_restore_are_counted() {
    let (dir, store, name) = setup();
    let b = binding("7");
    let posted_head = head('a');
    let posted = keep(
        &store,
        &name,
        dir.path(),
        &posted_head,
        "posted conversation",
        KEY,
        &b,
    );
    // Two newer entries whose producer the local store does not trust.
    for text in [b"planted one".as_slice(), b"planted two".as_slice()] {
        let mut foreign = producer(&posted_head);
        foreign.insert("forge".into(), "github".into());
        store.put(&name, BlobSource::Bytes(text), foreign).unwrap();
    }
    let trust = TrustPolicy { local: true };
    let (out, lines) = run(
        &store,
        &name,
        &request(&b, Some((&posted_head, &posted)), &trust),
    );
    assert!(matches!(out, RestoreOutcome::Restored { .. }), "{lines:?}");
    assert_eq!(
        lines
            .iter()
            .filter(|l| l.contains("2 blobs from untrusted producers skipped"))
            .count(),
        1,
        "{lines:?}"
    );
}

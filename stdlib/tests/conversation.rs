//! Sealing a conversation into the local store and restoring the one the posted review names.

use std::path::Path;

use reviewflow_stdlib::conversation::{
    BUNDLE_VERSION, BundleHeader, RestoreOutcome, RestoreRequest, SealRequest, restore, seal_file,
    seal_tombstone,
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

/// Seals `text` as the conversation of the review of `head` and keeps it.
fn keep(
    store: &LocalStore,
    name: &StoreName,
    dir: &Path,
    head: &str,
    text: &str,
    key: &[u8],
    b: &Binding,
) {
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
}

/// Whose blobs the local store believes (`trust local=#true`).
struct TrustPolicy {
    local: bool,
}

struct Req<'a> {
    req: RestoreRequest<'a>,
    trust: &'a TrustPolicy,
}

fn request<'a>(b: &'a Binding, posted: Option<&'a str>, trust: &'a TrustPolicy) -> Req<'a> {
    let req = RestoreRequest {
        secret: KEY,
        min_bytes: 32,
        binding: b,
        max_bytes: 1 << 20,
        max_tries: 10,
        posted_head: posted,
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
    keep(
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
    let posted = head('b');
    let (out, lines) = run(&store, &name, &request(&b, Some(&posted), &trust));
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
    assert!(lines[0].contains("not of the posted review"));
}

#[test]
fn a_tombstone_stops_the_search() {
    let (dir, store, name) = setup();
    let b = binding("7");
    keep(
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
    let posted = head('a');
    let (out, _) = run(&store, &name, &request(&b, Some(&posted), &trust));
    let RestoreOutcome::Fresh { reason } = out else {
        panic!("an older conversation was resumed")
    };
    assert!(reason.contains("was not kept"), "{reason}");
}

#[test]
fn wrong_key_other_binding_and_untrusted_producers_give_a_fresh_review() {
    let (dir, store, name) = setup();
    keep(
        &store,
        &name,
        dir.path(),
        &head('a'),
        "sealed with another key",
        OTHER_KEY,
        &binding("7"),
    );
    keep(
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
    let posted = head('a');
    let (out, lines) = run(&store, &name, &request(&b, Some(&posted), &trust));
    assert!(matches!(out, RestoreOutcome::Fresh { .. }));
    assert_eq!(
        lines.iter().filter(|l| l.contains("does not open")).count(),
        2,
        "{lines:?}"
    );
    let untrusting = TrustPolicy { local: false };
    let (out, lines) = run(&store, &name, &request(&b, Some(&posted), &untrusting));
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
    keep(
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
    let posted = head('a');
    let mut req = request(&b, Some(&posted), &trust);
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

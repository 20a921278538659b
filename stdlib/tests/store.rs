//! The local store: put, list, get, tombstones, retention, concurrency and corruption.

// Test helpers unwrap as the tests do (clippy's allow-unwrap-in-tests covers only the
// `#[test]` functions themselves).
#![allow(clippy::unwrap_used)]

use std::collections::HashSet;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, SystemTime};

use reviewflow_stdlib::store::{
    BlobSource, EntryKind, LocalStore, Producer, STALE_AFTER, StoreError, StoreName,
};

fn name(s: &str) -> StoreName {
    StoreName::new(s).unwrap()
}

fn producer(run: &str) -> Producer {
    Producer::from([
        ("run_id".to_owned(), run.to_owned()),
        ("event".to_owned(), "local".to_owned()),
    ])
}

fn store() -> (tempfile::TempDir, LocalStore) {
    let dir = tempfile::tempdir().unwrap();
    let store = LocalStore::new(dir.path().join("store"));
    (dir, store)
}

fn files(dir: &Path) -> Vec<String> {
    let mut names: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    names
}

#[test]
fn put_list_get_round_trip() {
    let (_tmp, store) = store();
    let n = name("review-7-api");
    let entry = store
        .put(&n, BlobSource::Bytes(b"sealed bytes"), producer("1"))
        .unwrap();
    assert_eq!(entry.kind, EntryKind::Blob);
    assert_eq!(entry.size, 12);
    assert_eq!(entry.sha256.len(), 64);

    let listed = store.list(&n).unwrap();
    assert_eq!(listed, vec![entry.clone()]);
    assert_eq!(listed[0].producer["run_id"], "1");
    assert_eq!(store.get(&listed[0], 1024).unwrap(), b"sealed bytes");
}

#[test]
fn an_unknown_name_lists_nothing() {
    let (_tmp, store) = store();
    assert!(store.list(&name("never-written")).unwrap().is_empty());
}

#[test]
fn names_are_kept_apart() {
    let (_tmp, store) = store();
    store
        .put(&name("a"), BlobSource::Bytes(b"1"), producer("1"))
        .unwrap();
    store
        .put(&name("b"), BlobSource::Bytes(b"2"), producer("2"))
        .unwrap();
    let a = store.list(&name("a")).unwrap();
    assert_eq!(a.len(), 1);
    assert_eq!(store.get(&a[0], 10).unwrap(), b"1");
}

#[test]
fn list_is_newest_first() {
    let (_tmp, store) = store();
    let n = name("review-1-x");
    let ids: Vec<_> = (0..5)
        .map(|i| {
            store
                .put(
                    &n,
                    BlobSource::Bytes(format!("{i}").as_bytes()),
                    producer(&i.to_string()),
                )
                .unwrap()
                .id
        })
        .collect();
    let listed: Vec<_> = store.list(&n).unwrap().into_iter().map(|e| e.id).collect();
    let mut expected = ids;
    expected.reverse();
    assert_eq!(listed, expected);
}

#[test]
fn a_file_is_moved_in() {
    let (tmp, store) = store();
    let source = tmp.path().join("sealed.bin");
    std::fs::write(&source, b"from a file").unwrap();
    let n = name("review-2-x");
    let entry = store
        .put(&n, BlobSource::MoveFile(&source), producer("1"))
        .unwrap();
    assert!(!source.exists(), "the source is moved, not copied");
    assert_eq!(entry.size, 11);
    assert_eq!(store.get(&entry, 100).unwrap(), b"from a file");
    // Same digest as putting the bytes directly.
    let direct = store
        .put(&n, BlobSource::Bytes(b"from a file"), producer("2"))
        .unwrap();
    assert_eq!(direct.sha256, entry.sha256);
}

#[test]
fn only_regular_files_are_moved_in() {
    let (tmp, store) = store();
    let err = store
        .put(&name("x"), BlobSource::MoveFile(tmp.path()), producer("1"))
        .unwrap_err();
    assert!(matches!(err, StoreError::NotAFile { .. }), "{err}");
}

#[test]
fn tombstone_is_listed_and_has_no_blob() {
    let (_tmp, store) = store();
    let n = name("review-3-x");
    store
        .put(&n, BlobSource::Bytes(b"old conversation"), producer("1"))
        .unwrap();
    let tomb = store.put_tombstone(&n, producer("2")).unwrap();
    let listed = store.list(&n).unwrap();
    assert_eq!(listed.len(), 2);
    assert_eq!(listed[0], tomb);
    assert!(listed[0].is_tombstone());
    assert_eq!(listed[0].size, 0);
    let err = store.get(&listed[0], 100).unwrap_err();
    assert!(matches!(err, StoreError::Tombstone { .. }), "{err}");
}

#[test]
fn oversize_is_refused_before_reading() {
    let (_tmp, store) = store();
    let n = name("review-4-x");
    let entry = store
        .put(&n, BlobSource::Bytes(&[7u8; 100]), producer("1"))
        .unwrap();
    // Remove the blob: a refusal that needed to read it would report it gone instead.
    let blob = store
        .root()
        .join("review-4-x")
        .join(format!("{}.blob", entry.id));
    std::fs::remove_file(blob).unwrap();
    let err = store.get(&entry, 99).unwrap_err();
    assert!(
        matches!(
            err,
            StoreError::TooLarge {
                size: 100,
                max_bytes: 99,
                ..
            }
        ),
        "{err}"
    );
    assert!(matches!(
        store.get(&entry, 100).unwrap_err(),
        StoreError::NotFound { .. }
    ));
}

#[test]
fn a_blob_grown_on_disk_is_refused_by_its_real_size() {
    let (_tmp, store) = store();
    let n = name("review-4b-x");
    let entry = store
        .put(&n, BlobSource::Bytes(b"small"), producer("1"))
        .unwrap();
    let blob = store
        .root()
        .join("review-4b-x")
        .join(format!("{}.blob", entry.id));
    std::fs::write(&blob, vec![0u8; 4096]).unwrap();
    let err = store.get(&entry, 1000).unwrap_err();
    assert!(
        matches!(err, StoreError::TooLarge { size: 4096, .. }),
        "{err}"
    );
    let err = store.get(&entry, 10_000).unwrap_err();
    assert!(
        matches!(
            err,
            StoreError::SizeMismatch {
                expected: 5,
                actual: 4096,
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn a_corrupt_blob_is_an_error() {
    let (_tmp, store) = store();
    let n = name("review-5-x");
    let entry = store
        .put(&n, BlobSource::Bytes(b"abcdef"), producer("1"))
        .unwrap();
    let blob = store
        .root()
        .join("review-5-x")
        .join(format!("{}.blob", entry.id));
    std::fs::write(&blob, b"abcdeX").unwrap();
    let err = store.get(&entry, 100).unwrap_err();
    assert!(matches!(err, StoreError::DigestMismatch { .. }), "{err}");
}

#[test]
fn corrupt_metadata_is_skipped_with_its_reason() {
    let (_tmp, store) = store();
    let n = name("review-6-x");
    let older = store
        .put(&n, BlobSource::Bytes(b"kept"), producer("1"))
        .unwrap();
    let entry = store.put_tombstone(&n, producer("2")).unwrap();
    let meta = store
        .root()
        .join("review-6-x")
        .join(format!("{}.json", entry.id));
    std::fs::write(&meta, b"{ not json").unwrap();
    let listing = store.list_checked(&n).unwrap();
    assert_eq!(listing.entries, vec![older.clone()]);
    assert_eq!(listing.skipped.len(), 1);
    assert_eq!(listing.skipped[0].id, entry.id.to_string());
    assert_eq!(listing.skipped[0].path, meta);
    // Writes and retention go on; the unreadable file is left alone and reported.
    store
        .put(&n, BlobSource::Bytes(b"new"), producer("3"))
        .unwrap();
    let report = store.retain(&n, Some(1), None).unwrap();
    assert_eq!(report.removed, vec![older.id]);
    assert_eq!(report.skipped.len(), 1);
    assert!(meta.exists());
}

#[test]
fn a_fifo_or_link_in_the_store_is_refused_without_waiting() {
    let (_tmp, store) = store();
    let n = name("review-6b-x");
    let entry = store
        .put(&n, BlobSource::Bytes(b"abc"), producer("1"))
        .unwrap();
    let blob = store
        .root()
        .join("review-6b-x")
        .join(format!("{}.blob", entry.id));
    std::fs::remove_file(&blob).unwrap();
    let made = std::process::Command::new("mkfifo")
        .arg(&blob)
        .status()
        .unwrap();
    assert!(made.success());
    let err = store.get(&entry, 100).unwrap_err();
    assert!(err.to_string().contains("not a regular file"), "{err}");
    std::fs::remove_file(&blob).unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("b"), b"abc").unwrap();
    std::os::unix::fs::symlink(outside.path().join("b"), &blob).unwrap();
    let err = store.get(&entry, 100).unwrap_err();
    assert!(err.to_string().contains("symbolic link"), "{err}");
}

#[test]
fn metadata_moved_to_another_name_is_skipped() {
    let (_tmp, store) = store();
    let entry = store.put_tombstone(&name("a"), producer("1")).unwrap();
    let from = store.root().join("a").join(format!("{}.json", entry.id));
    std::fs::create_dir_all(store.root().join("b")).unwrap();
    std::fs::copy(
        &from,
        store.root().join("b").join(format!("{}.json", entry.id)),
    )
    .unwrap();
    let listing = store.list_checked(&name("b")).unwrap();
    assert!(listing.entries.is_empty());
    assert!(
        listing.skipped[0]
            .reason
            .contains("does not match its place"),
        "{:?}",
        listing.skipped
    );
}

#[test]
fn temp_and_foreign_files_are_not_listed() {
    let (_tmp, store) = store();
    let n = name("review-8-x");
    let entry = store
        .put(&n, BlobSource::Bytes(b"x"), producer("1"))
        .unwrap();
    let dir = store.root().join("review-8-x");
    std::fs::write(dir.join(format!(".tmp-{}.json", entry.id)), b"partial").unwrap();
    std::fs::write(dir.join("notes.json"), b"{}").unwrap();
    assert_eq!(store.list(&n).unwrap(), vec![entry]);
}

#[test]
fn bad_names_are_refused() {
    for bad in [
        "",
        "../escape",
        "a/b",
        ".hidden",
        "-opt",
        "with space",
        &"x".repeat(129),
    ] {
        let err = StoreName::new(bad).unwrap_err();
        assert!(matches!(err, StoreError::InvalidName { .. }), "{bad:?}");
    }
    assert!(serde_json::from_str::<StoreName>("\"../x\"").is_err());
}

#[test]
fn retain_keeps_the_newest() {
    let (_tmp, store) = store();
    let n = name("review-9-x");
    for i in 0..5 {
        store
            .put(&n, BlobSource::Bytes(&[i]), producer(&i.to_string()))
            .unwrap();
    }
    store.put_tombstone(&n, producer("5")).unwrap();
    let before = store.list(&n).unwrap();
    let report = store.retain(&n, Some(2), None).unwrap();
    let after = store.list(&n).unwrap();
    assert_eq!(after, before[..2].to_vec());
    assert_eq!(
        report.removed,
        before[2..]
            .iter()
            .rev()
            .map(|e| e.id.clone())
            .collect::<Vec<_>>(),
        "oldest first"
    );
    // The removed blobs are gone from disk too: 1 blob + 2 metadata files remain.
    assert_eq!(files(&store.root().join("review-9-x")).len(), 3);
}

#[test]
fn retain_by_age_uses_the_given_clock() {
    let (_tmp, store) = store();
    let n = name("review-10-x");
    store
        .put(&n, BlobSource::Bytes(b"a"), producer("1"))
        .unwrap();
    store
        .put(&n, BlobSource::Bytes(b"b"), producer("2"))
        .unwrap();
    let now = SystemTime::now();
    let kept = store
        .retain_at(&n, None, Some(Duration::from_secs(3600)), now)
        .unwrap();
    assert!(kept.removed.is_empty());
    assert_eq!(store.list(&n).unwrap().len(), 2);
    let later = now + Duration::from_secs(7200);
    let report = store
        .retain_at(&n, None, Some(Duration::from_secs(3600)), later)
        .unwrap();
    assert_eq!(report.removed.len(), 2);
    assert!(store.list(&n).unwrap().is_empty());
}

#[test]
fn retain_with_no_limit_keeps_every_entry() {
    let (_tmp, store) = store();
    let n = name("review-11-x");
    store
        .put(&n, BlobSource::Bytes(b"a"), producer("1"))
        .unwrap();
    assert!(store.retain(&n, None, None).unwrap().removed.is_empty());
    assert_eq!(store.list(&n).unwrap().len(), 1);
}

#[test]
fn retain_removes_stale_temp_files_and_orphan_blobs_only() {
    let (_tmp, store) = store();
    let n = name("review-12-x");
    let entry = store
        .put(&n, BlobSource::Bytes(b"a"), producer("1"))
        .unwrap();
    let dir = store.root().join("review-12-x");
    let orphan_id = entry.id.as_str().replacen('0', "1", 1);
    let old = SystemTime::now() - STALE_AFTER - Duration::from_secs(60);
    for (file, stale) in [
        (".tmp-old", true),
        (".tmp-young", false),
        (&*format!("{orphan_id}.blob"), true),
    ] {
        let path = dir.join(file);
        std::fs::write(&path, b"x").unwrap();
        if stale {
            std::fs::File::options()
                .write(true)
                .open(&path)
                .unwrap()
                .set_modified(old)
                .unwrap();
        }
    }
    // The live entry's blob is old too, but it has metadata: it stays.
    let live_blob = dir.join(format!("{}.blob", entry.id));
    std::fs::File::options()
        .write(true)
        .open(&live_blob)
        .unwrap()
        .set_modified(old)
        .unwrap();

    let report = store.retain(&n, None, None).unwrap();
    assert_eq!(report.stale_files, 2);
    assert_eq!(
        files(&dir),
        vec![
            ".tmp-young".to_owned(),
            format!("{}.blob", entry.id),
            format!("{}.json", entry.id)
        ]
    );
    assert_eq!(store.get(&entry, 10).unwrap(), b"a");
}

#[test]
fn concurrent_writers_lose_nothing() {
    let (_tmp, store) = store();
    let n = name("review-13-x");
    let writers: Vec<_> = (0..2)
        .map(|w| {
            // Each writer has its own handle, as two runs would.
            let store = LocalStore::new(store.root());
            let n = n.clone();
            std::thread::spawn(move || {
                (0..50)
                    .map(|i| {
                        let body = format!("writer {w} blob {i} ").repeat(100 + i);
                        store
                            .put(
                                &n,
                                BlobSource::Bytes(body.as_bytes()),
                                producer(&format!("{w}-{i}")),
                            )
                            .unwrap()
                            .id
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let written: HashSet<_> = writers
        .into_iter()
        .flat_map(|h| h.join().unwrap())
        .collect();
    assert_eq!(written.len(), 100, "ids are unique");

    let listed = store.list(&n).unwrap();
    assert_eq!(listed.len(), 100);
    assert_eq!(
        listed.iter().map(|e| e.id.clone()).collect::<HashSet<_>>(),
        written
    );
    for pair in listed.windows(2) {
        assert!((pair[0].created_ns, &pair[0].id) > (pair[1].created_ns, &pair[1].id));
    }
    for entry in &listed {
        let bytes = store.get(entry, 1 << 20).unwrap();
        let run = &entry.producer["run_id"];
        let (w, i) = run.split_once('-').unwrap();
        assert!(bytes.starts_with(format!("writer {w} blob {i} ").as_bytes()));
    }
    // No temp file is left behind.
    assert!(
        files(&store.root().join("review-13-x"))
            .iter()
            .all(|f| !f.starts_with('.'))
    );
}

#[test]
fn a_reader_during_writes_never_sees_a_partial_entry() {
    let (_tmp, store) = store();
    let n = name("review-14-x");
    let writer = {
        let store = store.clone();
        let n = n.clone();
        std::thread::spawn(move || {
            for i in 0..40 {
                store
                    .put(
                        &n,
                        BlobSource::Bytes(&vec![i as u8; 64 * 1024]),
                        producer(&i.to_string()),
                    )
                    .unwrap();
            }
        })
    };
    while !writer.is_finished() {
        for entry in store.list(&n).unwrap() {
            let bytes = store.get(&entry, 1 << 20).unwrap();
            assert_eq!(bytes.len(), 64 * 1024);
        }
    }
    writer.join().unwrap();
    assert_eq!(store.list(&n).unwrap().len(), 40);
}

#[test]
fn default_folder_is_in_the_repository() {
    let store = LocalStore::in_repo(Path::new("/repo"));
    assert_eq!(store.root(), Path::new("/repo/.reviewflow/store"));
}

/// Set in the children of `concurrent_processes_lose_nothing`: the store folder to write to.
const CHILD_ENV: &str = "REVIEWFLOW_TEST_STORE_CHILD";

/// The writer each child of `concurrent_processes_lose_nothing` is: the test itself, run again
/// with [`CHILD_ENV`] set, so no test exists only to be a child (the count stays honest).
fn child_writer(root: std::ffi::OsString) {
    let store = LocalStore::new(root);
    for i in 0..50 {
        let body = format!("process {} blob {i}", std::process::id());
        store
            .put(
                &name("review-15-x"),
                BlobSource::Bytes(body.as_bytes()),
                producer(&i.to_string()),
            )
            .unwrap();
    }
}

#[test]
fn concurrent_processes_lose_nothing() {
    if let Some(root) = std::env::var_os(CHILD_ENV) {
        return child_writer(root);
    }
    let (_tmp, store) = store();
    let exe = std::env::current_exe().unwrap();
    let children: Vec<_> = (0..2)
        .map(|_| {
            Command::new(&exe)
                .args([
                    "--exact",
                    "concurrent_processes_lose_nothing",
                    "--test-threads=1",
                    "--quiet",
                ])
                .env(CHILD_ENV, store.root())
                .stdout(std::process::Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    for mut child in children {
        assert!(child.wait().unwrap().success());
    }
    let listed = store.list(&name("review-15-x")).unwrap();
    assert_eq!(listed.len(), 100);
    let pids: HashSet<_> = listed
        .iter()
        .map(|e| {
            let bytes = store.get(e, 1024).unwrap();
            String::from_utf8(bytes)
                .unwrap()
                .split(' ')
                .nth(1)
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(pids.len(), 2, "both processes wrote");
}

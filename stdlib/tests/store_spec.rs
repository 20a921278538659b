//! docs/sealed-store.md and docs/sealed-envelope.md, taken as a specification: a second
//! implementation written from the two pages alone (its own HKDF, AES-GCM, bundle and metadata
//! code; nothing from `reviewflow_stdlib` but the stages under test) writes an entry that
//! reviewflow's restore opens, and reads the entry reviewflow's seal and store wrote.

// Test helpers unwrap as the tests do (clippy's allow-unwrap-in-tests covers only the
// `#[test]` functions themselves).
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::path::Path;

use aes_gcm::aead::{AeadInOut, Nonce, Tag};
use aes_gcm::{Aes256Gcm, KeyInit};
use hkdf::Hkdf;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use reviewflow_stdlib::conversation::{
    BUNDLE_VERSION, BundleHeader, Packing, RestoreOutcome, RestoreRequest, SealRequest, restore,
    seal_file,
};
use reviewflow_stdlib::envelope::Binding;
use reviewflow_stdlib::kinds::store_local::Local;
use reviewflow_stdlib::store::{BlobSource, LocalStore, Producer, StoreName};

const SECRET: &[u8] = b"an-ascii-secret-of-more-than-32-bytes-used-raw";
const HEAD: &str = "1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d";
const BINDING: [(&str, &str); 3] = [("repo", "octo/widgets"), ("pr", "7"), ("project", "api")];

// ---- the second implementation, from the documents ----

fn key() -> Aes256Gcm {
    let mut okm = [0u8; 32];
    Hkdf::<Sha256>::new(Some(b"reviewflow/sealed-envelope"), SECRET)
        .expand(b"reviewflow/sealed-envelope/v1/aes-256-gcm", &mut okm)
        .unwrap();
    Aes256Gcm::new_from_slice(&okm).unwrap()
}

fn aad() -> Vec<u8> {
    let mut fields: Vec<(&str, &str)> = BINDING.to_vec();
    fields.sort();
    let mut aad = b"RFSE\x01".to_vec();
    aad.extend_from_slice(&(fields.len() as u32).to_be_bytes());
    for (name, value) in fields {
        for part in [name, value] {
            aad.extend_from_slice(&(part.len() as u32).to_be_bytes());
            aad.extend_from_slice(part.as_bytes());
        }
    }
    aad
}

fn spec_seal(plaintext: &[u8]) -> Vec<u8> {
    let nonce = [7u8; 12];
    let mut body = plaintext.to_vec();
    let tag = key()
        .encrypt_inout_detached(
            &Nonce::<Aes256Gcm>::from(nonce),
            &aad(),
            body.as_mut_slice().into(),
        )
        .unwrap();
    let mut blob = b"RFSE\x01".to_vec();
    blob.extend_from_slice(&nonce);
    blob.extend_from_slice(&body);
    blob.extend_from_slice(&tag);
    blob
}

fn spec_open(blob: &[u8]) -> Vec<u8> {
    assert_eq!(&blob[..5], b"RFSE\x01");
    let nonce = Nonce::<Aes256Gcm>::try_from(&blob[5..17]).unwrap();
    let mut body = blob[17..blob.len() - 16].to_vec();
    let tag = Tag::<Aes256Gcm>::try_from(&blob[blob.len() - 16..]).unwrap();
    key()
        .decrypt_inout_detached(&nonce, &aad(), body.as_mut_slice().into(), &tag)
        .unwrap();
    body
}

fn spec_bundle(conversation: &[u8], file_name: &str) -> Vec<u8> {
    let header = json!({
        "file_name": file_name,
        "run_id": "20261130T000000Z-00c0ffee",
        "head": HEAD,
        "conversation_id": "conv-0011223344556677",
        "packing": "file",
        "version": 1,
    })
    .to_string();
    let mut out = (header.len() as u32).to_be_bytes().to_vec();
    out.extend_from_slice(header.as_bytes());
    out.extend_from_slice(conversation);
    out
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Writes a blob entry as the "local" section says: blob first, then its metadata.
fn spec_put(root: &Path, name: &str, blob: &[u8], created_ns: u64) -> String {
    let dir = root.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    let id = format!("{created_ns:020}-0000abcd-00000001-deadbeef");
    std::fs::write(dir.join(format!("{id}.blob")), blob).unwrap();
    let meta = json!({
        "format": 1,
        "id": id,
        "name": name,
        "kind": "blob",
        "created_ns": created_ns,
        "size": blob.len(),
        "sha256": hex(&Sha256::digest(blob)),
        "producer": {"forge": "local", "head": HEAD, "run": "20261130T000000Z-00c0ffee"},
    });
    std::fs::write(dir.join(format!("{id}.json")), meta.to_string()).unwrap();
    id
}

/// Reads the newest entry as the "local" section says; returns its metadata and blob.
fn spec_newest(root: &Path, name: &str) -> (Value, Vec<u8>) {
    let dir = root.join(name);
    let mut metas: Vec<Value> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .map(|p| serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap())
        .collect();
    metas.sort_by_key(|m| {
        (
            m["created_ns"].as_u64().unwrap(),
            m["id"].as_str().unwrap().to_owned(),
        )
    });
    let meta = metas.pop().unwrap();
    let keys: Vec<&str> = meta
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    let mut expected = vec![
        "created_ns",
        "format",
        "id",
        "kind",
        "name",
        "producer",
        "sha256",
        "size",
    ];
    expected.sort_unstable();
    let mut keys_sorted = keys.clone();
    keys_sorted.sort_unstable();
    assert_eq!(keys_sorted, expected, "exactly the documented members");
    let id = meta["id"].as_str().unwrap();
    assert_eq!(id.len(), 47);
    let blob = std::fs::read(dir.join(format!("{id}.blob"))).unwrap();
    assert_eq!(meta["size"].as_u64(), Some(blob.len() as u64));
    assert_eq!(
        meta["sha256"].as_str(),
        Some(hex(&Sha256::digest(&blob)).as_str())
    );
    (meta, blob)
}

// ---- the two directions ----

fn binding() -> Binding {
    Binding::from_pairs(BINDING.iter().copied()).unwrap()
}

#[tokio::test]
async fn reviewflow_restores_what_the_specification_wrote() {
    let tmp = tempfile::tempdir().unwrap();
    let conversation = b"{\"type\":\"user\"}\n{\"type\":\"assistant\"}\n";
    let blob = spec_seal(&spec_bundle(conversation, "session.jsonl"));
    let id = spec_put(tmp.path(), "review-7", &blob, 1_700_000_000_000_000_000);
    // The posted review names the blob by the SHA-256 of its bytes (docs/sealed-store.md).
    let posted = format!("blob-{}", hex(&Sha256::digest(&blob)));

    let store = Local::new(LocalStore::new(tmp.path()), true);
    let name = StoreName::new("review-7").unwrap();
    let req = RestoreRequest {
        secret: SECRET,
        min_bytes: 32,
        binding: &binding(),
        max_bytes: 1 << 20,
        max_tries: 10,
        posted_head: Some(HEAD),
        posted_conversation: Some(&posted),
        require_posted_head: true,
    };
    let mut lines = Vec::new();
    match restore(&store, &name, &req, &mut |l| lines.push(l)).await {
        RestoreOutcome::Restored {
            header,
            conversation: restored,
            entry,
        } => {
            assert_eq!(restored, conversation);
            assert_eq!(header.file_name, "session.jsonl");
            assert_eq!(header.head, HEAD);
            assert_eq!(entry, id);
        }
        RestoreOutcome::Fresh { reason } => panic!("fresh: {reason}; {lines:?}"),
    }
}

#[test]
fn the_specification_reads_what_reviewflow_wrote() {
    let tmp = tempfile::tempdir().unwrap();
    let conversation = tmp.path().join("session.jsonl");
    std::fs::write(&conversation, b"{\"turn\":1}\n").unwrap();
    let header = BundleHeader {
        version: BUNDLE_VERSION,
        conversation_id: "conv-8899aabbccddeeff".into(),
        head: HEAD.into(),
        run_id: "20261130T000000Z-0badf00d".into(),
        file_name: "session.jsonl".into(),
        packing: Packing::File,
    };
    let blob_path = tmp.path().join("sealed.blob");
    let req = SealRequest {
        secret: SECRET,
        min_bytes: 32,
        binding: &binding(),
        header,
        max_bytes: 1 << 20,
    };
    seal_file(&req, &conversation, &blob_path).unwrap();
    let root = tmp.path().join("store");
    let mut producer = Producer::new();
    producer.insert("forge".into(), "local".into());
    producer.insert("head".into(), HEAD.into());
    LocalStore::new(&root)
        .put(
            &StoreName::new("review-7").unwrap(),
            BlobSource::MoveFile(&blob_path),
            producer,
        )
        .unwrap();

    let (meta, blob) = spec_newest(&root, "review-7");
    assert_eq!(meta["kind"], "blob");
    assert_eq!(meta["name"], "review-7");
    assert_eq!(meta["format"], 1);
    let plaintext = spec_open(&blob);
    let len = u32::from_be_bytes(plaintext[..4].try_into().unwrap()) as usize;
    let header: BTreeMap<String, Value> = serde_json::from_slice(&plaintext[4..4 + len]).unwrap();
    assert_eq!(
        header.keys().map(String::as_str).collect::<Vec<_>>(),
        [
            "conversation_id",
            "file_name",
            "head",
            "packing",
            "run_id",
            "version"
        ]
    );
    assert_eq!(header["head"], HEAD);
    assert_eq!(header["packing"], "file");
    assert_eq!(&plaintext[4 + len..], b"{\"turn\":1}\n");
}

/// "A folder conversation": the entries as the page lays them out, parents first, sorted.
fn spec_unpack(mut bytes: &[u8]) -> Vec<(char, String, Vec<u8>)> {
    let mut out = Vec::new();
    while let Some((&kind, rest)) = bytes.split_first() {
        let len = u16::from_be_bytes(rest[..2].try_into().unwrap()) as usize;
        let path = String::from_utf8(rest[2..2 + len].to_vec()).unwrap();
        bytes = &rest[2 + len..];
        let content = if kind == b'f' {
            let size = u64::from_be_bytes(bytes[..8].try_into().unwrap()) as usize;
            let c = bytes[8..8 + size].to_vec();
            bytes = &bytes[8 + size..];
            c
        } else {
            assert_eq!(kind, b'd');
            Vec::new()
        };
        out.push((kind as char, path, content));
    }
    out
}

#[test]
fn a_folder_conversation_is_packed_as_the_page_says() {
    let tmp = tempfile::tempdir().unwrap();
    let folder = tmp.path().join("codex-home");
    std::fs::create_dir_all(folder.join("sessions/2026")).unwrap();
    std::fs::write(folder.join("sessions/2026/rollout.jsonl"), b"{}\n").unwrap();
    std::fs::write(folder.join("a.toml"), b"x=1\n").unwrap();
    let header = BundleHeader {
        version: BUNDLE_VERSION,
        conversation_id: "conv-8899aabbccddeeff".into(),
        head: HEAD.into(),
        run_id: "20261130T000000Z-0badf00d".into(),
        file_name: "codex-home".into(),
        packing: Packing::File,
    };
    let blob_path = tmp.path().join("sealed.blob");
    let req = SealRequest {
        secret: SECRET,
        min_bytes: 32,
        binding: &binding(),
        header,
        max_bytes: 1 << 20,
    };
    seal_file(&req, &folder, &blob_path).unwrap();
    let plaintext = spec_open(&std::fs::read(&blob_path).unwrap());
    let len = u32::from_be_bytes(plaintext[..4].try_into().unwrap()) as usize;
    let header: Value = serde_json::from_slice(&plaintext[4..4 + len]).unwrap();
    assert_eq!(header["packing"], "folder", "seal says what it found");
    assert_eq!(
        spec_unpack(&plaintext[4 + len..]),
        vec![
            ('f', "a.toml".to_owned(), b"x=1\n".to_vec()),
            ('d', "sessions".to_owned(), vec![]),
            ('d', "sessions/2026".to_owned(), vec![]),
            (
                'f',
                "sessions/2026/rollout.jsonl".to_owned(),
                b"{}\n".to_vec()
            ),
        ]
    );
}

//! The sealed envelope from the outside: round trips, every way a blob must refuse to open,
//! the binding's injective encoding, and the published test vectors.

// Test helpers unwrap as the tests do (clippy's allow-unwrap-in-tests covers only the
// `#[test]` functions themselves).
#![allow(clippy::unwrap_used)]

use reviewflow_stdlib::envelope::{
    Binding, EnvelopeError, HEADER_LEN, OVERHEAD, SealKey, TAG_LEN, open_in_place, seal_in_place,
    seal_in_place_with_nonce,
};
use serde_json::Value;

const SECRET: &[u8] = b"0123456789abcdef0123456789abcdef-test-secret";
const MIN: usize = 32;
const CAP: usize = 64 << 20;

fn binding(pairs: &[(&str, &str)]) -> Binding {
    Binding::from_pairs(pairs.iter().copied()).unwrap()
}

fn review() -> Binding {
    binding(&[
        ("repo", "octo-org/widgets"),
        ("pr", "42"),
        ("project", "enroll"),
    ])
}

fn sealed(plaintext: &[u8], binding: &Binding) -> Vec<u8> {
    let mut buf = plaintext.to_vec();
    seal_in_place(SECRET, MIN, binding, &mut buf).unwrap();
    buf
}

/// Opens a copy of `blob`; a failure must leave the buffer empty.
fn open(secret: &[u8], binding: &Binding, blob: &[u8]) -> Result<Vec<u8>, EnvelopeError> {
    let mut buf = blob.to_vec();
    let result = open_in_place(secret, MIN, binding, CAP, &mut buf);
    if result.is_err() {
        assert!(buf.is_empty(), "a failed open left {} bytes", buf.len());
    }
    result.map(|()| buf)
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn binding_of(v: &Value) -> Binding {
    let pairs: Vec<(&str, &str)> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p[0].as_str().unwrap(), p[1].as_str().unwrap()))
        .collect();
    binding(&pairs)
}

#[test]
fn round_trip_of_many_sizes() {
    for len in [0, 1, 15, 16, 17, 255, 4096, 100_003] {
        let plaintext: Vec<u8> = (0..len).map(|i| (i * 31 % 251) as u8).collect();
        let blob = sealed(&plaintext, &review());
        assert_eq!(blob.len(), len + OVERHEAD);
        assert_eq!(open(SECRET, &review(), &blob).unwrap(), plaintext);
    }
}

#[test]
fn the_blob_holds_no_plaintext() {
    let plaintext = b"the reviewer said: the token is sk-ant-0000 and the plan is secret".repeat(4);
    let blob = sealed(&plaintext, &review());
    assert!(
        !blob
            .windows(8)
            .any(|w| plaintext.windows(8).any(|p| p == w))
    );
}

#[test]
fn each_seal_draws_a_fresh_nonce() {
    let a = sealed(b"same", &review());
    let b = sealed(b"same", &review());
    assert_ne!(a[5..HEADER_LEN], b[5..HEADER_LEN]);
    assert_ne!(a, b);
}

#[test]
fn a_derived_key_seals_and_opens_like_the_functions() {
    let key = SealKey::derive(SECRET, MIN).unwrap();
    let mut buf = b"conversation".to_vec();
    key.seal_in_place(&review(), &mut buf).unwrap();
    assert_eq!(open(SECRET, &review(), &buf).unwrap(), b"conversation");
    key.open_in_place(&review(), CAP, &mut buf).unwrap();
    assert_eq!(buf, b"conversation");
    assert_eq!(format!("{key:?}"), "SealKey([redacted])");
}

#[test]
fn a_wrong_key_does_not_open() {
    let blob = sealed(b"conversation", &review());
    let mut other = SECRET.to_vec();
    other[0] ^= 1;
    assert_eq!(
        open(&other, &review(), &blob),
        Err(EnvelopeError::OpenFailed)
    );
    let longer = [SECRET, b"\n"].concat();
    assert_eq!(
        open(&longer, &review(), &blob),
        Err(EnvelopeError::OpenFailed)
    );
}

#[test]
fn another_binding_does_not_open() {
    let blob = sealed(b"conversation", &review());
    let others = [
        binding(&[
            ("repo", "octo-org/gadgets"),
            ("pr", "42"),
            ("project", "enroll"),
        ]),
        binding(&[
            ("repo", "octo-org/widgets"),
            ("pr", "43"),
            ("project", "enroll"),
        ]),
        binding(&[
            ("repo", "octo-org/widgets"),
            ("pr", "42"),
            ("project", "enrol"),
        ]),
        // a field added, a field added with an empty value, each field removed
        binding(&[
            ("repo", "octo-org/widgets"),
            ("pr", "42"),
            ("project", "enroll"),
            ("head", "1a"),
        ]),
        binding(&[
            ("repo", "octo-org/widgets"),
            ("pr", "42"),
            ("project", "enroll"),
            ("x", ""),
        ]),
        binding(&[("pr", "42"), ("project", "enroll")]),
        binding(&[("repo", "octo-org/widgets"), ("project", "enroll")]),
        binding(&[("repo", "octo-org/widgets"), ("pr", "42")]),
        // the same values under another name
        binding(&[
            ("repository", "octo-org/widgets"),
            ("pr", "42"),
            ("project", "enroll"),
        ]),
    ];
    for other in &others {
        assert_eq!(
            open(SECRET, other, &blob),
            Err(EnvelopeError::OpenFailed),
            "{other:?}"
        );
    }
}

#[test]
fn field_order_does_not_matter() {
    let reordered = binding(&[
        ("project", "enroll"),
        ("pr", "42"),
        ("repo", "octo-org/widgets"),
    ]);
    assert_eq!(reordered, review());
    assert_eq!(reordered.encode(), review().encode());
    let blob = sealed(b"conversation", &review());
    assert_eq!(open(SECRET, &reordered, &blob).unwrap(), b"conversation");
}

#[test]
fn one_flipped_byte_anywhere_does_not_open() {
    let blob = sealed(b"a small conversation", &review());
    for pos in 0..blob.len() {
        for mask in [0x01, 0x80, 0xff] {
            let mut altered = blob.clone();
            altered[pos] ^= mask;
            assert!(
                open(SECRET, &review(), &altered).is_err(),
                "byte {pos} ^ {mask:#x} opened"
            );
        }
    }
}

#[test]
fn no_truncation_or_extension_opens() {
    let blob = sealed(b"a small conversation", &review());
    for len in 0..blob.len() {
        let err = open(SECRET, &review(), &blob[..len]).unwrap_err();
        if len < OVERHEAD {
            assert_eq!(err, EnvelopeError::Truncated { len, min: OVERHEAD });
        } else {
            assert_eq!(err, EnvelopeError::OpenFailed, "cut to {len}");
        }
    }
    let longer = [blob.as_slice(), &[0]].concat();
    assert_eq!(
        open(SECRET, &review(), &longer),
        Err(EnvelopeError::OpenFailed)
    );
    // One ciphertext byte removed from the middle.
    let shifted = [&blob[..HEADER_LEN + 1], &blob[HEADER_LEN + 2..]].concat();
    assert_eq!(
        open(SECRET, &review(), &shifted),
        Err(EnvelopeError::OpenFailed)
    );
}

#[test]
fn wrong_magic_and_version_are_named() {
    let blob = sealed(b"conversation", &review());
    let mut bad = blob.clone();
    bad[0] = b'X';
    assert_eq!(open(SECRET, &review(), &bad), Err(EnvelopeError::BadMagic));
    let mut bad = blob;
    bad[4] = 2;
    assert_eq!(
        open(SECRET, &review(), &bad),
        Err(EnvelopeError::UnsupportedVersion {
            found: 2,
            supported: 1
        })
    );
}

#[test]
fn a_short_secret_is_refused_and_never_shown() {
    let short = b"only-31-bytes-of-secret-value!!";
    assert_eq!(short.len(), 31);
    let mut buf = b"conversation".to_vec();
    let err = seal_in_place(short, MIN, &review(), &mut buf).unwrap_err();
    assert_eq!(err, EnvelopeError::SecretTooShort { len: 31, min: 32 });
    assert_eq!(
        buf, b"conversation",
        "a refused seal leaves the plaintext alone"
    );
    let text = format!("{err} {err:?}");
    assert!(text.contains("31") && text.contains("32"), "{text}");
    assert!(!text.contains("only-31"), "{text}");

    let blob = sealed(b"conversation", &review());
    assert_eq!(
        open(short, &review(), &blob),
        Err(EnvelopeError::SecretTooShort { len: 31, min: 32 })
    );
    // The minimum is the caller's: a 31-byte secret seals when 31 is asked for.
    let mut buf = b"conversation".to_vec();
    seal_in_place(short, 31, &review(), &mut buf).unwrap();
}

#[test]
fn the_size_cap_is_checked_before_decrypting() {
    let blob = sealed(&[7u8; 1000], &review());
    let mut buf = blob.clone();
    let err = open_in_place(SECRET, MIN, &review(), blob.len() - 1, &mut buf).unwrap_err();
    assert_eq!(
        err,
        EnvelopeError::BlobTooLarge {
            len: 1033,
            max: 1032
        }
    );
    assert!(err.to_string().contains("1033") && err.to_string().contains("1032"));
    assert!(buf.is_empty());
    let mut buf = blob.clone();
    open_in_place(SECRET, MIN, &review(), blob.len(), &mut buf).unwrap();
    assert_eq!(buf, [7u8; 1000]);
}

#[test]
fn an_empty_binding_is_refused() {
    let mut buf = b"conversation".to_vec();
    assert_eq!(
        seal_in_place(SECRET, MIN, &Binding::new(), &mut buf),
        Err(EnvelopeError::EmptyBinding)
    );
    assert_eq!(buf, b"conversation");
    let blob = sealed(b"conversation", &review());
    assert_eq!(
        open(SECRET, &Binding::new(), &blob),
        Err(EnvelopeError::EmptyBinding)
    );
}

#[test]
fn sealing_and_opening_stay_in_the_callers_allocation() {
    let len = 1 << 16;
    let mut buf = Vec::with_capacity(len + OVERHEAD);
    buf.extend((0..len).map(|i| (i % 256) as u8));
    let before = buf.as_ptr();
    seal_in_place(SECRET, MIN, &review(), &mut buf).unwrap();
    assert_eq!(buf.as_ptr(), before, "seal reallocated");
    open_in_place(SECRET, MIN, &review(), CAP, &mut buf).unwrap();
    assert_eq!(buf.as_ptr(), before, "open reallocated");
    assert_eq!(buf.len(), len);
    assert!(buf.iter().enumerate().all(|(i, &b)| b == (i % 256) as u8));
}

#[test]
fn sealing_without_spare_capacity_still_works() {
    let mut buf = b"exactly sized".to_vec();
    buf.shrink_to_fit();
    seal_in_place(SECRET, MIN, &review(), &mut buf).unwrap();
    assert_eq!(buf.len(), 13 + OVERHEAD);
    assert_eq!(open(SECRET, &review(), &buf).unwrap(), b"exactly sized");
}

/// Parses an encoding back into pairs. That this reproduces every binding, with no bytes left
/// over, is what makes the encoding injective.
fn decode(mut bytes: &[u8]) -> Vec<(String, String)> {
    let mut take = |n: usize| {
        let (head, rest) = bytes.split_at(n);
        bytes = rest;
        head.to_vec()
    };
    let len = |take: &mut dyn FnMut(usize) -> Vec<u8>| {
        u32::from_be_bytes(take(4).try_into().unwrap()) as usize
    };
    let count = len(&mut take);
    let mut pairs = Vec::new();
    for _ in 0..count {
        let n = len(&mut take);
        let name = String::from_utf8(take(n)).unwrap();
        let n = len(&mut take);
        let value = String::from_utf8(take(n)).unwrap();
        pairs.push((name, value));
    }
    assert!(bytes.is_empty(), "trailing bytes");
    pairs
}

#[test]
fn no_two_bindings_encode_alike() {
    let cases: Vec<Binding> = vec![
        binding(&[("ab", "c")]),
        binding(&[("a", "bc")]),
        binding(&[("a", "b"), ("c", "")]),
        binding(&[("a", "b")]),
        binding(&[("a", ""), ("b", "")]),
        binding(&[("a", "")]),
        binding(&[("b", "")]),
        binding(&[("pr", "1"), ("project", "23")]),
        binding(&[("pr", "12"), ("project", "3")]),
        binding(&[("pr", "1\0\0\0\u{1}x")]),
        binding(&[("pr", "1"), ("x", "")]),
        binding(&[("a", "\0\0\0\u{1}b\0\0\0\0")]),
    ];
    let mut seen = std::collections::HashMap::new();
    for b in &cases {
        let encoded = b.encode();
        let pairs: Vec<(String, String)> = b
            .fields()
            .map(|(n, v)| (n.to_owned(), v.to_owned()))
            .collect();
        assert_eq!(decode(&encoded), pairs);
        assert!(
            seen.insert(encoded, b.clone()).is_none(),
            "{b:?} encodes like another"
        );
    }
    // The cipher sees the difference too.
    let blob = sealed(b"x", &binding(&[("a", "bc")]));
    assert_eq!(
        open(SECRET, &binding(&[("ab", "c")]), &blob),
        Err(EnvelopeError::OpenFailed)
    );
    let blob = sealed(b"x", &binding(&[("a", "b"), ("c", "")]));
    assert_eq!(
        open(SECRET, &binding(&[("a", "b")]), &blob),
        Err(EnvelopeError::OpenFailed)
    );
}

fn published() -> Value {
    serde_json::from_str(include_str!("../../docs/sealed-envelope-vectors.json")).unwrap()
}

#[test]
fn published_vectors_seal_and_open() {
    let doc = published();
    let vectors = doc["vectors"].as_array().unwrap();
    assert!(vectors.len() >= 4);
    for v in vectors {
        let what = v["description"].as_str().unwrap();
        let secret = unhex(v["secret_hex"].as_str().unwrap());
        let binding = binding_of(&v["binding"]);
        let nonce: [u8; 12] = unhex(v["nonce_hex"].as_str().unwrap()).try_into().unwrap();
        let plaintext = unhex(v["plaintext_hex"].as_str().unwrap());
        let blob = unhex(v["blob_hex"].as_str().unwrap());
        let aad = unhex(v["aad_hex"].as_str().unwrap());
        assert_eq!(
            aad[..5],
            blob[..5],
            "the AAD starts with the blob's magic and version"
        );
        assert_eq!(aad[5..], binding.encode()[..], "{what}");

        let mut buf = plaintext.clone();
        seal_in_place_with_nonce(&secret, MIN, &binding, nonce, &mut buf).unwrap();
        assert_eq!(buf, blob, "{what}");
        assert_eq!(buf.len(), plaintext.len() + HEADER_LEN + TAG_LEN);

        assert_eq!(open(&secret, &binding, &blob).unwrap(), plaintext, "{what}");
    }
}

#[test]
fn published_rejections_do_not_open() {
    let doc = published();
    let rejections = doc["rejections"].as_array().unwrap();
    assert!(!rejections.is_empty());
    for r in rejections {
        let secret = unhex(r["secret_hex"].as_str().unwrap());
        let blob = unhex(r["blob_hex"].as_str().unwrap());
        let err = open(&secret, &binding_of(&r["binding"]), &blob).unwrap_err();
        let kind = match err {
            EnvelopeError::OpenFailed => "open-failed",
            EnvelopeError::UnsupportedVersion { .. } => "unsupported-version",
            EnvelopeError::BadMagic => "bad-magic",
            EnvelopeError::Truncated { .. } => "truncated",
            other => panic!("unexpected {other:?}"),
        };
        assert_eq!(kind, r["error"].as_str().unwrap(), "{}", r["description"]);
    }
}

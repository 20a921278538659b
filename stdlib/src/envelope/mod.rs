//! The sealed envelope: AES-256-GCM encryption of a review conversation, bound to the review it
//! belongs to, so that only the same review (same repository, pull request, project, …) opens it.
//!
//! The format is specified byte by byte in `docs/sealed-envelope.md`, with test vectors in
//! `docs/sealed-envelope-vectors.json`:
//!
//! ```text
//! blob = MAGIC "RFSE" (4) || VERSION 0x01 (1) || nonce (12) || ciphertext (n) || tag (16)
//! key  = HKDF-SHA256(salt = HKDF_SALT, ikm = secret bytes, info = HKDF_INFO), 32 bytes
//! aad  = MAGIC || VERSION || Binding::encode()
//! ```
//!
//! Sealing and opening work in place on a `Vec<u8>`: the plaintext becomes the blob and back
//! with one pass of the cipher and one `memmove`, no second full copy.

mod binding;
mod error;
mod key;
mod open;
mod seal;

pub use binding::{Binding, MAX_NAME_LEN};
pub use error::EnvelopeError;
pub use key::SealKey;

/// The first four bytes of every blob.
pub const MAGIC: [u8; 4] = *b"RFSE";
/// The format version this build seals and opens; also named by [`HKDF_INFO`].
pub const VERSION: u8 = 1;
/// Length of the AES-GCM nonce.
pub const NONCE_LEN: usize = 12;
/// Length of the AES-GCM tag.
pub const TAG_LEN: usize = 16;
/// Magic, version and nonce.
pub const HEADER_LEN: usize = MAGIC.len() + 1 + NONCE_LEN;
/// Bytes a blob has beyond its plaintext. Giving the plaintext `Vec` this much spare capacity
/// lets [`seal_in_place`] run without reallocating.
pub const OVERHEAD: usize = HEADER_LEN + TAG_LEN;
/// The fixed HKDF salt (a domain separator: the secret is required to be high-entropy).
pub const HKDF_SALT: &[u8] = b"reviewflow/sealed-envelope";
/// The HKDF info string; it names the format version, so each version has its own key.
pub const HKDF_INFO: &[u8] = b"reviewflow/sealed-envelope/v1/aes-256-gcm";
/// The usual minimum length of a secret, in bytes.
pub const DEFAULT_MIN_SECRET_BYTES: usize = 32;

/// Seals the plaintext in `buf` into a blob, in place, with a fresh random nonce.
///
/// Derives the key from `secret` on every call; to seal or open several blobs, derive a
/// [`SealKey`] once and use [`SealKey::seal_in_place`].
///
/// # Errors
/// See [`SealKey::derive`] and [`SealKey::seal_in_place`]; on error `buf` is unchanged.
pub fn seal_in_place(
    secret: &[u8],
    min_bytes: usize,
    binding: &Binding,
    buf: &mut Vec<u8>,
) -> Result<(), EnvelopeError> {
    SealKey::derive(secret, min_bytes)?.seal_in_place(binding, buf)
}

/// Seals with a caller-chosen nonce. For test vectors only: sealing two plaintexts with one key
/// and one nonce reveals their XOR and lets anyone forge tags.
///
/// # Errors
/// As [`seal_in_place`].
pub fn seal_in_place_with_nonce(
    secret: &[u8],
    min_bytes: usize,
    binding: &Binding,
    nonce: [u8; NONCE_LEN],
    buf: &mut Vec<u8>,
) -> Result<(), EnvelopeError> {
    SealKey::derive(secret, min_bytes)?.seal_in_place_with_nonce(binding, nonce, buf)
}

/// Opens the blob in `buf`, in place, leaving the plaintext.
///
/// # Errors
/// See [`SealKey::derive`] and [`SealKey::open_in_place`]. On any error `buf` is zeroized and
/// left empty: it never holds partial plaintext.
pub fn open_in_place(
    secret: &[u8],
    min_bytes: usize,
    binding: &Binding,
    max_bytes: usize,
    buf: &mut Vec<u8>,
) -> Result<(), EnvelopeError> {
    match SealKey::derive(secret, min_bytes) {
        Ok(key) => key.open_in_place(binding, max_bytes, buf),
        Err(err) => {
            zeroize::Zeroize::zeroize(buf);
            Err(err)
        }
    }
}

/// The associated data: the blob's first five bytes, then the binding's canonical encoding.
fn associated_data(binding: &Binding) -> Vec<u8> {
    let encoded = binding.encode();
    let mut aad = Vec::with_capacity(MAGIC.len() + 1 + encoded.len());
    aad.extend_from_slice(&MAGIC);
    aad.push(VERSION);
    aad.extend_from_slice(&encoded);
    aad
}

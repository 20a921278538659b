//! Sealing a conversation (a file, or a folder packed into one byte string) into a blob file:
//! read once, bounded, without following links; copied once behind the bundle header, encrypted
//! in place and written out atomically. Every plaintext buffer is zeroized. Peak memory is about
//! twice the conversation (at most 64 MiB of it).

use std::io::Read;
use std::path::Path;

use super::bundle::{BundleError, BundleHeader, Packing};
use super::pack::PackError;
use crate::envelope::{Binding, EnvelopeError, OVERHEAD, SealKey};
use crate::store::{AtomicWriteError, LocalStore, Producer, StoreError, StoreName, atomic_write};

/// The fewest bytes of a key that seals or opens a conversation. One rule for every pipeline: a
/// secret's `min-bytes` may raise it (the run refuses a shorter value at its start), never lower
/// it (`reviewflow check` reports such a `min-bytes` as `key-length`).
pub const MIN_KEY_BYTES: usize = 32;

/// Why `secret`'s `len`-byte value cannot be a key: said the same way by `std/seal` and
/// `std/restore`, never with the value.
pub fn short_key(secret: &str, len: usize) -> String {
    if len == 0 {
        format!(
            "secret `{secret}` is set but empty: a key that seals or opens a conversation needs at least {MIN_KEY_BYTES} bytes"
        )
    } else {
        format!(
            "secret `{secret}` is {len} bytes: a key that seals or opens a conversation needs at least {MIN_KEY_BYTES} bytes (`openssl rand -base64 48` makes one)"
        )
    }
}

/// What to seal, under which key and binding.
pub struct SealRequest<'a> {
    pub secret: &'a [u8],
    pub min_bytes: usize,
    pub binding: &'a Binding,
    pub header: BundleHeader,
    /// The largest conversation sealed, in bytes.
    pub max_bytes: u64,
}

#[derive(Debug, thiserror::Error)]
pub enum SealError {
    #[error("cannot read the conversation: {0}")]
    Read(#[source] std::io::Error),
    #[error("the conversation is {size} bytes, more than the {max} allowed")]
    TooLarge { size: u64, max: u64 },
    #[error(transparent)]
    Bundle(#[from] BundleError),
    #[error("cannot pack the conversation folder: {0}")]
    Pack(#[from] PackError),
    #[error(transparent)]
    Envelope(#[from] EnvelopeError),
    #[error(transparent)]
    Write(#[from] AtomicWriteError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Reads the conversation at `path` for a bundle: a regular file's bytes, or a folder packed
/// (`pack.rs`). Never follows a link, never blocks on a FIFO, and stops past `max_bytes`.
pub fn read_conversation(path: &Path, max_bytes: u64) -> Result<(Vec<u8>, Packing), SealError> {
    let meta = std::fs::symlink_metadata(path).map_err(SealError::Read)?;
    if meta.is_dir() {
        let bytes = super::pack_folder(path)?;
        if bytes.len() as u64 > max_bytes {
            return Err(SealError::TooLarge {
                size: bytes.len() as u64,
                max: max_bytes,
            });
        }
        return Ok((bytes, Packing::Folder));
    }
    let file = reviewflow_engine::nofollow::open_regular(path).map_err(SealError::Read)?;
    let size = file.metadata().map_err(SealError::Read)?.len();
    if size > max_bytes {
        return Err(SealError::TooLarge {
            size,
            max: max_bytes,
        });
    }
    let mut bytes = Vec::with_capacity(size as usize + 4096);
    // `take` bounds the read if the file grows while it is read.
    file.take(max_bytes + 1)
        .read_to_end(&mut bytes)
        .map_err(SealError::Read)?;
    if bytes.len() as u64 > max_bytes {
        let size = bytes.len() as u64;
        zeroize::Zeroize::zeroize(&mut bytes);
        return Err(SealError::TooLarge {
            size,
            max: max_bytes,
        });
    }
    Ok((bytes, Packing::File))
}

/// `conv-` and the first 8 bytes of the SHA-256 of a bundle's conversation bytes, in hex.
pub fn conversation_id(bytes: &[u8]) -> String {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(bytes);
    format!("conv-{}", reviewflow_engine::hex::encode(&digest[..8]))
}

/// Seals the conversation at `conversation` into the blob file `out`; returns the blob's size.
/// The header's `packing` is what the conversation turns out to be (a file or a folder).
pub fn seal_file(req: &SealRequest<'_>, conversation: &Path, out: &Path) -> Result<u64, SealError> {
    // The key first: a short secret is refused before anything is read.
    SealKey::derive(req.secret, req.min_bytes)?;
    let (bytes, packing) = read_conversation(conversation, req.max_bytes)?;
    let mut header = req.header.clone();
    header.packing = packing;
    seal_bytes(req, &header, bytes, out)
}

/// Seals conversation `bytes` under `header` into the blob file `out`; returns the blob's size.
/// The plaintext buffer is zeroized whatever happens.
pub fn seal_bytes(
    req: &SealRequest<'_>,
    header: &BundleHeader,
    bytes: Vec<u8>,
    out: &Path,
) -> Result<u64, SealError> {
    let mut bytes = zeroize::Zeroizing::new(bytes);
    let key = SealKey::derive(req.secret, req.min_bytes)?;
    let header = header.encode()?;
    let mut buf = Vec::with_capacity(header.len() + bytes.len() + OVERHEAD);
    buf.extend_from_slice(&header);
    buf.extend_from_slice(&bytes);
    zeroize::Zeroize::zeroize(&mut *bytes);
    if let Err(e) = key.seal_in_place(req.binding, &mut buf) {
        zeroize::Zeroize::zeroize(&mut buf);
        return Err(e.into());
    }
    atomic_write(out, &buf)?;
    Ok(buf.len() as u64)
}

/// Records in the store that this review's conversation was not kept, so that the next review
/// starts fresh instead of resuming an older one.
pub fn seal_tombstone(
    store: &LocalStore,
    name: &StoreName,
    producer: Producer,
) -> Result<(), SealError> {
    store.put_tombstone(name, producer)?;
    Ok(())
}

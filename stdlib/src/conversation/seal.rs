//! Sealing a conversation file into a blob file, in place: the file is read once into a buffer
//! that already has room for the bundle header and the envelope's overhead, encrypted where it
//! lies, and written out atomically. Peak memory is the conversation plus a few hundred bytes.

use std::io::Read;
use std::path::Path;

use super::bundle::{BundleError, BundleHeader};
use crate::envelope::{Binding, EnvelopeError, OVERHEAD, SealKey};
use crate::store::{AtomicWriteError, LocalStore, Producer, StoreError, StoreName, atomic_write};

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
    #[error(transparent)]
    Envelope(#[from] EnvelopeError),
    #[error(transparent)]
    Write(#[from] AtomicWriteError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Seals the conversation at `conversation` into the blob file `out`; returns the blob's size.
pub fn seal_file(req: &SealRequest<'_>, conversation: &Path, out: &Path) -> Result<u64, SealError> {
    // The key first: a short secret is refused before anything is read.
    let key = SealKey::derive(req.secret, req.min_bytes)?;
    let mut file = std::fs::File::open(conversation).map_err(SealError::Read)?;
    let size = file.metadata().map_err(SealError::Read)?.len();
    if size > req.max_bytes {
        return Err(SealError::TooLarge {
            size,
            max: req.max_bytes,
        });
    }
    let header = req.header.encode()?;
    let mut buf = Vec::with_capacity(header.len() + size as usize + OVERHEAD);
    buf.extend_from_slice(&header);
    // `take` bounds the read if the file grows while it is read.
    file.by_ref()
        .take(req.max_bytes + 1)
        .read_to_end(&mut buf)
        .map_err(SealError::Read)?;
    if (buf.len() - header.len()) as u64 > req.max_bytes {
        zeroize::Zeroize::zeroize(&mut buf);
        return Err(SealError::TooLarge {
            size: (buf.len() - header.len()) as u64,
            max: req.max_bytes,
        });
    }
    key.seal_in_place(req.binding, &mut buf)?;
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

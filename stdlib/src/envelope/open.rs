//! Opening: blob `Vec` → plaintext, in place, checking everything before any byte is decrypted.

use aes_gcm::Aes256Gcm;
use aes_gcm::aead::{AeadInOut, Nonce, Tag};
use zeroize::Zeroize;

use super::{
    Binding, EnvelopeError, HEADER_LEN, MAGIC, OVERHEAD, SealKey, TAG_LEN, VERSION, associated_data,
};

impl SealKey {
    /// Opens the blob in `buf`, in place, leaving the plaintext in `buf`.
    ///
    /// The size cap is checked first, then the length, magic and version, then the tag over the
    /// whole ciphertext; only then is anything decrypted.
    ///
    /// # Errors
    /// [`EnvelopeError::EmptyBinding`], [`EnvelopeError::BlobTooLarge`] (more than `max_bytes`),
    /// [`EnvelopeError::Truncated`], [`EnvelopeError::BadMagic`],
    /// [`EnvelopeError::UnsupportedVersion`] or [`EnvelopeError::OpenFailed`] (wrong key, wrong
    /// binding, or any altered byte). On any error `buf` is zeroized and left empty.
    pub fn open_in_place(
        &self,
        binding: &Binding,
        max_bytes: usize,
        buf: &mut Vec<u8>,
    ) -> Result<(), EnvelopeError> {
        let result = self.open(binding, max_bytes, buf);
        if result.is_err() {
            buf.zeroize();
        }
        result
    }

    fn open(
        &self,
        binding: &Binding,
        max_bytes: usize,
        buf: &mut Vec<u8>,
    ) -> Result<(), EnvelopeError> {
        if binding.is_empty() {
            return Err(EnvelopeError::EmptyBinding);
        }
        let len = buf.len();
        if len > max_bytes {
            return Err(EnvelopeError::BlobTooLarge {
                len,
                max: max_bytes,
            });
        }
        if len < OVERHEAD {
            return Err(EnvelopeError::Truncated { len, min: OVERHEAD });
        }
        if buf[..MAGIC.len()] != MAGIC {
            return Err(EnvelopeError::BadMagic);
        }
        if buf[MAGIC.len()] != VERSION {
            return Err(EnvelopeError::UnsupportedVersion {
                found: buf[MAGIC.len()],
                supported: VERSION,
            });
        }
        let aad = associated_data(binding);
        let (header, rest) = buf.split_at_mut(HEADER_LEN);
        let (body, tag) = rest.split_at_mut(len - OVERHEAD);
        let nonce = Nonce::<Aes256Gcm>::try_from(&header[MAGIC.len() + 1..])
            .map_err(|_| EnvelopeError::Truncated { len, min: OVERHEAD })?;
        let tag = Tag::<Aes256Gcm>::try_from(&*tag)
            .map_err(|_| EnvelopeError::Truncated { len, min: OVERHEAD })?;
        // aes-gcm checks the tag over the ciphertext before it decrypts anything.
        self.cipher
            .decrypt_inout_detached(&nonce, &aad, body.into(), &tag)
            .map_err(|_| EnvelopeError::OpenFailed)?;
        buf.copy_within(HEADER_LEN..len - TAG_LEN, 0);
        buf.truncate(len - OVERHEAD);
        Ok(())
    }
}

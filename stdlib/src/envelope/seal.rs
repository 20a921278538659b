//! Sealing: plaintext `Vec` → blob, in place.

use aes_gcm::aead::{AeadInOut, Generate, Nonce};
use aes_gcm::{Aes256Gcm, P_MAX};
use zeroize::Zeroize;

use super::{
    Binding, EnvelopeError, HEADER_LEN, MAGIC, NONCE_LEN, OVERHEAD, SealKey, VERSION,
    associated_data,
};

impl SealKey {
    /// Seals the plaintext in `buf` into a blob, in place, with a fresh random 96-bit nonce.
    ///
    /// The plaintext is shifted by [`HEADER_LEN`] bytes and encrypted where it lies; the header
    /// is written in front and the tag appended. If `buf` lacks [`OVERHEAD`] bytes of spare
    /// capacity, the plaintext is copied once into a larger allocation and the old one is
    /// zeroized, so no plaintext copy is left in freed memory.
    ///
    /// # Errors
    /// [`EnvelopeError::EmptyBinding`], [`EnvelopeError::PlaintextTooLarge`] (over AES-GCM's
    /// 64 GiB) or [`EnvelopeError::Random`]; on error `buf` is unchanged.
    pub fn seal_in_place(&self, binding: &Binding, buf: &mut Vec<u8>) -> Result<(), EnvelopeError> {
        let nonce = Nonce::<Aes256Gcm>::try_generate().map_err(|e| EnvelopeError::Random {
            reason: e.to_string(),
        })?;
        let mut bytes = [0u8; NONCE_LEN];
        bytes.copy_from_slice(&nonce);
        self.seal_in_place_with_nonce(binding, bytes, buf)
    }

    /// Seals with a caller-chosen nonce. For test vectors only: never reuse a nonce with a key.
    ///
    /// # Errors
    /// As [`SealKey::seal_in_place`], except that no random nonce is drawn.
    pub fn seal_in_place_with_nonce(
        &self,
        binding: &Binding,
        nonce: [u8; NONCE_LEN],
        buf: &mut Vec<u8>,
    ) -> Result<(), EnvelopeError> {
        if binding.is_empty() {
            return Err(EnvelopeError::EmptyBinding);
        }
        let len = buf.len();
        let too_large = EnvelopeError::PlaintextTooLarge { len, max: P_MAX };
        if u64::try_from(len).map_or(true, |n| n > P_MAX) {
            return Err(too_large);
        }
        let aad = associated_data(binding);

        make_room_for_header(buf);
        let tag = match self.cipher.encrypt_inout_detached(
            &Nonce::<Aes256Gcm>::from(nonce),
            &aad,
            (&mut buf[HEADER_LEN..]).into(),
        ) {
            Ok(tag) => tag,
            Err(_) => {
                // Unreachable with the lengths checked above; never leave a half-sealed buffer.
                buf.zeroize();
                return Err(too_large);
            }
        };
        buf[..MAGIC.len()].copy_from_slice(&MAGIC);
        buf[MAGIC.len()] = VERSION;
        buf[MAGIC.len() + 1..HEADER_LEN].copy_from_slice(&nonce);
        buf.extend_from_slice(&tag);
        Ok(())
    }
}

/// Turns `[plaintext]` into `[HEADER_LEN zero bytes][plaintext]` with room for the tag after it.
fn make_room_for_header(buf: &mut Vec<u8>) {
    let len = buf.len();
    if buf.capacity() - len >= OVERHEAD {
        // One memmove within the allocation.
        buf.resize(len + HEADER_LEN, 0);
        buf.copy_within(..len, HEADER_LEN);
    } else {
        // Growing the Vec could leave a plaintext copy in the freed block; copy it ourselves
        // (the copy replaces the memmove) and wipe the old allocation.
        let mut grown = Vec::with_capacity(len + OVERHEAD);
        grown.resize(HEADER_LEN, 0);
        grown.extend_from_slice(buf);
        buf.zeroize();
        *buf = grown;
    }
}

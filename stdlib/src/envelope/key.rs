//! The envelope key: derived once from the secret with HKDF-SHA256, held only as an AES-256-GCM
//! key schedule that is zeroized on drop and never printed.

use std::fmt;

use aes_gcm::{Aes256Gcm, KeyInit};
use hkdf::Hkdf;
use sha2::Sha256;
use zeroize::Zeroizing;

use super::{EnvelopeError, HKDF_INFO, HKDF_SALT};

/// The key that seals and opens envelopes, derived from a secret.
///
/// Derive it once and use it for many blobs (a restore that tries several blobs pays for one
/// HKDF). Its `Debug` output is `SealKey([redacted])`; the key schedule is zeroized on drop.
pub struct SealKey {
    pub(super) cipher: Aes256Gcm,
}

impl SealKey {
    /// Derives the key from `secret`: its raw bytes, as given (no decoding, no trimming).
    ///
    /// # Errors
    /// [`EnvelopeError::SecretTooShort`] if `secret` has fewer than `min_bytes` bytes (32 is the
    /// usual minimum); the error gives the lengths, never the secret.
    pub fn derive(secret: &[u8], min_bytes: usize) -> Result<Self, EnvelopeError> {
        if secret.len() < min_bytes {
            return Err(EnvelopeError::SecretTooShort {
                len: secret.len(),
                min: min_bytes,
            });
        }
        let key = derive_key_bytes(secret)?;
        let cipher =
            Aes256Gcm::new_from_slice(key.as_slice()).map_err(|_| EnvelopeError::KeyDerivation)?;
        Ok(Self { cipher })
    }
}

impl fmt::Debug for SealKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SealKey([redacted])")
    }
}

/// HKDF-SHA256(salt = [`HKDF_SALT`], ikm = secret, info = [`HKDF_INFO`], L = 32).
pub(super) fn derive_key_bytes(secret: &[u8]) -> Result<Zeroizing<[u8; 32]>, EnvelopeError> {
    let mut okm = Zeroizing::new([0u8; 32]);
    Hkdf::<Sha256>::new(Some(HKDF_SALT), secret)
        .expand(HKDF_INFO, okm.as_mut_slice())
        .map_err(|_| EnvelopeError::KeyDerivation)?;
    Ok(okm)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_is_redacted() {
        let key = SealKey::derive(&[7u8; 32], 32).unwrap();
        assert_eq!(format!("{key:?}"), "SealKey([redacted])");
    }

    #[test]
    fn short_secret_is_refused_without_echoing_it() {
        let err = SealKey::derive(b"hunter2-hunter2", 32).unwrap_err();
        assert_eq!(err, EnvelopeError::SecretTooShort { len: 15, min: 32 });
        assert!(!err.to_string().contains("hunter2"));
        assert!(!format!("{err:?}").contains("hunter2"));
    }

    #[test]
    fn derived_keys_match_the_published_vectors() {
        let doc: serde_json::Value =
            serde_json::from_str(include_str!("../../../docs/sealed-envelope-vectors.json"))
                .unwrap();
        for vector in doc["vectors"].as_array().unwrap() {
            let secret = unhex(vector["secret_hex"].as_str().unwrap());
            let key = derive_key_bytes(&secret).unwrap();
            assert_eq!(hex(key.as_slice()), vector["key_hex"].as_str().unwrap());
        }
    }

    use reviewflow_engine::hex::encode as hex;

    fn unhex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }
}

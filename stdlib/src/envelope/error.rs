//! Why sealing, opening or binding failed. No variant carries secret bytes or plaintext.

/// An error of the sealed envelope: every variant says enough to explain itself, and none
/// holds the secret, the derived key or any plaintext.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EnvelopeError {
    /// The secret is shorter than the caller's minimum.
    #[error("the sealing secret is {len} bytes long; at least {min} bytes are required")]
    SecretTooShort {
        /// Length of the secret that was given.
        len: usize,
        /// The minimum the caller asked for.
        min: usize,
    },
    /// Sealing or opening without any bound field would let any review open the blob.
    #[error("a sealed envelope needs a binding: bind at least one field (e.g. repo, pr, project)")]
    EmptyBinding,
    /// A binding field name breaks the naming rule.
    #[error("binding field name {name:?} is invalid: {reason}")]
    InvalidFieldName {
        /// The name as given.
        name: String,
        /// Which rule it breaks.
        reason: &'static str,
    },
    /// The same field name was bound twice.
    #[error("binding field {name:?} is bound twice")]
    DuplicateField {
        /// The repeated name.
        name: String,
    },
    /// A binding value does not fit the format's u32 length prefix.
    #[error(
        "the value of binding field {name:?} is {len} bytes, more than the {max} a length prefix can say"
    )]
    ValueTooLong {
        /// The field whose value is too long.
        name: String,
        /// Its length in bytes.
        len: usize,
        /// The largest length the format allows.
        max: u64,
    },
    /// The plaintext exceeds what AES-GCM may encrypt under one nonce.
    #[error("the plaintext is {len} bytes, more than the {max} bytes AES-GCM can seal at once")]
    PlaintextTooLarge {
        /// Length of the plaintext.
        len: usize,
        /// AES-GCM's limit.
        max: u64,
    },
    /// The blob is larger than the caller's cap; nothing was decrypted.
    #[error("the sealed blob is {len} bytes, more than the limit of {max} bytes")]
    BlobTooLarge {
        /// Length of the blob.
        len: usize,
        /// The caller's cap.
        max: usize,
    },
    /// The blob cannot even hold a header and a tag.
    #[error("the sealed blob is {len} bytes, shorter than the {min} bytes of an empty envelope")]
    Truncated {
        /// Length of the blob.
        len: usize,
        /// Length of an envelope with an empty plaintext.
        min: usize,
    },
    /// The blob does not start with the envelope's magic bytes.
    #[error("not a sealed envelope: the blob does not start with the magic bytes \"RFSE\"")]
    BadMagic,
    /// The blob is of a format version this build cannot open.
    #[error(
        "sealed envelope version {found} is not supported (this build opens version {supported})"
    )]
    UnsupportedVersion {
        /// The version byte found in the blob.
        found: u8,
        /// The version this build reads.
        supported: u8,
    },
    /// Authentication failed: GCM cannot tell a wrong key from a wrong binding or an altered byte.
    #[error(
        "the sealed envelope does not open: the key or the binding differs from the ones it was sealed with, or the blob was altered"
    )]
    OpenFailed,
    /// The operating system's random number generator failed to give a nonce.
    #[error("no random nonce: the system random number generator failed: {reason}")]
    Random {
        /// The generator's own explanation.
        reason: String,
    },
    /// HKDF or the cipher refused the key material (cannot happen with the fixed sizes used).
    #[error("the envelope key could not be derived")]
    KeyDerivation,
}

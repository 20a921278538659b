//! `SecretValue`: the bytes of one secret, held so that they are hard to leak by accident.
//!
//! It has no `Display`, its `Debug` prints `[redacted]`, and its buffer is zeroized on drop.
//! Reading the bytes takes an explicit, greppable call: [`SecretValue::expose_secret`].

use std::fmt;

use zeroize::Zeroizing;

/// The bytes of a secret. Cloning copies the bytes (each copy is zeroized on its own drop).
#[derive(Clone, PartialEq, Eq)]
pub struct SecretValue(Zeroizing<Vec<u8>>);

impl SecretValue {
    /// Wraps `bytes`; the caller should not keep another copy of them.
    pub fn new(bytes: impl Into<Vec<u8>>) -> Self {
        Self(Zeroizing::new(bytes.into()))
    }

    /// The secret bytes. Call sites are where a secret leaves the wrapper: keep them few.
    pub fn expose_secret(&self) -> &[u8] {
        &self.0
    }

    /// Length in bytes (not secret: the redactor's minimum length depends on it).
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether the value is empty.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Debug for SecretValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[redacted]")
    }
}

impl From<Vec<u8>> for SecretValue {
    fn from(bytes: Vec<u8>) -> Self {
        Self::new(bytes)
    }
}

impl From<String> for SecretValue {
    fn from(text: String) -> Self {
        Self::new(text.into_bytes())
    }
}

impl From<&str> for SecretValue {
    fn from(text: &str) -> Self {
        Self::new(text.as_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::SecretValue;

    #[test]
    fn debug_hides_the_value() {
        let secret = SecretValue::from("hunter22");
        assert_eq!(format!("{secret:?}"), "[redacted]");
        assert_eq!(format!("{:?}", Some(secret)), "Some([redacted])");
    }
}

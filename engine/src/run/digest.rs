//! The digests the run directory keeps: `sha256:<hex>`, of a typed value or of plain bytes.

use sha2::{Digest as _, Sha256};

use crate::hex::encode as hex;

/// `sha256:<hex>` over the type tag, a NUL, and the bytes: a text and a file with the same bytes
/// do not share a digest.
pub fn digest(type_name: &str, bytes: &[u8]) -> String {
    let mut h = Sha256::new();
    h.update(type_name.as_bytes());
    h.update([0]);
    h.update(bytes);
    format!("sha256:{}", hex(&h.finalize()))
}

/// `sha256:<hex>` of plain bytes.
pub fn sha256(bytes: &[u8]) -> String {
    format!("sha256:{}", hex(&Sha256::digest(bytes)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digests_are_typed() {
        assert_ne!(digest("text", b"x"), digest("bytes", b"x"));
        assert_eq!(digest("text", b"x"), digest("text", b"x"));
        assert!(sha256(b"").starts_with("sha256:e3b0c442"));
    }
}

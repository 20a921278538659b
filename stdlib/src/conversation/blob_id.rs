//! The blob id: how a posted review names the sealed conversation it kept. `blob-` and the
//! SHA-256 of the sealed blob's bytes, so the name is the same in every store (an artifact's id
//! is unknown when the review is posted), the same again when a resumed run keeps the same blob,
//! and cannot be taken by a planted entry that does not hold exactly those bytes.

use sha2::{Digest, Sha256};

/// What every blob id starts with.
pub const BLOB_ID_PREFIX: &str = "blob-";

/// The blob id of `blob`, the sealed bytes exactly as kept.
pub fn blob_id(blob: &[u8]) -> String {
    let digest = Sha256::digest(blob);
    format!(
        "{BLOB_ID_PREFIX}{}",
        reviewflow_engine::hex::encode(&digest)
    )
}

/// The digest a blob id names: `blob-` and exactly 64 lowercase hex digits, nothing else.
pub fn parse_blob_id(id: &str) -> Option<[u8; 32]> {
    let hex = id.strip_prefix(BLOB_ID_PREFIX)?;
    if hex.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, pair) in hex.as_bytes().chunks_exact(2).enumerate() {
        let nibble = |c: u8| match c {
            b'0'..=b'9' => Some(c - b'0'),
            b'a'..=b'f' => Some(c - b'a' + 10),
            _ => None,
        };
        out[i] = nibble(pair[0])? << 4 | nibble(pair[1])?;
    }
    Some(out)
}

/// Whether `blob`'s bytes are the ones `digest` names.
pub fn is_blob(blob: &[u8], digest: &[u8; 32]) -> bool {
    Sha256::digest(blob).as_slice() == digest
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_id_is_the_digest_of_the_bytes() {
        // SHA-256 of "abc" (FIPS 180-2, appendix B.1).
        let id = blob_id(b"abc");
        assert_eq!(
            id,
            "blob-ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(id.len(), 69);
        let digest = parse_blob_id(&id).unwrap();
        assert!(is_blob(b"abc", &digest));
        assert!(!is_blob(b"abd", &digest));
    }

    #[test]
    fn only_the_exact_form_parses() {
        let hex = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
        assert!(parse_blob_id(&format!("blob-{hex}")).is_some());
        for bad in [
            hex.to_string(),
            format!("blob-{}", hex.to_uppercase()),
            format!("blob-{}", &hex[..63]),
            format!("blob-{hex}0"),
            format!("Blob-{hex}"),
            format!("blob-{}g", &hex[..63]),
            "20261130000000000000-00000001-00000000-0badcafe".to_string(),
            "conv-3f2a9c0d11e4b7a8".to_string(),
        ] {
            assert!(parse_blob_id(&bad).is_none(), "{bad}");
        }
    }
}

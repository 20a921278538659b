//! The bundle: `u32 big-endian header length ‖ header JSON ‖ conversation bytes`. Every header
//! field is checked against a strict pattern when read: a bundle that opened is authentic, but
//! its fields still name files and commits, so nothing is used before it is validated.

use serde::{Deserialize, Serialize};

pub const BUNDLE_VERSION: u32 = 1;
/// A header is a few hundred bytes; anything larger is refused before parsing.
pub const MAX_HEADER_BYTES: usize = 16 << 10;

/// What a kept conversation says about itself.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BundleHeader {
    pub version: u32,
    /// The conversation's id (a session id, a thread id, or one reviewflow gave it).
    pub conversation_id: String,
    /// The head commit of the review that produced it.
    pub head: String,
    /// The run that sealed it.
    pub run_id: String,
    /// The file name the reviewer expects the conversation under.
    pub file_name: String,
    /// Whether the conversation is one file's bytes or a packed folder (`pack.rs`).
    pub packing: Packing,
}

/// What the conversation bytes of a bundle are.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Packing {
    /// One regular file's bytes.
    File,
    /// A folder, packed (see [`super::pack_folder`]).
    Folder,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum BundleError {
    #[error("the bundle is truncated")]
    Truncated,
    #[error("the bundle's header is {0} bytes, more than {MAX_HEADER_BYTES}")]
    HeaderTooLarge(usize),
    #[error("the bundle's header is not valid: {0}")]
    BadHeader(String),
    #[error("the bundle's {field} is not valid")]
    BadField { field: &'static str },
    #[error("bundle version {0} is not supported")]
    Version(u32),
}

fn is_sha(s: &str) -> bool {
    (s.len() == 40 || s.len() == 64)
        && s.bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
}

fn is_id(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 128
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        && !s.starts_with('.')
}

impl BundleHeader {
    /// Checks every field against its pattern.
    pub fn validate(&self) -> Result<(), BundleError> {
        if self.version != BUNDLE_VERSION {
            return Err(BundleError::Version(self.version));
        }
        if !is_id(&self.conversation_id) {
            return Err(BundleError::BadField {
                field: "conversation id",
            });
        }
        if !is_sha(&self.head) {
            return Err(BundleError::BadField {
                field: "head commit",
            });
        }
        if !is_id(&self.run_id) {
            return Err(BundleError::BadField { field: "run id" });
        }
        if !is_id(&self.file_name) {
            return Err(BundleError::BadField { field: "file name" });
        }
        Ok(())
    }

    /// The bundle's first bytes: length and header.
    pub fn encode(&self) -> Result<Vec<u8>, BundleError> {
        self.validate()?;
        let json = serde_json::to_vec(self).map_err(|e| BundleError::BadHeader(e.to_string()))?;
        let mut out = Vec::with_capacity(4 + json.len());
        out.extend_from_slice(&(json.len() as u32).to_be_bytes());
        out.extend_from_slice(&json);
        Ok(out)
    }
}

/// Splits an opened bundle into its validated header and the conversation's byte range.
pub fn read_bundle(bytes: &[u8]) -> Result<(BundleHeader, std::ops::Range<usize>), BundleError> {
    let len_bytes: [u8; 4] = bytes
        .get(..4)
        .and_then(|b| b.try_into().ok())
        .ok_or(BundleError::Truncated)?;
    let len = u32::from_be_bytes(len_bytes) as usize;
    if len > MAX_HEADER_BYTES {
        return Err(BundleError::HeaderTooLarge(len));
    }
    let json = bytes.get(4..4 + len).ok_or(BundleError::Truncated)?;
    let header: BundleHeader =
        serde_json::from_slice(json).map_err(|e| BundleError::BadHeader(e.to_string()))?;
    header.validate()?;
    Ok((header, 4 + len..bytes.len()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header() -> BundleHeader {
        BundleHeader {
            version: BUNDLE_VERSION,
            conversation_id: "3f2a-1b".into(),
            head: "a".repeat(40),
            run_id: "run-1".into(),
            file_name: "conversation.json".into(),
            packing: Packing::File,
        }
    }

    #[test]
    fn round_trip() {
        let mut bytes = header().encode().unwrap();
        bytes.extend_from_slice(b"hello");
        let (h, range) = read_bundle(&bytes).unwrap();
        assert_eq!(h, header());
        assert_eq!(&bytes[range], b"hello");
    }

    /// The example of docs/sealed-store.md, byte for byte.
    #[test]
    fn documented_example() {
        let header = BundleHeader {
            version: BUNDLE_VERSION,
            conversation_id: "conv-3f2a9c0d11e4b7a8".into(),
            head: "1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d".into(),
            run_id: "20261130T101500Z-4f1c9a2e".into(),
            file_name: "session.jsonl".into(),
            packing: Packing::File,
        };
        let bytes = header.encode().unwrap();
        assert_eq!(&bytes[..4], &[0, 0, 0, 0xbb]);
        let doc = include_str!("../../../docs/sealed-store.md");
        let json = std::str::from_utf8(&bytes[4..]).unwrap();
        assert_eq!(json.len(), 187);
        assert!(doc.contains(&format!("```json\n{json}\n```")), "{json}");
    }

    #[test]
    fn hostile_fields_are_refused() {
        for (field, value) in [
            ("file_name", "../../etc/passwd"),
            ("head", "HEAD"),
            ("conversation_id", ""),
            ("run_id", ".hidden"),
        ] {
            let mut h = serde_json::to_value(header()).unwrap();
            h[field] = value.into();
            let json = serde_json::to_vec(&h).unwrap();
            let mut bytes = (json.len() as u32).to_be_bytes().to_vec();
            bytes.extend_from_slice(&json);
            assert!(read_bundle(&bytes).is_err(), "{field}={value}");
        }
        assert_eq!(read_bundle(&[0, 0]), Err(BundleError::Truncated));
        assert_eq!(
            read_bundle(&u32::MAX.to_be_bytes()),
            Err(BundleError::HeaderTooLarge(u32::MAX as usize))
        );
    }
}

//! One entry of a store: a sealed blob or a tombstone, with the metadata written beside it.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use reviewflow_engine::unique;

use super::{StoreError, StoreName};

/// Who wrote an entry, as the caller tells it (run id, workflow, event, head sha, …). The store
/// keeps it verbatim; trust decisions are the reader's.
pub type Producer = BTreeMap<String, String>;

/// An entry's identifier: `<created ns, 20 digits>-<pid>-<counter>-<random>` (hex, 8 each).
///
/// Unique without a lock (see `unique`), and its text order is its creation order, which makes
/// it the deterministic tie-break between entries created in the same nanosecond.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct EntryId(String);

const NS_DIGITS: usize = 20;
const ID_LEN: usize = NS_DIGITS + 1 + 26;

impl EntryId {
    pub(crate) fn generate(created_ns: u64) -> Self {
        Self(format!("{created_ns:020}-{}", unique::token()))
    }

    pub fn parse(id: &str) -> Result<Self, StoreError> {
        if is_valid(id) {
            Ok(Self(id.to_owned()))
        } else {
            Err(StoreError::InvalidEntryId {
                id: id.chars().take(ID_LEN + 8).collect(),
            })
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

fn is_valid(id: &str) -> bool {
    let b = id.as_bytes();
    b.len() == ID_LEN
        && b[..NS_DIGITS].iter().all(u8::is_ascii_digit)
        && b[NS_DIGITS..].chunks(9).all(|chunk| {
            chunk[0] == b'-'
                && chunk[1..]
                    .iter()
                    .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(c))
        })
}

impl TryFrom<String> for EntryId {
    type Error = StoreError;
    fn try_from(value: String) -> Result<Self, Self::Error> {
        Self::parse(&value)
    }
}

impl From<EntryId> for String {
    fn from(value: EntryId) -> Self {
        value.0
    }
}

impl fmt::Display for EntryId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// What an entry holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EntryKind {
    /// A sealed blob, stored beside the metadata.
    Blob,
    /// "This review's conversation was not kept": a reader stops its search here instead of
    /// falling back to an older blob. Has no blob; size 0, digest of the empty string.
    Tombstone,
}

/// An entry's metadata, as listed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    pub id: EntryId,
    pub name: StoreName,
    pub kind: EntryKind,
    /// Nanoseconds since the Unix epoch, by the writer's clock.
    pub created_ns: u64,
    /// The blob's size in bytes.
    pub size: u64,
    /// The blob's SHA-256, lowercase hex.
    pub sha256: String,
    pub producer: Producer,
}

impl Entry {
    pub fn is_tombstone(&self) -> bool {
        self.kind == EntryKind::Tombstone
    }
}

//! The name a store keeps blobs under (e.g. `review-<change>-<project>`). It becomes a folder
//! name, so it is held to `^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`: no separator, no leading dot,
//! hence no path traversal and no hidden folder.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::StoreError;

/// The longest name accepted, in bytes.
pub const MAX_NAME_LEN: usize = 128;

/// A validated store name.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct StoreName(String);

impl StoreName {
    pub fn new(name: impl Into<String>) -> Result<Self, StoreError> {
        let name = name.into();
        match problem(&name) {
            None => Ok(Self(name)),
            Some(reason) => Err(StoreError::InvalidName {
                name: bounded(&name),
                reason,
            }),
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

fn problem(name: &str) -> Option<&'static str> {
    let bytes = name.as_bytes();
    let Some(first) = bytes.first() else {
        return Some("it is empty");
    };
    if bytes.len() > MAX_NAME_LEN {
        return Some("it is longer than 128 bytes");
    }
    if !first.is_ascii_alphanumeric() {
        return Some("it must start with a letter or digit");
    }
    if !bytes
        .iter()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
    {
        return Some("it may hold only letters, digits, '.', '_' and '-'");
    }
    None
}

/// The blob name `blob` of store `store`, as a run fills it in, or why the run refuses it: the
/// one rule `run` applies (`Services::store`) and `check` reports (`run-refusal`, through the
/// store contract's `name_refusal`), in the same words.
pub fn blob_name(store: &str, blob: &str) -> Result<StoreName, String> {
    StoreName::new(blob).map_err(|e| {
        format!(
            "the blob name \"{}\" of store `{store}` is not usable: {e}",
            bounded(blob)
        )
    })
}

/// [`blob_name`]'s refusal, for the store contracts.
pub fn name_refusal(store: &str, blob: &str) -> Option<String> {
    blob_name(store, blob).err()
}

/// Names come from input: keep error messages short.
fn bounded(name: &str) -> String {
    name.chars().take(MAX_NAME_LEN + 8).collect()
}

impl TryFrom<String> for StoreName {
    type Error = StoreError;
    fn try_from(value: String) -> Result<Self, Self::Error> {
        Self::new(value)
    }
}

impl TryFrom<&str> for StoreName {
    type Error = StoreError;
    fn try_from(value: &str) -> Result<Self, Self::Error> {
        Self::new(value)
    }
}

impl std::str::FromStr for StoreName {
    type Err = StoreError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::new(s)
    }
}

impl From<StoreName> for String {
    fn from(value: StoreName) -> Self {
        value.0
    }
}

impl AsRef<str> for StoreName {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for StoreName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::StoreName;

    #[test]
    fn accepts_and_refuses() {
        for good in ["a", "review-12-api", "A.b_c-9", &"x".repeat(128)] {
            assert!(StoreName::new(good).is_ok(), "{good}");
        }
        for bad in [
            "",
            ".",
            "..",
            "../x",
            "a/b",
            "a\\b",
            "-a",
            ".hidden",
            "_a",
            "a b",
            "a\0",
            "é",
            &"x".repeat(129),
        ] {
            assert!(StoreName::new(bad).is_err(), "{bad:?}");
        }
    }
}

#[cfg(test)]
mod blob_name_tests {
    #[test]
    fn the_refusal_names_the_store_and_the_filled_in_name() {
        assert_eq!(super::name_refusal("conversations", "review-12"), None);
        let why = super::name_refusal("conversations", "review/12").unwrap_or_default();
        assert!(
            why.starts_with("the blob name \"review/12\" of store `conversations` is not usable:"),
            "{why}"
        );
    }
}

//! A full object id as git prints it: 40 (SHA-1) or 64 (SHA-256) lowercase hex digits.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::GitError;

/// The empty tree of a SHA-1 repository: the base of a root commit's diff.
pub const EMPTY_TREE_SHA1: &str = "4b825dc642cb6eb9a060e54bf8d69288fbee4904";
/// The empty tree of a SHA-256 repository.
pub const EMPTY_TREE_SHA256: &str =
    "6ef19b41225c5369f1c104d45d8d85efa9b057b53b14b4b9b939dd74decc5321";

/// Characters of the short form used in names and messages.
pub const SHORT_LEN: usize = 12;

#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Sha(String);

impl Sha {
    pub fn parse(text: &str) -> Result<Self, GitError> {
        let valid = matches!(text.len(), 40 | 64)
            && text
                .bytes()
                .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(&c));
        if valid {
            Ok(Self(text.to_owned()))
        } else {
            Err(GitError::BadRevision {
                rev: super::error::echo(text),
                reason: "not a full object id (40 or 64 lowercase hex digits)",
            })
        }
    }

    /// The empty tree in the same object format as `like`.
    pub fn empty_tree_like(like: &Sha) -> Self {
        Self(
            if like.0.len() == 64 {
                EMPTY_TREE_SHA256
            } else {
                EMPTY_TREE_SHA1
            }
            .to_owned(),
        )
    }

    pub fn is_empty_tree(&self) -> bool {
        self.0 == EMPTY_TREE_SHA1 || self.0 == EMPTY_TREE_SHA256
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The first [`SHORT_LEN`] digits.
    pub fn short(&self) -> &str {
        &self.0[..SHORT_LEN]
    }
}

impl TryFrom<String> for Sha {
    type Error = GitError;
    fn try_from(value: String) -> Result<Self, Self::Error> {
        Self::parse(&value)
    }
}

impl From<Sha> for String {
    fn from(value: Sha) -> Self {
        value.0
    }
}

impl AsRef<str> for Sha {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Sha {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_full_ids_only() {
        assert!(Sha::parse(EMPTY_TREE_SHA1).is_ok());
        assert!(Sha::parse(EMPTY_TREE_SHA256).is_ok());
        for bad in [
            "",
            "4b825dc",
            &EMPTY_TREE_SHA1.to_uppercase(),
            "--output=x",
            &format!("{EMPTY_TREE_SHA1}\n"),
        ] {
            assert!(Sha::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn empty_tree_follows_the_object_format() {
        let sha256 = Sha::parse(&"a".repeat(64)).unwrap();
        assert_eq!(Sha::empty_tree_like(&sha256).as_str(), EMPTY_TREE_SHA256);
        let sha1 = Sha::parse(&"a".repeat(40)).unwrap();
        assert!(Sha::empty_tree_like(&sha1).is_empty_tree());
    }
}

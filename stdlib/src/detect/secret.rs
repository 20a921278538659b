//! The run's secrets as the scanner receives them, and what it says about them.

use thiserror::Error;
use zeroize::Zeroizing;

/// Secrets whose trimmed value is shorter than this are not searched (too many chance matches).
pub const MIN_SECRET_LEN: usize = 8;

/// A secret's name and value. The value never shows in `Debug` and is zeroed on drop.
#[derive(Clone)]
pub struct NamedSecret {
    name: String,
    value: Zeroizing<Vec<u8>>,
}

impl NamedSecret {
    pub fn new(name: impl Into<String>, value: impl Into<Vec<u8>>) -> Self {
        NamedSecret {
            name: name.into(),
            value: Zeroizing::new(value.into()),
        }
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub(crate) fn expose(&self) -> &[u8] {
        &self.value
    }

    /// The value without surrounding ASCII whitespace (a value read from a file often ends in
    /// a newline that the leaked copy does not have).
    pub(crate) fn trimmed(&self) -> &[u8] {
        self.value.trim_ascii()
    }

    /// True when the value is long enough to be searched.
    pub fn is_searchable(&self) -> bool {
        self.trimmed().len() >= MIN_SECRET_LEN
    }
}

impl std::fmt::Debug for NamedSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NamedSecret")
            .field("name", &self.name)
            .field("value", &format_args!("[redacted]"))
            .finish()
    }
}

/// Something the caller should report next to a scan's result.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum Note {
    #[error("secret `{name}` is shorter than {MIN_SECRET_LEN} bytes and was not searched for")]
    SecretTooShort { name: String },
}

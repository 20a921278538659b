//! The binding: the (name, value) pairs that say which review a sealed blob belongs to, and
//! their canonical, injective encoding that becomes part of the AES-GCM associated data.

use std::collections::BTreeMap;

use super::EnvelopeError;

/// Longest field name accepted, in bytes.
pub const MAX_NAME_LEN: usize = 64;

/// The fields a sealed blob is bound to, e.g. `repo`, `pr`, `project`.
///
/// The binding is not stored in the blob: whoever opens it must supply the same fields with the
/// same values, or the blob does not open. Fields are kept sorted by name (byte order), so the
/// order in which they are added does not matter.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Binding {
    // A BTreeMap gives the canonical order (bytewise by name) and detects duplicates.
    fields: BTreeMap<String, String>,
}

impl Binding {
    /// An empty binding; add fields with [`Binding::with`]. Sealing needs at least one field.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a field.
    ///
    /// # Errors
    /// [`EnvelopeError::InvalidFieldName`] unless the name is 1 to 64 bytes of `a-z`, `0-9`,
    /// `-`, `_`, `.` starting with a letter or digit; [`EnvelopeError::DuplicateField`] if the
    /// name is already bound; [`EnvelopeError::ValueTooLong`] if the value exceeds `u32::MAX` bytes.
    pub fn with(mut self, name: &str, value: &str) -> Result<Self, EnvelopeError> {
        check_name(name)?;
        if u32::try_from(value.len()).is_err() {
            return Err(EnvelopeError::ValueTooLong {
                name: name.to_owned(),
                len: value.len(),
                max: u64::from(u32::MAX),
            });
        }
        if self.fields.contains_key(name) {
            return Err(EnvelopeError::DuplicateField {
                name: name.to_owned(),
            });
        }
        self.fields.insert(name.to_owned(), value.to_owned());
        Ok(self)
    }

    /// Builds a binding from pairs in any order.
    ///
    /// # Errors
    /// As [`Binding::with`], for the first pair that is refused.
    pub fn from_pairs<'a, I>(pairs: I) -> Result<Self, EnvelopeError>
    where
        I: IntoIterator<Item = (&'a str, &'a str)>,
    {
        pairs
            .into_iter()
            .try_fold(Self::new(), |binding, (name, value)| {
                binding.with(name, value)
            })
    }

    /// The fields in canonical order (sorted by name).
    pub fn fields(&self) -> impl Iterator<Item = (&str, &str)> {
        self.fields.iter().map(|(n, v)| (n.as_str(), v.as_str()))
    }

    /// The value bound to `name`, if any.
    #[must_use]
    pub fn get(&self, name: &str) -> Option<&str> {
        self.fields.get(name).map(String::as_str)
    }

    /// Number of fields.
    #[must_use]
    pub fn len(&self) -> usize {
        self.fields.len()
    }

    /// True when no field is bound.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.fields.is_empty()
    }

    /// The canonical encoding: `u32be(field count)`, then for each field in name order
    /// `u32be(len(name)) || name || u32be(len(value)) || value` (UTF-8 bytes).
    ///
    /// Every item is length-prefixed, so the encoding parses back to exactly one binding: no two
    /// different bindings encode alike. The associated data of an envelope is its 5-byte
    /// header prefix (magic and version) followed by this encoding.
    #[must_use]
    pub fn encode(&self) -> Vec<u8> {
        let size = 4 + self
            .fields
            .iter()
            .map(|(n, v)| 8 + n.len() + v.len())
            .sum::<usize>();
        let mut out = Vec::with_capacity(size);
        put_len(&mut out, self.fields.len());
        for (name, value) in &self.fields {
            put_len(&mut out, name.len());
            out.extend_from_slice(name.as_bytes());
            put_len(&mut out, value.len());
            out.extend_from_slice(value.as_bytes());
        }
        out
    }
}

fn put_len(out: &mut Vec<u8>, len: usize) {
    // `with` refuses values longer than u32::MAX, names are at most 64 bytes, and a map of more
    // than u32::MAX fields cannot be built in memory, so this never saturates in practice.
    let len = u32::try_from(len).unwrap_or(u32::MAX);
    out.extend_from_slice(&len.to_be_bytes());
}

fn check_name(name: &str) -> Result<(), EnvelopeError> {
    let invalid = |reason| {
        Err(EnvelopeError::InvalidFieldName {
            name: name.to_owned(),
            reason,
        })
    };
    let bytes = name.as_bytes();
    let Some(first) = bytes.first() else {
        return invalid("it is empty");
    };
    if bytes.len() > MAX_NAME_LEN {
        return invalid("it is longer than 64 bytes");
    }
    if !(first.is_ascii_lowercase() || first.is_ascii_digit()) {
        return invalid("it must start with a-z or 0-9");
    }
    let allowed = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit() || b"-_.".contains(b);
    if !bytes.iter().all(allowed) {
        return invalid("only a-z, 0-9, '-', '_' and '.' are allowed");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enc(pairs: &[(&str, &str)]) -> Vec<u8> {
        Binding::from_pairs(pairs.iter().copied()).unwrap().encode()
    }

    #[test]
    fn encoding_is_length_prefixed_and_sorted() {
        let got = enc(&[("pr", "7"), ("a", "")]);
        let want = [
            &[0, 0, 0, 2][..],
            &[0, 0, 0, 1],
            b"a",
            &[0, 0, 0, 0],
            &[0, 0, 0, 2],
            b"pr",
            &[0, 0, 0, 1],
            b"7",
        ]
        .concat();
        assert_eq!(got, want);
    }

    #[test]
    fn names_are_checked() {
        for bad in ["", "Repo", "-x", "a b", "é", &"x".repeat(65)] {
            let err = Binding::new().with(bad, "v").unwrap_err();
            assert!(
                matches!(err, EnvelopeError::InvalidFieldName { .. }),
                "{bad:?}"
            );
        }
        for good in ["a", "0", "head-sha", "a.b_c", &"x".repeat(64)] {
            Binding::new().with(good, "v").unwrap();
        }
    }

    #[test]
    fn duplicate_names_are_refused() {
        let err = Binding::new()
            .with("pr", "1")
            .unwrap()
            .with("pr", "1")
            .unwrap_err();
        assert_eq!(
            err,
            EnvelopeError::DuplicateField {
                name: "pr".to_owned()
            }
        );
    }
}

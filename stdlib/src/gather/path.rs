//! The `path` a gather is cut to: relative to the repository's top, inside it.

use super::GatherError;

pub use crate::git::MAX_PATH;

/// `None` for the whole tree (`""`, `.`, `./`); otherwise the path with `./`, repeated and
/// trailing `/` removed. Absolute paths, `..`, NUL and line breaks are refused.
pub fn normalise_path(path: &str) -> Result<Option<String>, GatherError> {
    crate::git::relative_path(path).map_err(|reason| GatherError::BadPath {
        path: path.chars().take(200).collect(),
        reason,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths() {
        assert_eq!(normalise_path("").unwrap(), None);
        assert_eq!(normalise_path("./").unwrap(), None);
        assert_eq!(
            normalise_path("./projects//a/").unwrap().as_deref(),
            Some("projects/a")
        );
        for bad in ["/etc", "../x", "a/../../x", "a/..", "a\nb", "\\x"] {
            assert!(normalise_path(bad).is_err(), "{bad:?}");
        }
    }
}

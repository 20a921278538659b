//! The `path` a gather is cut to: relative to the repository's top, inside it.

use std::path::{Component, Path};

use super::GatherError;

/// Longest path accepted, in bytes.
pub const MAX_PATH: usize = 4096;

/// `None` for the whole tree (`""`, `.`, `./`); otherwise the path with `./`, repeated and
/// trailing `/` removed. Absolute paths, `..`, NUL and line breaks are refused.
pub fn normalise_path(path: &str) -> Result<Option<String>, GatherError> {
    let bad = |reason| {
        Err(GatherError::BadPath {
            path: path.chars().take(200).collect(),
            reason,
        })
    };
    if path.len() > MAX_PATH {
        return bad("it is longer than 4096 bytes");
    }
    if path.contains(['\0', '\n', '\r']) {
        return bad("it holds a NUL or line break");
    }
    if path.starts_with('/') || path.starts_with('\\') {
        return bad("it is absolute");
    }
    let mut parts = Vec::new();
    for component in Path::new(path).components() {
        match component {
            Component::Normal(part) => match part.to_str() {
                Some(part) => parts.push(part),
                None => return bad("it is not UTF-8"),
            },
            Component::CurDir => {}
            Component::ParentDir => return bad("it leaves the repository (`..`)"),
            Component::RootDir | Component::Prefix(_) => return bad("it is absolute"),
        }
    }
    Ok((!parts.is_empty()).then(|| parts.join("/")))
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

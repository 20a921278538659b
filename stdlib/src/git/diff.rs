//! The unified diff between two resolved commits (or the empty tree and a commit).
//!
//! `git diff-tree` rather than `git diff`: as plumbing it ignores UI configuration (prefixes,
//! context size, rename settings, external drivers), so the bytes depend only on the two trees.
//! `-M` finds renames; `--full-index` prints full blob ids so the output does not vary with the
//! repository's abbreviation length.

use std::path::{Component, Path};

use super::command::run_ok;
use super::error::echo;
use super::{GitError, Sha};

/// `git diff base..head`, restricted to `path_prefix` (a file or folder, relative to the top of
/// the repository) when given.
pub fn diff(
    repo: &Path,
    base: &Sha,
    head: &Sha,
    path_prefix: Option<&str>,
) -> Result<Vec<u8>, GitError> {
    let mut args = vec![
        "-r".to_owned(),
        "-p".to_owned(),
        "-M".to_owned(),
        "--full-index".to_owned(),
        "--src-prefix=a/".to_owned(),
        "--dst-prefix=b/".to_owned(),
        "--end-of-options".to_owned(),
        base.to_string(),
        head.to_string(),
        "--".to_owned(),
    ];
    if let Some(path) = path_prefix.map(normalise_path).transpose()?.flatten() {
        // `top`: relative to the repository's top, not to `repo`; `literal`: no glob or magic
        // in the caller's text.
        args.push(format!(":(top,literal){path}"));
    }
    run_ok(repo, "diff-tree", args)
}

/// `None` for the whole tree (`""`, `.`, `./`); otherwise the path without `./` or trailing `/`.
fn normalise_path(path: &str) -> Result<Option<String>, GitError> {
    relative_path(path).map_err(|reason| GitError::BadPath {
        path: echo(path),
        reason,
    })
}

/// Longest path accepted, in bytes.
pub const MAX_PATH: usize = 4096;

/// The one check of a path inside the repository, shared by every caller: `None` for the whole
/// tree (`""`, `.`, `./`); otherwise the path with `./`, repeated and trailing `/` removed.
/// Absolute paths, `..`, NUL and line breaks, non-UTF-8 and over-long paths are refused, with the
/// reason.
pub fn relative_path(path: &str) -> Result<Option<String>, &'static str> {
    if path.len() > MAX_PATH {
        return Err("it is longer than 4096 bytes");
    }
    if path.contains(['\0', '\n', '\r']) {
        return Err("it holds a NUL or line break");
    }
    if path.starts_with('/') || path.starts_with('\\') {
        return Err("it is absolute");
    }
    let mut parts = Vec::new();
    for component in Path::new(path).components() {
        match component {
            Component::Normal(part) => match part.to_str() {
                Some(part) => parts.push(part),
                None => return Err("it is not UTF-8"),
            },
            Component::CurDir => {}
            Component::ParentDir => return Err("it leaves the repository (`..`)"),
            Component::RootDir | Component::Prefix(_) => return Err("it is absolute"),
        }
    }
    Ok((!parts.is_empty()).then(|| parts.join("/")))
}

#[cfg(test)]
mod tests {
    use super::normalise_path;

    #[test]
    fn paths_are_normalised_or_refused() {
        assert_eq!(normalise_path("").unwrap(), None);
        assert_eq!(normalise_path("./").unwrap(), None);
        assert_eq!(
            normalise_path("./src//sub/").unwrap().as_deref(),
            Some("src/sub")
        );
        assert_eq!(normalise_path("*.rs").unwrap().as_deref(), Some("*.rs"));
        for bad in ["/etc", "../x", "src/../../x", "a\0b"] {
            assert!(normalise_path(bad).is_err(), "{bad:?}");
        }
    }
}

//! The change under review in a local checkout: its two commits (resolved once), its id, the
//! repository's name, and the head commit's subject and body as the change's title and
//! description.

use std::path::Path;

use super::LocalForgeError;
use super::commit;
use crate::git::{self, Range, Sha};

/// Longest repository name kept.
pub const MAX_REPO_NAME: usize = 64;

/// The change under review.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// Base and head as full SHAs, and what they were resolved from.
    pub range: Range,
    /// The change's stable name ([`git::change_id`]); its folder in the forge.
    pub change_id: String,
    /// The checkout folder's name, sanitised to `[A-Za-z0-9._-]`.
    pub repo: String,
    /// The head commit's subject. Untrusted.
    pub title: String,
    /// The head commit's body. Untrusted.
    pub body: String,
    /// The head branch, when the head is one. Untrusted (the author chose the name).
    pub branch: Option<String>,
}

impl Change {
    pub fn base(&self) -> &Sha {
        &self.range.base_sha
    }

    pub fn head(&self) -> &Sha {
        &self.range.head_sha
    }
}

/// Resolves the change in `checkout`: see [`git::change_range`] for the defaults. In a shallow
/// clone whose boundary hides the change's base this fails with [`git::GitError::Shallow`], whose
/// message names `fetch-depth: 0` and `git fetch --unshallow`, rather than reviewing the whole
/// tree as one change.
pub fn open_change(
    checkout: &Path,
    base: Option<&str>,
    head: Option<&str>,
) -> Result<Change, LocalForgeError> {
    let range = git::change_range(checkout, base, head)?;
    let message = commit::message(checkout, &range.head_sha)?;
    Ok(Change {
        change_id: git::change_id(&range),
        repo: repo_name(checkout),
        title: message.title,
        body: message.body,
        branch: range.head_branch.clone(),
        range,
    })
}

/// The checkout folder's name with every character outside `[A-Za-z0-9._-]` made `-`, leading
/// dots and dashes removed, bounded; `repo` when nothing is left.
pub fn repo_name(checkout: &Path) -> String {
    let canonical = checkout.canonicalize().ok();
    let name = canonical
        .as_deref()
        .unwrap_or(checkout)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let cleaned: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '-'
            }
        })
        .collect();
    let trimmed: String = cleaned
        .trim_start_matches(['.', '-'])
        .chars()
        .take(MAX_REPO_NAME)
        .collect();
    if trimmed.is_empty() {
        "repo".to_owned()
    } else {
        trimmed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repo_names_are_sanitised() {
        assert_eq!(repo_name(Path::new("/no/such/my repo")), "my-repo");
        assert_eq!(repo_name(Path::new("/no/such/..hidden")), "hidden");
        assert_eq!(repo_name(Path::new("/no/such/ünï")), "n-");
        assert_eq!(repo_name(Path::new("/no/such/---")), "repo");
    }
}

//! The change under review in a local checkout: which two commits to diff, and a stable name
//! for the change so that a later review of it finds the earlier one.

use std::path::Path;

use sha2::{Digest, Sha256};

use super::branch::{default_branch, head_branch};
use super::error::echo;
use super::revision::{merge_base, try_resolve};
use super::shallow::{is_shallow, names_a_parent};
use super::{GitError, Sha};

/// How the base of a [`Range`] was chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Basis {
    /// Given by the caller (`--base`).
    Explicit,
    /// The merge base of the head with the default branch: the head is on a topic branch.
    MergeBase,
    /// The head's first parent: the head is on the default branch (or already merged into it),
    /// so the last commit is the change.
    LastCommit,
    /// The head is a root commit: the base is the empty tree.
    Root,
}

/// Two resolved commits and what they were resolved from. Resolved once: later steps use the
/// SHAs, never the names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Range {
    /// A commit, or the empty tree when `basis` is [`Basis::Root`].
    pub base_sha: Sha,
    pub head_sha: Sha,
    /// What the base was resolved from: the `--base` text, the default branch's name, `<head>~1`,
    /// or `(empty tree)`.
    pub base_ref: String,
    /// What the head was resolved from: the `--head` text or `HEAD`.
    pub head_ref: String,
    /// The branch at the head, when the head is a branch (checked out, or named by `--head`).
    pub head_branch: Option<String>,
    /// Whether `head_branch` is the default branch.
    pub on_default_branch: bool,
    pub basis: Basis,
}

/// Works out the range to review.
///
/// The head is `head` or `HEAD`. The base is `base` when given; otherwise the merge base of the
/// head with the default branch; but when the head is on the default branch, or that merge base
/// is the head itself (nothing of its own), or there is no default branch or common history, the
/// base is the head's first parent, and for a root commit the empty tree.
///
/// In a shallow clone ([`is_shallow`](super::is_shallow)) a base that the clone's boundary hides
/// is refused with [`GitError::Shallow`] instead of being replaced by an older fallback (the
/// whole tree, for a head whose parent is cut off):
///
/// - a given `base` that is not a commit of the clone;
/// - no merge base of the head with the default branch (the default branch resolves, the head is
///   not on it): in a shallow clone that means the fork is beyond the boundary;
/// - a head whose commit names a parent that is not in the clone (so the base would be the empty
///   tree). A real root commit is still diffed against the empty tree.
///
/// A shallow clone that holds the base (a given one, the merge base, or the head's parent)
/// proceeds: the diff needs only the two commits.
pub fn change_range(
    repo: &Path,
    base: Option<&str>,
    head: Option<&str>,
) -> Result<Range, GitError> {
    // Said in one line with the fix, rather than as git's "not a git repository" or "unknown
    // revision HEAD".
    if super::top_level(repo)?.is_none() {
        return Err(GitError::NotARepository {
            dir: repo.to_owned(),
        });
    }
    let head_ref = head.unwrap_or("HEAD").to_owned();
    let head_sha = match (head, try_resolve(repo, &head_ref)?) {
        (_, Some(sha)) => sha,
        (None, None) => {
            return Err(GitError::NoCommits {
                dir: repo.to_owned(),
            });
        }
        (Some(text), None) => return Err(GitError::UnknownRevision { rev: echo(text) }),
    };
    let head_branch = match head {
        None => head_branch(repo)?,
        Some(text) => branch_named(repo, text)?,
    };
    let default = default_branch(repo)?;
    let on_default_branch = matches!((&head_branch, &default), (Some(h), Some(d)) if *h == d.name);
    let range = |base_sha, base_ref, basis| Range {
        base_sha,
        head_sha: head_sha.clone(),
        base_ref,
        head_ref: head_ref.clone(),
        head_branch: head_branch.clone(),
        on_default_branch,
        basis,
    };

    if let Some(text) = base {
        let base_sha = match try_resolve(repo, text)? {
            Some(sha) => sha,
            None if is_shallow(repo)? => {
                return Err(GitError::Shallow {
                    missing: format!("the base {:?} is not a commit of it", echo(text)),
                });
            }
            None => return Err(GitError::UnknownRevision { rev: echo(text) }),
        };
        return Ok(range(base_sha, text.to_owned(), Basis::Explicit));
    }
    if let Some(default) = default.as_ref().filter(|_| !on_default_branch)
        && let Some(default_sha) = try_resolve(repo, &default.reference)?
    {
        match merge_base(repo, &head_sha, &default_sha)? {
            Some(fork) if fork != head_sha => {
                return Ok(range(fork, default.name.clone(), Basis::MergeBase));
            }
            // Merged into the default branch: the last commit is the change.
            Some(_) => {}
            None if is_shallow(repo)? => {
                return Err(GitError::Shallow {
                    missing: format!(
                        "the head has no common history with `{}` in it (their merge base is \
                         beyond its boundary)",
                        default.name
                    ),
                });
            }
            // Unrelated histories: the last commit is the change.
            None => {}
        }
    }
    match try_resolve(repo, &format!("{head_sha}^1"))? {
        Some(parent) => Ok(range(parent, format!("{head_ref}~1"), Basis::LastCommit)),
        None if is_shallow(repo)? && names_a_parent(repo, &head_sha)? => Err(GitError::Shallow {
            missing: format!(
                "the parent of the head commit {} is not in it",
                head_sha.short()
            ),
        }),
        None => Ok(range(
            Sha::empty_tree_like(&head_sha),
            "(empty tree)".to_owned(),
            Basis::Root,
        )),
    }
}

/// A branch name for `text` if it names a local branch (`feature` or `refs/heads/feature`).
fn branch_named(repo: &Path, text: &str) -> Result<Option<String>, GitError> {
    let name = text.strip_prefix("refs/heads/").unwrap_or(text);
    if name.is_empty() {
        return Ok(None);
    }
    Ok(try_resolve(repo, &format!("refs/heads/{name}"))?.map(|_| name.to_owned()))
}

/// Longest branch part kept readable in a change id.
const MAX_BRANCH_PART: usize = 48;

/// A stable name for the change under review, fit for a store name
/// (`[A-Za-z0-9][A-Za-z0-9._-]*`, at most 64 characters):
///
/// - on a branch, the default one included: `branch-<name>`, so new commits and rebases of the
///   branch keep the id (on the default branch each new commit is reviewed as the next push of
///   the same change); a name that had to be altered (characters outside `[A-Za-z0-9._-]`, such
///   as `/`, or over 48 characters) also gets `-<8 hex of its SHA-256>`, so `a/b` and `a-b` differ;
/// - with no branch (a detached head): the last commit, `commit-<12 hex of the parent>`; a root
///   commit, `root`;
/// - anything else (a detached head off the default branch, an explicit head that names no
///   branch): `range-<12 hex of the base>`.
pub fn change_id(range: &Range) -> String {
    // A branch is one change across its commits, the default branch too: a new commit on it is
    // reviewed as the next push of the same change, so the next review resumes the last one.
    if let Some(branch) = range.head_branch.as_deref() {
        return format!("branch-{}", sanitise_branch(branch));
    }
    match range.basis {
        Basis::Root => "root".to_owned(),
        Basis::LastCommit => format!("commit-{}", range.base_sha.short()),
        Basis::Explicit | Basis::MergeBase => format!("range-{}", range.base_sha.short()),
    }
}

fn sanitise_branch(branch: &str) -> String {
    let cleaned: String = branch
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '-'
            }
        })
        .take(MAX_BRANCH_PART)
        .collect();
    if cleaned == branch {
        return cleaned;
    }
    let digest = Sha256::digest(branch.as_bytes());
    let tag = reviewflow_engine::hex::encode(&digest[..4]);
    format!("{cleaned}-{tag}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn range(branch: Option<&str>, on_default: bool, basis: Basis) -> Range {
        let sha = Sha::parse(&"ab".repeat(20)).unwrap();
        Range {
            base_sha: sha.clone(),
            head_sha: sha,
            base_ref: String::new(),
            head_ref: "HEAD".into(),
            head_branch: branch.map(str::to_owned),
            on_default_branch: on_default,
            basis,
        }
    }

    #[test]
    fn ids_by_case() {
        assert_eq!(
            change_id(&range(Some("fix-1"), false, Basis::MergeBase)),
            "branch-fix-1"
        );
        assert_eq!(
            change_id(&range(Some("main"), true, Basis::LastCommit)),
            "branch-main"
        );
        assert_eq!(
            change_id(&range(None, true, Basis::LastCommit)),
            "commit-abababababab"
        );
        assert_eq!(
            change_id(&range(None, false, Basis::MergeBase)),
            "range-abababababab"
        );
        assert_eq!(change_id(&range(None, true, Basis::Root)), "root");
        assert_eq!(
            change_id(&range(Some("main"), true, Basis::Explicit)),
            "branch-main"
        );
    }

    #[test]
    fn altered_branch_names_stay_distinct_and_bounded() {
        let slash = change_id(&range(Some("a/b"), false, Basis::MergeBase));
        let dash = change_id(&range(Some("a-b"), false, Basis::MergeBase));
        assert_ne!(slash, dash);
        assert!(slash.starts_with("branch-a-b-"));
        let long = change_id(&range(Some(&"x".repeat(300)), false, Basis::MergeBase));
        let unicode = change_id(&range(Some("fix/ünïcode ../x"), false, Basis::MergeBase));
        for id in [slash, long, unicode] {
            assert!(id.len() <= 64, "{id}");
            assert!(
                id.bytes()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'_' | b'-')),
                "{id}"
            );
        }
    }
}

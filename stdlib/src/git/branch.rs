//! Branches: the one checked out, and the repository's default branch.

use std::path::Path;

use super::GitError;
use super::command::{failed, one_line, run};
use super::revision::try_resolve;

/// The repository's default branch, as found by [`default_branch`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DefaultBranch {
    /// The branch's short name (`main`), comparable with [`head_branch`].
    pub name: String,
    /// The full ref to measure against (`refs/remotes/origin/main` or `refs/heads/main`).
    pub reference: String,
}

/// The short name of the branch checked out, `None` when HEAD is detached.
pub fn head_branch(repo: &Path) -> Result<Option<String>, GitError> {
    symbolic_ref(repo, "HEAD")
        .map(|full| full.and_then(|r| r.strip_prefix("refs/heads/").map(str::to_owned)))
}

/// The default branch: where `origin/HEAD` points if it is set, else `main` or `master` (local,
/// then `origin/`), else the branch checked out; `None` when HEAD is detached and none exists.
pub fn default_branch(repo: &Path) -> Result<Option<DefaultBranch>, GitError> {
    if let Some(target) = symbolic_ref(repo, "refs/remotes/origin/HEAD")?
        && let Some(name) = target.strip_prefix("refs/remotes/origin/")
        && try_resolve(repo, &target)?.is_some()
    {
        return Ok(Some(DefaultBranch {
            name: name.to_owned(),
            reference: target,
        }));
    }
    for prefix in ["refs/heads/", "refs/remotes/origin/"] {
        for name in ["main", "master"] {
            let reference = format!("{prefix}{name}");
            if try_resolve(repo, &reference)?.is_some() {
                return Ok(Some(DefaultBranch {
                    name: name.to_owned(),
                    reference,
                }));
            }
        }
    }
    Ok(head_branch(repo)?.map(|name| DefaultBranch {
        reference: format!("refs/heads/{name}"),
        name,
    }))
}

/// The full ref a symbolic ref points to; `None` when it is not symbolic (or absent).
fn symbolic_ref(repo: &Path, name: &str) -> Result<Option<String>, GitError> {
    let output = run(repo, "symbolic-ref", ["--quiet", "--end-of-options", name])?;
    match output.status.code() {
        Some(0) => one_line("symbolic-ref", &output.stdout).map(Some),
        Some(1) => Ok(None),
        _ => Err(failed("symbolic-ref", &output)),
    }
}

//! Shallow clones (`git clone --depth N`, the actions/checkout default): history stops at the
//! clone's boundary commits, whose parents git acts as if they did not exist. The range of the
//! change uses this to refuse a base it cannot find because of the boundary, rather than review
//! the whole tree as one change.

use std::path::Path;

use super::command::{one_line, run_ok};
use super::{GitError, Sha};

/// Whether the repository is a shallow clone (`git rev-parse --is-shallow-repository`).
pub fn is_shallow(repo: &Path) -> Result<bool, GitError> {
    let stdout = run_ok(repo, "rev-parse", ["--is-shallow-repository"])?;
    match one_line("rev-parse", &stdout)?.as_str() {
        "true" => Ok(true),
        "false" => Ok(false),
        other => Err(GitError::BadOutput {
            subcommand: "rev-parse".to_owned(),
            output: super::error::echo(other),
        }),
    }
}

/// Whether the commit object names a parent (`parent` lines in its header). A shallow boundary
/// commit still names its parents even though they are not in the clone; a root commit names
/// none.
pub(crate) fn names_a_parent(repo: &Path, sha: &Sha) -> Result<bool, GitError> {
    let stdout = run_ok(
        repo,
        "cat-file",
        ["commit", "--end-of-options", sha.as_str()],
    )?;
    Ok(stdout
        .split(|&b| b == b'\n')
        .take_while(|line| !line.is_empty())
        .any(|line| line.starts_with(b"parent ")))
}

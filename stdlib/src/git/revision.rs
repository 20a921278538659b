//! Revisions to commits: resolving a name once to a full SHA, and ancestry between SHAs.
//!
//! Only [`resolve`] takes a caller's text; everything else takes [`Sha`]s, so each name is
//! resolved once and a branch that moves mid-run cannot change what is reviewed.

use std::path::Path;

use super::command::{failed, one_line, run};
use super::error::echo;
use super::{GitError, Sha};

/// Longest revision text accepted, in bytes.
const MAX_REV_LEN: usize = 1024;

/// The commit `rev` names (a branch, tag, SHA, `HEAD~2`, …), as a full SHA. Tags are peeled.
pub fn resolve(repo: &Path, rev: &str) -> Result<Sha, GitError> {
    try_resolve(repo, rev)?.ok_or_else(|| GitError::UnknownRevision { rev: echo(rev) })
}

/// Like [`resolve`], but a name that is not a commit is `Ok(None)`.
pub fn try_resolve(repo: &Path, rev: &str) -> Result<Option<Sha>, GitError> {
    check_rev(rev)?;
    let spec = format!("{rev}^{{commit}}");
    // After --end-of-options even `--output=x` is a revision; --quiet makes "no such commit" an
    // exit 1 without stderr, while a broken repository is still a failure (128).
    let output = run(
        repo,
        "rev-parse",
        ["--verify", "--quiet", "--end-of-options", spec.as_str()],
    )?;
    match output.status.code() {
        Some(0) => Sha::parse(&one_line("rev-parse", &output.stdout)?).map(Some),
        Some(1) => Ok(None),
        _ => Err(failed("rev-parse", &output)),
    }
}

/// The best common ancestor of `a` and `b`; `None` for unrelated histories.
pub fn merge_base(repo: &Path, a: &Sha, b: &Sha) -> Result<Option<Sha>, GitError> {
    let output = run(
        repo,
        "merge-base",
        ["--end-of-options", a.as_str(), b.as_str()],
    )?;
    match output.status.code() {
        Some(0) => Sha::parse(&one_line("merge-base", &output.stdout)?).map(Some),
        Some(1) if output.stderr.is_empty() => Ok(None),
        _ => Err(failed("merge-base", &output)),
    }
}

/// Whether `ancestor` is reachable from `descendant` (a commit is its own ancestor).
pub fn is_ancestor(repo: &Path, ancestor: &Sha, descendant: &Sha) -> Result<bool, GitError> {
    let output = run(
        repo,
        "merge-base",
        [
            "--is-ancestor",
            "--end-of-options",
            ancestor.as_str(),
            descendant.as_str(),
        ],
    )?;
    match output.status.code() {
        Some(0) => Ok(true),
        Some(1) if output.stderr.is_empty() => Ok(false),
        _ => Err(failed("merge-base", &output)),
    }
}

fn check_rev(rev: &str) -> Result<(), GitError> {
    let bad = |reason| {
        Err(GitError::BadRevision {
            rev: echo(rev),
            reason,
        })
    };
    if rev.is_empty() {
        return bad("it is empty");
    }
    if rev.len() > MAX_REV_LEN {
        return bad("it is longer than 1024 bytes");
    }
    if rev.contains(['\0', '\n', '\r']) {
        return bad("it holds a NUL or line break");
    }
    Ok(())
}

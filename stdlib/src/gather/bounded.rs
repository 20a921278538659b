//! The diff of two commits, read with a size limit.
//!
//! The same command as [`crate::git::diff`] (`git diff-tree -r -p -M --full-index` with fixed
//! `a/` and `b/` prefixes, through the hardened [`git_command`]), but stdout is read only up to
//! the limit (and, like every git call, within the time bound): a change can be made arbitrarily large, and the whole of it should never sit in
//! memory just to be refused.

use std::path::Path;

use super::GatherError;
use crate::git::{GitError, Sha, git_command, spawn_bounded};

/// How far past the limit reading goes to report a size before the child is stopped.
const MEASURE_FACTOR: u64 = 16;

/// `git diff-tree base head`, restricted to `path` (already normalised) when given.
pub fn diff(
    repo: &Path,
    base: &Sha,
    head: &Sha,
    path: Option<&str>,
    max_bytes: u64,
) -> Result<Vec<u8>, GatherError> {
    let mut cmd = git_command(repo, "diff-tree");
    cmd.args([
        "-r",
        "-p",
        "-M",
        "--full-index",
        "--src-prefix=a/",
        "--dst-prefix=b/",
        "--end-of-options",
        base.as_str(),
        head.as_str(),
        "--",
    ]);
    if let Some(path) = path {
        // `top`: relative to the repository's top; `literal`: no glob or magic in the text.
        cmd.arg(format!(":(top,literal){path}"));
    }
    // Bounded in time and output by the one git runner; past the limit it counts up to
    // `MEASURE_FACTOR` times more to report a size, then kills git.
    let ran = spawn_bounded(
        cmd,
        "diff-tree",
        max_bytes,
        max_bytes.saturating_mul(MEASURE_FACTOR),
    )?;
    if let Some((size, exact)) = ran.overflow {
        return Err(GatherError::TooLarge {
            what: "diff",
            limit: max_bytes,
            size,
            exact,
        });
    }
    if !ran.status.success() {
        return Err(GitError::Failed {
            subcommand: "diff-tree".to_owned(),
            code: ran.status.code(),
            stderr: String::from_utf8_lossy(&ran.stderr)
                .trim()
                .chars()
                .take(2000)
                .collect(),
        }
        .into());
    }
    Ok(ran.stdout)
}

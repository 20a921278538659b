//! The diff of two commits, read with a size limit.
//!
//! The same command as [`crate::git::diff`] (`git diff-tree -r -p -M --full-index` with fixed
//! `a/` and `b/` prefixes, through the hardened [`git_command`]), but stdout is read only up to
//! the limit: a change can be made arbitrarily large, and the whole of it should never sit in
//! memory just to be refused.

use std::io::{self, Read};
use std::path::Path;
use std::process::Stdio;
use std::thread;

use super::GatherError;
use crate::git::{GitError, Sha, git_command};

/// How far past the limit reading goes to report a size before the child is stopped.
const MEASURE_FACTOR: u64 = 16;
/// Longest stderr kept.
const MAX_STDERR: u64 = 16 * 1024;

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
    let spawn_err = |source| GitError::Spawn {
        subcommand: "diff-tree".to_owned(),
        source,
    };
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(spawn_err)?;
    let (Some(stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
        let _ = child.kill();
        let _ = child.wait();
        return Err(GatherError::Read(io::Error::other("no pipe to the child")));
    };
    // stderr is drained on its own thread so a chatty child cannot block on a full pipe.
    let stderr_reader = thread::spawn(move || {
        let mut buf = Vec::new();
        let mut stderr = stderr;
        let _ = stderr.by_ref().take(MAX_STDERR).read_to_end(&mut buf);
        let _ = io::copy(&mut stderr, &mut io::sink());
        buf
    });

    let mut out = Vec::new();
    let mut stdout = stdout;
    let read = stdout
        .by_ref()
        .take(max_bytes.saturating_add(1))
        .read_to_end(&mut out);
    if let Err(e) = read {
        let _ = child.kill();
        let _ = child.wait();
        let _ = stderr_reader.join();
        return Err(GatherError::Read(e));
    }
    if out.len() as u64 > max_bytes {
        let budget = max_bytes.saturating_mul(MEASURE_FACTOR);
        let more = io::copy(&mut stdout.by_ref().take(budget), &mut io::sink()).unwrap_or(0);
        let mut rest = [0u8; 1];
        let exact = matches!(stdout.read(&mut rest), Ok(0));
        drop(stdout);
        let _ = child.kill();
        let _ = child.wait();
        let _ = stderr_reader.join();
        return Err(GatherError::TooLarge {
            what: "diff",
            limit: max_bytes,
            size: (out.len() as u64).saturating_add(more),
            exact,
        });
    }
    drop(stdout);
    let status = child.wait().map_err(GatherError::Read)?;
    let stderr = stderr_reader.join().unwrap_or_default();
    if !status.success() {
        return Err(GitError::Failed {
            subcommand: "diff-tree".to_owned(),
            code: status.code(),
            stderr: String::from_utf8_lossy(&stderr)
                .trim()
                .chars()
                .take(2000)
                .collect(),
        }
        .into());
    }
    Ok(out)
}

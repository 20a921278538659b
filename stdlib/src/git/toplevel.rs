//! The top level of the work tree holding a folder: where `.reviewflow/` lives, whichever
//! subfolder reviewflow was started from.

use std::path::{Path, PathBuf};

use super::GitError;
use super::command::{one_line, run};

/// `git rev-parse --show-toplevel` in `dir`: `Ok(None)` when `dir` is not in a work tree (or is
/// inside `.git`); an error when git cannot be run or does not answer in time.
pub fn top_level(dir: &Path) -> Result<Option<PathBuf>, GitError> {
    let output = run(dir, "rev-parse", ["--show-toplevel"])?;
    if !output.status.success() {
        return Ok(None);
    }
    let line = one_line("rev-parse", &output.stdout)?;
    let path = PathBuf::from(line);
    Ok((path.is_absolute() && path.is_dir()).then_some(path))
}

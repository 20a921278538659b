//! Safe git access for the local forge: resolving revisions once to full SHAs, the default
//! branch, ancestry, the diff of a range, and the range and identity of the change under review
//! (refused in a shallow clone whose boundary hides the change's base), a commit's files
//! exported as a reviewer's workspace, and one file of a commit (a reviewer's instructions).
//!
//! Every command is built by [`git_command`], which documents the hardening (no pager, no
//! external diff or textconv, no inherited `GIT_*` settings, revisions after `--end-of-options`).
//! Calls are blocking, and bounded in time and output; async callers run them on a blocking
//! thread.

mod branch;
mod command;
mod diff;
mod error;
mod export;
mod file_at;
mod range;
mod revision;
mod sha;
mod shallow;
#[cfg(test)]
pub(crate) mod testing;
mod toplevel;
mod uncommitted;

pub use branch::{DefaultBranch, default_branch, head_branch};
pub(crate) use command::run_ok;
pub(crate) use command::spawn_bounded;
pub use command::{DEFAULT_TIMEOUT, MAX_STDOUT, git_command, timeout};
pub use diff::{MAX_PATH, diff, relative_path};
pub use error::GitError;
pub use export::export_commit;
pub use file_at::{FileAt, file_at};
pub use range::{Basis, Range, change_id, change_range};
pub use revision::{is_ancestor, merge_base, resolve, try_resolve};
pub use sha::{EMPTY_TREE_SHA1, EMPTY_TREE_SHA256, SHORT_LEN, Sha};
pub use shallow::is_shallow;
pub use toplevel::top_level;
pub use uncommitted::has_uncommitted_changes;

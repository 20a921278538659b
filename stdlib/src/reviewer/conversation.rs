//! A conversation on disk: the one restored for a resumed try, and checks on the one a reviewer
//! leaves behind.
//!
//! Both are copied or read by reviewflow and then sealed, so neither may contain a symbolic link
//! (which could make the seal read a file the reviewer never meant to hand over) or a special
//! file, and both are bounded in size.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// Most entries (files and folders) a conversation folder may hold.
pub const MAX_CONVERSATION_ENTRIES: usize = 10_000;

/// Most bytes a conversation may hold in all.
pub const MAX_CONVERSATION_BYTES: u64 = 64 * 1024 * 1024;

/// A restored conversation to resume: where it is, and what the status line calls it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Conversation {
    /// A file or a folder.
    pub path: PathBuf,
    /// The conversation's id, when the restore knows it.
    pub id: Option<String>,
    /// The commit the conversation's review reviewed, when known.
    pub head: Option<String>,
}

impl Conversation {
    /// A conversation at `path`, with no id or head known.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self {
            path: path.into(),
            id: None,
            head: None,
        }
    }

    /// Names the conversation's id.
    pub fn with_id(mut self, id: impl Into<String>) -> Self {
        self.id = Some(id.into());
        self
    }

    /// Names the commit of the review the conversation belongs to.
    pub fn with_head(mut self, head: impl Into<String>) -> Self {
        self.head = Some(head.into());
        self
    }

    /// "the conversation 3f2a of the review of 1a2b", with what is known.
    pub(crate) fn describe(&self) -> String {
        match (&self.id, &self.head) {
            (Some(id), Some(head)) => format!("the conversation {id} of the review of {head}"),
            (Some(id), None) => format!("the conversation {id}"),
            (None, Some(head)) => format!("the conversation of the review of {head}"),
            (None, None) => "the restored conversation".to_owned(),
        }
    }
}

/// Why a conversation on disk is refused.
#[derive(Debug, thiserror::Error)]
pub enum ConversationError {
    #[error("{} is a symbolic link", path.display())]
    Symlink { path: PathBuf },
    #[error("{} is neither a file nor a folder", path.display())]
    Special { path: PathBuf },
    #[error("more than {MAX_CONVERSATION_ENTRIES} entries")]
    TooManyEntries,
    #[error("more than {MAX_CONVERSATION_BYTES} bytes")]
    TooLarge,
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

fn io_error(path: &Path) -> impl FnOnce(io::Error) -> ConversationError + '_ {
    move |source| ConversationError::Io {
        path: path.to_owned(),
        source,
    }
}

/// Running totals of a walk, to enforce the caps.
#[derive(Default)]
pub(crate) struct Budget {
    entries: usize,
    bytes: u64,
}

impl Budget {
    fn take(&mut self, bytes: u64) -> Result<(), ConversationError> {
        self.entries += 1;
        self.bytes = self.bytes.saturating_add(bytes);
        if self.entries > MAX_CONVERSATION_ENTRIES {
            return Err(ConversationError::TooManyEntries);
        }
        if self.bytes > MAX_CONVERSATION_BYTES {
            return Err(ConversationError::TooLarge);
        }
        Ok(())
    }
}

/// Checks that `path` (a file or folder) holds only regular files and folders, within the caps.
pub(crate) fn check_tree(path: &Path) -> Result<(), ConversationError> {
    walk(path, &mut Budget::default(), &mut |_, _| Ok(()))
}

/// Copies the conversation at `from` (file or folder) to `to`, which must not exist, refusing
/// links and special files and enforcing the caps.
pub(crate) fn copy_tree(from: &Path, to: &Path) -> Result<(), ConversationError> {
    walk(from, &mut Budget::default(), &mut |source, is_dir| {
        let relative = source.strip_prefix(from).unwrap_or(Path::new(""));
        let target = if relative.as_os_str().is_empty() {
            to.to_owned()
        } else {
            to.join(relative)
        };
        if is_dir {
            fs::create_dir(&target).map_err(io_error(&target))
        } else {
            fs::copy(source, &target)
                .map(drop)
                .map_err(io_error(&target))
        }
    })
}

/// Visits `path` and, for a folder, everything under it (parents before children), calling
/// `visit(path, is_dir)` on each. Refuses links and special files, and enforces the caps.
pub(crate) fn walk(
    path: &Path,
    budget: &mut Budget,
    visit: &mut dyn FnMut(&Path, bool) -> Result<(), ConversationError>,
) -> Result<(), ConversationError> {
    // symlink_metadata: a link is reported as a link, never followed.
    let meta = fs::symlink_metadata(path).map_err(io_error(path))?;
    let kind = meta.file_type();
    if kind.is_symlink() {
        return Err(ConversationError::Symlink {
            path: path.to_owned(),
        });
    }
    if kind.is_file() {
        budget.take(meta.len())?;
        return visit(path, false);
    }
    if !kind.is_dir() {
        return Err(ConversationError::Special {
            path: path.to_owned(),
        });
    }
    budget.take(0)?;
    visit(path, true)?;
    let mut children = Vec::new();
    for entry in fs::read_dir(path).map_err(io_error(path))? {
        children.push(entry.map_err(io_error(path))?.path());
        if children.len() > MAX_CONVERSATION_ENTRIES {
            return Err(ConversationError::TooManyEntries);
        }
    }
    // Sorted, so that a failure names the same entry on every run.
    children.sort();
    for child in children {
        walk(&child, budget, visit)?;
    }
    Ok(())
}

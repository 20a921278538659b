//! A conversation on disk: the one restored for a resumed try, and checks on the one a reviewer
//! leaves behind.
//!
//! Both are copied or read by reviewflow and then sealed, so neither may contain a symbolic link
//! (which could make the seal read a file the reviewer never meant to hand over) or a special
//! file, and both are bounded in size. Both are read through the engine's reader
//! (`beneath`): by descriptors, no link followed at any component, nothing opened twice.

use std::fs;
use std::io::{self, Read as _, Write as _};
use std::path::{Path, PathBuf};

use reviewflow_engine::beneath::{self, Bounds, Entry, Folder, Node, Visit, WalkError, Why};

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

/// The caps of a conversation, as a walk of the reader enforces them. Depth is bounded too,
/// since a walk holds one descriptor per level.
const BOUNDS: Bounds = Bounds {
    entries: MAX_CONVERSATION_ENTRIES,
    bytes: MAX_CONVERSATION_BYTES,
    depth: 64,
};

impl From<WalkError> for ConversationError {
    fn from(e: WalkError) -> Self {
        match e {
            WalkError::Link(path) => ConversationError::Symlink { path },
            WalkError::Special(path) => ConversationError::Special { path },
            WalkError::TooManyEntries(_) => ConversationError::TooManyEntries,
            WalkError::TooLarge(_) => ConversationError::TooLarge,
            WalkError::Io { path, source } => ConversationError::Io { path, source },
            e @ (WalkError::TooDeep(_) | WalkError::Changed(_)) => ConversationError::Io {
                path: PathBuf::new(),
                source: io::Error::other(e.to_string()),
            },
        }
    }
}

/// A refusal of the reader as a conversation error.
fn refusal(path: &Path, e: io::Error) -> ConversationError {
    match beneath::refused(&e).map(|r| (r.why, r.path.clone())) {
        Some((Why::Link, path)) => ConversationError::Symlink { path },
        Some((Why::Special | Why::NotRegular, path)) => ConversationError::Special { path },
        _ => ConversationError::Io {
            path: path.to_owned(),
            source: e,
        },
    }
}

/// The conversation at `path` (a file or folder), opened through the reader beneath its parent:
/// the parent is reviewflow's, `path` itself and everything below it are not trusted.
pub(crate) fn open(path: &Path) -> Result<Entry, ConversationError> {
    let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
        return Err(ConversationError::Io {
            path: path.to_owned(),
            source: io::Error::new(io::ErrorKind::InvalidInput, "names no file or folder"),
        });
    };
    Folder::open(parent)
        .and_then(|f| f.entry(Path::new(name)))
        .map_err(|e| refusal(path, e))
}

/// Checks that the opened conversation `entry` (at `at`) holds only regular files and folders,
/// within the caps.
pub(crate) fn check_tree(entry: Entry, at: &Path) -> Result<(), ConversationError> {
    walk(entry, at, &mut |_, _| Ok(()))
}

/// Copies the opened conversation `entry` (file or folder, at `at`) to `to`, which must not
/// exist, refusing links and special files and enforcing the caps.
pub(crate) fn copy_tree(entry: Entry, at: &Path, to: &Path) -> Result<(), ConversationError> {
    let mut chunk = vec![0u8; 1 << 16];
    walk(entry, at, &mut |rel, node| {
        let target = if rel.as_os_str().is_empty() {
            to.to_owned()
        } else {
            to.join(rel)
        };
        match node {
            Node::Folder => fs::create_dir(&target),
            Node::File(r) => {
                let mut out = fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .open(&target)?;
                loop {
                    let n = r.read(&mut chunk)?;
                    if n == 0 {
                        return Ok(());
                    }
                    out.write_all(&chunk[..n])?;
                }
            }
        }
    })
}

/// Visits the opened conversation `entry` (at `at`) by descriptors: `visit(relative path,
/// node)`, the folder itself first with the empty path, then everything under it (parents
/// before children, names sorted). A file's contents are read from the descriptor the check was
/// made on, never opened again by path. Refuses links and special files, and enforces the caps.
pub(crate) fn walk(
    entry: Entry,
    at: &Path,
    visit: &mut Visit<'_>,
) -> Result<(), ConversationError> {
    let io_error = |source| ConversationError::Io {
        path: at.to_owned(),
        source,
    };
    match entry {
        Entry::Folder(folder) => {
            visit(Path::new(""), Node::Folder).map_err(io_error)?;
            Ok(beneath::walk(&folder, BOUNDS, visit)?)
        }
        Entry::File(file) => {
            if file.metadata().map_err(io_error)?.len() > MAX_CONVERSATION_BYTES {
                return Err(ConversationError::TooLarge);
            }
            // One byte past the cap is read, to tell a file that grew from one that fits.
            let mut reader = (&file).take(MAX_CONVERSATION_BYTES + 1);
            visit(Path::new(""), Node::File(&mut reader)).map_err(io_error)?;
            // What the visitor left unread still counts.
            io::copy(&mut reader, &mut io::sink()).map_err(io_error)?;
            if reader.limit() == 0 {
                return Err(ConversationError::TooLarge);
            }
            Ok(())
        }
    }
}

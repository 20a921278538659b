//! [`ConfineSpec`]: what one confined child may reach, beyond what every confined child gets.

use std::path::PathBuf;

/// The filesystem and network a confined child may reach, on top of what every confined child
/// gets (the system's program and library folders, a few device files, the folders of its
/// `PATH` and of its program's installation, and its own `/proc/<pid>` entry; see
/// `docs/executor.md`, "What a child can reach").
///
/// Paths are resolved (symbolic links followed) when the child starts; one that does not exist
/// then grants nothing.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ConfineSpec {
    /// Folders (and everything beneath) or files the child may read and execute.
    pub read: Vec<PathBuf>,
    /// Folders or files the child may read, execute, create, change and remove beneath.
    pub write: Vec<PathBuf>,
    /// The child's own folder: read-write, and its `TMPDIR`, `TMP` and `TEMP` unless it declares
    /// them.
    pub work: Option<PathBuf>,
    /// Paths no grant reaches: a grant that is one of them is dropped; a grant that contains one
    /// is narrowed to listing itself and its other entries (see `docs/executor.md`).
    pub hidden: Vec<PathBuf>,
    /// Folders no path of the child may reach at all: covered, in its mount namespace, by an
    /// empty read-only folder (where the engine can make namespaces; else only [`Self::hidden`]
    /// holds, through Landlock).
    pub cover: Vec<PathBuf>,
    /// The folder holding every stage's work folder of the run: covered but for the child's own
    /// folder, so that another stage's folder (and a socket in it) is unreachable.
    pub work_root: Option<PathBuf>,
    /// TCP ports the child may connect to; every other connect, and every bind, is refused.
    pub connect: Vec<u16>,
    /// Whether all of `/proc` is readable. Off, the child reads only its own `/proc/<pid>`;
    /// on, other processes' `environ` and `mem` are still refused (Landlock's ptrace rules).
    pub proc: bool,
    /// Refuse to start the child unless every Landlock feature asked for is enforced.
    pub strict: bool,
}

impl ConfineSpec {
    /// Nothing beyond what every confined child gets.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a path the child may read.
    pub fn read(mut self, path: impl Into<PathBuf>) -> Self {
        self.read.push(path.into());
        self
    }

    /// Adds a path the child may read and write.
    pub fn write(mut self, path: impl Into<PathBuf>) -> Self {
        self.write.push(path.into());
        self
    }

    /// Sets the child's own folder.
    pub fn work(mut self, path: impl Into<PathBuf>) -> Self {
        self.work = Some(path.into());
        self
    }

    /// Adds a path no grant may reach.
    pub fn hide(mut self, path: impl Into<PathBuf>) -> Self {
        self.hidden.push(path.into());
        self
    }

    /// Adds a folder no path may reach (and no grant: it is hidden too).
    pub fn cover(mut self, path: impl Into<PathBuf>) -> Self {
        let path = path.into();
        self.hidden.push(path.clone());
        self.cover.push(path);
        self
    }

    /// Allows TCP connections to `port`.
    pub fn connect(mut self, port: u16) -> Self {
        if !self.connect.contains(&port) {
            self.connect.push(port);
        }
        self
    }
}

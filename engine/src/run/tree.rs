//! Folder outputs: a tree of folders and regular files that a stage returns as a `file` output.
//!
//! A folder is kept by copying it (through the redactor) into a temp folder beside its place in
//! the run directory, digesting the copy, and renaming it into place. The walk is the reader's
//! (`beneath.rs`: by descriptors, one open folder per level, each entry checked on the descriptor
//! it is read by), so a process the stage left behind cannot swap a checked folder for a link
//! while it is read. Symbolic links and
//! special files anywhere inside are refused, naming the path; so are more than
//! [`MAX_ENTRIES`] entries, [`MAX_BYTES`] of file contents in all, or [`MAX_DEPTH`] levels.
//!
//! The digest of a folder, `sha256:<hex>`, is SHA-256 over
//!
//! ```text
//! "folder" 0x00
//! then, for each entry in walk order:
//!     kind          "d" for a folder, "f" for a regular file
//!     path          the entry's path relative to the kept folder, names joined by "/"
//!     0x00
//!     (files only)  the 32 bytes of the SHA-256 of the file's contents
//! ```
//!
//! Walk order is depth first, the entries of each folder sorted by the bytes of their names,
//! a folder right before its contents. The kept folder itself is not an entry (an empty folder
//! digests `"folder" 0x00`). A name holds no NUL and a file's hash has a fixed length, so the
//! bytes parse one way only; the tag `folder` (a single file's digest starts with `file`)
//! keeps a folder and a file from ever sharing a digest. Modes and times are not covered: a kept
//! tree's are always 0700 (folders) and 0600 (files).

use std::fs::File;
use std::io::{self, Write as _};
use std::os::unix::ffi::OsStrExt as _;
use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};

use sha2::{Digest as _, Sha256};

use crate::beneath::{self, Bounds, Folder, Node, Visit, WalkError, Why};

use crate::exec::redact::Redactor;

/// Entries (files and folders, the kept folder itself not counted) a folder output may hold.
pub(crate) const MAX_ENTRIES: usize = 10_000;
/// Bytes of file contents a folder output may hold, in all.
pub(crate) const MAX_BYTES: u64 = 64 << 20;
/// Levels of folders below the kept one: bounds the descriptors open at once.
pub(crate) const MAX_DEPTH: usize = 64;

/// Why a folder cannot be kept (or reused). Paths are those of the folder being read.
#[derive(Debug, thiserror::Error)]
pub(crate) enum TreeError {
    #[error(
        "{} is a symbolic link (a folder output may hold only folders and regular files)",
        .0.display()
    )]
    Link(PathBuf),
    #[error(
        "{} is not a regular file or folder (a folder output may hold only folders and regular files)",
        .0.display()
    )]
    Special(PathBuf),
    #[error("{} holds more than {MAX_ENTRIES} files and folders", .0.display())]
    TooManyEntries(PathBuf),
    #[error("{} holds more than {} MiB", .0.display(), MAX_BYTES >> 20)]
    TooLarge(PathBuf),
    #[error("{} is more than {MAX_DEPTH} folders deep", .0.display())]
    TooDeep(PathBuf),
    #[error("{} changed while it was read", .0.display())]
    Changed(PathBuf),
    #[error("{}: {source}", path.display())]
    Io { path: PathBuf, source: io::Error },
}

fn io_error(path: PathBuf) -> impl FnOnce(io::Error) -> TreeError {
    move |source| TreeError::Io { path, source }
}

const BOUNDS: Bounds = Bounds {
    entries: MAX_ENTRIES,
    bytes: MAX_BYTES,
    depth: MAX_DEPTH,
};

/// Walks the open folder `root` in digest order, by descriptors (`beneath::walk`).
fn walk(root: &Folder, visit: &mut Visit<'_>) -> Result<(), TreeError> {
    beneath::walk(root, BOUNDS, visit).map_err(|e| match e {
        WalkError::Link(p) => TreeError::Link(p),
        WalkError::Special(p) => TreeError::Special(p),
        WalkError::TooManyEntries(_) => TreeError::TooManyEntries(root.path().to_path_buf()),
        WalkError::TooLarge(_) => TreeError::TooLarge(root.path().to_path_buf()),
        WalkError::TooDeep(p) => TreeError::TooDeep(p),
        WalkError::Changed(p) => TreeError::Changed(p),
        WalkError::Io { path, source } => TreeError::Io { path, source },
    })
}

/// The folder at `path`, not followed if it is a link.
fn open(path: &Path) -> Result<Folder, TreeError> {
    Folder::open(path).map_err(|e| match beneath::refused(&e).map(|r| r.why) {
        Some(Why::Link) => TreeError::Link(path.to_path_buf()),
        _ => TreeError::Io {
            path: path.to_path_buf(),
            source: e,
        },
    })
}

/// The digest of the folder at `root` (the scheme is in the module's documentation).
pub(crate) fn digest(root: &Path) -> Result<String, TreeError> {
    digest_of(&open(root)?)
}

/// The digest of the open folder `root`.
pub(crate) fn digest_of(root: &Folder) -> Result<String, TreeError> {
    let mut h = Sha256::new();
    h.update(b"folder\0");
    let mut chunk = vec![0u8; 1 << 16];
    walk(root, &mut |rel, node| {
        let (kind, contents) = match node {
            Node::Folder => (b"d", None),
            Node::File(r) => {
                let mut fh = Sha256::new();
                loop {
                    let n = r.read(&mut chunk)?;
                    if n == 0 {
                        break;
                    }
                    fh.update(&chunk[..n]);
                }
                (b"f", Some(fh.finalize()))
            }
        };
        h.update(kind);
        h.update(rel.as_os_str().as_bytes());
        h.update([0]);
        if let Some(c) = contents {
            h.update(&c[..]);
        }
        Ok(())
    })?;
    Ok(format!("sha256:{}", crate::hex::encode(&h.finalize())))
}

/// Whether `path` is a folder output: a folder, not reached through a link.
pub(crate) fn is_folder(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.is_dir())
}

/// A copy of a folder in a temp folder, digested, not yet in its place (removed if dropped).
pub(crate) struct Staged {
    tmp: tempfile::TempDir,
    pub digest: String,
    /// Its folders that hold nothing, as [`EmptyFolders`] names them.
    pub empty: Vec<String>,
}

/// The folders of a walk that hold nothing: what a copy that carries files only (a CI
/// artifact) loses, and a resume makes again. Paths relative to the walked folder, names joined
/// by `/`, `.` for the folder itself; a name that is not UTF-8 is left out (the manifest that
/// lists them is JSON), and such a folder, if lost, fails its digest as before.
struct EmptyFolders(std::collections::BTreeSet<PathBuf>);

impl EmptyFolders {
    fn new() -> Self {
        Self(std::collections::BTreeSet::from([PathBuf::new()]))
    }

    fn saw(&mut self, rel: &Path, is_dir: bool) {
        if let Some(parent) = rel.parent() {
            self.0.remove(parent);
        }
        if is_dir {
            self.0.insert(rel.to_path_buf());
        }
    }

    fn into_names(self) -> Vec<String> {
        self.0
            .into_iter()
            .filter_map(|p| match p.to_str()? {
                "" => Some(".".to_owned()),
                s => Some(s.to_owned()),
            })
            .collect()
    }
}

/// Copies the open folder `from` into a temp folder in `parent` (through `redactor` when given:
/// what is kept is redacted; a copy of a kept folder is not redacted again) and digests the
/// copy. Blocking.
pub(crate) fn stage(
    from: &Folder,
    parent: &Path,
    redactor: Option<&Redactor>,
) -> Result<Staged, TreeError> {
    // Removed on any error below.
    let tmp = tempfile::Builder::new()
        .prefix(".tmp-")
        .tempdir_in(parent)
        .map_err(io_error(parent.to_path_buf()))?;
    let to = tmp.path().to_path_buf();
    std::fs::set_permissions(&to, std::fs::Permissions::from_mode(0o700))
        .map_err(io_error(to.clone()))?;
    let mut chunk = vec![0u8; 1 << 20];
    let mut empty = EmptyFolders::new();
    walk(from, &mut |rel, node| {
        let dest = to.join(rel);
        empty.saw(rel, matches!(node, Node::Folder));
        match node {
            Node::Folder => std::fs::DirBuilder::new().mode(0o700).create(&dest),
            Node::File(r) => {
                let mut out = std::fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .mode(0o600)
                    .open(&dest)?;
                let mut stream = redactor.map(Redactor::stream);
                loop {
                    let n = r.read(&mut chunk)?;
                    match &mut stream {
                        Some(s) if n == 0 => out.write_all(&s.finish())?,
                        Some(s) => out.write_all(&s.push(&chunk[..n]))?,
                        None => out.write_all(&chunk[..n])?,
                    }
                    if n == 0 {
                        break;
                    }
                }
                // No fsync per file: a copy a crash cut short fails its digest on resume.
                Ok(())
            }
        }
    })?;
    let digest = digest(&to)?;
    Ok(Staged {
        tmp,
        digest,
        empty: empty.into_names(),
    })
}

impl Staged {
    /// Moves the copy to `to`, replacing whatever is there (a copy refused earlier, or one a
    /// rerun of the stage replaces). Blocking.
    pub(crate) fn install(self, to: &Path) -> io::Result<()> {
        match std::fs::symlink_metadata(to) {
            Ok(m) if m.is_dir() => std::fs::remove_dir_all(to)?,
            Ok(_) => std::fs::remove_file(to)?,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        std::fs::rename(self.tmp.path(), to)?;
        let _ = self.tmp.keep();
        if let Some(parent) = to.parent() {
            File::open(parent)?.sync_all()?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (path, contents) in files {
            let p = dir.path().join(path);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, contents).unwrap();
        }
        dir
    }

    #[test]
    fn the_digest_follows_the_documented_scheme() {
        let dir = tree(&[("b", "2"), ("a/x", "1")]);
        std::fs::create_dir(dir.path().join("e")).unwrap();
        let mut h = Sha256::new();
        h.update(b"folder\0");
        h.update(b"da\0");
        h.update(b"fa/x\0");
        h.update(Sha256::digest(b"1"));
        h.update(b"fb\0");
        h.update(Sha256::digest(b"2"));
        h.update(b"de\0");
        let expected = format!("sha256:{}", crate::hex::encode(&h.finalize()));
        assert_eq!(digest(dir.path()).unwrap(), expected);
        let empty = tempfile::tempdir().unwrap();
        assert_eq!(
            digest(empty.path()).unwrap(),
            super::super::digest::digest("folder", b"")
        );
    }

    #[test]
    fn the_digest_sees_contents_names_and_empty_folders() {
        let base = digest(tree(&[("a", "1"), ("d/b", "2")]).path()).unwrap();
        for other in [
            tree(&[("a", "2"), ("d/b", "2")]),
            tree(&[("a", "1"), ("d/c", "2")]),
            tree(&[("a", "1"), ("d/b", "2"), ("d/c", "")]),
            tree(&[("a", "1")]),
            tree(&[("a", "1"), ("db", "2")]),
        ] {
            assert_ne!(digest(other.path()).unwrap(), base);
        }
        let with_empty = tree(&[("a", "1"), ("d/b", "2")]);
        std::fs::create_dir(with_empty.path().join("z")).unwrap();
        assert_ne!(digest(with_empty.path()).unwrap(), base);
        assert_eq!(
            digest(tree(&[("d/b", "2"), ("a", "1")]).path()).unwrap(),
            base
        );
    }

    #[test]
    fn staging_lists_the_empty_folders() {
        let from = tree(&[("a", "1"), ("d/b", "2")]);
        for empty in ["e/f", "e/g", "d/h", "i"] {
            std::fs::create_dir_all(from.path().join(empty)).unwrap();
        }
        let parent = tempfile::tempdir().unwrap();
        let staged = stage(&Folder::open(from.path()).unwrap(), parent.path(), None).unwrap();
        assert_eq!(staged.empty, ["d/h", "e/f", "e/g", "i"]);
        let nothing = tempfile::tempdir().unwrap();
        let staged = stage(&Folder::open(nothing.path()).unwrap(), parent.path(), None).unwrap();
        assert_eq!(staged.empty, ["."]);
    }

    #[test]
    fn a_folder_is_staged_redacted_private_and_installed() {
        let from = tree(&[("a", "key=s3cret-value-1234"), ("d/b", "2")]);
        let parent = tempfile::tempdir().unwrap();
        let r = Redactor::new([("k", "s3cret-value-1234")]).unwrap();
        let staged = stage(&Folder::open(from.path()).unwrap(), parent.path(), Some(&r)).unwrap();
        let to = parent.path().join("out");
        std::fs::create_dir(&to).unwrap();
        std::fs::write(to.join("stale"), "").unwrap();
        let d = staged.digest.clone();
        staged.install(&to).unwrap();
        assert_eq!(
            std::fs::read_to_string(to.join("a")).unwrap(),
            "key=[redacted:k]"
        );
        assert!(!to.join("stale").exists());
        assert_eq!(digest(&to).unwrap(), d);
        assert_eq!(std::fs::read_dir(parent.path()).unwrap().count(), 1);
    }

    #[test]
    fn links_special_files_and_excess_are_refused() {
        let parent = tempfile::tempdir().unwrap();
        let from = tree(&[("d/a", "1")]);
        std::os::unix::fs::symlink("a", from.path().join("d/l")).unwrap();
        let e = stage(&Folder::open(from.path()).unwrap(), parent.path(), None)
            .err()
            .unwrap();
        assert!(
            matches!(&e, TreeError::Link(p) if p.ends_with("d/l")),
            "{e}"
        );
        assert_eq!(std::fs::read_dir(parent.path()).unwrap().count(), 0);

        let link = parent.path().join("link");
        let target = tree(&[]);
        std::os::unix::fs::symlink(target.path(), &link).unwrap();
        assert!(matches!(digest(&link), Err(TreeError::Link(_))));
        std::fs::remove_dir(target.path()).unwrap();
        assert!(matches!(digest(&link), Err(TreeError::Link(_))));

        let many = tempfile::tempdir().unwrap();
        for i in 0..=MAX_ENTRIES {
            std::fs::write(many.path().join(i.to_string()), "").unwrap();
        }
        assert!(matches!(
            digest(many.path()),
            Err(TreeError::TooManyEntries(_))
        ));

        let large = tree(&[("a", "")]);
        std::fs::File::options()
            .write(true)
            .open(large.path().join("a"))
            .unwrap()
            .set_len(MAX_BYTES / 2 + 1)
            .unwrap();
        std::fs::copy(large.path().join("a"), large.path().join("b")).unwrap();
        let e = digest(large.path()).err().unwrap();
        assert!(matches!(e, TreeError::TooLarge(_)), "{e}");
        assert!(e.to_string().contains("64 MiB"), "{e}");

        let deep = tempfile::tempdir().unwrap();
        let mut p = deep.path().to_path_buf();
        for _ in 0..=MAX_DEPTH {
            p.push("d");
        }
        std::fs::create_dir_all(&p).unwrap();
        assert!(matches!(digest(deep.path()), Err(TreeError::TooDeep(_))));
    }
}

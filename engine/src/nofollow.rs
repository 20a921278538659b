//! Paths inside the checkout, which is hostile (in CI it is the pull request's own files): folders
//! are created and opened one component at a time without following a link, and files are opened
//! without following a link, without blocking (a FIFO must not wait for a writer), and read only
//! when the open descriptor is a regular file — within a bound. docs/executor.md, "`.reviewflow/`".
//!
//! The part of a path up to the trusted `base` (the checkout as the caller named it) may hold
//! links; only what lies below it is checked.
//!
//! A refused folder component is named in the error (it is not the path the caller asked for);
//! a refused file is not (`it is a symbolic link …`): the caller names it, once.

use std::ffi::OsStr;
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Component, Path, PathBuf};

use rustix::fs::{AtFlags, CWD, FileType, Mode, OFlags};
use rustix::io::Errno;

use crate::beneath::{self, names};
use crate::bounded::too_large_error;

/// reviewflow's folder at the checkout's top level.
pub const REVIEWFLOW_DIR: &str = ".reviewflow";
/// Its `.gitignore`: nothing in it is ever committed.
pub const GITIGNORE: &str = "# reviewflow's runs, store and posted reviews: never committed.\n*\n";

/// A component that is a symbolic link. The text is what users see.
pub fn link_error(path: &Path) -> io::Error {
    io::Error::other(format!(
        "{} is a symbolic link: reviewflow never follows a link it did not create inside the checkout (remove it)",
        path.display()
    ))
}

fn not_dir_error(path: &Path) -> io::Error {
    io::Error::other(format!(
        "{} exists and is not a folder (remove it)",
        path.display()
    ))
}

/// The file opened is a symbolic link (the caller names the file).
fn file_link_error() -> io::Error {
    io::Error::other(
        "it is a symbolic link: reviewflow never follows a link it did not create inside the checkout (remove it)",
    )
}

fn not_regular_error() -> io::Error {
    io::Error::other("it is not a regular file (a FIFO, socket, device or folder)")
}

fn open_base(base: &Path) -> io::Result<OwnedFd> {
    rustix::fs::open(
        base,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| {
        io::Error::new(
            io::Error::from(e).kind(),
            format!("{}: {e}", base.display()),
        )
    })
}

/// Opens the folder `name` in `dir` without following a link; `Ok(None)` when it is missing.
fn open_child_dir(dir: &impl AsFd, name: &OsStr, at: &Path) -> io::Result<Option<OwnedFd>> {
    match rustix::fs::openat(
        dir,
        name,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    ) {
        Ok(fd) => Ok(Some(fd)),
        Err(Errno::NOENT) => Ok(None),
        Err(Errno::LOOP | Errno::NOTDIR) => {
            match rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
                Ok(st) if FileType::from_raw_mode(st.st_mode) == FileType::Symlink => {
                    Err(link_error(at))
                }
                _ => Err(not_dir_error(at)),
            }
        }
        Err(e) => Err(io::Error::new(
            io::Error::from(e).kind(),
            format!("{}: {e}", at.display()),
        )),
    }
}

/// Creates `base/rel` one component at a time (mode `mode` for the new ones), refusing a
/// component that is a link or not a folder. Returns the path and an open descriptor of it.
pub fn ensure_dir(base: &Path, rel: &Path, mode: u32) -> io::Result<(PathBuf, OwnedFd)> {
    let mut fd = open_base(base)?;
    let mut at = base.to_path_buf();
    for name in names(rel)? {
        at.push(name);
        match rustix::fs::mkdirat(&fd, name, Mode::from_raw_mode(mode)) {
            Ok(()) | Err(Errno::EXIST) => {}
            Err(e) => {
                return Err(io::Error::new(
                    io::Error::from(e).kind(),
                    format!("cannot create {}: {e}", at.display()),
                ));
            }
        }
        fd = open_child_dir(&fd, name, &at)?.ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::NotFound,
                format!("{} vanished while it was created", at.display()),
            )
        })?;
    }
    Ok((at, fd))
}

/// Opens the existing folder `base/rel` without following a link below `base`; `Ok(None)` when
/// a component is missing.
pub fn open_dir(base: &Path, rel: &Path) -> io::Result<Option<OwnedFd>> {
    match beneath::Folder::trusted(base)?.folder(rel) {
        Ok(folder) => Ok(Some(folder.into_fd())),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(checkout_error(e, Path::new(""))),
    }
}

/// `<checkout>/.reviewflow`, created (0700) and checked, with its `.gitignore` written when
/// missing. Returns its path and descriptor.
pub fn reviewflow_dir(checkout: &Path) -> io::Result<(PathBuf, OwnedFd)> {
    let (path, fd) = ensure_dir(checkout, Path::new(REVIEWFLOW_DIR), 0o700)?;
    write_new(&fd, OsStr::new(".gitignore"), GITIGNORE.as_bytes())
        .map_err(|e| io::Error::new(e.kind(), format!("{}/.gitignore: {e}", path.display())))?;
    Ok((path, fd))
}

/// Writes `name` in `dir` when it does not exist (`O_EXCL`: an existing entry, a link included,
/// is left alone and never followed).
fn write_new(dir: &impl AsFd, name: &OsStr, bytes: &[u8]) -> io::Result<()> {
    use std::io::Write as _;
    match rustix::fs::openat(
        dir,
        name,
        OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::from_raw_mode(0o644),
    ) {
        Ok(fd) => File::from(fd).write_all(bytes),
        Err(Errno::EXIST) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// Creates the folder `path` for reviewflow's own use: below `checkout` (the checkout's
/// `.reviewflow` included, with its `.gitignore`) without following a link; elsewhere (a folder
/// the caller chose outside the checkout) as given.
pub fn ensure_dir_in_checkout(checkout: &Path, path: &Path, mode: u32) -> io::Result<PathBuf> {
    let Ok(rel) = path.strip_prefix(checkout) else {
        use std::os::unix::fs::DirBuilderExt as _;
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(mode)
            .create(path)?;
        return Ok(path.to_path_buf());
    };
    let mut parts = names(rel)?.into_iter();
    let mut base = checkout.to_path_buf();
    let mut rest = PathBuf::new();
    if let Some(first) = parts.next() {
        if first == REVIEWFLOW_DIR {
            base = reviewflow_dir(checkout)?.0;
        } else {
            rest.push(first);
        }
    }
    rest.extend(parts);
    Ok(ensure_dir(&base, &rest, mode)?.0)
}

/// Opens `name` in `dir` for reading: no link followed, no blocking, a regular file only
/// (looked at before it is opened, so a device is never opened).
pub fn open_regular_at(dir: &impl AsFd, name: &OsStr) -> io::Result<File> {
    let at = Path::new(name);
    beneath::open_file_at(dir, name, at).map_err(|e| checkout_error(e, at))
}

/// [`open_regular_at`] on a path: only its last component is not followed.
pub fn open_regular(path: &Path) -> io::Result<File> {
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no file name"))?;
    match path.parent().filter(|p| !p.as_os_str().is_empty()) {
        Some(parent) => {
            let dir = rustix::fs::open(
                parent,
                OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
                Mode::empty(),
            )?;
            open_regular_at(&dir, name)
        }
        None => open_regular_at(&CWD, name),
    }
}

/// The reader's refusal in the words this module has always used for the checkout: a folder on
/// the way is named, the file itself is not (the caller names it).
pub(crate) fn checkout_error(e: io::Error, file: &Path) -> io::Error {
    let Some(r) = beneath::refused(&e) else {
        return e;
    };
    let last = r.path.as_os_str().is_empty() || r.path.ends_with(file);
    match r.why {
        beneath::Why::Link if last => file_link_error(),
        beneath::Why::Link => link_error(&r.path),
        beneath::Why::NotFolder => not_dir_error(&r.path),
        beneath::Why::NotRegular | beneath::Why::Special => not_regular_error(),
        beneath::Why::TooLarge(limit) => too_large_error(limit),
        beneath::Why::Changed => e,
    }
}

/// Whether `rel` names something beneath the folder it is taken from: not empty, not absolute,
/// no `..` (what a pipeline names in the checkout, such as a lens or a prompt, must be).
pub fn stays_beneath(rel: &str) -> bool {
    !rel.is_empty()
        && Path::new(rel)
            .components()
            .all(|c| matches!(c, Component::Normal(_) | Component::CurDir))
}

/// Opens `base/rel` for reading with no link followed anywhere below `base` (the reader,
/// `beneath.rs`).
pub fn open_regular_beneath(base: &Path, rel: &Path) -> io::Result<File> {
    beneath::Folder::trusted(base)?
        .file(rel)
        .map_err(|e| checkout_error(e, rel))
}

/// Whether the entry `name` in `dir` is a symbolic link (not followed).
pub fn is_link_at(dir: &impl AsFd, name: &OsStr) -> bool {
    rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW)
        .is_ok_and(|st| FileType::from_raw_mode(st.st_mode) == FileType::Symlink)
}

/// The names in the open folder `dir` (not `.` or `..`), at most `limit` of them.
pub fn list_names(dir: &impl AsFd, limit: usize, at: &Path) -> io::Result<Vec<Vec<u8>>> {
    let mut out = Vec::new();
    // A fresh descriptor: reading a folder moves its position.
    let fd = rustix::fs::openat(
        dir,
        c".",
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    for entry in rustix::fs::Dir::read_from(&fd)? {
        let entry = entry?;
        let name = entry.file_name().to_bytes();
        if name == b"." || name == b".." {
            continue;
        }
        if out.len() >= limit {
            return Err(io::Error::other(format!(
                "{} holds more than {limit} entries",
                at.display()
            )));
        }
        out.push(name.to_vec());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bounded::read_bounded;
    use std::os::unix::fs::symlink;

    #[test]
    fn folders_are_created_without_following_links() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let (p, _) = ensure_dir(dir.path(), Path::new("a/b"), 0o700).unwrap();
        assert!(p.is_dir());
        symlink(outside.path(), dir.path().join("l")).unwrap();
        let e = ensure_dir(dir.path(), Path::new("l/x"), 0o700).unwrap_err();
        assert!(e.to_string().contains("is a symbolic link"), "{e}");
        assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);
        std::fs::write(dir.path().join("f"), "").unwrap();
        let e = ensure_dir(dir.path(), Path::new("f/x"), 0o700).unwrap_err();
        assert!(e.to_string().contains("is not a folder"), "{e}");
        assert!(ensure_dir(dir.path(), Path::new("../x"), 0o700).is_err());
    }

    #[test]
    fn the_reviewflow_folder_has_its_gitignore() {
        let dir = tempfile::tempdir().unwrap();
        let runs = dir.path().join(".reviewflow/runs");
        ensure_dir_in_checkout(dir.path(), &runs, 0o700).unwrap();
        assert!(runs.is_dir());
        assert_eq!(
            std::fs::read_to_string(dir.path().join(".reviewflow/.gitignore")).unwrap(),
            GITIGNORE
        );
        let outside = tempfile::tempdir().unwrap();
        let other = tempfile::tempdir().unwrap();
        symlink(outside.path(), other.path().join(".reviewflow")).unwrap();
        let e = ensure_dir_in_checkout(other.path(), &other.path().join(".reviewflow/runs"), 0o700)
            .unwrap_err();
        assert!(e.to_string().contains("symbolic link"), "{e}");
        assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);
    }

    #[test]
    fn only_regular_files_are_opened_and_reads_are_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("f");
        std::fs::write(&f, "12345").unwrap();
        assert_eq!(
            read_bounded(open_regular(&f).unwrap(), 5).unwrap(),
            b"12345"
        );
        let e = read_bounded(open_regular(&f).unwrap(), 4).unwrap_err();
        assert!(e.to_string().contains("larger than 4 bytes"), "{e}");
        let l = dir.path().join("l");
        symlink(&f, &l).unwrap();
        let e = open_regular(&l).unwrap_err();
        assert!(e.to_string().contains("symbolic link"), "{e}");
        let fifo = dir.path().join("p");
        rustix::fs::mknodat(CWD, &fifo, FileType::Fifo, Mode::from_raw_mode(0o600), 0).unwrap();
        // Would block forever without O_NONBLOCK.
        let e = open_regular(&fifo).unwrap_err();
        assert!(e.to_string().contains("not a regular file"), "{e}");
        std::fs::create_dir(dir.path().join("d")).unwrap();
        symlink(dir.path(), dir.path().join("d/up")).unwrap();
        let e = open_regular_beneath(dir.path(), Path::new("d/up/f")).unwrap_err();
        assert!(e.to_string().contains("symbolic link"), "{e}");
        assert!(open_regular_beneath(dir.path(), Path::new("f")).is_ok());
    }
}

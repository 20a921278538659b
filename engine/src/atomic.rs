//! Atomic file writes, for the run directory and the stores alike: readers see either the old
//! file or the complete new one, never a part, and a crash leaves at worst a stray temp file
//! (prefix [`TEMP_PREFIX`]) that cleanup can remove.
//!
//! Recipe: create a temp file in the destination's own folder (a rename is atomic only within one
//! file system), write, fsync the file, rename over the destination, fsync the folder so that the
//! rename itself survives a power loss.

use std::ffi::OsStr;
use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use crate::beneath::{Folder, Refused, Why};
use crate::unique;

/// Every temp file starts with this; listings skip it and stale ones are removed by cleanup.
pub const TEMP_PREFIX: &str = ".tmp-";

/// The step of an atomic write that failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AtomicStep {
    /// The destination has no parent folder or no file name.
    Destination,
    CreateTemp,
    Write,
    SyncFile,
    Rename,
    SyncDir,
}

impl std::fmt::Display for AtomicStep {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Destination => "check the destination of",
            Self::CreateTemp => "create a temp file for",
            Self::Write => "write",
            Self::SyncFile => "sync",
            Self::Rename => "rename into place",
            Self::SyncDir => "sync the folder of",
        })
    }
}

/// An atomic write that did not happen; the destination is unchanged (unless the step is
/// [`AtomicStep::SyncDir`], where the new file is in place but may not survive a power loss).
#[derive(Debug, thiserror::Error)]
#[error("cannot {step} {}: {source}", path.display())]
pub struct AtomicWriteError {
    pub path: PathBuf,
    pub step: AtomicStep,
    #[source]
    pub source: io::Error,
}

/// Writes `bytes` to `path` atomically.
pub fn atomic_write(path: &Path, bytes: &[u8]) -> Result<(), AtomicWriteError> {
    atomic_write_with(path, |file| file.write_all(bytes))
}

/// Copies `reader` to `path` atomically; returns the number of bytes written.
pub fn atomic_write_from(path: &Path, mut reader: impl Read) -> Result<u64, AtomicWriteError> {
    atomic_write_with(path, |file| io::copy(&mut reader, file))
}

/// Lets `fill` write the new content into the temp file, then puts it in place atomically.
/// `fill`'s result is returned; if it fails, the temp file is removed and nothing changes.
pub fn atomic_write_with<T>(
    path: &Path,
    fill: impl FnOnce(&mut File) -> io::Result<T>,
) -> Result<T, AtomicWriteError> {
    let fail = |step, source| AtomicWriteError {
        path: path.to_path_buf(),
        step,
        source,
    };
    let dir = parent_dir(path).ok_or_else(|| {
        fail(
            AtomicStep::Destination,
            io::Error::new(io::ErrorKind::InvalidInput, "no parent folder"),
        )
    })?;
    if path.file_name().is_none() {
        return Err(fail(
            AtomicStep::Destination,
            io::Error::new(io::ErrorKind::InvalidInput, "no file name"),
        ));
    }
    let (temp_path, mut file) = create_temp(dir).map_err(|e| fail(AtomicStep::CreateTemp, e))?;
    let staged = (|| {
        let value = fill(&mut file).map_err(|e| (AtomicStep::Write, e))?;
        file.flush().map_err(|e| (AtomicStep::Write, e))?;
        file.sync_all().map_err(|e| (AtomicStep::SyncFile, e))?;
        drop(file);
        std::fs::rename(&temp_path, path).map_err(|e| (AtomicStep::Rename, e))?;
        Ok(value)
    })();
    match staged {
        Ok(value) => {
            sync_dir(dir).map_err(|e| fail(AtomicStep::SyncDir, e))?;
            Ok(value)
        }
        Err((step, source)) => {
            // Best effort: a leftover temp file is harmless and cleaned later.
            let _ = std::fs::remove_file(&temp_path);
            Err(fail(step, source))
        }
    }
}

/// Writes `bytes` as `name` in the open folder `dir`, atomically and by descriptor (the temp
/// file, the rename and the folder's sync never resolve a path again): for a file a person
/// named (`--out`). Only a regular file is replaced: a symbolic link, FIFO, device or folder at
/// `name` is refused, never written through nor replaced.
pub fn atomic_write_beneath(
    dir: &Folder,
    name: &OsStr,
    bytes: &[u8],
) -> Result<(), AtomicWriteError> {
    use rustix::fs::{AtFlags, FileType, Mode, OFlags};
    use rustix::io::Errno;
    let path = dir.path().join(name);
    let fail = |step, source| AtomicWriteError {
        path: path.clone(),
        step,
        source,
    };
    if !crate::beneath::names(Path::new(name)).is_ok_and(|n| n.len() == 1) {
        return Err(fail(
            AtomicStep::Destination,
            io::Error::new(io::ErrorKind::InvalidInput, "not a file name"),
        ));
    }
    match rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) => {
            let why = match FileType::from_raw_mode(st.st_mode) {
                FileType::RegularFile => None,
                FileType::Symlink => Some(Why::Link),
                _ => Some(Why::NotRegular),
            };
            if let Some(why) = why {
                return Err(fail(
                    AtomicStep::Destination,
                    Refused::error(path.clone(), why),
                ));
            }
        }
        Err(Errno::NOENT) => {}
        Err(e) => return Err(fail(AtomicStep::Destination, e.into())),
    }
    let mut created = None;
    for _ in 0..8 {
        let temp = format!("{TEMP_PREFIX}{}", unique::token());
        match rustix::fs::openat(
            dir,
            temp.as_str(),
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o666),
        ) {
            Ok(fd) => {
                created = Some((temp, File::from(fd)));
                break;
            }
            Err(Errno::EXIST) => {}
            Err(e) => return Err(fail(AtomicStep::CreateTemp, e.into())),
        }
    }
    let Some((temp, mut file)) = created else {
        return Err(fail(
            AtomicStep::CreateTemp,
            io::Error::other("no free temp file name"),
        ));
    };
    let staged = (|| {
        file.write_all(bytes).map_err(|e| (AtomicStep::Write, e))?;
        file.sync_all().map_err(|e| (AtomicStep::SyncFile, e))?;
        drop(file);
        rustix::fs::renameat(dir, temp.as_str(), dir, name)
            .map_err(|e| (AtomicStep::Rename, e.into()))
    })();
    if let Err((step, source)) = staged {
        // Best effort: a leftover temp file is harmless.
        let _ = rustix::fs::unlinkat(dir, temp.as_str(), AtFlags::empty());
        return Err(fail(step, source));
    }
    rustix::fs::fsync(dir).map_err(|e| fail(AtomicStep::SyncDir, e.into()))
}

/// Moves an existing file into place by rename (same file system only) after syncing it, then
/// syncs the folder. Used when a complete file already exists beside its destination.
pub fn atomic_rename(from: &Path, to: &Path) -> Result<(), AtomicWriteError> {
    let fail = |step, source| AtomicWriteError {
        path: to.to_path_buf(),
        step,
        source,
    };
    File::open(from)
        .and_then(|f| f.sync_all())
        .map_err(|e| fail(AtomicStep::SyncFile, e))?;
    std::fs::rename(from, to).map_err(|e| fail(AtomicStep::Rename, e))?;
    let dir = parent_dir(to).ok_or_else(|| {
        fail(
            AtomicStep::Destination,
            io::Error::new(io::ErrorKind::InvalidInput, "no parent folder"),
        )
    })?;
    sync_dir(dir).map_err(|e| fail(AtomicStep::SyncDir, e))
}

/// A fresh temp file path in `dir` (not created), for callers that stage a file themselves.
pub fn temp_path_in(dir: &Path) -> PathBuf {
    dir.join(format!("{TEMP_PREFIX}{}", unique::token()))
}

/// Makes the folder's entries (creations, renames, removals) durable. A no-op where folders
/// cannot be opened as files.
pub fn sync_dir(dir: &Path) -> io::Result<()> {
    #[cfg(unix)]
    {
        File::open(dir)?.sync_all()
    }
    #[cfg(not(unix))]
    {
        let _ = dir;
        Ok(())
    }
}

fn parent_dir(path: &Path) -> Option<&Path> {
    match path.parent() {
        Some(p) if p.as_os_str().is_empty() => Some(Path::new(".")),
        other => other,
    }
}

fn create_temp(dir: &Path) -> io::Result<(PathBuf, File)> {
    // create_new refuses an existing file, so a (very unlikely) name clash retries instead of
    // sharing a temp file with another writer.
    let mut last = None;
    for _ in 0..8 {
        let candidate = temp_path_in(dir);
        match OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&candidate)
        {
            Ok(file) => return Ok((candidate, file)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| io::Error::other("no free temp file name")))
}

/// Writes `bytes` to `path` atomically. Blocking: call it through [`write`].
pub fn write_blocking(path: &Path, bytes: &[u8]) -> io::Result<()> {
    atomic_write(path, bytes).map_err(|e| io::Error::new(e.source.kind(), e.to_string()))
}

/// Copies the open file `input` (read from `from`, named in errors) to `path` atomically through
/// `redactor`, in chunks (a 64 MiB conversation is never held whole), and returns the digest of
/// what was written (as [`digest`] computes it for `type_name`). `input` was written by a stage
/// and opened by the reader (`beneath`): more than
/// [`MAX_BYTES`](crate::run::tree::MAX_BYTES) is refused (a clear error naming it), never copied
/// whole.
///
/// [`digest`]: crate::run::digest
pub fn redacted_copy_blocking(
    input: File,
    from: &Path,
    path: &Path,
    redactor: &crate::exec::redact::Redactor,
    type_name: &str,
) -> io::Result<String> {
    use sha2::{Digest as _, Sha256};
    let named = |e: io::Error| io::Error::new(e.kind(), format!("{}: {e}", from.display()));
    let limit = crate::run::tree::MAX_BYTES;
    if input.metadata()?.len() > limit {
        return Err(named(crate::bounded::too_large_error(limit)));
    }
    let mut input = input.take(limit + 1);
    let copied = atomic_write_with(path, |tmp| {
        let mut read = 0u64;
        let mut hash = Sha256::new();
        hash.update(type_name.as_bytes());
        hash.update([0]);
        let mut stream = redactor.stream();
        let mut chunk = vec![0u8; 1 << 20];
        loop {
            let n = input.read(&mut chunk)?;
            read += n as u64;
            if read > limit {
                return Err(named(crate::bounded::too_large_error(limit)));
            }
            let out = if n == 0 {
                stream.finish()
            } else {
                stream.push(&chunk[..n])
            };
            hash.update(&out);
            tmp.write_all(&out)?;
            if n == 0 {
                break;
            }
        }
        Ok(format!("sha256:{}", crate::hex::encode(&hash.finalize())))
    });
    // A failure of the copy itself is said as it is; a failure of the recipe names its step.
    copied.map_err(|e| match e.step {
        AtomicStep::Write => e.source,
        _ => io::Error::new(e.source.kind(), e.to_string()),
    })
}

/// [`write_blocking`] off the runtime's threads.
pub async fn write(path: PathBuf, bytes: Vec<u8>) -> io::Result<()> {
    tokio::task::spawn_blocking(move || write_blocking(&path, &bytes))
        .await
        .map_err(io::Error::other)?
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_the_file_and_leaves_no_temp() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.json");
        atomic_write(&path, b"one").unwrap();
        atomic_write(&path, b"two").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"two");
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("a.json")]);
    }

    #[test]
    fn a_failing_fill_changes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a");
        atomic_write(&path, b"old").unwrap();
        let err = atomic_write_with(&path, |f| {
            f.write_all(b"partial")?;
            Err::<(), _>(io::Error::other("boom"))
        })
        .unwrap_err();
        assert_eq!(err.step, AtomicStep::Write);
        assert_eq!(std::fs::read(&path).unwrap(), b"old");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn streams_from_a_reader() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("b");
        let n = atomic_write_from(&path, &b"streamed"[..]).unwrap();
        assert_eq!(n, 8);
        assert_eq!(std::fs::read(&path).unwrap(), b"streamed");
    }

    #[test]
    fn beneath_a_folder_only_a_regular_file_is_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let folder = Folder::open(dir.path()).unwrap();
        atomic_write_beneath(&folder, OsStr::new("a"), b"one").unwrap();
        atomic_write_beneath(&folder, OsStr::new("a"), b"two").unwrap();
        assert_eq!(std::fs::read(dir.path().join("a")).unwrap(), b"two");
        std::os::unix::fs::symlink(dir.path().join("a"), dir.path().join("l")).unwrap();
        std::fs::create_dir(dir.path().join("d")).unwrap();
        for name in ["l", "d"] {
            let e = atomic_write_beneath(&folder, OsStr::new(name), b"x").unwrap_err();
            assert_eq!(e.step, AtomicStep::Destination, "{e}");
        }
        let e = atomic_write_beneath(&folder, OsStr::new("d/x"), b"x").unwrap_err();
        assert_eq!(e.step, AtomicStep::Destination, "{e}");
        assert_eq!(std::fs::read(dir.path().join("a")).unwrap(), b"two");
        // Nothing left behind: `a`, `l`, `d`.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 3);
    }

    #[test]
    fn a_missing_folder_is_a_create_temp_error() {
        let dir = tempfile::tempdir().unwrap();
        let err = atomic_write(&dir.path().join("no/such/dir/f"), b"x").unwrap_err();
        assert_eq!(err.step, AtomicStep::CreateTemp);
    }
}

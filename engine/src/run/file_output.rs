//! A `file` output ([`FileOutput`]): a regular file or a folder, named beneath the folder it lies
//! in and read only through the reader (`beneath.rs`). Before it is kept, that folder is the
//! stage's own (what its children wrote); once kept, the run directory, and the value carries
//! the digest reviewflow computed as it kept it, so that reading it back proves it is still what
//! was kept (a stage that reached the run directory could have rewritten it, `manifest.json`
//! included, so the record on disk proves nothing).

use std::io::{self, Read as _, Write as _};
use std::path::{Component, Path, PathBuf};

use sha2::{Digest as _, Sha256};

use super::tree;
use crate::beneath::{Entry, Folder};

/// The most bytes a kept file holds (a folder, in all): what reading one back reads at most.
pub const MAX_KEPT_BYTES: u64 = tree::MAX_BYTES;

/// A `file` output: `rel` beneath `folder`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileOutput {
    folder: PathBuf,
    rel: PathBuf,
    kept: Option<Kept>,
}

/// What reviewflow recorded as it kept an output: whose it is, and its digest.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Kept {
    pub stage: String,
    pub output: String,
    /// As the manifest records it (`sha256:…`, a file's over `file` NUL and its bytes, a
    /// folder's by `tree.rs`'s scheme).
    pub digest: String,
}

/// A kept output that cannot be read back.
#[derive(Debug, thiserror::Error)]
pub enum ReadBackError {
    #[error("kept output `{output}` of stage `{stage}` changed after it was kept")]
    Changed { stage: String, output: String },
    #[error("{0}")]
    Read(#[source] io::Error),
}

impl FileOutput {
    /// `rel` beneath `folder`; `rel` must name something below it (no `..`, not absolute).
    pub fn beneath(folder: impl Into<PathBuf>, rel: impl Into<PathBuf>) -> io::Result<Self> {
        let rel = rel.into();
        let below = rel
            .components()
            .all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
        if !below || rel.as_os_str().is_empty() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{} is not a path below its folder", rel.display()),
            ));
        }
        Ok(Self {
            folder: folder.into(),
            rel,
            kept: None,
        })
    }

    /// The file or folder at `path`, beneath its parent.
    pub fn at(path: impl AsRef<Path>) -> io::Result<Self> {
        let path = path.as_ref();
        match (path.parent(), path.file_name()) {
            (Some(parent), Some(name)) => Self::beneath(parent, name),
            _ => Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{} names no file", path.display()),
            )),
        }
    }

    /// A kept output: `rel` in the run directory `folder`, with its record.
    pub(crate) fn kept(folder: &Path, rel: &str, kept: Kept) -> Self {
        Self {
            folder: folder.to_path_buf(),
            rel: PathBuf::from(rel),
            kept: Some(kept),
        }
    }

    /// Where it is.
    pub fn path(&self) -> PathBuf {
        self.folder.join(&self.rel)
    }

    /// The folder it lies beneath.
    pub fn folder(&self) -> &Path {
        &self.folder
    }

    /// Its path below [`Self::folder`].
    pub fn rel(&self) -> &Path {
        &self.rel
    }

    /// The record made when it was kept; `None` before.
    pub fn record(&self) -> Option<&Kept> {
        self.kept.as_ref()
    }

    /// Opens it through the reader: the folder itself not followed, no link below it.
    pub fn open(&self) -> io::Result<Entry> {
        Folder::open(&self.folder)?.entry(&self.rel)
    }

    /// Whether it is a folder (as the reader finds it).
    pub fn is_folder(&self) -> io::Result<bool> {
        Ok(matches!(self.open()?, Entry::Folder(_)))
    }

    fn changed(&self) -> ReadBackError {
        let (stage, output) = self
            .kept
            .as_ref()
            .map(|k| (k.stage.clone(), k.output.clone()))
            .unwrap_or_default();
        ReadBackError::Changed { stage, output }
    }

    /// The bytes of a regular file, at most `limit`; once kept, only if they still match the
    /// digest (the bytes checked are the bytes returned).
    pub fn read(&self, limit: u64) -> Result<Vec<u8>, ReadBackError> {
        let file = match self.open().map_err(ReadBackError::Read)? {
            Entry::File(f) => f,
            Entry::Folder(_) => {
                return Err(ReadBackError::Read(io::Error::other(format!(
                    "{} is a folder, not a file",
                    self.path().display()
                ))));
            }
        };
        let bytes = crate::bounded::read_bounded(file, limit).map_err(|e| {
            ReadBackError::Read(io::Error::new(
                e.kind(),
                format!("{}: {e}", self.path().display()),
            ))
        })?;
        if let Some(k) = &self.kept
            && super::digest::digest("file", &bytes) != k.digest
        {
            return Err(self.changed());
        }
        Ok(bytes)
    }

    /// Copies the file or folder to `to` (a folder replaces what is there; a file is created
    /// new): once kept, only if the copy matches the digest, else nothing is left at `to`.
    /// Files are copied in chunks, within the bounds of a kept output. Blocking.
    pub fn copy_to(&self, to: &Path) -> Result<(), ReadBackError> {
        let io_at = |path: &Path| {
            let path = path.to_path_buf();
            move |e: io::Error| {
                ReadBackError::Read(io::Error::new(e.kind(), format!("{}: {e}", path.display())))
            }
        };
        let parent = to
            .parent()
            .ok_or_else(|| io_at(to)(io::Error::other("no parent folder")))?;
        match self.open().map_err(ReadBackError::Read)? {
            Entry::Folder(dir) => {
                // A kept folder is already redacted: copied as it is, digested on the copy.
                let staged = tree::stage(&dir, parent, None)
                    .map_err(|e| ReadBackError::Read(io::Error::other(e)))?;
                if let Some(k) = &self.kept
                    && staged.digest != k.digest
                {
                    return Err(self.changed());
                }
                staged.install(to).map_err(io_at(to))
            }
            Entry::File(file) => {
                let limit = tree::MAX_BYTES;
                let mut out = std::fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .open(to)
                    .map_err(io_at(to))?;
                let copied = (|| {
                    let mut hash = Sha256::new();
                    hash.update(b"file\0");
                    let mut input = file.take(limit + 1);
                    let mut chunk = vec![0u8; 1 << 16];
                    let mut read = 0u64;
                    loop {
                        let n = input.read(&mut chunk).map_err(io_at(&self.path()))?;
                        if n == 0 {
                            break;
                        }
                        read += n as u64;
                        if read > limit {
                            return Err(ReadBackError::Read(io::Error::new(
                                io::ErrorKind::FileTooLarge,
                                format!(
                                    "{}: it is larger than {}",
                                    self.path().display(),
                                    crate::bounded::size_text(limit)
                                ),
                            )));
                        }
                        hash.update(&chunk[..n]);
                        out.write_all(&chunk[..n]).map_err(io_at(to))?;
                    }
                    let digest = format!("sha256:{}", crate::hex::encode(&hash.finalize()));
                    match &self.kept {
                        Some(k) if k.digest != digest => Err(self.changed()),
                        _ => Ok(()),
                    }
                })();
                if copied.is_err() {
                    let _ = std::fs::remove_file(to);
                }
                copied
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kept(dir: &Path, rel: &str, bytes: &[u8]) -> FileOutput {
        let path = dir.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, bytes).unwrap();
        FileOutput::kept(
            dir,
            rel,
            Kept {
                stage: "make".into(),
                output: "cfg".into(),
                digest: super::super::digest::digest("file", bytes),
            },
        )
    }

    #[test]
    fn a_kept_file_is_read_back_only_while_it_matches() {
        let dir = tempfile::tempdir().unwrap();
        let f = kept(dir.path(), "outputs/make/cfg", b"as kept");
        assert_eq!(f.read(100).unwrap(), b"as kept");
        let copy = dir.path().join("copy");
        f.copy_to(&copy).unwrap();
        assert_eq!(std::fs::read(&copy).unwrap(), b"as kept");
        // A stage that reached the run directory rewrites it.
        std::fs::write(f.path(), b"tampered").unwrap();
        let e = f.read(100).unwrap_err();
        assert_eq!(
            e.to_string(),
            "kept output `cfg` of stage `make` changed after it was kept"
        );
        let again = dir.path().join("again");
        let e = f.copy_to(&again).unwrap_err();
        assert!(matches!(e, ReadBackError::Changed { .. }), "{e}");
        assert!(!again.exists(), "a copy that failed its digest is removed");
    }

    #[test]
    fn a_kept_folder_is_verified_on_its_copy() {
        let dir = tempfile::tempdir().unwrap();
        let folder = dir.path().join("outputs/make/tree");
        std::fs::create_dir_all(folder.join("d")).unwrap();
        std::fs::write(folder.join("d/a"), "1").unwrap();
        let f = FileOutput::kept(
            dir.path(),
            "outputs/make/tree",
            Kept {
                stage: "make".into(),
                output: "tree".into(),
                digest: tree::digest(&folder).unwrap(),
            },
        );
        f.copy_to(&dir.path().join("copy")).unwrap();
        std::fs::write(folder.join("d/b"), "planted").unwrap();
        let e = f.copy_to(&dir.path().join("copy2")).unwrap_err();
        assert!(matches!(e, ReadBackError::Changed { .. }), "{e}");
        assert!(!dir.path().join("copy2").exists());
    }

    #[test]
    fn a_link_on_the_way_to_a_kept_output_is_never_followed() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("cfg"), "SECRET").unwrap();
        let f = kept(dir.path(), "outputs/make/cfg", b"as kept");
        let stage = dir.path().join("outputs/make");
        std::fs::rename(&stage, dir.path().join("outputs/moved")).unwrap();
        std::os::unix::fs::symlink(outside.path(), &stage).unwrap();
        let e = f.read(100).unwrap_err();
        assert!(e.to_string().contains("is a symbolic link"), "{e}");
    }

    #[test]
    fn a_path_must_stay_below_its_folder() {
        for rel in ["../x", "/etc/passwd", "", "a/../../b"] {
            assert!(FileOutput::beneath("/w", rel).is_err(), "{rel:?}");
        }
        let f = FileOutput::at("/w/out/cfg.json").unwrap();
        assert_eq!(
            (f.folder(), f.rel()),
            (Path::new("/w/out"), Path::new("cfg.json"))
        );
        assert_eq!(f.path(), Path::new("/w/out/cfg.json"));
    }
}

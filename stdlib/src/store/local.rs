//! The `local` store: a folder (by default `.reviewflow/store/` in the repository), one subfolder
//! per store name, and per entry `<id>.json` (metadata) plus `<id>.blob` (the bytes) for a blob.
//!
//! Safe under concurrent runs without a lock:
//! - ids are unique per writer (see [`EntryId`]), so writers never touch each other's files;
//! - each file is written atomically (see [`atomic`](super::atomic)); the blob is renamed into
//!   place before its metadata, and only metadata files are listed, so a listed entry always has
//!   its complete blob;
//! - removal goes the other way (metadata first), so an entry leaves the listing before its blob.
//!
//! A crash leaves at worst a temp file or a blob without metadata; [`LocalStore::retain`] removes
//! those once they are an hour old (younger ones may belong to a write in progress).
//!
//! The folder is usually inside the checkout, which is hostile in CI: below the checkout no
//! symbolic link is followed (folders are created and opened one component at a time), files are
//! opened with `O_NOFOLLOW | O_NONBLOCK` and read only when they are regular files, within a
//! bound, and a sidecar that cannot be read is skipped with a reason ([`Listing::skipped`]),
//! never a reason to refuse the whole store (docs/local-forge.md, "The local store").

use reviewflow_engine::hex::encode as hex;
use std::fs::{self, File};
use std::io::{self, Read, Write};
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use reviewflow_engine::nofollow;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::atomic::{self, TEMP_PREFIX};
use super::{Entry, EntryId, EntryKind, Producer, StoreError, StoreName};

/// The store folder, relative to the repository root, when the pipeline names none.
pub const DEFAULT_DIR: &str = ".reviewflow/store";

/// Temp files and metadata-less blobs younger than this may belong to a write in progress.
pub const STALE_AFTER: Duration = Duration::from_secs(60 * 60);

/// Metadata files are small; anything larger is not ours.
const MAX_METADATA_BYTES: u64 = 1 << 20;

const METADATA_FORMAT: u32 = 1;
const META_EXT: &str = ".json";
const BLOB_EXT: &str = ".blob";

/// Where a new blob's bytes come from.
#[derive(Debug, Clone, Copy)]
pub enum BlobSource<'a> {
    Bytes(&'a [u8]),
    /// A regular file, moved into the store (renamed when on the same file system, else copied
    /// and then removed). The caller must not write to it any more.
    MoveFile(&'a Path),
}

/// What [`LocalStore::retain`] removed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RetainReport {
    /// Entries removed, oldest first (the order of removal).
    pub removed: Vec<EntryId>,
    /// Stale temp files and metadata-less blobs removed.
    pub stale_files: usize,
    /// Sidecars that could not be read, left alone.
    pub skipped: Vec<Skipped>,
}

/// The entries of a name, and the sidecars that could not be read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Listing {
    /// Newest first.
    pub entries: Vec<Entry>,
    /// Sidecars skipped, newest first (by their file name's id).
    pub skipped: Vec<Skipped>,
}

/// A sidecar skipped by a listing: corrupt, not a regular file, too large, or misplaced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    /// The entry id its file name gives.
    pub id: String,
    pub path: PathBuf,
    pub reason: String,
}

impl std::fmt::Display for Skipped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.path.display(), self.reason)
    }
}

/// Sidecars a listing reads at most per name: a flood of files cannot hold the store.
const MAX_LISTED_FILES: usize = 100_000;

/// The local store.
#[derive(Debug, Clone)]
pub struct LocalStore {
    /// Trusted as given (links above it are the caller's); nothing below it is followed.
    base: PathBuf,
    root: PathBuf,
}

/// The metadata file: the entry plus a format number, so a later layout can be told apart.
#[derive(Serialize, Deserialize)]
struct Record {
    format: u32,
    #[serde(flatten)]
    entry: Entry,
}

impl LocalStore {
    /// A store in `root`, a folder the caller trusts (no link is followed below it). Nothing
    /// is created until the first write.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        let root = root.into();
        Self {
            base: root.clone(),
            root,
        }
    }

    /// A store in `checkout/rel`: no link is followed below the checkout, and a folder created
    /// in `.reviewflow` gets its `.gitignore`.
    pub fn in_checkout(checkout: &Path, rel: impl AsRef<Path>) -> Self {
        Self {
            base: checkout.to_path_buf(),
            root: checkout.join(rel),
        }
    }

    /// The default store of the repository checked out at `repo`.
    pub fn in_repo(repo: &Path) -> Self {
        Self::in_checkout(repo, DEFAULT_DIR)
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Stores a blob under `name` and returns its entry.
    pub fn put(
        &self,
        name: &StoreName,
        source: BlobSource<'_>,
        producer: Producer,
    ) -> Result<Entry, StoreError> {
        let dir = self.ensure_dir(name)?;
        let created_ns = now_ns();
        let id = EntryId::generate(created_ns);
        let blob_path = dir.join(format!("{id}{BLOB_EXT}"));
        let (size, sha256) = match source {
            BlobSource::Bytes(bytes) => {
                atomic::atomic_write(&blob_path, bytes)?;
                (bytes.len() as u64, hex(&Sha256::digest(bytes)))
            }
            BlobSource::MoveFile(path) => move_in(path, &dir, &blob_path)?,
        };
        let entry = Entry {
            id,
            name: name.clone(),
            kind: EntryKind::Blob,
            created_ns,
            size,
            sha256,
            producer,
        };
        if let Err(e) = write_metadata(&dir, &entry) {
            // Best effort: an orphan blob is removed by retain later anyway.
            let _ = fs::remove_file(&blob_path);
            return Err(e);
        }
        Ok(entry)
    }

    /// Records that the conversation of this review was not kept.
    pub fn put_tombstone(&self, name: &StoreName, producer: Producer) -> Result<Entry, StoreError> {
        let dir = self.ensure_dir(name)?;
        let created_ns = now_ns();
        let entry = Entry {
            id: EntryId::generate(created_ns),
            name: name.clone(),
            kind: EntryKind::Tombstone,
            created_ns,
            size: 0,
            sha256: hex(&Sha256::digest([])),
            producer,
        };
        write_metadata(&dir, &entry)?;
        Ok(entry)
    }

    /// The entries under `name`, newest first (by creation time, then by id, descending). An
    /// unknown name has no entries; unreadable sidecars are left out ([`Self::list_checked`]
    /// says which).
    pub fn list(&self, name: &StoreName) -> Result<Vec<Entry>, StoreError> {
        Ok(self.list_checked(name)?.entries)
    }

    /// The entries under `name` and the sidecars skipped because they cannot be read (corrupt,
    /// a link, not a regular file, too large, misplaced). Only a folder that cannot be listed
    /// at all is an error.
    pub fn list_checked(&self, name: &StoreName) -> Result<Listing, StoreError> {
        let dir = self.dir(name);
        let Some(fd) = self.open(name)? else {
            return Ok(Listing::default());
        };
        let names = nofollow::list_names(&fd, MAX_LISTED_FILES, &dir)
            .map_err(|e| StoreError::io("list", &dir, e))?;
        let mut listing = Listing::default();
        for file_name in names {
            let Some(id) = std::str::from_utf8(&file_name)
                .ok()
                .and_then(|f| f.strip_suffix(META_EXT))
            else {
                continue;
            };
            // Files that are not ours (or temp files, which start with '.') are skipped.
            let Ok(id) = EntryId::parse(id) else { continue };
            let path = dir.join(format!("{id}{META_EXT}"));
            match read_metadata(&fd, name, &id) {
                Ok(Some(entry)) => listing.entries.push(entry),
                Ok(None) => {}
                Err(reason) => listing.skipped.push(Skipped {
                    id: id.to_string(),
                    path,
                    reason,
                }),
            }
        }
        listing
            .entries
            .sort_by(|a, b| (b.created_ns, &b.id).cmp(&(a.created_ns, &a.id)));
        listing.skipped.sort_by(|a, b| b.id.cmp(&a.id));
        Ok(listing)
    }

    /// The blob of `entry`, verified against its size and digest. Refuses, before reading, a blob
    /// larger than `max_bytes`.
    pub fn get(&self, entry: &Entry, max_bytes: u64) -> Result<Vec<u8>, StoreError> {
        let name = || entry.name.to_string();
        let id = || entry.id.to_string();
        if entry.is_tombstone() {
            return Err(StoreError::Tombstone {
                name: name(),
                id: id(),
            });
        }
        let too_large = |size| StoreError::TooLarge {
            name: name(),
            id: id(),
            size,
            max_bytes,
        };
        if entry.size > max_bytes {
            return Err(too_large(entry.size));
        }
        let path = self
            .dir(&entry.name)
            .join(format!("{}{BLOB_EXT}", entry.id));
        let gone = || StoreError::NotFound {
            name: name(),
            id: id(),
        };
        let Some(dir) = self.open(&entry.name)? else {
            return Err(gone());
        };
        // No link followed, no wait on a FIFO: a regular file or a refusal, at once.
        let file_name = format!("{}{BLOB_EXT}", entry.id);
        let file = match nofollow::open_regular_at(&dir, file_name.as_ref()) {
            Ok(file) => file,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(gone()),
            Err(e) => return Err(StoreError::io("open", path, e)),
        };
        let on_disk = file
            .metadata()
            .map_err(|e| StoreError::io("inspect", &path, e))?
            .len();
        if on_disk > max_bytes {
            return Err(too_large(on_disk));
        }
        let mismatch = |actual| StoreError::SizeMismatch {
            name: name(),
            id: id(),
            expected: entry.size,
            actual,
        };
        if on_disk != entry.size {
            return Err(mismatch(on_disk));
        }
        // Read one byte more than expected so a file that grew after the check is caught too.
        let mut bytes = Vec::with_capacity(usize::try_from(entry.size).unwrap_or(0));
        file.take(entry.size.saturating_add(1))
            .read_to_end(&mut bytes)
            .map_err(|e| StoreError::io("read", &path, e))?;
        if bytes.len() as u64 != entry.size {
            return Err(mismatch(bytes.len() as u64));
        }
        let actual = hex(&Sha256::digest(&bytes));
        if actual != entry.sha256 {
            return Err(StoreError::DigestMismatch {
                name: name(),
                id: id(),
                expected: entry.sha256.clone(),
                actual,
            });
        }
        Ok(bytes)
    }

    /// Removes the entries of `name` beyond the `keep_last` newest and those older than
    /// `max_age`, then stale temp files and metadata-less blobs. `None` for both keeps every
    /// entry. The entries removed are always the oldest ones, and they go oldest first, so a
    /// tombstone never goes while an older blob stays.
    pub fn retain(
        &self,
        name: &StoreName,
        keep_last: Option<usize>,
        max_age: Option<Duration>,
    ) -> Result<RetainReport, StoreError> {
        self.retain_at(name, keep_last, max_age, SystemTime::now())
    }

    /// [`retain`](Self::retain) with the clock given: ages are measured from `now`.
    pub fn retain_at(
        &self,
        name: &StoreName,
        keep_last: Option<usize>,
        max_age: Option<Duration>,
        now: SystemTime,
    ) -> Result<RetainReport, StoreError> {
        let dir = self.dir(name);
        let now_ns = ns_since_epoch(now);
        let mut report = RetainReport::default();
        let Listing { entries, skipped } = self.list_checked(name)?;
        report.skipped = skipped;
        let doomed = entries.iter().enumerate().filter(|(index, entry)| {
            // A clock that stepped back makes an entry look new, never negative-aged.
            let age = Duration::from_nanos(now_ns.saturating_sub(entry.created_ns));
            keep_last.is_some_and(|keep| *index >= keep) || max_age.is_some_and(|max| age > max)
        });
        // Oldest first: an interrupted retain never leaves an older blob behind a removed
        // tombstone.
        for (_, entry) in doomed.collect::<Vec<_>>().into_iter().rev() {
            remove_if_present(&dir.join(format!("{}{META_EXT}", entry.id)))?;
            if entry.kind == EntryKind::Blob {
                remove_if_present(&dir.join(format!("{}{BLOB_EXT}", entry.id)))?;
            }
            report.removed.push(entry.id.clone());
        }
        // Only through a folder that is really ours: never a link's target.
        if self.open(name)?.is_some() {
            report.stale_files = remove_stale(&dir, now)?;
        }
        if !report.removed.is_empty() || report.stale_files > 0 {
            atomic::sync_dir(&dir).map_err(|e| StoreError::io("sync", &dir, e))?;
        }
        Ok(report)
    }

    fn dir(&self, name: &StoreName) -> PathBuf {
        self.root.join(name.as_str())
    }

    /// The folder of `name`, opened with no link followed below the base; `None` if missing.
    fn open(&self, name: &StoreName) -> Result<Option<OwnedFd>, StoreError> {
        let dir = self.dir(name);
        let rel = dir
            .strip_prefix(&self.base)
            .unwrap_or(Path::new(name.as_str()));
        match nofollow::open_dir(&self.base, rel) {
            Ok(fd) => Ok(fd),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(StoreError::io("open", &dir, e)),
        }
    }

    fn ensure_dir(&self, name: &StoreName) -> Result<PathBuf, StoreError> {
        let dir = self.dir(name);
        if self.base == self.root {
            fs::create_dir_all(&self.root).map_err(|e| StoreError::io("create", &self.root, e))?;
        }
        // Checked every time, not only when created: a committed link is never written through.
        nofollow::ensure_dir_in_checkout(&self.base, &dir, 0o700)
            .map_err(|e| StoreError::io("create", &dir, e))?;
        // Make the new folder's own entry durable before files are renamed into it.
        atomic::sync_dir(&self.root).map_err(|e| StoreError::io("sync", &self.root, e))?;
        Ok(dir)
    }
}

fn write_metadata(dir: &Path, entry: &Entry) -> Result<(), StoreError> {
    let path = dir.join(format!("{}{META_EXT}", entry.id));
    let record = Record {
        format: METADATA_FORMAT,
        entry: entry.clone(),
    };
    let json = serde_json::to_vec_pretty(&record)
        .map_err(|e| StoreError::io("encode", &path, io::Error::other(e)))?;
    atomic::atomic_write(&path, &json)?;
    Ok(())
}

/// `Ok(None)` when the file vanished (a concurrent retain removed it); `Err` with the reason
/// when it cannot be read or believed.
fn read_metadata(dir: &OwnedFd, name: &StoreName, id: &EntryId) -> Result<Option<Entry>, String> {
    let file_name = format!("{id}{META_EXT}");
    let file = match nofollow::open_regular_at(dir, file_name.as_ref()) {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e.to_string()),
    };
    let bytes = match reviewflow_engine::bounded::read_bounded(file, MAX_METADATA_BYTES) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == io::ErrorKind::FileTooLarge => {
            return Err("larger than 1 MiB".into());
        }
        Err(e) => return Err(format!("cannot read it: {e}")),
    };
    let record: Record = serde_json::from_slice(&bytes).map_err(|e| e.to_string())?;
    let entry = record.entry;
    if record.format != METADATA_FORMAT {
        return Err(format!("unknown format {}", record.format));
    }
    if &entry.id != id || &entry.name != name {
        return Err("its id or name does not match its place".into());
    }
    if entry.sha256.len() != 64
        || !entry
            .sha256
            .bytes()
            .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(&c))
    {
        return Err("its sha256 is not 64 lowercase hex digits".into());
    }
    if entry.is_tombstone() && entry.size != 0 {
        return Err("a tombstone with a size".into());
    }
    Ok(Some(entry))
}

/// Moves `source` to `blob_path` (in `dir`) and returns its size and digest.
fn move_in(source: &Path, dir: &Path, blob_path: &Path) -> Result<(u64, String), StoreError> {
    let meta = fs::symlink_metadata(source).map_err(|e| StoreError::io("inspect", source, e))?;
    if !meta.is_file() {
        return Err(StoreError::NotAFile {
            path: source.to_path_buf(),
        });
    }
    let staged = atomic::temp_path_in(dir);
    match fs::rename(source, &staged) {
        Ok(()) => {
            let hashed = File::open(&staged)
                .map_err(|e| StoreError::io("open", &staged, e))
                .and_then(|mut f| hash_reader(&mut f, &staged));
            let placed = hashed.and_then(|sum| {
                atomic::atomic_rename(&staged, blob_path)
                    .map(|()| sum)
                    .map_err(Into::into)
            });
            if placed.is_err() {
                let _ = fs::remove_file(&staged);
            }
            placed
        }
        Err(e) if e.kind() == io::ErrorKind::CrossesDevices => {
            let mut input = File::open(source).map_err(|e| StoreError::io("open", source, e))?;
            let sum = atomic::atomic_write_with(blob_path, |out| {
                let mut tee = HashingWriter {
                    inner: out,
                    hasher: Sha256::new(),
                    len: 0,
                };
                io::copy(&mut input, &mut tee)?;
                Ok((tee.len, hex(&tee.hasher.finalize())))
            })?;
            fs::remove_file(source).map_err(|e| StoreError::io("remove", source, e))?;
            Ok(sum)
        }
        Err(e) => Err(StoreError::io("move", source, e)),
    }
}

fn hash_reader(reader: &mut impl Read, path: &Path) -> Result<(u64, String), StoreError> {
    let mut sink = HashingWriter {
        inner: io::sink(),
        hasher: Sha256::new(),
        len: 0,
    };
    io::copy(reader, &mut sink).map_err(|e| StoreError::io("read", path, e))?;
    Ok((sink.len, hex(&sink.hasher.finalize())))
}

struct HashingWriter<W> {
    inner: W,
    hasher: Sha256,
    len: u64,
}

impl<W: Write> Write for HashingWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hasher.update(&buf[..n]);
        self.len += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

fn remove_if_present(path: &Path) -> Result<(), StoreError> {
    match fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(StoreError::io("remove", path, e)),
    }
}

/// Removes temp files and metadata-less blobs last modified more than [`STALE_AFTER`] before
/// `now`; returns how many.
fn remove_stale(dir: &Path, now: SystemTime) -> Result<usize, StoreError> {
    let read = match fs::read_dir(dir) {
        Ok(read) => read,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(StoreError::io("list", dir, e)),
    };
    let mut removed = 0;
    for item in read {
        let item = item.map_err(|e| StoreError::io("list", dir, e))?;
        let file_name = item.file_name();
        let Some(file_name) = file_name.to_str() else {
            continue;
        };
        let candidate = file_name.starts_with(TEMP_PREFIX)
            || file_name.strip_suffix(BLOB_EXT).is_some_and(|id| {
                EntryId::parse(id).is_ok() && !dir.join(format!("{id}{META_EXT}")).exists()
            });
        if !candidate {
            continue;
        }
        let path = item.path();
        let modified = match item.metadata().and_then(|m| m.modified()) {
            Ok(modified) => modified,
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => return Err(StoreError::io("inspect", path, e)),
        };
        let stale = now
            .duration_since(modified)
            .is_ok_and(|age| age > STALE_AFTER);
        if stale {
            remove_if_present(&path)?;
            removed += 1;
        }
    }
    Ok(removed)
}

fn now_ns() -> u64 {
    ns_since_epoch(SystemTime::now())
}

fn ns_since_epoch(time: SystemTime) -> u64 {
    // Before 1970 or after 2554: clamp rather than fail; only ordering and ages depend on it.
    time.duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

//! Atomic file writes: a reader sees the old file or the whole new one, never a part.
//!
//! The recipe of the stdlib's store (`stdlib/src/store/atomic.rs`), restated here because the
//! engine cannot depend on the stdlib: a temp file in the destination's folder, write, fsync,
//! rename over the destination, fsync the folder so that the rename survives a power loss.

use std::fs::File;
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};

/// Writes `bytes` to `path` atomically. Blocking: call it through [`write`].
pub fn write_blocking(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let dir = path
        .parent()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no parent folder"))?;
    let mut tmp = tempfile::Builder::new().prefix(".tmp-").tempfile_in(dir)?;
    tmp.write_all(bytes)?;
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    File::open(dir)?.sync_all()
}

/// Copies `from` to `path` atomically through `redactor`, in chunks (a 64 MiB conversation is
/// never held whole), and returns the digest of what was written (as [`digest`] computes it for
/// `type_name`).
///
/// [`digest`]: super::value::digest
pub fn redacted_copy_blocking(
    from: &Path,
    path: &Path,
    redactor: &crate::exec::redact::Redactor,
    type_name: &str,
) -> io::Result<String> {
    use sha2::{Digest as _, Sha256};
    use std::io::Read as _;
    let dir = path
        .parent()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no parent folder"))?;
    let mut input = File::open(from)?;
    let mut tmp = tempfile::Builder::new().prefix(".tmp-").tempfile_in(dir)?;
    let mut hash = Sha256::new();
    hash.update(type_name.as_bytes());
    hash.update([0]);
    let mut stream = redactor.stream();
    let mut chunk = vec![0u8; 1 << 20];
    loop {
        let n = input.read(&mut chunk)?;
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
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    File::open(dir)?.sync_all()?;
    Ok(format!("sha256:{}", super::value::hex(&hash.finalize())))
}

/// [`write_blocking`] off the runtime's threads.
pub async fn write(path: PathBuf, bytes: Vec<u8>) -> io::Result<()> {
    tokio::task::spawn_blocking(move || write_blocking(&path, &bytes))
        .await
        .map_err(io::Error::other)?
}

#[cfg(test)]
mod tests {
    #[test]
    fn replaces_whole_files() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("m.json");
        super::write_blocking(&p, b"one").unwrap();
        super::write_blocking(&p, b"two").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"two");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}

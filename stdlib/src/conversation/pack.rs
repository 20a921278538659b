//! A folder conversation as one byte string, so that it can be sealed like a file.
//!
//! The format (docs/sealed-store.md, "A folder conversation") is a sequence of entries, parents
//! before children, sorted by path:
//!
//! ```text
//! entry = kind (1 byte: 'd' folder, 'f' file) ‖ u16 BE path length ‖ path (UTF-8)
//!         ‖ for a file: u64 BE length ‖ the file's bytes
//! ```
//!
//! A path is relative to the folder, `/`-separated, each component non-empty, not `.` or `..`,
//! without NUL, at most 255 bytes; the whole path at most 4,096 bytes. Unpacking is hostile-input
//! parsing even though the bundle was authenticated (the sealing run may have been compromised):
//! every rule is checked, a file's folder must have been declared before it, nothing that exists
//! is overwritten, and the entry and byte caps hold.

use std::fs;
use std::io::{self, Write};
use std::path::{Component, Path, PathBuf};

use reviewflow_engine::beneath::Node;

use crate::reviewer::conversation::{
    ConversationError, MAX_CONVERSATION_BYTES, MAX_CONVERSATION_ENTRIES, open, walk,
};

const FOLDER: u8 = b'd';
const FILE: u8 = b'f';
const MAX_COMPONENT: usize = 255;
const MAX_PATH: usize = 4096;

#[derive(Debug, thiserror::Error)]
pub enum PackError {
    #[error("{} is a symbolic link", .0.display())]
    Symlink(PathBuf),
    #[error("{} is neither a file nor a folder", .0.display())]
    Special(PathBuf),
    #[error("more than {MAX_CONVERSATION_ENTRIES} entries")]
    TooManyEntries,
    #[error("more than {MAX_CONVERSATION_BYTES} bytes")]
    TooLarge,
    #[error("the packed folder is malformed: {0}")]
    Malformed(String),
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

fn io_at(path: &Path) -> impl FnOnce(io::Error) -> PackError + '_ {
    move |source| PackError::Io {
        path: path.to_owned(),
        source,
    }
}

/// Packs the folder at `root` (the folder itself is implied, not an entry). The walk is the
/// one every conversation on disk goes through (the reader's: by descriptors, no link, no special
/// file, the caps), and each file's bytes are read from the descriptor it was checked on; the
/// entries are then put in bytewise order, which keeps every folder before what it holds.
pub fn pack_folder(root: &Path) -> Result<Vec<u8>, PackError> {
    let mut entries: Vec<(String, Option<Vec<u8>>)> = Vec::new();
    walk(open(root)?, root, &mut |rel, node| {
        if rel.as_os_str().is_empty() {
            return Ok(());
        }
        let relative = rel
            .to_str()
            .ok_or_else(|| io::Error::other(format!("{}: its name is not UTF-8", rel.display())))?;
        let bytes = match node {
            Node::Folder => None,
            Node::File(r) => {
                let mut bytes = Vec::new();
                r.read_to_end(&mut bytes)?;
                Some(bytes)
            }
        };
        entries.push((relative.to_owned(), bytes));
        Ok(())
    })
    .map_err(PackError::from)?;
    entries.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
    let mut out = Vec::new();
    for (relative, bytes) in entries {
        check_path(&relative)?;
        let Some(bytes) = bytes else {
            put_header(&mut out, FOLDER, &relative);
            continue;
        };
        if (out.len() + bytes.len()) as u64 > MAX_CONVERSATION_BYTES {
            return Err(PackError::TooLarge);
        }
        put_header(&mut out, FILE, &relative);
        out.extend_from_slice(&(bytes.len() as u64).to_be_bytes());
        out.extend_from_slice(&bytes);
    }
    Ok(out)
}

impl From<ConversationError> for PackError {
    fn from(e: ConversationError) -> Self {
        match e {
            ConversationError::Symlink { path } => PackError::Symlink(path),
            ConversationError::Special { path } => PackError::Special(path),
            ConversationError::TooManyEntries => PackError::TooManyEntries,
            ConversationError::TooLarge => PackError::TooLarge,
            ConversationError::Io { path, source } => PackError::Io { path, source },
        }
    }
}

fn put_header(out: &mut Vec<u8>, kind: u8, path: &str) {
    out.push(kind);
    // check_path bounds the length to MAX_PATH, which fits in a u16.
    out.extend_from_slice(&(path.len() as u16).to_be_bytes());
    out.extend_from_slice(path.as_bytes());
}

fn check_path(path: &str) -> Result<(), PackError> {
    let bad = |why: &str| Err(PackError::Malformed(format!("the path {path:?} {why}")));
    if path.is_empty() || path.len() > MAX_PATH {
        return bad("is empty or longer than 4096 bytes");
    }
    for component in path.split('/') {
        if component.is_empty() || component == "." || component == ".." {
            return bad("has an empty, `.` or `..` component");
        }
        if component.len() > MAX_COMPONENT || component.contains('\0') {
            return bad("has a component longer than 255 bytes or holding NUL");
        }
    }
    // What the rules above mean, as the platform sees it: only plain names.
    if !Path::new(path)
        .components()
        .all(|c| matches!(c, Component::Normal(_)))
    {
        return bad("is not a plain relative path");
    }
    Ok(())
}

/// Unpacks `bytes` into the folder `into`, which must not exist yet.
pub fn unpack_folder(bytes: &[u8], into: &Path) -> Result<(), PackError> {
    if bytes.len() as u64 > MAX_CONVERSATION_BYTES {
        return Err(PackError::TooLarge);
    }
    fs::create_dir(into).map_err(io_at(into))?;
    let mut folders: std::collections::HashSet<String> = std::collections::HashSet::new();
    let mut rest = bytes;
    let mut entries = 0usize;
    let mut previous: Option<String> = None;
    let malformed = |why: &str| PackError::Malformed(why.to_owned());
    while !rest.is_empty() {
        entries += 1;
        if entries > MAX_CONVERSATION_ENTRIES {
            return Err(PackError::TooManyEntries);
        }
        let (&kind, after) = rest.split_first().ok_or_else(|| malformed("truncated"))?;
        let (len, after) = take::<2>(after).ok_or_else(|| malformed("truncated path length"))?;
        let len = usize::from(u16::from_be_bytes(len));
        let (path, after) = split(after, len).ok_or_else(|| malformed("truncated path"))?;
        let path = std::str::from_utf8(path).map_err(|_| malformed("a path is not UTF-8"))?;
        check_path(path)?;
        // Sorted and unique: a duplicate or a reordering is not something pack writes.
        if previous.as_deref().is_some_and(|p| p >= path) {
            return Err(malformed("the entries are not in order, or repeat"));
        }
        if let Some((parent, _)) = path.rsplit_once('/')
            && !folders.contains(parent)
        {
            return Err(malformed("a file comes before its folder"));
        }
        let target = into.join(path);
        match kind {
            FOLDER => {
                fs::create_dir(&target).map_err(io_at(&target))?;
                folders.insert(path.to_owned());
                rest = after;
            }
            FILE => {
                let (size, after) = take::<8>(after).ok_or_else(|| malformed("truncated size"))?;
                let size = usize::try_from(u64::from_be_bytes(size))
                    .map_err(|_| malformed("a file size is too large"))?;
                let (content, after) =
                    split(after, size).ok_or_else(|| malformed("a file is truncated"))?;
                let mut file = fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .open(&target)
                    .map_err(io_at(&target))?;
                file.write_all(content).map_err(io_at(&target))?;
                rest = after;
            }
            _ => return Err(malformed("an entry of unknown kind")),
        }
        previous = Some(path.to_owned());
    }
    Ok(())
}

fn take<const N: usize>(bytes: &[u8]) -> Option<([u8; N], &[u8])> {
    let (head, rest) = split(bytes, N)?;
    Some((head.try_into().ok()?, rest))
}

fn split(bytes: &[u8], at: usize) -> Option<(&[u8], &[u8])> {
    (at <= bytes.len()).then(|| bytes.split_at(at))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(root: &Path) {
        fs::create_dir_all(root.join("sessions/2026")).unwrap();
        fs::write(root.join("sessions/2026/a.jsonl"), b"{\"turn\":1}\n").unwrap();
        fs::write(root.join("config.toml"), b"model = \"x\"\n").unwrap();
        fs::write(root.join("empty"), b"").unwrap();
    }

    #[test]
    fn round_trip_is_exact_and_deterministic() {
        let tmp = tempfile::tempdir().unwrap();
        let from = tmp.path().join("from");
        tree(&from);
        let packed = pack_folder(&from).unwrap();
        assert_eq!(packed, pack_folder(&from).unwrap());
        let into = tmp.path().join("into");
        unpack_folder(&packed, &into).unwrap();
        assert_eq!(
            fs::read(into.join("sessions/2026/a.jsonl")).unwrap(),
            b"{\"turn\":1}\n"
        );
        assert_eq!(fs::read(into.join("empty")).unwrap(), b"");
        assert_eq!(pack_folder(&into).unwrap(), packed);
    }

    /// Bytewise order is not walk order: `a-c` sorts before `a/b`, though the walk meets `a/`
    /// first. The pack is sorted, so it unpacks.
    #[test]
    fn entries_are_in_bytewise_order_not_walk_order() {
        let tmp = tempfile::tempdir().unwrap();
        let from = tmp.path().join("from");
        fs::create_dir_all(from.join("a")).unwrap();
        fs::write(from.join("a/b"), b"1").unwrap();
        fs::write(from.join("a-c"), b"2").unwrap();
        let packed = pack_folder(&from).unwrap();
        let into = tmp.path().join("into");
        unpack_folder(&packed, &into).unwrap();
        assert_eq!(fs::read(into.join("a/b")).unwrap(), b"1");
        assert_eq!(fs::read(into.join("a-c")).unwrap(), b"2");
    }

    #[test]
    fn the_documented_layout() {
        let tmp = tempfile::tempdir().unwrap();
        let from = tmp.path().join("from");
        fs::create_dir_all(from.join("s")).unwrap();
        fs::write(from.join("s/x"), b"hi").unwrap();
        let packed = pack_folder(&from).unwrap();
        assert_eq!(
            packed,
            b"d\x00\x01sf\x00\x03s/x\x00\x00\x00\x00\x00\x00\x00\x02hi"
        );
    }

    #[test]
    fn links_and_special_files_are_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let from = tmp.path().join("from");
        tree(&from);
        std::os::unix::fs::symlink("/etc/passwd", from.join("link")).unwrap();
        assert!(matches!(pack_folder(&from), Err(PackError::Symlink(_))));
        fs::remove_file(from.join("link")).unwrap();
        rustix::fs::mkfifoat(
            rustix::fs::CWD,
            from.join("fifo").as_path(),
            rustix::fs::Mode::from_raw_mode(0o600),
        )
        .unwrap();
        assert!(matches!(pack_folder(&from), Err(PackError::Special(_))));
    }

    #[test]
    fn hostile_packs_are_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let entry = |kind: u8, path: &str, content: Option<&[u8]>| {
            let mut out = vec![kind];
            out.extend_from_slice(&(path.len() as u16).to_be_bytes());
            out.extend_from_slice(path.as_bytes());
            if let Some(c) = content {
                out.extend_from_slice(&(c.len() as u64).to_be_bytes());
                out.extend_from_slice(c);
            }
            out
        };
        let cases: Vec<(&str, Vec<u8>)> = vec![
            ("traversal", entry(FILE, "../x", Some(b"a"))),
            ("absolute", entry(FILE, "/etc/x", Some(b"a"))),
            ("dot", entry(FOLDER, ".", None)),
            ("empty component", entry(FILE, "a//b", Some(b"a"))),
            ("file before folder", entry(FILE, "a/b", Some(b"a"))),
            ("truncated", entry(FILE, "a", Some(b"abc"))[..10].to_vec()),
            ("size past end", {
                let mut e = entry(FILE, "a", Some(b""));
                e.truncate(e.len() - 8);
                e.extend_from_slice(&u64::MAX.to_be_bytes());
                e
            }),
            ("unknown kind", entry(b'x', "a", None)),
            ("duplicate", {
                let mut e = entry(FILE, "a", Some(b"1"));
                e.extend(entry(FILE, "a", Some(b"2")));
                e
            }),
        ];
        for (i, (what, bytes)) in cases.into_iter().enumerate() {
            let into = tmp.path().join(format!("into-{i}"));
            assert!(unpack_folder(&bytes, &into).is_err(), "{what}");
        }
        assert!(!tmp.path().join("x").exists());
    }
}

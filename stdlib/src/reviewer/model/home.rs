//! The private home of one try of a model CLI: `HOME` (Claude keeps sessions under
//! `~/.claude/projects/`) and `CODEX_HOME` (Codex under `sessions/`), both inside the try's own
//! folder, created empty, mode 0700. Nothing of the machine's own home reaches the CLI, and a
//! failed try leaves nothing for the next.

use std::fs;
use std::io;
use std::os::unix::fs::DirBuilderExt as _;
use std::path::{Path, PathBuf};

use reviewflow_engine::beneath::{self, Folder};

use crate::reviewer::kinds::ModelCli;

#[derive(Clone, Debug)]
pub(crate) struct TryHome {
    /// The try's folder: the only place the CLI may write.
    pub root: PathBuf,
    /// `HOME`.
    pub home: PathBuf,
    /// `CODEX_HOME` (created for Codex only: the CLI refuses one that does not exist).
    pub codex_home: PathBuf,
    /// Where Codex writes its last message (`-o`).
    pub last_message: PathBuf,
}

impl TryHome {
    /// `<workdir>/<name>/` with `home/` (and `codex-home/` for Codex), an old one removed first.
    pub fn prepare(workdir: &Path, name: &str, cli: ModelCli) -> io::Result<Self> {
        let root = workdir.join(name);
        fs::create_dir_all(workdir)?;
        match fs::remove_dir_all(&root) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
        private_dir(&root)?;
        let home = root.join("home");
        private_dir(&home)?;
        let codex_home = root.join("codex-home");
        if cli == ModelCli::Codex {
            private_dir(&codex_home)?;
        }
        Ok(TryHome {
            last_message: root.join("last-message.md"),
            root,
            home,
            codex_home,
        })
    }
}

pub(crate) fn private_dir(path: &Path) -> io::Result<()> {
    fs::DirBuilder::new().mode(0o700).create(path)
}

/// Folders on the way, each private.
pub(crate) fn private_dirs(path: &Path) -> io::Result<()> {
    fs::DirBuilder::new()
        .mode(0o700)
        .recursive(true)
        .create(path)
}

/// Claude Code's folder name for a working directory: every character that is not ASCII
/// alphanumeric becomes `-` (`/work/repo` → `-work-repo`).
pub fn encode_project_dir(cwd: &Path) -> String {
    cwd.to_string_lossy()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect()
}

/// A random UUID (version 4), for `--session-id`.
pub(crate) fn uuid_v4() -> Result<String, String> {
    let mut b = [0u8; 16];
    getrandom::fill(&mut b)
        .map_err(|e| format!("the system random number generator failed: {e}"))?;
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
    Ok(format!(
        "{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    ))
}

/// Whether `s` is a UUID in its canonical text form (any version).
pub(crate) fn is_uuid(s: &str) -> bool {
    s.len() == 36
        && s.char_indices().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => c == '-',
            _ => c.is_ascii_hexdigit(),
        })
}

/// The restored session `from` (reviewflow's verified copy in the stage's folder): a regular
/// file, never a link, at most the conversation cap, read through the engine's reader.
pub(crate) fn read_restored(from: &Path) -> Result<Vec<u8>, String> {
    let (Some(parent), Some(name)) = (from.parent(), from.file_name()) else {
        return Err("the restored conversation names no file".to_owned());
    };
    let read = Folder::open(parent).and_then(|f| {
        f.read(
            Path::new(name),
            crate::reviewer::conversation::MAX_CONVERSATION_BYTES,
        )
    });
    match read {
        Ok(bytes) => Ok(bytes),
        Err(e) if e.kind() == io::ErrorKind::FileTooLarge => {
            Err("the restored conversation is too large".to_owned())
        }
        Err(e) if beneath::refused(&e).is_some() => {
            Err("the restored conversation is not a single session file".to_owned())
        }
        Err(e) => Err(format!("the restored conversation {}: {e}", from.display())),
    }
}

/// Writes the session `bytes` at `to`, private, refusing to replace anything.
pub(crate) fn place(bytes: &[u8], to: &Path) -> Result<(), String> {
    if let Some(parent) = to.parent() {
        private_dirs(parent).map_err(|e| format!("cannot place the session: {e}"))?;
    }
    write_new(to, bytes).map_err(|e| format!("cannot place the session: {e}"))
}

fn write_new(path: &Path, bytes: &[u8]) -> io::Result<()> {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .and_then(|mut f| f.write_all(bytes))
}

/// The first lines of a session (JSON lines), bounded, for ids and models.
pub(crate) fn json_lines(bytes: &[u8], max_lines: usize) -> Vec<serde_json::Value> {
    bytes
        .split(|&b| b == b'\n')
        .take(max_lines)
        .filter_map(|l| serde_json::from_slice(l).ok())
        .collect()
}

/// Checks the session the CLI wrote at `path`, in the try's folder, without reading it: opened
/// through the engine's reader beneath that folder (no link at any component, a regular file),
/// within the cap. It is kept later, read through the reader again.
pub(crate) fn check_session(home: &TryHome, path: &Path) -> Result<(), String> {
    session(home, path, |f| {
        let size = f.metadata()?.len();
        if size > crate::reviewer::conversation::MAX_CONVERSATION_BYTES {
            return Err(io::Error::new(io::ErrorKind::FileTooLarge, "too large"));
        }
        Ok(())
    })
}

/// The session the CLI wrote at `path`, in the try's folder: read through the engine's reader
/// beneath that folder (no link at any component, a regular file, within the cap).
pub(crate) fn read_session(home: &TryHome, path: &Path) -> Result<Vec<u8>, String> {
    session(home, path, |f| {
        reviewflow_engine::bounded::read_bounded(
            f,
            crate::reviewer::conversation::MAX_CONVERSATION_BYTES,
        )
    })
}

fn session<T>(
    home: &TryHome,
    path: &Path,
    then: impl FnOnce(fs::File) -> io::Result<T>,
) -> Result<T, String> {
    let rel = path
        .strip_prefix(&home.root)
        .map_err(|_| format!("the session {} is not in the try's folder", path.display()))?;
    let read = Folder::open(&home.root)
        .and_then(|f| f.file(rel))
        .and_then(then);
    match read {
        Ok(value) => Ok(value),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            Err(format!("the CLI wrote no session at {}", path.display()))
        }
        Err(e) if e.kind() == io::ErrorKind::FileTooLarge => {
            Err("the session the CLI left is too large to keep".to_owned())
        }
        Err(e) if beneath::refused(&e).is_some() => {
            Err("the session the CLI left is not a regular file".to_owned())
        }
        Err(e) => Err(format!("the session {}: {e}", path.display())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_project_folder_is_the_path_with_every_other_character_a_dash() {
        assert_eq!(
            encode_project_dir(Path::new("/tmp/reviewflow-review.x_1/ws")),
            "-tmp-reviewflow-review-x-1-ws"
        );
    }

    #[test]
    fn uuids_are_version_4() {
        let id = uuid_v4().unwrap();
        assert!(is_uuid(&id), "{id}");
        assert_eq!(&id[14..15], "4");
        assert!(!is_uuid("not-a-uuid"));
    }
}

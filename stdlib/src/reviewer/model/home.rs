//! The private home of one try of a model CLI: `HOME` (Claude keeps sessions under
//! `~/.claude/projects/`) and `CODEX_HOME` (Codex under `sessions/`), both inside the try's own
//! folder, created empty, mode 0700. Nothing of the machine's own home reaches the CLI, and a
//! failed try leaves nothing for the next.

use std::fs;
use std::io;
use std::os::unix::fs::DirBuilderExt as _;
use std::path::{Path, PathBuf};

use super::ModelCli;

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

/// Copies the restored session `from` (a regular file, never a link, at most the conversation
/// cap) to `to`, private, refusing to replace anything.
pub(crate) fn copy_session(from: &Path, to: &Path) -> Result<(), String> {
    let meta = fs::symlink_metadata(from)
        .map_err(|e| format!("the restored conversation {}: {e}", from.display()))?;
    if !meta.is_file() {
        return Err("the restored conversation is not a single session file".to_owned());
    }
    if meta.len() > crate::reviewer::conversation::MAX_CONVERSATION_BYTES {
        return Err("the restored conversation is too large".to_owned());
    }
    if let Some(parent) = to.parent() {
        private_dirs(parent).map_err(|e| format!("cannot place the session: {e}"))?;
    }
    let bytes = fs::read(from).map_err(|e| format!("cannot read the restored session: {e}"))?;
    write_new(to, &bytes).map_err(|e| format!("cannot place the session: {e}"))
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

/// The first lines of a session file (JSON lines), bounded, for ids and models.
pub(crate) fn json_lines(path: &Path, max_lines: usize) -> Vec<serde_json::Value> {
    use std::io::BufRead as _;
    let Ok(file) = fs::File::open(path) else {
        return Vec::new();
    };
    io::BufReader::new(file)
        .split(b'\n')
        .take(max_lines)
        .filter_map(Result::ok)
        .filter_map(|l| serde_json::from_slice(&l).ok())
        .collect()
}

/// Checks that the session the CLI wrote is a regular file (not a link) within the cap.
pub(crate) fn check_session(path: &Path) -> Result<(), String> {
    let meta = fs::symlink_metadata(path)
        .map_err(|_| format!("the CLI wrote no session at {}", path.display()))?;
    if !meta.is_file() {
        return Err("the session the CLI left is not a regular file".to_owned());
    }
    if meta.len() > crate::reviewer::conversation::MAX_CONVERSATION_BYTES {
        return Err("the session the CLI left is too large to keep".to_owned());
    }
    Ok(())
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

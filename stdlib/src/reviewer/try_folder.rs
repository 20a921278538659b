//! The folder of one try of a `command` reviewer: the prompt, the inputs, a copy of the
//! conversation to resume, and the places the reviewer writes to.
//!
//! Each try gets its own folder, created empty (an old one of the same number is removed first),
//! so a failed try leaves nothing for the next one to pick up. The folder is private (0700).

use std::fs;
use std::io;
use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _};
use std::path::{Path, PathBuf};

use reviewflow_engine::beneath::Entry;

use super::conversation::{Conversation, ConversationError, copy_tree, open};
use super::outcome::ReviewInput;

/// Longest input name, in characters.
pub const MAX_INPUT_NAME: usize = 128;

/// Where things are in a try's folder (all absolute).
#[derive(Clone, Debug)]
pub struct TryFolder {
    pub root: PathBuf,
    pub prompt: PathBuf,
    pub inputs: PathBuf,
    /// The copy of the conversation to resume (a file or the folder `conversation/`).
    pub resume: Option<PathBuf>,
    pub result: PathBuf,
    pub conversation_out: PathBuf,
}

/// The try's folder could not be prepared.
#[derive(Debug, thiserror::Error)]
pub enum PrepareError {
    #[error("cannot prepare the try's folder {}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("the restored conversation cannot be copied: {source}")]
    Resume {
        #[source]
        source: ConversationError,
    },
}

fn io_error(path: &Path) -> impl FnOnce(io::Error) -> PrepareError + '_ {
    move |source| PrepareError::Io {
        path: path.to_owned(),
        source,
    }
}

/// Checks that input names are usable as file names and in fence markers, and unique.
pub fn check_input_names(inputs: &[ReviewInput]) -> Result<(), String> {
    let mut seen: Vec<&str> = Vec::new();
    for input in inputs {
        let name = input.name.as_str();
        let ok = (1..=MAX_INPUT_NAME).contains(&name.chars().count())
            && name.starts_with(|c: char| c.is_ascii_alphanumeric())
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c));
        if !ok {
            return Err(format!(
                "input name {name:?} is not 1 to {MAX_INPUT_NAME} characters of A-Z a-z 0-9 . _ - \
                 starting with a letter or digit"
            ));
        }
        if seen.contains(&name) {
            return Err(format!("input {name:?} is given twice"));
        }
        seen.push(name);
    }
    Ok(())
}

impl TryFolder {
    /// Creates `<workdir>/try-<number>/` with `prompt`, the inputs, the copy of `resume` and an
    /// empty `conversation-out/`. `workdir` must be absolute and input names checked.
    pub fn prepare(
        workdir: &Path,
        number: u32,
        prompt: &str,
        inputs: &[ReviewInput],
        resume: Option<&Conversation>,
    ) -> Result<Self, PrepareError> {
        let root = workdir.join(format!("try-{number}"));
        fs::create_dir_all(workdir).map_err(io_error(workdir))?;
        match fs::remove_dir_all(&root) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(io_error(&root)(e)),
            _ => {}
        }
        private_dir(&root)?;
        let folder = TryFolder {
            prompt: root.join("prompt.md"),
            inputs: root.join("inputs"),
            resume: None,
            result: root.join("result.json"),
            conversation_out: root.join("conversation-out"),
            root,
        };
        write_new(&folder.prompt, prompt.as_bytes())?;
        private_dir(&folder.inputs)?;
        for input in inputs {
            write_new(&folder.inputs.join(&input.name), &input.bytes)?;
        }
        private_dir(&folder.conversation_out)?;
        let resume = match resume {
            None => None,
            Some(conversation) => Some(folder.copy_resume(&conversation.path)?),
        };
        Ok(TryFolder { resume, ..folder })
    }

    /// Copies the conversation: a folder becomes `conversation/`, a file `conversation/<name>`.
    /// It is opened once, through the reader, and copied from what was opened.
    fn copy_resume(&self, from: &Path) -> Result<PathBuf, PrepareError> {
        let resume_error = |source| PrepareError::Resume { source };
        let dir = self.root.join("conversation");
        let entry = open(from).map_err(resume_error)?;
        let to = match entry {
            Entry::Folder(_) => dir,
            Entry::File(_) => {
                let name = from
                    .file_name()
                    .map_or_else(|| "conversation".into(), ToOwned::to_owned);
                private_dir(&dir)?;
                dir.join(name)
            }
        };
        copy_tree(entry, from, &to).map_err(resume_error)?;
        Ok(to)
    }
}

fn private_dir(path: &Path) -> Result<(), PrepareError> {
    fs::DirBuilder::new()
        .mode(0o700)
        .create(path)
        .map_err(io_error(path))
}

/// Writes a file that must not exist yet (never through a link).
fn write_new(path: &Path, bytes: &[u8]) -> Result<(), PrepareError> {
    use std::io::Write as _;
    fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .and_then(|mut f| f.write_all(bytes))
        .map_err(io_error(path))
}

//! The conversation of the `rules` reviewer: a JSON transcript of what it saw and said.
//!
//! It gives the scan, seal and restore path something real to carry, and it grows when a review
//! resumes it: the earlier turns are kept (up to [`MAX_TURNS`]) and two are added. What it saw
//! is recorded as the diff's digest and per-file counts, never the diff's text: a diff may hold
//! a credential, and a conversation holding one is never sealed.

use std::io;
use std::path::{Path, PathBuf};

use reviewflow_engine::beneath::{self, Entry, Folder, Why};
use reviewflow_engine::bounded::read_bounded;

use serde::{Deserialize, Serialize};

use super::result::ReviewFinding;

/// The transcript's format version.
pub const TRANSCRIPT_VERSION: u32 = 1;
/// The file name of a transcript (also looked for inside a restored folder).
pub const TRANSCRIPT_FILE: &str = "transcript.json";
/// Largest transcript read back.
pub const MAX_TRANSCRIPT_BYTES: u64 = 16 * 1024 * 1024;
/// Turns kept; the oldest beyond this are dropped (a crude compaction).
pub const MAX_TURNS: usize = 200;

/// A rules reviewer's conversation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Transcript {
    pub version: u32,
    /// Always `"rules"`.
    pub reviewer: String,
    /// 128 random bits in hex, new for every review.
    pub id: String,
    /// The id of the transcript this one continued.
    pub parent: Option<String>,
    pub turns: Vec<Turn>,
}

/// One turn: what the reviewer saw, or what it said.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase", deny_unknown_fields)]
pub enum Turn {
    Saw(Saw),
    Said(Said),
}

/// The change a review looked at, without its text.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Saw {
    /// SHA-256 of the diff's bytes, hex.
    pub diff_sha256: String,
    pub files: Vec<SeenFile>,
    /// Parts of the diff that could not be read.
    pub unreadable: usize,
}

/// One file of the diff.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SeenFile {
    pub path: String,
    pub added: u32,
    pub deleted: u32,
}

/// What a review said.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Said {
    pub comment: String,
    pub findings: Vec<ReviewFinding>,
}

/// A restored conversation that is not a readable rules transcript.
#[derive(Debug, thiserror::Error)]
pub enum TranscriptError {
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("{} is larger than {MAX_TRANSCRIPT_BYTES} bytes", path.display())]
    TooLarge { path: PathBuf },
    #[error("{} is not a rules transcript: {message}", path.display())]
    Format { path: PathBuf, message: String },
}

impl Transcript {
    /// A transcript with no turns.
    pub fn new(id: String, parent: Option<String>) -> Self {
        Self {
            version: TRANSCRIPT_VERSION,
            reviewer: "rules".to_owned(),
            id,
            parent,
            turns: Vec::new(),
        }
    }

    /// Reads the transcript at `path`: a file, or a folder holding [`TRANSCRIPT_FILE`]. Read
    /// through the engine's reader beneath `path`'s parent: no link followed, a regular file
    /// only, within [`MAX_TRANSCRIPT_BYTES`].
    pub fn read(path: &Path) -> Result<Self, TranscriptError> {
        let io_error = |path: &Path| {
            let path = path.to_owned();
            move |source| TranscriptError::Io { path, source }
        };
        let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
            return Err(io_error(path)(io::Error::new(
                io::ErrorKind::InvalidInput,
                "names no file",
            )));
        };
        let folder = Folder::open(parent).map_err(io_error(path))?;
        let (file, read) = match folder.entry(Path::new(name)) {
            Ok(Entry::Folder(f)) => (
                path.join(TRANSCRIPT_FILE),
                f.read(Path::new(TRANSCRIPT_FILE), MAX_TRANSCRIPT_BYTES),
            ),
            Ok(Entry::File(f)) => (path.to_owned(), read_bounded(f, MAX_TRANSCRIPT_BYTES)),
            Err(e) => (path.to_owned(), Err(e)),
        };
        let format = |message: String| TranscriptError::Format {
            path: file.clone(),
            message,
        };
        let bytes = match read {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == io::ErrorKind::FileTooLarge => {
                return Err(TranscriptError::TooLarge { path: file });
            }
            // A link, a special file, a folder where the file should be.
            Err(e) if beneath::refused(&e).is_some_and(|r| r.why != Why::Changed) => {
                return Err(format("not a regular file".to_owned()));
            }
            Err(e) => return Err(io_error(&file)(e)),
        };
        let transcript: Transcript =
            serde_json::from_slice(&bytes).map_err(|e| format(e.to_string()))?;
        if transcript.version != TRANSCRIPT_VERSION || transcript.reviewer != "rules" {
            return Err(format(format!(
                "version {} of reviewer {:?}",
                transcript.version, transcript.reviewer
            )));
        }
        Ok(transcript)
    }

    /// Appends a review's two turns, dropping the oldest beyond [`MAX_TURNS`].
    pub fn push_review(&mut self, saw: Saw, said: Said) {
        self.turns.push(Turn::Saw(saw));
        self.turns.push(Turn::Said(said));
        let excess = self.turns.len().saturating_sub(MAX_TURNS);
        self.turns.drain(..excess);
    }

    /// The transcript as pretty JSON.
    pub fn to_json(&self) -> Vec<u8> {
        // Serialising these plain structs cannot fail; an empty object would be read back as
        // invalid, never as a transcript.
        serde_json::to_vec_pretty(self).unwrap_or_default()
    }
}
